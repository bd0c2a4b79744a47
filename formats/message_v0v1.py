"""Message format v0 and v1 ("legacy" MessageSet entries) with the 12-byte log framing (spec §2.1).

    offset       int64   absolute (v0, v1 top level); relative inside a v1 wrapper
    size         int32   bytes from crc to end of value
    crc          uint32  CRC-32 over magic .. end of value
    magic        int8    0 or 1
    attributes   int8    bits 0-2 codec, bit 3 timestamp type (v1)
    timestamp    int64   v1 only; -1 = none
    key          int32 length (-1 = null) + bytes
    value        int32 length (-1 = null) + bytes; a compressed wrapper's value is
                 the compressed concatenation of complete inner entries
"""

from construct import Int8sb, Int32sb, Int32ub, Int64sb, Struct

from .primitives import Int32NullableBytes

RECORD_OVERHEAD_V0 = 14  # smallest legal size field
RECORD_OVERHEAD_V1 = 22
# Bytes from the entry start to the key length: 18 (v0), 26 (v1).
KEY_LENGTH_POSITION = {0: 18, 1: 26}
CRC_POSITION = 12
CRC_START = 16  # the CRC covers entry bytes [16, end)
ATTRIBUTES_POSITION = 17
V1_TIMESTAMP_POSITION = 18

# Fixed headers, from which the fast struct layouts are derived.
MessageV0Header = Struct(
    "offset" / Int64sb,
    "size" / Int32sb,
    "crc" / Int32ub,
    "magic" / Int8sb,
    "attributes" / Int8sb,
)

MessageV1Header = Struct(
    "offset" / Int64sb,
    "size" / Int32sb,
    "crc" / Int32ub,
    "magic" / Int8sb,
    "attributes" / Int8sb,
    "timestamp" / Int64sb,
)

# Whole messages (parse and build).
MessageV0 = Struct(
    *MessageV0Header.subcons,
    "key" / Int32NullableBytes,
    "value" / Int32NullableBytes,
)

MessageV1 = Struct(
    *MessageV1Header.subcons,
    "key" / Int32NullableBytes,
    "value" / Int32NullableBytes,
)

MESSAGE_BY_MAGIC = {0: MessageV0, 1: MessageV1}
HEADER_BY_MAGIC = {0: MessageV0Header, 1: MessageV1Header}

# The int32 length field that precedes key and value.
LengthField = Struct("length" / Int32sb)
