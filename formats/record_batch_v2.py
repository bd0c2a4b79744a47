"""Record batch v2 (magic 2): the 61-byte batch header and the varint record (spec §3).

Batch header:
    base_offset             int64
    batch_length            int32   bytes after this field (>= 49)
    partition_leader_epoch  int32   outside the CRC
    magic                   int8    2
    crc                     uint32  CRC-32C over attributes .. end of batch
    attributes              int16   bits 0-2 codec, 3 timestamp type, 4 transactional,
                                    5 control, 6 delete horizon, 8-11 plugin id (kseg, KIP-984)
    last_offset_delta       int32
    base_timestamp          int64   first record's timestamp, or the delete horizon (bit 6)
    max_timestamp           int64
    producer_id             int64
    producer_epoch          int16
    base_sequence           int32
    record_count            int32
    records                 the records, or one compressed stream of them

Record (all varints zig-zag):
    length varint | attributes int8 | timestamp_delta varlong | offset_delta varint |
    key (varint length, -1 = null) | value (same) | header count varint |
    headers: key (varint length >= 0, UTF-8) + value (varint length, -1 = null)
"""

from construct import (
    Bytes,
    GreedyBytes,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    Prefixed,
    PrefixedArray,
    Struct,
    this,
)

from .primitives import VarInt, VarLong, VarNullableBytes

RECORD_BATCH_OVERHEAD = 61
BATCH_LENGTH_MIN = RECORD_BATCH_OVERHEAD - 12  # an empty batch
CRC_START = 21  # the CRC covers batch bytes [21, end)
CRC_POSITION = 17
ATTRIBUTES_POSITION = 21
LAST_OFFSET_DELTA_POSITION = 23
BASE_TIMESTAMP_POSITION = 27
MAX_TIMESTAMP_POSITION = 35
RECORD_COUNT_POSITION = 57

RecordBatchV2Header = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,
    "attributes" / Int16ub,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "record_count" / Int32sb,
)

RecordBatchV2 = Struct(
    *RecordBatchV2Header.subcons,
    "records" / Bytes(this.batch_length - BATCH_LENGTH_MIN),
)

HeaderV2 = Struct(
    "key" / Prefixed(VarInt, GreedyBytes),
    "value" / VarNullableBytes,
)

RecordV2Body = Struct(
    "attributes" / Int8sb,
    "timestamp_delta" / VarLong,
    "offset_delta" / VarInt,
    "key" / VarNullableBytes,
    "value" / VarNullableBytes,
    "headers" / PrefixedArray(VarInt, HeaderV2),
)

RecordV2 = Prefixed(VarInt, RecordV2Body)
