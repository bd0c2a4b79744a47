"""Live tier: ``kseg repair`` held to a real Kafka 4.3.1 broker's own recovery.

``kseg repair`` claims to do offline what the broker does when it loads a log after an unclean
shutdown (``LogLoader.recoverLog``, ``LogSegment.recover``): keep every batch up to the first
invalid one, drop the rest, delete every later segment, rebuild the indexes, drop leader-epoch
entries and producer snapshots past the new log end. Nothing else holds that claim to a broker,
and Kafka is the oracle: where the two disagree, kseg is wrong unless shown otherwise.

One broker writes the same deterministic records (keyed and not, some with headers, client
timestamps that sometimes go back) to one single-partition topic per damage case, in small
segments; one topic is zstd-compressed. It is restarted once on the way, so that each log holds
two leader epochs, and stops cleanly. Each partition is then damaged its own way (``DAMAGES``:
a bad CRC in the newest or an older segment, a torn write, preallocated zeros, garbage, a size
field zeroed or past the end, fields no CRC covers, a lost leader-epoch-checkpoint), a copy of it
is repaired with ``kseg repair``, and the broker is started once more after an unclean shutdown
(no ``.kafka_cleanshutdown``, no recovery-point checkpoint: every segment is recovered, as repair
assumes), serves every topic and stops cleanly. Per case, what the broker left is compared with
repair's output (``ASPECTS``):

* ``logs``: which ``.log`` files are left, and each one byte for byte;
* ``records``: the log end and the records the broker serves, against repair's log end and the
  records kseg reads in its output;
* ``indexes``: the ``.index`` and ``.timeindex`` entries of every segment left;
* ``epochs``: the ``leader-epoch-checkpoint`` entries.

A disagreement is a row of ``checks.KNOWN_DIFFERENCES``, the one table of them, and a strict
expected failure here (the test fails once kseg agrees, so that its row goes). Left out, since recovery does not decide them:

* the leader-epoch entry the broker adds at the log end when it leads the partition again after
  the restart (``Partition.makeLeader`` -> ``UnifiedLog.maybeAssignEpochStartOffset``): only entries
  below the log end are compared, recovery having dropped every entry at or past it
  (``LeaderEpochFileCache.truncateFromEndAsyncFlush`` in ``LogLoader.load``);
* producer snapshots: the broker rewrites them as it recovers (``LogLoader.recoverSegment`` takes
  one at the end of every segment it recovers), ``ProducerStateManager.removeStraySnapshots`` deletes
  those at no segment's base offset but the newest on every load, clean or not, and the clean
  shutdown takes one at the log end; repair carries the input's up to the new log end. Their
  offsets are printed; what they hold is held to the broker in tests/kafka/test_salvage_live.py;
* the ``.deleted`` files: the segments recovery removes are renamed and deleted later
  (``LocalLog.deleteSegmentFiles``, ``file.delete.delay.ms``): only ``.log`` files count;
* the preallocated zero tails of the index files (their entries are compared), ``.txnindex`` (no
  transactions here) and the log directory's checkpoints (a partition folder is repaired).

What each case cost the broker and repair is printed (``-s``). Needs ``java`` and ``mvn``;
skipped otherwise.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import brokers
import checks
import pytest

_why = brokers.unavailable("4")
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

from click.testing import CliRunner  # noqa: E402
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from kseg.cli.main import main  # noqa: E402
from kseg.companions.read import read_leader_epoch_checkpoint, read_offset_index, read_time_index  # noqa: E402
from kseg.log.records import batch_records  # noqa: E402
from kseg.log.segment import Segment, partition_segments  # noqa: E402

from test_salvage_live import CLEAN_SHUTDOWN, RELEASE, SEGMENT_BYTES  # noqa: E402

RECORDS = 500
#: the records written before the restart; the log's second leader epoch starts after them
FIRST_RUN = 300
FLUSH_EVERY = 20
RECOVERY_POINT = "recovery-point-offset-checkpoint"
LEADER_EPOCHS = "leader-epoch-checkpoint"
#: the case whose records are zstd-compressed (the others are written uncompressed)
CODEC_CASE = "zstd-crc-older"

#: (offset, timestamp, key, value, headers) of one record
Rec = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


# --------------------------------------------------------------------------- the damage


def _spans(log: Path) -> list[tuple[int, int]]:
    """(position, size) of each batch of a segment, as kseg frames them."""
    return [(b.position, b.size) for b in Segment(log).batches()]


def _flip(log: Path, at: int) -> None:
    data = bytearray(log.read_bytes())
    data[at] ^= 0xFF
    log.write_bytes(bytes(data))


def _segment(part: Path, which: int) -> Path:
    logs = partition_segments(part)
    assert len(logs) >= 3, [p.name for p in logs]
    return logs[which]


def _flipped(which: int, batch: str) -> Callable[[Path], str]:
    """A byte flipped halfway into a batch (the middle one, or the first) of a segment: its CRC fails."""
    def damage(part: Path) -> str:
        log = _segment(part, which)
        spans = _spans(log)
        pos, size = spans[0] if batch == "first" else spans[len(spans) // 2]
        _flip(log, pos + size // 2)
        return f"byte {pos + size // 2} of {log.name} flipped (batch at byte {pos}, {size} bytes)"
    return damage


def _torn(part: Path) -> str:
    log = _segment(part, -1)
    pos, size = _spans(log)[-1]
    with log.open("r+b") as f:
        f.truncate(pos + size // 2)
    return f"{log.name} cut at byte {pos + size // 2}, inside its last batch (at byte {pos}, {size} bytes)"


def _appended(data: bytes, what: str) -> Callable[[Path], str]:
    def damage(part: Path) -> str:
        log = _segment(part, -1)
        size = log.stat().st_size
        with log.open("ab") as f:
            f.write(data)
        return f"{len(data)} {what} appended to {log.name} (after byte {size})"
    return damage


def _size_field(which: int, new_size: Callable[[int], int]) -> Callable[[Path], str]:
    """The size field (bytes 8..11) of the middle batch of a segment set to ``new_size(file size)``."""
    def damage(part: Path) -> str:
        log = _segment(part, which)
        spans = _spans(log)
        pos, size = spans[len(spans) // 2]
        data = bytearray(log.read_bytes())
        value = new_size(len(data))
        data[pos + 8:pos + 12] = value.to_bytes(4, "big")
        log.write_bytes(bytes(data))
        return (f"size field of the batch at byte {pos} of {log.name} ({len(data)} bytes) set from {size - 12} "
                f"to {value}")
    return damage


def _epochs_lost(whole_file: bool) -> Callable[[Path], str]:
    """The leader-epoch-checkpoint without its last entry (or gone), the log intact: recovery assigns the
    epochs of the batches it reads (``LogSegment.recover``)."""
    def damage(part: Path) -> str:
        lec = part / LEADER_EPOCHS
        lines = lec.read_text().splitlines()[2:]
        if whole_file:
            lec.unlink()
            return f"{LEADER_EPOCHS} deleted (it held {lines})"
        lec.write_text(f"0\n{len(lines) - 1}\n" + "".join(f"{line}\n" for line in lines[:-1]))
        return f"{LEADER_EPOCHS} without its last entry {lines[-1]!r} (it held {lines})"
    return damage


def _indexed_batches(log: Path, interval: int = 4096) -> list[int]:
    """The positions of the batches ``LogSegment.recover`` writes an offset index entry for."""
    out, valid, last_entry = [], 0, 0
    for pos, size in _spans(log):
        if valid - last_entry > interval:
            out.append(pos)
            last_entry = valid
        valid += size
    return out


def _offset_rewound(batch: str) -> Callable[[Path], str]:
    """The base offset field (not covered by the CRC) of a batch of the segment before the newest set to
    the segment's base offset. Either the batch that gets the segment's second offset index entry: that
    entry would go back (``OffsetIndex.append`` throws InvalidOffsetException); or the batch that first
    holds the segment's largest timestamp (its last one, but for a back-dated record): the time index
    entry ``LogSegment.recover`` appends at the end would go back (``TimeIndex.maybeAppend`` throws it).
    ``LogLoader.recoverLog`` then empties the segment."""
    def damage(part: Path) -> str:
        log = _segment(part, -2)
        if batch == "indexed":
            pos = _indexed_batches(log)[1]
        else:
            batches = list(Segment(log).batches())
            pos = max(batches, key=lambda b: (b.max_timestamp, -b.position)).position
        data = bytearray(log.read_bytes())
        was = int.from_bytes(data[pos:pos + 8], "big")
        data[pos:pos + 8] = int(log.stem).to_bytes(8, "big")
        log.write_bytes(bytes(data))
        return f"base offset of the batch at byte {pos} of {log.name} ({batch}) set from {was} to {int(log.stem)}"
    return damage


def _magic(part: Path) -> str:
    """The magic byte (not covered by a v2 batch's CRC) of the middle batch of the newest segment set to 3."""
    log = _segment(part, -1)
    spans = _spans(log)
    pos, size = spans[len(spans) // 2]
    data = bytearray(log.read_bytes())
    data[pos + 16] = 3
    log.write_bytes(bytes(data))
    return f"magic byte of the batch at byte {pos} of {log.name} ({size} bytes) set from 2 to 3"


def _untouched(part: Path) -> str:
    return "no damage"


#: case -> its damage (what it does to the partition folder, in words); one topic each
DAMAGES: dict[str, Callable[[Path], str]] = {
    "control": _untouched,
    "crc-active": _flipped(-1, "middle"),
    "crc-older": _flipped(1, "middle"),
    "first-batch-active": _flipped(-1, "first"),
    "first-batch-oldest": _flipped(0, "first"),
    "torn-active": _torn,
    "zeros-appended": _appended(bytes(4096), "zero bytes"),
    "garbage-appended": _appended(random.Random(7).randbytes(1000), "random bytes"),
    "size-zero-older": _size_field(1, lambda _: 0),
    "size-past-end-older": _size_field(0, lambda file_size: file_size),
    CODEC_CASE: _flipped(1, "middle"),
    "offset-rewound-indexed": _offset_rewound("indexed"),
    "offset-rewound-max-timestamp": _offset_rewound("max-timestamp"),
    "magic-active": _magic,
    "epochs-lagging": _epochs_lost(whole_file=False),
    "epochs-missing": _epochs_lost(whole_file=True),
}

ASPECTS = ("logs", "records", "indexes", "epochs")

REPAIR = "repair"  # the file patterns of checks.KNOWN_DIFFERENCES for this test: repair/<case>; combos: aspects


def known_difference(case: str, aspect: str) -> str | None:
    """Why kseg repair differs from the broker's recovery here (``checks.KNOWN_DIFFERENCES``, the one
    table of differences), None where it must agree."""
    return checks.known_difference(RELEASE, f"{REPAIR}/{case}", aspect)


# --------------------------------------------------------------------------- the runs


def _topic(case: str) -> str:
    return f"repair-{case}"


def _record(i: int, base_ms: int) -> dict[str, Any]:
    """The i-th record every topic gets: same bytes on every run."""
    return {
        "key": None if i % 4 == 3 else f"key-{i % 37}".encode(),
        "value": f"value {i} ".encode() * 3 + random.Random(i).randbytes(64),
        "headers": [("h", f"{i}".encode()), ("empty", b"")] if i % 5 == 0 else [],
        # client timestamps that sometimes go back: the time index tracks the largest so far
        "timestamp_ms": base_ms + 10 * i - (5000 if i % 11 == 0 else 0),
    }


def _produce(bootstrap: str, records: range, base_ms: int) -> None:
    plain = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                          batch_size=2048)
    zstd = KafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                         batch_size=2048, compression_type="zstd")
    try:
        for i in records:
            for case in DAMAGES:
                (zstd if case == CODEC_CASE else plain).send(_topic(case), partition=0, **_record(i, base_ms))
            if i % FLUSH_EVERY == FLUSH_EVERY - 1:
                plain.flush()
                zstd.flush()
    finally:
        plain.close()
        zstd.close()


def _consume(bootstrap: str, topic: str) -> tuple[int, list[Rec], str | None]:
    """The topic's log end offset, every record the broker serves from its start, and what stopped
    the consumer short of the end (None: nothing). One consumer per topic: a batch the client cannot
    read stops only its own topic."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    tp = TopicPartition(topic, 0)
    served: list[Rec] = []
    try:
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        deadline = time.monotonic() + 20
        while c.position(tp) < end:
            if time.monotonic() > deadline:
                return end, served, f"stuck at offset {c.position(tp)} of {end}"
            try:
                polled = c.poll(timeout_ms=1000)
            except Exception as exc:  # noqa: BLE001 - what the client says about a batch it cannot read
                return end, served, f"{type(exc).__name__}: {exc}"
            served += [(m.offset, m.timestamp, m.key, m.value, tuple((k, v) for k, v in m.headers))
                       for msgs in polled.values() for m in msgs]
    finally:
        c.close()
    return end, served, None


@dataclass
class Outcome:
    """One case: the partition the broker left after its recovery, and repair's output."""

    case: str
    what: str
    broker: Path
    repaired: Path
    exit_code: int
    report: dict[str, Any]
    end_offset: int
    served: list[Rec]
    stopped: str | None = None  # what stopped the consumer short of the log end
    written: int = RECORDS


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    root = tmp_path_factory.mktemp("repair-live")
    work = root / "broker"
    data = work / "data"
    base_ms = int(time.time() * 1000) - 3_600_000
    with brokers.Broker(RELEASE, work) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        try:
            admin.create_topics([NewTopic(_topic(case), 1, 1, topic_configs={
                brokers.segment_bytes_config(RELEASE): str(SEGMENT_BYTES)}) for case in DAMAGES])
        finally:
            admin.close()
        _produce(b.bootstrap, range(FIRST_RUN), base_ms)
    # the restart: the broker leads the partitions in a new leader epoch
    with brokers.Broker(RELEASE, work) as b:
        _produce(b.bootstrap, range(FIRST_RUN, RECORDS), base_ms)

    out: dict[str, Outcome] = {}
    for case, damage in DAMAGES.items():
        part = data / f"{_topic(case)}-0"
        what = damage(part)
        damaged = root / "damaged" / part.name
        shutil.copytree(part, damaged)
        repaired = root / "repaired" / part.name
        res = CliRunner().invoke(main, ["repair", str(damaged), "-o", str(repaired), "--format", "json"])
        # exit 2: repair could not recover the partition (its error is kept for the report)
        report = json.loads(res.output)["partitions"][0] if res.exit_code in (0, 1) else {
            "error": res.output.strip() or repr(res.exception), "segments": [], "log_end_offset": None}
        out[case] = Outcome(case, what, part, repaired, res.exit_code, report, -1, [])

    # The broker's recovery after an unclean shutdown, of every segment (no recovery point).
    (data / CLEAN_SHUTDOWN).unlink()
    (data / RECOVERY_POINT).unlink()
    with brokers.Broker(RELEASE, work) as b:
        for case, o in out.items():
            o.end_offset, o.served, o.stopped = _consume(b.bootstrap, _topic(case))
    _print(out)
    return out


# --------------------------------------------------------------------------- the comparisons


def _logs(folder: Path) -> dict[str, tuple[int, str]] | None:
    """Each .log file: its size and SHA-256 (byte for byte, compactly); None: no such folder."""
    if not folder.is_dir():
        return None
    return {p.name: (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest()[:16])
            for p in partition_segments(folder)}


def _read_records(folder: Path) -> list[Rec] | None:
    if not folder.is_dir():
        return None
    return [(r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers))
            for log in partition_segments(folder) for b in Segment(log).batches() for r in batch_records(b)]


def _indexes(folder: Path) -> dict[str, tuple[list[tuple[int, int]] | None, list[tuple[int, int]] | None]] | None:
    """Per segment: its .index entries (offset, position) and .timeindex entries (timestamp, offset)."""
    if not folder.is_dir():
        return None
    out = {}
    for log in partition_segments(folder):
        index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
        out[log.stem] = ([tuple(e) for e in read_offset_index(index).entries] if index.exists() else None,
                         [tuple(e) for e in read_time_index(timeindex).entries] if timeindex.exists() else None)
    return out


def _epochs(folder: Path, below: int | None = None) -> list[tuple[int, int]] | None:
    lec = folder / LEADER_EPOCHS
    if not lec.exists():
        return None
    return [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(lec).entries
            if below is None or e.start_offset < below]


def _snapshots(folder: Path) -> list[int]:
    return [] if not folder.is_dir() else sorted(int(p.stem) for p in folder.glob("*.snapshot"))


def _compare(o: Outcome, aspect: str) -> tuple[Any, Any]:
    """(what the broker left, what kseg repair wrote) for one aspect."""
    if aspect == "logs":
        return _logs(o.broker), _logs(o.repaired)
    if aspect == "records":
        return (o.end_offset, o.served, o.stopped), (o.report["log_end_offset"], _read_records(o.repaired), None)
    if aspect == "indexes":
        return _indexes(o.broker), _indexes(o.repaired)
    assert aspect == "epochs"
    # Below the log end only: the entry at the log end is the broker's new leadership, not recovery's.
    return _epochs(o.broker, below=o.end_offset), _epochs(o.repaired)


def _agrees(o: Outcome, aspect: str) -> bool:
    broker, repaired = _compare(o, aspect)
    return broker == repaired


def _print(out: dict[str, Outcome]) -> None:
    for o in out.values():
        agree = " ".join(f"{a}={'agree' if _agrees(o, a) else 'DIFFER'}" for a in ASPECTS)
        segs = ", ".join(f"{Path(s['file']).stem.lstrip('0') or '0'}:{s['action']}"
                         + (f"@{s['cut']['position']}({s['cut']['reason']})" if s["cut"] and s["action"] != "deleted"
                            else "") for s in o.report["segments"])
        stopped = f" (the consumer stopped: {o.stopped})" if o.stopped else ""
        error = f", error {o.report['error']!r}" if "error" in o.report else ""
        print(f"\n{o.case}: {o.what}\n"
              f"  broker: end {o.end_offset}, {len(o.served)} of {o.written} records served{stopped}, "
              f"logs {_logs(o.broker)}, epochs {_epochs(o.broker)}, snapshots {_snapshots(o.broker)}\n"
              f"  repair: exit {o.exit_code}{error}, end {o.report['log_end_offset']}, segments [{segs}], "
              f"logs {_logs(o.repaired)}, epochs {_epochs(o.repaired)}, snapshots {_snapshots(o.repaired)}\n"
              f"  {agree}")


def test_every_difference_is_a_case() -> None:
    ours = [(rel, combo) for _, rel, combo in checks.KNOWN_DIFFERENCES if rel.startswith(f"{REPAIR}/")]
    assert ours and all(rel.removeprefix(f"{REPAIR}/") in DAMAGES and combo in ASPECTS for rel, combo in ours)


@pytest.mark.parametrize("aspect", ASPECTS)
@pytest.mark.parametrize("case", list(DAMAGES))
def test_repair_recovers_as_the_broker_does(outcomes: dict[str, Outcome], case: str, aspect: str) -> None:
    broker, repaired = _compare(outcomes[case], aspect)
    known = known_difference(case, aspect)
    if known is None:
        assert repaired == broker, outcomes[case].what
    else:
        # strict: once kseg agrees with the broker, this fails until its row of checks.KNOWN_DIFFERENCES goes
        assert repaired != broker, f"{case}:{aspect} now agrees with the broker: remove its known difference"
        pytest.xfail(known)


@pytest.mark.parametrize("case", list(DAMAGES))
def test_the_broker_serves_a_prefix_of_what_was_written(outcomes: dict[str, Outcome], case: str) -> None:
    """Every topic got the same records: what the broker serves after its recovery is a prefix of the
    undamaged control's, up to the log end it reports."""
    o, control = outcomes[case], outcomes["control"]
    assert len(control.served) == control.written and control.stopped is None
    assert o.served == control.served[:len(o.served)]
    assert o.stopped is not None or len(o.served) == o.end_offset


def test_repair_leaves_the_undamaged_partition_as_it_is(outcomes: dict[str, Outcome]) -> None:
    o = outcomes["control"]
    assert o.exit_code == 0, o.report
    damaged = o.repaired.parent.parent / "damaged" / o.repaired.name
    assert _logs(o.repaired) == _logs(damaged)
    assert _epochs(o.repaired) == _epochs(damaged)
