"""CRC-32C (Castagnoli): the checksum of v2 record batches and producer snapshots.

kseg's own C (``_checksum.c``: the CPU's crc32 instruction where there is one, tables
elsewhere) when it is built, else the crc32c package, which the tests also use as the
reference. The package costs ~15 ms to import (its ``__init__`` loads importlib.metadata
for its version), as much as all of a short ``kseg dump``'s own work.
``KSEG_PURE_PYTHON=1`` (as for ``kseg.log.fast``) takes the package.
"""

from __future__ import annotations

import os

try:
    if os.environ.get("KSEG_PURE_PYTHON"):
        raise ImportError("KSEG_PURE_PYTHON is set")
    from kseg._checksum import crc32c
    ACCELERATED = True
except ImportError:  # not built (no C compiler when installed), or turned off
    from crc32c import crc32c
    ACCELERATED = False

__all__ = ["ACCELERATED", "crc32c"]
