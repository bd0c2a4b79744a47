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
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple, Sequence

from kseg.facts.primitives import INT32_MAX
from kseg.log.fast import c_twin
from kseg.model import Record

RECORD_SPAN = struct.Struct("=11q")  # KsegRecordSpan
HEADER_SPAN = struct.Struct("=4q")  # KsegHeaderSpan
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


_C = c_twin("span_columns")


def span_columns(parts: Sequence[Part]) -> ColumnBuffers:
    """The records of ``parts`` as column buffers: the C twin when it runs, else the Python reference."""
    if _C is None:
        return span_columns_py(parts)
    return ColumnBuffers(*_C(parts))


__all__ = ["ColumnBuffers", "HEADER_SPAN", "RECORD_SPAN", "records_part", "span_columns", "span_columns_py"]
