"""Typed, immutable objects that decoding yields and encoding takes.

``Batch``, ``Record`` and ``Header`` are NamedTuples rather than frozen
dataclasses: just as immutable and typed, but built with ``tuple.__new__`` on
the hot path, which is several times cheaper than a frozen dataclass's
``__init__`` (legacy segments hold one "batch" per message, millions of them).
"""

from __future__ import annotations

from collections import _tuplegetter  # type: ignore[attr-defined]
from typing import Callable, NamedTuple

from kseg.checksums import crc32, crc32c
from kseg.facts.message_v0v1 import CRC_START as LEGACY_CRC_START
from kseg.facts.primitives import INT32_MAX
from kseg.facts.record_batch_v2 import CRC_START as V2_CRC_START
from kseg.formats.attributes import (
    CODEC_MASK,
    CODEC_NAMES,
    CODEC_PLUGIN,
    CONTROL_MASK,
    CREATE_TIME,
    DELETE_HORIZON_MASK,
    LOG_APPEND_TIME,
    NO_SEQUENCE,
    NO_TIMESTAMP_TYPE,
    PLUGIN_ID_MASK,
    PLUGIN_ID_SHIFT,
    TIMESTAMP_TYPE_MASK,
    TIMESTAMP_TYPE_NAMES,
    TRANSACTIONAL_MASK,
)

# The alias of a plugin id, for ``Batch.codec_name``: the plugin registry lives in
# ``kseg.codecs.plugins``, above this module, which installs its lookup here.
_plugin_namer: list[Callable[[int], "str | None"]] = [lambda plugin_id: None]


def set_plugin_namer(namer: Callable[[int], "str | None"]) -> None:
    """Install the plugin id -> alias lookup used by ``Batch.codec_name``."""
    _plugin_namer[0] = namer


class Header(NamedTuple):
    """A v2 record header: the key is text, the value bytes or None."""

    key: str
    value: bytes | None


class Record(NamedTuple):
    """One record (a v2 record, or a v0/v1 message), with its absolute offset.

    ``timestamp`` is the effective one (LogAppendTime batches impose theirs);
    ``stored_timestamp`` is what the record itself carries, kept so that a
    batch can be rebuilt byte for byte. ``crc`` is the stored CRC of a legacy
    message (None for v2 records).
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    stored_timestamp: int
    attributes: int
    magic: int
    crc: int | None


def make_record(
    offset: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    headers: tuple[Header, ...] | list[tuple[str, bytes | None]] = (),
    *,
    stored_timestamp: int | None = None,
    attributes: int = 0,
    magic: int = 2,
) -> Record:
    """Convenience constructor for building batches by hand."""
    hdrs = tuple(h if isinstance(h, Header) else Header(*h) for h in headers)
    return Record(
        offset,
        timestamp,
        key,
        value,
        hdrs,
        timestamp if stored_timestamp is None else stored_timestamp,
        attributes,
        magic,
        None,
    )


class Batch(NamedTuple):
    """One top-level entry of a .log file: a v2 batch or a v0/v1 message (maybe a wrapper).

    ``base_offset`` and ``max_timestamp`` are the v2 batch header's baseOffset and
    maxTimestamp. A legacy entry has one offset and one timestamp, stored in the
    same places: ``base_offset`` is its message offset (for a compressed wrapper,
    the last inner offset), ``max_timestamp`` its timestamp (v1; -1 for v0).
    ``offset`` and ``timestamp`` are older names of the same two fields.
    ``raw`` is the whole entry (framing included) as stored.
    """

    position: int
    size: int
    magic: int
    base_offset: int
    crc: int
    attributes: int
    max_timestamp: int
    raw: memoryview
    # v2 only (None on legacy entries)
    partition_leader_epoch: int | None = None
    last_offset_delta: int | None = None
    base_timestamp: int | None = None
    producer_id: int | None = None
    producer_epoch: int | None = None
    base_sequence: int | None = None
    record_count: int | None = None

    # --- the older names of base_offset and max_timestamp ---------------
    @property
    def offset(self) -> int:
        """The older name of ``base_offset``."""
        return self.base_offset

    @property
    def timestamp(self) -> int:
        """The older name of ``max_timestamp``."""
        return self.max_timestamp

    # --- derived facts -------------------------------------------------
    @property
    def is_v2(self) -> bool:
        return self.magic >= 2

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def plugin_id(self) -> int | None:
        if self.magic >= 2 and self.codec == CODEC_PLUGIN:
            return (self.attributes & PLUGIN_ID_MASK) >> PLUGIN_ID_SHIFT
        return None

    @property
    def plugin_alias(self) -> str | None:
        """The alias of the registered plugin codec the batch names; None for a batch that names
        no plugin, or one this process has not registered."""
        return None if self.plugin_id is None else _plugin_namer[0](self.plugin_id)

    @property
    def codec_name(self) -> str:
        name = CODEC_NAMES.get(self.codec)
        if name is not None:
            return name
        if self.plugin_id is not None:
            alias = self.plugin_alias
            return f"plugin:{alias}" if alias else f"plugin:{self.plugin_id}"
        return f"unknown({self.codec})"

    @property
    def is_compressed(self) -> bool:
        return self.codec != 0

    @property
    def timestamp_type(self) -> int:
        """-1 NoTimestampType (v0), 0 CreateTime, 1 LogAppendTime."""
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def timestamp_type_name(self) -> str:
        return TIMESTAMP_TYPE_NAMES[self.timestamp_type]


    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset(self) -> int:
        if self.magic >= 2:
            lod = self.last_offset_delta
            assert lod is not None  # set on every v2 batch
            return self.base_offset + lod
        return self.base_offset

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def last_sequence(self) -> int:
        """baseSequence + lastOffsetDelta, wrapping past int32 max to 0 (spec §3.1); -1 when the
        base sequence is -1 (``increment_sequence``)."""
        if self.base_sequence is None or self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, _java_int(self.last_offset_delta or 0))

    def computed_crc(self) -> int:
        """The CRC of the stored bytes: CRC-32C (v2) or CRC-32 (v0/v1)."""
        if self.magic >= 2:
            return crc32c(self.raw[V2_CRC_START:])
        return crc32(self.raw[LEGACY_CRC_START:])

    @property
    def crc_valid(self) -> bool:
        return self.computed_crc() == self.crc


# The older names, read at the speed of the fields themselves (namedtuple's own getter,
# no Python frame, same docstrings); type checkers see the properties above.
for _old, _field in (("offset", "base_offset"), ("timestamp", "max_timestamp")):
    setattr(Batch, _old, _tuplegetter(Batch._fields.index(_field), getattr(Batch, _old).__doc__))
del _old, _field


def _java_int(v: int) -> int:
    """``v`` as a Java int holds it (two's complement, 32 bits)."""
    return (v + 0x80000000) % 0x100000000 - 0x80000000


def increment_sequence(seq: int, inc: int) -> int:
    """Kafka's producer-sequence sum (DefaultRecordBatch.incrementSequence) in Java's int arithmetic:
    past int32 max it wraps to 0; damaged values overflow as Java's ints do (kseg/_sequence.h is
    the C twin)."""
    if seq > _java_int(INT32_MAX - inc):
        return _java_int(inc - (INT32_MAX - seq) - 1)
    return _java_int(seq + inc)


def record_sequence(batch: Batch, record: Record) -> int:
    """A v2 record's sequence: baseSequence + offsetDelta with the int32 wrap; -1 when the base
    sequence is negative (Kafka's DefaultRecord)."""
    if batch.base_sequence is None:
        return NO_SEQUENCE
    return sequence_at(batch.base_sequence, record.offset - batch.base_offset)


def sequence_at(base_sequence: int, delta: int) -> int:
    """The sequence of the record ``delta`` offsets into a v2 batch of ``base_sequence`` (-1: none,
    whenever the base is negative)."""
    if base_sequence < 0:
        return NO_SEQUENCE
    return increment_sequence(base_sequence, _java_int(delta))
