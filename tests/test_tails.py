"""What follows a segment's last whole batch, as every reading command judges it (``kseg.log.tails``).

One table: each tail a partition can have (zeros a broker preallocated, a batch still being written
at the end of the newest segment, the same in an older segment, garbage) × each reading command, on
the partition folder, on the segment named alone and on the log directory packed in an archive.
What a healthy broker leaves is a note and exit 0 everywhere, on local files and in an archive
alike; damage is a problem (exit 1; ``diff``, whose exit code says whether the copies differ, names
it a problem). A command of the click group that reads segments and has no row here fails
``test_every_command_is_a_reader_or_says_why_not``.

The writers take the same table: zeros a broker preallocated are no data, so a writer's output
ends at the last batch (as the broker trims the segment) and it says how many bytes it left
out, exit 0; any other tail stops it (exit 1, nothing written), a batch still being written
included: a writer drops nothing that could be data. The Python API's reads (``kseg.open_*``)
are readers: their rows end where ``dump`` says a note, and damage raises.
"""

from __future__ import annotations

import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Callable

import click
import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.log.encode import build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record

sys.path.insert(0, str(Path(__file__).parent))

T0 = 1_700_000_000_000


def _batch(offset: int, n: int = 3) -> bytes:
    return build_v2_batch([make_record(offset + i, T0 + offset + i, b"k%d" % i, b"v" * 40) for i in range(n)],
                          base_offset=offset, partition_leader_epoch=0)


# (which segment, the bytes after its last batch, whether a healthy broker leaves it there when the
# partition is listed from its folder, ... when the segment is named on its own)
CASES: dict[str, tuple[str, bytes, bool, bool]] = {
    "zeros preallocated in the newest segment": ("newest", bytes(1 << 16), True, True),
    "zeros preallocated in an older segment": ("older", bytes(4096), True, True),
    "a batch being written at the end of the newest segment": ("newest", _batch(900)[:40], True, False),
    "a few zero bytes ending the newest segment": ("newest", bytes(8), True, False),
    "a batch cut short in an older segment": ("older", _batch(900)[:40], False, False),
    "garbage after the newest segment's last batch": ("newest", b"\x00" * 12 + b"\x00\x00\x00\x30\xff" * 20,
                                                       False, False),
}

Reader = Callable[[Path], list[str]]

# Every command that reads segments and reports on them: its arguments for a path, and whether it
# found damage (from the result): exit 1, or for diff a problem line (its exit code is about the copies).
READERS: dict[str, tuple[Reader, Callable[[object], bool]]] = {
    "verify": (lambda p: ["verify", str(p)], lambda r: r.exit_code == 1),
    "dump": (lambda p: ["dump", str(p)], lambda r: r.exit_code == 1),
    "dump records (jsonl)": (lambda p: ["dump", "-r", "--format", "jsonl", str(p)], lambda r: r.exit_code == 1),
    "dump (kafka lines)": (lambda p: ["dump", "--format", "kafka", "-r", str(p)], lambda r: r.exit_code == 1),
    "stats": (lambda p: ["stats", str(p)], lambda r: r.exit_code == 1),
    "find": (lambda p: ["find", "--key", "k1", str(p)], lambda r: r.exit_code == 1),
    "txn": (lambda p: ["txn", str(p)], lambda r: r.exit_code == 1),
    "diff": (lambda p: ["diff", str(p), str(p)], lambda r: "problem:" in r.output),
    # replays internal topics: the partition is named as one (its records, not offsets records, are
    # notes: not decoded)
    "state": (lambda p: ["state", str(p)], lambda r: r.exit_code == 1),
}
FOLDER = {"state": "__consumer_offsets-0"}  # the partition folder a reader is given (else t-0)
# Commands of the group that do not judge a partition's tail this way, and why.
NOT_READERS = {
    "repair": "recovers as the broker does: cuts every tail and says so (exit 1 when it cut)",
    "salvage": "keeps what damage did not touch: says what it left out (exit 1 when anything was)",
    "up-convert": "a writer: WRITERS below",
    "down-convert": "a writer: WRITERS below",
    "recompress": "a writer: WRITERS below",
    "rebase": "a writer: WRITERS below",
    "compact": "a writer: WRITERS below",
    "export": "a writer: WRITERS below",
    "build": "writes a partition from JSON lines: reads no segment",
    "bundle": "copies files as they are into an archive",
    "index": "checks indexes (not the log's tail); --rebuild is a writer: WRITERS below",
    "plugins": "reads a registry partition (tests/test_plugins.py)",
    "spark": "runs the commands above on Spark (tests/test_spark.py)",
}


def test_every_command_is_a_reader_or_says_why_not() -> None:
    ctx = click.Context(main, info_name="kseg")
    plain = {name.split(" ")[0] for name in READERS}
    assert set(main.list_commands(ctx)) == plain | set(NOT_READERS), "a command without its row"
    assert not plain & set(NOT_READERS)
    writers = {name for name, why in NOT_READERS.items() if "WRITERS below" in why}
    assert writers == {name.split(" ")[0] for name in WRITERS}, "a writer without its row"


NOW_MS = "1800000000000"
# Every command that writes what it reads (and whose output ends where the input's batches end):
# its arguments for an input and an output, and the output's name under the test's folder.
WRITERS: dict[str, tuple[Callable[[Path, Path], list[str]], str]] = {
    "up-convert": (lambda p, o: ["up-convert", "--to-magic", "2", "--codec", "lz4", str(p), "-o", str(o)], "out"),
    "down-convert": (lambda p, o: ["down-convert", "--to-magic", "1", str(p), "-o", str(o)], "out"),
    "recompress": (lambda p, o: ["recompress", "--codec", "gzip", str(p), "-o", str(o)], "out"),
    "rebase": (lambda p, o: ["rebase", "--base-offset", "1000", str(p), "-o", str(o)], "out"),
    "compact": (lambda p, o: ["compact", "--include-active", "--now-ms", NOW_MS, str(p), "-o", str(o)], "out"),
    "export": (lambda p, o: ["export", str(p), "-o", str(o)], "out.parquet"),
    "index --rebuild": (lambda p, o: ["index", "--rebuild", str(p), "-o", str(o)], "out"),
}
# the tails a writer goes through: no data, left out and said
WRITTEN_THROUGH = {"zeros preallocated in the newest segment", "zeros preallocated in an older segment"}


def _written(writer: str, out: Path) -> object:
    """What a writer's output holds: each file's bytes by name (segments, indexes, checkpoints), or
    for export the records read back by pyarrow (without the column naming the input file)."""
    if writer == "export":
        import pyarrow.parquet as pq

        return pq.read_table(out).drop_columns(["segment"]).to_pylist()
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}


def _given(root: Path, case: str, given: str, *, tail: bool = True) -> Path:
    folder, segment = _partition(root / "logs", case, tail=tail)
    if given == "archive":
        with zipfile.ZipFile(root / "logs.zip", "w") as z:
            for f in sorted(folder.iterdir()):
                z.write(f, f"logs/{folder.name}/{f.name}")
    return {"folder": folder, "segment": segment, "archive": root / "logs.zip"}[given]


@pytest.mark.parametrize("writer", list(WRITERS))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("given", ["folder", "segment", "archive"])
def test_a_tail_is_written_through_only_when_it_is_no_data(tmp_path, writer, case, given) -> None:
    """The oracle is the same command on the same partition without the tail: where the tail is
    no data the outputs are the same, byte for byte."""
    args, name = WRITERS[writer]
    out = tmp_path / "tailed" / name
    r = CliRunner().invoke(main, args(_given(tmp_path / "tailed", case, given), out))
    if case not in WRITTEN_THROUGH:
        assert r.exit_code == 1 and not out.exists(), (r.exit_code, r.output)
        return
    assert r.exit_code == 0, r.output
    control = tmp_path / "control" / name
    c = CliRunner().invoke(main, args(_given(tmp_path / "control", case, given, tail=False), control))
    assert c.exit_code == 0, c.output
    assert _written(writer, out) == _written(writer, control)
    if not writer.startswith("index"):  # the log it indexes keeps its zeros: nothing is left out of it
        assert "zero bytes a broker preallocated" in r.output, r.output


def _partition(root: Path, case: str, name: str = "t-0", tail: bool = True, loose: bool = False) -> tuple[Path, Path]:
    """A partition folder of two segments with the case's tail (``tail``); (folder, the damaged segment).
    ``loose``: the two files not named by offset (a folder of files each read on its own)."""
    which, bytes_after, _, _ = CASES[case]
    folder = root / name
    folder.mkdir(parents=True)
    older = folder / ("older.log" if loose else segment_file_name(0))
    newest = folder / ("recent.log" if loose else segment_file_name(6))
    older.write_bytes(_batch(0) + _batch(3))
    newest.write_bytes(_batch(6) + _batch(9))
    target = newest if which == "newest" else older
    with open(target, "ab") as f:
        f.write(bytes_after if tail else b"")
    return folder, target


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("given", ["folder", "segment", "archive", "loose"])
def test_a_tail_is_judged_alike_by_every_reader(tmp_path, reader, case, given) -> None:
    """``archive``: the partition's log directory packed in a .tar (read in place, as a bundle is);
    ``loose``: a folder of the two files not named by offset, each read on its own as a segment
    named alone is (no broker is writing them)."""
    folder, segment = _partition(tmp_path / "logs", case, FOLDER.get(reader, "t-0"), loose=given == "loose")
    healthy = CASES[case][3] if given in ("segment", "loose") else CASES[case][2]
    target = {"folder": folder, "segment": segment, "archive": tmp_path / "logs.tar", "loose": folder}[given]
    if given == "archive":
        with tarfile.open(target, "w") as t:
            t.add(tmp_path / "logs", arcname="logs")
    args, damaged = READERS[reader]
    r = CliRunner().invoke(main, args(target))
    assert r.exit_code in (0, 1), (r.exit_code, r.output)
    assert damaged(r) is (not healthy), (r.exit_code, r.output)
    if healthy and reader in ("verify", "stats", "txn", "diff", "state"):  # said, not hidden
        assert "note:" in r.output and ("preallocated" in r.output or "incomplete tail" in r.output), r.output


def test_a_healthy_partition_is_healthy_for_every_reader(tmp_path) -> None:
    """The control: without a tail, no reader finds damage (else the table above proves nothing)."""
    for reader, (args, damaged) in READERS.items():
        folder = tmp_path / reader / FOLDER.get(reader, "t-0")
        folder.mkdir(parents=True)
        (folder / segment_file_name(0)).write_bytes(_batch(0) + _batch(3))
        (folder / segment_file_name(6)).write_bytes(_batch(6) + _batch(9))
        r = CliRunner().invoke(main, args(folder))
        assert r.exit_code == 0 and not damaged(r), (reader, r.output)


@pytest.mark.parametrize("method", ["records", "to_arrow"])
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("given", ["log directory", "folder", "segment"])
def test_the_api_reads_a_tail_as_the_commands_do(tmp_path, method, case, given) -> None:
    """``kseg.open_*``'s reads are readers too: what is a note for ``dump`` ends the records
    (every batch before it read), damage raises (a KsegError naming the file)."""
    import kseg

    folder, segment = _partition(tmp_path / "logs", case)
    healthy = CASES[case][3] if given == "segment" else CASES[case][2]
    opened = {"log directory": lambda: kseg.open_log_dir(tmp_path / "logs"),
              "folder": lambda: kseg.open_partition(folder), "segment": lambda: kseg.open_segment(segment)}[given]()
    read = (lambda: sum(1 for _ in opened.records())) if method == "records" else \
        (lambda: opened.to_arrow().num_rows)
    if not healthy:
        with pytest.raises(kseg.KsegError) as raised:
            read()
        assert str(segment) in str(raised.value)
        return
    wanted = 6 if given == "segment" else 12  # the segment alone: its two batches of three
    assert read() == wanted
