"""Planning reads: which segment files, which byte ranges, which filters (the Spark data source's
plan, and the Python API's reads).

An input partition is a *slice*: one segment file, or a byte range of a large one
cut at batch boundaries that its offset index names (each boundary is checked:
a whole entry with a valid CRC must start there, else the index is not trusted).
Topic and partition come from the folder names. Offset, timestamp, topic,
partition and segment conditions prune slices, seek with the offset index and
skip batches before anything is decompressed; records are then filtered exactly.
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.defaults import parse_size as _size
from kseg.errors import InputError
from kseg.log.listing import read_kind
from kseg.log.segment import base_offset_of, expand_inputs, partition_of
from kseg.ops.cuts import cut_points, entry_starts_at, read_index
from kseg.storage import size_of

DEFAULT_SPLIT_BYTES = 128 * 1024 * 1024
_LOG_KINDS = ("log", "checkpoint")


@dataclass(frozen=True)
class SegmentFile:
    path: str
    topic: str | None
    partition: int | None
    size: int
    base_offset: int | None
    next_base: int | None = None  # the next segment's base offset in the same partition folder


@dataclass(frozen=True)
class Slice:
    """What one Spark task reads: ``path`` bytes [start, end) (end None: to the end)."""

    path: str
    topic: str | None
    partition: int | None
    start: int = 0
    end: int | None = None
    base_offset: int | None = None

    @property
    def final(self) -> bool:
        return self.end is None


def _is_log(path: Path) -> bool:
    return read_kind(path, strict=True) in _LOG_KINDS


def list_segments(paths: Iterable[str | os.PathLike]) -> list[SegmentFile]:
    """The segment files under files, partition folders and log directories, in kseg's order."""
    files = expand_inputs(list(paths))
    out: list[SegmentFile] = []
    for p in files:
        if not _is_log(p):
            continue
        parsed = partition_of(p.parent)
        topic, partition = parsed if parsed else (None, None)
        out.append(SegmentFile(str(p), topic, partition, p.stat().st_size, base_offset_of(p)))
    # Each segment's offset range ends where the next one of its folder begins (Kafka's naming).
    for i, seg in enumerate(out[:-1]):
        nxt = out[i + 1]
        if (Path(nxt.path).parent == Path(seg.path).parent and seg.base_offset is not None
                and nxt.base_offset is not None and nxt.base_offset > seg.base_offset):
            out[i] = SegmentFile(seg.path, seg.topic, seg.partition, seg.size, seg.base_offset, nxt.base_offset)
    return out


def split_segment(seg: SegmentFile, split_bytes: int) -> list[Slice]:
    """One slice per ``split_bytes`` (about), cut at index-named, checked batch boundaries."""
    starts = [0, *cut_points(seg.path, seg.size, split_bytes)]
    ends: list[int | None] = [*starts[1:], None]
    return [Slice(seg.path, seg.topic, seg.partition, a, b, seg.base_offset) for a, b in zip(starts, ends)]


# --------------------------------------------------------------------------- filters


INT_COLUMNS = ("offset", "timestamp", "partition")
STR_COLUMNS = ("topic", "segment")


@dataclass
class Conditions:
    """ANDed conditions kseg applies itself (pushed-down filters and reader options)."""

    offset_lo: int | None = None
    offset_hi: int | None = None
    offset_in: frozenset | None = None
    time_lo: int | None = None
    time_hi: int | None = None
    time_in: frozenset | None = None
    topics: frozenset | None = None
    partitions: frozenset | None = None
    segments: frozenset | None = None
    partition_lo: int | None = None
    partition_hi: int | None = None

    def add(self, column: str, op: str, value: Any) -> bool:
        """Record ``column op value``; False if it is not one kseg can apply exactly."""
        if op == "in":
            values = tuple(value)
            if not values or any(v is None for v in values):
                return False
        else:
            values = (value,)
        if column in INT_COLUMNS and not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return False
        if column in STR_COLUMNS and not all(isinstance(v, str) for v in values):
            return False
        if column == "offset":
            self.offset_lo, self.offset_hi, self.offset_in = _narrow(
                self.offset_lo, self.offset_hi, self.offset_in, op, values)
        elif column == "timestamp":
            self.time_lo, self.time_hi, self.time_in = _narrow(self.time_lo, self.time_hi, self.time_in, op, values)
        elif column == "partition":
            if op in ("=", "in"):
                self.partitions = _intersect(self.partitions, values)
            else:
                self.partition_lo, self.partition_hi, _ = _narrow(self.partition_lo, self.partition_hi, None,
                                                                  op, values)
        elif column == "topic" and op in ("=", "in"):
            self.topics = _intersect(self.topics, values)
        elif column == "segment" and op in ("=", "in"):
            self.segments = _intersect(self.segments, values)
        else:
            return False
        return True

    @property
    def filters_records(self) -> bool:
        return any(v is not None for v in (self.offset_lo, self.offset_hi, self.offset_in,
                                           self.time_lo, self.time_hi, self.time_in))

    def keeps_slice(self, s: Slice | SegmentFile, next_base: int | None = None) -> bool:
        if self.topics is not None and s.topic not in self.topics:
            return False
        if self.partitions is not None and s.partition not in self.partitions:
            return False
        if self.partition_lo is not None and (s.partition is None or s.partition < self.partition_lo):
            return False
        if self.partition_hi is not None and (s.partition is None or s.partition > self.partition_hi):
            return False
        if self.segments is not None and s.path not in self.segments:
            return False
        # A segment holds offsets from its name's base up to the next segment's (Kafka's naming).
        if self.offset_hi is not None and s.base_offset is not None and s.base_offset > self.offset_hi:
            return False
        if self.offset_lo is not None and next_base is not None and next_base <= self.offset_lo:
            return False
        return True

    def offset_ok(self, o: int) -> bool:
        return ((self.offset_lo is None or o >= self.offset_lo) and (self.offset_hi is None or o <= self.offset_hi)
                and (self.offset_in is None or o in self.offset_in))

    def time_ok(self, t: int) -> bool:
        return ((self.time_lo is None or t >= self.time_lo) and (self.time_hi is None or t <= self.time_hi)
                and (self.time_in is None or t in self.time_in))

    def record_ok(self, offset: int, timestamp: int) -> bool:
        return self.offset_ok(offset) and self.time_ok(timestamp)


def _narrow(lo, hi, members, op, values):
    if op == "=":
        lo = values[0] if lo is None else max(lo, values[0])
        hi = values[0] if hi is None else min(hi, values[0])
    elif op == ">":
        lo = values[0] + 1 if lo is None else max(lo, values[0] + 1)
    elif op == ">=":
        lo = values[0] if lo is None else max(lo, values[0])
    elif op == "<":
        hi = values[0] - 1 if hi is None else min(hi, values[0] - 1)
    elif op == "<=":
        hi = values[0] if hi is None else min(hi, values[0])
    elif op == "in":
        members = _intersect(members, values)
        lo = min(values) if lo is None else max(lo, min(values))
        hi = max(values) if hi is None else min(hi, max(values))
    return lo, hi, members


def _intersect(current: frozenset | None, values: Iterable) -> frozenset:
    new = frozenset(values)
    return new if current is None else current & new


def plan_slices(paths: Iterable[str], split_bytes: int, cond: Conditions | None = None) -> list[Slice]:
    segs = list_segments(paths)
    out: list[Slice] = []
    for seg in segs:
        if cond is not None and not cond.keeps_slice(seg, seg.next_base):
            continue
        out.extend(split_segment(seg, split_bytes))
    return out


MIN_PARTITION_BYTES = 32 * 1024 * 1024
OPEN_COST_BYTES = 256 * 1024


def slice_size(s: Slice) -> int:
    if s.end is not None:
        return s.end - s.start
    try:
        return size_of(s.path) - s.start
    except OSError:
        return 0


def pack_slices(slices: list[Slice], split_bytes: int, min_partition_bytes: int = MIN_PARTITION_BYTES,
                parallelism: int | None = None) -> list[list[Slice]]:
    """Consecutive slices grouped into input partitions (a Python task has a fixed cost of tens
    of milliseconds, so small segments share one): about total / (2 x parallelism) bytes each, at
    least ``min_partition_bytes`` and at most ``split_bytes``, counting each file as
    ``OPEN_COST_BYTES`` more than its size. Order is kept, so rows come in kseg dump's order."""
    if not slices:
        return []
    if min_partition_bytes <= 0:
        return [[s] for s in slices]
    sizes = [slice_size(s) + OPEN_COST_BYTES for s in slices]
    total = sum(sizes)
    par = parallelism or os.cpu_count() or 1
    target = max(min_partition_bytes, total / (2 * par))
    if split_bytes > 0:
        target = min(target, split_bytes)
    groups: list[list[Slice]] = [[]]
    load = 0
    for s, size in zip(slices, sizes):
        if groups[-1] and load + size > target:
            groups.append([])
            load = 0
        groups[-1].append(s)
        load += size
    return groups


def seek_range(s: Slice, cond: Conditions | None) -> tuple[int, int | None]:
    """Narrow a slice's byte range with the offset index for offset conditions (checked boundaries)."""
    start, end = s.start, s.end
    if cond is None or (cond.offset_lo is None and cond.offset_hi is None):
        return start, end
    size = size_of(s.path)
    entries = read_index(s.path, size)
    if not entries:
        return start, end
    if cond.offset_lo is not None:
        # Entry (O, P): an append starting at P ends at O, so every batch before P has
        # offsets below O. Start at the last entry with O <= lo.
        i = bisect.bisect_right(entries.relative, cond.offset_lo - entries.base) - 1
        if i >= 0:
            off, pos = entries[i]
            if pos > start and (end is None or pos < end) and entry_starts_at(s.path, pos, size, off):
                start = pos
            elif end is not None and pos >= end and entry_starts_at(s.path, pos, size, off):
                return end, end  # the whole slice is below lo
    if cond.offset_hi is not None:
        # Batches at or after entry i+1's position have offsets above O_i.
        i = bisect.bisect_left(entries.relative, cond.offset_hi - entries.base)
        if i + 1 < len(entries):
            off, pos = entries[i + 1]
            if (end is None or pos < end) and entry_starts_at(s.path, pos, size, off):
                end = max(pos, start)
    return start, end


@dataclass
class ReadOptions:
    level: str = "records"
    split_bytes: int = DEFAULT_SPLIT_BYTES
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    mode: str = "failfast"  # or "dropmalformed": skip batches that do not decode
    arrow: bool = True
    max_records_per_batch: int = 16384
    min_partition_bytes: int = MIN_PARTITION_BYTES
    columns: list[str] | None = None  # only these columns (a projection kseg does itself)
    paths: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, options: Any) -> "ReadOptions":
        import json

        def get(name: str, default: Any = None) -> Any:
            v = options.get(name)
            return default if v is None else v

        paths: list[str] = []
        if get("paths"):
            raw = get("paths")
            try:
                loaded = json.loads(raw)
                paths = [str(p) for p in (loaded if isinstance(loaded, list) else [loaded])]
            except ValueError:
                paths = [p for p in str(raw).split(",") if p]
        if get("path"):
            paths.append(str(get("path")))
        if not paths:
            raise InputError("give a path: spark.read.format('kseg').load(PATH)")
        level = str(get("level", "records")).lower()
        if level not in ("records", "batches"):
            raise InputError(f"option level: records or batches, not {level!r}")
        mode = str(get("mode", "failfast")).lower()
        if mode not in ("failfast", "dropmalformed"):
            raise InputError(f"option mode: failfast or dropmalformed, not {mode!r}")
        return cls(
            level=level,
            split_bytes=_size(get("splitBytes", DEFAULT_SPLIT_BYTES)),
            max_decompressed_bytes=_size(get("maxDecompressedBytes", DEFAULT_MAX_DECOMPRESSED_BYTES)),
            mode=mode,
            arrow=str(get("arrow", "true")).lower() not in ("false", "0", "no"),
            max_records_per_batch=int(get("maxRecordsPerBatch", 16384)),
            min_partition_bytes=_size(get("minPartitionBytes", MIN_PARTITION_BYTES)),
            columns=[c.strip() for c in str(get("columns")).split(",") if c.strip()] if get("columns") else None,
            paths=paths,
        )


def option_conditions(options: Any) -> Conditions:
    """Conditions from reader options (fromOffset, toOffset, fromTime, toTime, topics, partitions)."""
    c = Conditions()
    for name, column, op in (("fromOffset", "offset", ">="), ("toOffset", "offset", "<="),
                             ("fromTime", "timestamp", ">="), ("toTime", "timestamp", "<=")):
        v = options.get(name)
        if v is not None:
            c.add(column, op, int(v))
    topics = options.get("topics")
    if topics:
        c.add("topic", "in", tuple(t.strip() for t in str(topics).split(",") if t.strip()))
    parts = options.get("partitions")
    if parts:
        c.add("partition", "in", tuple(int(p) for p in str(parts).split(",") if p.strip()))
    return c
