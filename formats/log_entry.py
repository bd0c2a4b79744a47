"""The 17-byte prefix every entry of a .log file starts with (spec §1.1).

    offset           int64   v0/v1: message offset (a wrapper's last inner offset); v2: baseOffset
    size             int32   bytes after this field; the entry is size + 12 bytes
    crc_or_epoch     4 bytes v0/v1: CRC-32; v2: partitionLeaderEpoch
    magic            int8    0, 1 or 2: read this before interpreting anything else
"""

from construct import Bytes, Int8sb, Int32sb, Int64sb, Struct

from .message_v0v1 import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1
from .record_batch_v2 import BATCH_LENGTH_MIN

LOG_OVERHEAD = 12
HEADER_SIZE_UP_TO_MAGIC = 17
SIZE_POSITION = 8
MAGIC_POSITION = 16

# The framing every entry starts with: its offset and the size of the rest.
EntryFraming = Struct(
    "offset" / Int64sb,
    "size" / Int32sb,
)

LogEntryPrefix = Struct(
    *EntryFraming.subcons,
    "crc_or_epoch" / Bytes(4),
    "magic" / Int8sb,
)


# The smallest legal ``size`` field per magic: an empty v0/v1 message, an empty v2 batch.
MIN_SIZE_BY_MAGIC = {0: RECORD_OVERHEAD_V0, 1: RECORD_OVERHEAD_V1, 2: BATCH_LENGTH_MIN}
