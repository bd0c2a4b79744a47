"""zstd (codec 4, v2 only): streamed frames as zstd-jni writes them. Spec §4.4."""

from __future__ import annotations

import threading

import zstandard

from kseg.codecs.base import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    LIBRARY_ERRORS,
    Buffer,
    Codec,
    as_view,
    check_level,
    check_output_size,
    library_error,
)
from kseg.errors import DecompressionError
from kseg.formats.attributes import CODEC_ZSTD, MAGIC_V2

__all__ = ["ZstdCodec"]

_ZSTD_ERRORS = (zstandard.ZstdError, *LIBRARY_ERRORS)
_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's decompression context: making one costs more than inflating a small batch,
    and one must not be used by two threads at once."""
    found = getattr(_local, "decompressor", None)
    if found is None:
        found = _local.decompressor = zstandard.ZstdDecompressor()
    return found


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

    def decompress_v2_whole(self, view: memoryview, limit: int) -> bytes | None:
        """``decompress``'s first step when it is the last: one frame, fed at once (no more than
        that step feeds), ending at the payload's end, within ``limit``."""
        if not 0 < len(view) <= max(_ZSTD_MIN_STEP, min(_ZSTD_MAX_STEP, limit >> _ZSTD_MAX_RATIO_SHIFT)):
            return None
        inflater = _decompressor().decompressobj()
        try:
            out = inflater.decompress(view)
        except _ZSTD_ERRORS:
            return None
        return out if inflater.eof and not inflater.unused_data and len(out) <= limit else None

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        view = self.payload_view(data, magic, limit, "zstd payload is empty, expected a zstd frame")
        pieces: list[bytes] = []
        total = 0
        pos = 0
        size = len(view)
        decompressor = _decompressor()
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
                try:  # (not library_errors: a context manager costs more than a small batch's inflating)
                    piece = inflater.decompress(chunk)
                except _ZSTD_ERRORS as exc:
                    raise library_error(self.name, exc, frame_start) from exc
                total += len(piece)
                check_output_size(self.name, total, limit)
                pieces.append(piece)
                pos += len(chunk)
                if inflater.eof:
                    pos -= len(inflater.unused_data)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
