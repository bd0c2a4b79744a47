"""The ``diff`` operation: two copies of the same partition (two replicas, a backup and the
live folder), compared batch by batch from their headers and stored CRCs.

Equal batches are never decompressed: two batches are the same when their offsets, size,
magic, leader epoch and stored CRC are (the CRC covers everything else). A legacy (v0/v1)
compressed wrapper is the exception: its header names only its last offset, so its inner
messages are read for its first offset and its record count. The first batch
that differs is where the copies diverge; what follows on each side is reported as offset
ranges, with the leader epochs on both sides (from the batches and the
``leader-epoch-checkpoint``) so that a truncated follower or an unclean leader election shows
as what it is. ``records`` lists the records that differ after that point. Returns data.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from kseg.companions.read import read_leader_epoch_checkpoint
from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import InputError, KsegError
from kseg.facts.log_entry import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.log.fast import scan_entries
from kseg.log.records import batch_records
from kseg.log.listing import FILE, LEADER_EPOCH_FILE, LOG_DIR, PARTITION, list_input, parse_partition_dir
from kseg.log.decode import Tail, header_batch
from kseg.log.entry_walk import LARGE_ENTRY_BYTES, WALK_READ_BYTES
from kseg.log.segment import STEP_ENTRIES, Segment
from kseg.log.tails import live_tail
from kseg.model import Batch, Record
from kseg.ops.executors import Operation, execute, here_only, weight_of
from kseg.storage import VANISHED, as_path, cannot_read, gone

WINDOW = 8 << 20  # bytes read at a time
IDENTICAL = "identical"
BEHIND = "behind"  # one side is a prefix of the other (a truncated follower, an older backup)
DIVERGED = "diverged"  # both sides hold different batches from one offset on
START = "start"  # the same data, but one side starts later (retention or deleteRecords)
MISSING = "missing"  # the partition exists on one side only


@dataclass
class Range:
    first: int
    last: int
    batches: int = 0
    records: int = 0

    def add(self, e: "Entry") -> None:
        self.last = max(self.last, e.last)
        self.batches += 1
        self.records += e.count


@dataclass
class Side:
    path: str
    first_offset: int | None = None
    next_offset: int | None = None
    batches: int = 0
    records: int = 0
    bytes: int = 0
    epochs: list[tuple[int, int]] = field(default_factory=list)  # leader-epoch-checkpoint (epoch, start)
    epoch_at_divergence: int | None = None  # from the first differing batch
    checkpoint_epoch_at_divergence: int | None = None  # from leader-epoch-checkpoint
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # not problems: files deleted during the run, live tails
    only: list[Range] = field(default_factory=list)  # offset ranges only this side holds


@dataclass
class RecordDiff:
    offset: int
    a: Record | None
    b: Record | None


@dataclass
class PartitionDiff:
    name: str
    a: Side
    b: Side
    kind: str = IDENTICAL
    diverge_offset: int | None = None
    equal_batches: int = 0
    equal_records: int = 0
    records: list[RecordDiff] = field(default_factory=list)
    records_differing: int = 0
    records_compared: bool = False  # --records: the records after the divergence were compared

    @property
    def identical(self) -> bool:
        return self.kind == IDENTICAL

    def explanation(self) -> str:
        a, b = self.a, self.b
        if self.kind == IDENTICAL:
            return "identical"
        if self.kind == MISSING:
            return f"only in {'B' if not a.path else 'A'}"
        if self.kind == START:
            side = "A" if a.only else "B"
            return f"{side} holds older offsets the other side no longer has (retention); the rest is identical"
        if self.kind == BEHIND:
            name = "B" if a.only and not b.only else "A"
            return (f"{name} stops at offset {self.diverge_offset} where the other side goes on: "
                    f"a follower or copy that is behind or was truncated")
        if self.records_compared and not self.records_differing:
            return (f"the batches differ from offset {self.diverge_offset}, but every record from there on is "
                    f"the same on both sides (offset, key, value, headers, timestamp): the same records written "
                    f"anew (another codec, message format or batching)")
        ea = a.epoch_at_divergence if a.epoch_at_divergence is not None else a.checkpoint_epoch_at_divergence
        eb = b.epoch_at_divergence if b.epoch_at_divergence is not None else b.checkpoint_epoch_at_divergence
        if ea != eb:
            return (f"different data from offset {self.diverge_offset}, written in leader epoch {ea} on A and "
                    f"{eb} on B: two leaders wrote these offsets (an unclean leader election, or a replica not "
                    f"yet truncated to the new leader's log)")
        why = (f"different data from offset {self.diverge_offset} in the same leader epoch {ea}: not what "
               f"replication produces (a damaged or modified copy)")
        bad = [p for p in a.problems + b.problems if "fails its crc" in p]
        return why + (f"; {bad[0]}" if bad else "")

    def as_json(self) -> dict[str, Any]:
        def side(s: Side) -> dict[str, Any]:
            d = asdict(s)
            d["epochs"] = [list(e) for e in s.epochs]
            return d

        named = parse_partition_dir(self.name)
        out = {"name": self.name, "topic": named[0] if named else None, "partition": named[1] if named else None,
               "kind": self.kind, "identical": self.identical,
               "diverge_offset": self.diverge_offset, "explanation": self.explanation(),
               "equal_batches": self.equal_batches, "equal_records": self.equal_records,
               "a": side(self.a), "b": side(self.b)}
        if self.records_compared:
            out["records_differing"] = self.records_differing
        return out


@dataclass
class DiffReport:
    a: str
    b: str
    partitions: list[PartitionDiff] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return all(p.identical for p in self.partitions)


@dataclass(frozen=True)
class DiffOptions:
    records: bool = False
    check_crc: bool = False  # recompute both sides' CRCs (finds bit rot behind equal stored CRCs)
    max_records: int = 1000  # differing records kept in the report (the count is exact)
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES


class Entry(NamedTuple):
    """A batch with its first offset and its record count; a legacy wrapper's inner messages,
    which were read for them, kept for the record comparison (not decompressed twice)."""

    batch: Batch
    first: int
    count: int
    inner: list[Record] | None = None

    @property
    def last(self) -> int:
        return self.batch.last_offset


def _entry(b: Batch, limit: int) -> Entry:
    """A v2 batch's header says both; a legacy wrapper's offset is its last inner message's, so
    its inner messages are read (an undecodable one counts as one record at its own offset: the
    record walk reports it)."""
    if b.magic >= 2:
        return Entry(b, b.offset, max(b.record_count or 0, 0))
    if not b.is_compressed:
        return Entry(b, b.offset, 1)
    try:
        inner = batch_records(b, limit=limit)
    except KsegError:
        return Entry(b, b.offset, 1)
    return Entry(b, min((r.offset for r in inner), default=b.offset), len(inner), inner)


def _same(a: Batch, b: Batch, sa: Side, sb: Side, check_crc: bool) -> bool:
    """Same header and stored CRC (the CRC covers the rest); with ``check_crc`` both CRCs
    are recomputed too (CRC-32C runs at memory speed, but reads every byte)."""
    if not (a.offset == b.offset and a.crc == b.crc and a.size == b.size and a.magic == b.magic
            and a.last_offset_delta == b.last_offset_delta and a.partition_leader_epoch == b.partition_leader_epoch):
        return False
    if not check_crc:
        return True
    ok = True
    for x, side in ((a, sa), (b, sb)):
        if x.computed_crc() != x.crc:
            side.problems.append(f"batch at byte {x.position} (offset {x.offset}) fails its crc: "
                                 f"stored {x.crc:#010x}, computed {x.computed_crc():#010x}")
            ok = False
    return ok


def _entries(path: Path, side: Side, live: bool, headers: bool = False) -> Iterator[Batch]:
    """A segment's batches, read WINDOW bytes at a time with ``os.pread`` (not memory-mapped:
    a mapped file that shrinks under the reader, a broker's retention or truncation, kills
    the process with SIGBUS at the next touch of a lost page, which no check can prevent).
    ``headers``: large batches are read only up to the end of their header (``_header_walk``).
    A file that is shorter than it was when the run began is an InputError saying so.
    An archive member or an object is read in chunks (``Segment``)."""
    where = as_path(path)
    if not isinstance(where, Path):
        seg = Segment(where)  # type: ignore[arg-type]
        yield from seg.batches()
        if seg.tail is not None:
            _tail(path, seg.tail, side, live, seg.size)
        return
    try:
        f = open(path, "rb")
    except OSError as e:
        if gone(path):  # deleted by retention since it was listed: the rest is compared
            side.notes.append(f"{path}: {VANISHED}")
            return
        raise cannot_read(path, e) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        walk = _header_walk if headers else _window_walk
        yield from walk(f, path, size, side, live, 0)


def _window_walk(f: Any, path: Path, size: int, side: Side, live: bool, pos: int) -> Iterator[Batch]:
    """The batches from ``pos``, read WINDOW bytes at a time (an entry larger than a window in one read)."""
    need = WINDOW
    while pos < size:
        start = pos
        length = min(max(WINDOW, need), size - start)
        mv = memoryview(_read_window(f, path, start, length, size))
        final = start + length >= size
        at = pos - start
        while True:
            scan = scan_entries(mv, start, final=final, start=at, max_entries=STEP_ENTRIES)
            yield from scan.batches
            if scan.tail is not None:
                _tail(path, scan.tail, side, live, size)
                return
            if scan.consumed == at:
                break
            at = scan.consumed
        if start + at == pos:  # not one whole entry in the window: map the whole entry next
            head = bytes(mv[at:at + HEADER_SIZE_UP_TO_MAGIC])
            need = at + (LOG_ENTRY_PREFIX.struct.unpack_from(head, 0)[1] + LOG_OVERHEAD
                         if len(head) == HEADER_SIZE_UP_TO_MAGIC else HEADER_SIZE_UP_TO_MAGIC)
        else:
            need = WINDOW
        pos = start + at
        del mv, scan


def _header_walk(f: Any, path: Path, size: int, side: Side, live: bool, pos: int) -> Iterator[Batch]:
    """The batches from ``pos`` for comparing their headers, read as ``kseg.log.entry_walk`` reads:
    WALK_READ_BYTES at a time, whose whole batches are taken as they are; after a batch over
    LARGE_ENTRY_BYTES only the next header is read, and a batch that is not whole in a read is
    taken from its header alone (``header_batch``: what ``_same`` compares and ``_entry``
    counts). From a header that is not a sound one (the end of the batches: damage, a partial
    batch) or a legacy compressed wrapper (whose first offset is inside it) on, the rest of the
    segment is read whole (``_window_walk``): what is found and said is the full read's."""
    fd = f.fileno()
    want = WALK_READ_BYTES
    while pos < size:
        if want == WALK_READ_BYTES:
            length = min(want, size - pos)
            mv = memoryview(_read_window(f, path, pos, length, size))
            scan = scan_entries(mv, pos, final=pos + length >= size)
            yield from scan.batches
            if scan.tail is not None:
                _tail(path, scan.tail, side, live, size)
                return
            pos += scan.consumed
            if scan.batches:
                want = RECORD_BATCH_OVERHEAD if scan.batches[-1].size > LARGE_ENTRY_BYTES else WALK_READ_BYTES
                continue
            head = bytes(mv[:RECORD_BATCH_OVERHEAD])
        else:  # after a large batch: its successor's header alone (no whole batch in so few bytes)
            head = os.pread(fd, RECORD_BATCH_OVERHEAD, pos)
            if len(head) < min(RECORD_BATCH_OVERHEAD, size - pos):  # the file shrank: said as a window read says it
                head = _read_window(f, path, pos, min(RECORD_BATCH_OVERHEAD, size - pos), size)
        b = header_batch(head, pos, size)
        if b is None or (b.magic < 2 and b.is_compressed):
            yield from _window_walk(f, path, size, side, live, pos)
            return
        yield b
        pos += b.size
        want = RECORD_BATCH_OVERHEAD if b.size > LARGE_ENTRY_BYTES else WALK_READ_BYTES


SHRANK = "the file shrank during the run (from {} to {} bytes)"


def _read_window(f: Any, path: Path, start: int, length: int, size: int) -> bytes:
    """``length`` bytes at ``start``; InputError when the file no longer has them."""
    data = os.pread(f.fileno(), length, start)
    while len(data) < length:
        more = os.pread(f.fileno(), length - len(data), start + len(data))
        if not more:
            now = os.fstat(f.fileno()).st_size
            raise InputError(SHRANK.format(size, now), file=str(path))
        data += more
    return data


def _tail(path: Path, t: Tail, side: Side, live: bool, size: int) -> None:
    """What ends a segment's batches: a note for what a healthy broker leaves (``kseg.log.tails``),
    else a problem, with every byte from there to the end of the file (``size``) not compared."""
    benign = live_tail(path, t, live)
    if benign is not None:
        side.notes.append(f"{path}: at byte {t.position}: {benign.text}")
    else:
        side.problems.append(f"{path}: at byte {t.position}: {t.error.message} "
                             f"({max(size - t.position, t.length)} bytes not compared)")


def _batches(segs: list[Path], side: Side, live: Path | None, limit: int, headers: bool) -> Iterator[Entry]:
    """``live``: the segment a broker may still be writing (``Group.newest``); ``headers``: only
    the batches' headers are wanted (``_entries``)."""
    for path in segs:
        for b in _entries(path, side, path == live, headers):
            e = _entry(b, limit)
            side.batches += 1
            side.bytes += b.size
            side.records += e.count
            if side.first_offset is None:
                side.first_offset = e.first
            side.next_offset = b.last_offset + 1
            yield e


def _epochs(folder: Path | None, side: Side) -> None:
    if folder is None:
        return
    lec = folder / LEADER_EPOCH_FILE
    if lec.is_file():
        try:
            side.epochs = [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(lec).entries]
        except KsegError as e:
            side.problems.append(f"{lec}: {e.message}")


def _epoch_at(epochs: list[tuple[int, int]], offset: int) -> int | None:
    found = None
    for epoch, start in epochs:
        if start <= offset:
            found = epoch
    return found


def _records(entries: Iterator[Entry], limit: int) -> Iterator[Record]:
    for e in entries:
        if e.inner is not None:
            yield from e.inner
            continue
        try:
            yield from batch_records(e.batch, limit=limit)
        except KsegError:
            continue


def diff_partition(name: str, a_segs: list[Path], b_segs: list[Path], o: DiffOptions, *,
                   a_folder: Path | None = None, b_folder: Path | None = None,
                   a_live: Path | None = None, b_live: Path | None = None) -> PartitionDiff:
    """``a_live``, ``b_live``: each side's segment a broker may still be writing (``Group.newest``)."""
    sa = Side(str(a_folder or (a_segs[0] if a_segs else "")))
    sb = Side(str(b_folder or (b_segs[0] if b_segs else "")))
    _epochs(a_folder, sa)
    _epochs(b_folder, sb)
    pd = PartitionDiff(name, sa, sb)
    limit = o.max_decompressed_bytes
    headers = not (o.records or o.check_crc)  # records and CRCs need every byte
    ia = _batches(a_segs, sa, a_live, limit, headers)
    ib = _batches(b_segs, sb, b_live, limit, headers)
    a, b = next(ia, None), next(ib, None)
    if a is None and b is None:
        return pd
    if a is None or b is None:
        pd.kind = MISSING if not (a_segs and b_segs) else BEHIND
    # Older offsets on one side only (retention moved the other's log start).
    while a is not None and b is not None and a.last < b.first:
        if not sa.only:
            sa.only.append(Range(a.first, a.last))
        sa.only[-1].add(a)
        a = next(ia, None)
    while a is not None and b is not None and b.last < a.first:
        if not sb.only:
            sb.only.append(Range(b.first, b.last))
        sb.only[-1].add(b)
        b = next(ib, None)
    prefix = bool(sa.only or sb.only)
    while a is not None and b is not None and _same(a.batch, b.batch, sa, sb, o.check_crc):
        pd.equal_batches += 1
        pd.equal_records += a.count
        a, b = next(ia, None), next(ib, None)
    if a is None and b is None:
        if prefix:
            pd.kind = START
        return pd
    starts = [x.first for x in (a, b) if x is not None]
    pd.diverge_offset = min(starts)
    if a is not None:
        sa.epoch_at_divergence = a.batch.partition_leader_epoch if a.batch.magic >= 2 else None
    if b is not None:
        sb.epoch_at_divergence = b.batch.partition_leader_epoch if b.batch.magic >= 2 else None
    if a is not None and b is not None:
        pd.kind = DIVERGED
    elif pd.kind != MISSING:
        pd.kind = BEHIND
    sa.checkpoint_epoch_at_divergence = _epoch_at(sa.epochs, pd.diverge_offset)
    sb.checkpoint_epoch_at_divergence = _epoch_at(sb.epochs, pd.diverge_offset)

    def rest(first: Entry | None, it: Iterator[Entry], side: Side) -> Iterator[Entry]:
        if first is None:
            return
        side.only.append(Range(first.first, first.last))
        side.only[-1].add(first)
        yield first
        for x in it:
            side.only[-1].add(x)
            yield x

    ra, rb = rest(a, ia, sa), rest(b, ib, sb)
    if not o.records:
        for _ in ra:
            pass
        for _ in rb:
            pass
        return pd
    _record_diff(pd, _records(ra, o.max_decompressed_bytes), _records(rb, o.max_decompressed_bytes), o)
    pd.records_compared = True
    return pd


def _same_record(x: Record, y: Record) -> bool:
    return (x.key == y.key and x.value == y.value and x.headers == y.headers and x.timestamp == y.timestamp)


def _record_diff(pd: PartitionDiff, ra: Iterator[Record], rb: Iterator[Record], o: DiffOptions) -> None:
    x, y = next(ra, None), next(rb, None)

    def note(offset: int, p: Record | None, q: Record | None) -> None:
        pd.records_differing += 1
        if len(pd.records) < o.max_records:
            pd.records.append(RecordDiff(offset, p, q))

    while x is not None or y is not None:
        if y is None or (x is not None and x.offset < y.offset):
            assert x is not None
            note(x.offset, x, None)
            x = next(ra, None)
        elif x is None or y.offset < x.offset:
            note(y.offset, None, y)
            y = next(rb, None)
        else:
            if not _same_record(x, y):
                note(x.offset, x, y)
            x, y = next(ra, None), next(rb, None)


# Shapes read as one item: two of them are compared whatever their names.
SINGLE_SHAPES = (FILE, PARTITION)


def _shape(p: Path) -> tuple[str, list[tuple[str, _Listed]]]:
    """(shape, [(name under the input, its side)]) by the one listing rule (``kseg.log.listing``):
    a partition's run, or a file read on its own."""
    listing = list_input(p)
    return listing.shape, [(g.name, _Listed(g.folder, g.files, g.newest)) for g in listing.reading]


class _Listed(NamedTuple):
    """One side of a pair: its partition folder (None: a file read on its own), its segments (none:
    the partition is missing on that side) and the one a broker may still be writing."""

    folder: Path | None = None
    files: tuple[Path, ...] = ()
    live: Path | None = None


class DiffItem(NamedTuple):
    """A pair of partitions to compare (a unit of ``OPERATION``): a side's folder (None for files
    read on their own) and segments (none: the partition is missing on that side)."""

    name: str
    a_folder: Path | None
    a_files: list[Path]
    b_folder: Path | None
    b_files: list[Path]
    weight: int = 0  # bytes to read
    local: bool = False  # only this process may read it
    a_live: Path | None = None  # the segment a broker may still be writing (``Group.newest``)
    b_live: Path | None = None


def _item(name: str, a: _Listed, b: _Listed) -> DiffItem:
    files = [*a.files, *b.files]
    return DiffItem(name, a.folder, list(a.files), b.folder, list(b.files), weight_of(files),
                    any(here_only(f) for f in files), a.live, b.live)


def diff_items(a: Path, b: Path) -> list[DiffItem]:
    """The pairs to compare: one for two files or partition folders; for log directories
    and folders of files, one per name under the inputs (a side without it: missing)."""
    ka, pa = _shape(as_path(a))
    kb, pb = _shape(as_path(b))
    if ka in SINGLE_SHAPES and kb in SINGLE_SHAPES and len(pa) == len(pb) == 1:
        return [_item(as_path(a).name, pa[0][1], pb[0][1])]
    if (ka in SINGLE_SHAPES) != (kb in SINGLE_SHAPES):
        raise InputError("compare a log directory with a log directory, a partition or file with a partition or file",
                         found=f"{_SHOWN.get(ka, ka)} and {_SHOWN.get(kb, kb)}")
    da, db = dict(pa), dict(pb)
    items = []
    for name in sorted(set(da) | set(db)):
        items.append(_item(as_path(a).name if name == "." else name, da.get(name, _Listed()), db.get(name, _Listed())))
    return items


_SHOWN = {LOG_DIR: "logdir"}


def diff_item(item: DiffItem, o: DiffOptions) -> PartitionDiff:
    """One pair of partitions compared."""
    pd = diff_partition(item.name, item.a_files, item.b_files, o, a_folder=item.a_folder, b_folder=item.b_folder,
                        a_live=item.a_live, b_live=item.b_live)
    if not item.a_files or not item.b_files:
        pd.kind = MISSING
    return pd


def diff_paths(a: Path, b: Path, o: DiffOptions = DiffOptions(), jobs: int = 1) -> DiffReport:
    """Compare two files, two partition folders or two log directories (partitions paired by name).
    ``jobs`` > 1: pairs compared by worker processes (``kseg.ops.executors``), the same report."""
    return DiffReport(str(a), str(b), execute(OPERATION, (a, b), o, jobs))


# --------------------------------------------------------------------------- plan / run / merge
#
# Units are the pairs of partitions (``diff_items``): no comparison crosses them; merge keeps
# them in plan order (the report's).


def plan(inputs: tuple[Path, Path], o: DiffOptions) -> list[DiffItem]:
    return diff_items(*inputs)


def merge(partials: Iterable[PartitionDiff], o: DiffOptions) -> list[PartitionDiff]:
    return list(partials)


OPERATION = Operation("diff", plan, diff_item, merge)
