"""Primitive field types shared by the schemas: Kafka varints and nullable byte arrays.

Kafka's ``varint``/``varlong`` are zig-zag LEB128 (spec §1.3), which is exactly
construct's ``ZigZag``; Kafka additionally caps them at 5/10 bytes, which the
fast decoder enforces. Lengths are signed and -1 means null.
"""

from construct import (
    FocusedSeq,
    If,
    Bytes,
    Int16sb,
    Int32sb,
    Rebuild,
    ZigZag,
    this,
)

VarInt = ZigZag
VarLong = ZigZag

MAX_VARINT_BYTES = 5
MAX_VARLONG_BYTES = 10


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
# Length-prefixed non-null bytes with an int16 length (strings in snapshot files).
Int16Bytes = FocusedSeq(
    "data",
    "length" / Rebuild(Int16sb, lambda ctx: len(ctx.data)),
    "data" / Bytes(this.length),
)
