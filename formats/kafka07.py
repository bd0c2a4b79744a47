"""The pre-0.8 (Kafka 0.7) message format (spec §2.4).

    size        int32   bytes that follow (magic .. end of payload)
    magic       int8    0: no attributes byte; 1: attributes byte present
    attributes  int8    magic 1 only; bits 0-1 codec (0 none, 1 gzip, 2 snappy, 3 lz4)
    crc         uint32  CRC-32 of the payload only
    payload     size - 5 (magic 0) or size - 6 (magic 1) bytes; a compressed message's
                payload is a compressed message set in this same format

Offsets are byte positions; a file is named after its starting byte position.
"""

from construct import Bytes, If, Int8sb, Int32sb, Int32ub, Struct, this

SIZE_FIELD = 4
# Bytes from magic to the payload (magic, attributes for magic 1, crc): the smallest size.
PAYLOAD_START = {0: 5, 1: 6}

Kafka07Header = Struct(
    "size" / Int32sb,
    "magic" / Int8sb,
)

Kafka07Message = Struct(
    "size" / Int32sb,
    "magic" / Int8sb,
    "attributes" / If(this.magic == 1, Int8sb),
    "crc" / Int32ub,
    "payload" / Bytes(lambda ctx: ctx.size - PAYLOAD_START[ctx.magic]),
)
