"""``kseg txn``: every transaction of a partition, from its batches, markers, .txnindex and snapshots.

A transaction on a partition starts with its producer's first transactional
batch after the previous marker and ends with a COMMIT or ABORT marker. What
is still open at the end holds back the last stable offset (LSO): consumers
reading committed data stop there. One open longer than the transaction
timeout is *hanging* — its producer is gone and no coordinator will end it —
and ``kafka-transactions.sh abort`` is what ends it.

Contradictions are problems: a COMMIT marker with no data before it, a
producer epoch going down, a ``.txnindex`` that does not list exactly the
aborted transactions whose markers are in its segment, a producer snapshot
written at the log end that disagrees about what is open. An ABORT marker
with no data is only a note: a producer may add a partition to a transaction
and abort before writing to it.

Where offsets are missing since the producer's previous marker (the log cleaner
removed batches, or the log starts past offset 0: retention deleted segments),
a transaction's data may be gone while its marker stays: a marker with no data
is then a note, and a ``.txnindex`` entry (which the cleaner carries over) may
start before the data the log still shows, or list an ABORT whose data is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kseg.companions.read import read_producer_snapshot, read_txn_index
from kseg.errors import InputError, KsegError, expected_found
from kseg.findings import ERROR, NOTE
from kseg.formats.attributes import CONTROL_ABORT, CONTROL_COMMIT
from kseg.log.checks import header_errors
from kseg.log.control import control_info
from kseg.log.records import batch_records
from kseg.log.listing import FILE, INDEX_SUFFIX, RUN, TXN_INDEX_SUFFIX, list_inputs
from kseg.log.segment import Segment, base_offset_of, companion_path, partition_of
from kseg.log.tails import live_tail
from kseg.model import Batch
from kseg.ops.executors import Operation, execute, here_only, weight_of
from kseg.ops.state import replay
from kseg.log import identity
from kseg.storage import VANISHED, ReadError, gone

__all__ = ["DEFAULT_MAX_TIMEOUT_MS", "PartitionTransactions", "Transaction", "TxnOptions", "TxnReport",
           "explain_transactions"]

DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms


@dataclass
class Transaction:
    producer_id: int
    producer_epoch: int
    first_offset: int
    last_offset: int  # the last data offset; the marker's offset once ended
    start_ms: int
    records: int = 0
    batches: int = 0
    state: str = "open"  # open, committed, aborted
    end_ms: int | None = None
    marker_offset: int | None = None
    coordinator_epoch: int | None = None
    transactional_id: str | None = None

    @property
    def duration_ms(self) -> int | None:
        return None if self.end_ms is None else self.end_ms - self.start_ms

    def as_json(self) -> dict[str, Any]:
        return {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "transactional_id": self.transactional_id, "state": self.state,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "marker_offset": self.marker_offset, "records": self.records, "batches": self.batches,
                "start_ms": self.start_ms, "end_ms": self.end_ms, "duration_ms": self.duration_ms,
                "coordinator_epoch": self.coordinator_epoch}


@dataclass
class TxnFinding:
    severity: str
    file: str
    offset: int | None
    message: str

    def __str__(self) -> str:
        where = f" at offset {self.offset}" if self.offset is not None else ""
        return f"{self.file}{where}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "file": self.file, "offset": self.offset, "message": self.message}


@dataclass
class PartitionTransactions:
    path: str
    topic: str | None
    partition: int | None
    transactions: list[Transaction] = field(default_factory=list)
    log_end_offset: int = 0
    findings: list[TxnFinding] = field(default_factory=list)
    hanging: list[Transaction] = field(default_factory=list)

    @property
    def open(self) -> list[Transaction]:
        return [t for t in self.transactions if t.state == "open"]

    @property
    def last_stable_offset(self) -> int:
        return min((t.first_offset for t in self.open), default=self.log_end_offset)

    def abort_command(self, t: Transaction) -> str:
        return (f"kafka-transactions.sh --bootstrap-server <broker:port> abort --topic {self.topic} "
                f"--partition {self.partition} --start-offset {t.first_offset}")

    def as_json(self) -> dict[str, Any]:
        count = {s: sum(1 for t in self.transactions if t.state == s) for s in ("committed", "aborted", "open")}
        return {"path": self.path, "topic": self.topic, "partition": self.partition,
                "log_end_offset": self.log_end_offset, "last_stable_offset": self.last_stable_offset,
                **count, "transactions": [t.as_json() for t in self.transactions],
                "hanging": [{**t.as_json(), "abort_command": self.abort_command(t)} for t in self.hanging],
                "problems": [f.as_json() for f in self.findings]}


@dataclass
class TxnReport:
    now_ms: int
    max_timeout_ms: int
    partitions: list[PartitionTransactions] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.hanging or any(f.severity == ERROR for f in p.findings) for p in self.partitions)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "now_ms": self.now_ms, "max_timeout_ms": self.max_timeout_ms,
                "partitions": [p.as_json() for p in self.partitions]}


@dataclass(frozen=True)
class TxnOptions:
    now_ms: int
    max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS
    all_partitions: bool = False


def explain_transactions(paths: list[Path], *, now_ms: int, max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                         all_partitions: bool = False, jobs: int = 1) -> TxnReport:
    """Every transaction of every partition under ``paths`` (with ``__transaction_state``
    among them, transactional ids are named). ``jobs`` > 1: partitions read by worker
    processes (``kseg.ops.executors``), the same report."""
    return execute(OPERATION, paths, TxnOptions(now_ms, max_timeout_ms, all_partitions), jobs)


# --------------------------------------------------------------------------- plan / run / merge
#
# Units are partitions (a file read on its own is one too): a transaction never crosses them.
# Plan names the producers (``__transaction_state``, read once); merge finds the hanging
# transactions by the clock and keeps the partitions the report shows, in plan order.


@dataclass(frozen=True)
class TxnUnit:
    folder: Path
    logs: tuple[Path, ...]
    name: str
    live: bool  # the newest segment may still be being written (a partition folder's)
    ids: dict[int, str]  # producer id -> transactional id
    weight: int = 0
    local: bool = False


def plan(paths: list[Path], o: TxnOptions) -> list[TxnUnit]:
    """The partitions by the one listing rule (``kseg.log.listing``): a partition's run; files
    named on the command line by their folder; a file a folder holds that is not named by
    offset on its own. A file named on the command line is taken as it is (not live), as
    verify takes it."""
    ids = _transactional_ids(paths)
    groups: dict[Path, tuple[Path, list[Path], bool]] = {}
    for listing in list_inputs(paths):
        for g in listing.reading:
            if g.kind == RUN and g.folder is not None:
                groups.setdefault(g.folder, (g.folder, [], g.newest is not None))[1].extend(g.files)
            elif listing.shape == FILE:
                groups.setdefault(g.files[0].parent, (g.files[0].parent, [], False))[1].extend(g.files)
            else:
                groups[g.files[0]] = (g.files[0].parent, list(g.files), False)
    return [TxnUnit(folder, tuple(logs), str(key), live, ids, weight_of(logs), any(here_only(f) for f in logs))
            for key, (folder, logs, live) in sorted(groups.items(), key=lambda kv: str(kv[0]))]


def run(unit: TxnUnit, o: TxnOptions) -> PartitionTransactions:
    """One partition's transactions and findings."""
    return _partition(unit.folder, list(unit.logs), unit.ids, name=unit.name, live=unit.live)


def merge(partials: Iterable[PartitionTransactions], o: TxnOptions) -> TxnReport:
    """The report: each partition's hanging transactions, the partitions worth showing."""
    report = TxnReport(o.now_ms, o.max_timeout_ms)
    for pt in partials:
        pt.hanging = [t for t in pt.open if o.now_ms - t.start_ms > o.max_timeout_ms]
        if o.all_partitions or pt.transactions or pt.findings:
            report.partitions.append(pt)
    return report


OPERATION = Operation("txn", plan, run, merge)


def _transactional_ids(paths: list[Path]) -> dict[int, str]:
    """producer id -> transactional id, from any ``__transaction_state`` partition given."""
    try:
        state = replay(paths)
    except ReadError:
        raise  # unreadable input: exit 2, as everywhere
    except InputError:
        return {}
    out: dict[int, str] = {}
    for p in state.partitions:
        for tid, value in p.state.get("transactional_ids", {}).items():
            if isinstance(value.get("producerId"), int):
                out[value["producerId"]] = tid
    return out


def _partition(folder: Path, logs: list[Path], ids: dict[int, str], name: str,
               live: bool = True) -> PartitionTransactions:
    """``live``: the newest segment may still be being written (a partial batch at its end is not
    a problem)."""
    parsed = partition_of(folder)
    pt = PartitionTransactions(name, *(parsed if parsed else (None, None)))
    open_txns: dict[int, Transaction] = {}
    epochs: dict[int, int] = {}
    gap: int | None = None  # the offset after the latest run of missing offsets (cleaned, or before the log)
    markers: dict[int, int] = {}  # producer id -> the offset of its latest marker
    for log in logs:
        aborted_here: list[Aborted] = []
        seg = Segment(log)
        try:
            for batch in seg.batches():
                damage = header_errors(batch, str(log))
                if damage:  # its producer, epoch and flags cannot be trusted
                    pt.findings.append(TxnFinding(ERROR, str(log), batch.offset,
                                                  f"damaged batch at byte {batch.position}, not read: "
                                                  f"{damage[0].message}{expected_found(damage[0].expected, damage[0].found)}"))
                    continue
                if batch.magic >= 2 and batch.offset > pt.log_end_offset:  # offsets missing before it (from 0)
                    gap = batch.offset
                pt.log_end_offset = batch.next_offset
                if batch.producer_id is None or batch.producer_id < 0:
                    continue
                _epoch(pt, log, batch, epochs)
                if batch.is_control:
                    pid = batch.producer_id
                    removed = gap is not None and gap > markers.get(pid, -1)
                    _marker(pt, log, batch, open_txns, aborted_here, removed)
                    markers[pid] = batch.offset
                elif batch.is_transactional:
                    _data(batch, open_txns, pt, ids)
        except InputError:
            if not gone(log):
                raise  # unreadable (a damaged member, a store failing): one error line, exit 2
            pt.findings.append(TxnFinding(NOTE, str(log), None, VANISHED))  # deleted by retention
            continue
        except KsegError as e:
            pt.findings.append(TxnFinding(ERROR, str(log), None, f"cannot be read to the end: {e}"))
        for note in seg.notes():  # renamed by retention, grown or changed during the run
            pt.findings.append(TxnFinding(NOTE, str(log), None, note))
        benign = live_tail(log, seg.tail, live and log == logs[-1]) if seg.tail is not None else None
        if benign is not None:
            pt.findings.append(TxnFinding(NOTE, str(log), None, f"at byte {seg.tail.position}: {benign.text}"))
        elif seg.tail is not None:
            pt.findings.append(TxnFinding(ERROR, str(log), None, f"cannot be read to the end: {seg.tail.length} "
                                          f"bytes from byte {seg.tail.position} do not form a batch "
                                          f"({seg.tail.error.message})"))
        _check_txn_index(pt, log, aborted_here)
    _check_snapshot(pt, folder, open_txns)
    return pt


def _epoch(pt: PartitionTransactions, log: Path, batch: Batch, epochs: dict[int, int]) -> None:
    pid, epoch = batch.producer_id, batch.producer_epoch
    assert pid is not None and epoch is not None
    was = epochs.get(pid)
    if was is not None and epoch < was:
        pt.findings.append(TxnFinding(ERROR, str(log), batch.offset,
                                      f"producer {pid}'s epoch goes down from {was} to {epoch}"))
    epochs[pid] = max(epoch, was if was is not None else epoch)


def _data(batch: Batch, open_txns: dict[int, Transaction], pt: PartitionTransactions, ids: dict[int, str]) -> None:
    pid = batch.producer_id
    assert pid is not None and batch.producer_epoch is not None
    t = open_txns.get(pid)
    if t is None:
        start = batch.base_timestamp if batch.base_timestamp is not None else batch.timestamp
        t = Transaction(pid, batch.producer_epoch, batch.offset, batch.last_offset, start,
                        transactional_id=ids.get(pid))
        open_txns[pid] = t
        pt.transactions.append(t)
    t.last_offset = batch.last_offset
    t.records += batch.record_count or 0
    t.batches += 1


@dataclass(frozen=True)
class Aborted:
    """An ABORT marker read in a segment, for its .txnindex check."""

    producer_id: int
    first_offset: int | None  # of the transaction's data the log shows (None: it shows none)
    marker_offset: int
    removed: bool  # offsets are missing since the producer's previous marker: data may be gone


def _marker(pt: PartitionTransactions, log: Path, batch: Batch, open_txns: dict[int, Transaction],
            aborted_here: list[Aborted], removed: bool) -> None:
    """``removed``: offsets are missing since the producer's previous marker (see the module
    comment), so the marker's data may have been removed."""
    pid = batch.producer_id
    assert pid is not None
    try:
        info = control_info(batch_records(batch)[0])
    except (KsegError, IndexError) as e:
        pt.findings.append(TxnFinding(ERROR, str(log), batch.offset, f"control batch not readable: {e}"))
        return
    if info.type_id not in (CONTROL_COMMIT, CONTROL_ABORT):
        return
    t = open_txns.pop(pid, None)
    kind = "COMMIT" if info.type_id == CONTROL_COMMIT else "ABORT"
    if t is None:
        severity = ERROR if info.type_id == CONTROL_COMMIT and not removed else NOTE
        why = (" in the log (offsets are missing before it: removed by the log cleaner, or before the log start)"
               if removed else "")
        pt.findings.append(TxnFinding(severity, str(log), batch.offset,
                                      f"{kind} marker of producer {pid} with no transactional data before it{why}"))
        # Kafka completes (and indexes) only transactions that wrote data: an empty ABORT is in no
        # .txnindex, unless its data was there when the broker indexed it
        if info.type_id == CONTROL_ABORT and removed:
            aborted_here.append(Aborted(pid, None, batch.offset, removed))
        return
    t.state = "committed" if info.type_id == CONTROL_COMMIT else "aborted"
    t.end_ms, t.marker_offset, t.coordinator_epoch = batch.timestamp, batch.offset, info.coordinator_epoch
    if info.type_id == CONTROL_ABORT:
        aborted_here.append(Aborted(pid, t.first_offset, batch.offset, removed))


def _check_txn_index(pt: PartitionTransactions, log: Path, aborted_here: list[Aborted]) -> None:
    path = identity.follow(companion_path(log, TXN_INDEX_SUFFIX))  # renamed with its segment: followed
    shown = [a for a in aborted_here if a.first_offset is not None]
    if not path.exists():
        if shown and companion_path(log, INDEX_SUFFIX).exists():
            pt.findings.append(TxnFinding(ERROR, str(path), None, f"missing: {len(shown)} aborted "
                                          "transaction(s) end in this segment"))
        elif shown:  # a segment without its indexes: the broker recovers it, writing both anew
            pt.findings.append(TxnFinding(NOTE, str(path), None, f"not there, nor the .index: {len(shown)} aborted "
                                          "transaction(s) end in this segment, which the broker indexes when it "
                                          "recovers it"))
        return
    try:
        listed = {(e.producer_id, e.first_offset, e.last_offset) for e in read_txn_index(path).entries}
    except InputError:
        if gone(path):  # deleted with its segment since it was looked for: nothing to compare
            return
        raise  # unreadable: exit 2
    except KsegError as e:
        pt.findings.append(TxnFinding(ERROR, str(path), None, f"not readable: {e}"))
        return
    expected = {(a.producer_id, a.first_offset, a.marker_offset) for a in shown}
    # where data before a marker may be gone, the broker's entry may start before what the log
    # shows (None: the log shows none of it)
    gone_before = {(a.producer_id, a.marker_offset): a.first_offset for a in aborted_here if a.removed}

    def explained(pid: int, first: int, last: int) -> bool:
        """A listed entry the log no longer shows as it is, because data before its marker is gone."""
        if (pid, last) not in gone_before:
            return False
        shows = gone_before[(pid, last)]
        return shows is None or first <= shows

    for pid, first, last in sorted(expected - listed):
        if not any((p, l) == (pid, last) and explained(p, f, l) for p, f, l in listed):
            pt.findings.append(TxnFinding(ERROR, str(path), last, f"does not list the aborted transaction of "
                                          f"producer {pid} (offsets {first}..{last})"))
    for pid, first, last in sorted(listed - expected):
        if not explained(pid, first, last):
            pt.findings.append(TxnFinding(ERROR, str(path), last, f"lists an aborted transaction of producer "
                                          f"{pid} (offsets {first}..{last}) that the log does not show"))


def _check_snapshot(pt: PartitionTransactions, folder: Path, open_txns: dict[int, Transaction]) -> None:
    """A snapshot taken at the log end (a clean shutdown) must agree about what is open."""
    snaps = sorted((base_offset_of(p), p) for p in folder.glob("*.snapshot") if base_offset_of(p) is not None)
    if not snaps or snaps[-1][0] != pt.log_end_offset:
        return
    path = snaps[-1][1]
    try:
        snap = read_producer_snapshot(path)
    except InputError:
        if gone(path):  # deleted with its segment since it was looked for: nothing to compare
            return
        raise  # unreadable: exit 2
    except KsegError as e:
        pt.findings.append(TxnFinding(ERROR, str(path), None, f"not readable: {e}"))
        return
    said = {e.producer_id: e.current_txn_first_offset for e in snap.entries if e.current_txn_first_offset >= 0}
    seen = {pid: t.first_offset for pid, t in open_txns.items()}
    for pid in sorted(set(said) | set(seen)):
        if said.get(pid) != seen.get(pid):
            pt.findings.append(TxnFinding(ERROR, str(path), None, f"producer {pid}: the snapshot says the open "
                                          f"transaction starts at {said.get(pid)}, the log at {seen.get(pid)}"))
