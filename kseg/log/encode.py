"""Sans-IO encoding, the mirror of ``decode``: records and batch fields in, bytes out.

Builds v2 batches (optionally around an already-compressed payload, so that
a batch can be re-emitted without recompression), v0/v1 messages and
compressed wrappers. CRCs are always computed here, never trusted from input.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from kseg.checksums import crc32c
from kseg.codecs import get_codec
from kseg.errors import InputError
from kseg.facts.log_entry import LOG_OVERHEAD, SIZE_POSITION
from kseg.facts.message_v0v1 import CRC_POSITION as LEGACY_CRC_POSITION
from kseg.facts.message_v0v1 import CRC_START as LEGACY_CRC_START
from kseg.facts.primitives import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from kseg.facts.record_batch_v2 import CRC_POSITION as V2_CRC_POSITION
from kseg.facts.record_batch_v2 import CRC_START as V2_CRC_START
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.formats.attributes import (
    CODEC_MASK,
    CODEC_PLUGIN,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    LOG_APPEND_TIME,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    PLUGIN_ID_SHIFT,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kseg.layouts import BATCH_V2_HEADER, LENGTH_I32, MESSAGE_HEADER
from kseg.log import fast
from kseg.model import Batch, Header, Record

_V2 = BATCH_V2_HEADER.struct
_I32 = LENGTH_I32.struct
_U32 = struct.Struct(">I")  # a stored CRC


def _uvarint(out: bytearray, u: int) -> None:
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def write_varint(out: bytearray, n: int) -> None:
    """Append a zig-zag varint (32-bit)."""
    _uvarint(out, ((n << 1) ^ (n >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, n: int) -> None:
    """Append a zig-zag varlong (64-bit)."""
    _uvarint(out, ((n << 1) ^ (n >> 63)) & 0xFFFFFFFFFFFFFFFF)


def encode_v2_records(records: Sequence[Record], base_offset: int, base_timestamp: int) -> bytes:
    """The records section of a v2 batch (uncompressed); C accelerated when built."""
    encode_c = fast.c_encoder("encode_v2_records")
    if encode_c is not None:
        try:
            return encode_c(records, base_offset, base_timestamp)
        except OverflowError as e:
            raise InputError(str(e)) from None
    return encode_v2_records_py(records, base_offset, base_timestamp)


def encode_v2_records_py(records: Iterable[Record], base_offset: int, base_timestamp: int) -> bytes:
    """The Python reference of ``encode_v2_records``."""
    out = bytearray()
    body = bytearray()
    for r in records:
        ts_delta = r.stored_timestamp - base_timestamp
        off_delta = r.offset - base_offset
        if not (INT64_MIN <= ts_delta <= INT64_MAX and INT32_MIN <= off_delta <= INT32_MAX
                and INT64_MIN <= r.stored_timestamp <= INT64_MAX and INT64_MIN <= r.offset <= INT64_MAX):
            raise InputError("record timestamp or offset does not fit the batch's base")
        body.clear()
        body.append(r.attributes & 0xFF)
        write_varlong(body, ts_delta)
        write_varint(body, off_delta)
        if r.key is None:
            body.append(1)
        else:
            write_varint(body, len(r.key))
            body += r.key
        if r.value is None:
            body.append(1)
        else:
            write_varint(body, len(r.value))
            body += r.value
        write_varint(body, len(r.headers))
        for h in r.headers:
            k = h.key.encode("utf-8", "surrogateescape")
            write_varint(body, len(k))
            body += k
            if h.value is None:
                body.append(1)
            else:
                write_varint(body, len(h.value))
                body += h.value
        write_varint(out, len(body))
        out += body
    return bytes(out)


@dataclass(frozen=True)
class BatchHeaderV2:
    """The fields of a v2 batch header a writer chooses (CRC and length are computed)."""

    base_offset: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    record_count: int
    attributes: int = 0
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE

    def with_(self, **changes) -> "BatchHeaderV2":
        return replace(self, **changes)


def assemble_v2(header: BatchHeaderV2, payload: bytes) -> bytes:
    """A complete v2 batch from its header fields and its (possibly compressed) records bytes."""
    total = RECORD_BATCH_OVERHEAD + len(payload)
    buf = bytearray(total)
    _V2.pack_into(
        buf, 0, header.base_offset, total - LOG_OVERHEAD, header.partition_leader_epoch, 2, 0,
        header.attributes, header.last_offset_delta, header.base_timestamp, header.max_timestamp,
        header.producer_id, header.producer_epoch, header.base_sequence, header.record_count,
    )
    buf[RECORD_BATCH_OVERHEAD:] = payload
    _U32.pack_into(buf, V2_CRC_POSITION, crc32c(memoryview(buf)[V2_CRC_START:]))
    return bytes(buf)


def v2_attributes(
    codec: int = 0,
    *,
    timestamp_type: int = 0,
    transactional: bool = False,
    control: bool = False,
    delete_horizon: bool = False,
    plugin_id: int | None = None,
) -> int:
    attrs = codec & CODEC_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_MASK
    if transactional:
        attrs |= TRANSACTIONAL_MASK
    if control:
        attrs |= CONTROL_MASK
    if delete_horizon:
        attrs |= DELETE_HORIZON_MASK
    if plugin_id is not None:
        attrs = (attrs & ~CODEC_MASK) | CODEC_PLUGIN | (plugin_id << PLUGIN_ID_SHIFT)
    return attrs


def build_v2_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    codec: int = 0,
    level: int | None = None,
    timestamp_type: int = 0,
    transactional: bool = False,
    control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    last_offset_delta: int | None = None,
    delete_horizon_ms: int | None = None,
    max_timestamp: int | None = None,
    plugin_id: int | None = None,
    codec_impl=None,
) -> bytes:
    """Build a v2 batch from records with absolute offsets (Kafka's MemoryRecordsBuilder rules).

    ``last_offset_delta`` overrides the computed one (the cleaner keeps the
    original); ``delete_horizon_ms`` sets bit 6 and becomes the base timestamp.
    ``max_timestamp`` overrides the computed max (LogAppendTime: the append time).
    """
    if base_offset is None:
        base_offset = records[0].offset if records else 0
    if records:
        first_ts = records[0].stored_timestamp
        lod = records[-1].offset - base_offset if last_offset_delta is None else last_offset_delta
        max_ts = max(r.stored_timestamp for r in records) if max_timestamp is None else max_timestamp
    else:
        first_ts = NO_TIMESTAMP
        lod = 0 if last_offset_delta is None else last_offset_delta
        max_ts = NO_TIMESTAMP if max_timestamp is None else max_timestamp
    base_ts = first_ts if delete_horizon_ms is None else delete_horizon_ms
    for r in records:
        delta = r.offset - base_offset
        if not (0 <= delta <= INT32_MAX):
            raise InputError(f"record offset {r.offset} does not fit a batch based at {base_offset}")
    raw_records = encode_v2_records(records, base_offset, base_ts)
    attrs = v2_attributes(
        codec,
        timestamp_type=timestamp_type,
        transactional=transactional,
        control=control,
        delete_horizon=delete_horizon_ms is not None,
        plugin_id=plugin_id,
    )
    payload = raw_records
    if codec or plugin_id is not None:
        if codec_impl is None:

            codec_impl = get_codec(codec)
        payload = codec_impl.compress(raw_records, magic=2, level=level)
    header = BatchHeaderV2(
        base_offset=base_offset,
        last_offset_delta=lod,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        record_count=len(records),
        attributes=attrs,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    return assemble_v2(header, payload)


# --------------------------------------------------------------------------- legacy


def _nullable32(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += len(data).to_bytes(4, "big")
        out += data


def build_legacy_message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    """One v0/v1 entry with its 12-byte log framing and a computed CRC-32."""
    if magic not in (0, 1):
        raise InputError(f"legacy messages have magic 0 or 1, not {magic}")
    header = MESSAGE_HEADER[magic].struct
    buf = bytearray(header.size)
    if magic == 1:
        header.pack_into(buf, 0, offset, 0, 0, magic, _s8(attributes), timestamp)
    else:
        header.pack_into(buf, 0, offset, 0, 0, magic, _s8(attributes))
    _nullable32(buf, key)
    _nullable32(buf, value)
    _I32.pack_into(buf, SIZE_POSITION, len(buf) - LOG_OVERHEAD)
    _U32.pack_into(buf, LEGACY_CRC_POSITION, zlib.crc32(memoryview(buf)[LEGACY_CRC_START:]))
    return bytes(buf)


def _s8(v: int) -> int:
    v &= 0xFF
    return v - 256 if v > 127 else v


def legacy_message_crc(r: Record) -> int:
    """The CRC-32 a legacy record's message should carry (recomputed from its fields)."""
    raw = build_legacy_message(0, r.magic if r.magic in (0, 1) else 1, r.attributes, r.stored_timestamp, r.key, r.value)
    return _U32.unpack_from(raw, LEGACY_CRC_POSITION)[0]


def build_legacy_message_set(
    records: Sequence[Record], *, magic: int, relative_to: int | None = None
) -> bytes:
    """Legacy messages, one per record (a wrapper's inner set, or top-level messages):
    absolute offsets, or relative to ``relative_to`` (v1 inner). C accelerated when built."""
    encode_c = fast.c_encoder("encode_legacy_messages")
    try:
        if encode_c is not None and magic in (0, 1):
            return encode_c(records, magic, relative_to)
        return build_legacy_message_set_py(records, magic=magic, relative_to=relative_to)
    except (OverflowError, struct.error) as e:  # an offset or timestamp past int64, both twins
        raise InputError(f"cannot encode a legacy message: {e}") from None


def build_legacy_message_set_py(
    records: Sequence[Record], *, magic: int, relative_to: int | None = None
) -> bytes:
    """The Python reference of ``build_legacy_message_set``."""
    out = bytearray()
    for r in records:
        off = r.offset if relative_to is None else r.offset - relative_to
        out += build_legacy_message(off, magic, r.attributes & ~CODEC_MASK, r.stored_timestamp, r.key, r.value)
    return bytes(out)


def build_legacy_wrapper(
    records: Sequence[Record],
    *,
    magic: int,
    codec: int,
    level: int | None = None,
    timestamp_type: int = 0,
    wrapper_timestamp: int | None = None,
    codec_impl=None,
) -> bytes:
    """A compressed v0/v1 wrapper (spec §2.3): wrapper offset = last inner offset;
    v1 inner offsets relative to the first record, v0 absolute."""
    if not records:
        raise InputError("a compressed wrapper needs at least one record")
    relative_to = records[0].offset if magic == 1 else None
    inner = build_legacy_message_set(records, magic=magic, relative_to=relative_to)
    if codec_impl is None:

        codec_impl = get_codec(codec)
    value = codec_impl.compress(inner, magic=magic, level=level)
    return wrap_legacy(records[-1].offset, magic, codec, value, timestamp_type=timestamp_type,
                       timestamp=wrapper_timestamp if wrapper_timestamp is not None
                       else max(r.stored_timestamp for r in records))


def wrap_legacy(offset: int, magic: int, codec: int, value: bytes, *, timestamp_type: int = 0,
                timestamp: int = NO_TIMESTAMP) -> bytes:
    """A wrapper message around an already-compressed inner message set."""
    attrs = codec & CODEC_MASK
    if magic == 1 and timestamp_type == LOG_APPEND_TIME:
        attrs |= TIMESTAMP_TYPE_MASK
    return build_legacy_message(offset, magic, attrs, timestamp if magic == 1 else NO_TIMESTAMP, None, value)


def header_of(batch: Batch) -> BatchHeaderV2:
    """The writer-chosen fields of a decoded v2 batch."""
    b = batch
    assert (b.last_offset_delta is not None and b.base_timestamp is not None and b.record_count is not None
            and b.partition_leader_epoch is not None and b.producer_id is not None
            and b.producer_epoch is not None and b.base_sequence is not None), "not a v2 batch"
    return BatchHeaderV2(
        base_offset=b.base_offset,
        last_offset_delta=b.last_offset_delta,
        base_timestamp=b.base_timestamp,
        max_timestamp=b.max_timestamp,
        record_count=b.record_count,
        attributes=b.attributes,
        partition_leader_epoch=b.partition_leader_epoch,
        producer_id=b.producer_id,
        producer_epoch=b.producer_epoch,
        base_sequence=b.base_sequence,
    )


__all__ = [
    "BatchHeaderV2",
    "Header",
    "assemble_v2",
    "build_legacy_message",
    "build_legacy_message_set",
    "build_legacy_wrapper",
    "build_v2_batch",
    "encode_v2_records",
    "header_of",
    "legacy_message_crc",
    "v2_attributes",
    "wrap_legacy",
    "write_varint",
    "write_varlong",
]
