"""The built-in codecs without a Kafka-specific framing: none, gzip, zstd.

snappy (xerial framing) and lz4 (Kafka's frame and its header checksum
quirk) live in ``xerial.py`` and ``kafka_lz4.py``. Spec §4.1 and §4.4.
"""

from __future__ import annotations

import struct
import zlib

import zstandard
from isal import isal_zlib

from kseg.codecs.base import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    Buffer,
    Codec,
    as_view,
    check_level,
    check_limit,
    check_output_size,
    LIBRARY_ERRORS,
    library_error,
    library_errors,
)
from kseg.errors import DecompressionError, InputError
from kseg.formats.attributes import CODEC_GZIP, CODEC_NONE, CODEC_ZSTD, MAGIC_V2

__all__ = ["GzipCodec", "NoneCodec", "ZstdCodec"]

_GZIP_ERRORS = (isal_zlib.error, *LIBRARY_ERRORS)


def _no_level(codec: str, level: int | None) -> None:
    if level is not None:
        raise InputError(f"{codec} has no compression level, got {level!r}")


class NoneCodec(Codec):
    """Codec 0: the payload is stored as is."""

    id = CODEC_NONE
    name = "none"

    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        self.check_magic(magic)
        _no_level(self.name, level)
        return bytes(as_view(data))

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        # No limit check: the output is the input, which is already in memory.
        self.check_magic(magic)
        check_limit(limit)
        return bytes(as_view(data))


# Java's GZIPOutputStream header: no flags, MTIME 0, XFL 0, OS 255 (JDK 16+;
# older JDKs wrote 0). Python's zlib would write OS 3 and a level-dependent XFL.
_GZIP_HEADER = bytes.fromhex("1f8b08000000000000ff")
_GZIP_MEMBER_START = b"\x1f\x8b\x08"
_GZIP_HEADER_SIZE = 10


class GzipCodec(Codec):
    """Codec 1: RFC 1952 gzip, concatenated members accepted on read.

    Written with zlib (level 6 gives Java's Deflater bytes); read with ISA-L."""

    id = CODEC_GZIP
    name = "gzip"
    default_level = 6  # Java's -1 (Deflater.DEFAULT_COMPRESSION) is zlib's 6

    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        self.check_magic(magic)
        if level == -1:
            level = None
        check_level(self.name, level, 1, 9)
        view = as_view(data)
        deflater = zlib.compressobj(
            self.default_level if level is None else level, zlib.DEFLATED, -zlib.MAX_WBITS
        )
        body = deflater.compress(view) + deflater.flush()
        trailer = struct.pack("<II", zlib.crc32(view), len(view) & 0xFFFFFFFF)
        return b"".join((_GZIP_HEADER, body, trailer))

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        self.check_magic(magic)
        check_limit(limit)
        view = as_view(data)
        if not view:
            raise DecompressionError("gzip payload is empty, expected a gzip member")
        pieces: list[bytes] = []
        total = 0
        pos = 0
        while True:
            # Strict gzip (wbits 16+15), like Java's GZIPInputStream: no zlib or raw deflate.
            # ISA-L's inflate (python-isal, zlib's API) reads the same streams 2-3x faster.
            inflater = isal_zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:  # (not library_errors: a context manager costs more than a small batch's inflating)
                # One bounded call: zlib stops at limit+1 bytes or at the member's end.
                piece = inflater.decompress(view[pos:] if pos else view, limit - total + 1)
            except _GZIP_ERRORS as exc:
                raise library_error(self.name, exc, pos) from exc
            total += len(piece)
            check_output_size(self.name, total, limit)
            pieces.append(piece)
            if not inflater.eof:
                raise DecompressionError(
                    f"gzip member starting at byte {pos} is truncated "
                    f"(input ends after {len(view) - pos} bytes, before its trailer)",
                    position=len(view),
                )
            pos = len(view) - len(inflater.unused_data)
            # Java reads another member if a gzip header follows and ignores
            # anything else after a complete member; so do we.
            rest = view[pos : pos + _GZIP_HEADER_SIZE]
            if len(rest) < _GZIP_HEADER_SIZE or rest[:3] != _GZIP_MEMBER_START:
                break
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


# How much compressed input one zstd call may see. A zstd block can turn
# 4 input bytes into 128 KiB (an RLE block), so feeding at most
# remaining_budget / 32 KiB bytes per call keeps each call's output within
# the remaining budget (plus one block), instead of inflating everything.
_ZSTD_MAX_RATIO_SHIFT = 15
_ZSTD_MIN_STEP = 16
_ZSTD_MAX_STEP = 1 << 16


class ZstdCodec(Codec):
    """Codec 4: zstd frames, magic 2 only; frames without content size and
    several concatenated frames are accepted on read."""

    id = CODEC_ZSTD
    name = "zstd"
    min_magic = MAGIC_V2
    default_level = 3

    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        self.check_magic(magic)
        check_level(self.name, level, -131072, 22)
        # Java writes through zstd-jni's stream (ZstdOutputStreamNoFinalizer): the size is not
        # known up front (no content size in the frame, the parameters and window of an unknown
        # size), and closing the stream flushes it first, so the data ends in a block of its own
        # and an empty last block follows. The same calls give the same bytes, with the same
        # libzstd (1.5.6 in Kafka 3.9.2 and 4.3.1; 1.5.7 picks other matches in larger inputs).
        # Nothing written at all, zstd-jni's frame is the one-shot frame of size 0.
        view = as_view(data)
        compressor = zstandard.ZstdCompressor(
            level=self.default_level if level is None else level, write_content_size=not view
        )
        if not view:
            return compressor.compress(b"")
        stream = compressor.compressobj()
        return b"".join((
            stream.compress(view),
            stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK),
            stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH),
        ))

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        self.check_magic(magic)
        check_limit(limit)
        view = as_view(data)
        if not view:
            raise DecompressionError("zstd payload is empty, expected a zstd frame")
        pieces: list[bytes] = []
        total = 0
        pos = 0
        size = len(view)
        decompressor = zstandard.ZstdDecompressor()
        while pos < size:
            frame_start = pos
            inflater = decompressor.decompressobj()
            while not inflater.eof:
                if pos >= size:
                    raise DecompressionError(
                        f"zstd frame starting at byte {frame_start} is truncated", position=size
                    )
                step = (limit - total) >> _ZSTD_MAX_RATIO_SHIFT
                step = max(_ZSTD_MIN_STEP, min(_ZSTD_MAX_STEP, step))
                chunk = view[pos : pos + step]
                with library_errors(self.name, zstandard.ZstdError, position=frame_start):
                    piece = inflater.decompress(chunk)
                total += len(piece)
                check_output_size(self.name, total, limit)
                pieces.append(piece)
                pos += len(chunk)
                if inflater.eof:
                    pos -= len(inflater.unused_data)
        return b"".join(pieces)
