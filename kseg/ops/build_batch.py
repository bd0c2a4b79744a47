"""Encoding one batch line of ``kseg build``: its bytes through the writers' encoders
(``kseg.log.encode``), its derived fields checked against the line.

Rules: the fields a batch's bytes determine (CRC, size, record count, last offset, max
timestamp) are computed; one a line gives differently is a ``Disagreement`` and written as
given (the caller decides what a disagreement means). The CRC and size are held to the line
only where the bytes are the records' own (uncompressed, not a LogAppendTime v2 batch) or the
line says its CRC did not match: a codec may write other bytes than the original writer's.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

from kseg.checksums import crc32c
from kseg.codecs import Codec, get_codec
from kseg.codecs.plugins import plugin_codec
from kseg.errors import KsegError
from kseg.facts.log_entry import LOG_OVERHEAD, SIZE_POSITION
from kseg.facts.message_v0v1 import CRC_POSITION as LEGACY_CRC_POSITION
from kseg.facts.record_batch_v2 import CRC_POSITION as V2_CRC_POSITION
from kseg.facts.record_batch_v2 import CRC_START as V2_CRC_START
from kseg.facts.record_batch_v2 import RECORD_COUNT_POSITION
from kseg.formats.attributes import (
    CODEC_NAMES,
    CODEC_PLUGIN,
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPE_MASK,
    TIMESTAMP_TYPE_NAMES,
)
from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.model import Record
from kseg.ops.build_lines import BatchLine, Line, at_line, bool_field, int_field, line_error

_CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}
_TS_TYPES = {name: t for t, name in TIMESTAMP_TYPE_NAMES.items()}
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class Disagreement:
    """A derived field a line gives that the batch's bytes do not."""

    line: Line
    base_offset: int
    field: str
    given: Any
    computed: Any
    checked: bool = True  # False: a CRC or size of bytes kseg cannot reproduce (compressed, LogAppendTime)

    def __str__(self) -> str:
        show = (lambda v: f"{v:#010x}") if self.field == "crc" else str
        return (f"{at_line(self.line)} (batch at offset {self.base_offset}): {self.field}: the line gives "
                f"{show(self.given)}, the batch's bytes give {show(self.computed)}")



def _codec(bl: BatchLine, source: str | None) -> tuple[int, int | None, Codec | None]:
    """(codec id, plugin id, codec object) of a batch line."""
    name = bl.fields.get("codec", "none")
    plugin_id = int_field(bl.fields, "plugin_id", bl.line, source)
    if isinstance(name, str) and name.startswith("plugin:") or plugin_id is not None:
        if plugin_id is None:
            raise line_error(bl.line, f'codec {name} needs its "plugin_id"', source)
        try:
            return CODEC_PLUGIN, plugin_id, plugin_codec(plugin_id)
        except KsegError as e:
            raise e.located(file=source, where=at_line(bl.line))
    if name not in _CODEC_IDS:
        raise line_error(bl.line, f"unknown codec {json.dumps(name)[:40]} (none, gzip, snappy, lz4, zstd or plugin:ALIAS)",
                    source)
    cid = _CODEC_IDS[name]
    return cid, None, (get_codec(cid) if cid else None)


def _ts_type(bl: BatchLine, magic: int, source: str | None) -> int:
    name = bl.fields.get("timestamp_type")
    if name is None:
        return NO_TIMESTAMP_TYPE if magic == 0 else CREATE_TIME
    if name not in _TS_TYPES:
        raise line_error(bl.line, f"unknown timestamp_type {json.dumps(name)[:40]}", source)
    return _TS_TYPES[name]


@dataclass
class _Given:
    """The derived fields a batch line gives, checked against the bytes built."""

    bl: BatchLine
    out: list[Disagreement]
    exact: bool = True  # the bytes built are the bytes the line describes (checked: the CRC and size too)

    def check(self, name: str, computed: Any) -> Any:
        given = self.bl.fields.get(name)
        if given is None or given == computed:
            return computed
        # A line that says its CRC did not match (crc_valid false) is held to it whatever the codec.
        checked = self.exact or name not in ("crc", "size") or (name == "crc" and self.bl.fields.get("crc_valid") is False)
        self.out.append(Disagreement(self.bl.line, self.bl.fields.get("base_offset", -1), name, given, computed, checked))
        return given


def encode_batch(bl: BatchLine, source: str | None = None, derived: list[Disagreement] | None = None) -> bytes:
    """One batch line's entry bytes. Derived fields the line gives that disagree go to
    ``derived`` and are written as given (the caller decides what a disagreement means)."""
    if bl.raw is not None:
        return bl.raw
    found: list[Disagreement] = [] if derived is None else derived
    f, n = bl.fields, bl.line
    magic = int_field(f, "magic", n, source, 2)
    if magic not in (0, 1, 2):
        raise line_error(n, f"magic must be 0, 1 or 2, not {magic}", source)
    codec, plugin_id, codec_impl = _codec(bl, source)
    ts_type = _ts_type(bl, magic, source)
    records = bl.records
    # Uncompressed bytes are the records' own; a codec's may differ from the writer's, and a
    # LogAppendTime v2 batch's records stored timestamps the lines do not show.
    given = _Given(bl, found, exact=codec == 0 and not (magic == 2 and ts_type == LOG_APPEND_TIME))
    try:
        if magic == 2:
            raw = _encode_v2(bl, records, codec, plugin_id, codec_impl, ts_type, given, source)
        else:
            raw = _encode_legacy(bl, records, magic, codec, codec_impl, ts_type, given, source)
    except KsegError as e:
        raise e.located(file=source, where=at_line(n))
    # The frame's own fields last: the count (legacy), size and CRC of what was built.
    if magic < 2:
        given.check("count", len(records))
    size = given.check("size", len(raw))  # dump's size: the whole entry, framing included
    crc_at = V2_CRC_POSITION if magic == 2 else LEGACY_CRC_POSITION
    crc = given.check("crc", _U32.unpack_from(raw, crc_at)[0])
    if not isinstance(crc, int) or not isinstance(size, int) or size < LOG_OVERHEAD:
        raise line_error(n, '"crc" and "size" must be integers', source)
    buf = bytearray(raw)
    _U32.pack_into(buf, crc_at, crc & 0xFFFFFFFF)
    _I32.pack_into(buf, SIZE_POSITION, size - LOG_OVERHEAD)
    return bytes(buf[:size])  # a smaller size: a truncated entry, as the line asks


def _encode_v2(bl: BatchLine, records: list[Record], codec: int, plugin_id: int | None, codec_impl: Codec | None,
               ts_type: int, given: _Given, source: str | None) -> bytes:
    f, n = bl.fields, bl.line
    base = int_field(f, "base_offset", n, source, records[0].offset if records else None)
    if base is None:
        raise line_error(n, 'a batch without records needs its "base_offset"', source)
    if ts_type == NO_TIMESTAMP_TYPE:
        raise line_error(n, "a v2 batch has CreateTime or LogAppendTime", source)
    last = records[-1].offset if records else base
    last_given = int_field(f, "last_offset", n, source)
    # The cleaner keeps a batch's last offset when it drops its last records: a later one is the line's.
    if last_given is not None and last_given >= last:
        last_offset = last_given
    else:
        last_offset = given.check("last_offset", last)
    computed_max = max((r.stored_timestamp for r in records), default=NO_TIMESTAMP)
    max_given = int_field(f, "max_timestamp", n, source)
    if ts_type == LOG_APPEND_TIME or not records:
        max_ts = computed_max if max_given is None else max_given
        if ts_type == LOG_APPEND_TIME and max_given is not None:
            records = [r._replace(timestamp=max_given, stored_timestamp=max_given)
                       if "stored_timestamp" not in rf else r for r, rf in zip(records, bl.record_fields)]
    else:
        max_ts = given.check("max_timestamp", computed_max)
    count = given.check("count", len(records))
    raw = build_v2_batch(
        records, base_offset=base, codec=codec if plugin_id is None else 0, timestamp_type=ts_type,
        transactional=bool_field(f, "is_transactional", n, source), control=bool_field(f, "is_control", n, source),
        producer_id=int_field(f, "producer_id", n, source, NO_PRODUCER_ID),
        producer_epoch=int_field(f, "producer_epoch", n, source, NO_PRODUCER_EPOCH),
        base_sequence=int_field(f, "base_sequence", n, source, NO_SEQUENCE),
        partition_leader_epoch=int_field(f, "partition_leader_epoch", n, source, NO_PARTITION_LEADER_EPOCH),
        last_offset_delta=last_offset - base, delete_horizon_ms=int_field(f, "delete_horizon_ms", n, source),
        max_timestamp=max_ts, plugin_id=plugin_id, codec_impl=codec_impl)
    if count != len(records):  # --derived given: the count as the line says (its CRC checked below)
        buf = bytearray(raw)
        _I32.pack_into(buf, RECORD_COUNT_POSITION, count)
        _U32.pack_into(buf, V2_CRC_POSITION, crc32c(memoryview(buf)[V2_CRC_START:]))
        raw = bytes(buf)
    return raw


def _encode_legacy(bl: BatchLine, records: list[Record], magic: int, codec: int, codec_impl: Codec | None,
                   ts_type: int, given: _Given, source: str | None) -> bytes:
    f, n = bl.fields, bl.line
    if magic == 0:
        ts_type = NO_TIMESTAMP_TYPE
    if not records:
        raise line_error(n, f"a v{magic} entry needs a record", source)
    if any(r.headers for r in records):
        raise line_error(n, f"v{magic} messages have no headers (magic 2 batches do)", source)
    if codec == 0:
        if len(records) != 1:
            raise line_error(n, f"an uncompressed v{magic} entry holds one record, not {len(records)}", source)
        r = records[0]
        offset = given.check("last_offset", r.offset)
        attrs = TIMESTAMP_TYPE_MASK if magic == 1 and ts_type == LOG_APPEND_TIME else 0
        ts = given.check("max_timestamp", r.stored_timestamp if magic == 1 else NO_TIMESTAMP)
        return build_legacy_message(offset, magic, attrs, ts, r.key, r.value)
    wrapper_ts = None
    max_given = int_field(f, "max_timestamp", n, source)
    if magic == 1:
        computed = max(r.stored_timestamp for r in records)
        wrapper_ts = max_given if (ts_type == LOG_APPEND_TIME and max_given is not None) else \
            given.check("max_timestamp", computed)
    last = given.check("last_offset", records[-1].offset)
    inner = [r._replace(attributes=0) for r in records]
    raw = build_legacy_wrapper(inner, magic=magic, codec=codec, timestamp_type=ts_type, wrapper_timestamp=wrapper_ts,
                               codec_impl=codec_impl)
    if last != records[-1].offset:  # --derived given: a wrapper offset as the line says
        raw = struct.pack(">q", last) + raw[8:]
    return raw



__all__ = ["Disagreement", "encode_batch"]
