"""Records as column buffers: the bytes Arrow's record columns are made of, without a Python
object per record.

A part is one batch's records as spans over its decompressed data (``batch_spans``:
``kseg/log/_spans.h``'s ``KsegRecordSpan`` and ``KsegHeaderSpan``, native int64s), or records
already decoded turned into the same shape (``records_part``, for the batches the C reader does
not give spans for). ``span_columns(parts)`` lays the records of every part end to end as
Arrow's buffers (``ColumnBuffers``): int64 offsets and timestamps; keys, values and header
values as binary columns (a validity bitmap, least significant bit first; int32 offsets; the
bytes end to end); header keys as bytes with int32 offsets; each record's headers as int32
list offsets. ``_speedups.span_columns`` is the C twin of ``span_columns_py``, held to the same
result (and the same ValueError for a span outside its data) by tests/test_span_columns.py.

``v2_column_run`` takes a run of v2 batches from the scanner's list at once (uncompressed, or of a
built-in codec, decompressed as the per-batch path does): their
records as ``ColumnBuffers`` and the facts of each record's batch header as per-record columns
(``BatchColumns``), without Python per batch or record; ``_speedups.v2_column_run`` is the C
twin of ``v2_column_run_py``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NamedTuple, Sequence

from kseg.checksums import crc32c
from kseg.codecs import get_codec
from kseg.errors import KsegError
from kseg.facts.primitives import INT32_MAX, INT64_MAX, INT64_MIN
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.formats.attributes import CODEC_MASK, CODEC_ZSTD, CONTROL_MASK, NO_SEQUENCE, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK
from kseg.log.decode import decode_v2_records, effective_log_append_time
from kseg.log.fast import c_twin
from kseg.log.records import HEADER_SPAN, RECORD_SPAN, run_decompressor
from kseg.model import Batch, Record, record_sequence

_INT64 = struct.Struct("=q")
_NO_MESSAGE = (-1, -1, -1)  # message_at, message_end, stored_crc: v0/v1 CRC facts, not columns

Part = tuple[Any, Any, Any]  # (data, record spans, header spans), bytes-like


class ColumnBuffers(NamedTuple):
    rows: int
    headers: int  # header count, all records
    offsets: bytes
    timestamps: bytes
    key_validity: bytes
    key_offsets: bytes
    key_data: bytes
    key_nulls: int
    value_validity: bytes
    value_offsets: bytes
    value_data: bytes
    value_nulls: int
    header_offsets: bytes  # each record's first header (rows + 1 int32s)
    header_key_offsets: bytes
    header_key_data: bytes
    header_value_validity: bytes
    header_value_offsets: bytes
    header_value_data: bytes
    header_value_nulls: int


def records_part(records: Sequence[Record]) -> Part:
    """Decoded records as a part: their keys, values and headers end to end, with spans over them."""
    chunks: list[bytes] = []
    spans = bytearray()
    headers = bytearray()
    at = 0
    nh = 0

    def put(b: bytes | None) -> tuple[int, int]:
        nonlocal at
        if b is None:
            return 0, -1
        chunks.append(b)
        start, at = at, at + len(b)
        return start, len(b)

    for r in records:
        k_at, k_len = put(r.key)
        v_at, v_len = put(r.value)
        first = nh
        for h in r.headers:
            hk_at, hk_len = put(h.key.encode("utf-8", "surrogateescape"))
            hv_at, hv_len = put(h.value)
            headers += HEADER_SPAN.pack(hk_at, hk_len, hv_at, hv_len)
            nh += 1
        spans += RECORD_SPAN.pack(r.offset, r.timestamp, k_at, k_len, v_at, v_len, first, nh - first, *_NO_MESSAGE)
    return b"".join(chunks), bytes(spans), bytes(headers)


def _inside(at: int, length: int, size: int, nullable: bool) -> bool:
    if length == -1:
        return nullable
    return length >= 0 and 0 <= at <= size and length <= size - at


def span_columns_py(parts: Sequence[Part]) -> ColumnBuffers:
    """The Python reference of ``span_columns`` (see the module comment)."""
    off, ts = bytearray(), bytearray()
    kvalid: list[bool] = []
    vvalid: list[bool] = []
    hvvalid: list[bool] = []
    koff, voff, hoff, hkoff, hvoff = [0], [0], [0], [0], [0]
    kdata, vdata, hkdata, hvdata = bytearray(), bytearray(), bytearray(), bytearray()
    for i, (data, recs, hdrs) in enumerate(parts):
        data, recs, hdrs = bytes(data), bytes(recs), bytes(hdrs)
        if len(recs) % RECORD_SPAN.size or len(hdrs) % HEADER_SPAN.size:
            raise ValueError("span_columns(): spans of a partial size")
        hs = list(HEADER_SPAN.iter_unpack(hdrs))
        size = len(data)
        for j, (offset, timestamp, k_at, k_len, v_at, v_len, first, count, *_) in enumerate(
                RECORD_SPAN.iter_unpack(recs)):
            if not (_inside(k_at, k_len, size, True) and _inside(v_at, v_len, size, True) and first >= 0
                    and count >= 0 and first <= len(hs) and count <= len(hs) - first):
                raise ValueError(f"span_columns(): record span {j} of part {i} is outside its data")
            off += _INT64.pack(offset)
            ts += _INT64.pack(timestamp)
            _put(data, k_at, k_len, kvalid, koff, kdata)
            _put(data, v_at, v_len, vvalid, voff, vdata)
            for k in range(first, first + count):
                hk_at, hk_len, hv_at, hv_len = hs[k]
                if not (_inside(hk_at, hk_len, size, False) and _inside(hv_at, hv_len, size, True)):
                    raise ValueError(f"span_columns(): header span {k} of part {i} is outside its data")
                _put(data, hk_at, hk_len, None, hkoff, hkdata)
                _put(data, hv_at, hv_len, hvvalid, hvoff, hvdata)
            hoff.append(hoff[-1] + count)
    rows, nh = len(kvalid), len(hvvalid)
    if max(len(kdata), len(vdata), len(hkdata), len(hvdata), nh, rows) > INT32_MAX:
        raise OverflowError("span_columns(): more than 2 GiB in one column")

    def int32s(values: list[int]) -> bytes:
        return struct.pack(f"={len(values)}i", *values)

    return ColumnBuffers(rows, nh, bytes(off), bytes(ts), _bitmap(kvalid), int32s(koff), bytes(kdata),
                         kvalid.count(False), _bitmap(vvalid), int32s(voff), bytes(vdata), vvalid.count(False),
                         int32s(hoff), int32s(hkoff), bytes(hkdata), _bitmap(hvvalid), int32s(hvoff), bytes(hvdata),
                         hvvalid.count(False))


def _put(data: bytes, at: int, length: int, valid: list[bool] | None, offsets: list[int], out: bytearray) -> None:
    """One value (``length`` -1: null) onto a binary column: its validity, its bytes, its end offset."""
    if valid is not None:
        valid.append(length >= 0)
    if length > 0:
        out += data[at:at + length]
    offsets.append(len(out))


def _bitmap(valid: list[bool]) -> bytes:
    out = bytearray((len(valid) + 7) // 8)
    for i, v in enumerate(valid):
        if v:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


# --------------------------------------------------------------------------- runs of v2 batches

# What a column run does with a control batch: stop before it, check it and pass it over (the
# API's and dump's records leave control batches out), or take its records as any other's.
CONTROL_STOPS, CONTROL_SKIPPED, CONTROL_ROWS = 0, 1, 2
_INT32 = struct.Struct("=i")


class BatchColumns(NamedTuple):
    """Each record's batch header facts, one value per record (native byte order); the int
    columns are an int where every record has the same value."""

    position: bytes | int  # int64: the batch's byte position
    leader_epoch: bytes | int  # int32
    producer_id: bytes | int  # int64
    producer_epoch: bytes | int  # int32
    sequence: bytes | int  # int32: kseg.model.record_sequence
    codec: bytes | int  # int8: the batch's codec
    transactional: bytes  # bitmap (least significant bit first)
    control: bytes  # bitmap
    log_append_time: bytes  # bitmap: the batch's timestamp type is LogAppendTime


class ColumnRun(NamedTuple):
    """The batches ``start:stop`` of the list taken at once: ``rows`` records from ``bytes`` of
    records data, as columns (None when no record is in them)."""

    stop: int
    rows: int
    bytes: int
    columns: ColumnBuffers | None
    batch: BatchColumns | None


def v2_column_run_py(batches: list[Batch], start: int, lo: int | None, hi: int | None, max_rows: int,
                     max_bytes: int, controls: int = CONTROL_STOPS, check_crc: bool = True,
                     limit: int | None = None) -> ColumnRun:
    """The reference of ``v2_column_run``: batch after batch, the checks of the record reader.

    From ``batches[start]``: v2 batches, uncompressed or (given a decompression ``limit``) of a
    built-in codec whose ``decompress`` takes their records within it, a record count >= 0, the
    stored CRC matching (with ``check_crc``), records that decode (``decode_v2_records``) with a sequence
    that is an int32; every offset in ``lo..hi`` (None: unbounded), while a batch wholly outside
    is passed over unread (a range no int64 offset is in takes nothing); a control batch as
    ``controls`` says. The run stops before the first
    batch that is not such (the per-batch path says why) and after the batch that brings the
    rows to ``max_rows`` or the records data to ``max_bytes``."""
    lo = INT64_MIN if lo is None else lo
    hi = INT64_MAX if hi is None else hi
    parts: list[Part] = []
    if lo > INT64_MAX or hi < INT64_MIN:  # no int64 offset in the range: the per-batch path skips them
        return ColumnRun(start, 0, 0, None, None)
    facts: list[tuple[Batch, list[int]]] = []
    rows = size = 0
    i = start
    while i < len(batches) and rows < max_rows and size < max_bytes:
        b = batches[i]
        if b.magic != 2:
            break
        count, last = b.record_count, b.base_offset + b.last_offset_delta  # type: ignore[operator]
        if not INT64_MIN <= last <= INT64_MAX:
            break
        if last < lo or b.base_offset > hi:
            i += 1
            continue
        if b.base_offset < lo or last > hi or count < 0 or (b.codec and (limit is None or b.codec > CODEC_ZSTD)):
            break
        if (b.is_control and controls == CONTROL_STOPS) or (check_crc and not b.crc_valid):
            break
        data = bytes(b.raw[RECORD_BATCH_OVERHEAD:])
        try:
            if b.codec:
                data = get_codec(b.codec).decompress(b.raw[RECORD_BATCH_OVERHEAD:], magic=2, limit=limit)
            records = decode_v2_records(data, b.base_offset, b.base_timestamp, count,  # type: ignore[arg-type]
                                        effective_log_append_time(b))
        except KsegError:
            break
        i += 1
        if (b.is_control and controls == CONTROL_SKIPPED) or not records:
            continue
        seqs = [record_sequence(b, r) for r in records]
        parts.append(records_part(records))
        facts.append((b, seqs))  # type: ignore[arg-type]
        rows += len(records)
        size += len(data)
    if not parts:
        return ColumnRun(i, 0, 0, None, None)

    def bits(flag: int) -> bytes:
        return _bitmap([bool(b.attributes & flag) for b, seqs in facts for _ in seqs])

    def each(fmt: str, value: Any) -> bytes | int:
        values = [value(b) for b, _ in facts]
        if values.count(values[0]) == len(values):
            return values[0]
        return b"".join(struct.pack(f"={len(seqs)}{fmt}", *[v] * len(seqs)) for v, (_, seqs) in zip(values, facts))

    sequences: bytes | int = NO_SEQUENCE
    if any(b.base_sequence >= 0 for b, _ in facts):  # else none has one: -1
        sequences = b"".join(_INT32.pack(s) for _, seqs in facts for s in seqs)

    return ColumnRun(i, rows, size, span_columns_py(parts), BatchColumns(
        each("q", lambda b: b.position), each("i", lambda b: b.partition_leader_epoch),
        each("q", lambda b: b.producer_id), each("i", lambda b: b.producer_epoch),
        sequences, each("b", lambda b: b.codec),
        bits(TRANSACTIONAL_MASK), bits(CONTROL_MASK), bits(TIMESTAMP_TYPE_MASK)))


_RUN = c_twin("v2_column_run")


def v2_column_run(batches: list[Batch], start: int, lo: int | None, hi: int | None, max_rows: int,
                  max_bytes: int, controls: int = CONTROL_STOPS, check_crc: bool = True,
                  limit: int | None = None) -> ColumnRun | None:
    """``v2_column_run_py`` in C, without Python per batch or record; None without the C
    accelerator or when the run takes nothing (``batches[start]`` goes the per-batch way)."""
    if _RUN is None:
        return None
    lo = INT64_MIN if lo is None else max(lo, INT64_MIN)
    hi = INT64_MAX if hi is None else min(hi, INT64_MAX)
    if lo > INT64_MAX or hi < INT64_MIN:
        return None
    stop, rows, size, columns, batch = _RUN(batches, start, lo, hi, max_rows, max_bytes, controls,
                                            crc32c if check_crc else None,
                                            None if limit is None else run_decompressor(limit), KsegError, CODEC_ZSTD,
                                            CONTROL_MASK, TRANSACTIONAL_MASK, TIMESTAMP_TYPE_MASK)
    if stop == start:
        return None
    return ColumnRun(stop, rows, size, ColumnBuffers(*columns) if columns else None,
                     BatchColumns(*batch) if batch else None)


@dataclass(eq=False)
class ColumnBudget:
    """How much the next column run may take: at most about ``rows`` records and ``bytes`` of
    records data (the run ends after the batch that reaches either); ``controls``, ``check_crc``
    and ``limit`` (of decompressed bytes) are ``v2_column_run``'s. The consumer sets it before it
    asks for more."""

    rows: int
    bytes: int
    controls: int = CONTROL_STOPS
    check_crc: bool = True
    limit: int | None = None
    # The offset errors of the batches a run takes (``kseg.log.checks.OffsetOrder.first_wrong``
    # bound to the file): the first it finds wrong is given alone as ``OffsetDamage``.
    order: Callable[[list[Batch], int, int], tuple[int, list] | None] | None = None


class OffsetDamage(NamedTuple):
    """A batch whose offsets ``ColumnBudget.order`` found wrong (going back, negative, below
    the segment's base offset): given alone, its records not read."""

    batch: Batch
    findings: list


def runs_and_batches(lists: Iterator[list[Batch]], lo: int | None, hi: int | None,
                     budget: ColumnBudget) -> Iterator[ColumnRun | Batch | OffsetDamage]:
    """The batches of the scanner's ``lists``, in order: as many as ``v2_column_run`` takes
    within ``budget`` as runs (those with no record in them left out), each other one by itself
    (with ``budget.order``, a batch of a run whose offsets are wrong as ``OffsetDamage``, the
    run cut before it; the batches given alone are the consumer's to check).
    The lists are read ahead into one window until it holds about the rows a run may take, so
    that a run goes on from one chunk of the file into the next (cut at each chunk's end, its
    columns would be copied to be joined)."""
    window: list[Batch] = []  # batches read, from window[i] not yet given
    i = 0
    more = True

    def short() -> bool:  # whether a run may want more batches than the window holds (about)
        if i >= len(window):
            return True
        first, last = window[i], window[-1]
        return (last.last_offset - first.offset < budget.rows and len(window) - i < budget.rows
                and last.position + last.size - first.position < budget.bytes)

    while True:
        while more and short():
            entries = next(lists, None)
            if entries is None:
                more = False
            else:
                window, i = window[i:] + entries, 0
        if i >= len(window):
            return
        run = v2_column_run(window, i, lo, hi, budget.rows, budget.bytes, budget.controls, budget.check_crc,
                            budget.limit)
        if run is not None and budget.order is not None:
            bad = budget.order(window, i, run.stop)
            if bad is not None:
                j, findings = bad
                if j > i:  # the run up to it, taken again (the same batches: it stops there)
                    run = v2_column_run(window[:j], i, lo, hi, budget.rows, budget.bytes, budget.controls,
                                        budget.check_crc, budget.limit)
                    assert run is not None and run.stop == j
                    if run.rows:
                        yield run
                i = j + 1
                yield OffsetDamage(window[j], findings)
                continue
        if run is not None:
            i = run.stop
            if run.rows:
                yield run
            continue
        # this batch the per-batch way, and those after it no run takes (v0/v1; compressed without a limit)
        i += 1
        yield window[i - 1]
        while i < len(window) and (window[i].magic != 2 or (budget.limit is None and window[i].attributes & CODEC_MASK)):
            i += 1
            yield window[i - 1]


_C = c_twin("span_columns")


def span_columns(parts: Sequence[Part]) -> ColumnBuffers:
    """The records of ``parts`` as column buffers: the C twin when it runs, else the Python reference."""
    if _C is None:
        return span_columns_py(parts)
    return ColumnBuffers(*_C(parts))


__all__ = ["BatchColumns", "CONTROL_ROWS", "CONTROL_SKIPPED", "CONTROL_STOPS", "ColumnBudget", "ColumnBuffers",
           "ColumnRun", "HEADER_SPAN", "OffsetDamage", "RECORD_SPAN", "records_part", "runs_and_batches", "span_columns",
           "span_columns_py", "v2_column_run", "v2_column_run_py"]
