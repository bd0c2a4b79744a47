"""The C allocator tuned for reading in chunks (glibc only; elsewhere nothing changes).

A segment is read in chunks of ``READ_CHUNK_BYTES``, each a fresh buffer while the caller still
holds the previous one. glibc serves allocations that large with their own mappings and hands
them back to the kernel when freed, so every chunk is faulted in and zeroed anew: as much work
as copying the file in, a third of a ``verify --quick``. Kept on the heap instead (served below
the mapping threshold, and freed memory at the top kept up to a few chunks), the same pages come
back chunk after chunk. Threads (an export's read-ahead, an object store's prefetch) take theirs
from the same heap: in arenas of their own they held their chunks apart (``kseg export -j 2`` of
a 629 MB segment peaked at 126 MB instead of 115). A process-wide setting, so only entry points
that own their process (the console scripts, whose worker processes inherit it) call
``tune_for_chunks``.
"""

from __future__ import annotations

import ctypes
import os
import sys

from kseg.defaults import READ_CHUNK_BYTES

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # glibc's malloc.h
_done: list[bool] = []


def tune_for_chunks(chunk_size: int = READ_CHUNK_BYTES) -> bool:
    """Keep chunks of ``chunk_size`` on the heap and up to three of them free for reuse, every
    thread allocating from that heap; whether the allocator took the settings."""
    if _done or not sys.platform.startswith("linux"):
        return bool(_done and _done[0])
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        _done.append(False)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    ok = (bool(mallopt(M_MMAP_THRESHOLD, 2 * chunk_size)) and bool(mallopt(M_TRIM_THRESHOLD, 3 * chunk_size))
          and bool(mallopt(M_ARENA_MAX, 1)))
    _done.append(ok)
    return ok


ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"  # Arrow's own switch, read when pyarrow loads


def arrow_pool_for_streaming() -> None:
    """Have pyarrow allocate from jemalloc, which hands freed pages back while a stream of
    batches goes by (its default, mimalloc, kept about 15 MB more through an export of 100 MB).
    Arrow's own switch, so a user's choice stays and a pyarrow without jemalloc falls back to its
    default; it takes effect only if pyarrow is not loaded yet. Process-wide: for entry points that
    own their process (``kseg export``)."""
    os.environ.setdefault(ARROW_POOL_VARIABLE, "jemalloc")
