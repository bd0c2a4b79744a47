"""Record lines of a whole batch at once, as UTF-8 bytes: the pure-Python reference.

``kseg/render/_format.c`` writes the same bytes (tests hold the two identical);
``kseg.render.bulk`` picks one. Only the built-in payload modes are handled here:
a user's decoder, control records and ``--decode`` go through the renderers' own code.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime, timedelta, timezone
from typing import Sequence

from kseg.decoders.jvm import java_utf8
from kseg.log.encode import legacy_message_crc
from kseg.model import Batch, Record, sequence_at
from kseg.printable import HIDING, json_safe

# Payload modes: how bytes are shown. NONE: not shown (jsonl null, text "<N bytes>",
# kafka: no key/payload field); UTF8: jsonl a string if valid UTF-8, else a *_b64 field;
# text a quoted, escaped string; kafka invalid bytes as \xNN. JAVA (kafka only): U+FFFD.
NONE, UTF8, HEX, BASE64, JAVA = 0, 1, 2, 3, 4

TEXT_WIDTH = 60  # longer keys/values are cut in the text format (jsonl shows them whole)
# The record fields of the text and jsonl lines, in their default order (``dump --fields``
# names them; the ``*_fields`` writers take their indexes as bytes, in the order chosen).
RECORD_FIELDS = ("offset", "timestamp", "timestamp_type", "key", "value", "headers", "batch_position")
HEADERS_IF_ANY = len(RECORD_FIELDS)  # a code for the default text line's headers: shown only when there are some
DEFAULT_TEXT_FIELDS = bytes([0, 1, 3, 4, HEADERS_IF_ANY])  # text_records' line, as codes (--no-truncate alone)
ISO_MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def iso_utc(ms: int) -> str:
    """``2023-11-14T22:13:20.000Z``, or "-" outside years 1970-9999 (-1: no timestamp)."""
    if not 0 <= ms <= ISO_MAX_MS:
        return "-"
    d = _EPOCH + timedelta(milliseconds=ms)
    return (f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
            f".{d.microsecond // 1000:03d}Z")


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _key_bytes(key: str) -> bytes:
    """A header key's bytes: non-UTF-8 bytes are kept in the text as surrogates."""
    return key.encode("utf-8", "surrogateescape")


# --------------------------------------------------------------------------- jsonl


def _json_field(name: str, v: bytes | None, mode: int) -> str:
    if v is None or mode == NONE:
        return f'"{name}": null'
    if mode == UTF8:
        try:
            return f'"{name}": ' + json_safe(json.dumps(v.decode("utf-8"), ensure_ascii=False))
        except UnicodeDecodeError:
            return f'"{name}_b64": "{_b64(v)}"'
    return f'"{name}": "{v.hex() if mode == HEX else _b64(v)}"'


def _json_header_key(key: str) -> str:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        return f'"key_b64": "{_b64(_key_bytes(key))}"'
    return '"key": ' + json_safe(json.dumps(key, ensure_ascii=False))


def jsonl_records(records: Sequence[Record], ts_name: str, position: int, kmode: int, vmode: int) -> bytes:
    """The jsonl record lines of one batch (no control records)."""
    out = []
    for r in records:
        headers = ", ".join("{" + _json_header_key(h.key) + ", " + _json_field("value", h.value, vmode) + "}"
                            for h in r.headers)
        out.append(f'{{"type": "record", "offset": {r.offset}, "timestamp": {r.timestamp}, '
                   f'"timestamp_type": "{ts_name}", {_json_field("key", r.key, kmode)}, '
                   f'{_json_field("value", r.value, vmode)}, "headers": [{headers}], '
                   f'"batch_position": {position}}}\n')
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- text

_TEXT_ESCAPES = {i: f"\\x{i:02x}" for i in list(range(0x20)) + [0x7F]}
_TEXT_ESCAPES.update({i: f"\\u{i:04x}" for i in [*range(0x80, 0xA0), *(c for a, b in HIDING for c in range(a, b + 1))]})
_TEXT_ESCAPES.update({0xDC00 + i: f"\\x{i:02x}" for i in range(0x80, 0x100)})  # bytes that are not UTF-8
_TEXT_ESCAPES.update({0x5C: "\\\\", 0x22: '\\"', 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})


def text_escape(b: bytes) -> str:
    """Bytes as one line of text, losslessly: UTF-8 as is, controls and other bytes escaped."""
    return b.decode("utf-8", "surrogateescape").translate(_TEXT_ESCAPES)


def text_value(v: bytes | None, mode: int, width: int = TEXT_WIDTH) -> str:
    """A key or value in the text format: ``null``, ``<N bytes>``, ``"text"``, hex or base64,
    cut past ``width`` characters (-1: never) with the full size after it."""
    if v is None:
        return "null"
    if mode == NONE:
        return f"<{len(v)} bytes>"
    body = text_escape(v) if mode == UTF8 else v.hex() if mode == HEX else _b64(v)
    suffix = ""
    if 0 <= width < len(body):
        body, suffix = body[: width - 1] + "…", f" ({len(v)} bytes)"
    return f'"{body}"{suffix}' if mode == UTF8 else body + suffix


def text_head(offset: int, timestamp: int) -> str:
    """The fixed columns every record line starts with: offset, milliseconds, ISO-8601 UTC."""
    return f"  {offset:>8}  {timestamp:>13}  {iso_utc(timestamp):<24}  "


def text_records(records: Sequence[Record], kmode: int, vmode: int) -> bytes:
    """The text record lines of one batch (no control records): one line per record."""
    out = []
    for r in records:
        line = text_head(r.offset, r.timestamp) + f"key {text_value(r.key, kmode)}  value {text_value(r.value, vmode)}"
        if r.headers:
            line += "  headers " + ", ".join(f"{text_escape(_key_bytes(h.key))}={text_value(h.value, vmode)}"
                                             for h in r.headers)
        out.append(line + "\n")
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- chosen fields


def _json_headers(r: Record, vmode: int) -> str:
    return ", ".join("{" + _json_header_key(h.key) + ", " + _json_field("value", h.value, vmode) + "}"
                     for h in r.headers)


def jsonl_fields(records: Sequence[Record], ts_name: str, position: int, kmode: int, vmode: int,
                 fields: bytes) -> bytes:
    """The jsonl record lines of one batch (no control records) with only the fields whose
    indexes into RECORD_FIELDS ``fields`` gives, in its order, after ``"type"``."""
    out = []
    for r in records:
        parts = ['{"type": "record"']
        for f in fields:
            name = "headers" if f == HEADERS_IF_ANY else RECORD_FIELDS[f]
            if name == "offset":
                parts.append(f'"offset": {r.offset}')
            elif name == "timestamp":
                parts.append(f'"timestamp": {r.timestamp}')
            elif name == "timestamp_type":
                parts.append(f'"timestamp_type": "{ts_name}"')
            elif name == "key":
                parts.append(_json_field("key", r.key, kmode))
            elif name == "value":
                parts.append(_json_field("value", r.value, vmode))
            elif name == "headers":
                parts.append(f'"headers": [{_json_headers(r, vmode)}]')
            else:
                parts.append(f'"batch_position": {position}')
        out.append(", ".join(parts) + "}\n")
    return "".join(out).encode("utf-8")


def text_fields(records: Sequence[Record], ts_name: str, position: int, kmode: int, vmode: int, fields: bytes,
                width: int) -> bytes:
    """The text record lines of one batch (no control records) with the chosen fields (as
    ``jsonl_fields``), values cut past ``width`` characters (-1: whole). The fixed columns
    (offset, timestamp) keep their widths while only fixed columns come before them."""
    out = []
    for r in records:
        pieces = []
        aligned = True
        for f in fields:
            if f == HEADERS_IF_ANY and not r.headers:
                continue
            name = "headers" if f == HEADERS_IF_ANY else RECORD_FIELDS[f]
            if name == "offset":
                pieces.append(f"{r.offset:>8}" if aligned else str(r.offset))
                continue
            if name == "timestamp":
                pieces.append(f"{r.timestamp:>13}  {iso_utc(r.timestamp):<24}" if aligned
                              else f"{r.timestamp}  {iso_utc(r.timestamp)}")
                continue
            aligned = False
            if name == "timestamp_type":
                pieces.append(ts_name)
            elif name == "key":
                pieces.append(f"key {text_value(r.key, kmode, width)}")
            elif name == "value":
                pieces.append(f"value {text_value(r.value, vmode, width)}")
            elif name == "headers":
                pieces.append("headers " + (", ".join(f"{text_escape(_key_bytes(h.key))}={text_value(h.value, vmode, width)}"
                                                      for h in r.headers) or "-"))
            else:
                pieces.append(f"batch @{position}")
        out.append(("  " + "  ".join(pieces)).rstrip(" ") + "\n")
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- kafka


def kafka_text(v: bytes, mode: int) -> str:
    if mode == UTF8:
        return v.decode("utf-8", "backslashreplace")
    if mode == JAVA:
        return java_utf8(v)
    return v.hex() if mode == HEX else _b64(v)


def _java_long(v: int) -> int:
    """``v`` wrapped to 64 bits as Java's long arithmetic wraps it (an offset past the end of a long)."""
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


def bool_text(v: bool) -> str:
    """A boolean as Java and JSON write it."""
    return "true" if v else "false"


def kafka_batch_line(b: Batch, crc_valid: bool, ts_name: str, codec_name: str, delete_horizon: bool = True) -> bytes:
    """kafka-dump-log.sh's line for a batch (v2) or a message or wrapper (v0/v1); ``delete_horizon``:
    the v2 field the tools print since Kafka 3.0."""
    if b.magic >= 2:
        horizon = b.delete_horizon_ms
        line = (
            f"baseOffset: {b.offset} lastOffset: {_java_long(b.offset + (b.last_offset_delta or 0))} "
            f"count: {b.record_count} "
            f"baseSequence: {b.base_sequence} lastSequence: {b.last_sequence} producerId: {b.producer_id} "
            f"producerEpoch: {b.producer_epoch} partitionLeaderEpoch: {b.partition_leader_epoch} "
            f"isTransactional: {bool_text(b.is_transactional)} isControl: {bool_text(b.is_control)} "
            + (f"deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'} "
               if delete_horizon else "")
            + f"position: {b.position} "
        )
    else:
        line = f"offset: {b.offset} position: {b.position} "
    line += (f"{ts_name}: {b.timestamp} size: {b.size} magic: {b.magic} compresscodec: {codec_name} "
             f"crc: {b.crc} isvalid: {bool_text(crc_valid)}\n")
    return line.encode("utf-8", "backslashreplace")


def kafka_batch_fields(b: Batch, first_offset: int, codec_name: str) -> str:
    """The batch's fields Kafka 2.8 repeats on each of its record lines, after the timestamp (a
    v0/v1 wrapper's base offset is its first inner message's; a field v0/v1 lacks is -1)."""
    def known(v: int | None) -> int:
        return -1 if v is None else v

    return (f" baseOffset: {b.offset if b.magic >= 2 else first_offset} lastOffset: {b.last_offset} "
            f"baseSequence: {known(b.base_sequence)} lastSequence: {b.last_sequence} "
            f"producerEpoch: {known(b.producer_epoch)} partitionLeaderEpoch: {known(b.partition_leader_epoch)} "
            f"batchSize: {b.size} magic: {b.magic} compressType: {codec_name} position: {b.position}")


def legacy_record_metadata(offset: int, ts_name: str, timestamp: int, sizes: tuple[int, int], valid: bool,
                           crc: int, brace: bool = True, batch_fields: str | None = None) -> str:
    """A legacy message's record line up to its contents, as kafka-dump-log.sh prints it
    (``kafka_records``' arguments; ``sizes``: the key and value lengths it shows)."""
    valid_text = "true" if valid else "false"
    sizes_text = f"keySize: {sizes[0]} valueSize: {sizes[1]}"
    if batch_fields is None:
        return (f"| offset: {offset} {ts_name}: {timestamp} {sizes_text} isValid: {valid_text} crc: {crc}"
                + ("}" if brace else ""))
    return (f"| offset: {offset} isValid: {valid_text} crc: {crc} {sizes_text} {ts_name}: {timestamp}{batch_fields}"
            f" crc: {crc} isvalid: {valid_text}")


def kafka_records(records: Sequence[Record], ts_name: str, magic: int, base_offset: int, base_sequence: int,
                  kmode: int, vmode: int, last: int | None, gaps: list, brace: bool = True,
                  batch_fields: str | None = None) -> bytes:
    """kafka-dump-log.sh's record lines of one batch (no control records); offsets that do not
    follow ``last`` (the offset before this batch) are appended to ``gaps`` as (previous, offset).
    ``brace``: Kafka 3.x's stray ``}`` after a legacy record's crc (Kafka 4 prints none).
    ``batch_fields``: Kafka 2.8's lines, which give each record's validity and CRC first, then
    repeat its batch's fields (this text, from ``kafka_batch_fields``) after the timestamp."""
    out = []
    for r in records:
        if last is not None and r.offset != last + 1:
            gaps.append((last, r.offset))
        last = r.offset
        sizes = (-1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value))
        if magic < 2:
            line = legacy_record_metadata(r.offset, ts_name, r.timestamp, sizes, legacy_message_crc(r) == r.crc,
                                          r.crc, brace, batch_fields)
        else:
            if batch_fields is None:
                line = f"| offset: {r.offset} {ts_name}: {r.timestamp} keySize: {sizes[0]} valueSize: {sizes[1]}"
            else:
                line = (f"| offset: {r.offset} isValid: true crc: null keySize: {sizes[0]} valueSize: {sizes[1]} "
                        f"{ts_name}: {r.timestamp}{batch_fields}")
            keys = ",".join(java_utf8(_key_bytes(h.key)) for h in r.headers)
            line += f" sequence: {sequence_at(base_sequence, r.offset - base_offset)} headerKeys: [{keys}]"
        if kmode != NONE and r.key is not None:
            line += " key: " + kafka_text(r.key, kmode)
        if vmode != NONE and r.value is not None:
            line += " payload: " + kafka_text(r.value, vmode)
        out.append(line + "\n")
    return "".join(out).encode("utf-8")
