"""One input, one answer: every command lists its inputs by the one rule of
``kseg.log.listing``, prints names from the data escaped, and survives a file that shrinks.

- every reading command x every input shape (a file, a partition folder, a log directory, a
  folder of log directories, a folder of ``.log`` files not named by offset, transient
  segments and KRaft snapshots, an empty folder, a missing path): all read the same files,
  or all give the same one-line error and exit code; writers refuse the shapes whose
  output segments they could not name, with one clear line and exit 2;
- a folder named with terminal escapes and a bidi override: no raw control or reordering
  character in any command's text output, and JSON gives the exact name back;
- the HTML report's plot labels are escaped (plotly reads labels as HTML);
- ``kseg diff`` on a segment that shrinks during the run: one error line, exit 2, no SIGBUS;
- ``kseg stats`` on 10,000 empty segments: well under 5 s.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from kseg.cli.main import main
from kseg.log import listing
from kseg.log.segment import segment_file_name
from tests.builders import entries, write_partition

KSEG = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]
NOW_MS = "1800000000000"


def kseg(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*KSEG, *map(str, args)], capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------- the commands

# How each reading command is run, and the files (or groups) its JSON says it read.
READERS = {
    "dump": (["dump"], lambda out: {m for m in re.findall(r"^== (.*) \(log", out, re.M)}),
    "verify": (["verify", "--format", "json", "--no-index"],
               lambda out: {f["file"] for f in json.loads(out)["files"] if f["kind"] == "log"}),
    "stats": (["stats", "--format", "json"],
              lambda out: {s["file"] for t in json.loads(out)["topics"] for p in t["partitions"]
                           for s in p["segments"]}),
    "find": (["find", "--format", "json", "--from-offset", "0"],
             lambda out: {json.loads(line)["file"] for line in out.splitlines()}),
    "txn": (["txn", "--format", "json", "--all", "--now-ms", NOW_MS],
            lambda out: {p["path"] for p in json.loads(out)["partitions"]}),
    "diff": (["diff", "--format", "json"], lambda out: {p["name"] for p in json.loads(out)["partitions"]}),
}
# Commands that read only some inputs by design: state replays internal topics, index checks
# or rebuilds index files. They list inputs by the same rule (same errors for unusable ones).
SPECIAL = {"state": ["state"], "index": ["index"]}
WRITERS = {
    "up-convert": ["up-convert", "--to-magic", "2"],
    "down-convert": ["down-convert", "--to-magic", "1"],
    "recompress": ["recompress", "--codec", "gzip"],
    "rebase": ["rebase", "--base-offset", "100"],
    "compact": ["compact"],
    "repair": ["repair"],
    "salvage": ["salvage"],
    "export": ["export"],
    "bundle": ["bundle"],
}
# A writer whose output's name says what it is (every kseg command reads a bundle by its name).
OUTPUT_SUFFIX = {"bundle": ".tar.gz"}
NOT_ON_FILES = {"plugins", "spark", "build"}  # take no Kafka files as input (build reads JSON lines)


def test_every_command_is_in_the_table() -> None:
    with click.Context(main) as ctx:
        names = set(main.list_commands(ctx))
    assert names == set(READERS) | set(SPECIAL) | set(WRITERS) | NOT_ON_FILES


def run_reader(name: str, path: Path) -> subprocess.CompletedProcess:
    args, _ = READERS[name]
    extra = [path, path] if name == "diff" else [path]
    return kseg(*args, *extra)


# --------------------------------------------------------------------------- the shapes


def _loose(root: Path) -> None:
    root.mkdir()
    (root / "a.log").write_bytes(entries(2, "none", 0))
    (root / "copy of b.log").write_bytes(entries(2, "gzip", 100))


def _partition(root: Path) -> None:
    write_partition(root, 2, "none", segments=2)


def _partition_with_extras(root: Path) -> None:
    write_partition(root, 2, "none", segments=2)
    (root / (segment_file_name(500) + ".deleted")).write_bytes(entries(2, "none", 500))
    (root / "00000000000000000024-0000000001.checkpoint").write_bytes(entries(2, "none", 0))


def _transient_only(root: Path) -> None:
    root.mkdir()
    (root / (segment_file_name(0) + ".deleted")).write_bytes(entries(2, "none", 0))
    (root / (segment_file_name(12) + ".swap")).write_bytes(entries(2, "none", 12))


def _log_dir(root: Path) -> None:
    write_partition(root / "t-0", 2, "none")
    write_partition(root / "u-1", 2, "gzip")
    (root / "meta.properties").write_text("version=0\nbroker.id=1\n")


def _log_dirs(root: Path) -> None:
    write_partition(root / "broker1" / "t-0", 2, "none")
    write_partition(root / "broker2" / "t-0", 2, "none")


def _file(root: Path) -> Path:
    write_partition(root, 2, "none", segments=1)
    return root / segment_file_name(0)


def _seg(folder: str, offset: int) -> str:
    return f"{folder}/{segment_file_name(offset)}"


# name -> (builder; the files reading commands read, relative; verify's extra files;
#          txn's and diff's groups, relative: "." the input itself)
SHAPES = {
    "file": (_file, [_seg(".", 0)], [], ["<folder>", "<name>"]),
    "partition": (_partition, [_seg(".", 0), _seg(".", 12)], [], [".", "<name>"]),
    "partition with transient and KRaft snapshot": (
        _partition_with_extras, [_seg(".", 0), _seg(".", 12)],
        ["./00000000000000000024-0000000001.checkpoint", f"./{segment_file_name(500)}.deleted"], [".", "<name>"]),
    "log directory": (_log_dir, [_seg("t-0", 0), _seg("t-0", 12), _seg("u-1", 0), _seg("u-1", 12)], [],
                      ["t-0", "u-1"]),
    "folder of log directories": (
        _log_dirs, [_seg("broker1/t-0", 0), _seg("broker1/t-0", 12), _seg("broker2/t-0", 0),
                    _seg("broker2/t-0", 12)], [], ["broker1/t-0", "broker2/t-0"]),
    "loose .log files": (_loose, ["./a.log", "./copy of b.log"], [], ["./a.log", "./copy of b.log"]),
    "transient segments only": (
        _transient_only, [f"./{segment_file_name(0)}.deleted", f"./{segment_file_name(12)}.swap"], [],
        [f"./{segment_file_name(0)}.deleted", f"./{segment_file_name(12)}.swap"]),
}


def _build(shape: str, tmp_path: Path) -> Path:
    build = SHAPES[shape][0]
    root = tmp_path / "in"
    made = build(root)
    return made if isinstance(made, Path) else root


def _expected(shape: str, path: Path, reader: str) -> set[str]:
    _, reads, verify_also, groups = SHAPES[shape]
    base = path.parent if path.is_file() else path
    files = {os.path.normpath(base / r) for r in reads}
    if reader == "verify":
        return files | {os.path.normpath(base / r) for r in verify_also}
    if reader in ("dump", "stats", "find"):
        return files
    out = set()
    for g in groups:
        if g == "<name>":
            continue
        if reader == "diff":
            out.add(path.name if g in (".", "<folder>") else g.removeprefix("./"))
        else:  # txn: a run by its folder, a file on its own by its path
            out.add(str(path.parent) if g == "<folder>" else os.path.normpath(base / g))
    return out


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_reader_reads_the_same_files(shape: str, tmp_path: Path) -> None:
    path = _build(shape, tmp_path)
    for name, (_, parse) in READERS.items():
        r = run_reader(name, path)
        assert r.returncode == 0, (name, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        got = {os.path.normpath(x) if "/" in x else x for x in parse(r.stdout)}
        assert got == _expected(shape, path, name), (name, r.stdout)


UNUSABLE = {
    "empty folder": (lambda root: root.mkdir(), listing.NO_FILES),
    "folder of other files": (lambda root: (root.mkdir(), (root / "README").write_text("hi")), listing.NO_FILES),
    "missing path": (lambda root: None, "no such file or directory"),
}


@pytest.mark.parametrize("shape", list(UNUSABLE))
def test_every_command_says_the_same_about_an_unusable_input(shape: str, tmp_path: Path) -> None:
    build, message = UNUSABLE[shape]
    root = tmp_path / "in"
    build(root)
    want = f"kseg: error: {root}: {message}"
    runs = {name: run_reader(name, root) for name in READERS}
    runs.update({name: kseg(*args, root) for name, args in SPECIAL.items()})
    runs.update({name: kseg(*args, root, "-o", tmp_path / f"out-{name}{OUTPUT_SUFFIX.get(name, '')}")
                 for name, args in WRITERS.items()})
    for name, r in runs.items():
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert r.stderr.splitlines() == [want], (name, r.stderr)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("out-")] == []


@pytest.mark.parametrize("shape,message", [("loose .log files", listing.WRITE_LOOSE),
                                           ("folder of log directories", listing.WRITE_LOG_DIRS)])
def test_writers_refuse_what_they_cannot_name(shape: str, message: str, tmp_path: Path) -> None:
    path = _build(shape, tmp_path)
    for name, args in WRITERS.items():
        out = tmp_path / f"out-{name}{OUTPUT_SUFFIX.get(name, '')}"
        r = kseg(*args, path, "-o", out)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert r.stderr.splitlines() == [f"kseg: error: {path}: {message}"], (name, r.stderr)
        assert not out.exists()


def test_listing_kinds() -> None:
    table = {
        "00000000000000000000.log": listing.SEGMENT,
        "00000000000000000005-AAAAAAAAAAAAAAAAAAAAAA.log": listing.SEGMENT,
        "00000000000000000000.log.deleted": listing.TRANSIENT,
        "00000000000000000000.log.swap": listing.TRANSIENT,
        "00000000000000000100-0000000003.checkpoint": listing.KRAFT_SNAPSHOT,
        "5.log": listing.LOOSE_LOG,
        "evil\n.log": listing.LOOSE_LOG,
        "00000000000000000000.index": listing.INDEX,
        "00000000000000000000.snapshot": listing.PRODUCER_SNAPSHOT,
        "leader-epoch-checkpoint": listing.PARTITION_TEXT,
        "cleaner-offset-checkpoint": listing.LOG_DIR_TEXT,
        "bootstrap.checkpoint": listing.LOG_DIR_TEXT,
        "00000000000000000000.kafka": listing.KAFKA07,
        "README": listing.OTHER,
        "00000000000000000000.index.deleted": listing.OTHER,
    }
    assert {n: listing.file_kind(n) for n in table} == table


# --------------------------------------------------------------------------- hostile names

HOSTILE = "t\x1b]0;pwned\x07\x1b[2J\u202eevil-0"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile(tmp_path: Path) -> Path:
    part = tmp_path / HOSTILE
    write_partition(part, 2, "none", segments=2)
    return part


TEXT_RUNS = {
    "dump": ["dump"], "verify": ["verify", "-v"], "stats": ["stats", "--segments"],
    "find": ["find", "--from-offset", "0"], "txn": ["txn", "--all", "--now-ms", NOW_MS],
}


def test_hostile_names_are_escaped_in_text(tmp_path: Path) -> None:
    part = _hostile(tmp_path)
    runs = {name: kseg(*args, part) for name, args in TEXT_RUNS.items()}
    runs["diff"] = kseg("diff", part, part)
    runs["verify missing"] = kseg("verify", part / "nope.log")
    runs["writer error"] = kseg("recompress", "--codec", "gzip", part, "-o", part)
    for name, r in runs.items():
        assert "Traceback" not in r.stderr, (name, r.stderr)
        assert not RAW.search(r.stdout + r.stderr), (name, r.stdout, r.stderr)
        assert "\\x1b]0;pwned\\x07" in r.stdout + r.stderr, (name, r.stdout, r.stderr)
    assert runs["verify missing"].returncode == 2


def test_hostile_names_are_exact_in_json(tmp_path: Path) -> None:
    part = _hostile(tmp_path)
    r = kseg("stats", "--format", "json", part)
    doc = json.loads(r.stdout)
    assert [p["topic"] for t in doc["topics"] for p in t["partitions"]] == [HOSTILE[:-2]]
    r = kseg("verify", "--format", "json", part)
    assert {Path(f["file"]).parent.name for f in json.loads(r.stdout)["files"]} == {HOSTILE}


def test_html_plot_labels_are_escaped(tmp_path: Path) -> None:
    pytest.importorskip("plotly")
    from kseg.ops.stats import stats_paths
    from kseg.render.html_report import _figures, html_report

    topic = '<a href="https://evil.example/">click</a><br>\x1b[2J'
    part = tmp_path / f"{topic.replace('/', '%')}-0"
    write_partition(part, 2, "none")
    report = stats_paths([part])
    skew = dict(_figures(report))["skew"]
    labels = [x for trace in skew.data for x in trace.x]
    assert labels and all("<" not in x and ">" not in x and "\x1b" not in x for x in labels), labels
    assert all(x.startswith("&lt;a href=") for x in labels), labels
    page = html_report(report)
    assert part.name not in page and "\x1b" not in page


# --------------------------------------------------------------------------- a file that shrinks


def _read_so_far(pid: int) -> int:
    with open(f"/proc/{pid}/io") as f:
        return int(next(line for line in f if line.startswith("rchar:")).split()[1])


def test_diff_of_a_shrinking_file_is_one_error_not_sigbus(tmp_path: Path) -> None:
    """The file is cut while diff reads it (a broker's retention, a truncated follower): one
    line, exit 2; never SIGBUS (a memory-mapped reader dies with exit 135, no message)."""
    chunk = entries(2, "none", 0, n_batches=200, per=20)
    body = chunk * (48 * (1 << 20) // len(chunk))  # six of diff's read windows
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / segment_file_name(0)).write_bytes(body)
    target = b / segment_file_name(0)
    p = subprocess.Popen([*KSEG, "diff", str(a), str(b)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    cut = False
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        try:
            done = _read_so_far(p.pid)
        except (OSError, StopIteration):
            break
        if done > 24 << 20:  # past the first windows of both sides, far from the end
            os.truncate(target, 1000)
            cut = True
            break
        time.sleep(0.002)
    out, err = p.communicate(timeout=120)
    assert p.returncode >= 0, f"killed by signal {-p.returncode}: {err}"
    if not cut:
        pytest.skip("diff finished before the file could be cut")
    assert p.returncode == 2, (out, err)
    assert err.splitlines() == [f"kseg: error: {target}: the file shrank during the run "
                                f"(from {len(body)} to 1000 bytes)"], err


def test_diff_reads_with_pread_not_mmap() -> None:
    """No module of kseg memory-maps a file a broker could shrink under it."""
    root = Path(__file__).resolve().parent.parent / "kseg"
    mapped = [str(p) for p in root.rglob("*.py") if re.search(r"\bmmap\.mmap\(", p.read_text())]
    assert mapped == []


# --------------------------------------------------------------------------- stats on empty segments


def test_stats_on_10k_empty_segments_is_quick(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    for i in range(10_000):
        (part / segment_file_name(i * 10)).touch()
    # CPU time, not wall time: the machine running the tests may be busy.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = kseg("stats", part)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    took = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert r.returncode == 0, r.stderr
    assert "0 records" in r.stdout
    assert took < 5, f"stats took {took:.1f} s of CPU on 10,000 empty segments (it was ~25 s)"
