"""The checksums of the log: CRC-32C (Castagnoli) of v2 record batches and producer snapshots,
CRC-32 of v0/v1 messages.

kseg's own C (``_checksum.c``) when it is built: CRC-32C with the CPU's crc32 instruction where
there is one, CRC-32 by carry-less multiplication where the CPU has PCLMULQDQ (about 5x zlib's
speed), tables elsewhere. Else the crc32c package and zlib, which the tests also use as the
references. The crc32c package costs ~15 ms to import (its ``__init__`` loads importlib.metadata
for its version), as much as all of a short ``kseg dump``'s own work.
``KSEG_PURE_PYTHON=1`` (as for ``kseg.log.fast``) takes the package and zlib.
"""

from __future__ import annotations

import os

try:
    if os.environ.get("KSEG_PURE_PYTHON"):
        raise ImportError("KSEG_PURE_PYTHON is set")
    from kseg._checksum import crc32, crc32c
    ACCELERATED = True
except ImportError:  # not built (no C compiler when installed), or turned off
    from zlib import crc32

    from crc32c import crc32c
    ACCELERATED = False

__all__ = ["ACCELERATED", "crc32", "crc32c"]
