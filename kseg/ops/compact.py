"""Kafka's log cleaner, offline (spec §8): keep the latest record per key.

The rules are the broker's (``LogCleaner``, ``MemoryRecords.filterTo``):
records are never reordered and offsets never change; a batch whose records
are all kept and that needs no delete horizon is copied byte for byte; a
rebuilt batch keeps its codec, base offset, last offset delta, producer
fields, leader epoch and flags; tombstones and transaction markers go in two
steps (stamp a delete horizon, remove once it has passed); aborted
transactions are removed and never shadow committed values. Keys are held as
16-byte MD5 digests, as the broker's ``SkimpyOffsetMap`` does.

This module works on decoded batches and returns entry bytes; ``compact_job``
drives it over files.
"""

from __future__ import annotations

import hashlib
import heapq
import os
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterator

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.companions.build import TxnEntry, build_txn_index
from kseg.companions.read import read_txn_index
from kseg.defaults import (
    DEFAULT_DELETE_RETENTION_MS,
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_KEY_MAP_BYTES,
    DEFAULT_PRODUCER_EXPIRATION_MS,
)
from kseg.errors import InputError, KsegError
from kseg.formats.attributes import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CONTROL_MASK,
    LOG_APPEND_TIME,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kseg.log.atomic import AtomicDir, check_output, write_atomic
from kseg.log.control import control_info
from kseg.log.encode import assemble_v2, build_legacy_wrapper, build_v2_batch, header_of
from kseg.log.records import batch_records, codec_for
from kseg.log.segment import (
    base_offset_of,
    companion_path,
    log_dir_partitions,
    partition_segments,
    strict_batches,
)
from kseg.model import Batch, Record
from kseg.ops.jobs import SegmentSink, WriteOptions

MAP_SLOT_BYTES = 24  # MD5 (16) + offset (8), as SkimpyOffsetMap
MAP_LOAD_FACTOR = 0.9
MAX_PASSES = 4


@dataclass(frozen=True)
class CompactOptions:
    now_ms: int
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
    min_compaction_lag_ms: int = 0
    include_active: bool = False
    key_map_bytes: int = DEFAULT_KEY_MAP_BYTES
    producer_expiration_ms: int = DEFAULT_PRODUCER_EXPIRATION_MS
    first_dirty_offset: int | None = None  # the cleaner checkpoint; None: everything is dirty
    single_pass: bool = False
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES


@dataclass
class CompactStats:
    records_before: int = 0
    records_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    keys: int = 0
    tombstones_kept: int = 0
    tombstones_removed: int = 0
    keyless_removed: int = 0
    aborted_removed: int = 0
    markers_removed: int = 0
    horizons_set: int = 0
    batches_copied: int = 0
    batches_rebuilt: int = 0
    batches_emptied: int = 0
    batches_removed: int = 0
    segments_cleaned: int = 0
    segments_kept: int = 0
    passes: int = 0

    def add(self, other: "CompactStats") -> None:
        for f in fields(self):
            combine = max if f.name == "passes" else int.__add__
            setattr(self, f.name, combine(getattr(self, f.name), getattr(other, f.name)))

    def as_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def line(self) -> str:
        return (
            f"records {self.records_before} -> {self.records_after}, bytes {self.bytes_before} -> "
            f"{self.bytes_after}, {self.keys} keys; tombstones kept {self.tombstones_kept}, removed "
            f"{self.tombstones_removed}; keyless removed {self.keyless_removed}; aborted records removed "
            f"{self.aborted_removed}; markers removed {self.markers_removed}; delete horizons set "
            f"{self.horizons_set}; batches copied {self.batches_copied}, rebuilt {self.batches_rebuilt}, "
            f"emptied {self.batches_emptied}, removed {self.batches_removed}; segments cleaned "
            f"{self.segments_cleaned}, kept as they were {self.segments_kept}; passes (most) {self.passes}"
        )


# --------------------------------------------------------------------------- transactions


class TxnTracker:
    """The cleaner's view of transactions while it walks batches (Kafka's CleanedTransactionMetadata)."""

    def __init__(self, aborted: list[TxnEntry]):
        self._pending = [(t.first_offset, t.last_offset, t) for t in aborted]
        heapq.heapify(self._pending)
        self._ongoing_aborted: dict[int, list] = {}  # pid -> [txn, last observed batch offset or None]
        self._ongoing_committed: set[int] = set()
        self.cleaned_index: list[TxnEntry] = []

    def _consume_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            _, _, txn = heapq.heappop(self._pending)
            self._ongoing_aborted.setdefault(txn.producer_id, [txn, None])

    def on_control_batch(self, batch: Batch, control_type: int | None) -> bool:
        """True if this control batch may be discarded."""
        self._consume_up_to(batch.last_offset)
        if control_type is None:
            return True  # an empty control batch was already cleaned
        pid = batch.producer_id
        assert pid is not None  # control batches are v2
        if control_type == CONTROL_ABORT:
            meta = self._ongoing_aborted.pop(pid, None)
            if meta is not None and meta[1] is not None:
                self.cleaned_index.append(meta[0])  # keep the marker until its data is gone
                return False
            return True
        if control_type == CONTROL_COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, batch: Batch) -> bool:
        """True if this data batch belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        pid = batch.producer_id
        assert pid is not None  # transactional batches are v2
        meta = self._ongoing_aborted.get(pid)
        if meta is not None:
            meta[1] = batch.last_offset
            return True
        self._ongoing_committed.add(pid)
        return False


def _control_type(batch: Batch, limit: int) -> int | None:
    records = batch_records(batch, limit=limit)
    if not records:
        return None
    try:
        return control_info(records[0]).type_id
    except KsegError:
        return -1


# --------------------------------------------------------------------------- the partition's state


@dataclass
class ProducerState:
    last_data_offset: int | None = None
    epoch: int = -1
    last_timestamp: int = NO_TIMESTAMP
    open_txn_first: int | None = None


@dataclass
class PartitionState:
    """What one read of the partition learns before cleaning (the broker keeps it in memory)."""

    producers: dict[int, ProducerState] = field(default_factory=dict)
    aborted: dict[tuple[int, int], TxnEntry] = field(default_factory=dict)
    log_end_offset: int = 0
    segment_max_timestamps: list[int] = field(default_factory=list)

    def first_unstable_offset(self) -> int | None:
        opens = [p.open_txn_first for p in self.producers.values() if p.open_txn_first is not None]
        return min(opens) if opens else None


def _scan_partition(segs: list[Path], limit: int) -> PartitionState:
    st = PartitionState()
    for seg_path in segs:
        seg_max = NO_TIMESTAMP
        for b in strict_batches(seg_path):
            seg_max = max(seg_max, b.max_timestamp)
            st.log_end_offset = max(st.log_end_offset, b.next_offset)
            if b.magic < 2 or b.producer_id == NO_PRODUCER_ID:
                continue
            pid, epoch = b.producer_id, b.producer_epoch
            assert pid is not None and epoch is not None  # set on every v2 batch
            p = st.producers.setdefault(pid, ProducerState())
            p.epoch = epoch
            p.last_timestamp = max(p.last_timestamp, b.max_timestamp)
            if b.is_control:
                ctype = _control_type(b, limit)
                if ctype == CONTROL_ABORT:
                    first = p.open_txn_first if p.open_txn_first is not None else b.base_offset
                    others = [q.open_txn_first for other, q in st.producers.items()
                              if other != pid and q.open_txn_first is not None]
                    lso = min(others) if others else b.last_offset + 1
                    st.aborted[(pid, b.last_offset)] = TxnEntry(pid, first, b.last_offset, lso)
                if ctype in (CONTROL_ABORT, CONTROL_COMMIT):
                    p.open_txn_first = None
            else:
                p.last_data_offset = b.last_offset
                if b.is_transactional and p.open_txn_first is None:
                    p.open_txn_first = b.base_offset
        st.segment_max_timestamps.append(seg_max)
        txn_path = companion_path(seg_path, ".txnindex")
        if txn_path.exists():

            for e in read_txn_index(txn_path).entries:
                st.aborted[(e.producer_id, e.last_offset)] = TxnEntry(e.producer_id, e.first_offset, e.last_offset,
                                                                      e.last_stable_offset)
    return st


# --------------------------------------------------------------------------- one pass


@dataclass
class SegmentPlan:
    path: Path
    clean: bool
    legacy_deletes_retained: bool = True


class Cleaner:
    """One cleaning pass over a partition's segments."""

    def __init__(self, segs: list[Path], options: CompactOptions):
        self.segs = segs
        self.options = options
        self.state = _scan_partition(segs, options.limit)
        self.plans, self.upper = self._plan()
        self.key_map: dict[bytes, int] = {}
        self.winners: set[int] = set()
        self.start = options.first_dirty_offset or 0
        self.map_latest = -1
        self.markers_written = 0
        self.stats = CompactStats()

    def _plan(self) -> tuple[list[SegmentPlan], int]:
        options, st = self.options, self.state
        n = len(self.segs)
        cleanable = n if options.include_active else max(n - 1, 0)
        if options.min_compaction_lag_ms > 0:
            for i in range(cleanable):
                largest = st.segment_max_timestamps[i]
                if largest < 0:
                    largest = int(os.stat(self.segs[i]).st_mtime * 1000)
                if options.now_ms - largest < options.min_compaction_lag_ms:
                    cleanable = i
                    break
        upper = st.log_end_offset if cleanable == n else (base_offset_of(self.segs[cleanable]) or 0)
        unstable = st.first_unstable_offset()
        if unstable is not None and unstable < upper:
            upper = unstable  # the last stable offset bounds the cleanable range
            while cleanable > 0 and (base_offset_of(self.segs[cleanable - 1]) or 0) >= upper:
                cleanable -= 1
        legacy_horizon = 0
        if options.first_dirty_offset is not None:
            clean = [s for s in self.segs if (base_offset_of(s) or 0) < options.first_dirty_offset]
            if clean:
                legacy_horizon = int(os.stat(clean[-1]).st_mtime * 1000) - options.delete_retention_ms
        plans = [SegmentPlan(s, i < cleanable, int(os.stat(s).st_mtime * 1000) > legacy_horizon)
                 for i, s in enumerate(self.segs)]
        return plans, upper

    def _active_producers(self) -> dict[int, ProducerState]:
        options = self.options
        return {pid: p for pid, p in self.state.producers.items()
                if p.open_txn_first is not None or options.now_ms - p.last_timestamp < options.producer_expiration_ms}

    def build_key_map(self) -> None:
        """Latest offset per key digest over the cleanable range, skipping aborted data and markers."""
        start = self.options.first_dirty_offset or 0
        tracker = TxnTracker(list(self.state.aborted.values()))
        max_keys = int(self.options.key_map_bytes * MAP_LOAD_FACTOR / MAP_SLOT_BYTES)
        key_map = self.key_map
        md5 = hashlib.md5
        for plan in self.plans:
            if not plan.clean:
                break
            for b in strict_batches(plan.path):
                if b.base_offset >= self.upper:
                    break
                if b.is_control:
                    tracker.on_control_batch(b, _control_type(b, self.options.limit))
                    continue
                if tracker.on_batch(b):
                    continue
                for r in batch_records(b, limit=self.options.limit):
                    key = r[2]
                    if key is not None and r[0] >= start:
                        key_map[md5(key).digest()] = r[0]
                if len(key_map) > max_keys:
                    raise InputError(
                        f"the key map is full ({max_keys} keys in --key-map-bytes {self.options.key_map_bytes}) "
                        f"at offset {b.base_offset}: raise --key-map-bytes", file=str(plan.path), position=b.position)
        self.map_latest = self.upper - 1
        self.stats.keys = len(key_map)
        self.winners = set(key_map.values())

    def clean(self) -> Iterator[tuple[SegmentPlan, list[bytes], list[TxnEntry]]]:
        """Yield each segment's new entries and its aborted-transaction index."""
        tracker = TxnTracker(list(self.state.aborted.values()))
        active = self._active_producers()
        for plan in self.plans:
            out: list[bytes] = []
            if not plan.clean:
                self.stats.segments_kept += 1
                for b in strict_batches(plan.path):
                    if b.magic >= 2:
                        assert b.record_count is not None  # set on every v2 batch
                        n = b.record_count
                    else:
                        n = len(batch_records(b, limit=self.options.limit))
                    self.stats.records_before += n
                    self.stats.records_after += n
                    self.stats.bytes_before += b.size
                    self.stats.bytes_after += b.size
                    out.append(bytes(b.raw))
                yield plan, out, []
                continue
            self.stats.segments_cleaned += 1
            before = len(tracker.cleaned_index)
            for b in strict_batches(plan.path):
                self.stats.bytes_before += b.size
                raw = self._filter(b, plan, tracker, active)
                if raw is not None:
                    self.stats.bytes_after += len(raw)
                    out.append(raw)
            yield plan, out, tracker.cleaned_index[before:]

    # -- the broker's filterTo, one batch ------------------------------------------------

    def _filter(self, batch: Batch, plan: SegmentPlan, tracker: TxnTracker,
                active: dict[int, ProducerState]) -> bytes | None:
        options, stats = self.options, self.stats
        records = batch_records(batch, limit=options.limit)
        stats.records_before += len(records)
        control_type = None
        if batch.is_control:
            control_type = None if not records else _safe_type(records[0])
            can_discard = tracker.on_control_batch(batch, control_type)
            horizon = batch.delete_horizon_ms
            discard_records = can_discard and horizon is not None and horizon <= options.now_ms
        else:
            can_discard = tracker.on_batch(batch)
            discard_records = can_discard
        retain_empty = False
        if batch.magic >= 2 and batch.producer_id != NO_PRODUCER_ID:
            assert batch.producer_id is not None  # set on every v2 batch
            p = active.get(batch.producer_id)
            if p is not None:
                if p.last_data_offset is not None:
                    retain_empty = batch.last_offset == p.last_data_offset
                else:
                    retain_empty = batch.is_control and batch.producer_epoch == p.epoch
        if not retain_empty and batch.next_offset == self.upper:
            retain_empty = True  # keep the last batch of the round: the log end offset survives
        if discard_records and not retain_empty:
            self._count_dropped(batch, records, [], not batch.is_control)
            stats.batches_removed += 1
            return None
        marker_for_empty_txn = can_discard and batch.is_control
        if discard_records:
            retained: list[Record] = []
        elif batch.is_control:
            retained = records
        else:
            retained = self._retained(batch, records, plan)
        write_original = len(retained) == len(records)
        if write_original and batch.magic < 2:
            write_original = all(r.magic == batch.magic for r in records)  # KAFKA-4298: rewrite mixed magics
        if not write_original:
            self._count_dropped(batch, records, retained, discard_records)
        if retained:
            stats.records_after += len(retained)
            tombstones = sum(1 for r in retained if r.value is None)
            if not batch.is_control:
                stats.tombstones_kept += tombstones
            else:
                self.markers_written += 1
            need_horizon = batch.magic >= 2 and (tombstones or marker_for_empty_txn) and not batch.has_delete_horizon
            if write_original and not need_horizon:
                stats.batches_copied += 1
                return bytes(batch.raw)
            if need_horizon:
                stats.horizons_set += 1
                horizon = options.now_ms + options.delete_retention_ms
            else:
                horizon = batch.delete_horizon_ms  # kept as it is (None: none)
            stats.batches_rebuilt += 1
            return _rebuild(batch, retained, horizon)
        if retain_empty and batch.magic >= 2:
            stats.batches_emptied += 1
            if batch.is_control:
                self.markers_written += 1
            return _empty_header(batch)
        stats.batches_removed += 1
        return None

    def _retained(self, batch: Batch, records: list[Record], plan: SegmentPlan) -> list[Record]:
        """shouldRetainRecord over a data batch: latest for its key, and a value or a tombstone
        that must still be kept. Keys are looked up by digest only below the first dirty
        offset; above it the latest offset per key is the set of winning offsets."""
        if batch.magic >= 2:
            horizon = batch.delete_horizon_ms
            keep_deletes = horizon is None or self.options.now_ms < horizon
        else:
            keep_deletes = plan.legacy_deletes_retained
        latest, winners, start = self.map_latest, self.winners, self.start
        out = []
        for r in records:
            off = r[0]
            if off > latest:
                out.append(r)
            elif r[2] is None:
                continue
            elif (off in winners) if off >= start else off >= self._clean_part_offset(r[2]):
                if r[3] is not None or keep_deletes:
                    out.append(r)
        return out

    def _clean_part_offset(self, key: bytes) -> int:
        return self.key_map.get(hashlib.md5(key).digest(), -1)

    def _count_dropped(self, batch: Batch, records: list[Record], retained: list[Record], aborted: bool) -> None:
        stats = self.stats
        kept = {r[0] for r in retained}
        for r in records:
            if r[0] in kept:
                continue
            if batch.is_control:
                stats.markers_removed += 1
            elif aborted:
                stats.aborted_removed += 1
            elif r.key is None:
                stats.keyless_removed += 1
            elif r.value is None:
                stats.tombstones_removed += 1


def _safe_type(r: Record) -> int:
    try:
        return control_info(r).type_id
    except KsegError:
        return -1


def _rebuild(batch: Batch, retained: list[Record], horizon: int | None) -> bytes:
    """MemoryRecordsBuilder over the retained records (buildRetainedRecordsInto)."""
    lat = batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    codec = codec_for(batch)
    if batch.magic >= 2:
        recs = [r._replace(stored_timestamp=r.timestamp, attributes=0) for r in retained]
        h = header_of(batch)
        return build_v2_batch(
            recs, base_offset=batch.base_offset, codec=batch.codec, timestamp_type=batch.timestamp_type,
            transactional=batch.is_transactional, control=batch.is_control, producer_id=h.producer_id,
            producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
            partition_leader_epoch=h.partition_leader_epoch, last_offset_delta=h.last_offset_delta,
            delete_horizon_ms=horizon, max_timestamp=lat, plugin_id=batch.plugin_id, codec_impl=codec,
        )
    ts_attr = TIMESTAMP_TYPE_MASK if (lat is not None and batch.magic == 1) else 0
    recs = [r._replace(magic=batch.magic, attributes=ts_attr,
                       stored_timestamp=(lat if lat is not None else r.timestamp) if batch.magic == 1 else NO_TIMESTAMP)
            for r in retained]
    return build_legacy_wrapper(recs, magic=batch.magic, codec=batch.codec, timestamp_type=batch.timestamp_type,
                                wrapper_timestamp=lat, codec_impl=codec)


def _empty_header(batch: Batch) -> bytes:
    """DefaultRecordBatch.writeEmptyHeader: state kept, records gone, horizon cleared."""
    attrs = batch.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)
    return assemble_v2(header_of(batch).with_(base_timestamp=NO_TIMESTAMP, record_count=0, attributes=attrs), b"")


# --------------------------------------------------------------------------- driving files


@dataclass
class PartitionResult:
    stats: CompactStats
    segments: dict[Path, tuple[list[bytes], list[TxnEntry]]]


def compact_partition(segs: list[Path], options: CompactOptions, workdir: Path | None = None) -> PartitionResult:
    """Clean a partition until a pass changes nothing (at most MAX_PASSES; one with ``single_pass``).

    A second pass matters where the broker's next cleaning would change more with the
    same clock: markers of aborted transactions whose data the first pass removed
    get their delete horizon. Intermediate passes are written under ``workdir``.
    """

    original = list(segs)
    total = None
    current = list(segs)
    result: dict[Path, tuple[list[bytes], list[TxnEntry]]] = {}
    for n in range(1, (1 if options.single_pass else MAX_PASSES) + 1):
        cleaner = Cleaner(current, options)
        cleaner.build_key_map()
        result = {}
        changed = False
        for (plan, entries, txns), src in zip(cleaner.clean(), original):
            result[src] = (entries, txns)
            if not changed:
                changed = b"".join(entries) != plan.path.read_bytes()
        if total is None:
            total = cleaner.stats
        else:
            total.records_after = cleaner.stats.records_after
            total.bytes_after = cleaner.stats.bytes_after
            for name in ("tombstones_removed", "keyless_removed", "aborted_removed", "markers_removed",
                         "horizons_set", "batches_rebuilt", "batches_emptied", "batches_removed"):
                setattr(total, name, getattr(total, name) + getattr(cleaner.stats, name))
            total.tombstones_kept = cleaner.stats.tombstones_kept
        total.passes = n
        # Only markers can change in a later pass with the same clock (their transaction's
        # data went in this one): without any, this pass is final.
        if not changed or options.single_pass or workdir is None or not cleaner.markers_written:
            break
        passdir = workdir / f"pass{n}"
        passdir.mkdir(parents=True, exist_ok=True)
        current = []
        for src, (entries, txns) in result.items():
            dst = passdir / src.name
            write_atomic(dst, b"".join(entries))
            if txns:
                write_atomic(companion_path(dst, ".txnindex"), build_txn_index(txns))
            st = os.stat(src)
            os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
            current.append(dst)
    assert total is not None
    return PartitionResult(total, result)


def default_now_ms() -> int:
    return int(time.time() * 1000)


def compact_group(segs: list[Path], wanted: bool, options: CompactOptions, out_dir: Path | None, work: Path | None,
                  index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> tuple[CompactStats | None, list[Path]]:
    """One partition: compacted (or, not ``wanted``, copied as it is) into ``out_dir`` with its
    indexes, .txnindex and the input segments' modification times; ``out_dir`` None is a dry run.
    Returns the stats (None when copied) and the segment files written."""
    import shutil


    stats = None
    if wanted:
        pr = compact_partition(segs, options, work)
        stats, produced = pr.stats, pr.segments
    else:
        produced = {s: ([bytes(b.raw) for b in strict_batches(s)], []) for s in segs}
    written: list[Path] = []
    if out_dir is None:
        return stats, written
    out_dir.mkdir(parents=True, exist_ok=True)
    for src, (entries, txns) in produced.items():
        dst = out_dir / src.name
        sink = SegmentSink(dst, base_offset_of(src) or 0, WriteOptions(index_interval_bytes=index_interval_bytes))
        for raw in entries:
            sink.write(raw)
        sink.commit()
        if txns:
            write_atomic(companion_path(dst, ".txnindex"), build_txn_index(txns))
        st = os.stat(src)
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))  # the cleaner keeps the segment's mtime
        written.append(dst)
    if work is not None and work.exists():
        shutil.rmtree(work)
    return stats, written


@dataclass
class CompactResult:
    stats: CompactStats = field(default_factory=CompactStats)
    partitions: int = 0
    segments: list[Path] = field(default_factory=list)


def compact_job(inputs: list[Path], output: Path | None, options: CompactOptions, *, force: bool = False,
                topics: set[str] | None = None,
                index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> CompactResult:
    """Compact a partition folder, segment files of one partition, or each partition of a log
    directory (``topics`` limits which; others are copied). ``output`` None: a dry run."""

    groups: list[tuple[str | None, list[Path], bool]] = []  # (partition folder name, segments, compact?)
    if len(inputs) == 1 and inputs[0].is_dir():
        segs = partition_segments(inputs[0])
        if segs:
            groups.append((None, segs, True))
        else:
            parts = log_dir_partitions(inputs[0])
            if not parts:
                raise InputError("no segment files found (expected .log files or <topic>-<n> folders)",
                                 file=str(inputs[0]))
            for part in parts:
                groups.append((part.path.name, part.segment_paths, not topics or part.topic in topics))
    else:
        for p in inputs:
            if not p.is_file() or p.suffix != ".log":
                raise InputError("expected a partition folder, a log directory or .log files of one partition",
                                 file=str(p))
        groups.append((None, sorted(inputs, key=lambda p: base_offset_of(p) or 0), True))
    result = CompactResult()
    if output is not None:
        check_output(inputs, output, force=force)
    root = AtomicDir(output) if output is not None else None
    try:
        for name, segs, wanted in groups:
            out_dir = None if root is None else (root.tmp / name if name else root.tmp)
            work = None if root is None else root.tmp / f".passes-{name or 'partition'}"
            stats, written = compact_group(segs, wanted, options, out_dir, work, index_interval_bytes)
            if stats is not None:
                result.stats.add(stats)
            result.partitions += 1
            result.segments.extend(written)
    except BaseException:
        if root is not None:
            root.abort()
        raise
    if root is not None:
        root.commit()
        result.segments = [output / p.relative_to(root.tmp) for p in result.segments]  # type: ignore[operator]
    return result
