"""kseg's built-in snappy codec re-exported as a KIP-984 plugin.

The same bytes as ``--codec snappy`` (snappy-java's xerial framing; raw snappy
accepted on read), but carried as codec 5 with a plugin id. It exists to show
the plugin contract with the least code and to measure the proposal's claim
that a codec behind the plugin interface runs as fast as the built-in one
(``benchmarks/bench_plugins.py``).

Register and use it::

    kseg plugins register --registry reg/plugin-python-topic-0 \\
        --alias snappyPlugin --class kseg_snappy_plugin:SnappyPlugin --version 1.0.0
    kseg --plugin-registry reg/plugin-python-topic-0 recompress --codec snappyPlugin t-0 -o t-0-plugin
"""

from __future__ import annotations

from kseg.codecs import SNAPPY

__all__ = ["SnappyPlugin"]


class SnappyPlugin:
    """compress(data) -> bytes and decompress(data) -> bytes: the whole contract. Plus
    two optional parts: decompress's ``max_length`` and ``accepts_buffers``."""

    # Optional: kseg may hand over a memoryview into the segment instead of a bytes
    # copy (kseg's snappy reads any buffer).
    accepts_buffers = True

    def __init__(self) -> None:
        self._compress = SNAPPY.compress
        self._decompress = SNAPPY.decompress

    def compress(self, data: bytes) -> bytes:
        return self._compress(data)

    def decompress(self, data: bytes, max_length: int | None = None) -> bytes:
        # Optional part of the contract: ``max_length`` is kseg's decompression limit.
        # The built-in codec checks the lengths snappy blocks declare before inflating
        # anything, so a decompression bomb fails without being allocated.
        if max_length is None:
            return self._decompress(data)
        return self._decompress(data, limit=max_length)
