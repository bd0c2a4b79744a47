"""The 17-byte prefix every entry of a .log file starts with (spec §1.1).

    offset           int64   v0/v1: message offset (a wrapper's last inner offset); v2: baseOffset
    size             int32   bytes after this field; the entry is size + 12 bytes
    crc_or_epoch     4 bytes v0/v1: CRC-32; v2: partitionLeaderEpoch
    magic            int8    0, 1 or 2: read this before interpreting anything else
"""

from construct import Bytes, Int8sb, Int32sb, Int64sb, Struct

LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
MAGIC_POSITION = 16

LogEntryPrefix = Struct(
    "offset" / Int64sb,
    "size" / Int32sb,
    "crc_or_epoch" / Bytes(4),
    "magic" / Int8sb,
)
