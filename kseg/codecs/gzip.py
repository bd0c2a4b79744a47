"""gzip (codec 1): RFC 1952 members, written with zlib as Java writes them, read with ISA-L.
Spec §4.1.
"""

from __future__ import annotations

import struct
import zlib

from isal import isal_zlib

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
from kseg.formats.attributes import CODEC_GZIP

__all__ = ["GzipCodec"]

_GZIP_ERRORS = (isal_zlib.error, *LIBRARY_ERRORS)


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

    def decompress_v2_whole(self, view: memoryview, limit: int) -> bytes | None:
        """``decompress``'s common case: one member, nothing after it, within ``limit``."""
        if not view:
            return None
        inflater = isal_zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = inflater.decompress(view, limit + 1)
        except _GZIP_ERRORS:
            return None
        return out if inflater.eof and not inflater.unused_data and len(out) <= limit else None

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        view = self.payload_view(data, magic, limit, "gzip payload is empty, expected a gzip member")
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
            unused = len(inflater.unused_data)
            if not unused and not pieces[1:]:
                return piece  # one member, nothing after it: the common case
            pos = len(view) - unused
            # Java reads another member if a gzip header follows and ignores
            # anything else after a complete member; so do we.
            rest = view[pos : pos + _GZIP_HEADER_SIZE]
            if len(rest) < _GZIP_HEADER_SIZE or rest[:3] != _GZIP_MEMBER_START:
                break
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)
