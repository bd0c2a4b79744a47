"""Sans-IO builders of a segment's companion indexes, by Kafka's own rules (spec §5.2-5.4).

Rules: bytes and tuples in, bytes out; nothing here opens a file. The offset
and time indexes are produced by replaying what ``LogSegment`` does, one
*append* at a time. An append is one ``LogSegment.append`` call: one or more
consecutive batches (a produce request's batches, a follower's fetched chunk,
a cleaner's retained chunk). Recovery (``LogSegment.recover``) and
``index_segment`` treat every batch as its own append.

``LogSegment.append`` (and the per-batch loop of ``recover``), in order:

1. if the append's max timestamp is strictly greater than the max so far, the
   max so far becomes (that timestamp, the last offset of the batch carrying it);
2. if more than ``index.interval.bytes`` were appended since the last offset
   index entry (strict ``>``, counted *before* this append), add
   ``.index`` (append's last offset, append's start position) and
   ``.timeindex`` (max timestamp so far, its offset) when that timestamp is
   strictly greater than the last time index entry's (or than -1 at first);
3. count the append's bytes.

When the segment becomes inactive (roll, clean close) or after recovery,
one last time index entry (max so far, its offset) is added if strictly greater.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence, Union

from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.errors import InputError, OffsetsGoBackError
from kseg.facts.primitives import INT32_MAX
from kseg.formats.attributes import NO_TIMESTAMP
from kseg.layouts import ABORTED_TXN_ENTRY, OFFSET_INDEX_ENTRY, TIME_INDEX_ENTRY
from kseg.log.decode import scan_entries
from kseg.model import Batch

__all__ = [
    "Append",
    "CLOSE",
    "IndexEntries",
    "TxnEntry",
    "appends_of",
    "build_indexes",
    "build_offset_index",
    "build_time_index",
    "build_txn_index",
    "index_entries",
    "index_segment",
]

TXN_INDEX_VERSION = 0

_OFFSET = OFFSET_INDEX_ENTRY.struct
_TIME = TIME_INDEX_ENTRY.struct
_TXN = ABORTED_TXN_ENTRY.struct


class Append(NamedTuple):
    """What ``LogSegment.append`` is told about one append."""

    position: int  # byte position of the append's first batch in the .log
    size: int  # bytes appended (all its batches)
    last_offset: int  # largest offset of the append
    max_timestamp: int  # largest batch max timestamp (-1: none, e.g. v0)
    offset_of_max_timestamp: int  # last offset of the first batch that carried max_timestamp


class IndexEntries(NamedTuple):
    """Absolute (offset, position) and (timestamp, offset) entries, in file order."""

    offsets: list[tuple[int, int]]
    times: list[tuple[int, int]]


class TxnEntry(NamedTuple):
    """One aborted transaction (.txnindex entry without its version field)."""

    producer_id: int
    first_offset: int
    last_offset: int  # offset of the ABORT marker
    last_stable_offset: int


class _Close:
    """Marker for ``CLOSE``."""

    def __repr__(self) -> str:
        return "CLOSE"


# Put between appends: the segment was closed (clean broker shutdown) and reopened.
CLOSE = _Close()

# One element of what the builders take: an Append (or any 5-tuple in its field
# order), a decoded Batch (an append of its own), or a sequence of Batches
# written in one append; or CLOSE.
_OneAppend = Union[Append, tuple, Batch, Sequence[Batch]]
AppendLike = Union[_OneAppend, _Close]


def _merge(batches: Sequence[Batch]) -> Append:
    if not batches:
        raise InputError("an append holds at least one batch")
    first = batches[0]
    max_ts, max_ts_offset = NO_TIMESTAMP, batches[-1].last_offset
    for b in batches:
        # LogValidator / analyzeAndValidateRecords: strictly greater, so the first batch wins a tie.
        if b.max_timestamp > max_ts:
            max_ts, max_ts_offset = b.max_timestamp, b.last_offset
    size = sum(b.size for b in batches)
    return Append(first.position, size, max(b.last_offset for b in batches), max_ts, max_ts_offset)


def _as_append(item: _OneAppend) -> Append:
    if isinstance(item, Batch):
        return Append(item.position, item.size, item.last_offset, item.max_timestamp, item.last_offset)
    if isinstance(item, Append):
        return item
    if item and isinstance(item[0], Batch):
        return _merge(item)
    if len(item) != 5:
        raise InputError("an append is (position, size, last_offset, max_timestamp, offset_of_max_timestamp)",
                         found=item)
    return Append(*item)


def appends_of(batches: Sequence[Batch], grouping: Sequence[int] | None = None) -> list[Append]:
    """Appends from a segment's batches: ``grouping`` gives how many consecutive batches
    each append wrote (default: one batch per append, as ``LogSegment.recover`` sees it)."""
    if grouping is None:
        return [_as_append(b) for b in batches]
    if sum(grouping) != len(batches) or any(n <= 0 for n in grouping):
        raise InputError("grouping must split the batches into non-empty appends",
                         expected=f"positive counts summing to {len(batches)}", found=list(grouping))
    out, i = [], 0
    for n in grouping:
        out.append(_merge(batches[i:i + n]))
        i += n
    return out


def _relative(offset: int, base_offset: int, what: str) -> int:
    rel = offset - base_offset
    if not 0 <= rel <= INT32_MAX:
        # LogSegment.ensureOffsetInRange / LogSegmentOffsetOverflowException
        raise InputError(f"{what} offset {offset} does not fit a segment based at {base_offset}",
                         expected=f"{base_offset}..{base_offset + INT32_MAX}", found=offset)
    return rel


def index_entries(appends: Iterable[AppendLike], base_offset: int, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                  *, final: bool = True) -> IndexEntries:
    """Replay ``LogSegment.append`` over ``appends``; ``final`` adds the roll/close time entry."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    # An empty time index's lastEntry() is (NO_TIMESTAMP, baseOffset); so is the initial max so far.
    max_ts, max_ts_offset = NO_TIMESTAMP, base_offset
    last_time = NO_TIMESTAMP
    since_last_entry = 0

    def maybe_append_time() -> None:
        nonlocal last_time
        if times and max_ts_offset < times[-1][1]:  # checked before the timestamp, as TimeIndex.maybeAppend does
            raise OffsetsGoBackError("time index offsets must not go back", expected=f">= {times[-1][1]}",
                                     found=max_ts_offset)
        if max_ts > last_time:
            _relative(max_ts_offset, base_offset, "time index")
            times.append((max_ts, max_ts_offset))
            last_time = max_ts

    for item in appends:
        if isinstance(item, _Close):
            # Clean shutdown and reload: the close writes the final time entry, and the
            # reloaded LogSegment starts counting bytes from 0 again.
            maybe_append_time()
            since_last_entry = 0
            continue
        a = _as_append(item)
        if a.size <= 0:
            continue  # LogSegment.append ignores empty record sets
        _relative(a.last_offset, base_offset, "last")
        if a.max_timestamp > max_ts:
            max_ts, max_ts_offset = a.max_timestamp, a.offset_of_max_timestamp
        if since_last_entry > interval:
            if offsets and a.last_offset <= offsets[-1][0]:
                raise OffsetsGoBackError("offset index entries must increase", expected=f"> {offsets[-1][0]}",
                                         found=a.last_offset)
            offsets.append((a.last_offset, a.position))
            maybe_append_time()
            since_last_entry = 0
        since_last_entry += a.size
    if final:
        maybe_append_time()
    return IndexEntries(offsets, times)


def _offset_bytes(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    return b"".join(_OFFSET.pack(o - base_offset, p) for o, p in entries)


def _time_bytes(entries: Iterable[tuple[int, int]], base_offset: int) -> bytes:
    return b"".join(_TIME.pack(t, o - base_offset) for t, o in entries)


def build_offset_index(appends: Iterable[AppendLike], base_offset: int,
                       interval: int = DEFAULT_INDEX_INTERVAL_BYTES) -> bytes:
    """The .index bytes Kafka writes for these appends (trimmed, as after a roll)."""
    return _offset_bytes(index_entries(appends, base_offset, interval).offsets, base_offset)


def build_time_index(appends: Iterable[AppendLike], base_offset: int, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                     *, final: bool = True) -> bytes:
    """The .timeindex bytes; ``final=False`` leaves out the entry written at roll/close."""
    return _time_bytes(index_entries(appends, base_offset, interval, final=final).times, base_offset)


def build_indexes(appends: Iterable[AppendLike], base_offset: int, interval: int = DEFAULT_INDEX_INTERVAL_BYTES,
                  *, final: bool = True) -> tuple[bytes, bytes]:
    """(.index bytes, .timeindex bytes) from one replay."""
    e = index_entries(appends, base_offset, interval, final=final)
    return _offset_bytes(e.offsets, base_offset), _time_bytes(e.times, base_offset)


def build_txn_index(entries: Iterable[TxnEntry | tuple]) -> bytes:
    """The .txnindex bytes: one 34-byte entry per aborted transaction, in the order given.

    An entry is (producer_id, first_offset, last_offset, last_stable_offset), or the
    same preceded by a version (5 fields, as ``kseg.companions.AbortedTxn``).
    """
    out = bytearray()
    prev_last: int | None = None
    for e in entries:
        fields = tuple(e)
        if len(fields) == 5:
            version, fields = fields[0], fields[1:]
        elif len(fields) == 4:
            version = TXN_INDEX_VERSION
        else:
            raise InputError("a txn index entry is (producer_id, first_offset, last_offset, last_stable_offset)",
                             found=fields)
        producer_id, first, last, lso = fields
        if prev_last is not None and last <= prev_last:
            # TransactionIndex.append: "lastOffset must increase"
            raise InputError("aborted transactions must be appended in increasing last offset",
                             expected=f"> {prev_last}", found=last)
        prev_last = last
        out += _TXN.pack(version, producer_id, first, last, lso)
    return bytes(out)


def index_segment(log_bytes: bytes | memoryview, base_offset: int,
                  interval: int = DEFAULT_INDEX_INTERVAL_BYTES) -> tuple[bytes, bytes]:
    """(.index, .timeindex) as ``LogSegment.recover`` rebuilds them from a .log's bytes.

    Per batch, with the final time entry. A partial or undecodable tail is left
    out, as recovery truncates it.
    """

    batches = scan_entries(log_bytes, 0, final=True).batches
    return build_indexes(batches, base_offset, interval)
