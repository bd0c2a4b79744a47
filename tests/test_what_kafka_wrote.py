"""No false alarm on what Kafka wrote, and one verdict on real files.

Every command of the failure matrix (``tests/test_failure_matrix.py``: each command of the click
group has its row there, and so its place here) runs on every log directory a broker wrote in
the corpora (every release line, the clients', admin, convert, cleaner and tiered scenarios):

- checkers and readers exit 0: the broker's own files are sound. Among them are a compacted
  log whose transaction markers outlived their data, segments fetched without their indexes,
  logs that start past offset 0;
- writers exit 0 and write what they promise (segments ``kseg verify`` passes), down-convert
  with a codec magic 1 can hold (zstd is refused: ``test_failure_matrix``'s rows); those that
  keep every record keep it: ``kseg diff --records`` finds no record that differs (offset, key,
  value, headers, timestamp), whatever the batches became;
- kafka-python, another client's reader, reads every segment of the input and of every
  writer's output with valid CRCs and the records kseg reads.

On the real files of ``../shared/realdata`` (some cut short, some fetched partially), every
checker and reader gives ``kseg verify``'s verdict: none calls damage what verify calls sound,
or the other way round.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_failure_matrix import COMMANDS

from conftest import REALDATA, REPO
from kafka.record import MemoryRecords
from kseg.cli.main import main
from kseg.decoders import RAFT_TOPICS
from kseg.log.listing import (INDEX, KRAFT_SNAPSHOT, LEADER_EPOCH_FILE, LOG_DIR_TEXT, PARTITION_TEXT,
                               PRODUCER_SNAPSHOT, SEGMENT, TIERED_EPOCH, file_kind)
from kseg.log.records import batch_records
from kseg.log.segment import Segment

FIXTURES = REPO / "fixtures"
# Every folder of log directories a broker wrote; fixtures/logdir is kseg's own.
BROKER_LOG_DIRS = sorted({*FIXTURES.glob("kafka-*/**/logdir"), FIXTURES / "kafka-tiered" / "remote",
                          *(p for p in FIXTURES.glob("kafka-cleaner/*/*") if p.is_dir())})
# The console script as a user runs it (its allocator settings included).
KSEG = [sys.executable, "-c", "import sys; from kseg.cli import run; sys.argv[0] = 'kseg'; sys.exit(run())"]
INTERNAL = "__"  # internal topics' names start so; state replays only those
# What a command needs besides its matrix row to take every corpus.
EXTRA = {"down-convert": ["--codec", "gzip"],  # magic 1 cannot hold zstd
         "export": ["--max-file-rows", "100000"]}  # one file a partition (the row's parts are for its faults)
# Writers whose output holds every record of their input as it was (on sound input).
KEEP_RECORDS = ("up-convert", "recompress", "repair", "salvage")
# Commands not run here, each with the reason.
NOT_HERE = {
    "build": "build reads JSON lines, not a log directory (its matrix row makes them beside the input, "
             "which is read-only here)",
    "plugins": "plugins takes no data",
}


def _invoke(argv: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(main, argv)
    return res.exit_code, (res.stderr or "") + res.output


def test_the_corpora_are_all_here() -> None:
    names = {str(p.relative_to(FIXTURES)) for p in BROKER_LOG_DIRS}
    assert {"kafka-2.8/logdir", "kafka-4.4/logdir", "kafka-clients/4/logdir", "kafka-cleaner/4/after2",
            "kafka-convert/3.9/logdir", "kafka-tiered/logdir", "kafka-tiered/remote"} <= names
    assert len(BROKER_LOG_DIRS) >= 35
    assert all(p.is_dir() for p in BROKER_LOG_DIRS)


@pytest.mark.parametrize("logdir", BROKER_LOG_DIRS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_command_takes_what_the_broker_wrote(logdir: Path) -> None:
    internal = any(p.name.startswith(INTERNAL) for p in logdir.iterdir())
    wrong = _kafka_python_disagrees(logdir)
    for name, cmd in COMMANDS.items():
        if name in NOT_HERE:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / f"out{cmd.output_suffix}"
            code, said = _invoke([name, *cmd.argv(str(logdir), str(out)), *EXTRA.get(name, [])])
            expected = 2 if name == "state" and not internal else 0  # state refuses an ordinary topic
            if code != expected or "Traceback" in said:
                wrong.append(f"{name}: exit {code}, expected {expected}: {said[-600:]}")
                continue
            if cmd.role == "writer" and not _output_ok(cmd.output_check, out):
                wrong.append(f"{name}: its output is not what it promises")
            if cmd.role == "writer" and cmd.output_check == "verify":
                wrong += [f"{name}: {x}" for x in _kafka_python_disagrees(out)]
            if name in KEEP_RECORDS:
                wrong += [f"{name}: {p['name']}: {p['records_differing']} record(s) differ" for p in _changed(logdir, out)]
            if cmd.role == "writer" and cmd.output_check == "verify":
                wrong += [f"{name}: {x}" for x in _raft_logs_rewritten(logdir, out)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("logdir", BROKER_LOG_DIRS, ids=lambda p: str(p.relative_to(FIXTURES)))
@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
def test_every_file_the_broker_wrote_dumps_as_what_it_is(logdir: Path, fmt: str) -> None:
    """``kseg dump`` of each file named on its own (the log directory's checkpoints and
    meta.properties, a partition's indexes, snapshots and text files, KRaft snapshots): each is
    read as its kind, none is passed over, none is damage."""
    files = sorted(str(p) for p in logdir.rglob("*") if p.is_file())
    code, said = _invoke(["dump", "--format", fmt, *files])
    assert code == 0, said[-3000:]
    assert "Ignoring" not in said, [line for line in said.splitlines() if "Ignoring" in line][:5]
    heads = [line for line in said.splitlines() if line.startswith(("Dumping ", "== "))]
    if fmt != "jsonl":
        assert len(heads) == len(files), (len(heads), len(files))
    assert not [h for h in heads if h.endswith("(log)") and not h.split(" (")[0].endswith(".log")], heads


def _raft_logs_rewritten(src: Path, out: Path) -> list[str]:
    """The files of a KRaft log (``RAFT_TOPICS``) that a writer did not copy as they are: its
    segments, snapshots, quorum-state (the indexes and leader-epoch-checkpoint, which writers
    write anew for every partition, aside)."""
    wrong = []
    kept = (SEGMENT, KRAFT_SNAPSHOT, PRODUCER_SNAPSHOT, PARTITION_TEXT)
    for part in (p for p in src.iterdir() if p.is_dir() and p.name.rsplit("-", 1)[0] in RAFT_TOPICS):
        for f in (f for f in part.iterdir() if file_kind(f.name) in kept and f.name != LEADER_EPOCH_FILE):
            copy = out / part.name / f.name
            if not copy.is_file() or copy.read_bytes() != f.read_bytes():
                wrong.append(f"{part.name}/{f.name} not copied as it is")
    return wrong


# What each writer of segments does given a KRaft log on its own: the rewrites refuse it (exit 2:
# the raft layer's, never converted nor cleaned by a broker); repair and salvage keep its records.
RAFT_LOG_ALONE = {"compact": 2, "up-convert": 2, "down-convert": 2, "recompress": 2, "rebase": 2, "repair": 0,
                  "salvage": 0}


WRITERS_OF_SEGMENTS = sorted(n for n, c in COMMANDS.items()
                             if c.role == "writer" and c.output_check == "verify" and n not in NOT_HERE)


@pytest.mark.parametrize("name", WRITERS_OF_SEGMENTS)
def test_a_kraft_log_on_its_own(name: str, tmp_path: Path) -> None:
    folder = FIXTURES / "kafka-4" / "logdir" / f"{RAFT_TOPICS[0]}-0"
    out = tmp_path / "out"
    res = CliRunner().invoke(main, [name, *COMMANDS[name].argv(str(folder), str(out)), *EXTRA.get(name, [])])
    assert res.exit_code == RAFT_LOG_ALONE[name], res.stderr
    if res.exit_code == 2:
        errors = res.stderr.splitlines()
        assert len(errors) == 1 and "KRaft metadata log" in errors[0] and not out.exists(), res.stderr


def _kseg_records(log: Path) -> list[tuple]:
    return [(r.offset, r.key, r.value, None if b.magic == 0 else r.timestamp,
             tuple((h.key, h.value) for h in r.headers or ()))
            for b in Segment(log).batches() if not b.is_control for r in batch_records(b)]


def _kafka_python_records(log: Path) -> tuple[list[tuple], int]:
    """kafka-python's records of a segment (control batches left out), and how many of its
    batches fail ``validate_crc``."""
    records, bad = [], 0
    mr = MemoryRecords(log.read_bytes())
    while mr.has_next():
        batch = mr.next_batch()
        if batch is None:
            break
        bad += not batch.validate_crc()
        if getattr(batch, "is_control_batch", False):
            continue
        records += [(r.offset, r.key, r.value, r.timestamp, tuple(r.headers or ())) for r in batch]
    return records, bad


def _kafka_python_disagrees(root: Path) -> list[str]:
    """Where kafka-python reads a segment under ``root`` otherwise than kseg does."""
    out = []
    for log in sorted(root.rglob("*.log")):
        theirs, bad = _kafka_python_records(log)
        if bad:
            out.append(f"{log}: kafka-python finds {bad} CRC(s) that do not match")
        if theirs != _kseg_records(log):
            out.append(f"{log}: kafka-python reads other records")
    return out


def _changed(a: Path, b: Path) -> list[dict]:
    """The partitions of ``b`` whose records are not ``a``'s (``kseg diff --records``)."""
    res = CliRunner().invoke(main, ["diff", "--records", "--format", "json", "--max-records", "3", str(a), str(b)])
    doc = json.loads(res.stdout)
    return [p for p in doc["partitions"] if p["kind"] != "identical" and p.get("records_differing") != 0]


def _output_ok(check: str, out: Path) -> bool:
    """Segments (and a bundle, read in place) that verify passes; Parquet files with records."""
    if check == "export":
        import pyarrow.parquet as pq

        return sum(pq.read_metadata(f).num_rows for f in out.rglob("*.parquet")) > 0
    return _invoke(["verify", str(out)])[0] == 0


def test_every_command_has_its_place_here() -> None:
    assert set(NOT_HERE) <= set(COMMANDS)
    assert {c.role for n, c in COMMANDS.items() if n not in NOT_HERE} == {"checker", "reader", "writer"}


def _kinds_of(logdir: Path) -> set[tuple[str, str]]:
    """The kinds of file a log directory holds, told apart by suffix (or by name, for the named
    text files): ``.index``, ``.timeindex``, ``.txnindex``, each checkpoint file..."""
    by_suffix = (SEGMENT, INDEX, PRODUCER_SNAPSHOT, KRAFT_SNAPSHOT, TIERED_EPOCH)
    return {(k, p.suffix if k in by_suffix else p.name)
            for p in logdir.rglob("*") if p.is_file() for k in [file_kind(p.name)]}


def _covering(logdirs: list[Path]) -> list[Path]:
    """The first log directory to hold each kind of file any of them holds."""
    chosen: list[Path] = []
    seen: set[tuple[str, str]] = set()
    for d in logdirs:
        kinds = _kinds_of(d)
        if kinds - seen:
            chosen.append(d)
            seen |= kinds
    return chosen


COVERING = _covering(BROKER_LOG_DIRS)
# The child's address space: kseg with Python peaks at 42-43 MiB of it, 252 MiB with pyarrow. A
# read call allocates what it is asked for, so asking for a bound (a snapshot's 2 GiB, a text
# file's 64 MiB) rather than what the file holds fails here as "out of memory".
CEILING_MIB = {"export": 384}
DEFAULT_CEILING_MIB = 100


def test_the_ceiling_covers_every_kind_of_file() -> None:
    kinds = set().union(*map(_kinds_of, COVERING))
    assert {(INDEX, ".txnindex"), (PRODUCER_SNAPSHOT, ".snapshot"), (KRAFT_SNAPSHOT, ".checkpoint"),
            (PARTITION_TEXT, "leader-epoch-checkpoint"), (LOG_DIR_TEXT, "recovery-point-offset-checkpoint"),
            (TIERED_EPOCH, ".leader_epoch_checkpoint")} <= kinds


@pytest.mark.parametrize("logdir", COVERING, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_flat_memory_every_command_in_a_small_address_space(logdir: Path) -> None:
    """Every command, in a child process under an address-space ceiling (RLIMIT_AS), on the log
    directories that between them hold every kind of file a broker wrote in the corpora: the
    verdict is the one it gives without the ceiling (``test_every_command_takes_what_the_broker_wrote``)."""
    internal = any(p.name.startswith(INTERNAL) for p in logdir.iterdir())
    wrong = []
    for name, cmd in COMMANDS.items():
        if name in NOT_HERE:
            continue
        limit = CEILING_MIB.get(name, DEFAULT_CEILING_MIB) << 20
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / f"out{cmd.output_suffix}"
            proc = subprocess.run([*KSEG, name, *cmd.argv(str(logdir), str(out)), *EXTRA.get(name, [])],
                                  capture_output=True, text=True, timeout=300,
                                  preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
        expected = 2 if name == "state" and not internal else 0
        if proc.returncode != expected or "out of memory" in proc.stderr:
            wrong.append(f"{name}: exit {proc.returncode}, expected {expected}: {proc.stderr[-400:]}")
    assert not wrong, "\n".join(wrong)


REAL_FOLDERS = sorted({p.parent for p in REALDATA.rglob("*.log")}) if REALDATA.exists() else []
JUDGES = [n for n, c in COMMANDS.items() if c.role in ("checker", "reader") and n not in ("state", "diff", "index")]


@pytest.mark.skipif(not REAL_FOLDERS, reason="no ../shared/realdata here")
@pytest.mark.parametrize("folder", REAL_FOLDERS, ids=lambda p: str(p.relative_to(REALDATA)))
def test_every_reader_gives_verifys_verdict_on_real_files(folder: Path) -> None:
    """``state`` replays internal topics only and ``diff`` compares two inputs: their verdicts
    are other questions (the failure matrix has their rows)."""
    verdict, said = _invoke(["verify", str(folder)])
    assert verdict in (0, 1), said
    wrong = []
    for name in JUDGES:
        code, said = _invoke([name, *COMMANDS[name].argv(str(folder), "")])
        if code != verdict or "Traceback" in said:
            wrong.append(f"{name}: exit {code}, verify {verdict}: {said[-600:]}")
    assert not wrong, "\n".join(wrong)
