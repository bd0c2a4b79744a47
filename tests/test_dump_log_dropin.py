"""``kseg-dump-log`` takes kafka-dump-log.sh's own command line and prints its bytes (no Java needed).

* Every command of the committed corpora (each ``fixtures/kafka-*/golden*/manifest.json``, so a
  new corpus joins by being there, and the DumpLogSegments commands of
  ``fixtures/kafka-tiered/manifest.json``): the very argv DumpLogSegments was given, with the
  matching ``--kafka-version``, gives the golden stdout, stderr and exit code.
* The command line's edges (``tests/kafka/usage.py``: help, a missing ``--files``, unknown
  options, missing files, names DumpLogSegments ignores, bad values, decoder classes) against
  what the real tools did (``fixtures/kafka-dump-log-usage/``).
* The option table, the decoder classes and the environment variable, by their own rules.

Runs in-process (``kseg.cli.dumplog.main`` writes to the streams it is given): ~600 runs in
seconds.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import checks  # noqa: E402
import tiered  # noqa: E402
import usage  # noqa: E402

from kseg.cli import dumplog  # noqa: E402
from kseg.cli.dumplog import main  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

#: combination ids whose golden is not compared here: the index verdicts (--verify-index-only,
#: --index-sanity-check) are being reworked in kseg/companions/check.py and kseg/render/companions.py;
#: kseg-dump-log only maps the flags to kseg dump's. None are left out today: every such golden of
#: fixtures/kafka-3.9 and fixtures/kafka-4 matches.
NOT_COMPARED: dict[str, str] = {}


def run_dropin(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """kseg-dump-log ARGS in ``cwd``: exit code, stdout, stderr (bytes)."""
    out, err = io.BytesIO(), io.StringIO()
    old = os.getcwd()
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.chdir(cwd)
    os.environ.update(env or {})
    try:
        rc = main(args, out, err)
    finally:
        os.chdir(old)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return rc, out.getvalue(), err.getvalue().encode("utf-8")


def kseg_version(tool: str) -> str:
    """The --kafka-version that prints the ``tool`` release's lines: the one kseg dump is held to
    for it in tests/test_kafka_corpus.py."""
    args = checks.kseg_args("x.log", "plain", tool)
    return args[args.index("--kafka-version") + 1]


def _golden_rows() -> list:
    rows = []
    for manifest_path in sorted(FIXTURES.glob("kafka-*/golden*/manifest.json")):
        manifest = json.loads(manifest_path.read_text())
        broker = manifest_path.parent.parent.name.removeprefix("kafka-")
        tool = manifest["release"]
        for e in manifest["entries"]:
            marks = []
            reason = NOT_COMPARED.get(e["combo"]) or checks.known_difference(tool, e["file"], e["combo"], broker)
            if reason:
                marks = [pytest.mark.xfail(strict=True, reason=reason)]
            rows.append(pytest.param(manifest_path, manifest, e, marks=marks,
                                     id=f"{broker}:{tool}:{e['file']}:{e['combo']}"))
    return rows


@pytest.mark.parametrize("manifest_path,manifest,entry", _golden_rows())
def test_golden_commands(manifest_path: Path, manifest: dict, entry: dict) -> None:
    folder = manifest_path.parent
    logdir = folder.parent / manifest["cwd"]
    command = entry["command"]
    assert command[0] == "kafka-dump-log.sh"
    rc, out, err = run_dropin([*command[1:], "--kafka-version", kseg_version(manifest["release"])], logdir)
    assert checks.placeholder_paths(out, logdir) == (folder / entry["stdout"]).read_bytes()
    expected_err = (folder / entry["stderr"]).read_bytes()
    err = checks.placeholder_paths(err, logdir)
    if expected_err.startswith(checks.JAVA_EXCEPTION):  # the tool's stack trace: one error line of ours
        assert err.startswith(b"kseg-dump-log: error: ") and err.count(b"\n") == 1, err
    else:
        assert err == expected_err
    assert rc == entry["exit"]


# --------------------------------------------------------------------------- the tiered corpus


TIERED = FIXTURES / "kafka-tiered"


@pytest.fixture(scope="module")
def tiered_names(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiered corpus as DumpLogSegments was run on it: the remote files under Kafka's names."""
    root = tmp_path_factory.mktemp("tiered-names")
    for p in (TIERED / "remote").rglob("*"):
        if p.is_file():
            dst = root / tiered.kafka_name(str(p.relative_to(TIERED)))
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dst)
    (root / "logdir").symlink_to(TIERED / "logdir")
    return root


def _tiered_rows() -> list:
    if not (TIERED / "manifest.json").is_file():
        return []
    dumps = json.loads((TIERED / "manifest.json").read_text()).get("dumps", [])
    return [pytest.param(d, id=f"tiered:{i:02d}:{' '.join(d['command'][2:])[:80]}") for i, d in enumerate(dumps)]


@pytest.mark.parametrize("entry", _tiered_rows())
def test_tiered_commands(entry: dict, tiered_names: Path) -> None:
    rc, out, err = run_dropin([*entry["command"][1:], "--kafka-version", "4"], tiered_names)
    assert out == (TIERED / "dumps" / entry["stdout"]).read_bytes()
    # Several files in one run: Kafka lists their offset gaps in its hash map's order of absolute
    # paths, which differ between its folder and this one (the corpus test compares them as a set too).
    err = checks.placeholder_paths(err, tiered_names)
    assert tiered._gap_blocks(err) == tiered._gap_blocks((TIERED / "dumps" / entry["stderr"]).read_bytes())
    assert rc == entry["exit"]


# --------------------------------------------------------------------------- the command line's edges


def _usage_rows() -> list:
    rows = []
    for release in usage.RELEASES:
        golden = usage.GOLDEN / f"{release}.json"
        cases = json.loads(golden.read_text()) if golden.is_file() else {}
        for case in usage.CASES:
            why = usage.not_compared(release, case)
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            rows.append(pytest.param(release, case, cases.get(case), marks=marks, id=f"{release}:{case}"))
    return rows


@pytest.mark.parametrize("release,case,kafka", _usage_rows())
def test_usage_like_kafka(release: str, case: str, kafka: dict | None) -> None:
    assert kafka is not None, f"no golden for {case}: run python tests/kafka/usage.py"
    assert kafka["args"] == usage.CASES[case], "the golden was made for other arguments: run tests/kafka/usage.py"
    assert usage.differences(case, kafka, *usage.kseg_usage(release, usage.CASES[case])) == []


def test_every_usage_case_has_a_golden() -> None:
    for release in usage.RELEASES:
        assert sorted(json.loads((usage.GOLDEN / f"{release}.json").read_text())) == sorted(usage.CASES)


@pytest.mark.parametrize("cls,name", sorted(dumplog.DECODER_CLASSES.items()))
def test_kafka_decoder_classes_are_kseg_decoders(cls: str, name: str) -> None:
    from kseg.render.payload import BUILTIN

    assert name in BUILTIN
    rc, out, err = run_dropin(["--files", "v2-0/00000000000000000000.log", "--value-decoder-class", cls,
                               "--key-decoder-class", cls, "--max-bytes", "600"], FIXTURES / "kafka-4" / "logdir")
    assert (rc, err) == (0, b""), err
    assert b"| offset: 0 " in out and b" payload: " in out


@pytest.mark.parametrize("release", usage.RELEASES)
@pytest.mark.parametrize("which", ["key", "value"])
def test_other_decoder_class_is_one_line_exit_2(release: str, which: str) -> None:
    rc, out, err = run_dropin(["--files", "v2-0/00000000000000000000.log", f"--{which}-decoder-class",
                               "com.example.MyDecoder", "--kafka-version", release], FIXTURES / "kafka-4" / "logdir")
    assert rc == 2
    assert out == b"Dumping v2-0/00000000000000000000.log\n"  # where DumpLogSegments loads the class
    assert err.count(b"\n") == 1 and err.startswith(b"kseg-dump-log: error: ") and b"com.example.MyDecoder" in err


@pytest.mark.parametrize("how", ["option", "equals", "env"])
def test_kafka_version_chooses_whose_bytes(how: str) -> None:
    """--kafka-version V, --kafka-version=V and KSEG_KAFKA_VERSION all choose; the option wins."""
    logdir = FIXTURES / "kafka-3.9" / "logdir"
    manifest = json.loads((FIXTURES / "kafka-3.9" / "golden" / "manifest.json").read_text())
    entry = next(e for e in manifest["entries"] if e["combo"] == "deep-data" and e["file"].startswith("v1-0/"))
    golden = (FIXTURES / "kafka-3.9" / "golden" / entry["stdout"]).read_bytes()
    args, env = list(entry["command"][1:]), {}
    if how == "option":
        args += ["--kafka-version", "3.9"]
    elif how == "equals":
        args += ["--kafka-version=3.9"]
    else:
        env = {dumplog.ENV_KAFKA_VERSION: "3.9"}
    assert run_dropin(args, logdir, env)[1] == golden
    assert run_dropin(args, logdir, {dumplog.ENV_KAFKA_VERSION: "4"} if how != "env" else env)[1] == golden
    four = run_dropin([*entry["command"][1:], "--kafka-version", "4"], logdir)[1]
    assert four != golden  # Kafka 4's lines differ on legacy records (no stray "}")


@pytest.mark.parametrize("value", ["5", "", "3"])
def test_bad_kafka_version_is_usage(value: str) -> None:
    rc, out, err = run_dropin(["--files", "x.index", f"--kafka-version={value}"], FIXTURES)
    assert (rc, out) == (2, b"") and err.count(b"\n") == 1 and err.startswith(b"kseg-dump-log: error: ")


def test_options_are_kafkas() -> None:
    """The table holds DumpLogSegments' options, per release, plus kseg's --kafka-version."""
    kafka4 = {"cluster-metadata-decoder", "deep-iteration", "files", "help", "index-sanity-check",
              "key-decoder-class", "max-bytes", "max-message-size", "offsets-decoder", "print-data-log",
              "remote-log-metadata-decoder", "share-group-state-decoder", "skip-record-metadata",
              "transaction-log-decoder", "value-decoder-class", "verify-index-only", "version"}
    assert set(dumplog.options_of("4")) == kafka4 | {"kafka-version"}
    assert set(dumplog.options_of("3.9")) == kafka4 - {"share-group-state-decoder"} | {"kafka-version"}
    assert set(dumplog.DECODER_FLAGS) <= kafka4


@pytest.mark.parametrize("text,parts", [("a,b", ["a", "b"]), ("", [""]), (",", []), ("a,,b,", ["a", "", "b"]),
                                        (",a", ["", "a"]), ("a", ["a"])])
def test_files_split_as_java(text: str, parts: list[str]) -> None:
    assert dumplog.java_split(text) == parts


def test_console_script_declared() -> None:
    import tomllib

    doc = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert doc["project"]["scripts"]["kseg-dump-log"] == "kseg.cli.dumplog:run"
