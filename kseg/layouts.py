"""Fast ``struct`` layouts of the fixed-size schemas.

construct parses a batch header in ~15 µs, ``struct.unpack_from`` in ~0.2 µs.
The hot paths use the ``struct.Struct`` built here from the schema's own field
list, so a layout is still written down exactly once (in ``formats/``). The field
lists come through ``kseg.facts`` (derived from the schemas, checked by a test), so
that reading a segment never imports construct.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kseg.facts import (
    control_record,
    index_files,
    kafka07,
    log_entry,
    message_v0v1,
    primitives,
    producer_snapshot,
    record_batch_v2,
)
from kseg.formats import attributes


class Layout(NamedTuple):
    struct: struct.Struct
    names: tuple[str, ...]

    @property
    def size(self) -> int:
        return self.struct.size


def _layout(fmt: str, names: tuple[str, ...], positions: dict[str, int]) -> Layout:
    return Layout(struct.Struct(fmt), names)


ENTRY_FRAMING = _layout(*log_entry.LAYOUTS["EntryFraming"])
LOG_ENTRY_PREFIX = _layout(*log_entry.LAYOUTS["LogEntryPrefix"])
BATCH_V2_HEADER = _layout(*record_batch_v2.LAYOUTS["RecordBatchV2Header"])
MESSAGE_V0_HEADER = _layout(*message_v0v1.LAYOUTS["MessageV0Header"])
MESSAGE_V1_HEADER = _layout(*message_v0v1.LAYOUTS["MessageV1Header"])
MESSAGE_HEADER = {0: MESSAGE_V0_HEADER, 1: MESSAGE_V1_HEADER}
LENGTH_I32 = _layout(*message_v0v1.LAYOUTS["LengthField"])
CONTROL_KEY = _layout(*control_record.LAYOUTS["ControlRecordKey"])
END_TXN_MARKER = _layout(*control_record.LAYOUTS["EndTxnMarkerValue"])
OFFSET_INDEX_ENTRY = _layout(*index_files.LAYOUTS["OffsetIndexEntry"])
TIME_INDEX_ENTRY = _layout(*index_files.LAYOUTS["TimeIndexEntry"])
ABORTED_TXN_ENTRY = _layout(*index_files.LAYOUTS["AbortedTxnEntry"])
KAFKA07_HEADER = _layout(*kafka07.LAYOUTS["Kafka07Header"])
SNAPSHOT_HEADER = _layout(*producer_snapshot.LAYOUTS["ProducerSnapshotHeader"])
SNAPSHOT_ENTRY = _layout(*producer_snapshot.LAYOUTS["ProducerSnapshotEntry"])


def accelerator_layout() -> dict[str, int]:
    """Every position, size and mask the C accelerator uses, from the schemas
    (``kseg.log.fast`` hands them to ``_speedups.configure`` at import)."""
    entry = log_entry.LAYOUTS["LogEntryPrefix"][2]
    legacy = message_v0v1.LAYOUTS["MessageV1Header"][2]
    v2 = record_batch_v2.LAYOUTS["RecordBatchV2Header"][2]
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
        "v2_crc_start": record_batch_v2.CRC_START,
        "v2_records_at": record_batch_v2.RECORD_BATCH_OVERHEAD,
        "codec_mask": attributes.CODEC_MASK,
        "max_varint_bytes": primitives.MAX_VARINT_BYTES,
        "max_varlong_bytes": primitives.MAX_VARLONG_BYTES,
    }
