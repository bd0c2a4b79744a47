"""Sans-IO decoding: bytes in, ``Batch`` and ``Record`` objects out.

Rules: nothing here opens a file. Positions are relative to the buffer plus the
``base`` the caller passes (the buffer's position in its file). Only kseg errors
escape. Hot paths use the struct layouts derived in ``kseg.layouts`` and inline
the one-byte varint case; construct is never run per batch or per record.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from kseg.defaults import KAFKA_TOOL_HEAP_BYTES
from kseg.errors import CorruptBatchError, KsegError, TruncatedError, VarintError
from kseg.facts.log_entry import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAGIC_POSITION,
    MIN_SIZE_BY_MAGIC,
    SIZE_POSITION,
)
from kseg.facts.message_v0v1 import (
    ATTRIBUTES_POSITION,
    CRC_POSITION,
    CRC_START,
    KEY_LENGTH_POSITION,
    RECORD_OVERHEAD_V0,
    V1_TIMESTAMP_POSITION,
)
from kseg.facts.primitives import INT64_MAX, INT64_MIN, MAX_VARINT_BYTES, MAX_VARLONG_BYTES
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.formats.attributes import CODEC_MASK, TIMESTAMP_TYPE_MASK
from kseg.layouts import BATCH_V2_HEADER, ENTRY_FRAMING, LENGTH_I32, LOG_ENTRY_PREFIX, MESSAGE_HEADER
from kseg.model import Batch, Header, Record

_PREFIX = LOG_ENTRY_PREFIX.struct
_V2 = BATCH_V2_HEADER.struct
_I32 = LENGTH_I32.struct
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_FRAMING = ENTRY_FRAMING.struct
_V0 = MESSAGE_HEADER[0].struct
_V1 = MESSAGE_HEADER[1].struct
_new = tuple.__new__
_MIN_SIZE = MIN_SIZE_BY_MAGIC


class Tail(NamedTuple):
    """What ended a walk before the end of the buffer."""

    position: int  # position of the first byte not consumed
    length: int  # bytes from there to the end of the buffer
    error: KsegError  # TruncatedError for a partial entry, CorruptBatchError otherwise


class Scan(NamedTuple):
    batches: list[Batch]
    consumed: int  # bytes of the buffer that formed complete entries
    tail: Tail | None


def scan_entries(
    buf: bytes | memoryview, base: int = 0, *, final: bool = True, start: int = 0, max_entries: int = -1
) -> Scan:
    """Split a buffer of .log bytes into entries (the broker's shallow walk, spec §1.1).

    Walks from ``start`` and returns at most ``max_entries`` (< 0: all); ``consumed``
    is the buffer index after the last complete entry. With ``final=False`` a
    partial entry at the end is left unconsumed for the caller to complete with
    more data; with ``final=True`` it becomes a Tail. ``base`` is the file
    position of ``buf[0]``.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    pos = start
    out: list[Batch] = []
    append = out.append
    unpack_prefix = _PREFIX.unpack_from
    while True:
        if len(out) == max_entries:
            return Scan(out, pos, None)
        left = end - pos
        if left == 0:
            return Scan(out, pos, None)
        if left < HEADER_SIZE_UP_TO_MAGIC:
            if not final:
                return Scan(out, pos, None)
            err: KsegError = TruncatedError(
                "truncated entry header",
                position=base + pos,
                expected=f"at least {HEADER_SIZE_UP_TO_MAGIC} bytes",
                found=f"{left} bytes",
            )
            return Scan(out, pos, Tail(base + pos, left, err))
        offset, size, _, magic = unpack_prefix(mv, pos)
        min_size = _MIN_SIZE.get(magic)
        if min_size is None:
            err = CorruptBatchError(
                "unknown magic", position=base + pos + MAGIC_POSITION, expected="0, 1 or 2", found=magic
            )
            return Scan(out, pos, Tail(base + pos, left, err))
        if size < min_size:
            err = CorruptBatchError(
                f"size field too small for magic {magic}",
                position=base + pos + SIZE_POSITION,
                expected=f">= {min_size}",
                found=size,
            )
            return Scan(out, pos, Tail(base + pos, left, err))
        total = size + LOG_OVERHEAD
        if total > left:
            if not final:
                return Scan(out, pos, None)
            err = TruncatedError(
                "entry runs past the end of the data",
                position=base + pos,
                expected=f"{total} bytes",
                found=f"{left} bytes",
            )
            return Scan(out, pos, Tail(base + pos, left, err))
        append(_make_batch(mv, pos, total, magic, base))
        pos += total


def header_batch(header: bytes | memoryview, position: int, end: int) -> Batch | None:
    """The Batch of an entry read only up to the end of its header (``RECORD_BATCH_OVERHEAD``
    bytes cover any magic's): every header field, ``raw`` only those bytes. For comparing
    headers (``kseg diff``), never for the entry's records or its CRC. None where ``scan_entries``
    would not take the header (fewer bytes than a header, an unknown magic, a size its magic
    does not allow) or the entry runs past ``end``, the end of the data: read those whole."""
    if len(header) < RECORD_BATCH_OVERHEAD:
        return None
    mv = header if isinstance(header, memoryview) else memoryview(header)
    _, size, _, magic = _PREFIX.unpack_from(mv, 0)
    least = _MIN_SIZE.get(magic)
    if least is None or size < least or position + size + LOG_OVERHEAD > end:
        return None
    return _make_batch(mv, 0, size + LOG_OVERHEAD, magic, position)


class KafkaEntry(NamedTuple):
    """How Kafka's reader (``FileLogInputStream.nextBatch``) takes the bytes at a position:
    ``found`` is "end" (its log header does not fit: no batch, the walk ends), "undersized" (a
    size below the minimum record overhead: its CorruptRecordException), "partial" (the entry
    runs past the end: trailing bytes), "legacy" (a magic below 2, negative ones included) or
    "v2" (a magic of 2 or more: read as a v2 batch, whose CRC does not cover the magic)."""

    found: str
    offset: int = 0
    size: int = 0
    magic: int = 0


def kafka_entry_at(head: bytes | memoryview, remaining: int) -> KafkaEntry:
    """Kafka's framing rule, the one place kseg keeps it: the entry whose first bytes are
    ``head`` (at least ``HEADER_SIZE_UP_TO_MAGIC`` of them when there are that many), with
    ``remaining`` bytes from its start to the end Kafka reads to (the file's, or a slice's)."""
    if remaining <= HEADER_SIZE_UP_TO_MAGIC or len(head) < HEADER_SIZE_UP_TO_MAGIC:
        return KafkaEntry("end")
    offset, size, _, magic = _PREFIX.unpack_from(head, 0)
    if size < RECORD_OVERHEAD_V0:
        found = "undersized"
    elif LOG_OVERHEAD + size > remaining:
        found = "partial"
    else:
        found = "legacy" if magic < 2 else "v2"
    return KafkaEntry(found, offset, size, magic)


def kafka_short_entry(data: bytes, position: int) -> Batch | None:
    """The entry ``data`` starts with (at ``position`` in its file) as Kafka's reader
    (``FileLogInputStream.nextBatch``) takes one ``scan_entries`` does not: any magic of 2 or
    more as a v2 batch (its CRC does not cover the magic), a v2 size below the v2 header's with
    the header read on past the entry's end (``data`` holds at least the header then, and
    ``Batch.size`` is the entry's), a v1 size below the v1 header's (with its key and value
    lengths: the line's fields are all inside the entry; its records cannot be read). None where
    Kafka would not read it as a batch: a size below its minimum record overhead, a negative
    magic, or too few bytes in ``data``."""
    entry = kafka_entry_at(data, len(data))
    if entry.found == "legacy" and 0 <= entry.magic < 2 and entry.size < _MIN_SIZE[entry.magic]:
        return _make_batch(memoryview(data), 0, entry.size + LOG_OVERHEAD, entry.magic, position)
    if entry.found != "v2" or len(data) < RECORD_BATCH_OVERHEAD:
        return None
    batch = _make_batch(memoryview(data), 0, max(entry.size + LOG_OVERHEAD, RECORD_BATCH_OVERHEAD),
                        entry.magic, position)
    return batch._replace(size=entry.size + LOG_OVERHEAD)


def _make_batch(mv: memoryview, pos: int, total: int, magic: int, base: int) -> Batch:
    raw = mv[pos : pos + total]
    if magic >= 2:
        (off, _, ple, _, crc, attrs, lod, base_ts, max_ts, pid, pepoch, bseq, count) = _V2.unpack_from(raw)
        return _new(Batch, (base + pos, total, magic, off, crc, attrs, max_ts, raw,
                            ple, lod, base_ts, pid, pepoch, bseq, count))
    if magic == 1:
        off, _, crc, _, attrs, ts = _V1.unpack_from(raw)
    else:
        off, _, crc, _, attrs = _V0.unpack_from(raw)
        ts = -1
    return _new(Batch, (base + pos, total, magic, off, crc, attrs & 0xFF, ts, raw,
                        None, None, None, None, None, None, None))


# --------------------------------------------------------------------------- varints


_MASK = {MAX_VARINT_BYTES: 0xFFFFFFFF, MAX_VARLONG_BYTES: 0xFFFFFFFFFFFFFFFF}


def _wrap64(n: int) -> int:
    """Java long arithmetic: wrap to the int64 range."""
    return ((n - INT64_MIN) & 0xFFFFFFFFFFFFFFFF) + INT64_MIN


def _uvarint(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """Unsigned LEB128 at ``pos``; returns (value, position after). Zig-zag is the caller's.

    Like Java's readVarint/readVarlong: at most 5 (10) bytes, bits past 32 (64) dropped.
    """
    value = 0
    shift = 0
    for i in range(max_bytes):
        try:
            b = data[pos + i]
        except IndexError:
            if i == 0:
                raise CorruptBatchError("record runs past the end of the records", position=pos) from None
            raise VarintError("varint runs past the end of the data", position=pos + i) from None
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & _MASK[max_bytes], pos + i + 1
        shift += 7
    raise VarintError(
        "varint too long", position=pos, expected=f"at most {max_bytes} bytes", found=f"more than {max_bytes}"
    )


def read_varint(data: bytes, pos: int, max_bytes: int = MAX_VARINT_BYTES) -> tuple[int, int]:
    """A zig-zag varint (``max_bytes`` 5) or varlong (10) at ``pos``: (value, position after)."""
    u, pos = _uvarint(data, pos, max_bytes)
    return (u >> 1) ^ -(u & 1), pos


# --------------------------------------------------------------------------- v2 records


def decode_v2_records(
    data: bytes, base_offset: int, base_timestamp: int, count: int, log_append_time: int | None,
    into: list[Record] | None = None, *, kafka_lengths: bool = False,
) -> list[Record]:
    """Decode ``count`` varint records that must use up ``data`` exactly (spec §3.3).

    Errors carry the position inside ``data``; the caller shifts them. Every read is
    ``data[pos]`` at the position it needs, so an IndexError names the exact byte. ``into``:
    the list the records are appended to (what decoded before an error stays in it).
    ``kafka_lengths``: a key, value or header value length below -1 reads as null, as Kafka's
    reader (``Utils.readBytes``) takes any negative one; kseg's own verdict is damage.
    """
    if count < 0:
        raise CorruptBatchError("negative record count", found=count, expected=">= 0")
    new = tuple.__new__
    R = Record
    out: list[Record] = [] if into is None else into
    append = out.append
    end = len(data)
    pos = 0
    no_headers: tuple[Header, ...] = ()
    i = 0
    try:
        for i in range(count):
            start = pos
            u = data[pos]
            if u < 128:
                pos += 1
            else:
                u, pos = _uvarint(data, pos, MAX_VARINT_BYTES)
            if u & 1:
                raise CorruptBatchError("negative record length", position=start, found=-((u + 1) >> 1))
            rec_end = pos + (u >> 1)
            if rec_end > end:
                raise CorruptBatchError(
                    "record runs past the end of the records", position=start,
                    expected=f"<= {end - pos} bytes", found=f"{u >> 1} bytes",
                )
            attrs = data[pos]
            pos += 1
            u = data[pos]
            if u < 128:
                pos += 1
            else:
                u, pos = _uvarint(data, pos, MAX_VARLONG_BYTES)
            ts = base_timestamp + ((u >> 1) ^ -(u & 1))
            if not INT64_MIN <= ts <= INT64_MAX:
                ts = _wrap64(ts)
            u = data[pos]
            if u < 128:
                pos += 1
            else:
                u, pos = _uvarint(data, pos, MAX_VARINT_BYTES)
            offset = base_offset + ((u >> 1) ^ -(u & 1))
            if not INT64_MIN <= offset <= INT64_MAX:
                offset = _wrap64(offset)
            at = pos
            u = data[pos]
            if u < 128:
                pos += 1
            else:
                u, pos = _uvarint(data, pos, MAX_VARINT_BYTES)
            if u & 1:
                if u != 1 and not kafka_lengths:
                    raise CorruptBatchError("invalid key length", position=pos, found=-((u + 1) >> 1))
                key = None
            else:
                n = pos + (u >> 1)
                if n > rec_end:
                    raise CorruptBatchError("key runs past its record", position=at,
                                            expected=f"<= {rec_end - pos} bytes", found=f"{u >> 1} bytes")
                key = data[pos:n]
                pos = n
            at = pos
            u = data[pos]
            if u < 128:
                pos += 1
            else:
                u, pos = _uvarint(data, pos, MAX_VARINT_BYTES)
            if u & 1:
                if u != 1 and not kafka_lengths:
                    raise CorruptBatchError("invalid value length", position=pos, found=-((u + 1) >> 1))
                value = None
            else:
                n = pos + (u >> 1)
                if n > rec_end:
                    raise CorruptBatchError("value runs past its record", position=at,
                                            expected=f"<= {rec_end - pos} bytes", found=f"{u >> 1} bytes")
                value = data[pos:n]
                pos = n
            u = data[pos]
            if u == 0:
                pos += 1
                headers = no_headers
            else:
                headers, pos = _decode_headers(data, pos, rec_end, kafka_lengths)
            if pos != rec_end:
                raise CorruptBatchError(
                    "record length does not match its fields", position=start,
                    expected=f"record to end at byte {rec_end}", found=f"fields end at byte {pos}",
                )
            append(new(R, (offset, ts if log_append_time is None else log_append_time,
                           key, value, headers, ts, attrs, 2, None)))
    except IndexError:
        raise CorruptBatchError(
            "record runs past the end of the records", position=pos, where=f"record {i}"
        ) from None
    except KsegError as e:
        if e.where is None:
            e.where = f"record {i}"
        raise
    if pos != end:
        raise CorruptBatchError(
            "records still remaining after the declared record count", position=pos,
            expected=f"{count} records using {pos} bytes", found=f"{end - pos} more bytes",
        )
    return out


def _decode_headers(data: bytes, pos: int, rec_end: int, kafka_lengths: bool = False) -> tuple[tuple[Header, ...], int]:
    count, pos = read_varint(data, pos)
    if count < 0 or count > rec_end - pos:
        raise CorruptBatchError("invalid header count", position=pos, expected=f"0..{max(rec_end - pos, 0)}",
                                found=count)
    headers = []
    for _ in range(count):
        klen, pos = read_varint(data, pos)
        if klen < 0:
            raise CorruptBatchError("header key is null or negative", position=pos, found=klen, expected=">= 0")
        if pos + klen > rec_end:
            raise CorruptBatchError("header key runs past its record", position=pos)
        key = data[pos : pos + klen].decode("utf-8", "surrogateescape")
        pos += klen
        vlen, pos = read_varint(data, pos)
        if vlen < -1 and not kafka_lengths:
            raise CorruptBatchError("invalid header value length", position=pos, found=vlen)
        if vlen < 0:
            value = None
        else:
            if pos + vlen > rec_end:
                raise CorruptBatchError("header value runs past its record", position=pos)
            value = data[pos : pos + vlen]
            pos += vlen
        headers.append(Header(key, value))
    return tuple(headers), pos


# --------------------------------------------------------------------------- legacy messages


def legacy_key_value(raw: memoryview | bytes, magic: int) -> tuple[bytes | None, bytes | None]:
    """Key and value of one legacy message (``raw`` = the whole entry with its framing)."""
    end = len(raw)
    pos = KEY_LENGTH_POSITION[magic]
    (klen,) = _I32.unpack_from(raw, pos)
    pos += 4
    if klen < -1 or pos + max(klen, 0) + 4 > end:
        raise CorruptBatchError("invalid key length", position=pos - 4, expected=f"-1..{end - pos - 4}", found=klen)
    key = None if klen < 0 else bytes(raw[pos : pos + klen])
    pos += max(klen, 0)
    (vlen,) = _I32.unpack_from(raw, pos)
    pos += 4
    if vlen < -1 or pos + max(vlen, 0) != end:
        raise CorruptBatchError(
            "value length does not match the message size", position=pos - 4,
            expected=f"{end - pos}" if end - pos >= 0 else "-1", found=vlen,
        )
    if vlen < 0:
        return key, None
    return key, bytes(raw[pos:end])


class KafkaLegacyRead(NamedTuple):
    """An uncompressed legacy message as Kafka's ``LegacyRecord`` reads it when kseg cannot
    (``kafka_legacy_read``): ``sizes`` are its raw key and value lengths, the record line's
    ``keySize``/``valueSize`` (None: the value length lies outside the message, so Kafka throws
    before the line); ``key``/``value`` what a reader of the contents gets (None for a negative
    length); ``stop`` the exception Kafka throws reading the sizes (``sizes`` None) or, if
    ``sizes`` are set, reading the contents (which only a reader of them meets)."""

    sizes: tuple[int, int] | None
    key: bytes | None = None
    value: bytes | None = None
    stop: CorruptBatchError | None = None


def _int32(n: int) -> int:
    """Java int arithmetic: wrap to the int32 range."""
    return ((n + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def kafka_legacy_read(raw: memoryview | bytes, magic: int, position: int = 0) -> KafkaLegacyRead:
    """Kafka's reading of a message's key and value (``raw``: the whole entry, at ``position`` in
    its file), which holds the lengths only to the message's bytes, not to each other: a negative
    key length reads as no key and the value length is taken where a key of no bytes would end;
    a value may end before the message does. A length past the message's end throws there (the
    length field: an index out of bounds; the bytes: a slice past the buffer's capacity)."""
    end = len(raw)
    at = KEY_LENGTH_POSITION[magic]
    if at + 4 > end:
        return KafkaLegacyRead(None, stop=CorruptBatchError(
            "key length past the end of the message", position=position + at, expected=f"<= {end - 4}", found=at))
    (klen,) = _I32.unpack_from(raw, at)
    value_at = _int32(at - LOG_OVERHEAD + 4 + max(klen, 0)) + LOG_OVERHEAD
    if value_at < LOG_OVERHEAD or value_at + 4 > end:
        return KafkaLegacyRead(None, stop=CorruptBatchError(
            "key length past the end of the message", position=position + at,
            expected=f"-1..{end - at - 8}", found=klen))
    (vlen,) = _I32.unpack_from(raw, value_at)
    key = None if klen < 0 else bytes(raw[at + 4 : at + 4 + klen])
    value = None
    stop = None
    if vlen >= 0:
        room = end - value_at - 4
        if vlen > room:
            stop = CorruptBatchError("value length past the end of the message", position=position + value_at,
                                     expected=f"-1..{room}", found=vlen)
        else:
            value = bytes(raw[value_at + 4 : value_at + 4 + vlen])
    return KafkaLegacyRead((klen, vlen), key, value, stop)


class KafkaLegacyLine(NamedTuple):
    """A legacy message's record line as kafka-dump-log.sh prints it from Kafka's reading: the
    message's offset and timestamp as the line shows them, its stored CRC, whether that CRC is
    right, and its key and value (``kafka_legacy_read``)."""

    offset: int
    timestamp: int
    crc: int
    valid: bool
    read: KafkaLegacyRead


def kafka_legacy_line(raw: memoryview | bytes, offset: int, timestamp: int, position: int = 0) -> KafkaLegacyLine:
    """The line of the message ``raw`` (a whole entry) as Kafka reads it: by its magic byte, 0 as v0
    and any other as v1 (``LegacyRecord``'s rule), its CRC over the bytes from the magic on."""
    (crc,) = _U32.unpack_from(raw, CRC_POSITION)
    valid = zlib.crc32(raw[CRC_START:]) == crc
    layout = 0 if raw[MAGIC_POSITION] == 0 else 1
    return KafkaLegacyLine(offset, timestamp, crc, valid, kafka_legacy_read(raw, layout, position))


def legacy_record(batch: Batch, offset: int, timestamp: int) -> Record:
    key, value = legacy_key_value(batch.raw, batch.magic)
    return Record(offset, timestamp, key, value, (), batch.max_timestamp, batch.attributes, batch.magic, batch.crc)


def decode_legacy_wrapper(wrapper: Batch, inner_bytes: bytes) -> list[Record]:
    """Inner records of a compressed v0/v1 wrapper, with absolute offsets (spec §2.3).

    Errors carry positions inside the decompressed bytes.
    """
    scan = scan_entries(inner_bytes, 0, final=True)
    if scan.tail is not None:
        raise scan.tail.error
    inner = scan.batches
    if not inner:
        raise CorruptBatchError("compressed message set has no inner messages")
    for m in inner:
        if m.magic > 1:
            raise CorruptBatchError("v2 batch inside a legacy wrapper", position=m.position, found=m.magic)
        if m.attributes & CODEC_MASK:
            raise CorruptBatchError(
                "inner messages must not be compressed", position=m.position,
                expected="codec none", found=f"codec {m.attributes & CODEC_MASK}",
            )
    # v1 inner offsets are relative to the wrapper's (the last one's); librdkafka writes wrapper
    # offset 0, which Java takes as base 0
    shifted = wrapper.magic != 0 and wrapper.base_offset != 0
    shift = 0
    if shifted:
        last = inner[-1]
        if wrapper.base_offset < last.base_offset:
            raise CorruptBatchError(
                "invalid wrapper offset in compressed v1 message set",
                expected=f">= last inner relative offset {last.base_offset}", found=wrapper.base_offset,
            )
        if last.base_offset < 0:
            raise CorruptBatchError("negative relative offset in compressed v1 message set",
                                    position=last.position, expected=">= 0", found=last.base_offset)
        shift = wrapper.base_offset - last.base_offset
    log_append = wrapper.magic >= 1 and bool(wrapper.attributes & TIMESTAMP_TYPE_MASK)
    out = []
    for m in inner:
        ts = wrapper.max_timestamp if log_append else m.max_timestamp
        if shifted and not 0 <= m.base_offset <= INT64_MAX - shift:  # an absolute offset must be a long
            raise CorruptBatchError("relative offset out of range in compressed v1 message set",
                                    position=m.position, expected=f"0..{INT64_MAX - shift}", found=m.base_offset)
        try:
            out.append(legacy_record(m, m.base_offset + shift, ts))
        except KsegError as e:
            raise e.shift(m.position)
    return out


def kafka_wrapper_lines(wrapper: Batch, inner_bytes: bytes | None
                        ) -> tuple[list[KafkaLegacyLine], CorruptBatchError | None]:
    """A compressed legacy wrapper's record lines as kafka-dump-log.sh prints them from Kafka's
    reading (``AbstractLegacyRecordBatch.DeepRecordsIterator``), and the error it throws after them
    (None: it goes on). Kafka reads every inner message before it gives the first: one whose log
    header or bytes the payload does not hold whole ends the set quietly; a size below the minimum,
    no inner message, a null value or a v1 wrapper offset below the last relative offset throws
    before any line. It checks no magic or length (each line is read as ``kafka_legacy_line`` reads
    it) and stops at a compressed inner message when it reaches it."""
    if inner_bytes is None:
        return [], CorruptBatchError("compressed message set with a null value", position=wrapper.position)
    entries, pos, end = [], 0, len(inner_bytes)
    while end - pos >= LOG_OVERHEAD:
        offset, size = _FRAMING.unpack_from(inner_bytes, pos)
        if size < RECORD_OVERHEAD_V0:
            return [], CorruptBatchError("inner message size below the minimum record overhead",
                                         position=wrapper.position, where=f"inner message {len(entries)}",
                                         expected=f">= {RECORD_OVERHEAD_V0}", found=size)
        if size > end - pos - LOG_OVERHEAD:
            if size > KAFKA_TOOL_HEAP_BYTES:  # the buffer for it is allocated before it is read
                return [], CorruptBatchError("inner message size larger than the tool's heap",
                                             position=wrapper.position, where=f"inner message {len(entries)}",
                                             expected=f"<= {end - pos - LOG_OVERHEAD}", found=size)
            break
        entries.append((pos, offset, size))
        pos += LOG_OVERHEAD + size
    if not entries:
        return [], CorruptBatchError("compressed message set has no inner messages", position=wrapper.position)
    base = None
    if wrapper.magic >= 1:  # KIP-31 relative offsets; librdkafka's wrapper offset 0 is base 0
        last = entries[-1][1]
        if wrapper.base_offset != 0 and wrapper.base_offset < last:
            return [], CorruptBatchError("invalid wrapper offset in compressed v1 message set",
                                         position=wrapper.position,
                                         expected=f">= last inner relative offset {last}", found=wrapper.base_offset)
        base = 0 if wrapper.base_offset == 0 else wrapper.base_offset - last
    log_append = wrapper.magic >= 1 and bool(wrapper.attributes & TIMESTAMP_TYPE_MASK)
    lines = []
    for i, (at, offset, size) in enumerate(entries):
        raw = inner_bytes[at : at + LOG_OVERHEAD + size]
        if raw[ATTRIBUTES_POSITION] & CODEC_MASK:
            return lines, CorruptBatchError("inner messages must not be compressed", position=wrapper.position,
                                            where=f"inner message {i}", expected="codec none",
                                            found=f"codec {raw[ATTRIBUTES_POSITION] & CODEC_MASK}")
        magic = raw[MAGIC_POSITION]
        if magic == 0:
            ts = -1
        elif magic == 1 and log_append:
            ts = wrapper.max_timestamp
        else:
            (ts,) = _I64.unpack_from(raw, V1_TIMESTAMP_POSITION)
        lines.append(kafka_legacy_line(raw, offset if base is None else _wrap64(base + offset), ts, wrapper.position))
    return lines, None


def effective_log_append_time(batch: Batch) -> int | None:
    """The timestamp a LogAppendTime v2 batch imposes on all its records, else None."""
    if batch.attributes & TIMESTAMP_TYPE_MASK:
        return batch.max_timestamp
    return None


def records_region(batch: Batch) -> memoryview:
    """The bytes after the v2 batch header: records, or one compressed stream of them."""
    return batch.raw[RECORD_BATCH_OVERHEAD:]


def legacy_value_region(batch: Batch) -> tuple[int, memoryview | None]:
    """(position within the entry, value bytes) of a legacy message; value None if null."""
    raw = batch.raw
    pos = KEY_LENGTH_POSITION[batch.magic]
    (klen,) = _I32.unpack_from(raw, pos)
    if klen < -1 or pos + 4 + max(klen, 0) + 4 > len(raw):
        raise CorruptBatchError("invalid key length", position=pos, found=klen)
    pos += 4 + max(klen, 0)
    (vlen,) = _I32.unpack_from(raw, pos)
    if vlen < -1 or pos + 4 + max(vlen, 0) != len(raw):
        raise CorruptBatchError("value length does not match the message size", position=pos, found=vlen)
    if vlen < 0:
        return pos + 4, None
    return pos + 4, raw[pos + 4 :]
