"""brotli as a kseg plugin codec (KIP-984): a compression algorithm Kafka does not have.

Needs nothing from kseg: a class with ``compress`` and ``decompress`` is the
whole contract. The optional parts are used too: ``compress(data, level)``
(brotli's quality, 0..11, bounded by ``min_level``/``max_level``) and
``decompress(data, max_length)`` (stops inflating past kseg's limit).

    kseg plugins register --registry reg/plugin-python-topic-0 --alias brotli --version 1.0.0
    kseg --plugin-registry reg/plugin-python-topic-0 recompress --codec brotli --level 9 t-0 -o t-0-brotli

(``--class`` can be left out: the package names the class in the ``kseg.codecs``
entry-point group, under the alias ``brotli``.)
"""

from __future__ import annotations

import brotli

__all__ = ["BrotliPlugin"]


class BrotliPlugin:
    min_level = 0
    max_level = 11
    default_level = 5  # brotli's own default (11) is an order of magnitude slower

    def compress(self, data: bytes, level: int | None = None) -> bytes:
        return brotli.compress(data, quality=self.default_level if level is None else level)

    def decompress(self, data: bytes, max_length: int | None = None) -> bytes:
        if max_length is None:
            return brotli.decompress(data)
        d = brotli.Decompressor()
        out = d.process(data, output_buffer_limit=max_length + 1)
        if len(out) > max_length:
            return out  # past the limit: kseg reports it, nothing more is inflated
        if not d.is_finished():
            raise ValueError("brotli stream is truncated")
        return out
