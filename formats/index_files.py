"""Entries of the segment companion files (spec §5.2-5.4).

    .index       relative_offset int32 | position int32                       (8 bytes)
    .timeindex   timestamp int64 | relative_offset int32                      (12 bytes)
    .txnindex    version int16 | producer_id int64 | first_offset int64 |
                 last_offset int64 | last_stable_offset int64                (34 bytes)
"""

from construct import Int16sb, Int32sb, Int64sb, Struct

OffsetIndexEntry = Struct(
    "relative_offset" / Int32sb,
    "position" / Int32sb,
)

TimeIndexEntry = Struct(
    "timestamp" / Int64sb,
    "relative_offset" / Int32sb,
)

AbortedTxnEntry = Struct(
    "version" / Int16sb,
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,
    "last_offset" / Int64sb,
    "last_stable_offset" / Int64sb,
)
