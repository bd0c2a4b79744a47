"""The ``find`` operation: the records that match, across files, partitions and log directories.

Batches are ruled out before their records are decoded wherever the filters allow (each
batch read is checked first: its CRC, as verify checks it, whether it is then decoded or not): by
offset and time (the ``.index`` and ``.timeindex`` seek to the first batch that can
match; whole segments are skipped by name and by their largest timestamp), by producer
id and the transactional flag (batch header), and for uncompressed batches by looking
for the key's (and header's) bytes in the batch before decoding it. Kafka's default
partitioner (``murmur2``) picks the one partition a key can be in. Returns data.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Generator, Iterable, Iterator, NamedTuple

from kseg.companions.read import read_offset_index, read_time_index
from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import InputError, KsegError
from kseg.log.checks import header_errors
from kseg.log.listing import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, reading_groups
from kseg.log.records import batch_records, payload_bytes
from kseg.log.segment import (
    Segment,
    base_offset_of,
    companion_path,
    partition_of,
)
from kseg.log.tails import live_tail
from kseg.model import Batch, Record
from kseg.ops.executors import Operation, execute, here_only, weight_of
from kseg.ops.cuts import cut_points, slice_share
from kseg.ops.spool import Spool, Spooled
from kseg.storage import VANISHED, ReadError, as_path, gone

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (MurmurHash2, seed 0x9747b28c) as a signed 32-bit int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    end4 = length & ~3
    for i in range(0, end4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    left = length & 3
    if left == 3:
        h ^= data[end4 + 2] << 16
    if left >= 2:
        h ^= data[end4 + 1] << 8
    if left >= 1:
        h ^= data[end4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner gives a keyed record: toPositive(murmur2) % n."""
    if partitions <= 0:
        raise InputError("the number of partitions must be positive", found=partitions)
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@dataclass(frozen=True)
class FindOptions:
    key: bytes | None = None
    key_regex: str | None = None
    value_regex: str | None = None
    header: str | None = None  # NAME or NAME=VALUE
    producer_id: int | None = None
    transactional: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    topic: str | None = None  # only this topic's partitions (by their folders' names)
    partitioner_topic: str | None = None  # with partitions: only the key's partition
    partitions: int | None = None
    use_indexes: bool = True
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    # The workers the search is spread over: a segment heavier than a share of the work is
    # searched in slices (``plan``); the matches and figures are the same for any number.
    workers: int = 1


@dataclass(frozen=True)
class Match:
    topic: str | None
    partition: int | None
    file: str
    batch: Batch
    record: Record


@dataclass
class FindStats:
    segments: int = 0
    segments_skipped: int = 0  # by name, or by the time index's largest timestamp
    seeks: int = 0  # segments entered at an index position instead of byte 0
    batches: int = 0
    batches_skipped: int = 0  # ruled out from the header or the raw bytes, never decoded
    records: int = 0  # records decoded and tested
    matches: int = 0
    problems: list[str] = field(default_factory=list)
    partitions: list[str] = field(default_factory=list)  # scanned
    # Segments renamed, deleted, grown or changed during the run (``kseg.log.identity``): not problems.
    notes: list[str] = field(default_factory=list)

    def absorb(self, other: "FindStats") -> None:
        """Add another part's figures (the next partitions in plan order)."""
        for name in ("segments", "segments_skipped", "seeks", "batches", "batches_skipped", "records", "matches"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.problems += other.problems
        self.partitions += other.partitions
        self.notes += other.notes


class _Filter:
    def __init__(self, o: FindOptions):
        self.o = o
        self.key_re = re.compile(o.key_regex.encode()) if o.key_regex else None
        self.value_re = re.compile(o.value_regex.encode()) if o.value_regex else None
        self.header_name: str | None = None
        self.header_value: bytes | None = None
        if o.header is not None:
            name, eq, value = o.header.partition("=")
            self.header_name = name
            self.header_value = value.encode() if eq else None
        needles = []
        if o.key:
            needles.append(o.key)
        if self.header_name:
            needles.append(self.header_name.encode())
        if self.header_value:
            needles.append(self.header_value)
        self.needles = needles

    def batch_may_match(self, b: Batch) -> bool:
        o = self.o
        if b.is_control:
            return False
        if o.producer_id is not None and b.producer_id != o.producer_id:
            return False
        if o.transactional and not b.is_transactional:
            return False
        if o.to_offset is not None and b.offset > o.to_offset and (b.magic >= 2 or not b.is_compressed):
            return False  # (a legacy wrapper's offset is its last inner one)
        if o.from_offset is not None and b.last_offset < o.from_offset:
            return False
        if o.from_time is not None and b.magic > 0 and b.timestamp < o.from_time:
            return False  # the batch's max timestamp is below the range
        if self.needles and not b.is_compressed:
            return self.bytes_may_match(bytes(b.raw))  # (a memoryview's "in" looks for one byte value)
        return True

    def bytes_may_match(self, data: bytes) -> bool:
        """Whether records stored in ``data`` may match: every needle (the key, the header's name
        and value) is somewhere in it."""
        return all(n in data for n in self.needles)

    def record_matches(self, r: Record) -> bool:
        o = self.o
        if o.from_offset is not None and r.offset < o.from_offset:
            return False
        if o.to_offset is not None and r.offset > o.to_offset:
            return False
        if o.from_time is not None and r.timestamp < o.from_time:
            return False
        if o.to_time is not None and (r.timestamp < 0 or r.timestamp > o.to_time):
            return False
        if o.key is not None and r.key != o.key:
            return False
        if self.key_re is not None and (r.key is None or not self.key_re.search(r.key)):
            return False
        if self.value_re is not None and (r.value is None or not self.value_re.search(r.value)):
            return False
        if self.header_name is not None:
            for h in r.headers:
                if h.key == self.header_name and (self.header_value is None or h.value == self.header_value):
                    break
            else:
                return False
        return True


class PartitionGroup(NamedTuple):
    """A partition's files to search (or a file read on its own)."""

    topic: str | None
    partition: int | None
    files: list[Path]
    newest: Path | None  # the segment a broker may still be writing (``Group.newest``)


def partition_groups(paths: list[Path]) -> list[PartitionGroup]:
    """Each group the one listing rule gives (``kseg.log.listing``): a partition's run, or a file
    read on its own (its topic and partition from its folder's name)."""
    out: list[PartitionGroup] = []
    for g in reading_groups(paths):
        folder = g.folder if g.folder is not None else g.files[0].parent
        parsed = partition_of(folder)
        out.append(PartitionGroup(parsed[0] if parsed else None, parsed[1] if parsed else None, list(g.files),
                                  g.newest))
    return out


def _start_position(path: Path, o: FindOptions, rolled: bool) -> int | None:
    """Where to start reading a segment (None: skip it), from its indexes, as the broker's
    fetch by offset and by timestamp use them."""
    base = base_offset_of(path)
    if not o.use_indexes or base is None or path.suffix != LOG_SUFFIX:
        return 0
    target = o.from_offset
    if o.from_time is not None:
        tpath = companion_path(path, TIME_INDEX_SUFFIX)
        entries = []
        if tpath.is_file():
            try:
                entries = read_time_index(tpath, base).entries
            except KsegError:
                entries = []
        # Entry (T, O): the largest timestamp up to the batch ending at O is T. A rolled
        # segment's last entry is its largest timestamp (written at roll).
        if rolled and entries and entries[-1].timestamp < o.from_time:
            return None
        below = [e for e in entries if e.timestamp < o.from_time]
        if below:
            target = max(target or 0, below[-1].offset + 1)
    if target is None or target <= base:
        return 0
    ipath = companion_path(path, INDEX_SUFFIX)
    if not ipath.is_file():
        return 0
    try:
        idx = read_offset_index(ipath, base).entries
    except KsegError:
        return 0
    pos = 0
    for e in idx:
        if e.offset >= target:
            break
        # Entry (O, P): the batches holding offsets above O start at or after P.
        pos = max(pos, e.position)
    return pos


def find(paths: list[Path], o: FindOptions, st: FindStats | None = None, jobs: int = 1) -> Iterator[Match]:
    """Yield the matching records in partition and offset order; ``st`` collects what was read.
    ``jobs`` > 1: partitions searched by worker processes (``kseg.ops.executors``), the matches
    and ``st`` the same as one process gives; a partition's matches are spooled to a temporary
    folder that is gone when the search ends, however it ends."""
    st = st if st is not None else FindStats()
    if jobs <= 1:  # the reference: matches stream out as they are found
        yield from find_in_groups(select_groups(partition_groups([as_path(p) for p in paths]), o), o, st)
        return
    with tempfile.TemporaryDirectory(prefix="kseg-find-") as spool:
        yield from matches_of(execute(OPERATION, (paths, spool), o, jobs), st)


def matches_of(merged: Iterable[Match | FindStats], st: FindStats) -> Iterator[Match]:
    """The matches of a merged search (``merge``: processes or Spark), its figures added to ``st``,
    so that every executor's search is shown as the one-process search is."""
    for item in merged:
        if isinstance(item, FindStats):
            st.absorb(item)
        else:
            yield item


def select_groups(groups: list[PartitionGroup], o: FindOptions) -> list[PartitionGroup]:
    """The partitions to scan: all, or those of ``o.topic``, or with the partitioner the one the key
    belongs to. A topic that no partition has is an InputError naming the topics there are."""
    for topic in {o.topic, o.partitioner_topic} - {None}:
        present = sorted({g[0] for g in groups if g[0] is not None})
        groups = [g for g in groups if g[0] == topic]
        if not groups:
            there = (f"the topics there: {', '.join(present)}" if present
                     else "no <topic>-<n> partition folder is there, so no record has a topic")
            raise InputError(f"--topic {topic}: no partition of this topic under the paths given ({there})")
    if o.partitioner_topic is not None:
        if o.key is None or o.partitions is None:
            raise InputError("--partitioner needs --key and --partitions")
        want = default_partition(o.key, o.partitions)
        groups = [g for g in groups if g[0] == o.partitioner_topic and g[1] == want]
        if not groups:
            raise InputError(f"partition {o.partitioner_topic}-{want} (where the default partitioner puts "
                             f"the key) is not under the paths given")
    return groups


def find_in_groups(groups: list[PartitionGroup], o: FindOptions, st: FindStats) -> Iterator[Match]:
    """``find`` over partitions already chosen."""
    for g in groups:
        yield from _search(FindUnit(g.topic, g.partition, tuple(g.files), None, newest=g.newest), o, st)


def _search(u: "FindUnit", o: FindOptions, st: FindStats) -> Generator[Match, None, bool]:
    """One unit's matches: its files in order, or its slice of one segment. Returns whether
    the unit read its segment to the end of what a whole read would read (a slice that met
    damage or a stop: merge leaves out the segment's later slices)."""
    flt = _Filter(o)
    limit = o.max_decompressed_bytes
    if u.opens:
        st.partitions.append(f"{u.topic}-{u.partition}" if u.topic is not None else str(u.files[0]))
    for i, path in enumerate(u.files):
        lead = u.part == 0  # a sliced segment is counted once, by its first slice
        if lead:
            st.segments += 1
        after = u.files[i + 1] if i + 1 < len(u.files) else u.after
        nxt = base_offset_of(after) if after is not None else None
        start = None if _skipped(path, o, nxt) else _start_position(path, o, rolled=nxt is not None)
        if start is None:
            if lead:
                st.segments_skipped += 1
            continue
        live = path == u.newest
        if u.parts == 1:
            yield from _scan(path, start, u.topic, u.partition, o, flt, st, limit, live=live)
        elif u.end is not None and start >= u.end:
            return False  # the whole read starts in a later slice
        elif start >= u.start:  # the whole read starts in this slice
            return (yield from _scan(path, start, u.topic, u.partition, o, flt, st, limit, end=u.end, live=live))
        else:
            return (yield from _scan(path, u.start, u.topic, u.partition, o, flt, st, limit, end=u.end,
                                     fresh=False, live=live))
    return False


def _skipped(path: Path, o: FindOptions, nxt: int | None) -> bool:
    """A segment the offset range rules out by its name and the next segment's."""
    if not (o.use_indexes and path.suffix == LOG_SUFFIX):
        return False
    base = base_offset_of(path)
    return ((o.from_offset is not None and nxt is not None and nxt <= o.from_offset)
            or (o.to_offset is not None and base is not None and base > o.to_offset))


def _scan(path: Path, start: int, topic: str | None, partition: int | None, o: FindOptions, flt: _Filter,
          st: FindStats, limit: int, end: int | None = None, fresh: bool = True,
          counted: bool = False, live: bool = False) -> Generator[Match, None, bool]:
    """A segment's matches from byte ``start``: where its index seek landed (``fresh``; ``counted``:
    the seek is already in ``st``), or a slice's start (a checked batch boundary) up to ``end``.
    Returns whether the read went past ``end`` or stopped the segment (see ``_search``). ``live``:
    the partition's newest segment, listed from its folder (``kseg.log.tails``)."""
    seg = Segment(path)
    if start and fresh and not counted:
        st.seeks += 1
    first, stopped = fresh, False
    try:
        for b in seg.batches(start=start, end=end):
            first = False
            st.batches += 1
            if o.to_offset is not None and b.offset > o.to_offset and b.magic >= 2:
                stopped = True
                break  # offsets only grow in a partition
            # Checked before it is ruled out: what rules it out (its flags, producer, timestamps,
            # the bytes a key would be in) is what a CRC that does not match says cannot be trusted.
            damage = header_errors(b, str(path))
            if damage:  # a record of a damaged batch is no match to report: the damage is
                st.problems.append(str(damage[0]))
                continue
            if not flt.batch_may_match(b):
                st.batches_skipped += 1
                continue
            payload = None
            if flt.needles and b.is_compressed:
                # What the records hold is in the decompressed bytes: none of them can match where
                # a needle is not there, so they need no decoding.
                try:
                    payload = payload_bytes(b, limit=limit)[0]
                except KsegError:
                    payload = None  # batch_records says what is wrong, as without the needles
                else:
                    if not flt.bytes_may_match(payload):
                        st.batches_skipped += 1
                        continue
            try:
                records = batch_records(b, limit=limit, payload=payload)
            except KsegError as e:
                st.problems.append(str(e.located(file=str(path))))
                continue
            st.records += len(records)
            for r in records:
                if flt.record_matches(r):
                    st.matches += 1
                    yield Match(topic, partition, str(path), b, r)
    except ReadError:
        if not gone(path):
            raise
        st.notes.append(f"{path}: {VANISHED}")  # deleted by retention since it was listed
        return True
    if seg.tail is not None:
        if end is not None:
            # Not a batch before the slice's end (damage, or a batch that runs past the end): a whole
            # read goes on from there, still as a seek if nothing was read since it landed.
            yield from _scan(path, seg.tail.position, topic, partition, o, flt, st, limit,
                             fresh=fresh and first, counted=True, live=live)
            return True
        if start and first:
            # The index pointed somewhere that is not a batch: read the segment from its start.
            yield from _scan(path, 0, topic, partition, o, flt, st, limit, live=live)
            return True
        benign = live_tail(path, seg.tail, live)
        if benign is not None:
            st.notes.append(f"{path}: at byte {seg.tail.position}: {benign.text}")
        else:
            st.problems.append(str(seg.tail.error))
    st.notes.extend(f"{path}: {note}" for note in seg.notes())
    return stopped


# --------------------------------------------------------------------------- plan / run / merge
#
# Units are partitions; a segment heavier than a share of the work (``FindOptions.workers``) is
# searched in slices cut at checked batch boundaries (``kseg.ops.cuts``), the partition's other segments in
# units around them. A unit's matches are spooled (``kseg.ops.spool``) with the batch's bytes
# left behind (what a match shows is the batch's header fields); merge yields them in plan order,
# then the figures of the whole search. An error a unit met is raised after the matches it had
# found, where the single-process search would have stopped.


@dataclass(frozen=True)
class FindUnit:
    topic: str | None
    partition: int | None
    files: tuple[Path, ...]
    spool: str | None  # the folder its matches are spooled to (None: they stay in memory)
    newest: Path | None = None  # the segment a broker may still be writing (``PartitionGroup``)
    weight: int = 0
    local: bool = False
    after: Path | None = None  # the partition's segment after the unit's last file (None: none)
    opens: bool = True  # the partition's first unit (names it in the figures)
    # A slice of files[0]: bytes [start, end) (end None: to the end), part ``part`` of ``parts``.
    start: int = 0
    end: int | None = None
    part: int = 0
    parts: int = 1


@dataclass
class FindPartial:
    stats: FindStats
    matches: Spooled
    error: BaseException | None = None
    unit: FindUnit | None = None
    ends_segment: bool = False  # a slice that read what the segment's later slices hold (``_search``)


def plan(inputs: tuple[list[Path], str | None], o: FindOptions) -> list[FindUnit]:
    """The partitions to search (``select_groups``), each with where to spool its matches
    (a folder every worker and the merging process share, or None: in memory)."""
    paths, spool = inputs
    units = []
    for g in select_groups(partition_groups([as_path(p) for p in paths]), o):
        units.append(FindUnit(g.topic, g.partition, tuple(g.files), spool, g.newest, weight_of(g.files),
                              any(here_only(f) for f in g.files)))
    share = slice_share(sum(u.weight for u in units), o.workers)
    return [s for u in units for s in _sliced(u, share)] if share else units


def _sliced(u: FindUnit, share: int) -> list[FindUnit]:
    """A partition's unit with each segment heavier than about 1.5 ``share`` bytes cut into
    slices (``kseg.ops.cuts.cut_points``), its other segments in units between them."""
    if u.local:
        return [u]
    out: list[FindUnit] = []
    run_from = 0

    def files_unit(files: tuple[Path, ...], after: Path | None) -> None:
        if files:
            out.append(replace(u, files=files, weight=weight_of(files), after=after, opens=not out))

    for i, path in enumerate(u.files):
        size = weight_of([path])
        cuts = cut_points(str(path), size, share) if path.suffix == LOG_SUFFIX and size > share * 3 // 2 else []
        if not cuts:
            continue
        files_unit(u.files[run_from:i], path)
        after = u.files[i + 1] if i + 1 < len(u.files) else u.after
        starts = [0, *cuts]
        ends: list[int | None] = [*cuts, None]
        for k, (a, b) in enumerate(zip(starts, ends)):
            out.append(replace(u, files=(path,), weight=(size if b is None else b) - a, after=after, opens=not out,
                               start=a, end=b, part=k, parts=len(starts)))
        run_from = i + 1
    files_unit(u.files[run_from:], u.after)
    return out


def run(unit: FindUnit, o: FindOptions) -> FindPartial:
    """One partition (or a part of one) searched; its matches spooled without the batches' bytes."""
    st, spool, error, ended = FindStats(), Spool(unit.spool), None, False
    try:
        found = _search(unit, o, st)
        while True:
            m = next(found)
            spool.add(dataclasses.replace(m, batch=m.batch._replace(raw=b"")))
    except StopIteration as stop:
        ended = bool(stop.value)
    except (KsegError, OSError) as e:
        error = e
    return FindPartial(st, spool.done(), error, unit, ended)


def merge(partials: Iterable[FindPartial], o: FindOptions) -> Iterator[Match | FindStats]:
    """The matches in plan order, then the figures of the whole search. A slice after one that
    read the rest of its segment is left out: the whole read never got there."""
    total = FindStats()
    done_with: Path | None = None  # the sliced segment whose rest a slice has read
    for p in partials:
        u = p.unit
        assert u is not None
        if u.parts > 1 and u.part > 0 and done_with == u.files[0]:
            p.matches.discard()
            p.stats = FindStats()  # none of the search's figures (a report per unit shows none)
            continue
        done_with = u.files[0] if u.parts > 1 and p.ends_segment else None
        yield from p.matches
        total.absorb(p.stats)
        if p.error is not None:
            yield total
            raise p.error
    yield total


OPERATION = Operation("find", plan, run, merge, streams=True)
