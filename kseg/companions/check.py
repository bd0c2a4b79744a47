"""Checks of a segment's companion files, alone and against their .log (spec §5.2-5.7).

Rules: a check never raises on bad data; it returns ``kseg.findings.Finding``s ("error"
or "note", check "index"), each with the byte position in the companion file. The rules are
what the broker relies on, not what ``kafka-dump-log.sh`` flags: an .index
entry that pairs the last offset of a multi-batch append with the start of its
first batch is correct (spec §5.2), and a preallocated zero tail is a note.
The ``*_findings`` functions are sans-IO (bytes in); ``check_*`` read files.
Callers describe the log with small tuples (see ``BatchSummary``) so that this
module needs neither codecs nor a second pass over the log.
"""

from __future__ import annotations

import bisect
import json
import os
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from kseg.companions.read import (
    OFFSET_ENTRY_SIZE,
    SNAPSHOT_ENTRY_SIZE,
    SNAPSHOT_HEADER_SIZE,
    TIME_ENTRY_SIZE,
    TXN_ENTRY_SIZE,
    TXN_INDEX_VERSION,
    READ_PIECE,
    IndexFile,
    IndexSlots,
    ProducerSnapshot,
    open_size,
    read_full,
    ViewReader,
    excerpt,
    index_slots,
    parse_leader_epoch_checkpoint,
    parse_meta_properties,
    parse_offset_checkpoint,
    parse_partition_metadata,
    parse_producer_snapshot,
    parse_quorum_state,
    read_index_slots,
    read_producer_snapshot,
    read_text_file,
)
from kseg.defaults import KAFKA_MAX_MESSAGE_SIZE
from kseg.errors import InputError, KsegError
from kseg.facts.primitives import INT32_MAX, INT32_MIN, INT64_MIN
from kseg.facts.record_batch_v2 import LAST_OFFSET_DELTA_POSITION, RECORD_BATCH_OVERHEAD
from kseg.findings import ERROR, NOTE, Finding
from kseg.formats.attributes import CONTROL_ABORT, CONTROL_TYPE_NAMES
from kseg.layouts import ABORTED_TXN_ENTRY
from kseg.log.checks import SUMMARY_ROW
from kseg.log.control import control_info
from kseg.log.fast import c_twin
from kseg.log.decode import decode_v2_records, kafka_entry_at, records_region
from kseg.log.listing import (
    INDEX_SUFFIX,
    INDEX_SUFFIXES,
    LEADER_EPOCH_FILE,
    LOG_SUFFIX,
    META_PROPERTIES,
    OFFSET_CHECKPOINTS,
    PARTITION_METADATA_FILE,
    PRODUCER_SNAPSHOT_SUFFIX,
    QUORUM_STATE_FILE,
    TIERED_EPOCH_SUFFIXES,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from kseg.log.segment import Segment, base_offset_of, tiered_segment_id
from kseg.model import Batch
from kseg.storage import ReadError, as_path, gone, open_input

__all__ = [
    "BatchSummary",
    "DumpIndexFindings",
    "check_leader_epoch_checkpoint",
    "check_offset_index",
    "check_partition_metadata",
    "check_producer_snapshot",
    "check_segment_companions",
    "check_standalone",
    "check_time_index",
    "check_txn_index",
    "companion_log_path",
    "companion_paths",
    "control_type_of",
    "dump_index_findings",
    "offset_index_findings",
    "producer_snapshot_findings",
    "summarize_batches",
    "time_index_findings",
    "txn_index_findings",
]

def _finding(severity: str, file: str, position: int | None, message: str, expected: object = None,
             found: object = None) -> Finding:
    """A finding of these checks (all of check kind "index"); ``position`` is in the companion file."""
    return Finding(severity, "index", file, position, message, expected, found)


class BatchSummary(NamedTuple):
    """What the checks need of one log batch; the field order is what kseg.verify collects."""

    position: int
    first_offset: int | None  # None when unknown (a legacy wrapper that was not decompressed)
    last_offset: int
    max_timestamp: int
    size: int


NO_FIRST = INT64_MIN  # BatchRows' first offset when it is not known


def _summary(row: tuple[int, int, int, int, int]) -> BatchSummary:
    return BatchSummary(row[0], None if row[1] == NO_FIRST else row[1], *row[2:])


class BatchRows(Sequence):
    """``BatchSummary``s packed (``SUMMARY_ROW`` each), as verify collects them: a run of v2
    batches appends its rows from C (``sound_v2_run``'s ``rows``) without a tuple per batch,
    and the index checks read them in C (``_speedups.index_sound``) before any loop does."""

    def __init__(self, data: bytes | bytearray = b"") -> None:
        self.data = bytearray(data)

    def append(self, s: BatchSummary | tuple) -> None:
        self.data += SUMMARY_ROW.pack(s[0], NO_FIRST if s[1] is None else s[1], s[2], s[3], s[4])

    def extend(self, summaries: Iterable[BatchSummary | tuple]) -> None:
        for s in summaries:
            self.append(s)

    def __len__(self) -> int:
        return len(self.data) // SUMMARY_ROW.size

    def __getitem__(self, i: int) -> BatchSummary:  # type: ignore[override]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("batch row out of range")
        return _summary(SUMMARY_ROW.unpack_from(self.data, (i % n) * SUMMARY_ROW.size))

    def __iter__(self) -> Iterator[BatchSummary]:
        return map(_summary, SUMMARY_ROW.iter_unpack(self.data))

    @classmethod
    def joined(cls, parts: Iterable["BatchRows"]) -> "BatchRows":
        return cls(b"".join(p.data for p in parts))


# (position, first_offset or None, last_offset)
OffsetBatch = tuple[int, "int | None", int]
# (position, last_offset, max_timestamp[, first_offset or None]): without the first offset an
# entry must name a batch's last offset; with it, an offset inside a batch is accepted too
TimeBatch = tuple[Any, ...]
# (last_offset, control type id or None when undecodable)
ControlBatch = tuple[int, "int | None"]


# --------------------------------------------------------------------------- describing the log


def control_type_of(batch: Batch) -> int | None:
    """The control type id of a v2 control batch (0 ABORT, 1 COMMIT, ...), None if not decodable.

    Control batches are never compressed, so this needs no codec.
    """
    if not batch.is_control or batch.is_compressed:
        return None

    try:
        records = decode_v2_records(
            bytes(records_region(batch)), batch.base_offset, batch.base_timestamp or 0, batch.record_count or 0, None
        )
        return control_info(records[0]).type_id if records else None
    except (KsegError, IndexError):
        return None


def summarize_batches(batches: Iterable[Batch]) -> tuple[list[BatchSummary], list[ControlBatch]]:
    """Summaries of a log's batches and its control batches, from a shallow walk.

    The first offset of a compressed legacy wrapper is unknown without decompressing
    (its stored offset is the last inner one) and is left None.
    """
    summaries: list[BatchSummary] = []
    controls: list[ControlBatch] = []
    for b in batches:
        first = b.base_offset if (b.magic >= 2 or not b.is_compressed) else None
        summaries.append(BatchSummary(b.position, first, b.last_offset, b.max_timestamp, b.size))
        if b.is_control:
            controls.append((b.last_offset, control_type_of(b)))
    return summaries, controls


# --------------------------------------------------------------------------- helpers


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# At most this many findings about one companion file's entries; past it the checks stop (the
# verdict is made) and a note says how much was left unchecked: a corrupt file of any size gives
# a bounded report in bounded time.
MAX_FINDINGS_PER_FILE = 100


class _Findings(list):
    """Findings of one file's entries, stopping at MAX_FINDINGS_PER_FILE (``full``)."""

    @property
    def full(self) -> bool:
        return len(self) >= MAX_FINDINGS_PER_FILE

    def stopped(self, file: str, entry: int, entries: int, at: int) -> None:
        self.append(_finding(NOTE, file, at, f"checking stopped after {MAX_FINDINGS_PER_FILE} findings: "
                                             f"entries {entry}..{entries - 1} not checked"))


def _length_and_tail(out: list[Finding], file: str, idx: IndexSlots, what: str, empty_first: bool = False) -> None:
    """The file's length, and its zero tail (from slot 0 when ``empty_first``: no entry yet)."""
    size = idx.entry_size
    if idx.size > INT32_MAX:
        out.append(_finding(
            ERROR, file, INT32_MAX,
            f"the file is larger than Kafka can map (its {what} is a memory-mapped file of at most "
            f"{INT32_MAX} bytes)", f"at most {INT32_MAX} bytes", f"{idx.size} bytes",
        ))
    if idx.partial_bytes:
        out.append(_finding(
            ERROR, file, idx.size - idx.partial_bytes,
            f"file length is not a multiple of {size} ({_plural(idx.partial_bytes, 'trailing byte')}; "
            f"Kafka's {what} sanity check fails)",
            f"a multiple of {size}", idx.size,
        ))
    if idx.zero_tail or empty_first:
        tail_position = 0 if empty_first else idx.count * size
        zeros = idx.zero_tail + empty_first
        if idx.tail_is_zero:
            out.append(_finding(
                NOTE, file, tail_position,
                ("1 preallocated zero entry" if zeros == 1
                 else f"{zeros} preallocated zero entries") + " (an active or uncleanly closed segment)",
            ))
        else:
            last = idx.last
            out.append(_finding(
                ERROR, file, tail_position,
                f"entry {idx.count} repeats the base offset, so Kafka stops reading there, "
                f"but the {idx.zero_tail} slots from there on are not all zero",
                None if last is None else f"offset > {last[0] if idx.kind == 'index' else last[1]}",
                idx.base_offset,
            ))


def _unreadable(path: str | os.PathLike, e: ReadError) -> BaseException:
    """A companion that cannot be read is not a finding about its data: one deleted since it
    was listed is ``FileNotFoundError`` (the caller tells that it went away), any other failure
    the ``ReadError`` (exit 2), as for the log."""
    if gone(path):
        return FileNotFoundError(2, "No such file or directory", str(path))
    return e


def _index_for_check(path: str | os.PathLike, kind: str, base: int, out: list[Finding]) -> IndexSlots | None:
    """An index file scanned in pieces (``read_index_slots``); bytes that do not parse: a finding, None."""
    try:
        return read_index_slots(path, kind, base)
    except ReadError as e:
        raise _unreadable(path, e) from None
    except KsegError as e:
        out.append(_finding(ERROR, str(path), e.position, e.message, e.expected, e.found))
        return None


def _read_for_check(path: str | os.PathLike, out: list[Finding], what: str = "text file") -> bytes | None:
    """A text companion's bytes, bounded (``read_text_file``); too large: a finding, None."""
    try:
        return read_text_file(path, what)
    except ReadError as e:
        raise _unreadable(path, e) from None
    except KsegError as e:
        out.append(_finding(ERROR, str(path), e.position, e.message, e.expected, e.found))
        return None


def _base_for_check(path: str | os.PathLike, base_offset: int | None, out: list[Finding]) -> int | None:
    if base_offset is not None:
        return base_offset
    found = base_offset_of(path)
    if found is None:
        out.append(_finding(ERROR, str(path), None, "cannot tell the segment base offset from the file name",
                                "<20 digits>.<suffix>", Path(path).name))
    return found


def _first_offset(batch: tuple) -> int | None:
    """A TimeBatch's first offset, None when not given or unknown."""
    return batch[3] if len(batch) > 3 else None


def _empty_first_slot(idx: IndexSlots, batches: Sequence[tuple] | None = None) -> bool:
    """Whether the file's only entry is a zero slot 0: the preallocated space of a segment being
    written that holds no entry yet. The broker counts the entries it appended, not the slots, and
    never writes such an entry: an .index entry (base offset, position 0) would need index.interval.bytes
    of batches before position 0; a .timeindex entry (timestamp 0, base offset) is taken for one only
    when the log's batch holding the base offset has largest timestamp 0."""
    if idx.count != 1 or not idx.tail_is_zero:
        return False
    base = idx.base_offset
    if idx.kind == "index":
        return idx.first == (base, 0)
    if idx.first != (0, base):
        return False
    if batches is None:
        return True
    for b in batches:  # (position, last offset, max timestamp[, first offset])
        if b[1] >= base:
            return b[2] != 0
    return True


# --------------------------------------------------------------------------- .index


def offset_index_findings(
    data: bytes | IndexSlots,
    file: str,
    base_offset: int,
    batches: Sequence[OffsetBatch] | None = None,
    log_size: int | None = None,
    rows: BatchRows | None = None,
) -> list[Finding]:
    """Check .index bytes; with ``batches`` (the log's, in file order; or ``rows``, verify's
    summaries) also against the log.

    For each entry (O, P): P < log size, P starts a batch, every batch before P ends
    below O (else a lookup would skip it), and the batch at P starts at or before O.
    """
    out = _Findings()
    idx = data if isinstance(data, IndexSlots) else index_slots(data, "index", base_offset)
    empty_first = _empty_first_slot(idx)
    _length_and_tail(out, file, idx, "offset index", empty_first)
    if rows is not None:
        if not empty_first and entries_sound(idx, rows, log_size):
            return out  # every entry agrees with the log: the loop below would find nothing
        batches = list(map(itemgetter(0, 1, 2), rows))
    starts: dict[int, int] = {}
    prefix_max: list[int | None] = []
    sorted_starts: list[int] = []
    if batches is not None:
        best: int | None = None
        for n, (pos, _first, last) in enumerate(batches):
            starts.setdefault(pos, n)
            prefix_max.append(best)  # max last offset of the batches before n
            best = last if best is None else max(best, last)
        sorted_starts = sorted(starts)
        if log_size is None:
            log_size = max((p + 1 for p in starts), default=0)
    prev = None
    for i, (offset, position) in enumerate(idx.rows()):
        at = i * OFFSET_ENTRY_SIZE
        if out.full:
            out.stopped(file, i, idx.count, at)
            break
        if i == 0 and empty_first:
            continue
        rel = offset - base_offset
        if rel < 0:
            out.append(_finding(ERROR, file, at, "negative relative offset (Kafka's sanity check fails)",
                                    ">= 0", rel))
        if position < 0:
            out.append(_finding(ERROR, file, at, "negative position", ">= 0", position))
        if prev is not None:
            if offset <= prev[0]:
                out.append(_finding(ERROR, file, at, "offsets do not increase", f"> {prev[0]}", offset))
            if position <= prev[1]:
                out.append(_finding(ERROR, file, at, "positions do not increase", f"> {prev[1]}", position))
        prev = (offset, position)
        if batches is None or position < 0:
            continue
        assert log_size is not None
        if position >= log_size:
            out.append(_finding(ERROR, file, at, f"position for offset {offset} is past the end of the log",
                                    f"< {log_size}", position))
            continue
        k = starts.get(position)
        if k is None:
            j = bisect.bisect_left(sorted_starts, position)
            near = [str(p) for p in sorted_starts[max(0, j - 1) : j + 1]]
            out.append(_finding(ERROR, file, at, f"position for offset {offset} is not the start of a batch",
                                    f"a batch start (nearest: {', '.join(near) or 'none'})", position))
            continue
        before = prefix_max[k]
        if before is not None and before >= offset:
            out.append(_finding(
                ERROR, file, at,
                f"a batch before position {position} holds offset {before}, not below the indexed offset "
                "(lookups from this entry would skip it)",
                f"< {offset}", before,
            ))
        first = batches[k][1]
        if first is not None and first > offset:
            out.append(_finding(ERROR, file, at,
                                    f"the batch at position {position} starts after the indexed offset",
                                    f"<= {offset}", first))
    return out


# Index files up to this size are checked against verify's summaries in C (``entries_sound``)
# before any loop; a larger one (a segment.index.bytes far above the default 10 MiB) goes the loop's way.
SOUND_CHECK_MAX_BYTES = 64 * 1024 * 1024


def entries_sound(idx: IndexSlots, rows: BatchRows, log_size: int | None) -> bool:
    """Whether the entry loop of ``offset_index_findings`` (``time_index_findings``) would find
    nothing in ``idx``'s entries against the log's batches, decided in one C pass
    (``_speedups.index_sound``; False without it, or on any doubt, and the loop decides)."""
    check = c_twin("index_sound")
    if check is None or idx.count * idx.entry_size > SOUND_CHECK_MAX_BYTES:
        return False
    if idx.kind == "index" and log_size is None:
        return False
    entries = b"".join(bytes(piece) for piece in idx.pieces())
    return bool(check(0 if idx.kind == "index" else 1, entries, idx.base_offset, rows.data,
                      -1 if log_size is None else log_size))


def index_sound_py(kind: int, entries: bytes, base: int, rows: bytes | bytearray, log_size: int) -> bool:
    """The reference of ``_speedups.index_sound``: whether the entry loops find nothing in these
    entries (all of them, as stored) against ``rows``. The C pass may say False where this says
    True (it leaves entries inside batches and batches out of order to the loops), never the
    reverse (tests/test_index_check.py, the fuzz target ``index_sound``)."""
    size = OFFSET_ENTRY_SIZE if kind == 0 else TIME_ENTRY_SIZE
    name = "index" if kind == 0 else "timeindex"
    count = len(entries) // size
    rows_ = BatchRows(rows)
    idx = IndexSlots(name, base, memoryview(entries), count, size, 0, True, 0)
    if kind == 0:
        return not offset_index_findings(idx, "", base, list(map(itemgetter(0, 1, 2), rows_)), log_size)
    return not time_index_findings(idx, "", base, list(map(itemgetter(0, 2, 3, 1), rows_)))


def check_offset_index(
    index_path: str | os.PathLike,
    batches: Sequence[OffsetBatch] | None,
    log_size: int | None = None,
    base_offset: int | None = None,
    rows: BatchRows | None = None,
) -> list[Finding]:
    """Check an .index file. ``batches``: (position, first offset or None, last offset) of the
    sibling .log's batches in file order, or None to check the file alone."""
    out: list[Finding] = []
    base = _base_for_check(index_path, base_offset, out)
    if base is None:
        return out
    idx = _index_for_check(index_path, "index", base, out)
    if idx is None:
        return out
    try:  # its entries are read again, in pieces: the file may have gone since
        return out + offset_index_findings(idx, str(index_path), base, batches, log_size, rows)
    except KsegError as e:
        return out + [_finding(ERROR, str(index_path), e.position, e.message, e.expected, e.found)]


# --------------------------------------------------------------------------- .timeindex


def time_index_findings(
    data: bytes | IndexSlots, file: str, base_offset: int, batches: Sequence[TimeBatch] | None = None,
    rows: BatchRows | None = None,
) -> list[Finding]:
    """Check .timeindex bytes; with ``batches`` (position, last offset, max timestamp; or
    ``rows``, verify's summaries) also against the log: each entry (T, O) names a batch ending
    at O whose max timestamp is T, and no batch up to it has a larger one."""
    out = _Findings()
    idx = data if isinstance(data, IndexSlots) else index_slots(data, "timeindex", base_offset)
    # (a lone entry may be an empty first slot, which only the log's batches tell: the loop decides)
    sound = rows is not None and idx.count != 1 and entries_sound(idx, rows, None)
    if rows is not None and not sound:
        batches = list(map(itemgetter(0, 2, 3, 1), rows))
    empty_first = not sound and _empty_first_slot(idx, batches)
    _length_and_tail(out, file, idx, "time index", empty_first)
    first, last = idx.first, idx.last
    if first is not None and not empty_first and idx.zero_tail and idx.last_slot is not None:
        last_ts = idx.last_slot[0]
        if last_ts < first[0]:
            out.append(_finding(
                NOTE, file, (idx.slots - 1) * TIME_ENTRY_SIZE,
                "kafka-dump-log --index-sanity-check would fail this file: its last slot (preallocated) "
                "has a timestamp below the first entry's",
                f">= {first[0]}", last_ts,
            ))
    if idx.count > 1 and first is not None and last is not None and last[0] < first[0]:
        out.append(_finding(ERROR, file, (idx.count - 1) * TIME_ENTRY_SIZE,
                                "last timestamp is below the first (Kafka's sanity check fails)",
                                f">= {first[0]}", last[0]))
    if sound:
        return out  # every entry agrees with the log: the loop below would find nothing
    by_last: dict[int, int] = {}
    lasts: list[int] = []
    order: list[int] = []  # batch numbers by last offset, for finding the batch an offset lies in
    prefix_max_ts: list[int] = []
    if batches is not None:
        best: int | None = None
        for n, (_pos, last, ts, *_first) in enumerate(batches):
            by_last.setdefault(last, n)
            best = ts if best is None else max(best, ts)
            prefix_max_ts.append(best)  # max timestamp of batches 0..n
        lasts = sorted(by_last)
        order = [by_last[last] for last in lasts]
    prev = None
    for i, (ts, offset) in enumerate(idx.rows()):
        at = i * TIME_ENTRY_SIZE
        if out.full:
            out.stopped(file, i, idx.count, at)
            break
        if i == 0 and empty_first:
            continue
        rel = offset - base_offset
        if rel < 0:
            out.append(_finding(ERROR, file, at, "negative relative offset (Kafka's sanity check fails)",
                                    ">= 0", rel))
        if prev is not None:
            if ts <= prev[0]:
                out.append(_finding(ERROR, file, at, "timestamps do not increase", f"> {prev[0]}", ts))
            if offset < prev[1]:
                out.append(_finding(ERROR, file, at, "offsets decrease", f">= {prev[1]}", offset))
        prev = (ts, offset)
        if batches is None:
            continue
        k = by_last.get(offset)
        inside = False
        if k is None:
            j = bisect.bisect_left(lasts, offset)
            near = lasts[j] if j < len(lasts) else -1
            # Kafka 2.8-3.6 (and 3.7-3.8 for uncompressed batches) index the offset of the first
            # record holding the batch's largest timestamp, which may lie inside the batch
            k = order[j] if j < len(lasts) else None
            first = _first_offset(batches[k]) if k is not None else None
            inside = first is not None and first <= offset
            if not inside:
                out.append(_finding(ERROR, file, at,
                                        "indexed offset not found in the log (no batch holds it)",
                                        offset, f"next batch end {near}" if near >= 0 else "no batch at or after it"))
                continue
        assert k is not None
        log_ts = batches[k][2]
        if log_ts != ts:
            out.append(_finding(ERROR, file, at, f"timestamp mismatch for offset {offset}",
                                    f"{log_ts} (the max timestamp of the batch {'holding' if inside else 'ending at'}"
                                    " it)", ts))
        if prefix_max_ts[k] > ts:
            out.append(_finding(ERROR, file, at,
                                    f"a batch up to offset {offset} has a larger timestamp than the entry",
                                    f"<= {ts}", prefix_max_ts[k]))
    return out


def check_time_index(
    index_path: str | os.PathLike, batches: Sequence[TimeBatch] | None, base_offset: int | None = None,
    rows: BatchRows | None = None,
) -> list[Finding]:
    """Check a .timeindex file. ``batches``: (position, last offset, max timestamp) of the
    sibling .log's batches in file order, or None to check the file alone."""
    out: list[Finding] = []
    base = _base_for_check(index_path, base_offset, out)
    if base is None:
        return out
    idx = _index_for_check(index_path, "timeindex", base, out)
    if idx is None:
        return out
    try:  # its entries are read again, in pieces: the file may have gone since
        return out + time_index_findings(idx, str(index_path), base, batches, rows)
    except KsegError as e:
        return out + [_finding(ERROR, str(index_path), e.position, e.message, e.expected, e.found)]


# --------------------------------------------------------------------------- .txnindex


def txn_index_findings(
    data: bytes | memoryview, file: str, base_offset: int, control_batches: Sequence[ControlBatch] | None = None
) -> list[Finding]:
    """Check .txnindex bytes; with ``control_batches`` (last offset, control type or None) also
    that each entry's last offset is an ABORT marker of the log. A trailing partial entry is a
    note (Kafka ignores it)."""
    return _txn_findings(ViewReader(data), file, base_offset, control_batches)


def _txn_findings(f: Any, file: str, base_offset: int, control_batches: Sequence[ControlBatch] | None) -> list[Finding]:
    """``txn_index_findings`` of an open file, read a piece at a time."""
    out = _Findings()
    n = open_size(f)

    def partial_note(n: int) -> None:
        whole = n - n % TXN_ENTRY_SIZE
        if n != whole:
            out.append(_finding(NOTE, file, whole,
                                f"{_plural(n - whole, 'trailing byte')}: a partial entry, which Kafka ignores",
                                f"a multiple of {TXN_ENTRY_SIZE}", n))

    if n is not None:
        partial_note(n)
    controls: dict[int, int | None] | None = None
    if control_batches is not None:
        controls = {}
        for last, ctype in control_batches:
            controls.setdefault(last, ctype)
    prev_last = None
    i = total = 0
    step = READ_PIECE - READ_PIECE % TXN_ENTRY_SIZE
    while not out.full:
        piece = read_full(f, step)
        total += len(piece)
        whole = len(piece) - len(piece) % TXN_ENTRY_SIZE
        for version, pid, first, last, _lso in ABORTED_TXN_ENTRY.struct.iter_unpack(piece[:whole]):
            at = i * TXN_ENTRY_SIZE
            i += 1
            if out.full:
                if n is not None:
                    out.stopped(file, i - 1, n // TXN_ENTRY_SIZE, at)
                break
            if version != TXN_INDEX_VERSION:
                out.append(_finding(ERROR, file, at, "unknown entry version", TXN_INDEX_VERSION, version))
            if last < base_offset:
                out.append(_finding(ERROR, file, at,
                                    "ABORT marker offset below the segment's base offset (Kafka's sanity check fails)",
                                    f">= {base_offset}", last))
            if first > last:
                out.append(_finding(ERROR, file, at, f"first offset after the last offset (producer {pid})",
                                    f"<= {last}", first))
            if prev_last is not None and last <= prev_last:
                out.append(_finding(ERROR, file, at, "last offsets do not increase", f"> {prev_last}", last))
            prev_last = last
            if controls is None:
                continue
            if last not in controls:
                out.append(_finding(ERROR, file, at,
                                    f"no ABORT marker at offset {last} in the log (producer {pid})",
                                    "an ABORT control batch", "no control batch"))
                continue
            ctype = controls[last]
            if ctype is None:
                out.append(_finding(NOTE, file, at,
                                    f"the control batch at offset {last} could not be decoded; "
                                    "cannot confirm it is an ABORT marker"))
            elif ctype != CONTROL_ABORT:
                out.append(_finding(ERROR, file, at, f"the control batch at offset {last} is not an ABORT marker",
                                    "ABORT", CONTROL_TYPE_NAMES.get(ctype, f"type {ctype}")))
        if whole < len(piece) or not piece or len(piece) < step:
            break
    if n is None and not out.full:
        partial_note(total)
    return out


def check_txn_index(
    txn_path: str | os.PathLike, control_batches: Sequence[ControlBatch] | None, base_offset: int | None = None
) -> list[Finding]:
    """Check a .txnindex file, read a piece at a time. ``control_batches``: (last offset, control
    type id or None) of the sibling .log's control batches, or None to check the file alone."""
    out: list[Finding] = []
    base = _base_for_check(txn_path, base_offset, out)
    if base is None:
        return out
    try:
        with open_input(txn_path) as f:
            return out + _txn_findings(f, str(txn_path), base, control_batches)
    except (OSError, KsegError) as e:
        return out + [_finding(ERROR, str(txn_path), None,
                               e.message if isinstance(e, KsegError) else f"cannot read: {e.strerror or e}")]


# --------------------------------------------------------------------------- .snapshot


def producer_snapshot_findings(data: bytes, file: str, end_offset: int | None = None) -> list[Finding]:
    """Check snapshot bytes: structure, CRC, one entry per producer, and (given the offset in
    the file name, the log end offset at snapshot time) every last offset below it."""
    try:
        snap = parse_producer_snapshot(data)
    except KsegError as err:
        return [_finding(ERROR, file, err.position, err.message, err.expected, err.found)]
    return _snapshot_findings(snap, file, end_offset)


def _snapshot_findings(snap: ProducerSnapshot, file: str, end_offset: int | None) -> list[Finding]:
    out = _Findings()
    if not snap.crc_valid:
        out.append(_finding(ERROR, file, 2, "crc mismatch", f"{snap.computed_crc:#010x} (computed over the bytes)",
                                f"{snap.crc:#010x} (stored)"))
    seen: dict[int, int] = {}
    for i, e in enumerate(snap.entries):
        at = SNAPSHOT_HEADER_SIZE + i * SNAPSHOT_ENTRY_SIZE
        if out.full:
            out.stopped(file, i, len(snap.entries), at)
            break
        if e.producer_id in seen:
            out.append(_finding(ERROR, file, at, f"producer {e.producer_id} appears twice",
                                    "one entry per producer", f"entries {seen[e.producer_id]} and {i}"))
        seen.setdefault(e.producer_id, i)
        if end_offset is not None and e.last_offset >= end_offset:
            out.append(_finding(ERROR, file, at,
                                    f"producer {e.producer_id}'s last offset is not below the snapshot's offset",
                                    f"< {end_offset} (from the file name)", e.last_offset))
    return out


def check_producer_snapshot(path: str | os.PathLike) -> list[Finding]:
    """Check a .snapshot file (its name's offset, if any, bounds the producers' last offsets). Its
    header and length are checked before its body is read (``read_producer_snapshot``)."""
    try:
        snap = read_producer_snapshot(path)
    except InputError as e:
        return [_finding(ERROR, str(path), None, e.message)]
    except KsegError as err:
        return [_finding(ERROR, str(path), err.position, err.message, err.expected, err.found)]
    # A tiered copy is named by its segment's start offset, not by the offset it was taken at.
    bound = None if tiered_segment_id(path) else base_offset_of(path)
    return _snapshot_findings(snap, str(path), bound)


# --------------------------------------------------------------------------- text files


def check_leader_epoch_checkpoint(path: str | os.PathLike) -> list[Finding]:
    """Parse a leader-epoch-checkpoint; epochs and start offsets must both increase."""
    out: list[Finding] = []
    data = _read_for_check(path, out, LEADER_EPOCH_FILE)
    if data is None:
        return out
    file = str(path)
    try:
        _, entries = parse_leader_epoch_checkpoint(data)
    except KsegError as e:
        return [_parse_error(file, e)]
    for i in range(1, len(entries)):
        a, b = entries[i - 1], entries[i]
        if b.epoch <= a.epoch or b.start_offset <= a.start_offset:
            out.append(_finding(ERROR, file, None, f"line {i + 3}: epochs and start offsets must increase",
                                    f"epoch > {a.epoch}, start offset > {a.start_offset}",
                                    f"epoch {b.epoch}, start offset {b.start_offset}"))
    return out


def check_partition_metadata(path: str | os.PathLike) -> list[Finding]:
    out: list[Finding] = []
    data = _read_for_check(path, out, PARTITION_METADATA_FILE)
    if data is None:
        return out
    try:
        parse_partition_metadata(data)
    except KsegError as e:
        return [_parse_error(str(path), e)]
    return out


def check_offset_checkpoint(path: str | os.PathLike) -> list[Finding]:
    """A log directory's offset checkpoint: format, one entry per topic-partition, offsets >= 0
    (-1 is the broker's "none" only in the cleaner checkpoint of an empty log)."""
    out: list[Finding] = []
    data = _read_for_check(path, out, Path(path).name)
    if data is None:
        return out
    file = str(path)
    try:
        _, entries = parse_offset_checkpoint(data, Path(path).name)
    except KsegError as e:
        return [_parse_error(file, e)]
    seen: set[tuple[str, int]] = set()
    for i, (topic, partition, offset) in enumerate(entries):
        if (topic, partition) in seen:
            out.append(_finding(ERROR, file, None, f"line {i + 3}: {topic}-{partition} listed twice"))
        seen.add((topic, partition))
        if offset < 0:
            out.append(_finding(ERROR, file, None, f"line {i + 3}: negative offset for {topic}-{partition}",
                                    ">= 0", offset))
    return out


def check_meta_properties(path: str | os.PathLike) -> list[Finding]:
    out: list[Finding] = []
    data = _read_for_check(path, out, META_PROPERTIES)
    if data is None:
        return out
    try:
        parse_meta_properties(data)
    except KsegError as e:
        return [_parse_error(str(path), e)]
    return out


def check_quorum_state(path: str | os.PathLike) -> list[Finding]:
    """quorum-state: the KRaft quorum's JSON object (QuorumStateData), with integer
    ``leaderEpoch`` and ``data_version`` 0 or 1."""
    out: list[Finding] = []
    data = _read_for_check(path, out, QUORUM_STATE_FILE)
    if data is None:
        return out
    file = str(path)
    try:
        state = parse_quorum_state(data)
    except KsegError as e:
        return [_finding(ERROR, file, e.position, e.message, e.expected, e.found)]
    epoch = state.get("leaderEpoch")
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not INT32_MIN <= epoch <= INT32_MAX or epoch < -1:
        out.append(_finding(ERROR, file, None, "leaderEpoch is not an epoch", "an integer >= -1", _json_excerpt(epoch)))
    if state.get("data_version", 0) not in (0, 1):
        out.append(_finding(ERROR, file, None, "unknown data_version", "0 or 1",
                            _json_excerpt(state.get("data_version"))))
    return out


def _json_excerpt(value: object) -> str:
    """A value from a JSON file, as a short escaped excerpt of its JSON text."""
    try:
        return excerpt(json.dumps(value, ensure_ascii=False))
    except (ValueError, RecursionError):  # an int past Python's int-string limit, deep nesting
        return f"a {type(value).__name__}"


def _parse_error(file: str, e: KsegError) -> Finding:
    """The finding for a text file that does not parse (the message says where, if known)."""
    return _finding(ERROR, file, e.position, f"{e.where}: {e.message}" if e.where else e.message,
                        e.expected, e.found)


# --------------------------------------------------------------------------- dispatch


def check_standalone(path: str | os.PathLike) -> list[Finding]:
    """Check one companion file by itself (no log), chosen by its name."""
    p = Path(path)
    suffix = p.suffix
    if suffix == INDEX_SUFFIX:
        return check_offset_index(p, None)
    if suffix == TIME_INDEX_SUFFIX:
        return check_time_index(p, None)
    if suffix == TXN_INDEX_SUFFIX:
        return check_txn_index(p, None)
    if suffix == PRODUCER_SNAPSHOT_SUFFIX:
        return check_producer_snapshot(p)
    if p.name == LEADER_EPOCH_FILE or suffix in TIERED_EPOCH_SUFFIXES:
        return check_leader_epoch_checkpoint(p)
    if p.name == PARTITION_METADATA_FILE:
        return check_partition_metadata(p)
    if p.name == QUORUM_STATE_FILE:
        return check_quorum_state(p)
    if p.name == META_PROPERTIES:
        return check_meta_properties(p)
    if p.name in OFFSET_CHECKPOINTS:
        return check_offset_checkpoint(p)
    return [_finding(NOTE, str(p), None, "not checked: not a companion file kseg knows")]


def companion_paths(log_path: str | os.PathLike) -> dict[str, Path]:
    """The sibling .index/.timeindex/.txnindex paths of a .log (a transient suffix such as
    ``.deleted`` carries over), whether or not they exist."""
    p = as_path(log_path)
    name = p.name
    stem, sep, rest = name.partition(LOG_SUFFIX)
    if not sep:
        return {}
    return {s: p.with_name(stem + s + rest) for s in INDEX_SUFFIXES}


def check_segment_companions(
    log_path: str | os.PathLike,
    batches_summary: Sequence[BatchSummary | tuple] | None = None,
    controls: Sequence[ControlBatch] | None = None,
    log_size: int | None = None,
) -> list[Finding]:
    """Check the .index/.timeindex/.txnindex next to ``log_path`` against it.

    ``batches_summary``: (position, first offset or None, last offset, max timestamp, size)
    per batch in file order; ``controls``: (last offset, control type or None) per control
    batch. Whatever is not given is read from the log. Missing companions are fine.
    """
    base = base_offset_of(log_path)
    paths = {s: q for s, q in companion_paths(log_path).items() if q.is_file()}
    if base is None or not paths:
        return []
    if batches_summary is None or (controls is None and TXN_INDEX_SUFFIX in paths):

        seg = Segment(as_path(log_path))  # type: ignore[arg-type]
        try:
            read_summary, read_controls = summarize_batches(seg.batches())
        except InputError:
            raise  # the log cannot be read (a damaged member, a store failing): exit 2, not a finding
        except KsegError as e:
            return [_finding(ERROR, str(log_path), e.position, f"cannot read the log: {e.message}")]
        if batches_summary is None:
            batches_summary = read_summary
        if controls is None:
            controls = read_controls
    if log_size is None:
        try:
            log_size = as_path(log_path).stat().st_size
        except OSError as e:
            if gone(log_path):  # renamed or deleted by retention since it was read: the caller notes it
                raise FileNotFoundError(2, "No such file or directory", str(log_path)) from None
            return [_finding(ERROR, str(log_path), None, f"cannot read: {e.strerror or e}")]
    out: list[Finding] = []
    if isinstance(batches_summary, BatchRows):  # verify's: the checks take them as they are
        if INDEX_SUFFIX in paths:
            out += check_offset_index(paths[INDEX_SUFFIX], None, log_size, base, batches_summary)
        if TIME_INDEX_SUFFIX in paths:
            out += check_time_index(paths[TIME_INDEX_SUFFIX], None, base, batches_summary)
    else:
        if INDEX_SUFFIX in paths:
            out += check_offset_index(paths[INDEX_SUFFIX], [(s[0], s[1], s[2]) for s in batches_summary], log_size,
                                      base)
        if TIME_INDEX_SUFFIX in paths:
            out += check_time_index(paths[TIME_INDEX_SUFFIX], [(s[0], s[2], s[3], s[1]) for s in batches_summary],
                                    base)
    if TXN_INDEX_SUFFIX in paths:
        out += check_txn_index(paths[TXN_INDEX_SUFFIX], controls, base)
    return out


def index_sanity_problem(idx: IndexFile | IndexSlots, kind: str) -> str | None:
    """Why the broker's ``sanityCheck`` would reject this .index or .timeindex (the check that
    decides whether it rebuilds the index on start-up), or None when it passes."""
    if idx.partial_bytes:
        size = idx.slots * idx.entry_size + idx.partial_bytes
        return f"the index is {size} bytes, not a multiple of its {idx.entry_size}-byte entries"
    # Kafka's last entry is the last whole slot (a zero tail included), not the last entry before it
    if isinstance(idx, IndexSlots):
        if idx.first is None or idx.last_slot is None:
            return None
        first_ts = idx.first[0]
        raw = idx.last_slot  # as stored: (relative offset, position) or (timestamp, relative offset)
        last_offset = idx.base_offset + (raw[0] if kind == "index" else raw[1])
        last_ts = raw[0]
    else:
        if not idx.entries:
            return None
        last_entry: Any = idx.entries[-1]
        if idx.zero_tail and idx.tail_is_zero:
            last_offset, last_ts = idx.base_offset, 0
        else:
            last_offset, last_ts = last_entry.offset, getattr(last_entry, "timestamp", 0)
        if kind == "timeindex":
            first_ts = idx.entries[0].timestamp
    if last_offset < idx.base_offset:
        return f"the last offset {last_offset} is below the base offset {idx.base_offset}"
    if kind == "timeindex" and last_ts < first_ts:
        return f"the last timestamp {last_ts} is below the first {first_ts}"
    return None


# --------------------------------------------------------------------------- kafka-dump-log.sh's walk


class DumpIndexFindings(NamedTuple):
    """What kafka-dump-log.sh reports on stderr after walking an .index or .timeindex against its
    .log (without --index-sanity-check). These are the tool's verdicts, not kseg's: it reads every
    slot up to the first repeat of the base offset as an entry (the zero slot 0 of an index being
    written too), and it expects a time-index entry at a batch's last offset, which Kafka 2.8-3.6
    brokers do not always write. ``kseg verify`` and ``kseg index --check`` apply the broker's rules."""

    index_mismatches: list[tuple[int, int]]  # (indexed offset, last offset of the batch at its position)
    timestamp_mismatches: list[tuple[int, int]]  # (indexed timestamp, the batch's largest timestamp)
    out_of_order: list[tuple[int, int]]  # (indexed timestamp, the timestamp indexed before it)
    not_found: list[tuple[int, int]]  # (indexed offset, last offset of the first batch reaching it, or -1)
    # an .index entry the tool cannot read a batch at, where it dies: (its number, what it says)
    stop: tuple[int, str] | None = None

    def __bool__(self) -> bool:
        return any(self)


def _tool_reads_at(f: Any, position: int, log_size: int, max_message_size: int) -> tuple[int | None, str | None]:
    """The last offset of the batch kafka-dump-log.sh reads at an .index entry's ``position`` that is no
    batch start kseg found (``FileRecords.slice(position, maxMessageSize)``, then its first batch), or
    None and what it dies with there."""
    if position < 0:
        return None, f"invalid position {position} in the .log (the tool's IllegalArgumentException)"
    if position > log_size:
        return None, f"position {position} past the end of the .log ({log_size} bytes)"
    end = min(log_size, position + max_message_size) if max_message_size >= 0 else log_size
    f.seek(position)
    head = f.read(RECORD_BATCH_OVERHEAD)
    entry = kafka_entry_at(head, end - position)
    if entry.found == "end":
        return None, f"no batch at position {position} of the .log (the tool's NoSuchElementException)"
    if entry.found == "undersized":
        return None, f"record size {entry.size} smaller than the minimum record overhead at position {position}"
    if entry.found == "partial":
        return None, f"no whole batch at position {position} of the .log (the tool's NoSuchElementException)"
    if entry.found == "legacy":
        return entry.offset, None
    if len(head) < RECORD_BATCH_OVERHEAD:
        return None, f"the .log ends inside the batch header at position {position}"
    return entry.offset + int.from_bytes(head[LAST_OFFSET_DELTA_POSITION:LAST_OFFSET_DELTA_POSITION + 4], "big",
                                         signed=True), None


def dump_index_findings(slots: IndexSlots, log_path: str | os.PathLike,
                        max_message_size: int = KAFKA_MAX_MESSAGE_SIZE) -> DumpIndexFindings:
    """kafka-dump-log.sh's findings for an index file (``slots``) against the .log at ``log_path``:
    for an .index entry (O, P), the batch at P must end at O; for a .timeindex entry (T, O), the first
    batch ending at or after O must end at O, have largest timestamp T, and T must exceed the timestamp
    indexed before. At an .index entry whose position is no batch start the tool reads whatever bytes
    lie there, as a batch, or dies (``stop``: the entries before it are printed). A log that cannot be
    read gives no findings."""
    found = DumpIndexFindings([], [], [], [])
    try:
        summaries, _ = summarize_batches(Segment(as_path(log_path)).batches())  # type: ignore[arg-type]
    except (KsegError, OSError):
        return found
    if slots.kind == "index":
        at = {s.position: s.last_offset for s in summaries}
        with as_path(log_path).open("rb") as f:
            log_size = os.fstat(f.fileno()).st_size if hasattr(f, "fileno") else None
            for i, (offset, position) in enumerate(slots.rows()):
                last = at.get(position)
                if last is None and log_size is not None:
                    last, stop = _tool_reads_at(f, position, log_size, max_message_size)
                    if stop is not None:
                        return found._replace(stop=(i, stop))
                if last is not None and last != offset:
                    found.index_mismatches.append((offset, last))
        return found
    lasts = [s.last_offset for s in summaries]
    ordered = all(a <= b for a, b in zip(lasts, lasts[1:]))
    prev = -1  # RecordBatch.NO_TIMESTAMP
    for ts, offset in slots.rows():
        if ordered:
            j = bisect.bisect_left(lasts, offset)
        else:
            j = next((n for n, last in enumerate(lasts) if last >= offset), len(lasts))
        if j == len(lasts):
            found.not_found.append((offset, -1))
        elif lasts[j] != offset:
            found.not_found.append((offset, lasts[j]))
        else:
            log_ts = summaries[j].max_timestamp
            if log_ts != ts:
                found.timestamp_mismatches.append((ts, log_ts))
            if prev >= ts:
                found.out_of_order.append((ts, prev))
        prev = ts
    return found


def companion_log_path(path: str | os.PathLike) -> Path | None:
    """The .log an index file belongs to as kafka-dump-log.sh finds it (the name up to its first
    dot, plus ``.log``, in the same folder); None for a name without digits there."""
    p = Path(path)
    stem = p.name.split(".")[0]
    return p.with_name(stem + LOG_SUFFIX) if stem.isdigit() else None
