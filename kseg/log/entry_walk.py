"""Where a log's entries start, found by following their length fields from the start of the file:
no CRC and no decoding, a few bytes read per entry.

It gives cut points for reading one large log in slices (``kseg.ops.cuts``) when the log has no
offset index to name them: a ``.log`` copied on its own, or an index that is empty or not trusted.
The walk stops at the first header that cannot be an entry's (a magic kseg does not know, a length
below the smallest entry of its magic, an entry that runs past the end of the file), so a position
it gives is one that a whole read from the start reaches by the same lengths. ``entry_starts_py``
is the reference of ``_speedups.entry_starts`` (held equal by tests/test_entry_walk.py).
"""

from __future__ import annotations

import os

from kseg.facts.log_entry import LOG_OVERHEAD, MIN_SIZE_BY_MAGIC
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.log import fast

_HEAD = LOG_ENTRY_PREFIX.struct  # offset, size, crc or leader epoch, magic
# A read takes the next 64 KiB (many small entries per read); after an entry longer than 4 KiB,
# only the next entry's header (a large entry is not read through: one short read each). Both
# twins take them as arguments (they change how the walk reads, never what it finds).
WALK_READ_BYTES = 64 << 10
LARGE_ENTRY_BYTES = WALK_READ_BYTES // 16


def entry_starts_py(fd: int, size: int, every: int, read_bytes: int = WALK_READ_BYTES,
                    large_entry: int = LARGE_ENTRY_BYTES) -> list[int]:
    """The first entry start at or after each multiple of ``every`` below ``size`` (the file's
    size), walking from position 0 of the open file ``fd`` by each entry's length, until a
    header that cannot be an entry's or the end of the file. Raises OSError when a read fails."""
    if size < 0 or every <= 0 or read_bytes < _HEAD.size or large_entry < 0:
        raise ValueError("entry_starts(): size must be >= 0, every > 0, read_bytes a header or more")
    starts: list[int] = []
    pos, target = 0, every
    buf, buf_at, want = b"", 0, read_bytes
    while pos + _HEAD.size <= size and target < size:
        if pos < buf_at or pos + _HEAD.size > buf_at + len(buf):
            buf, buf_at = os.pread(fd, want, pos), pos
            if len(buf) < _HEAD.size:
                break
        _, length, _, magic = _HEAD.unpack_from(buf, pos - buf_at)
        minimum = MIN_SIZE_BY_MAGIC.get(magic)
        if minimum is None or length < minimum or pos + LOG_OVERHEAD + length > size:
            break
        if pos >= target:
            starts.append(pos)
            target = (pos // every + 1) * every
        pos += LOG_OVERHEAD + length
        want = _HEAD.size if length > large_entry else read_bytes
    return starts


_C_ENTRY_STARTS = fast.c_twin("entry_starts")


def entry_starts(fd: int, size: int, every: int) -> list[int]:
    """``entry_starts_py``, in C when the accelerator is built (the GIL released while it reads)."""
    if _C_ENTRY_STARTS is None:
        return entry_starts_py(fd, size, every)
    return _C_ENTRY_STARTS(fd, size, every, WALK_READ_BYTES, LARGE_ENTRY_BYTES)  # type: ignore[no-any-return]
