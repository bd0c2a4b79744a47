"""Decoders that cannot crash a run, strict JSON from every writer, find as lossless as dump.

Real ``kseg`` processes: JSON nested 100,000 deep is a per-value error or one error line,
never a RecursionError; every JSON output parses with a strict parser. A user's
``module:function`` decoder that raises, exits, is interrupted or returns what JSON cannot
hold: the failure matrix's decoder cells (tests/test_failure_matrix.py), on every command
that takes ``--value-decoder``.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kseg.log.encode import build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record

REPO = Path(__file__).resolve().parent.parent
KSEG = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]

def strict_loads(text: str) -> object:
    def no_constant(name: str) -> None:
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=no_constant)


def kseg(*args: str | Path, env_path: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    paths = [str(REPO)] + ([str(env_path)] if env_path else []) + [env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return subprocess.run([*KSEG, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)


def partition(folder: Path, values: list[bytes], headers: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    recs = [make_record(i, 1_700_000_000_000 + i, b"k%d" % i, v, [("h", v)] if headers else [])
            for i, v in enumerate(values)]
    (folder / segment_file_name(0)).write_bytes(build_v2_batch(recs, base_offset=0))
    return folder


def records(stdout: str) -> list[dict]:
    return [o for o in map(strict_loads, stdout.splitlines()) if o.get("type") == "record"]


# --------------------------------------------------------------------------- JSON from data, deep and non-finite

def test_deep_json_value_is_a_per_value_error(tmp_path):
    path = partition(tmp_path / "t-0", [b'{"a": 1}', b"[" * 100_000, b"[" * 400 + b"]" * 400, b"NaN", b"1e999999",
                                        b"-Infinity", b"\xff", b"\\xff"])
    r = kseg("dump", "--records", "--format", "jsonl", "--value-decoder", "json", path)
    assert r.returncode == 0 and "Traceback" not in r.stderr and "RecursionError" not in r.stderr, r.stderr
    recs = records(r.stdout)
    assert recs[0]["value"] == {"a": 1}
    assert recs[1]["value_error"] == "json decoder: nested deeper than 500 levels"
    assert base64.b64decode(recs[1]["value_b64"]) == b"[" * 100_000
    assert "value" in recs[2]  # deep, but within the limit
    assert [recs[i]["value"] for i in (3, 4, 5)] == ["NaN", "Infinity", "-Infinity"]
    # neither JSON nor UTF-8: raw, so that 0xff and the four characters \xff stay apart
    assert base64.b64decode(recs[6]["value_b64"]) == b"\xff" and recs[7]["value"] == "\\xff"
    for fmt in ("text", "kafka"):
        r = kseg("dump", "--records", "--format", fmt, "--value-decoder", "json", path)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert "nested deeper than 500 levels" in r.stdout


@pytest.mark.parametrize("content", [
    b"[" * 100_000,
    b'{"plugins": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b"[" + b"{\"a\": " * 50_000 + b"1" + b"}" * 50_000 + b"]",
])
def test_deep_plugin_registry_is_one_error_line(tmp_path, content):
    reg = tmp_path / "registry.json"
    reg.write_bytes(content)
    r = kseg("--plugin-registry", reg, "plugins", "list")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr
    errors = [x for x in r.stderr.splitlines() if x.startswith("kseg: error:")]
    assert len(errors) == 1 and "nested deeper than 500 levels" in errors[0], r.stderr


# --------------------------------------------------------------------------- find: lossless as dump

def test_find_tells_0xff_from_backslash_x_f_f(tmp_path):
    values = [b"\xff", b"\\xff", b'say "hi"\n', b"\xe2\x82\xac"]
    path = partition(tmp_path / "t-0", values, headers=True)
    r = kseg("find", "--from-offset", "0", "--format", "json", path)
    assert r.returncode == 0, r.stderr
    docs = [strict_loads(x) for x in r.stdout.splitlines()]
    back = [base64.b64decode(d["value_b64"]) if "value_b64" in d else d["value"].encode() for d in docs]
    assert back == values
    assert docs[0]["headers"][0] == {"key": "h", "value_b64": "/w=="}
    r = kseg("find", "--from-offset", "0", path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    shown = [x.split(" value ")[1].split(" headers ")[0] for x in lines]
    assert shown == ['"\\xff"', '"\\\\xff"', '"say \\"hi\\"\\n"', '"€"']
    # the text escapes read back to the bytes (dump's text escaping)
    assert [unescape(s[1:-1]) for s in shown] == values
    assert " key \"k0\" " in lines[0] and "None" not in r.stdout and "'" not in r.stdout


def test_find_text_shows_a_missing_key_as_null(tmp_path):
    folder = tmp_path / "t-0"
    folder.mkdir()
    rec = make_record(0, 1_700_000_000_000, None, b"v")
    (folder / segment_file_name(0)).write_bytes(build_v2_batch([rec], base_offset=0))
    r = kseg("find", "--from-offset", "0", folder)
    assert r.returncode == 0, r.stderr
    assert " key null value \"v\"" in r.stdout


def unescape(s: str) -> bytes:
    out, i = bytearray(), 0
    simple = {"\\": b"\\", '"': b'"', "n": b"\n", "r": b"\r", "t": b"\t"}
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode()
            i += 1
        elif s[i + 1] in simple:
            out += simple[s[i + 1]]
            i += 2
        elif s[i + 1] == "x":
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        else:  # \uNNNN
            out += chr(int(s[i + 2:i + 6], 16)).encode()
            i += 6
    return bytes(out)


# --------------------------------------------------------------------------- strict JSON from every command

FIXTURE_DIRS = [REPO / "fixtures" / "logdir", REPO / "fixtures" / "kafka-4" / "logdir",
                *sorted(p for p in (REPO / "fixtures" / "internal").iterdir() if p.is_dir() and p.name != "golden")]


def _cases() -> list[tuple[str, list[str]]]:
    cases = []
    for d in FIXTURE_DIRS:
        name = d.relative_to(REPO).as_posix()
        p = str(d)
        cases += [
            (f"dump {name}", ["dump", "--records", "--format", "jsonl", "--decode", "auto", "--keep-going", p]),
            (f"dump json {name}", ["dump", "--records", "--format", "jsonl", "--value-decoder", "json",
                                   "--key-decoder", "json", "--keep-going", p]),
            (f"find {name}", ["find", "--from-offset", "0", "--format", "json", p]),
            (f"stats {name}", ["stats", "--format", "json", p]),
            (f"verify {name}", ["verify", "--format", "json", p]),
            (f"state {name}", ["state", "--format", "json", p]),
            (f"txn {name}", ["txn", "--format", "json", p]),
            (f"diff {name}", ["diff", "--records", "--format", "json", p, p]),
            (f"repair {name}", ["repair", "--dry-run", "--format", "json", p]),
            (f"compact {name}", ["compact", "--dry-run", "--format", "json", p]),
        ]
    return cases


@pytest.mark.parametrize("args", [c[1] for c in _cases()], ids=[c[0] for c in _cases()])
def test_every_json_output_is_strict_json(args):
    r = kseg(*args, timeout=300)
    assert "Traceback" not in r.stderr, r.stderr
    if r.returncode == 2 and not r.stdout.strip():
        pytest.skip(f"not applicable: {r.stderr.strip()[:200]}")
    text = r.stdout
    if args[0] in ("dump", "find"):
        for line in text.splitlines():
            strict_loads(line)
    else:
        strict_loads(text)


# --------------------------------------------------------------------------- the helpers themselves

@pytest.mark.parametrize("value, text", [
    ({"a": [float("nan"), float("inf"), -float("inf"), 1.5]}, '{"a": ["NaN", "Infinity", "-Infinity", 1.5]}'),
    ((float("nan"),), '["NaN"]'),
    ({"x": 1}, '{"x": 1}'),
])
def test_strict_dumps_writes_non_finite_floats_as_strings(value, text):
    from kseg.render.jsonout import dumps, encoder
    assert dumps(value) == text and encoder()(value) == text
    strict_loads(text)


@pytest.mark.parametrize("data, deep", [
    (b"[" * 100_000, True), ("[" * 100_000, True), (b"[" * 600 + b"]" * 600, True),
    (b"[" * 500 + b"]" * 500, False), (b"[1, [2], {\"a\": [3]}]", False),
])
def test_loads_bounded_never_recurses_out(data, deep):
    from kseg.decoders.jsonvalue import TooDeep, loads_bounded
    if deep:
        with pytest.raises(TooDeep):
            loads_bounded(data)
    else:
        assert loads_bounded(data) == json.loads(data)


def test_the_suite_wide_strict_json_check_fails_on_nan():
    """conftest parses every --format json/jsonl output CliRunner gets: a bare NaN fails the test."""
    import click
    from click.testing import CliRunner

    @click.command()
    @click.option("--format", "fmt")
    def emits(fmt):
        click.echo('{"a": 1}\n{"b": NaN}')

    with pytest.raises(AssertionError, match="line 2 .* not strict JSON"):
        CliRunner().invoke(emits, ["--format", "jsonl"])
    assert CliRunner().invoke(emits, ["--format", "text"]).exit_code == 0


def test_the_suite_wide_strict_json_check_sees_child_processes():
    """conftest also parses the captured stdout of a kseg child (subprocess.run, Popen.communicate)."""
    emits = [sys.executable, "-c", "print('{\"a\": 1}'); print('{\"b\": NaN}')  # kseg.cli"]
    with pytest.raises(AssertionError, match="line 2 .* not strict JSON"):
        subprocess.run([*emits, "--format", "jsonl"], capture_output=True)
    with pytest.raises(AssertionError, match="line 2 .* not strict JSON"):
        subprocess.Popen([*emits, "--format", "json"], stdout=subprocess.PIPE).communicate()
    assert subprocess.run([*emits, "--format", "text"], capture_output=True).returncode == 0


NOT_STRICT = ['{"a": NaN}', '[Infinity]', '{"x": -Infinity}', '[1e999]']


@pytest.mark.parametrize("bad", NOT_STRICT)
def test_the_suite_wide_strict_json_check_reads_files_and_archives(tmp_path, _every_json_output_is_strict, bad):
    """At a test's end conftest reads every .json/.jsonl/.sarif under the test's temporary
    folders, archives' members too (a bundle's kseg-bundle.json): a bare NaN fails the test.
    A file that is not JSON at all is a test's input, not judged."""
    import tarfile
    import zipfile

    import conftest

    watch = _every_json_output_is_strict
    assert tmp_path in conftest._MADE  # the folders the test's end judges
    watch.folders = [tmp_path]
    (tmp_path / "fine.jsonl").write_text('{"a": 1}\n{"b": "NaN"}\n')
    (tmp_path / "input.jsonl").write_text('{"a": 1}\nnot json at all\n')
    assert watch.problems() == []
    names = {".json": "out.json", ".jsonl": "out.jsonl", ".sarif": "report.sarif"}
    for suffix, name in names.items():
        (tmp_path / name).write_text(f'{{"ok": 1}}\n{bad}\n' if suffix == ".jsonl" else bad)
    member = tmp_path / "member.json"
    member.write_text(bad)
    with tarfile.open(tmp_path / "bundle.tar.gz", "w:gz") as t:
        t.add(member, "kseg-bundle.json")
    with zipfile.ZipFile(tmp_path / "bundle.zip", "w") as z:
        z.write(member, "inner/kseg-bundle.json")
    member.unlink()
    found = "\n".join(watch.problems())
    for name in names.values():
        assert f"{tmp_path / name} is not strict JSON" in found, found
    assert "line 2 of" in found and "bundle.tar.gz!kseg-bundle.json" in found and "bundle.zip!inner/kseg-bundle.json" in found
    with pytest.raises(AssertionError, match="non-strict JSON written during the test"):
        watch.check()
    for p in tmp_path.iterdir():  # this test's own end passes
        p.unlink()


def test_the_suite_wide_strict_json_check_reads_pipes_read_by_hand(_every_json_output_is_strict):
    """A kseg child's JSON stdout read from the pipe by hand (read, readline, iteration) is
    judged at the test's end: a bare NaN fails the test; a part read is judged by its whole lines."""
    watch = _every_json_output_is_strict
    emits = [sys.executable, "-c", "print('{\"a\": 1}'); print('{\"b\": NaN}')  # kseg.cli"]

    def problems(read, fmt="jsonl", text=False):
        with subprocess.Popen([*emits, "--format", fmt], stdout=subprocess.PIPE, text=text) as p:
            read(p.stdout)
            p.wait()
        try:
            return watch.problems()
        finally:
            watch.pipes.clear()

    assert "line 2 of kseg" in "".join(problems(lambda f: f.read()))
    assert "line 2 of kseg" in "".join(problems(lambda f: [line for line in f], text=True))
    assert "line 2 of kseg" in "".join(problems(lambda f: (f.readline(), f.readline())))
    assert problems(lambda f: f.readline()) == []  # the first line only: it is fine
    assert problems(lambda f: f.read(), fmt="text") == []  # not JSON output
