"""Live inputs: a segment that changes under a command (a broker appending, retention renaming
it to ``.deleted``, an overwrite), in real processes made deterministic by stopping the child
(SIGSTOP) once it has the file open and continuing it after the change.

Writers publish nothing and exit 2 (or 1 naming the damage when the damage check met the
overwritten bytes); readers go on, follow a renamed segment under its new name and say so
in a note; a segment only appended to is at most a note.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from children import stop_when, stopped

from kseg.log.encode import build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record

KSEG = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]
# kseg that stops itself once it has opened $KSEG_TEST_STOP_AT (tests/stop_at_open.py)
KSEG_STOPPING = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                 "import stop_at_open; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]
NOW_MS = "1800000000000"
BATCHES, PER = 60, 20  # per segment: offsets 0..1199, 1200..2399, 2400..3599


def _partition(folder: Path, *, segments: int = 3, magic: int = 2) -> Path:
    rnd = random.Random(1)
    folder.mkdir(parents=True)
    off = 0
    for _ in range(segments):
        base, buf = off, bytearray()
        for _ in range(BATCHES):
            recs = [make_record(off + i, 1_700_000_000_000 + off + i, f"k{off + i}".encode(), rnd.randbytes(200),
                                magic=magic) for i in range(PER)]
            if magic == 2:
                buf += build_v2_batch(recs, codec=0)
            else:
                from kseg.log.encode import build_legacy_message
                for r in recs:
                    buf += build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value)
            off += PER
        (folder / segment_file_name(base)).write_bytes(buf)
    os.utime(folder / segment_file_name(0), ns=(1_700_000_000_000_000_000,) * 2)  # well before the run
    return folder


def _seg(folder: Path, i: int) -> Path:
    return folder / segment_file_name(i * BATCHES * PER)


def run_during(args: list[str], target: Path, act: Callable[[], None]) -> tuple[int, str, str]:
    """Run kseg, stopped by itself right after it first opens ``target`` (stop_at_open), ``act()``,
    continue it: (exit code, stdout, stderr)."""
    env = {**os.environ, "KSEG_TEST_STOP_AT": str(target)}
    proc = subprocess.Popen([*KSEG_STOPPING, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if not stop_when(proc, lambda: stopped(proc.pid)):
        out, err = proc.communicate()
        pytest.fail(f"kseg ended without opening {target}: exit {proc.returncode}: {err.decode()[-2000:]}")
    try:
        act()
    finally:
        proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def kseg(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([*KSEG, *map(str, args)], capture_output=True, text=True, timeout=300)


def overwrite_middle(path: Path) -> Callable[[], None]:
    def act() -> None:
        with open(path, "r+b") as f:
            f.seek(path.stat().st_size // 2)
            f.write(b"\xff" * 64)
    return act


def rename_deleted(path: Path) -> Callable[[], None]:
    def act() -> None:
        for p in path.parent.glob(path.name.split(".")[0] + ".*"):
            p.rename(p.with_name(p.name + ".deleted"))
    return act


def append_batch(path: Path, first_offset: int) -> Callable[[], None]:
    def act() -> None:
        recs = [make_record(first_offset + i, 1_700_000_000_000 + first_offset + i, b"new", b"v", magic=2)
                for i in range(3)]
        with open(path, "ab") as f:
            f.write(build_v2_batch(recs, codec=0))
    return act


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kseg: error:")]


# --------------------------------------------------------------------------- writers

WRITERS = {
    "up-convert": (1, ["up-convert", "{in}", "-o", "{out}", "--to-magic", "2"]),
    "recompress": (2, ["recompress", "{in}", "-o", "{out}", "--codec", "lz4"]),
    "compact": (2, ["compact", "{in}", "-o", "{out}", "--include-active", "--now-ms", NOW_MS]),
}


def _writer_args(name: str, folder: Path, out: Path) -> list[str]:
    return [a.replace("{in}", str(folder)).replace("{out}", str(out)) for a in WRITERS[name][1]]


@pytest.mark.parametrize("name", list(WRITERS))
def test_writer_input_overwritten_in_the_middle_publishes_nothing(name: str, tmp_path: Path) -> None:
    folder = _partition(tmp_path / "in" / "t-0", magic=WRITERS[name][0])
    out = tmp_path / "out"
    seg = _seg(folder, 0)
    code, _, err = run_during(_writer_args(name, folder, out), seg, overwrite_middle(seg))
    assert code in (1, 2), err
    lines = error_lines(err)
    assert len(lines) == 1, err
    if code == 2:
        assert lines[0].startswith(f"kseg: error: {seg}: the file changed during the run (modified "), lines
        assert lines[0].endswith("nothing was written; run again when the broker is done with it"), lines
    else:
        assert "is damaged" in lines[0], lines
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # no temporary output left


@pytest.mark.parametrize("name", ["up-convert", "compact"])
def test_writer_input_renamed_by_retention_publishes_nothing(name: str, tmp_path: Path) -> None:
    folder = _partition(tmp_path / "in" / "t-0", magic=WRITERS[name][0])
    out = tmp_path / "out"
    code, _, err = run_during(_writer_args(name, folder, out), _seg(folder, 0), rename_deleted(_seg(folder, 0)))
    assert code == 2, err
    lines = error_lines(err)
    assert lines == [f"kseg: error: {_seg(folder, 0)}: renamed to {_seg(folder, 0).name}.deleted during the run "
                     "(retention): nothing was written; run again when the broker is done with it"], err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_writer_input_grown_publishes_nothing(tmp_path: Path) -> None:
    folder = _partition(tmp_path / "in" / "t-0")
    out = tmp_path / "out"
    seg = _seg(folder, 2)
    code, _, err = run_during(_writer_args("recompress", folder, out), seg, append_batch(seg, 3 * BATCHES * PER))
    assert code == 2, err
    assert error_lines(err)[0].startswith(f"kseg: error: {seg}: the file changed during the run (size "), err
    assert not out.exists()


# --------------------------------------------------------------------------- readers


@pytest.mark.parametrize("args", [["verify"], ["dump"]], ids=["verify", "dump"])
def test_reader_newest_segment_appended_is_fine(args: list[str], tmp_path: Path) -> None:
    folder = _partition(tmp_path / "t-0")
    seg = _seg(folder, 2)
    code, _, err = run_during([*args, str(folder)], seg, append_batch(seg, 3 * BATCHES * PER))
    assert code == 0, err
    assert error_lines(err) == []
    for line in err.splitlines():
        assert line.startswith("kseg: note:") or "problem" not in line, err


def test_dump_notes_a_segment_that_grew(tmp_path: Path) -> None:
    folder = _partition(tmp_path / "t-0")
    seg = _seg(folder, 2)

    def act() -> None:
        time.sleep(0.05)  # the open file has been sized already (fstat right after open)
        append_batch(seg, 3 * BATCHES * PER)()

    code, out, err = run_during(["dump", str(seg)], seg, act)
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith(f"kseg: note: {seg}: the file grew during the run")]
    assert len(notes) <= 1, err


READERS = {
    "dump": ["dump", "{in}"],
    "verify": ["verify", "{in}"],
    "stats": ["stats", "{in}", "--format", "json"],
    "find": ["find", "{in}", "--key", "k1300"],
    "txn": ["txn", "{in}"],
}


def _covers_renamed(name: str, out: str) -> None:
    """The output covers the renamed segment (offsets 1200..2399)."""
    if name == "dump":
        assert "  offsets 1200..1219  " in out, out[:2000]
    elif name == "stats":
        assert json.loads(out)["records"] == 3 * BATCHES * PER
    elif name == "find":
        assert "offset 1300" in out, out


@pytest.mark.parametrize("name", list(READERS))
def test_reader_follows_a_segment_renamed_by_retention(name: str, tmp_path: Path) -> None:
    folder = _partition(tmp_path / "t-0")
    renamed = _seg(folder, 1)
    args = [a.replace("{in}", str(folder)) for a in READERS[name]]
    code, out, err = run_during(args, _seg(folder, 0), rename_deleted(renamed))
    assert code == 0, err
    assert error_lines(err) == [], err
    assert (renamed.parent / (renamed.name + ".deleted")).exists()
    assert "Traceback" not in err
    if name != "verify":  # verify's own note: the file went away
        where = out if name == "txn" else err
        assert f"renamed to {renamed.name}.deleted during the run (retention)" in where + out, (out, err)
    _covers_renamed(name, out)


@pytest.mark.parametrize("name", ["stats", "find"])
def test_segment_deleted_during_stats_or_find_is_a_note(name: str, tmp_path: Path) -> None:
    folder = _partition(tmp_path / "t-0")
    gone = _seg(folder, 1)
    args = [a.replace("{in}", str(folder)) for a in READERS[name]]
    if name == "stats":
        args = args[:2]  # text: the note is a line of the report
    code, out, err = run_during(args, _seg(folder, 0), gone.unlink)
    assert code == 0, err
    assert error_lines(err) == []
    note = f"{gone}: the file went away during the run (deleted by retention or renamed by the broker)"
    if name == "stats":
        assert f"  note: {note}" in out.splitlines(), out
    else:
        assert f"kseg: note: {note}" in err.splitlines(), err


def test_stats_json_lists_the_notes(tmp_path: Path) -> None:
    folder = _partition(tmp_path / "t-0")
    gone = _seg(folder, 1)
    code, out, err = run_during(["stats", str(folder), "--format", "json"], _seg(folder, 0), gone.unlink)
    assert code == 0, err
    notes = [n for t in json.loads(out)["topics"] for p in t["partitions"] for n in p["notes"]]
    assert notes == [f"{gone}: the file went away during the run (deleted by retention or renamed by the broker)"]


def test_identity_change_kinds(tmp_path: Path) -> None:
    """The one rule, in-process: appended, rewritten with the same size, replaced, renamed."""
    from kseg.log import identity

    p = tmp_path / segment_file_name(0)
    p.write_bytes(b"x" * 100)
    os.utime(p, ns=(1, 1))
    before = identity.Identity.of(p.stat())
    assert identity.change(p, before) is None
    with open(p, "ab") as f:
        f.write(b"y")
    c = identity.change(p, before)
    assert c is not None and c.appended and "size 100 -> 101" in c.detail()
    assert c.reader_note().startswith("the file grew during the run (size 100 -> 101")
    p.write_bytes(b"z" * 100)
    c = identity.change(p, before)
    assert c is not None and not c.appended and c.contents_changed
    assert c.reader_note().endswith("the report may not match the file")
    with identity.watching():
        before = identity.opened(p, p.stat())
        identity.require_unchanged()  # unchanged: nothing to say
        p.rename(p.with_name(p.name + ".deleted"))
        c = identity.change(p, before)
        assert c is not None and c.renamed_to == str(p) + ".deleted" and not c.contents_changed
        assert identity.follow(p) == Path(str(p) + ".deleted")
        with pytest.raises(identity.InputChangedError, match=r"renamed to 00000000000000000000\.log\.deleted"):
            identity.require_unchanged()
    assert identity.watched() == []  # the writer's run is over
