"""The ``stats`` operation: what a log directory holds, per topic, partition and segment.

One pass over every record, in bounded memory: counts, bytes by codec and magic, the
compression ratio, the time range and a record-rate timeline, batch size histograms,
distinct keys (a HyperLogLog), tombstones, producers and transactions, what compaction
would remove, and the problems met on the way. Returns data; nothing here prints.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from xxhash import xxh64_intdigest

from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import KsegError
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.formats.attributes import CODEC_NAMES, TRANSACTIONAL_MASK
from kseg.log.checks import STATS_ROW, StatsRun, stats_v2_run
from kseg.log.control import control_info
from kseg.log.decode import effective_log_append_time, records_region
from kseg.log.fast import ACCELERATED, decode_v2_records
from kseg.log.records import batch_records, payload_bytes
from kseg.log.listing import CLEANER_CHECKPOINT, LIVE, LOG_SUFFIX, RUN, reading_groups, replica_kind, replica_note
from kseg.log.segment import Segment, base_offset_of, partition_of
from kseg.log.tails import live_tail
from kseg.model import Batch
from kseg.ops.executors import Operation, execute, here_only, weight_of
from kseg.ops.cuts import cut_points, slice_share
from kseg.storage import VANISHED, ReadError, gone

try:  # the C walk of v2 records (keys into the HLL without building records)
    from kseg.log import _sketch  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - when the extension is not built
    _sketch = None
SKETCH = _sketch if ACCELERATED else None

CONTROL_ABORT, CONTROL_COMMIT = 0, 1
MAX_PROBLEMS = 20
TIMELINE_START_MS = 60_000  # one-minute buckets, doubled while there are more than MAX_BUCKETS
MAX_BUCKETS = 512


class HyperLogLog:
    """Distinct count estimate in 2**p bytes (Flajolet et al. 2007, with the linear-counting
    correction for small counts); 64-bit xxhash of the item. Standard error ~1.04/sqrt(2**p)."""

    def __init__(self, p: int = 14):
        self.p = p
        self.m = 1 << p
        self.registers = bytearray(self.m)

    def add(self, item: bytes) -> None:
        h = xxh64_intdigest(item)
        idx = h >> (64 - self.p)
        rest = h & ((1 << (64 - self.p)) - 1)
        rank = (64 - self.p) - rest.bit_length() + 1
        if rank > self.registers[idx]:
            self.registers[idx] = rank

    def add_many(self, items: list[bytes]) -> None:
        """``add`` for each item, in one loop (the stats hot path)."""
        regs = self.registers
        shift = 64 - self.p
        mask = (1 << shift) - 1
        top = shift + 1
        for h in map(xxh64_intdigest, items):
            idx = h >> shift
            rank = top - (h & mask).bit_length()
            if rank > regs[idx]:
                regs[idx] = rank

    def merge(self, other: "HyperLogLog") -> None:
        """Register-wise maximum; an empty side (an empty segment) costs one C-speed count."""
        theirs = other.registers
        if theirs.count(0) == self.m:
            return
        if self.registers.count(0) == self.m:
            self.registers[:] = theirs
            return
        self.registers = bytearray(map(max, self.registers, theirs))

    def count(self) -> int:
        m = self.m
        zeros = self.registers.count(0)
        if zeros == m:
            return 0
        alpha = 0.7213 / (1 + 1.079 / m)
        z = sum(n * 2.0 ** -v for v, n in Counter(self.registers).items())
        estimate = alpha * m * m / z
        if estimate <= 2.5 * m and zeros:
            estimate = m * math.log(m / zeros)
        return int(round(estimate))


class FrozenCount:
    """What is left of a HyperLogLog once it was merged upwards: its estimate (16 bytes, not 16 KiB)."""

    def __init__(self, n: int):
        self.n = n

    def count(self) -> int:
        return self.n

    def add(self, item: bytes) -> None:
        raise TypeError("a frozen distinct count takes no more keys")

    add_many = add

    def merge(self, other: object) -> None:
        raise TypeError("a frozen distinct count cannot be merged")


class Timeline:
    """Records and bytes per time bucket (by batch max timestamp), in buckets of the narrowest
    width (TIMELINE_START_MS doubled) that holds everything added in at most MAX_BUCKETS, so
    memory stays bounded. That width depends on the data alone, not on the order it came in
    or how it was split: a timeline merged from parts (segments, slices read apart) is the
    one adding everything to a single timeline gives."""

    def __init__(self) -> None:
        self.width = TIMELINE_START_MS
        self.buckets: dict[int, list[int]] = {}

    def add(self, ts: int, records: int, size: int) -> None:
        k = ts // self.width
        b = self.buckets.get(k)
        if b is None:
            while len(self.buckets) >= MAX_BUCKETS and ts // self.width not in self.buckets:
                self._double()
            k = ts // self.width
            b = self.buckets.get(k)
            if b is None:
                b = self.buckets[k] = [0, 0]
        b[0] += records
        b[1] += size

    def _double(self) -> None:
        self.width *= 2
        merged: dict[int, list[int]] = {}
        for k, (r, s) in self.buckets.items():
            m = merged.setdefault(k // 2, [0, 0])
            m[0] += r
            m[1] += s
        self.buckets = merged

    def merge(self, other: "Timeline") -> None:
        o = Timeline()
        o.width, o.buckets = other.width, {k: list(v) for k, v in other.buckets.items()}
        while o.width < self.width:
            o._double()
        while self.width < o.width:
            self._double()
        for k, (r, s) in o.buckets.items():
            b = self.buckets.setdefault(k, [0, 0])
            b[0] += r
            b[1] += s
        while len(self.buckets) > MAX_BUCKETS:
            self._double()

    def points(self) -> list[dict[str, Any]]:
        """Per bucket: start time (ms), records, bytes, records per second."""
        return [{"start": k * self.width, "records": r, "bytes": s, "records_per_second": r * 1000 / self.width}
                for k, (r, s) in sorted(self.buckets.items())]


def _size_bucket(n: int) -> int:
    """Batch size histogram bucket: the power of two at or above n."""
    return 1 << max(n - 1, 0).bit_length()


@dataclass
class Acc:
    """Everything counted for one segment, partition, topic or the whole input."""

    records: int = 0
    batches: int = 0
    bytes: int = 0
    control_batches: int = 0
    bytes_by_codec: dict[str, int] = field(default_factory=dict)
    bytes_by_magic: dict[int, int] = field(default_factory=dict)
    compressed_stored: int = 0  # payload bytes of compressed batches, as stored
    compressed_raw: int = 0  # the same payloads decompressed
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    tombstones: int = 0
    keyless: int = 0
    keyed: int = 0
    keys: HyperLogLog | FrozenCount = field(default_factory=HyperLogLog)
    producers: dict[int, int] = field(default_factory=dict)  # producer id -> batches
    committed: int = 0
    aborted: int = 0
    open_transactions: int = 0
    batch_sizes: dict[int, int] = field(default_factory=dict)  # power-of-two bucket -> batches
    records_per_batch: dict[int, int] = field(default_factory=dict)
    timeline: Timeline = field(default_factory=Timeline)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0

    def freeze(self, timeline: bool = True) -> None:
        """Keep the distinct-key estimate, drop the sketch (and without ``timeline`` the
        time buckets): for a level already merged into the one above, so memory stays
        bounded whatever the number of segments and partitions."""
        if not isinstance(self.keys, FrozenCount):
            self.keys = FrozenCount(self.keys.count())
        if not timeline:
            self.timeline = Timeline()

    def widen_time(self, lo: int | None, hi: int | None) -> None:
        """Take in a smallest and a largest timestamp (None: none seen)."""
        if lo is not None:
            self.min_timestamp = lo if self.min_timestamp is None else min(self.min_timestamp, lo)
        if hi is not None:
            self.max_timestamp = hi if self.max_timestamp is None else max(self.max_timestamp, hi)

    def problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def merge(self, o: "Acc") -> None:
        for name in ("records", "batches", "bytes", "control_batches", "compressed_stored", "compressed_raw",
                     "tombstones", "keyless", "keyed", "committed", "aborted", "open_transactions", "problem_count"):
            setattr(self, name, getattr(self, name) + getattr(o, name))
        for name in ("bytes_by_codec", "bytes_by_magic", "producers", "batch_sizes", "records_per_batch"):
            mine = getattr(self, name)
            for k, v in getattr(o, name).items():
                mine[k] = mine.get(k, 0) + v
        self.widen_time(o.min_timestamp, o.max_timestamp)
        if isinstance(o.keys, FrozenCount) or isinstance(self.keys, FrozenCount):
            raise TypeError("merge before freezing")
        self.keys.merge(o.keys)
        self.timeline.merge(o.timeline)
        self.problems.extend(o.problems[:MAX_PROBLEMS - len(self.problems)])

    @property
    def compression_ratio(self) -> float | None:
        """Decompressed / stored payload bytes of the compressed batches (None: none compressed)."""
        return self.compressed_raw / self.compressed_stored if self.compressed_stored else None

    def compactable(self) -> dict[str, Any]:
        """What the log cleaner would remove, estimated: keyless records and every keyed record
        but the latest per key (tombstones kept: they go only after the delete retention)."""
        distinct = min(self.keys.count(), self.keyed) if self.keyed else 0
        superseded = max(self.keyed - distinct, 0)
        removable = self.keyless + superseded
        return {"records_removable_estimate": removable,
                "fraction_removable_estimate": removable / self.records if self.records else 0.0}

    def as_json(self) -> dict[str, Any]:
        return {
            "records": self.records, "batches": self.batches, "bytes": self.bytes,
            "control_batches": self.control_batches,
            "bytes_by_codec": dict(sorted(self.bytes_by_codec.items())),
            "bytes_by_magic": {str(k): v for k, v in sorted(self.bytes_by_magic.items())},
            "compression_ratio": self.compression_ratio,
            "min_timestamp": self.min_timestamp, "max_timestamp": self.max_timestamp,
            "distinct_keys_estimate": min(self.keys.count(), self.keyed),
            "tombstones": self.tombstones, "keyless": self.keyless,
            "producers": len(self.producers),
            "transactions": {"committed": self.committed, "aborted": self.aborted, "open": self.open_transactions},
            "batch_size_histogram": {str(k): v for k, v in sorted(self.batch_sizes.items())},
            "records_per_batch_histogram": {str(k): v for k, v in sorted(self.records_per_batch.items())},
            "timeline": {"bucket_ms": self.timeline.width, "points": self.timeline.points()},
            "compaction": self.compactable(),
            "problems": self.problems, "problem_count": self.problem_count,
        }


@dataclass
class SegmentStats:
    file: str
    base_offset: int | None
    acc: Acc = field(default_factory=Acc)
    first_offset: int | None = None
    last_offset: int | None = None


@dataclass
class PartitionStats:
    path: str
    topic: str | None
    partition: int | None
    segments: list[SegmentStats] = field(default_factory=list)
    acc: Acc = field(default_factory=Acc)
    first_dirty_offset: int | None = None
    dirty_ratio: float | None = None  # the cleaner's: dirty / (clean + dirty) bytes, active segment left out
    # Segments renamed, deleted, grown or changed during the run (``kseg.log.identity``): not problems.
    notes: list[str] = field(default_factory=list)
    replica: str = LIVE  # a folder the broker renamed (``kseg.log.listing.REPLICA_KINDS``), else LIVE


@dataclass
class TopicStats:
    """A topic's live partitions, or (``replica`` not LIVE) its replicas of one renamed kind."""

    topic: str | None
    partitions: list[PartitionStats] = field(default_factory=list)
    acc: Acc = field(default_factory=Acc)
    replica: str = LIVE


@dataclass
class StatsReport:
    """Per topic; ``acc`` totals the live topics only: a replica being deleted, a stray one or a
    future copy is not more of the topic's data (a future replica repeats a live partition)."""

    topics: list[TopicStats] = field(default_factory=list)
    acc: Acc = field(default_factory=Acc)

    @property
    def replicas(self) -> list[TopicStats]:
        """The rows of renamed replicas, kept out of ``acc``."""
        return [t for t in self.topics if t.replica != LIVE]

    @property
    def ok(self) -> bool:
        return self.acc.problem_count == 0 and all(t.acc.problem_count == 0 for t in self.replicas)


@dataclass(frozen=True)
class StatsOptions:
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    segments: bool = True  # keep per-segment figures
    # The workers the run is spread over: a segment heavier than a share of the work is read
    # in slices (``plan``); the report is the same for any number.
    workers: int = 1


class _Txns:
    """Each producer's transaction state after the batches read: open (True) or ended (False).
    Parts of a partition read apart are put together by taking each producer's latest state."""

    def __init__(self) -> None:
        self.state: dict[int, bool] = {}

    def then(self, later: "_Txns") -> None:
        self.state.update(later.state)

    @property
    def open(self) -> int:
        return sum(self.state.values())


def _control_type(b: Batch, limit: int) -> int | None:
    try:
        records = batch_records(b, limit=limit)
        return control_info(records[0]).type_id if records else None
    except KsegError:
        return None


def _add_batch(acc: Acc, b: Batch, txns: _Txns, limit: int, where: str) -> tuple[int, int]:
    """Count one batch into ``acc``; (first offset, last offset)."""
    size = b.size
    acc.batches += 1
    acc.bytes += size
    codec = b.codec_name
    acc.bytes_by_codec[codec] = acc.bytes_by_codec.get(codec, 0) + size
    acc.bytes_by_magic[b.magic] = acc.bytes_by_magic.get(b.magic, 0) + size
    bucket = _size_bucket(size)
    acc.batch_sizes[bucket] = acc.batch_sizes.get(bucket, 0) + 1
    first = b.offset
    if b.computed_crc() != b.crc:
        acc.problem(f"{where}: at byte {b.position}: crc mismatch (offsets {b.offset}..{b.last_offset})")
    if b.magic >= 2:
        pid = b.producer_id
        if pid is not None and pid >= 0:
            acc.producers[pid] = acc.producers.get(pid, 0) + 1
        if b.is_control:
            acc.control_batches += 1
            acc.records += max(b.record_count or 0, 0)
            ctype = _control_type(b, limit)
            if ctype == CONTROL_COMMIT:
                acc.committed += 1
            elif ctype == CONTROL_ABORT:
                acc.aborted += 1
            if pid is not None:
                txns.state[pid] = False
            return first, b.last_offset
        if b.is_transactional and pid is not None:
            txns.state[pid] = True
    if SKETCH is not None and b.magic >= 2:
        counted = _sketch_batch(acc, b, limit, where)
        if counted is not None:
            return first, b.last_offset
    try:
        if b.magic >= 2 and b.is_compressed:
            data, _ = payload_bytes(b, limit=limit)
            acc.compressed_stored += size - RECORD_BATCH_OVERHEAD
            acc.compressed_raw += len(data)
            assert b.base_timestamp is not None and b.record_count is not None
            records = decode_v2_records(data, b.offset, b.base_timestamp, b.record_count,
                                        effective_log_append_time(b))
        else:
            records = batch_records(b, limit=limit)
            if b.magic < 2 and b.is_compressed:
                acc.compressed_stored += size
                acc.compressed_raw += sum(r_size(r) for r in records)
    except KsegError as e:
        acc.problem(f"{where}: {e}")
        return first, b.last_offset
    n = len(records)
    acc.records += n
    acc.records_per_batch[_size_bucket(n)] = acc.records_per_batch.get(_size_bucket(n), 0) + 1
    if n and b.magic < 2:
        first = records[0].offset
    keys = [r.key for r in records]
    present = [k for k in keys if k is not None]
    keyless = n - len(present)
    if present:
        acc.keys.add_many(present)
        tombstones = sum(1 for r in records if r.value is None and r.key is not None)
    else:
        tombstones = 0
    stamps = [r.timestamp for r in records if r.timestamp >= 0]
    min_ts = min(stamps) if stamps else None
    acc.keyless += keyless
    acc.keyed += n - keyless
    acc.tombstones += tombstones
    if min_ts is not None:
        acc.min_timestamp = min_ts if acc.min_timestamp is None else min(acc.min_timestamp, min_ts)
    if b.timestamp >= 0:
        acc.max_timestamp = b.timestamp if acc.max_timestamp is None else max(acc.max_timestamp, b.timestamp)
        acc.timeline.add(b.timestamp, n, size)
    return first, b.last_offset


def _sketch_batch(acc: Acc, b: Batch, limit: int, where: str) -> int | None:
    """A v2 data batch counted by the C walk (no Record objects); None when the records do
    not parse there (the Python path then decodes them and reports the problem)."""
    count = b.record_count
    assert count is not None and b.base_timestamp is not None
    try:
        if b.is_compressed:
            data: Any = payload_bytes(b, limit=limit)[0]
        else:
            data = records_region(b)
    except KsegError as e:
        acc.problem(f"{where}: {e}")
        return 0
    try:
        keyless, tombstones, min_stamp = SKETCH.v2_stats(data, count, acc.keys.registers, acc.keys.p,
                                                         b.base_timestamp)
    except ValueError:
        return None
    if b.is_compressed:
        acc.compressed_stored += b.size - RECORD_BATCH_OVERHEAD
        acc.compressed_raw += len(data)
    acc.records += count
    bucket = _size_bucket(count)
    acc.records_per_batch[bucket] = acc.records_per_batch.get(bucket, 0) + 1
    acc.keyless += keyless
    acc.keyed += count - keyless
    acc.tombstones += tombstones
    lat = effective_log_append_time(b)
    min_ts = lat if lat is not None else min_stamp
    if min_ts is not None and min_ts >= 0:
        acc.min_timestamp = min_ts if acc.min_timestamp is None else min(acc.min_timestamp, min_ts)
    if b.timestamp >= 0:
        acc.max_timestamp = b.timestamp if acc.max_timestamp is None else max(acc.max_timestamp, b.timestamp)
        acc.timeline.add(b.timestamp, count, b.size)
    return count


def _keyed_sketch(acc: Acc) -> bool:
    """Whether ``acc`` still takes keys (a HyperLogLog, not the estimate it froze into)."""
    return isinstance(acc.keys, HyperLogLog)


def _add_run(acc: Acc, run: StatsRun, part: "StatsPart", active: bool, first_dirty: int | None) -> int:
    """Count a run of v2 batches (``stats_v2_run``) into ``acc`` and ``part`` as ``_add_batch``
    counts each of them; the run's last offset. Per batch only the histograms, producers and
    timeline remain, over the run's columns."""
    rows = memoryview(run.rows).cast("q")
    sizes, counts, stamps = rows[0::STATS_ROW], rows[1::STATS_ROW], rows[2::STATS_ROW]
    pids, lasts, attrs = rows[3::STATS_ROW], rows[4::STATS_ROW], rows[5::STATS_ROW]
    n = len(sizes)
    acc.batches += n
    acc.bytes += run.bytes
    acc.bytes_by_magic[2] = acc.bytes_by_magic.get(2, 0) + run.bytes
    for codec, size in enumerate(run.bytes_by_codec):
        if size:
            name = CODEC_NAMES[codec]
            acc.bytes_by_codec[name] = acc.bytes_by_codec.get(name, 0) + size
    _count_into(acc.batch_sizes, map(_size_bucket, sizes))
    _count_into(acc.records_per_batch, map(_size_bucket, counts))
    _count_into(acc.producers, (pid for pid in pids if pid >= 0))
    state = part.txns.state
    for pid, a in zip(pids, attrs):
        if a & TRANSACTIONAL_MASK:
            state[pid] = True
    acc.records += run.records
    acc.keyless += run.keyless
    acc.keyed += run.records - run.keyless
    acc.tombstones += run.tombstones
    acc.compressed_stored += run.stored
    acc.compressed_raw += run.raw
    acc.widen_time(run.min_timestamp, run.max_timestamp)
    add = acc.timeline.add
    for ts, count, size in zip(stamps, counts, sizes):
        if ts >= 0:
            add(ts, count, size)
    if not active:
        if first_dirty is None:
            part.dirty_bytes += run.bytes
        else:
            clean = sum(size for size, last in zip(sizes, lasts) if last < first_dirty)
            part.clean_bytes += clean
            part.dirty_bytes += run.bytes - clean
    return lasts[-1]


def _count_into(counts: dict[int, int], items: Iterable[int]) -> None:
    for k, v in Counter(items).items():
        counts[k] = counts.get(k, 0) + v


def r_size(r: Any) -> int:
    """A legacy inner message's size as stored in its wrapper's payload (log overhead included)."""
    key = len(r.key) if r.key is not None else 0
    value = len(r.value) if r.value is not None else 0
    return 12 + (14 if r.magic == 0 else 22) + key + value


def stats_partition(segs: list[Path], o: StatsOptions, *, folder: Path | None = None,
                    first_dirty: int | None = None, live: Path | None = None) -> PartitionStats:
    """One partition's figures, its segments read in order (the reference: a partition read in
    parts, ``run``, is put together by ``merge`` into what this gives). ``live``: the segment a
    broker may still be writing (``Group.newest``)."""
    ps = _partition(folder, segs, first_dirty)
    part = _read_segments(segs, o, first_dirty, segs[-1] if segs else None, live=live)
    _finish(ps, [part], o)
    return ps


def _partition(folder: Path | None, segs: list[Path] | tuple[Path, ...], first_dirty: int | None) -> PartitionStats:
    parsed = partition_of(folder) if folder is not None else None
    ps = PartitionStats(str(folder if folder is not None else segs[0]), parsed[0] if parsed else None,
                        parsed[1] if parsed else None, first_dirty_offset=first_dirty,
                        replica=replica_kind(folder.name) if folder is not None else LIVE)
    note = replica_note(folder) if folder is not None else None
    if note:  # a replica the broker renamed: under its topic-partition, and said what it is
        ps.notes.append(note)
    return ps


@dataclass
class StatsPart:
    """What reading some of a partition's segments (or a slice of one) gives, before the
    partition's figures are put together: per segment its figures (``acc`` not yet frozen;
    None: the segment vanished while read), the transaction states, clean and dirty bytes."""

    segments: list[tuple[Path, SegmentStats | None]] = field(default_factory=list)
    txns: _Txns = field(default_factory=_Txns)
    clean_bytes: int = 0
    dirty_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    ends_segment: bool = False  # a slice that read on past its end (``_read_slice``)


def _read_segments(segs: Iterable[Path], o: StatsOptions, first_dirty: int | None, newest: Path | None,
                   start: int = 0, end: int | None = None, *, live: Path | None) -> StatsPart:
    """Segments read whole, in order (or one segment's bytes [start, end): a slice). ``newest``:
    the partition's active segment (the cleaner leaves it); ``live``: the segment a broker may
    still be writing (``Group.newest``)."""
    part = StatsPart()
    for path in segs:
        ss = SegmentStats(str(path), base_offset_of(path))
        try:
            part.ends_segment = _read_into(ss, part, path, o, first_dirty, path == newest, start, end,
                                           live=path == live)
        except ReadError:
            if not gone(path):
                raise
            part.notes.append(f"{path}: {VANISHED}")  # deleted by retention since it was listed
            part.segments.append((path, None))
            continue
        part.segments.append((path, ss))
    return part


def _read_into(ss: SegmentStats, part: StatsPart, path: Path, o: StatsOptions, first_dirty: int | None,
               active: bool, start: int, end: int | None, *, live: bool) -> bool:
    """Count the batches of ``path`` from byte ``start`` (to ``end``) into ``ss`` and ``part``.
    Bytes before ``end`` that are not a batch: read on from there to the file's end, as a whole
    read goes on (True: the segment's later slices hold nothing a whole read would count).
    ``live``: the partition's newest segment, listed from its folder (``kseg.log.tails``)."""
    seg = Segment(path)
    for entries in seg.batch_lists(start=start, end=end):
        count_entries(ss, part, entries, str(path), o.max_decompressed_bytes, active, first_dirty)
    if seg.tail is not None and end is not None:
        _read_into(ss, part, path, o, first_dirty, active, seg.tail.position, None, live=live)
        return True
    part.notes.extend(f"{path}: {note}" for note in seg.notes())
    if seg.tail is not None:
        t = seg.tail
        benign = live_tail(path, t, live)
        if benign is not None:
            part.notes.append(f"{path}: at byte {t.position}: {benign.text}")
        else:
            ss.acc.problem(f"{path}: at byte {t.position}: {t.error.message} ({t.length} bytes unread)")
    return False


def count_entries(ss: SegmentStats, part: "StatsPart", entries: list[Batch], where: str, limit: int,
                  active: bool = True, first_dirty: int | None = None) -> None:
    """Count a scanner list of batches into ``ss`` and ``part``: runs of v2 batches at once in C
    (``stats_v2_run``), the batch that ends a run one by one (``_add_batch``)."""
    acc = ss.acc
    i = 0
    while i < len(entries):
        run = (stats_v2_run(entries, i, acc.keys.registers, acc.keys.p, limit)
               if SKETCH is not None and _keyed_sketch(acc) else None)
        if run is not None and run.stop > i:
            if ss.first_offset is None:
                ss.first_offset = entries[i].offset
            ss.last_offset = _add_run(acc, run, part, active, first_dirty)
            i = run.stop
            continue
        b = entries[i]
        i += 1
        first, last = _add_batch(acc, b, part.txns, limit, where)
        if ss.first_offset is None:
            ss.first_offset = first
        ss.last_offset = last
        if not active:
            if first_dirty is not None and b.last_offset < first_dirty:
                part.clean_bytes += b.size
            else:
                part.dirty_bytes += b.size


def _finish(ps: PartitionStats, parts: Iterable[StatsPart], o: StatsOptions) -> None:
    """A partition's figures from its parts in order: a segment's slices joined into one
    segment, each segment counted into the partition as a whole read counts it."""
    txns = _Txns()
    clean = dirty = 0
    current: tuple[Path, SegmentStats | None] | None = None
    notes: list[str] = []

    def close() -> None:
        if current is None:
            return
        path, ss = current
        if ss is None:
            return  # vanished while read: a note, no figures
        ps.acc.merge(ss.acc)
        ss.acc.freeze(timeline=False)
        if o.segments:
            ps.segments.append(ss)

    for part in parts:
        txns.then(part.txns)
        clean += part.clean_bytes
        dirty += part.dirty_bytes
        notes += [n for n in part.notes if n not in notes]  # a segment's slices may each say it
        for path, ss in part.segments:
            if current is not None and current[0] == path:  # the next slice of the same segment
                current = (path, _joined(current[1], ss))
                continue
            close()
            current = (path, ss)
    close()
    ps.notes.extend(notes)
    ps.acc.open_transactions = txns.open
    total = clean + dirty
    ps.dirty_ratio = dirty / total if total else None


def _joined(a: SegmentStats | None, b: SegmentStats | None) -> SegmentStats | None:
    """A segment's figures from two slices in order (None: it vanished while one was read)."""
    if a is None or b is None:
        return None
    a.acc.merge(b.acc)
    if a.first_offset is None:
        a.first_offset = b.first_offset
    if b.last_offset is not None:
        a.last_offset = b.last_offset
    return a


def _cleaner_checkpoint(root: Path) -> dict[tuple[str, int], int]:
    """A log directory's cleaner-offset-checkpoint: (topic, partition) -> first dirty offset."""
    path = root / CLEANER_CHECKPOINT
    out: dict[tuple[str, int], int] = {}
    if not path.is_file():
        return out
    try:
        lines = path.read_text().split("\n")
        for line in lines[2:]:
            parts = line.split()
            if len(parts) == 3:
                out[(parts[0], int(parts[1]))] = int(parts[2])
    except (OSError, ValueError):
        pass
    return out


def stats_groups(paths: Iterable[Path]) -> list[tuple[Path | None, list[Path], int | None, Path | None]]:
    """(partition folder or None, segments, first dirty offset from the cleaner checkpoint, the
    segment a broker may still be writing), by the one listing rule (``kseg.log.listing``): a
    partition's run with its folder, a file read on its own without one."""
    out: list[tuple[Path | None, list[Path], int | None, Path | None]] = []
    checkpoints: dict[Path, dict[tuple[str, int], int]] = {}
    for g in reading_groups(paths):
        if g.kind != RUN or g.folder is None:
            out.append((None, list(g.files), None, None))
            continue
        parsed = partition_of(g.folder)
        parent = g.folder.parent
        if parent not in checkpoints:
            checkpoints[parent] = _cleaner_checkpoint(parent)
        out.append((g.folder, list(g.files), checkpoints[parent].get(parsed) if parsed else None, g.newest))
    return out


def assemble(partitions: Iterable[PartitionStats]) -> StatsReport:
    """Topics and the total from per-partition figures (also what Spark tasks return); each
    partition's sketch is dropped once merged into its topic. Renamed replicas make rows of their
    own, one per topic and kind, after the live topics, and stay out of the total."""
    report = StatsReport()
    by_topic: dict[tuple[str | None, str], TopicStats] = {}
    for ps in partitions:
        ts = by_topic.get((ps.topic, ps.replica))
        if ts is None:
            ts = by_topic[(ps.topic, ps.replica)] = TopicStats(ps.topic, replica=ps.replica)
            report.topics.append(ts)
        ts.partitions.append(ps)
        ts.acc.merge(ps.acc)
        ps.acc.freeze()
    report.topics.sort(key=lambda t: t.replica != LIVE)  # stable: plan order within live and replicas
    for ts in report.topics:
        if ts.replica == LIVE:
            report.acc.merge(ts.acc)
    return report


def stats_paths(paths: Iterable[Path], o: StatsOptions = StatsOptions(), jobs: int = 1) -> StatsReport:
    """Statistics of files, partition folders and log directories; ``jobs``: worker processes
    (``kseg.ops.executors``), the report the same for any number."""
    return execute(OPERATION, list(paths), o, jobs)


# --------------------------------------------------------------------------- plan / run / merge
#
# Units are partitions (a partition's transactions and producers run across its segments); a
# segment heavier than a share of the work (``StatsOptions.workers``) is read in slices cut at
# checked batch boundaries (``kseg.ops.cuts``), the partition's other segments in units around it. merge
# puts a partition's parts together (``_finish``), then the partitions by topic in plan order
# (``assemble``).


@dataclass(frozen=True)
class StatsUnit:
    """One partition's segments (or a file read on its own), with what the cleaner's
    checkpoint says of it; or a part of one: some of its segments, or a slice of one."""

    folder: Path | None
    segments: tuple[Path, ...]
    first_dirty: int | None
    weight: int = 0  # bytes to read
    local: bool = False  # only this process reads it (``executors.here_only``)
    newest: Path | None = None  # the partition's newest segment (None: the unit's last)
    live: Path | None = None  # the segment a broker may still be writing (``Group.newest``)
    opens: bool = True  # the partition's first unit
    closes: bool = True  # the partition's last unit
    # A slice of segments[0]: bytes [start, end) (end None: to the end), part ``part`` of ``parts``.
    start: int = 0
    end: int | None = None
    part: int = 0
    parts: int = 1

    def __str__(self) -> str:
        return str(self.folder if self.folder is not None else self.segments[0])


@dataclass
class StatsPiece:
    """A part of a partition as ``run`` read it (for ``merge`` to put together)."""

    unit: StatsUnit
    part: StatsPart


def plan(paths: Iterable[Path], o: StatsOptions) -> list[StatsUnit]:
    """The partitions (and lone files) to read, in report order."""
    units = [StatsUnit(folder, tuple(segs), dirty, weight_of(segs), any(here_only(p) for p in segs), live=live)
             for folder, segs, dirty, live in stats_groups(paths)]
    share = slice_share(sum(u.weight for u in units), o.workers)
    return [x for u in units for x in _sliced(u, share)] if share else units


def _sliced(u: StatsUnit, share: int) -> list[StatsUnit]:
    """A partition's unit with each segment heavier than about 1.5 ``share`` bytes cut into
    slices (``kseg.ops.cuts.cut_points``), its other segments in units between them."""
    if u.local or not u.segments:
        return [u]
    out: list[StatsUnit] = []
    newest = u.segments[-1]
    run_from = 0

    def add(**kw: Any) -> None:
        out.append(replace(u, newest=newest, opens=not out, closes=False, **kw))

    for i, path in enumerate(u.segments):
        size = weight_of([path])
        cuts = cut_points(str(path), size, share) if path.suffix == LOG_SUFFIX and size > share * 3 // 2 else []
        if not cuts:
            continue
        if i > run_from:
            add(segments=u.segments[run_from:i], weight=weight_of(u.segments[run_from:i]))
        starts = [0, *cuts]
        ends: list[int | None] = [*cuts, None]
        for k, (a, b) in enumerate(zip(starts, ends)):
            add(segments=(path,), weight=(size if b is None else b) - a, start=a, end=b, part=k, parts=len(starts))
        run_from = i + 1
    if not out:
        return [u]
    if run_from < len(u.segments):
        add(segments=u.segments[run_from:], weight=weight_of(u.segments[run_from:]))
    out[-1] = replace(out[-1], closes=True)
    return out


def run(unit: StatsUnit, o: StatsOptions) -> PartitionStats | StatsPiece:
    """One partition's figures; or a part of one, read for merge to put together."""
    if unit.opens and unit.closes:
        return stats_partition(list(unit.segments), o, folder=unit.folder, first_dirty=unit.first_dirty,
                               live=unit.live)
    newest = unit.newest if unit.newest is not None else unit.segments[-1]
    if unit.parts > 1:
        return StatsPiece(unit, _read_segments(unit.segments, o, unit.first_dirty, newest, unit.start, unit.end,
                                               live=unit.live))
    return StatsPiece(unit, _read_segments(unit.segments, o, unit.first_dirty, newest, live=unit.live))


def merge(partials: Iterable[PartitionStats | StatsPiece], o: StatsOptions) -> StatsReport:
    """Topics and the total, partitions in plan order (a partition's parts put together first)."""
    return assemble(_partitions(partials, o))


def _partitions(partials: Iterable[PartitionStats | StatsPiece], o: StatsOptions) -> Iterator[PartitionStats]:
    parts: list[StatsPart] = []
    done_with: Path | None = None  # the sliced segment whose rest a slice has read
    for p in partials:
        if isinstance(p, PartitionStats):
            yield p
            continue
        u = p.unit
        if u.parts > 1 and u.part > 0 and done_with == u.segments[0]:
            pass  # a whole read never got here: its figures are left out
        else:
            parts.append(p.part)
            done_with = u.segments[0] if u.parts > 1 and p.part.ends_segment else None
        if u.closes:
            ps = _partition(u.folder, u.segments, u.first_dirty)
            _finish(ps, parts, o)
            parts = []
            yield ps


OPERATION = Operation("stats", plan, run, merge)
