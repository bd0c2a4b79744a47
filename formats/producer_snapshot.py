"""Producer-state snapshot files, `<offset>.snapshot`, format version 1 (spec §5.5).

    version int16 (1) | crc uint32 (CRC-32C of bytes [6, end)) | count int32 |
    count x entry: producer_id int64 | epoch int16 | last_sequence int32 | last_offset int64 |
                   offset_delta int32 | timestamp int64 | coordinator_epoch int32 |
                   current_txn_first_offset int64
"""

from construct import Int16sb, Int32sb, Int32ub, Int64sb, Struct

ProducerSnapshotHeader = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "count" / Int32sb,
)

ProducerSnapshotEntry = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)

SNAPSHOT_CRC_START = 6
