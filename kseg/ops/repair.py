"""The ``repair`` operation: the broker's recovery after an unclean shutdown, offline.

``LogSegment.recover`` walks a segment batch by batch, checks each one as
``RecordBatch.ensureValid`` does (framing, size, the batch CRC), and truncates
the file at the first batch that fails; the indexes are rebuilt per batch, and
the ``.txnindex`` from the ABORT markers kept. ``LogLoader`` then deletes every
segment after the first one that was truncated. This module does the same into a
new output (the input is never written) and returns what was kept and cut, as
data; nothing here prints.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from kseg.companions.build import TxnEntry, build_indexes, build_txn_index
from kseg.companions.read import read_leader_epoch_checkpoint
from kseg.companions.producer_state import LeaderEpochs, TxnState, leader_epoch_checkpoint
from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import InputError, KsegError, OffsetsGoBackError, TruncatedError
from kseg.facts.record_batch_v2 import LAST_OFFSET_DELTA_POSITION, RECORD_BATCH_OVERHEAD, RECORD_COUNT_POSITION
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.log import identity
from kseg.log.atomic import TMP_SUFFIX, AtomicDir, AtomicFile, check_output, write_atomic
from kseg.log.checks import STOP
from kseg.log.records import batch_records
from kseg.log.listing import (
    INDEX_SUFFIX,
    LEADER_EPOCH_FILE,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    TIME_INDEX_SUFFIX,
    TRANSIENT_SUFFIXES,
    TXN_INDEX_SUFFIX,
)
from kseg.log.segment import (
    Segment,
    base_offset_of,
    companion_path,
    log_dir_partitions,
    partition_of,
    partition_segments,
    segment_file_name,
)
from kseg.model import Batch
from kseg.ops.logdir import (
    DamagedFiles,
    PartitionEnds,
    carry_file,
    carry_root_files,
    checked_copy,
    checkpointed_ends,
    finish_log_dir,
)
from kseg.storage import as_path, copy_times

COPY_CHUNK = 8 << 20
# Reasons, as the report names them.
CRC = "crc"
PARTIAL = "partial"
ZEROS = "zeros"
GARBAGE = "garbage"
OFFSETS = "offsets"
DELETED = "deleted"


@dataclass(frozen=True)
class RepairOptions:
    dry_run: bool = False
    force: bool = False
    index: bool = True
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    on_damage: str = STOP  # a file carried over beside the segments that fails its checks (``DamagedFiles``)


@dataclass
class Cut:
    """What recovery removes from one segment: everything from ``position`` on."""

    reason: str  # crc | partial | zeros | garbage | offsets | deleted
    position: int
    message: str
    bytes_lost: int
    batches_lost: int = 0  # whole batches framed after the cut (the bad one included)
    records_lost: int = 0  # records in them (a partial batch's count when its header is readable)
    first_offset_lost: int | None = None
    last_offset_lost: int | None = None
    exact: bool = True  # False when part of the lost bytes could not be read as batches

    def lose(self, b: Batch, limit: int) -> None:
        """Count a whole batch past the cut (``limit``: the decompressed bytes a count may read)."""
        self.batches_lost += 1
        self.records_lost += record_count(b, limit)
        if self.first_offset_lost is None:
            self.first_offset_lost = b.offset
        self.last_offset_lost = b.last_offset

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SegmentRepair:
    file: str
    output: str | None
    size: int
    kept_bytes: int = 0
    kept_batches: int = 0
    kept_records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    aborted_txns: int = 0
    cut: Cut | None = None

    @property
    def action(self) -> str:
        if self.cut is None:
            return "kept"
        return DELETED if self.cut.reason == DELETED else "truncated"

    def as_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k != "cut"}
        d["action"] = self.action
        d["cut"] = self.cut.as_json() if self.cut else None
        return d


@dataclass
class PartitionRepair:
    path: str
    topic: str | None
    partition: int | None
    segments: list[SegmentRepair] = field(default_factory=list)
    log_end_offset: int | None = None  # after recovery
    epochs_dropped: list[tuple[int, int]] = field(default_factory=list)  # leader-epoch-checkpoint entries removed
    # entries recovery assigns from the batches kept that the checkpoint lacked (or the checkpoint missing)
    epochs_added: list[tuple[int, int]] = field(default_factory=list)
    # a leader-epoch-checkpoint the input lacks, as recovery writes it (not a problem of the data)
    epochs_created: list[tuple[int, int]] = field(default_factory=list)
    snapshots_dropped: list[str] = field(default_factory=list)
    # producer snapshots the broker cannot read (file, problem): it deletes such a snapshot when it
    # loads one and rebuilds producer state from the log, and so does the repair
    snapshots_corrupt: list[tuple[str, str]] = field(default_factory=list)
    # a leader-epoch-checkpoint the broker cannot read (its problem): the broker takes the log
    # directory offline; the repair writes it anew from the batches kept, as recovery assigns them
    epochs_rebuilt: str | None = None
    epochs: list[tuple[int, int]] = field(default_factory=list)  # its entries when rebuilt
    damaged_files: DamagedFiles = field(default_factory=DamagedFiles)  # other files carried over

    @property
    def cuts(self) -> list[SegmentRepair]:
        return [s for s in self.segments if s.cut is not None]

    @property
    def ends(self) -> PartitionEnds | None:
        """Where its log starts and ends after recovery, for the log directory's checkpoints."""
        kept = [s for s in self.segments if s.action != DELETED]
        return PartitionEnds.kept(kept[0].file if kept else None, self.log_end_offset)

    @property
    def mended(self) -> bool:
        """Something was cut, dropped, rebuilt, added or left out because it failed its checks."""
        return bool(self.cuts or self.snapshots_corrupt or self.epochs_rebuilt or self.epochs_added
                    or self.damaged_files)

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "topic": self.topic, "partition": self.partition,
                "log_end_offset": self.log_end_offset, "segments": [s.as_json() for s in self.segments],
                "epochs_dropped": [list(e) for e in self.epochs_dropped],
                "epochs_added": [list(e) for e in self.epochs_added],
                "epochs_created": [list(e) for e in self.epochs_created], "snapshots_dropped": self.snapshots_dropped,
                "snapshots_corrupt": [{"file": f, "problem": why} for f, why in self.snapshots_corrupt],
                "epochs_rebuilt": None if self.epochs_rebuilt is None else {
                    "problem": self.epochs_rebuilt, "entries": [list(e) for e in self.epochs]},
                "damaged_files": self.damaged_files.as_json()}


@dataclass
class RepairReport:
    input: str
    output: str | None
    dry_run: bool
    partitions: list[PartitionRepair] = field(default_factory=list)
    damaged_files: DamagedFiles = field(default_factory=DamagedFiles)  # a log directory's own, carried over

    @property
    def ok(self) -> bool:
        """True when nothing had to be cut, dropped or rebuilt."""
        return not any(p.mended for p in self.partitions) and not self.damaged_files

    def as_json(self) -> dict[str, Any]:
        segs = [s for p in self.partitions for s in p.segments]
        return {
            "input": self.input, "output": self.output, "dry_run": self.dry_run, "ok": self.ok,
            "segments_truncated": sum(1 for s in segs if s.action == "truncated"),
            "segments_deleted": sum(1 for s in segs if s.action == DELETED),
            "bytes_lost": sum(s.cut.bytes_lost for s in segs if s.cut),
            "records_lost": sum(s.cut.records_lost for s in segs if s.cut),
            "partitions": [p.as_json() for p in self.partitions], "damaged_files": self.damaged_files.as_json(),
        }


# --------------------------------------------------------------------------- one segment


def record_count(b: Batch, limit: int) -> int:
    """Records in a batch: from the header (v2), 1 for a plain legacy message, a wrapper's
    inner messages when they decompress (else 1)."""
    if b.magic >= 2:
        return max(b.record_count or 0, 0)
    if not b.is_compressed:
        return 1
    try:
        return len(batch_records(b, limit=limit))
    except KsegError:
        return 1


def _is_zeros(path: Path, start: int) -> bool:
    with as_path(path).open("rb") as f:
        f.seek(start)
        while True:
            chunk = f.read(COPY_CHUNK)
            if not chunk:
                return True
            if chunk.count(0) != len(chunk):
                return False


def _partial_header(path: Path, position: int, length: int) -> tuple[int | None, int | None, int | None]:
    """(base offset, last offset, record count) of a partial entry, as far as its bytes go."""
    with as_path(path).open("rb") as f:
        f.seek(position)
        head = f.read(min(length, RECORD_BATCH_OVERHEAD))
    if len(head) < 17:
        return None, None, None
    offset, _, _, magic = LOG_ENTRY_PREFIX.struct.unpack_from(head, 0)
    if magic >= 2 and len(head) >= RECORD_BATCH_OVERHEAD:
        lod = int.from_bytes(head[LAST_OFFSET_DELTA_POSITION:LAST_OFFSET_DELTA_POSITION + 4], "big", signed=True)
        count = int.from_bytes(head[RECORD_COUNT_POSITION:RECORD_COUNT_POSITION + 4], "big", signed=True)
        return offset, offset + lod, max(count, 0)
    return offset, offset if magic < 2 else None, 1 if magic < 2 else None


def scan_segment(path: Path, txn: TxnState, limit: int, kept: list[Batch], txns: list[TxnEntry]
                 ) -> SegmentRepair:
    """Walk one segment as recovery does: ``kept`` gets the valid batches (without their
    bytes), ``txns`` the aborted transactions whose markers are kept; the result says where
    and why the rest was cut."""
    seg = Segment(path)
    rep = SegmentRepair(str(path), None, seg.size)
    cut: Cut | None = None
    for b in seg.batches():
        if cut is None:
            if b.computed_crc() != b.crc:
                cut = Cut(CRC, b.position, f"batch crc mismatch: computed {b.computed_crc():#010x}, "
                          f"stored {b.crc:#010x}", rep.size - b.position)
            else:
                rep.kept_batches += 1
                rep.kept_bytes = b.position + b.size
                rep.kept_records += record_count(b, limit)
                if rep.first_offset is None:
                    rep.first_offset = b.offset
                rep.last_offset = b.last_offset
                kept.append(b._replace(raw=memoryview(b"")))
                entry = txn.on_batch(b, limit)
                if entry is not None:
                    txns.append(entry)
                    rep.aborted_txns += 1
                continue
        # Past the cut: count what is lost.
        cut.lose(b, limit)
    tail = seg.tail
    if tail is not None:
        if cut is None:
            if _is_zeros(path, tail.position):
                reason, message = ZEROS, f"{tail.length} zero bytes (preallocated space never written)"
            elif isinstance(tail.error, TruncatedError):
                reason, message = PARTIAL, f"partial batch: {tail.error.message}"
            else:
                reason, message = GARBAGE, f"not a batch: {tail.error.message}"
            cut = Cut(reason, tail.position, message, rep.size - tail.position)
        if not _is_zeros(path, tail.position):
            first, last, count = _partial_header(path, tail.position, tail.length)
            if isinstance(tail.error, TruncatedError) and first is not None:
                cut.batches_lost += 1
                cut.records_lost += count or 0
                if cut.first_offset_lost is None:
                    cut.first_offset_lost = first
                if last is not None:
                    cut.last_offset_lost = last
                cut.exact = count is not None
            else:
                cut.exact = False
    rep.cut = cut
    return rep


def deleted_segment(path: Path, limit: int) -> SegmentRepair:
    """A segment after the first cut: the broker deletes it whole."""
    seg = Segment(path)
    rep = SegmentRepair(str(path), None, seg.size)
    cut = Cut(DELETED, 0, "after a truncated segment: deleted, as the broker's recovery does", rep.size)
    for b in seg.batches():
        cut.lose(b, limit)
    if seg.tail is not None:
        cut.exact = False
    rep.cut = cut
    return rep


def emptied_segment(path: Path, rep: SegmentRepair, why: OffsetsGoBackError, limit: int, kept: list[Batch],
                    txns: list[TxnEntry]) -> None:
    """A segment whose batches' offsets go back where its indexes need them to grow: Kafka's
    recovery (``LogLoader.recoverLog`` on ``InvalidOffsetException``) truncates it to its base
    offset, at the first batch whose last offset reaches it (in practice its first byte), and
    deletes every later segment. ``rep``, ``kept`` and ``txns`` become what is left. Where no
    batch reaches the base offset the tool keeps the file as it is with empty indexes; kseg
    cuts it whole instead, writing no bytes that failed a check."""
    message = (f"{why.message} ({why.expected} expected, {why.found} found): no index can be built; "
               "recovery empties the segment")
    base = base_offset_of(path) or 0
    whole = Cut(OFFSETS, 0, message, rep.size)  # the cut where no batch reaches the base offset
    cut: Cut | None = None
    for b in Segment(path).batches():
        if cut is None and b.last_offset >= base:
            cut = Cut(OFFSETS, b.position, message, rep.size - b.position)
        (cut or whole).lose(b, limit)
    cut = cut or whole
    at = cut.position
    kept[:] = [b for b in kept if b.position < at]
    lost_from = kept[-1].last_offset + 1 if kept else None
    txns[:] = [t for t in txns if lost_from is not None and t.last_offset < lost_from]
    cut.exact = rep.cut is None or rep.cut.exact
    rep.cut = cut
    rep.kept_bytes = at
    rep.kept_batches = len(kept)
    rep.kept_records = sum(record_count(b, limit) for b in kept)
    rep.first_offset = kept[0].offset if kept else None
    rep.last_offset = kept[-1].last_offset if kept else None
    rep.aborted_txns = len(txns)


# --------------------------------------------------------------------------- partitions and outputs


def _copy_prefix(src: Path, dst: Path, length: int) -> None:
    with as_path(src).open("rb") as f, AtomicFile(dst) as out:
        left = length
        while left:
            chunk = f.read(min(COPY_CHUNK, left))
            if not chunk:
                raise InputError("file shrank while it was read", file=str(src))
            out.write(chunk)
            left -= len(chunk)
        identity.require_unchanged([src])  # the prefix kept is the file's as it still is
    copy_times(src, dst)


def repair_partition(segs: list[Path], out_dir: Path | None, o: RepairOptions, *,
                     folder: Path | None = None) -> PartitionRepair:
    """Recover one partition's segments (in offset order) into ``out_dir`` (None: dry run)."""
    parsed = partition_of(folder) if folder is not None else None
    pr = PartitionRepair(str(folder if folder is not None else segs[0]), parsed[0] if parsed else None,
                         parsed[1] if parsed else None, damaged_files=DamagedFiles(o.on_damage))
    txn = TxnState()
    # The leader-epoch cache as the broker loads it (empty when the checkpoint is missing, or unreadable:
    # then the broker takes the log directory offline, and kseg writes it anew), then as recovery
    # assigns each kept batch's epoch (LogSegment.recover).
    loaded, problem = _leader_epochs(folder / LEADER_EPOCH_FILE) if folder is not None and (
        folder / LEADER_EPOCH_FILE).is_file() else (None, None)
    epochs = LeaderEpochs(loaded)
    cut_seen = False
    for path in segs:
        if cut_seen:
            pr.segments.append(deleted_segment(path, o.max_decompressed_bytes))
            continue
        kept: list[Batch] = []
        txns: list[TxnEntry] = []
        rep = scan_segment(path, txn, o.max_decompressed_bytes, kept, txns)
        base = base_offset_of(path)
        try:  # the indexes recovery builds as it reads (LogSegment.recover)
            indexes = build_indexes(kept, base, o.index_interval_bytes) if base is not None else None
        except OffsetsGoBackError as e:
            emptied_segment(path, rep, e, o.max_decompressed_bytes, kept, txns)
            indexes = build_indexes(kept, base, o.index_interval_bytes) if base is not None else None
        for b in kept:
            epochs.on_recovered_batch(b)
        pr.segments.append(rep)
        if rep.last_offset is not None:
            pr.log_end_offset = rep.last_offset + 1
        elif pr.log_end_offset is None:
            pr.log_end_offset = base_offset_of(path)
        if rep.cut is not None:
            cut_seen = True
        if out_dir is None:
            continue
        name = segment_file_name(base) if base is not None else path.name
        dst = out_dir / name if out_dir.suffix != LOG_SUFFIX else out_dir
        rep.output = str(dst)
        _copy_prefix(path, dst, rep.kept_bytes)
        if o.index and indexes is not None:
            index, timeindex = indexes
            write_atomic(companion_path(dst, INDEX_SUFFIX), index)
            write_atomic(companion_path(dst, TIME_INDEX_SUFFIX), timeindex)
            if txns:
                write_atomic(companion_path(dst, TXN_INDEX_SUFFIX), build_txn_index(txns))
    if folder is not None:
        _partition_files(folder, out_dir, pr, loaded, problem, epochs)
    return pr


def _partition_files(folder: Path, out_dir: Path | None, pr: PartitionRepair, loaded: list[tuple[int, int]] | None,
                     problem: str | None, epochs: LeaderEpochs) -> None:
    """leader-epoch-checkpoint: the cache as recovery leaves it (``epochs``: the ``loaded`` entries,
    then the kept batches' epochs), truncated at the new log end (LeaderEpochFileCache.truncateFromEnd),
    written anew when the broker cannot read it (``problem``) and written when missing if recovery
    assigns an epoch; producer snapshots past the new end or unreadable dropped; the other files
    carried over."""
    leo = pr.log_end_offset
    lec = folder / LEADER_EPOCH_FILE
    keep = [e for e in epochs.entries if leo is None or e[1] < leo]
    if problem is not None:
        pr.epochs_rebuilt, pr.epochs = problem, keep
    elif loaded is None:  # none given (a copy of the segments alone): the broker creates it, so does kseg
        pr.epochs_created = keep
    else:
        pr.epochs_dropped = [e for e in loaded if e not in keep]
        pr.epochs_added = [e for e in keep if e not in loaded]
    if out_dir is not None and (lec.is_file() or keep):
        write_atomic(out_dir / lec.name, leader_epoch_checkpoint(keep))
    for snap in sorted(folder.glob("*.snapshot")):
        at = base_offset_of(snap)
        if leo is not None and at is not None and at > leo:
            pr.snapshots_dropped.append(str(snap))
            continue
        problem = _snapshot_problem(snap, out_dir)
        if problem is not None:
            pr.snapshots_corrupt.append((str(snap), problem))
    carry_other_files(folder, out_dir, pr.damaged_files)


def carry_other_files(folder: Path, out_dir: Path | None, damaged: DamagedFiles) -> None:
    """What else a partition folder holds (partition.metadata, KRaft quorum-state and snapshot
    .checkpoint files ...), carried over once it passes its checks, else as ``damaged`` says
    (a dry run checks them as the run would); old segments' leftovers are not carried."""
    with tempfile.TemporaryDirectory(prefix="kseg-carried-") as tmp:
        for other in sorted(folder.iterdir()):
            if (other.is_file() and other.suffix not in SEGMENT_SUFFIXES + TRANSIENT_SUFFIXES
                    and other.name != LEADER_EPOCH_FILE and not other.name.endswith(TMP_SUFFIX)):
                carry_file(other, (out_dir or Path(tmp)) / other.name, damaged)


def _leader_epochs(path: Any) -> tuple[list[tuple[int, int]] | None, str | None]:
    """A leader-epoch-checkpoint's entries, or None and why the broker cannot read it (the
    first of verify's errors)."""
    with tempfile.TemporaryDirectory(prefix="kseg-checkpoint-") as tmp:
        copy = Path(tmp) / path.name
        e = checked_copy(path, copy)
        if e is not None:
            return None, e.line(under=e.file)
        return [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(copy).entries], None


def _snapshot_problem(snap: Any, out_dir: Path | None) -> str | None:
    """What makes a producer snapshot unreadable to the broker (None: nothing), checked as
    ``kseg verify`` checks it; copied into ``out_dir`` when it is readable."""
    with tempfile.TemporaryDirectory(prefix="kseg-snapshot-") as tmp:
        copy = (out_dir or Path(tmp)) / snap.name
        e = checked_copy(snap, copy)
        if e is None:
            return None
        copy.unlink(missing_ok=True)
        return e.line(under=e.file)


def repair(input_path: Path, output: Path | None, o: RepairOptions) -> RepairReport:
    """Repair a .log file, a partition folder or a log directory into ``output`` (a file or
    folder of the same shape); with ``o.dry_run`` only report. An input that changes during
    the run (a live broker, retention) publishes nothing: the cut would describe a file that
    no longer is (``kseg.log.identity``)."""
    with identity.watching(as_path(input_path)):  # a segment listed, then renamed or deleted by retention
        return _repair(input_path, output, o)


def _repair(input_path: Path, output: Path | None, o: RepairOptions) -> RepairReport:
    src = as_path(input_path)
    if not src.exists():
        raise InputError("no such file or directory", file=str(src))
    if output is None and not o.dry_run:
        raise InputError("give -o/--output, or --dry-run")
    report = RepairReport(str(src), None if o.dry_run else str(output), o.dry_run, damaged_files=DamagedFiles(o.on_damage))
    if not o.dry_run:
        assert output is not None
        check_output([src], output, force=o.force)
    if src.is_file():
        if o.dry_run:
            report.partitions.append(repair_partition([src], None, o))
            return report
        assert output is not None
        dst = output if output.suffix == LOG_SUFFIX else output / src.name
        created = output.suffix != LOG_SUFFIX and not output.exists()
        if output.suffix != LOG_SUFFIX:
            output.mkdir(parents=True, exist_ok=True)
        try:
            report.partitions.append(repair_partition([src], dst, o))
        except BaseException:
            if created:  # the folder made for this file goes with it: nothing half-made is left
                shutil.rmtree(output, ignore_errors=True)
            raise
        return report
    groups = _groups(src)
    if o.dry_run:
        for folder, segs in groups:
            report.partitions.append(repair_partition(segs, None, o, folder=folder))
        if any(folder != src for folder, _ in groups):  # a log directory: its own files checked as the run would
            carry_root_files(src, None, report.damaged_files)
        return report
    assert output is not None
    with AtomicDir(output) as root:
        named: list[tuple[Path, PartitionEnds | None]] = []
        for folder, segs in groups:
            dst = root.tmp if folder == src else root.tmp / folder.name
            dst.mkdir(parents=True, exist_ok=True)
            pr = repair_partition(segs, dst, o, folder=folder)
            for s in pr.segments:
                if s.output:
                    s.output = str(output / Path(s.output).relative_to(root.tmp))
            report.partitions.append(pr)
            if folder != src:
                named.append((dst, pr.ends))
        if named:  # a log directory: its checkpoints at the recovered ends, its own files carried over
            finish_log_dir(src, root.tmp, "repair", checkpointed_ends(named), report.damaged_files)
        identity.require_unchanged()  # every segment as it still is: else nothing is published
    return report


def _groups(src: Path) -> list[tuple[Path, list[Path]]]:
    segs = partition_segments(src)
    if segs:
        return [(src, segs)]
    parts = log_dir_partitions(src)
    if not parts:
        raise InputError("no segment files found (expected .log files or <topic>-<n> folders)", file=str(src))
    return [(p.path, p.segment_paths) for p in parts]


def iter_cuts(report: RepairReport) -> Iterator[SegmentRepair]:
    for p in report.partitions:
        yield from p.cuts
