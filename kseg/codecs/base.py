"""The codec interface shared by built-in and plugin codecs, and its helpers.

Rules for every codec: bytes in, bytes out, no I/O. ``decompress`` is
bounded by ``limit`` (a decompression bomb fails fast without allocating
much more than ``limit`` bytes) and raises only kseg errors, whatever the
input bytes; positions in those errors are relative to the compressed
payload, so the caller shifts them (``KsegError.shift``) to file positions.
A codec is told the message magic because two framings depend on it
(LZ4's header checksum before KIP-57, zstd allowed with magic 2 only).
"""

from __future__ import annotations

import struct
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager

from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import (
    DecompressionError,
    DecompressionLimitError,
    InputError,
    KsegError,
    UnsupportedCodecError,
)

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "Buffer",
    "Codec",
    "as_view",
    "check_level",
    "check_limit",
    "check_no_level",
    "check_output_size",
    "library_errors",
]


Buffer = bytes | bytearray | memoryview


class Codec(ABC):
    """One compression codec: ``id`` is the attribute value, ``name`` Kafka's name.

    Subclasses set ``id``, ``name`` and (if the codec is not allowed in every
    message format) ``min_magic``, as class or instance attributes, and
    implement ``compress``/``decompress``; both call ``check_magic`` first.
    A plugin codec has ``id`` 5 (``CODEC_PLUGIN``) and its alias as ``name``.
    """

    id: int
    name: str
    min_magic: int = 0

    def allows_magic(self, magic: int) -> bool:
        """Whether this codec may appear in a message or batch of this magic."""
        return magic >= self.min_magic

    def check_magic(self, magic: int) -> None:
        """Raise UnsupportedCodecError if the magic cannot carry this codec."""
        if not self.allows_magic(magic):
            raise UnsupportedCodecError(f"{self.name} is not allowed with magic {magic}")

    def payload_view(self, data: Buffer, magic: int, limit: int, empty: str | None = None) -> memoryview:
        """``data`` as a flat view, after the checks every ``decompress`` starts with (the magic
        may carry this codec, the limit is one); ``empty``: the error for a payload of no bytes."""
        self.check_magic(magic)
        check_limit(limit)
        view = as_view(data)
        if empty is not None and not view:
            raise DecompressionError(empty)
        return view

    @abstractmethod
    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        """Compress ``data`` the way Kafka's Java writer would for this magic."""

    @abstractmethod
    def decompress(
        self,
        data: Buffer,
        *,
        magic: int = 2,
        limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    ) -> bytes:
        """Decompress ``data``; DecompressionLimitError past ``limit`` output bytes."""

    def decompress_v2_whole(self, view: memoryview, limit: int) -> bytes | None:
        """A v2 payload (a flat byte view) decompressed by one library call, when that call is
        the whole of what ``decompress`` does with it and gives no error; else None (then
        ``decompress`` decides and words any error). For readers that take many small batches
        at once (verify's runs of sound batches); a codec without one returns None."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id} name={self.name!r}>"


def as_view(data: Buffer) -> memoryview:
    """A flat unsigned-byte view of any bytes-like object, without copying if possible."""
    view = memoryview(data)
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def check_limit(limit: int) -> None:
    """Reject a limit that is not a non-negative int (the caller's mistake)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InputError(f"decompression limit must be a non-negative integer, got {limit!r}")


def check_output_size(codec: str, size: int, limit: int) -> None:
    """Raise DecompressionLimitError when ``size`` output bytes exceed ``limit``."""
    if size > limit:
        raise DecompressionLimitError(
            f"{codec} output exceeds the decompression limit of {limit} bytes"
        )


def check_no_level(codec: str, level: int | None) -> None:
    """Reject a compression level for a codec that has none."""
    if level is not None:
        raise InputError(f"{codec} has no compression level, got {level!r}")


def check_level(codec: str, level: int | None, low: int, high: int) -> None:
    """Reject a compression level outside Kafka's range for the codec."""
    if level is None:
        return
    if isinstance(level, bool) or not isinstance(level, int) or not low <= level <= high:
        raise InputError(f"{codec} compression level must be in {low}..{high}, got {level!r}")


# What third-party decompressors raise on bad input. The zstandard and cramjam
# error classes are passed as ``extra`` by the modules that import those libraries.
LIBRARY_ERRORS: tuple[type[BaseException], ...] = (
    zlib.error,
    struct.error,
    IndexError,
    ValueError,
    OverflowError,
    RuntimeError,  # python-lz4 reports every LZ4F error as RuntimeError
    EOFError,
)


@contextmanager
def library_errors(
    codec: str, *extra: type[BaseException], position: int | None = None
) -> Iterator[None]:
    """Turn a decompression library's exception into DecompressionError.

    kseg errors pass through unchanged; the library's message is kept.
    """
    try:
        yield
    except KsegError:
        raise
    except (*LIBRARY_ERRORS, *extra) as exc:
        raise library_error(codec, exc, position) from exc


def library_error(codec: str, exc: BaseException, position: int | None = None) -> DecompressionError:
    """``library_errors``' error, for a hot loop that catches ``LIBRARY_ERRORS`` itself."""
    return DecompressionError(f"{codec} data does not decode: {exc or type(exc).__name__}", position=position)

