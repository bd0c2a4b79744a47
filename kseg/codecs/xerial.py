"""snappy (codec 2): raw snappy blocks inside snappy-java's "xerial" stream framing.

Java (``SnappyOutputStream``) writes, spec §4.2::

    82 53 4E 41 50 50 59 00    magic: 0x82 "SNAPPY" NUL
    int32 BE 1                 version
    int32 BE 1                 minimum compatible version
    then chunks until the end: int32 BE compressed length | raw snappy block
                               (each block compresses at most 32 KiB of input)

There is no end marker and no checksum. Readers must also accept raw
snappy without any framing (librdkafka and Sarama write that), concatenated
xerial streams, and any version fields (Redpanda wrote them little-endian).
python-snappy's ``uncompress`` knows only raw blocks, hence this module.
"""

from __future__ import annotations

import struct

import cramjam

from kseg.codecs.base import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Buffer,
    Codec,
    as_view,
    check_no_level,
    check_output_size,
    library_errors,
)
from kseg.errors import DecompressionError
from kseg.formats.attributes import CODEC_SNAPPY

__all__ = [
    "XERIAL_BLOCK_SIZE",
    "XERIAL_HEADER",
    "XERIAL_MAGIC",
    "SnappyCodec",
    "is_xerial",
    "raw_uncompressed_length",
    "snappy_blocks",
    "xerial_encode",
]

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_HEADER_SIZE = 16
XERIAL_BLOCK_SIZE = 32 * 1024
# A chunk-length word equal to the first 4 magic bytes starts a new stream.
_CONCAT_MARK = int.from_bytes(XERIAL_MAGIC[:4], "big")
_CHUNK_LENGTH = struct.Struct(">I")
# Snappy's densest element is a 3-byte copy of 64 bytes, so a valid block
# never decodes to more than 64/3 times its size; a larger claim is corrupt.
_MAX_EXPANSION = 22
_MAX_LENGTH_VARINT = 5


def xerial_encode(data: Buffer, block_size: int = XERIAL_BLOCK_SIZE) -> bytes:
    """Frame ``data`` as SnappyOutputStream does (empty input: the header alone)."""
    view = as_view(data)
    parts: list[bytes] = [XERIAL_HEADER]
    for start in range(0, len(view), block_size):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + block_size]))
        parts.append(_CHUNK_LENGTH.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def raw_uncompressed_length(block: memoryview, position: int = 0) -> tuple[int, int]:
    """The uncompressed length a raw snappy block declares, and the size of
    that leading varint. ``position`` is the block's offset, for errors."""
    length = 0
    for i in range(_MAX_LENGTH_VARINT):
        if i >= len(block):
            what = "is empty" if i == 0 else "ends inside its length varint"
            raise DecompressionError(f"snappy block {what}", position=position + i)
        byte = block[i]
        length |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            if length > 0xFFFFFFFF:
                break
            return length, i + 1
    raise DecompressionError(
        "snappy block length varint is not a 32-bit varint", position=position
    )


def is_xerial(view: memoryview | bytes) -> bool:
    """Whether a payload is xerial-framed (else Java reads it as one raw block)."""
    return len(view) >= XERIAL_HEADER_SIZE and view[: len(XERIAL_MAGIC)] == XERIAL_MAGIC


def snappy_blocks(view: memoryview) -> list[tuple[int, memoryview]]:
    """The raw snappy blocks of a payload, each with its byte position.

    Like Java's SnappyInputStream: input shorter than 16 bytes, or not
    starting with the xerial magic, is one raw block; otherwise chunks
    follow the header until the end of the input.
    """
    size = len(view)
    if not is_xerial(view):
        return [(0, view)]
    blocks: list[tuple[int, memoryview]] = []
    pos = XERIAL_HEADER_SIZE
    while pos < size:
        if size - pos < _CHUNK_LENGTH.size:
            # Java stops quietly at a partial length word: ignore it too.
            break
        (word,) = _CHUNK_LENGTH.unpack_from(view, pos)
        if word == _CONCAT_MARK:
            header = view[pos : pos + XERIAL_HEADER_SIZE]
            if len(header) < XERIAL_HEADER_SIZE or header[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
                raise DecompressionError(
                    "xerial snappy: chunk length 0x82534e41 but no complete stream header "
                    f"follows: expected {XERIAL_MAGIC.hex()}, found {bytes(header[:8]).hex()}",
                    position=pos,
                )
            pos += XERIAL_HEADER_SIZE  # version fields are not trusted
            continue
        if word >= 0x80000000:
            raise DecompressionError(
                f"xerial snappy: negative chunk length {word - (1 << 32)} at byte {pos}",
                position=pos,
            )
        start = pos + _CHUNK_LENGTH.size
        if word > size - start:
            raise DecompressionError(
                f"xerial snappy: chunk length {word} at byte {pos} runs past the end of the "
                f"payload ({size - start} bytes left)",
                position=pos,
            )
        blocks.append((start, view[start : start + word]))
        pos = start + word
    return blocks


class SnappyCodec(Codec):
    """Codec 2: writes xerial framing like Java; reads xerial, concatenated xerial and raw."""

    id = CODEC_SNAPPY
    name = "snappy"

    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        self.check_magic(magic)
        check_no_level(self.name, level)
        return xerial_encode(data)

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        view = self.payload_view(data, magic, limit, "snappy payload is empty")
        try:
            return self._decompress_blocks(snappy_blocks(view), limit)
        except DecompressionError as exc:
            if view[0] == XERIAL_MAGIC[0] and not is_xerial(view):
                # Most likely a damaged xerial header rather than a raw block.
                exc.message += (
                    " (decoded as a raw snappy block: the input does not start with "
                    f"the 16-byte xerial header; found {bytes(view[:8]).hex()}, "
                    f"expected {XERIAL_MAGIC.hex()})"
                )
            raise

    def _decompress_blocks(self, blocks: list[tuple[int, memoryview]], limit: int) -> bytes:
        # Every block declares its output size up front: check them all before
        # decompressing anything, so a bomb is refused without allocating it.
        lengths = []
        total = 0
        for pos, block in blocks:
            length, _ = raw_uncompressed_length(block, pos)
            total += length
            check_output_size(self.name, total, limit)
            if length > _MAX_EXPANSION * len(block):
                raise DecompressionError(
                    f"snappy block declares {length} bytes but is only {len(block)} bytes "
                    f"long (at most {_MAX_EXPANSION}x is possible)",
                    position=pos,
                )
            lengths.append(length)
        out = bytearray(total)
        target = memoryview(out)
        at = 0
        for (pos, block), length in zip(blocks, lengths):
            with library_errors(self.name, cramjam.DecompressionError, position=pos):
                written = cramjam.snappy.decompress_raw_into(block, target[at : at + length])
            if written != length:
                raise DecompressionError(
                    "snappy block length", position=pos, expected=length, found=written
                )
            at += length
        return bytes(out)
