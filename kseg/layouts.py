"""Fast ``struct`` layouts derived from the construct schemas.

construct parses a batch header in ~15 µs, ``struct.unpack_from`` in ~0.2 µs.
The hot paths use the ``struct.Struct`` built here from the schema's own field
list, so a layout is still written down exactly once (in ``formats/``).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import construct

from kseg.formats import (
    attributes,
    control_record,
    index_files,
    kafka07,
    log_entry,
    message_v0v1,
    primitives,
    producer_snapshot,
    record_batch_v2,
)


class Layout(NamedTuple):
    struct: struct.Struct
    names: tuple[str, ...]

    @property
    def size(self) -> int:
        return self.struct.size


def derive(schema: construct.Struct) -> Layout:
    """Build a big-endian ``struct.Struct`` equivalent to a fixed-size construct Struct."""
    codes = []
    names = []
    for sub in schema.subcons:
        name = sub.name
        inner = sub.subcon if isinstance(sub, construct.Renamed) else sub
        if isinstance(inner, construct.Const):
            inner = inner.subcon
        if isinstance(inner, construct.FormatField):
            fmt = inner.fmtstr
            if fmt[0] != ">":
                raise TypeError(f"{name}: only big-endian fields are derivable, got {fmt!r}")
            codes.append(fmt[1:])
            names.append(name)
        elif isinstance(inner, construct.Bytes) and isinstance(inner.length, int):
            codes.append(f"{inner.length}s")
            names.append(name)
        elif isinstance(inner, construct.Padded) and isinstance(inner.subcon, construct.Pass.__class__):
            codes.append(f"{inner.length}x")
        else:
            raise TypeError(f"{name}: {type(inner).__name__} has no fixed struct equivalent")
    layout = Layout(struct.Struct(">" + "".join(codes)), tuple(names))
    if layout.struct.size != schema.sizeof():
        raise AssertionError(f"derived size {layout.struct.size} != schema size {schema.sizeof()}")
    return layout


def positions(schema: construct.Struct) -> dict[str, int]:
    """The byte position of every named field of a fixed-size construct Struct."""
    out = {}
    pos = 0
    for sub in schema.subcons:
        if sub.name is not None:
            out[sub.name] = pos
        pos += sub.sizeof()
    return out


ENTRY_FRAMING = derive(log_entry.EntryFraming)
LOG_ENTRY_PREFIX = derive(log_entry.LogEntryPrefix)
BATCH_V2_HEADER = derive(record_batch_v2.RecordBatchV2Header)
MESSAGE_V0_HEADER = derive(message_v0v1.MessageV0Header)
MESSAGE_V1_HEADER = derive(message_v0v1.MessageV1Header)
MESSAGE_HEADER = {0: MESSAGE_V0_HEADER, 1: MESSAGE_V1_HEADER}
LENGTH_I32 = derive(message_v0v1.LengthField)
CONTROL_KEY = derive(control_record.ControlRecordKey)
END_TXN_MARKER = derive(control_record.EndTxnMarkerValue)
OFFSET_INDEX_ENTRY = derive(index_files.OffsetIndexEntry)
TIME_INDEX_ENTRY = derive(index_files.TimeIndexEntry)
ABORTED_TXN_ENTRY = derive(index_files.AbortedTxnEntry)
KAFKA07_HEADER = derive(kafka07.Kafka07Header)
SNAPSHOT_HEADER = derive(producer_snapshot.ProducerSnapshotHeader)
SNAPSHOT_ENTRY = derive(producer_snapshot.ProducerSnapshotEntry)


def accelerator_layout() -> dict[str, int]:
    """Every position, size and mask the C accelerator uses, from the schemas
    (``kseg.log.fast`` hands them to ``_speedups.configure`` at import)."""
    entry = positions(log_entry.LogEntryPrefix)
    legacy = positions(message_v0v1.MessageV1Header)
    v2 = positions(record_batch_v2.RecordBatchV2Header)
    return {
        "log_overhead": ENTRY_FRAMING.size,
        "prefix_size": LOG_ENTRY_PREFIX.size,
        "size_at": entry["size"],
        "magic_at": entry["magic"],
        "min_size_v0": log_entry.MIN_SIZE_BY_MAGIC[0],
        "min_size_v1": log_entry.MIN_SIZE_BY_MAGIC[1],
        "min_size_v2": log_entry.MIN_SIZE_BY_MAGIC[2],
        "legacy_crc_at": legacy["crc"],
        "legacy_crc_start": legacy["magic"],
        "legacy_attributes_at": legacy["attributes"],
        "v1_timestamp_at": legacy["timestamp"],
        "v0_key_length_at": MESSAGE_V0_HEADER.size,
        "v1_key_length_at": MESSAGE_V1_HEADER.size,
        "v2_leader_epoch_at": v2["partition_leader_epoch"],
        "v2_crc_at": v2["crc"],
        "v2_attributes_at": v2["attributes"],
        "v2_last_offset_delta_at": v2["last_offset_delta"],
        "v2_base_timestamp_at": v2["base_timestamp"],
        "v2_max_timestamp_at": v2["max_timestamp"],
        "v2_producer_id_at": v2["producer_id"],
        "v2_producer_epoch_at": v2["producer_epoch"],
        "v2_base_sequence_at": v2["base_sequence"],
        "v2_record_count_at": v2["record_count"],
        "codec_mask": attributes.CODEC_MASK,
        "max_varint_bytes": primitives.MAX_VARINT_BYTES,
        "max_varlong_bytes": primitives.MAX_VARLONG_BYTES,
    }
