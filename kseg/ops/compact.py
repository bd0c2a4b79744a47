"""Kafka's log cleaner, offline (spec §8): keep the latest record per key.

The rules are the broker's (``LogCleaner``, ``MemoryRecords.filterTo``):
records are never reordered and offsets never change; a batch whose records
are all kept and that needs no delete horizon is copied byte for byte; a
rebuilt batch keeps its codec, base offset, last offset delta, producer
fields, leader epoch and flags; tombstones and transaction markers go in two
steps (stamp a delete horizon, remove once it has passed); aborted
transactions are removed and never shadow committed values. Keys are held as
16-byte MD5 digests, as the broker's ``SkimpyOffsetMap`` does.

This module works on decoded batches and returns entry bytes; ``compact_split``
drives it over files.
"""

from __future__ import annotations

import hashlib
import heapq
import tempfile
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterator

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.companions.build import TxnEntry, build_indexes, build_txn_index
from kseg.companions.read import read_txn_index
from kseg.defaults import (
    DEFAULT_DELETE_RETENTION_MS,
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_KEY_MAP_BYTES,
    DEFAULT_PRODUCER_EXPIRATION_MS,
    DEFAULT_SEGMENT_BYTES,
    DEFAULT_SEGMENT_INDEX_BYTES,
)
from kseg.errors import InputError, KsegError
from kseg.facts.primitives import INT32_MAX
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
from kseg.log import identity
from kseg.log.atomic import write_atomic
from kseg.log.checks import CARRY, SKIP, STOP, DamagePolicy, DamageTally, OffsetOrder, checked_batches, damaged_error
from kseg.log.control import control_info
from kseg.log.encode import assemble_v2, build_legacy_wrapper, build_v2_batch, header_of
from kseg.log.listing import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from kseg.log.records import batch_records, codec_for
from kseg.log.segment import (
    LeftOut,
    base_offset_of,
    companion_path,
    log_dir_partitions,
    partition_segments,
    strict_batches,
)
from kseg.model import Batch, Record
from kseg.ops.jobs import SegmentSink, WriteOptions
from kseg.ops.logdir import DamagedFiles
from kseg.storage import as_path, copy_times

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
    # groupSegmentsBySize: adjacent cleaned segments become one while they fit these
    group_segments: bool = True
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_index_bytes: int = DEFAULT_SEGMENT_INDEX_BYTES
    on_damage: str = STOP  # --on-damage (kseg.log.checks): stop, skip or carry

    @property
    def damage_policy(self) -> DamagePolicy:
        return DamagePolicy(self.on_damage, self.limit)


@dataclass
class CompactStats:
    """What a compaction did, summed over partitions; ``kept_<reason>`` counts the segments kept
    as they were for each of ``KEPT_WHY``'s reasons."""

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
    kept_active: int = 0
    kept_lag: int = 0
    kept_unstable: int = 0
    passes: int = 0
    rounds: int = 0  # cleaning rounds in all (more than passes when the key map filled)
    # Damaged input batches (--on-damage skip|carry): in bytes_before (and bytes_after when
    # carried), never in the record counts.
    damaged: DamageTally = field(default_factory=DamageTally)
    # Zeros a broker preallocated after input segments' last batches (of every partition read).
    left_out: LeftOut = field(default_factory=LeftOut)

    def add(self, other: "CompactStats") -> None:
        for f in fields(self):
            if f.name in ("damaged", "left_out"):
                getattr(self, f.name).add(getattr(other, f.name))
                continue
            combine = max if f.name in ("passes", "rounds") else int.__add__
            setattr(self, f.name, combine(getattr(self, f.name), getattr(other, f.name)))

    def as_json(self) -> dict:
        return {f.name: getattr(self, f.name).as_json() if f.name in ("damaged", "left_out") else getattr(self, f.name)
                for f in fields(self)}

    def line(self) -> str:
        return (
            f"records {self.records_before} -> {self.records_after}, bytes {self.bytes_before} -> "
            f"{self.bytes_after}, {self.keys} keys; tombstones kept {self.tombstones_kept}, removed "
            f"{self.tombstones_removed}; keyless removed {self.keyless_removed}; aborted records removed "
            f"{self.aborted_removed}; markers removed {self.markers_removed}; delete horizons set "
            f"{self.horizons_set}; batches copied {self.batches_copied}, rebuilt {self.batches_rebuilt}, "
            f"emptied {self.batches_emptied}, removed {self.batches_removed}; segments cleaned "
            f"{self.segments_cleaned}, kept as they were {self.segments_kept}{self.kept_why()}; passes (most) "
            f"{self.passes}, rounds (most) {self.rounds}"
        ) + (f"; {self.damaged.line()}" if self.damaged else "") + (f"; {self.left_out.line()}" if self.left_out else "")

    def kept_why(self) -> str:
        """Why segments were kept as they were, and what would clean them (empty: none kept for a reason)."""
        why = [f"{n} {KEPT_WHY[k]}" for k in KEPT_WHY if (n := getattr(self, f"kept_{k}"))]
        return f" ({'; '.join(why)})" if why else ""


# Why the cleaner leaves a segment as it is (SegmentPlan.kept), and what would make it clean it.
KEPT_WHY = {
    "active": "the active (newest) segment, which the broker never cleans: --include-active cleans it too",
    "lag": "newer than --min-compaction-lag-ms before --now-ms: a later --now-ms or a smaller lag cleans it",
    "unstable": "at or past the first offset of a transaction still open (the last stable offset): "
                "cleaned once its marker is in the log",
}


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
    # Damaged batches (--on-damage skip|carry) by segment and byte position, with what is wrong:
    # found once per pass, left out of every decision, then dropped or carried as they are.
    damaged: dict[Path, dict[int, list]] = field(default_factory=dict)
    left_out: LeftOut = field(default_factory=LeftOut)  # zeros preallocated after the segments' last batches

    def first_unstable_offset(self) -> int | None:
        opens = [p.open_txn_first for p in self.producers.values() if p.open_txn_first is not None]
        return min(opens) if opens else None


def _scan_partition(segs: list[Path], limit: int, policy: DamagePolicy = DamagePolicy()) -> PartitionState:
    """The partition's producers and offsets from its sound batches; damaged ones stop the run or
    are kept out of every decision (a pass over this run's own intermediate output finds the
    batches it carried again, and carries them again)."""
    st = PartitionState()
    order = OffsetOrder()
    for seg_path in segs:
        seg_max = NO_TIMESTAMP
        damaged: dict[int, list] = {}
        for b, findings in checked_batches(seg_path, policy.limit, st.left_out, order):
            if findings:
                if policy.on_damage == STOP:
                    raise damaged_error(b, findings, str(seg_path))
                damaged[b.position] = findings
                continue
            seg_max = max(seg_max, b.timestamp)
            st.log_end_offset = max(st.log_end_offset, b.next_offset)
            if b.magic < 2 or b.producer_id == NO_PRODUCER_ID:
                continue
            pid, epoch = b.producer_id, b.producer_epoch
            assert pid is not None and epoch is not None  # set on every v2 batch
            p = st.producers.setdefault(pid, ProducerState())
            p.epoch = epoch
            p.last_timestamp = max(p.last_timestamp, b.timestamp)
            if b.is_control:
                ctype = _control_type(b, limit)
                if ctype == CONTROL_ABORT:
                    first = p.open_txn_first if p.open_txn_first is not None else b.offset
                    others = [q.open_txn_first for other, q in st.producers.items()
                              if other != pid and q.open_txn_first is not None]
                    lso = min(others) if others else b.last_offset + 1
                    st.aborted[(pid, b.last_offset)] = TxnEntry(pid, first, b.last_offset, lso)
                if ctype in (CONTROL_ABORT, CONTROL_COMMIT):
                    p.open_txn_first = None
            else:
                p.last_data_offset = b.last_offset
                if b.is_transactional and p.open_txn_first is None:
                    p.open_txn_first = b.offset
        st.segment_max_timestamps.append(seg_max)
        if damaged:
            st.damaged[seg_path] = damaged
        txn_path = companion_path(seg_path, TXN_INDEX_SUFFIX)
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
    kept: str | None = None  # why it is not cleaned: a KEPT_WHY key


class Cleaner:
    """One cleaning pass over a partition's segments."""

    def __init__(self, segs: list[Path], options: CompactOptions, first_dirty_offset: int | None = None):
        self.segs = segs
        self.o = options
        self.first_dirty = first_dirty_offset if first_dirty_offset is not None else options.first_dirty_offset
        self.state = _scan_partition(segs, options.limit, options.damage_policy)
        self.plans, self.upper = self._plan()
        self.key_map: dict[bytes, int] = {}
        self.winners: set[int] = set()
        self.start = self.first_dirty or 0
        self.map_latest = -1
        self.end_offset = self.upper  # where this round's cleaning ends (before upper when the map fills)
        self.markers_written = 0
        self.stats = CompactStats(left_out=self.state.left_out)  # a later pass reads its own output: none

    def _plan(self) -> tuple[list[SegmentPlan], int]:
        o, st = self.o, self.state
        n = len(self.segs)
        cleanable = n if o.include_active else max(n - 1, 0)
        kept = ["active"] * n
        if o.min_compaction_lag_ms > 0:
            for i in range(cleanable):
                largest = st.segment_max_timestamps[i]
                if largest < 0:
                    largest = int(as_path(self.segs[i]).stat().st_mtime * 1000)
                if o.now_ms - largest < o.min_compaction_lag_ms:
                    kept[i:cleanable] = ["lag"] * (cleanable - i)
                    cleanable = i
                    break
        upper = st.log_end_offset if cleanable == n else (base_offset_of(self.segs[cleanable]) or 0)
        unstable = st.first_unstable_offset()
        if unstable is not None and unstable < upper:
            upper = unstable  # the last stable offset bounds the cleanable range
            while cleanable > 0 and (base_offset_of(self.segs[cleanable - 1]) or 0) >= upper:
                cleanable -= 1
                kept[cleanable] = "unstable"
        legacy_horizon = 0
        if self.first_dirty is not None:
            clean = [s for s in self.segs if (base_offset_of(s) or 0) < self.first_dirty]
            if clean:
                legacy_horizon = int(as_path(clean[-1]).stat().st_mtime * 1000) - o.delete_retention_ms
        plans = [SegmentPlan(s, i < cleanable, int(as_path(s).stat().st_mtime * 1000) > legacy_horizon,
                             None if i < cleanable else kept[i])
                 for i, s in enumerate(self.segs)]
        return plans, upper

    def _active_producers(self) -> dict[int, ProducerState]:
        o = self.o
        return {pid: p for pid, p in self.state.producers.items()
                if p.open_txn_first is not None or o.now_ms - p.last_timestamp < o.producer_expiration_ms}

    def build_key_map(self) -> None:
        """Latest offset per key digest over the cleanable range, skipping aborted data and markers
        (``buildOffsetMap``). When the map fills, this round cleans only up to the last offset it
        holds (``end_offset``); the rest is left for the next round, as the broker leaves it."""
        start = self.start
        tracker = TxnTracker(list(self.state.aborted.values()))
        max_keys = int((self.o.key_map_bytes // MAP_SLOT_BYTES) * MAP_LOAD_FACTOR)
        if max_keys < 1:
            raise InputError(f"--key-map-bytes {self.o.key_map_bytes} holds no key ({MAP_SLOT_BYTES} bytes a key)")
        key_map = self.key_map
        md5 = hashlib.md5
        latest = -1
        full = False
        cleanable = [plan for plan in self.plans if plan.clean]
        for i, plan in enumerate(cleanable):
            next_start = (base_offset_of(cleanable[i + 1].path) or 0) if i + 1 < len(cleanable) else self.upper
            damaged = self.state.damaged.get(plan.path, {})
            for b in strict_batches(plan.path):
                if b.position in damaged:
                    continue
                if b.offset >= self.upper:
                    break
                if b.is_control:
                    tracker.on_control_batch(b, _control_type(b, self.o.limit))
                elif not tracker.on_batch(b):
                    for r in batch_records(b, limit=self.o.limit):
                        key = r[2]
                        if key is not None and r[0] >= start:
                            if len(key_map) >= max_keys:
                                full = True
                                break
                            key_map[md5(key).digest()] = r[0]
                            latest = r[0]
                    if full:
                        break
                if b.last_offset >= start:
                    latest = b.last_offset
            if full:
                break
            latest = next_start - 1  # past any offset gap at the segment's end
        self.map_latest = latest
        self.end_offset = latest + 1
        if full:
            for plan in self.plans:  # logSegments(0, endOffset): segments past the map wait for a later round
                plan.clean = plan.clean and (base_offset_of(plan.path) or 0) < self.end_offset
        self.stats.keys = len(key_map)
        self.winners = set(key_map.values())

    def clean(self) -> Iterator[tuple[SegmentPlan, list[bytes], list[TxnEntry]]]:
        """Yield each segment's new entries and its aborted-transaction index."""
        tracker = TxnTracker(list(self.state.aborted.values()))
        active = self._active_producers()
        for plan in self.plans:
            out: list[bytes] = []
            damaged = self.state.damaged.get(plan.path, {})
            if not plan.clean:
                self.stats.segments_kept += 1
                if plan.kept is not None:  # (None: past a full key map, cleaned in a later round)
                    setattr(self.stats, f"kept_{plan.kept}", getattr(self.stats, f"kept_{plan.kept}") + 1)
                for b in strict_batches(plan.path):
                    if b.position in damaged:
                        self._damaged(b, damaged[b.position], plan.path, out)
                        continue
                    if b.magic >= 2:
                        assert b.record_count is not None  # set on every v2 batch
                        n = b.record_count
                    else:
                        n = len(batch_records(b, limit=self.o.limit))
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
                if b.position in damaged:
                    self._damaged(b, damaged[b.position], plan.path, out)
                    continue
                self.stats.bytes_before += b.size
                raw = self._filter(b, plan, tracker, active)
                if raw is not None:
                    self.stats.bytes_after += len(raw)
                    out.append(raw)
            yield plan, out, tracker.cleaned_index[before:]

    def _damaged(self, b: Batch, findings: list, path: Path, out: list[bytes]) -> None:
        """A damaged batch (--on-damage skip|carry): left out, or its bytes as they are."""
        self.stats.bytes_before += b.size
        if self.o.on_damage == CARRY:
            self.stats.bytes_after += b.size
            out.append(bytes(b.raw))
        self.stats.damaged.record(CARRY if self.o.on_damage == CARRY else SKIP, b, findings, str(path))

    # -- the broker's filterTo, one batch ------------------------------------------------

    def _filter(self, batch: Batch, plan: SegmentPlan, tracker: TxnTracker,
                active: dict[int, ProducerState]) -> bytes | None:
        o, s = self.o, self.stats
        records = batch_records(batch, limit=o.limit)
        s.records_before += len(records)
        control_type = None
        if batch.is_control:
            control_type = None if not records else _safe_type(records[0])
            can_discard = tracker.on_control_batch(batch, control_type)
            horizon = batch.delete_horizon_ms
            discard_records = can_discard and horizon is not None and horizon <= o.now_ms
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
            s.batches_removed += 1
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
            s.records_after += len(retained)
            tombstones = sum(1 for r in retained if r.value is None)
            if not batch.is_control:
                s.tombstones_kept += tombstones
            else:
                self.markers_written += 1
            need_horizon = batch.magic >= 2 and (tombstones or marker_for_empty_txn) and not batch.has_delete_horizon
            if write_original and not need_horizon:
                s.batches_copied += 1
                return bytes(batch.raw)
            if need_horizon:
                s.horizons_set += 1
                horizon = o.now_ms + o.delete_retention_ms
            else:
                horizon = batch.delete_horizon_ms  # kept as it is (None: none)
            s.batches_rebuilt += 1
            return _rebuild(batch, retained, horizon)
        if retain_empty and batch.magic >= 2:
            s.batches_emptied += 1
            if batch.is_control:
                self.markers_written += 1
            return _empty_header(batch)
        s.batches_removed += 1
        return None

    def _retained(self, batch: Batch, records: list[Record], plan: SegmentPlan) -> list[Record]:
        """shouldRetainRecord over a data batch: latest for its key, and a value or a tombstone
        that must still be kept. Keys are looked up by digest only below the first dirty
        offset; above it the latest offset per key is the set of winning offsets."""
        if batch.magic >= 2:
            horizon = batch.delete_horizon_ms
            keep_deletes = horizon is None or self.o.now_ms < horizon
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
        s = self.stats
        kept = {r[0] for r in retained}
        for r in records:
            if r[0] in kept:
                continue
            if batch.is_control:
                s.markers_removed += 1
            elif aborted:
                s.aborted_removed += 1
            elif r.key is None:
                s.keyless_removed += 1
            elif r.value is None:
                s.tombstones_removed += 1


def _safe_type(r: Record) -> int:
    try:
        return control_info(r).type_id
    except KsegError:
        return -1


def _rebuild(batch: Batch, retained: list[Record], horizon: int | None) -> bytes:
    """MemoryRecordsBuilder over the retained records (buildRetainedRecordsInto)."""
    lat = batch.timestamp if batch.timestamp_type == LOG_APPEND_TIME else None
    codec = codec_for(batch)
    if batch.magic >= 2:
        recs = [r._replace(stored_timestamp=r.timestamp, attributes=0) for r in retained]
        h = header_of(batch)
        return build_v2_batch(
            recs, base_offset=batch.offset, codec=batch.codec, timestamp_type=batch.timestamp_type,
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
    cleaned: set[Path] = field(default_factory=set)  # the inputs in the cleanable range


def compact_partition(segs: list[Path], options: CompactOptions, workdir: Path | None = None) -> PartitionResult:
    """Clean a partition as the broker's cleaner would, with the same clock.

    A pass cleans the whole cleanable range, in several rounds when the key map
    fills (each round cleans up to the last offset its map holds, the next starts
    there, as the broker's next cleaning does). Passes repeat until one changes
    nothing (at most MAX_PASSES; one round with ``single_pass``): a later pass matters
    where markers of aborted transactions whose data went in this one get their delete
    horizon. Intermediate results are written under ``workdir`` (a temporary folder
    when none is given).
    """
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="kseg-compact-") as tmp:
            return _compact_partition(segs, options, Path(tmp), keep_passes=False)
    return _compact_partition(segs, options, workdir, keep_passes=True)


def _compact_partition(segs: list[Path], options: CompactOptions, workdir: Path, keep_passes: bool) -> PartitionResult:
    original = list(segs)
    total: CompactStats | None = None
    current = list(segs)
    result: dict[Path, tuple[list[bytes], list[TxnEntry]]] = {}
    cleaned: set[Path] = set()
    step = 0
    passes = rounds = 0
    first_dirty = options.first_dirty_offset
    while True:
        cleaner = Cleaner(current, options, first_dirty)
        cleaner.build_key_map()
        result = {}
        changed = False
        for (plan, entries, txns), src in zip(cleaner.clean(), original):
            result[src] = (entries, txns)
            if plan.clean:
                cleaned.add(src)
            if not changed:
                changed = b"".join(entries) != identity.follow(plan.path).read_bytes()
        if total is None:
            total = cleaner.stats
        else:
            total.records_after = cleaner.stats.records_after
            total.bytes_after = cleaner.stats.bytes_after
            total.keys = max(total.keys, cleaner.stats.keys)
            for name in ("tombstones_removed", "keyless_removed", "aborted_removed", "markers_removed",
                         "horizons_set", "batches_rebuilt", "batches_emptied", "batches_removed"):
                setattr(total, name, getattr(total, name) + getattr(cleaner.stats, name))
            total.tombstones_kept = cleaner.stats.tombstones_kept
        rounds += 1
        more_rounds = cleaner.end_offset < cleaner.upper
        if more_rounds and not options.single_pass:
            first_dirty = cleaner.end_offset  # the cleaner checkpoint after this round
        else:
            passes += 1
            # Only markers can change in a later pass with the same clock (their transaction's
            # data went in this one): without any, this pass is final.
            if (not changed or options.single_pass or not keep_passes or not cleaner.markers_written
                    or passes >= MAX_PASSES):
                break
            first_dirty = options.first_dirty_offset
        step += 1
        current = _write_step(workdir / f"step{step}", result)
    assert total is not None
    total.passes, total.rounds = passes, rounds
    return PartitionResult(total, result, cleaned)


def _write_step(folder: Path, result: dict[Path, tuple[list[bytes], list[TxnEntry]]]) -> list[Path]:
    """One round's segments on disk (with their .txnindex and the inputs' times) for the next round."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for src, (entries, txns) in result.items():
        dst = folder / src.name
        write_atomic(dst, b"".join(entries))
        if txns:
            write_atomic(companion_path(dst, TXN_INDEX_SUFFIX), build_txn_index(txns))
        copy_times(src, dst)
        out.append(dst)
    return out


def group_segments_by_size(segs: list[Path], max_bytes: int, max_index_bytes: int,
                           first_uncleanable_offset: int) -> list[list[Path]]:
    """The broker's ``groupSegmentsBySize``: runs of adjacent segments cleaned into one.

    A group grows while the input segments' log bytes stay within ``segment.bytes``,
    their offset and time index bytes each within ``segment.index.bytes``, and the
    offsets a group spans fit the 32-bit relative offsets of its index.
    """
    sizes = [(p.stat().st_size, *_index_sizes(p)) for p in segs]
    groups: list[list[Path]] = []
    i = 0
    while i < len(segs):
        group, (log_size, index_size, time_size) = [segs[i]], sizes[i]
        base = base_offset_of(segs[i]) or 0
        i += 1
        while i < len(segs):
            size, index, time_index = sizes[i]
            last = (base_offset_of(segs[i + 1]) or 0) - 1 if i + 1 < len(segs) else first_uncleanable_offset - 1
            if (log_size + size > max_bytes or index_size + index > max_index_bytes
                    or time_size + time_index > max_index_bytes
                    or (size != 0 and last - base > INT32_MAX)):
                break
            group.append(segs[i])
            log_size, index_size, time_size = log_size + size, index_size + index, time_size + time_index
            i += 1
        groups.append(group)
    return groups


def _index_sizes(log: Path) -> tuple[int, int]:
    """Bytes of a segment's offset and time index as the broker holds them (built when absent)."""
    index, time_index = companion_path(log, INDEX_SUFFIX), companion_path(log, TIME_INDEX_SUFFIX)
    if index.exists() and time_index.exists():
        return index.stat().st_size, time_index.stat().st_size
    built = build_indexes([b._replace(raw=memoryview(b"")) for b in strict_batches(log)], base_offset_of(log) or 0)
    return len(built[0]), len(built[1])


def default_now_ms() -> int:
    return int(time.time() * 1000)


def _next_offset(src: Path) -> int:
    """The offset after the last entry of ``src`` (its base offset when empty)."""
    last = None
    for b in strict_batches(src):
        last = b.next_offset
    return last if last is not None else (base_offset_of(src) or 0)


def _copied(seg: Path, options: CompactOptions, damage: DamageTally | None, left_out: LeftOut | None,
            order: OffsetOrder) -> list[bytes]:
    """A segment of a partition copied as it is, its batches checked as every writer checks them
    (``order``: the partition's offsets so far)."""
    policy = options.damage_policy
    out = []
    tally = damage if damage is not None else DamageTally()
    for b, findings in checked_batches(seg, policy.limit, left_out, order):
        if findings:
            if policy.on_damage == STOP:
                raise damaged_error(b, findings, str(seg))
            tally.record(policy.on_damage, b, findings, str(seg))
            if policy.on_damage == SKIP:
                continue
        out.append(bytes(b.raw))
    return out


def compact_group(segs: list[Path], wanted: bool, options: CompactOptions, out_dir: Path | None, work: Path | None,
                  index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                  copied_damage: DamageTally | None = None,
                  copied_left_out: LeftOut | None = None) -> tuple[CompactStats | None, list[Path]]:
    """One partition: compacted (or, not ``wanted``, copied as it is) into ``out_dir`` with its
    indexes, .txnindex and the input segments' modification times; ``out_dir`` None is a dry run.
    Returns the stats (None when copied; its damaged batches are told to ``copied_damage``, the
    zeros it leaves out to ``copied_left_out``) and the segment files written."""
    import shutil


    stats = None
    groups: list[list[Path]] = [[s] for s in segs]
    if wanted:
        pr = compact_partition(segs, options, work)
        stats, produced = pr.stats, pr.segments
        cleaned = [s for s in segs if s in pr.cleaned]
        if options.group_segments and cleaned:
            end = base_offset_of(segs[len(cleaned)]) if len(cleaned) < len(segs) else None
            first_uncleanable = end if end is not None else _next_offset(cleaned[-1])
            groups = (group_segments_by_size(cleaned, options.segment_bytes, options.segment_index_bytes,
                                             first_uncleanable)
                      + [[s] for s in segs[len(cleaned):]])
    else:
        order = OffsetOrder()
        produced = {s: (_copied(s, options, copied_damage, copied_left_out, order), []) for s in segs}
    written: list[Path] = []
    if out_dir is None:
        return stats, written
    identity.require_unchanged(segs)  # what is written is what the inputs still hold
    out_dir.mkdir(parents=True, exist_ok=True)
    for group in groups:
        dst = out_dir / group[0].name  # the cleaned segment takes its first segment's name
        sink = SegmentSink(dst, base_offset_of(group[0]) or 0,
                           WriteOptions(index_interval_bytes=index_interval_bytes))
        txns: list[TxnEntry] = []
        for src in group:
            entries, src_txns = produced[src]
            for raw in entries:
                sink.write(raw)
            txns.extend(src_txns)
        sink.commit()
        if txns:
            write_atomic(companion_path(dst, TXN_INDEX_SUFFIX), build_txn_index(txns))
        copy_times(group[-1], dst)  # the cleaner keeps the last segment's mtime
        written.append(dst)
    if work is not None and work.exists():
        shutil.rmtree(work)
    return stats, written


@dataclass
class CompactResult:
    stats: CompactStats = field(default_factory=CompactStats)
    partitions: int = 0  # compacted (--topics: of those topics)
    segments: list[Path] = field(default_factory=list)
    copied_partitions: int = 0  # other topics' partitions, copied as they are
    copied_damage: DamageTally = field(default_factory=DamageTally)  # damaged batches in those
    damaged_files: DamagedFiles = field(default_factory=DamagedFiles)  # files carried over that failed their checks

    @property
    def damaged(self) -> bool:
        """Damaged batches (or files carried over) were skipped or carried (the command exits 1)."""
        return bool(self.stats.damaged or self.copied_damage or self.damaged_files)


def input_segments(inputs: list[Path]) -> list[Path]:
    """The segment files named by INPUT (files, a partition folder or a log directory's partitions)."""
    out: list[Path] = []
    for p in inputs:
        if not p.is_dir():
            out.append(p)
            continue
        for folder in [p, *(q for q in p.iterdir() if q.is_dir())]:
            out.extend(q.with_name(q.name.split(".", 1)[0] + LOG_SUFFIX) for q in folder.iterdir()
                       if LOG_SUFFIX in q.name
                       and base_offset_of(q.with_name(q.name.split(".", 1)[0] + LOG_SUFFIX)) is not None)
    return out
