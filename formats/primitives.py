"""Primitive field types shared by the schemas: Kafka varints and nullable byte arrays.

Kafka's ``varint``/``varlong`` are zig-zag LEB128 (spec §1.3), which is exactly
construct's ``ZigZag``; Kafka additionally caps them at 5/10 bytes, which the
fast decoder enforces. Lengths are signed and -1 means null.
"""

from construct import (
    FocusedSeq,
    If,
    Bytes,
    Int32sb,
    Rebuild,
    ZigZag,
    this,
)

VarInt = ZigZag
VarLong = ZigZag

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10

# Java's int32 and int64 ranges: the bounds of Kafka's fixed-width fields.
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _nullable_bytes(length_field):
    """Length-prefixed bytes where length -1 stands for null (parsed as None)."""
    return FocusedSeq(
        "data",
        "length" / Rebuild(length_field, lambda ctx: -1 if ctx.data is None else len(ctx.data)),
        "data" / If(this.length >= 0, Bytes(this.length)),
    )


# v2 record key/value/header value: varint length, -1 = null.
VarNullableBytes = _nullable_bytes(VarInt)
# v0/v1 message key/value: int32 length, -1 = null.
Int32NullableBytes = _nullable_bytes(Int32sb)
