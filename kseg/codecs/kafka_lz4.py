"""lz4 (codec 3): Kafka's LZ4 frame, and the header checksum of KAFKA-3160.

Java (``Lz4BlockOutputStream``) writes one LZ4 frame, spec §4.3::

    04 22 4D 18       magic 0x184D2204, little-endian
    60                FLG: version 01, independent blocks, no checksums, no content size
    40                BD: 64 KiB maximum block size
    HC                (xxh32(descriptor, seed 0) >> 8) & 0xFF
    blocks            uint32 LE size (high bit: stored uncompressed) | data
    00 00 00 00       end mark

The descriptor is FLG up to (excluding) HC. Kafka 0.8.2-0.9 hashed the
magic too; KIP-57 kept that broken HC for magic 0 and the correct one for
magic >= 1. So: write the broken HC for magic 0; on read, magic 0 takes
either HC (we patch in the correct one before python-lz4 sees the frame,
as librdkafka does) and magic >= 1 must carry the correct HC.
"""

from __future__ import annotations

import lz4.block
import lz4.frame
import xxhash

from kseg.codecs.base import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Buffer,
    Codec,
    as_view,
    check_level,
    check_output_size,
    library_errors,
)
from kseg.errors import DecompressionError
from kseg.formats.attributes import CODEC_LZ4

__all__ = [
    "KAFKA_LZ4_HEADER",
    "KAFKA_LZ4_HEADER_V0",
    "LZ4_MAGIC",
    "Lz4Codec",
    "break_header_checksum",
    "fix_header_checksum",
    "header_checksum",
    "header_checksum_position",
]

LZ4_MAGIC = b"\x04\x22\x4d\x18"
KAFKA_LZ4_HEADER = bytes.fromhex("04224d18604082")  # magic >= 1, correct HC
KAFKA_LZ4_HEADER_V0 = bytes.fromhex("04224d1860401a")  # magic 0, broken HC

_FLG_CONTENT_SIZE = 0x08
_FLG_DICT_ID = 0x01
_DESCRIPTOR_START = len(LZ4_MAGIC)
_DECOMPRESS_STEP = 64 * 1024  # one Kafka LZ4 block
_BLOCK_MAX = 64 * 1024  # BD 0x40
_BLOCK_STORED = 0x80000000  # block size high bit: the block is stored uncompressed


def header_checksum_position(frame: Buffer) -> int:
    """Where the HC byte is: after magic, FLG, BD and the optional content
    size (FLG bit 3) and dictionary id (FLG bit 0) fields."""
    if len(frame) < _DESCRIPTOR_START + 3:
        raise DecompressionError(
            f"lz4 frame is {len(frame)} bytes long, too short for a frame header",
            position=0,
        )
    if bytes(frame[:_DESCRIPTOR_START]) != LZ4_MAGIC:
        raise DecompressionError(
            "lz4 frame magic",
            position=0,
            expected=LZ4_MAGIC.hex(),
            found=bytes(frame[:_DESCRIPTOR_START]).hex(),
        )
    flg = frame[_DESCRIPTOR_START]
    position = _DESCRIPTOR_START + 2
    if flg & _FLG_CONTENT_SIZE:
        position += 8
    if flg & _FLG_DICT_ID:
        position += 4
    if position >= len(frame):
        raise DecompressionError(
            f"lz4 frame header is truncated: HC byte expected at byte {position}, "
            f"frame is {len(frame)} bytes long",
            position=len(frame),
        )
    return position


def header_checksum(frame: Buffer, *, broken: bool = False) -> int:
    """The HC byte a frame should carry: correct (KIP-57) or, with ``broken``,
    the pre-KIP-57 one that also hashes the 4 magic bytes."""
    end = header_checksum_position(frame)
    start = 0 if broken else _DESCRIPTOR_START
    return (xxhash.xxh32_intdigest(bytes(frame[start:end]), seed=0) >> 8) & 0xFF


def _with_hc(frame: Buffer, broken: bool) -> bytes:
    out = bytearray(frame)
    out[header_checksum_position(out)] = header_checksum(out, broken=broken)
    return bytes(out)


def fix_header_checksum(frame: Buffer) -> bytes:
    """The frame with the correct HC (what a magic 1 message must carry)."""
    return _with_hc(frame, broken=False)


def break_header_checksum(frame: Buffer) -> bytes:
    """The frame with the broken HC that Java writes for magic 0."""
    return _with_hc(frame, broken=True)


class Lz4Codec(Codec):
    """Codec 3: Kafka's LZ4 frame, HC broken for magic 0 and correct for magic >= 1."""

    id = CODEC_LZ4
    name = "lz4"
    default_level = 9  # Java's default; 9 means the fast compressor, others HC

    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        self.check_magic(magic)
        check_level(self.name, level, 1, 17)
        # Java: level 9 uses LZ4's fast compressor, any other level the HC one.
        # python-lz4 levels 0-2 mean the fast one, 3-16 HC (capped by liblz4).
        lz4_level = 0 if level is None or level == self.default_level else level
        frame = lz4.frame.compress(
            as_view(data),
            compression_level=lz4_level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
        if frame[: len(KAFKA_LZ4_HEADER)] != KAFKA_LZ4_HEADER:
            raise RuntimeError(
                f"python-lz4 wrote frame header {frame[:7].hex()}, "
                f"expected {KAFKA_LZ4_HEADER.hex()} (Kafka's FLG 0x60, BD 0x40)"
            )
        return break_header_checksum(frame) if magic == 0 else frame

    def kafka_frame_layout(self) -> tuple[str, int, bytes, int, int]:
        """What a C reader of Kafka's frames (magic >= 1) needs to read them as ``_kafka_frame``
        does, with the same liblz4: the file of python-lz4's block extension (which holds
        ``LZ4_decompress_safe``), this codec's id, the frame's header, the largest block and
        the block size's "stored" bit."""
        return lz4.block._block.__file__, self.id, KAFKA_LZ4_HEADER, _BLOCK_MAX, _BLOCK_STORED

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        view = self.payload_view(data, magic, limit)
        out = _kafka_frame(view, magic, limit)
        if out is not None:
            return out
        hc_at = header_checksum_position(view)
        found = view[hc_at]
        expected = header_checksum(view)
        if magic == 0:
            # Java skips the HC for magic 0; python-lz4 checks it, so patch it.
            header = bytes(view[:hc_at]) + bytes((expected,))
        elif found != expected:
            hint = ""
            if found == header_checksum(view, broken=True):
                hint = " (the pre-KIP-57 checksum, valid only in magic 0 messages)"
            raise DecompressionError(
                f"lz4 frame header checksum{hint}",
                position=hc_at,
                expected=f"0x{expected:02x}",
                found=f"0x{found:02x}",
            )
        else:
            header = bytes(view[: hc_at + 1])
        # Java rejects linked blocks (FLG bit 5 clear); python-lz4 decodes them,
        # and we let it: the data is unambiguous. Bytes after the end mark are
        # ignored, as Java does. python-lz4 allocates max_length bytes up front,
        # so each call asks for at most one step (and never past limit + 1).
        inflater = lz4.frame.LZ4FrameDecompressor()
        pieces: list[bytes] = []
        total = 0
        for chunk in (header, view[hc_at + 1 :]):
            while True:
                step = min(limit - total + 1, _DECOMPRESS_STEP)
                with library_errors(self.name):
                    piece = inflater.decompress(chunk, max_length=step)
                total += len(piece)
                check_output_size(self.name, total, limit)
                pieces.append(piece)
                if inflater.eof or inflater.needs_input:
                    break
                chunk = b""
            if inflater.eof:
                break
        if not inflater.eof:
            raise DecompressionError(
                "lz4 frame is truncated: input ends before the end mark", position=len(view)
            )
        return b"".join(pieces)


def _kafka_frame(view: memoryview, magic: int, limit: int) -> bytes | None:
    """The frame's data if it is exactly what Kafka writes (its 7-byte header,
    independent blocks of at most 64 KiB, an end mark) and fits ``limit``; else None,
    and the general path decides (and words any error). One library call per
    block instead of python-lz4's streaming frame reader: most of a batch's cost."""
    header = bytes(view[:7])
    if header != KAFKA_LZ4_HEADER and not (magic == 0 and header == KAFKA_LZ4_HEADER_V0):
        return None
    pieces: list[bytes] = []
    total = 0
    pos = 7
    end = len(view)
    while pos + 4 <= end:
        size = int.from_bytes(view[pos : pos + 4], "little")
        pos += 4
        if size == 0:  # end mark; bytes after it are ignored, as Java does
            return pieces[0] if len(pieces) == 1 else b"".join(pieces)
        stored = size & _BLOCK_STORED
        size &= ~_BLOCK_STORED
        if size > _BLOCK_MAX or pos + size > end:
            return None
        block = view[pos : pos + size]
        pos += size
        if stored:
            piece = bytes(block)
        else:
            try:
                piece = lz4.block.decompress(block, uncompressed_size=_BLOCK_MAX)
            except lz4.block.LZ4BlockError:
                return None
        total += len(piece)
        if total > limit:
            return None
        pieces.append(piece)
    return None
