"""The codec that is none (codec 0): the payload as stored. gzip and zstd live in
``gzip.py`` and ``zstd.py``, snappy (xerial framing) and lz4 (Kafka's frame and its header
checksum quirk) in ``xerial.py`` and ``kafka_lz4.py``, each loaded with the first batch that
needs it (``kseg.codecs``). Spec §4.
"""

from __future__ import annotations

from kseg.codecs.base import DEFAULT_MAX_DECOMPRESSED_BYTES, Buffer, Codec, as_view, check_no_level
from kseg.formats.attributes import CODEC_NONE

__all__ = ["NoneCodec"]


class NoneCodec(Codec):
    """Codec 0: the payload is stored as is."""

    id = CODEC_NONE
    name = "none"

    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        self.check_magic(magic)
        check_no_level(self.name, level)
        return bytes(as_view(data))

    def decompress(
        self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        # No limit check: the output is the input, which is already in memory.
        return bytes(self.payload_view(data, magic, limit))
