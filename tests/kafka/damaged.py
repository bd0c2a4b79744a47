#!/usr/bin/env python3
"""What the real kafka-dump-log.sh prints on damaged copies of broker-written segments.

Why: the other corpora hold ``kseg-dump-log`` to DumpLogSegments on files brokers wrote whole; an
operator reaches for the tool when a segment is *not* whole. Here each of :data:`SOURCES` (segments
written by Kafka 2.8 and 4.3.1 brokers, magic 0, 1 and 2, transactional, every codec) is damaged in each
way of :data:`DAMAGE` (a byte flipped in its second batch's header and body, cuts, bytes after the last
batch, sizes around Kafka's minimum record overhead, an unknown magic, an unknown compression id, a legacy
message's key and value lengths), one v2 segment's second batch is also damaged inside its records, a
field of one record at a time, under every codec (:data:`RECORD_DAMAGE` x :data:`RECORD_CODECS`), and the
v0 and v1 segments' second to fourth messages are put into a compressed wrapper whose second inner message
(or whose decompressed bytes) is damaged (:data:`INNER_DAMAGE`, :data:`PAYLOAD_DAMAGE` x
:data:`WRAPPER_CODECS`), and a segment's first transaction marker has its key and value damaged
(:data:`CONTROL_DAMAGE`). The release's DumpLogSegments is run on every variant with each flag combination
of :data:`COMBOS`.

The variants are not stored: :func:`variants` makes them again from the fixtures, byte for byte, and each
golden row keeps the SHA-256 of the bytes it was made from (a changed generator shows). The corpus is one
folder per release, ``fixtures/kafka-damaged/<release>/``:

* ``golden.jsonl.xz``: one JSON object per run: ``case`` (``<source>-<damage>``), ``combo``, ``command``
  (``kafka-dump-log.sh`` and its arguments as given, paths relative to the folder :func:`materialise`
  writes the variants in, which was the tool's working directory), ``exit``, ``stdout`` (latin-1),
  ``stderr`` (latin-1; of a Java stack trace, :data:`checks.JAVA_EXCEPTION`, only the first line: the
  exception's class and message), ``sha256`` (of the variant);
* ``manifest.json``: the release, its version and main class, how the goldens were made and the counts.

    python tests/kafka/damaged.py --release 4 --write fixtures/kafka-damaged/4
    python tests/kafka/damaged.py --release 3.9 --write fixtures/kafka-damaged/3.9
    python tests/kafka/damaged.py --release 3.6 --write fixtures/kafka-damaged/3.6
    python tests/kafka/damaged.py --release 2.8 --write fixtures/kafka-damaged/2.8
    python tests/kafka/damaged.py --check fixtures/kafka-damaged/4   # DumpLogSegments still prints it

``tests/test_kafka_damaged_corpora.py`` holds ``kseg-dump-log`` to the goldens without Java;
``tests/kafka/test_kafka_damaged_live.py`` runs ``--check`` on the live tier's releases.
``tests/kafka/damaged_companions.py`` makes a corpus of its own with these functions (their parameters say
where a case's file goes, its flags, a fresh copy per run), so the two are kept the same way.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import json
import shutil
import struct
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import crc32c
import kafka.codec as kafka_codec

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402
import checks  # noqa: E402
import clients  # noqa: E402

FIXTURES = brokers.REPO / "fixtures" / "kafka-damaged"
GOLDEN = "golden.jsonl.xz"  # xz: the outputs repeat across cases further apart than gzip's 32 KiB window
MANIFEST = "manifest.json"
#: the release ``--write`` runs unless ``--release`` names another (4.3.1)
DEFAULT_RELEASE = "4"
JOBS = 3

#: source name -> a segment a broker wrote (path relative to the repository): every batch whole
SOURCES: dict[str, str] = {
    "v2": "fixtures/kafka-4/logdir/v2-0/00000000000000000000.log",
    "v2txn": "fixtures/kafka-4/logdir/txn-0/00000000000000000000.log",
    "v2ctl": "fixtures/kafka-4/logdir/txn-0/00000000000000000015.log",  # begins with a COMMIT marker
    "codecs": "fixtures/kafka-clients/4/logdir/rdkafka-codecs-0/00000000000000000000.log",
    "v0": "fixtures/kafka-2.8/logdir/v0-0/00000000000000000000.log",
    "v1": "fixtures/kafka-2.8/logdir/v1-0/00000000000000000000.log",
}

#: combination id -> kafka-dump-log.sh flags (after ``--files FILE``)
COMBOS: dict[str, list[str]] = {
    "plain": [],
    "deep-data": ["--deep-iteration", "--print-data-log"],
    "deep": ["--deep-iteration"],
}

#: magic -> the header length of a batch (v2: baseOffset .. recordCount) or message (v0: offset, size,
#: crc, magic, attributes, key length, ...; v1 adds the timestamp): the bytes flipped one at a time
HEADER = {0: 26, 1: 34, 2: 61}
SIZE_AT = 8  # the batch's (message's) size field: after its 8-byte offset
MAGIC_AT = 16  # after the size and the partition leader epoch (v2) or the CRC (v0, v1)
#: magic -> the byte holding the compression bits (the low three of the attributes; v2's are 2 bytes)
CODEC_AT = {0: 17, 1: 17, 2: 22}
GARBAGE = b"\x01\x02garbage!" * 3

#: a damage: (segment, where its second batch starts, that batch's length, its header length) -> the
#: damaged segment, or None where the damage does not apply to the source (a header byte past its header)
Damage = Callable[[bytes, int, int, int], bytes | None]


def batches(data: bytes) -> list[tuple[int, int]]:
    """(position, length) of each whole batch (legacy message) from the start, by the size fields."""
    out, p = [], 0
    while p + 12 <= len(data):
        size = struct.unpack_from(">i", data, p + SIZE_AT)[0]
        if size < 0 or p + 12 + size > len(data):
            break
        out.append((p, 12 + size))
        p += 12 + size
    return out


def _flip(at: Callable[[int, int], int], header_only: bool = False) -> Damage:
    """xor 0xFF at ``at(length, header)`` bytes into the second batch."""
    def damage(data: bytes, start: int, length: int, header: int) -> bytes | None:
        i = at(length, header)
        if header_only and i >= header:
            return None
        out = bytearray(data)
        out[start + i] ^= 0xFF
        return bytes(out)
    return damage


def _cut(at: Callable[[int, int], int]) -> Damage:
    """The segment ends ``at(length, header)`` bytes into the second batch."""
    return lambda data, start, length, header: data[:start + at(length, header)]


def _tail(extra: bytes) -> Damage:
    """``extra`` after the last whole batch."""
    def damage(data: bytes, start: int, length: int, header: int) -> bytes:
        p, n = batches(data)[-1]
        return data[:p + n] + extra
    return damage


def _size(value: int) -> Damage:
    """The second batch's size field set to ``value``."""
    return lambda data, start, length, header: (data[:start + SIZE_AT] + struct.pack(">i", value)
                                                + data[start + SIZE_AT + 4:])


def _magic(value: int) -> Damage:
    def damage(data: bytes, start: int, length: int, header: int) -> bytes:
        out = bytearray(data)
        out[start + MAGIC_AT] = value
        return bytes(out)
    return damage


def _codec(codec: int) -> Damage:
    """The second batch's compression id set to ``codec`` (its other attribute bits kept)."""
    def damage(data: bytes, start: int, length: int, header: int) -> bytes:
        out = bytearray(data)
        at = start + CODEC_AT[data[start + MAGIC_AT]]
        out[at] = out[at] & ~0x07 | codec
        return bytes(out)
    return damage


#: magic -> where a legacy message's key length is (after its offset, size, crc, magic, attributes and, v1,
#: timestamp)
KEY_LENGTH_AT = {0: 18, 1: 26}


def _lengths(key: Callable[[int], int] | None = None, value: Callable[[int], int] | None = None) -> Damage:
    """A legacy second message's key length set to ``key(its length)`` or its value length to
    ``value(its length)``, with the CRC made right again: lengths Kafka's reader holds only to the
    message's bytes (v2 sources: no such message, no case)."""
    def damage(data: bytes, start: int, length: int, header: int) -> bytes | None:
        magic = data[start + MAGIC_AT]
        if magic >= 2:
            return None
        out = bytearray(data)
        at = start + KEY_LENGTH_AT[magic]
        klen = struct.unpack_from(">i", out, at)[0]
        if key is not None:
            struct.pack_into(">i", out, at, key(klen))
        if value is not None:
            vat = at + 4 + max(klen, 0)
            struct.pack_into(">i", out, vat, value(struct.unpack_from(">i", out, vat)[0]))
        struct.pack_into(">I", out, start + 12, zlib.crc32(out[start + MAGIC_AT:start + length]))
        return bytes(out)
    return damage


# --------------------------------------------------------------------------- inside a v2 batch's records
# The second batch's records are taken apart field by field (without kseg: its own reading is what is
# judged), one field of its second record is set to a value at an edge, and the batch is put together
# again under each codec of RECORD_CODECS (compressed by kafka-python's codecs), its size and CRC-32C made
# right: what is left is damage only a reader of the records meets.

#: codec name -> (its id in a v2 batch's attributes, how kafka-python compresses a records section)
RECORD_CODECS: dict[str, tuple[int, Callable[[bytes], bytes] | None]] = {
    "none": (0, None),
    "gzip": (1, lambda b: gzip.compress(b, mtime=0)),  # (kafka-python's writes the time into the header)
    "snappy": (2, lambda b: kafka_codec.snappy_encode(b, xerial_compatible=True)),
    "lz4": (3, kafka_codec.lz4_encode),
    "zstd": (4, kafka_codec.zstd_encode),
}
V2_ATTRIBUTES_AT, V2_COUNT_AT, V2_RECORDS_AT = 21, 57, 61  # in the batch, after its 12-byte log header
V2_CRC_AT = 17
DAMAGED_RECORD = 1  # the second record: the first prints before the damage


def _zigzag(n: int) -> bytes:
    """A signed varint (varlong) as Kafka writes it."""
    u, out = (n << 1) ^ (n >> 63), bytearray()
    u &= (1 << 64) - 1
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _read_zigzag(b: bytes, p: int) -> tuple[int, int]:
    u = shift = 0
    while True:
        u |= (b[p] & 0x7F) << shift
        shift += 7
        p += 1
        if b[p - 1] < 0x80:
            return (u >> 1) ^ -(u & 1), p


def _record_fields(body: bytes) -> list[list]:
    """A record's body (after its length) as [name, value, bytes] fields: varints with their value."""
    fields, p = [], 0

    def varint(name: str) -> int:
        nonlocal p
        start = p
        value, p = _read_zigzag(body, p)
        fields.append([name, value, body[start:p]])
        return value

    def raw(name: str, n: int) -> None:
        nonlocal p
        fields.append([name, None, body[p:p + max(n, 0)]])
        p += max(n, 0)

    raw("attributes", 1)
    varint("timestamp")
    varint("offset")
    raw("key", varint("key_length"))
    raw("value", varint("value_length"))
    for i in range(varint("header_count")):
        raw(f"header_key_{i}", varint(f"header_key_length_{i}"))
        raw(f"header_value_{i}", varint(f"header_value_length_{i}"))
    assert p == len(body), "a record of the source does not read whole"
    return fields


#: a record damage: (the damaged record's fields, the batch's record count) -> (the record length to write,
#: None for its body's; the record count to write)
RecordDamage = Callable[[list[list], int], tuple[int | None, int]]


def _record_damage(field: str, value: Callable[[int, int], int | bytes]) -> RecordDamage:
    """Set ``field`` of a record's fields, or "length" (the record's length) or "count" (the batch's record
    count), to ``value(its value, the body's length)``: an int is written as a varint, bytes as they are."""
    def damage(fields: list[list], count: int) -> tuple[int | None, int]:
        body_length = sum(len(f[2]) for f in fields)
        if field == "length":
            return int(value(body_length, body_length)), count
        if field == "count":
            return None, int(value(count, body_length))
        for f in fields:
            if f[0] == field:
                new = value(f[1], body_length)
                f[2] = new if isinstance(new, bytes) else _zigzag(new)
                return None, count
        raise AssertionError(f"the damaged record has no {field}")
    return damage


#: damage -> how (``_record_damage``); each is tried under every codec of RECORD_CODECS
RECORD_DAMAGE: dict[str, RecordDamage] = {
    "length-plus1": _record_damage("length", lambda n, body: n + 1),
    "length-minus1": _record_damage("length", lambda n, body: n - 1),
    "length-0": _record_damage("length", lambda n, body: 0),
    "length-neg1": _record_damage("length", lambda n, body: -1),
    "length-huge": _record_damage("length", lambda n, body: 0x7FFFFFFF),
    "attributes-ff": _record_damage("attributes", lambda n, body: b"\xff"),
    "timestamp-varlong-11": _record_damage("timestamp", lambda n, body: b"\x80" * 10 + b"\x00"),
    "offset-varint-6": _record_damage("offset", lambda n, body: b"\x82\x80\x80\x80\x80\x00"),
    "key-length-past": _record_damage("key_length", lambda n, body: body + 100),
    "key-length-neg2": _record_damage("key_length", lambda n, body: -2),
    "value-length-past": _record_damage("value_length", lambda n, body: body + 100),
    "value-length-neg2": _record_damage("value_length", lambda n, body: -2),
    "header-count-neg1": _record_damage("header_count", lambda n, body: -1),
    "header-count-plus1": _record_damage("header_count", lambda n, body: n + 1),
    "header-count-huge": _record_damage("header_count", lambda n, body: 0x7FFFFFFF),
    "header-key-length-neg1": _record_damage("header_key_length_0", lambda n, body: -1),
    "header-key-length-past": _record_damage("header_key_length_0", lambda n, body: body + 100),
    "header-value-length-neg2": _record_damage("header_value_length_0", lambda n, body: -2),
    "header-value-length-past": _record_damage("header_value_length_0", lambda n, body: body + 100),
    "count-plus1": _record_damage("count", lambda n, body: n + 1),
    "count-minus1": _record_damage("count", lambda n, body: n - 1),
    "count-0": _record_damage("count", lambda n, body: 0),
    "count-neg1": _record_damage("count", lambda n, body: -1),
    "count-huge": _record_damage("count", lambda n, body: 0x7FFFFFFF),
}


def _first_control(data: bytes) -> tuple[int, int] | None:
    """(position, length) of the segment's first control batch, None if it has none."""
    return next(((p, n) for p, n in batches(data)
                 if data[p + MAGIC_AT] >= 2 and data[p + V2_ATTRIBUTES_AT + 1] & 0x20), None)


def _in_records(codec: str, how: RecordDamage, record: int = DAMAGED_RECORD,
                control: bool = False) -> Damage:
    """The second batch (v2, uncompressed in every source; ``control``: the first control batch instead)
    with ``how`` done to its record ``record``, put together again under ``codec``."""
    codec_id, compress = RECORD_CODECS[codec]

    def damage(data: bytes, start: int, length: int, header: int) -> bytes | None:
        if control:
            found = _first_control(data)
            if found is None:
                return None
            start, length = found
        batch = bytearray(data[start:start + length])
        if batch[MAGIC_AT] < 2 or batch[V2_ATTRIBUTES_AT + 1] & 0x07:
            return None
        count = struct.unpack_from(">i", batch, V2_COUNT_AT)[0]
        section, p, records = bytes(batch[V2_RECORDS_AT:]), 0, []
        for i in range(count):
            n, q = _read_zigzag(section, p)
            records.append((i, section[q:q + n]))
            p = q + n
        out = bytearray()
        for i, body in records:
            if i != record:
                out += _zigzag(len(body)) + body
                continue
            fields = _record_fields(body)
            written, count = how(fields, count)
            new_body = b"".join(f[2] for f in fields)
            out += _zigzag(len(new_body) if written is None else written) + new_body
        records_section = bytes(out) if compress is None else compress(bytes(out))
        batch = batch[:V2_RECORDS_AT] + records_section
        struct.pack_into(">i", batch, SIZE_AT, len(batch) - 12)
        struct.pack_into(">i", batch, V2_COUNT_AT, count)
        batch[V2_ATTRIBUTES_AT + 1] = batch[V2_ATTRIBUTES_AT + 1] & ~0x07 | codec_id
        struct.pack_into(">I", batch, V2_CRC_AT, crc32c.crc32c(bytes(batch[V2_ATTRIBUTES_AT:])))
        return data[:start] + bytes(batch) + data[start + length:]
    return damage


def _record_bytes(field: str, new: Callable[[bytes], bytes | None]) -> RecordDamage:
    """Set a record's ``field`` (key, value) to ``new(its bytes)`` with its length to match (None: null)."""
    def damage(fields: list[list], count: int) -> tuple[int | None, int]:
        by_name = {f[0]: f for f in fields}
        value = new(by_name[field][2])
        by_name[field][2] = b"" if value is None else value
        by_name[f"{field}_length"][2] = _zigzag(-1 if value is None else len(value))
        return None, count
    return damage


#: damage -> how, on a transaction marker (key: version, type; value: version, coordinator epoch, all
#: big-endian: ``EndTransactionMarker``, ``ControlRecordType``)
CONTROL_DAMAGE: dict[str, RecordDamage] = {
    "key-version-1": _record_bytes("key", lambda b: b"\x00\x01" + b[2:]),
    "key-version-neg1": _record_bytes("key", lambda b: b"\xff\xff" + b[2:]),
    "key-type-7": _record_bytes("key", lambda b: b[:2] + b"\x00\x07"),
    "key-type-leader-change": _record_bytes("key", lambda b: b[:2] + b"\x00\x02"),
    "key-type-snapshot-header": _record_bytes("key", lambda b: b[:2] + b"\x00\x03"),
    "key-type-neg1": _record_bytes("key", lambda b: b[:2] + b"\xff\xff"),
    "key-short": _record_bytes("key", lambda b: b[:2]),
    "key-long": _record_bytes("key", lambda b: b + b"\x00\x00"),
    "key-null": _record_bytes("key", lambda b: None),
    "value-version-1": _record_bytes("value", lambda b: b"\x00\x01" + b[2:]),
    "value-version-neg1": _record_bytes("value", lambda b: b"\xff\xff" + b[2:]),
    "value-short": _record_bytes("value", lambda b: b[:4]),
    "value-long": _record_bytes("value", lambda b: b + b"\x00\x00"),
    "value-null": _record_bytes("value", lambda b: None),
    "epoch-neg1": _record_bytes("value", lambda b: b[:2] + b"\xff\xff\xff\xff"),
}


# --------------------------------------------------------------------------- inside a legacy wrapper
# The second, third and fourth messages of a v0 or v1 segment (uncompressed there) are put into one
# compressed wrapper message, as a producer of that format writes them (v1: relative inner offsets),
# and the second inner message is damaged one field at a time (its CRC made right unless the CRC is
# the damage), or the wrapper's decompressed bytes are: what is left is damage only a reader of the
# inner messages meets.

#: codec name -> (its id in a legacy message's attributes, magic -> how kafka-python compresses the inner
#: messages: LZ4 of magic 0 with the frame header checksum the 0.8/0.9 clients wrote)
WRAPPER_CODECS: dict[str, tuple[int, Callable[[int], Callable[[bytes], bytes]]]] = {
    "gzip": (1, lambda magic: lambda b: gzip.compress(b, mtime=0)),
    "snappy": (2, lambda magic: lambda b: kafka_codec.snappy_encode(b, xerial_compatible=True)),
    "lz4": (3, lambda magic: kafka_codec.lz4_encode if magic else kafka_codec.lz4_encode_old_kafka),
}
INNER = 3  # inner messages in the wrapper
#: a legacy message's fields, as positions in its entry
L_SIZE_AT, L_CRC_AT, L_MAGIC_AT, L_ATTRIBUTES_AT = 8, 12, 16, 17

#: an inner damage: (the inner message as a bytearray, its magic) -> whether to make its CRC right again
InnerDamage = Callable[[bytearray, int], bool]


def _set_int(at: Callable[[bytearray, int], int], value: Callable[[int, bytearray], int],
             fmt: str = ">i", crc_right: bool = True) -> InnerDamage:
    """Set the field at ``at(message, magic)`` to ``value(its value, message)``."""
    def damage(m: bytearray, magic: int) -> bool:
        p = at(m, magic)
        struct.pack_into(fmt, m, p, value(struct.unpack_from(fmt, m, p)[0], m))
        return crc_right
    return damage


def _key_at(m: bytearray, magic: int) -> int:
    return KEY_LENGTH_AT[magic]


def _value_at(m: bytearray, magic: int) -> int:
    return KEY_LENGTH_AT[magic] + 4 + max(struct.unpack_from(">i", m, KEY_LENGTH_AT[magic])[0], 0)


#: damage -> how, on the second inner message
INNER_DAMAGE: dict[str, InnerDamage] = {
    "size-plus1": _set_int(lambda m, magic: L_SIZE_AT, lambda n, m: n + 1),
    "size-minus1": _set_int(lambda m, magic: L_SIZE_AT, lambda n, m: n - 1),
    "size-0": _set_int(lambda m, magic: L_SIZE_AT, lambda n, m: 0),
    "size-13": _set_int(lambda m, magic: L_SIZE_AT, lambda n, m: 13),
    "size-huge": _set_int(lambda m, magic: L_SIZE_AT, lambda n, m: 0x7FFFFFF0),
    "crc-wrong": _set_int(lambda m, magic: L_CRC_AT, lambda n, m: n ^ 1, ">I", crc_right=False),
    "magic-other": _set_int(lambda m, magic: L_MAGIC_AT, lambda n, m: 1 - n, ">b"),
    "magic-2": _set_int(lambda m, magic: L_MAGIC_AT, lambda n, m: 2, ">b"),
    "codec-gzip": _set_int(lambda m, magic: L_ATTRIBUTES_AT, lambda n, m: n | 1, ">b"),
    "log-append-time": _set_int(lambda m, magic: L_ATTRIBUTES_AT, lambda n, m: n | 0x08, ">b"),
    "offset-gap": _set_int(lambda m, magic: 0, lambda n, m: n + 5, ">q"),
    "offset-back": _set_int(lambda m, magic: 0, lambda n, m: n - 1, ">q"),
    "key-len-neg2": _set_int(_key_at, lambda n, m: -2),
    "key-len-past": _set_int(_key_at, lambda n, m: n + 1000),
    "value-len-neg5": _set_int(_value_at, lambda n, m: -5),
    "value-len-short": _set_int(_value_at, lambda n, m: n - 3),
    "value-len-long": _set_int(_value_at, lambda n, m: n + 1),
}
#: damage -> how, on the wrapper's decompressed bytes (None: the wrapper's value is null)
PAYLOAD_DAMAGE: dict[str, Callable[[bytes], bytes | None]] = {
    "trailing-3": lambda b: b + b"\x00\x01\x02",
    "trailing-12": lambda b: b + struct.pack(">qi", 99, 40),
    "empty": lambda b: b"",
    "value-null": lambda b: None,
}


def _wrapped(codec: str, inner: InnerDamage | None = None,
             payload: Callable[[bytes], bytes | None] | None = None) -> Damage:
    """The second to fourth messages (uncompressed, v0 or v1) as one wrapper compressed with ``codec``,
    the second inner message damaged by ``inner`` or the inner messages' bytes by ``payload``."""
    codec_id, compressor = WRAPPER_CODECS[codec]

    def damage(data: bytes, start: int, length: int, header: int) -> bytes | None:
        magic = data[start + MAGIC_AT]
        if magic >= 2:
            return None
        entries = [e for e in batches(data) if e[0] >= start][:INNER]
        if len(entries) < INNER or any(data[p + L_ATTRIBUTES_AT] & 0x07 for p, _ in entries):
            return None
        messages, last_offset = [], 0
        for i, (p, n) in enumerate(entries):
            m = bytearray(data[p:p + n])
            last_offset = struct.unpack_from(">q", m, 0)[0]
            if magic == 1:
                struct.pack_into(">q", m, 0, i)  # KIP-31: relative offsets inside a v1 wrapper
            if i == DAMAGED_RECORD and inner is not None and inner(m, magic):
                struct.pack_into(">I", m, L_CRC_AT, zlib.crc32(m[L_MAGIC_AT:]))
            messages.append(bytes(m))
        body = b"".join(messages)
        body = payload(body) if payload is not None else body
        value = None if body is None else compressor(magic)(body)
        fields = bytes([magic, codec_id])
        if magic == 1:
            fields += struct.pack(">q", max(struct.unpack_from(">q", data, p + 18)[0] for p, _ in entries))
        fields += struct.pack(">i", -1)  # no key
        fields += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
        message = struct.pack(">I", zlib.crc32(fields)) + fields
        wrapper = struct.pack(">qi", last_offset, len(message)) + message
        end = entries[-1][0] + entries[-1][1]
        return data[:start] + wrapper + data[end:]
    return damage


#: damage name -> how; the cases are ``<source>-<name>`` of every source the damage applies to
DAMAGE: dict[str, Damage] = {
    # each byte of the second batch's header, then three of its body
    **{f"flip-{i:02d}": _flip(lambda length, header, i=i: i, header_only=True) for i in range(HEADER[2])},
    "flip-body3": _flip(lambda length, header: header + 3),
    "flip-middle": _flip(lambda length, header: length // 2),
    "flip-last": _flip(lambda length, header: length - 1),
    # the segment cut short inside the second batch (12: offset and size whole, nothing more)
    **{f"cut-{n}": _cut(lambda length, header, n=n: n) for n in (3, 11, 12, 40)},
    "cut-header": _cut(lambda length, header: header),
    "cut-half": _cut(lambda length, header: length // 2),
    "cut-last": _cut(lambda length, header: length - 1),
    "tail-garbage": _tail(GARBAGE),
    "tail-zeros": _tail(bytes(100)),
    # sizes around Kafka's minimum record overhead (14) and the v2 header, the largest and a negative one
    **{f"size-{n}": _size(n) for n in (0, 13, 14, 20, 48)},
    "size-max": _size(0x7FFFFFFF),
    "size-neg16": _size(-16),
    "magic-3": _magic(3),
    "magic-127": _magic(127),
    **{f"codec-{n}": _codec(n) for n in (5, 6, 7)},
    # a legacy message's lengths, its CRC right: no key but a length below -1; a key length running past
    # the message, or wrapping Java's int; a value ending before the message, past it, or a length below -1
    "key-len-neg2": _lengths(key=lambda n: -2),
    "key-len-past": _lengths(key=lambda n: n + 1000),
    "key-len-wrap": _lengths(key=lambda n: 0x7FFFFFF0),
    "value-len-short": _lengths(value=lambda n: n - 3),
    "value-len-long": _lengths(value=lambda n: n + 1),
    "value-len-neg5": _lengths(value=lambda n: -5),
    # inside the second batch's records, under each codec (RECORD_SOURCES only)
    **{f"rec-{codec}-{name}": _in_records(codec, how) for codec in RECORD_CODECS
       for name, how in RECORD_DAMAGE.items()},
    # a transaction marker's key and value (CONTROL_SOURCES only)
    **{f"ctl-{name}": _in_records("none", how, record=0, control=True) for name, how in CONTROL_DAMAGE.items()},
    # inside a legacy wrapper, under each codec (v0 and v1 sources)
    **{f"inner-{codec}-{name}": _wrapped(codec, inner=how) for codec in WRAPPER_CODECS
       for name, how in INNER_DAMAGE.items()},
    **{f"inner-{codec}-{name}": _wrapped(codec, payload=how) for codec in WRAPPER_CODECS
       for name, how in PAYLOAD_DAMAGE.items()},
}
#: damage name prefix -> the only sources it is made from (one v2 segment reaches each record reader; a
#: segment with transaction markers, the control record readers); those sources take no other damage
ONLY_FROM: dict[str, tuple[str, ...]] = {"rec-": ("v2",), "ctl-": ("v2ctl",)}


def applies(source: str, damage: str) -> bool:
    """Whether ``damage`` is made from ``source`` (ONLY_FROM)."""
    for prefix, sources in ONLY_FROM.items():
        if damage.startswith(prefix):
            return source in sources
    return source not in ONLY_FROM["ctl-"]


def source_bytes(source: str) -> bytes:
    return (brokers.REPO / SOURCES[source]).read_bytes()


def variants() -> dict[str, bytes]:
    """``<source>-<damage>`` -> the damaged segment, for every source and damage that applies to it."""
    out = {}
    for source in SOURCES:
        data = source_bytes(source)
        start, length = batches(data)[1]  # the second batch: the first prints before the damage
        header = HEADER[data[start + MAGIC_AT]]
        for name, damage in DAMAGE.items():
            damaged = damage(data, start, length, header) if applies(source, name) else None
            if damaged is not None:
                out[f"{source}-{name}"] = damaged
    return out


def case_file(case: str) -> str:
    """Where :func:`materialise` writes a case, relative to its folder: the segment keeps its name (the
    tool prints it), in a partition folder."""
    source = case.split("-", 1)[0]
    return f"{case}/t-0/{Path(SOURCES[source]).name}"


def materialise(root: Path, cases: dict[str, bytes] | None = None,
                file_of: Callable[[str], str] = case_file) -> dict[str, str]:
    """Write the variants (all of :func:`variants` unless given) under ``root``, each where ``file_of`` says
    (:func:`case_file` unless given): case -> its file, relative."""
    files = {}
    for case, data in (variants() if cases is None else cases).items():
        rel = file_of(case)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        files[case] = rel
    return files


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def command(case: str, combo: str, file_of: Callable[[str], str] = case_file,
            combos: dict[str, list[str]] = COMBOS) -> list[str]:
    """The command line of a run, as stored (the tool's working directory: :func:`materialise`'s root; the
    case's file where ``file_of`` says, the flags of ``combos``)."""
    return ["kafka-dump-log.sh", "--files", file_of(case), *combos[combo]]


def kept_stderr(stderr: bytes) -> bytes:
    """What a golden keeps of the tool's stderr: a stack trace's first line, else all of it."""
    if stderr.startswith(checks.JAVA_EXCEPTION):
        return stderr.split(b"\n", 1)[0] + b"\n"
    return stderr


def _no_absolute_path(output: bytes, root: Path) -> bytes:
    output = checks.placeholder_paths(output, root)
    for path in {str(root), str(root.resolve()), tempfile.gettempdir()}:
        if path.encode() in output:
            raise AssertionError(f"an absolute path ({path}) is left in the tool's output: {output[:500]!r}")
    return output


#: a corpus's command line of a run: (case, combination) -> ``kafka-dump-log.sh`` and its arguments
Argv = Callable[[str, str], list[str]]
#: a corpus's way of writing its cases under a folder for the tool to read (as :func:`materialise`)
Write = Callable[[Path, dict[str, bytes]], object]


def kafka_runs(release: str, root: Path, cases: dict[str, bytes], jobs: int = JOBS,
               runs: list[tuple[str, str]] | None = None, argv_of: Argv = command,
               write_cases: Write = materialise, fresh: bool = False) -> list[dict[str, Any]]:
    """The release's DumpLogSegments on every case (written under ``root`` by ``write_cases``) x combination
    (``runs``: those pairs only; the command lines of ``argv_of``): golden rows, sorted by case and
    combination. ``fresh``: each run reads a copy of its case of its own, written for it in a folder of its
    own under ``root`` (the same paths below it): the tool may write to what it reads."""

    def one(job: tuple[int, tuple[str, str]]) -> dict[str, Any]:
        i, (case, combo) = job
        argv = argv_of(case, combo)
        cwd = root / f"run-{i}" if fresh else root
        if fresh:
            write_cases(cwd, {case: cases[case]})
        rc, out, err = brokers.dump_log_segments(release, *argv[1:], cwd=cwd)
        row = {"case": case, "combo": combo, "command": argv, "exit": rc,
               "stdout": _no_absolute_path(out, cwd).decode("latin-1"),
               "stderr": kept_stderr(_no_absolute_path(err, cwd)).decode("latin-1"),
               "sha256": sha256(cases[case])}
        if fresh:
            shutil.rmtree(cwd)
        return row

    if not fresh:
        write_cases(root, cases)
    todo = runs if runs is not None else [(case, combo) for case in sorted(cases) for combo in COMBOS]
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, enumerate(todo)))


def read_goldens(folder: Path) -> list[dict[str, Any]]:
    with lzma.open(folder / GOLDEN, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def about(release: str) -> dict[str, Any]:
    """What ``manifest.json`` says of this corpus: how its goldens were made, from what."""
    return {
        "made_by": (f"tests/kafka/damaged.py: Kafka {brokers.version(release)}'s DumpLogSegments (run as "
                    "kafka-dump-log.sh runs it, tests/kafka/brokers.py) on every variant of variants() x COMBOS, "
                    "in the folder materialise() wrote them in"),
        "remake": f"python tests/kafka/damaged.py --release {release} --write fixtures/kafka-damaged/{release}",
        "check": f"python tests/kafka/damaged.py --check fixtures/kafka-damaged/{release}",
        "sources": {name: {"path": path, "sha256": sha256(source_bytes(name))} for name, path in SOURCES.items()},
        "damages": list(DAMAGE),
        "combos": COMBOS,
        "note": ("the variants are not stored: variants() makes them from the sources; each row's sha256 is its "
                 "variant's. Of a Java stack trace only the first line of stderr is kept. Absolute paths would be "
                 f"written as {checks.LOGDIR}/ (the tool ran with relative paths: none were printed)"),
    }


def write_goldens(folder: Path, release: str, rows: list[dict[str, Any]], described: dict[str, Any] | None = None,
                  sources: Iterable[str] = SOURCES) -> None:
    """``golden.jsonl.xz`` (the same bytes for the same rows: an xz stream holds no time or name) and
    ``manifest.json`` (what ``described`` says of the corpus, :func:`about` unless given, and the counts, per
    source of ``sources``)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=True) + "\n" for r in rows)
    (folder / GOLDEN).write_bytes(lzma.compress(text.encode(), preset=9 | lzma.PRESET_EXTREME))
    cases = sorted({r["case"] for r in rows})
    doc = {
        "release": release, "kafka_version": brokers.version(release), "main_class": brokers.RELEASES[release][1],
        **(about(release) if described is None else described),
        "counts": {
            "cases": len(cases), "runs": len(rows),
            "exit": {str(k): v for k, v in sorted(Counter(r["exit"] for r in rows).items())},
            "stack_traces": sum(r["stderr"].startswith(checks.JAVA_EXCEPTION.decode()) for r in rows),
            "per_source": {s: sum(c.split("-", 1)[0] == s for c in cases) for s in sources},
        },
    }
    (folder / MANIFEST).write_text(json.dumps(doc, indent=1) + "\n")


def write(folder: Path, workdir: Path, release: str = DEFAULT_RELEASE) -> list[dict[str, Any]]:
    """Run the release's tool on every variant (written under ``workdir``), keep the goldens in ``folder``."""
    rows = kafka_runs(release, workdir, variants())
    write_goldens(folder, release, rows)
    return rows


def differences(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> list[str]:
    """Where two sets of golden rows differ, one line each."""
    want = {(r["case"], r["combo"]): r for r in expected}
    problems = []
    for r in got:
        e = want.pop((r["case"], r["combo"]), None)
        where = f"{r['case']} {r['combo']}"
        if e is None:
            problems.append(f"{where}: no golden")
            continue
        for key in ("sha256", "command", "exit", "stderr", "stdout"):
            if e[key] != r[key]:
                detail = (checks._first_diff(e[key].encode("latin-1"), r[key].encode("latin-1"))
                          if key in ("stdout", "stderr") else f"{e[key]!r} now {r[key]!r}")
                problems.append(f"{where}: {key} differs: {detail}")
    return problems + [f"{case} {combo}: golden, not run" for case, combo in want]


def all_runs(cases: dict[str, bytes], sample: bool = False) -> list[tuple[str, str]]:
    """(case, combination) of every run of the corpus (``sample``: those :func:`sampled` picks, of
    :func:`sampled_damages`)."""
    if sample:
        return sampled(cases, sampled_damages())
    return [(case, combo) for case in sorted(cases) for combo in COMBOS]


def sampled_damages() -> list[str]:
    """Every damage once, a record or inner-message damage under one codec (taken in turn)."""
    codecs, wrapper_codecs = list(RECORD_CODECS), list(WRAPPER_CODECS)
    return ([name for name in DAMAGE if not name.startswith(("rec-", "inner-"))]
            + [f"rec-{codecs[i % len(codecs)]}-{name}" for i, name in enumerate(RECORD_DAMAGE)]
            + [f"inner-{wrapper_codecs[i % len(wrapper_codecs)]}-{name}"
               for i, name in enumerate([*INNER_DAMAGE, *PAYLOAD_DAMAGE])])


def check_goldens(folder: Path, workdir: Path | None = None, sample: bool = False, *,
                  make: Callable[[], dict[str, bytes]] = variants,
                  runs_of: Callable[[dict[str, bytes], bool], list[tuple[str, str]]] | None = None,
                  argv_of: Argv = command, write_cases: Write = materialise, fresh: bool = False) -> list[str]:
    """Run the release of ``folder``'s manifest on every case (of ``make``: :func:`variants` unless given) and
    combination again (``sample``: those of a sample; ``runs_of`` picks them, :func:`all_runs` unless given;
    ``fresh``: as :func:`kafka_runs` takes it) and compare with its goldens."""
    release = json.loads((folder / MANIFEST).read_text())["release"]
    cases = make()
    runs = (runs_of or all_runs)(cases, sample)
    cases = {case: cases[case] for case in {case for case, _ in runs}}
    with tempfile.TemporaryDirectory(prefix="kseg-kafka-damaged-") as tmp:
        got = kafka_runs(release, workdir or Path(tmp), cases, runs=runs, argv_of=argv_of, write_cases=write_cases,
                         fresh=fresh)
    return differences([r for r in read_goldens(folder) if (r["case"], r["combo"]) in set(runs)], got)


def sampled(cases: dict[str, bytes], damages: Iterable[str] = DAMAGE, sources: Iterable[str] = SOURCES,
            combos_of: Callable[[str], list[str]] | None = None) -> list[tuple[str, str]]:
    """One run per damage (of ``damages``), its source (of ``sources``) and flag combination taken in turn
    from those that apply (the live tier's check: every way of damaging, every source and combination, an
    eighth of the runs). ``combos_of``: each case's own combinations, taken in turn per source (sources differ
    in how many they have); all of :data:`COMBOS` unless given, taken in turn per damage."""
    out, taken = [], Counter[str]()
    for i, name in enumerate(damages):
        takers = [(source, f"{source}-{name}") for source in sources if f"{source}-{name}" in cases]
        source, case = takers[i % len(takers)]
        combos, turn = (combos_of(case), taken[source]) if combos_of else (list(COMBOS), i)
        taken[source] += 1
        out.append((case, combos[turn % len(combos)]))
    return out


if __name__ == "__main__":
    sys.exit(clients.main(write, check_goldens, __doc__ or "", "kseg-kafka-damaged-", tuple(brokers.RELEASES),
                          DEFAULT_RELEASE))
