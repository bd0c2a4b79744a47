"""Where a large segment can be cut so that two workers read it apart: at batch boundaries its
offset index names, or, for a local log whose index names none (absent, empty, not trusted), at
entries found by following their lengths from the start (``kseg.log.entry_walk``); each checked
(a whole entry with a valid CRC must start there). ``verify``, ``find``, ``stats`` and ``dump`` cut
their largest logs with it (``-j``), the Spark plan (``kseg.ops.slices``) its splits. Kept apart from that plan, whose filters and slices
a verify does not load.
"""

from __future__ import annotations

import bisect
import operator
import os
import stat
import sys
from array import array
from pathlib import Path
from typing import Iterator

from kseg.facts.log_entry import LOG_OVERHEAD, MIN_SIZE_BY_MAGIC
from kseg.layouts import LOG_ENTRY_PREFIX, OFFSET_INDEX_ENTRY
from kseg.log.entry_walk import entry_starts
from kseg.log.fast import scan_entries
from kseg.log.listing import INDEX_SUFFIX, LOG_SUFFIX
from kseg.log.segment import base_offset_of, companion_path
from kseg.storage import as_path, open_input, read_up_to

_ENTRY_HEAD = LOG_ENTRY_PREFIX.struct  # offset, size, crc/leader epoch, magic


# A log's smallest entry (a v0 message with no key and an empty value, framing included): an index
# has at most one entry per entry of its log, so more slots than size / this are never read.
SMALLEST_ENTRY = LOG_OVERHEAD + min(MIN_SIZE_BY_MAGIC.values())


class IndexEntries:
    """An offset index's trusted entries as two arrays of int32, as in the file (8 bytes an entry,
    not a Python object each): offsets relative to ``base``, and positions. Indexing gives
    (absolute offset, position); ``relative`` and ``positions`` are sorted, for ``bisect``."""

    __slots__ = ("base", "relative", "positions")

    def __init__(self, base: int, relative: array, positions: array) -> None:
        self.base, self.relative, self.positions = base, relative, positions

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, i: int) -> tuple[int, int]:
        return self.base + self.relative[i], self.positions[i]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(map(self.base.__add__, self.relative), self.positions)


def read_index(path: str, log_size: int) -> IndexEntries:
    """The trusted entries of a segment's .index (none when absent or unusable), reading no more
    of it than a log of ``log_size`` bytes can have entries for (a sparse file may claim more)."""
    log = as_path(path)
    base = base_offset_of(log)
    if base is None or log.suffix != LOG_SUFFIX:
        return trusted_entries(b"", 0)
    try:
        with open_input(companion_path(log, INDEX_SUFFIX)) as f:
            data = read_up_to(f, OFFSET_INDEX_ENTRY.size * (max(0, log_size) // SMALLEST_ENTRY + 1))
    except OSError:
        return trusted_entries(b"", 0)
    return trusted_entries(data, base)


def trusted_entries(data: bytes, base: int) -> IndexEntries:
    """The entries of .index bytes that can be trusted: of the slots Kafka reads (it stops at the
    first slot but the first whose relative offset is 0: a preallocated index's zero-filled tail),
    the prefix whose offsets and positions both strictly increase from a position that is not
    negative (Kafka's own sanity rule). The slots are compared as arrays, at C speed: a 600 MB
    segment's index has 80,000."""
    whole = len(data) // OFFSET_INDEX_ENTRY.size * OFFSET_INDEX_ENTRY.size
    slots = array("i")
    slots.frombytes(data[:whole])
    if sys.byteorder == "little":
        slots.byteswap()
    rel, pos = slots[0::2], slots[1::2]
    end = len(rel)
    if end > 1 and 0 in rel[1:]:
        end = rel.index(0, 1)
    if end == 0 or pos[0] < 0:
        end = 0
    else:
        end = min(_increasing(rel, end), _increasing(pos, end))
    return IndexEntries(base, rel[:end], pos[:end])


def _increasing(values: array, end: int) -> int:
    """The length of the strictly increasing prefix of ``values[:end]``."""
    if all(map(operator.lt, values[:end - 1], values[1:end])):  # a sound index: one pass in C
        return end
    return next(i for i in range(1, end) if values[i] <= values[i - 1])


def entry_starts_at(path: str, position: int, file_size: int, max_offset: int | None = None) -> bool:
    """Whether a whole entry with a valid CRC starts at ``position`` (an index boundary check)."""
    try:
        with open_input(path) as f:
            f.seek(position)
            head = f.read(_ENTRY_HEAD.size)
            if len(head) < _ENTRY_HEAD.size:
                return False
            offset, size, _, magic = _ENTRY_HEAD.unpack(head)
            min_size = MIN_SIZE_BY_MAGIC.get(magic)
            if min_size is None or size < min_size or position + LOG_OVERHEAD + size > file_size:
                return False
            if max_offset is not None and offset > max_offset:
                return False
            f.seek(position)
            raw = f.read(LOG_OVERHEAD + size)
    except OSError:
        return False
    scan = scan_entries(memoryview(raw), position, final=True)
    return len(scan.batches) == 1 and scan.tail is None and scan.batches[0].crc_valid


# Slices of one large log for the executors (verify, find, stats): a log heavier than a share of the work.
MIN_SLICE_BYTES = 32 << 20  # below this a slice's fixed costs (a task, its index lookups) are not worth it
SLICES_PER_WORKER = 4  # a log is cut into slices of about total / (workers x this), for balance


def slice_share(total: int, workers: int) -> int:
    """The bytes a slice of a log should hold when ``total`` bytes are spread over ``workers``
    (0: do not cut, one worker)."""
    if workers <= 1:
        return 0
    return max(MIN_SLICE_BYTES, total // (workers * SLICES_PER_WORKER))


def cut_points(path: str, size: int, split_bytes: int) -> list[int]:
    """Where to cut a segment of ``size`` bytes into pieces of about ``split_bytes``: positions
    at which a whole entry with a valid CRC starts, named by its offset index, or, where the index
    names none (absent, empty, not trusted), found by following the entries' lengths from the
    start of a local file (``kseg.log.entry_walk``). None: read it whole, as when it is small."""
    if split_bytes <= 0 or size <= split_bytes * 3 // 2:
        return []
    return _indexed_cuts(path, size, split_bytes) or _walked_cuts(path, size, split_bytes)


def _targets(size: int, split_bytes: int) -> range:
    """Every ``split_bytes``, leaving the last piece at least half of one."""
    return range(split_bytes, size - split_bytes // 2, split_bytes)


def _indexed_cuts(path: str, size: int, split_bytes: int) -> list[int]:
    entries = read_index(path, size)
    if not entries:
        return []
    cuts: list[int] = []
    for target in _targets(size, split_bytes):
        i = bisect.bisect_right(entries.positions, target) - 1
        if i >= 0:
            off, pos = entries[i]
            last = cuts[-1] if cuts else 0
            if pos > last and entry_starts_at(path, pos, size, off):
                cuts.append(pos)
    return cuts


def _walked_cuts(path: str, size: int, split_bytes: int) -> list[int]:
    local = as_path(path)
    if not isinstance(local, Path) or local.suffix != LOG_SUFFIX:  # an object or archive member: a request per entry
        return []
    try:
        fd = os.open(local, os.O_RDONLY | os.O_NONBLOCK)  # a pipe named .log: not waited on, not read
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        starts = entry_starts(fd, size, split_bytes)
    except OSError:
        return []
    finally:
        os.close(fd)
    limit = size - split_bytes // 2
    return [pos for pos in starts if pos < limit and entry_starts_at(path, pos, size)]
