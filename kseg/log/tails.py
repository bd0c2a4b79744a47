"""What the bytes after a log's last whole batch are: damage, or what a healthy broker leaves.

One rule for every command that reads segments (``verify``, ``dump``, ``stats``, ``find``,
``txn``, ``diff``, ``state``), so that none calls damage what another calls a note:

- zero bytes to the end of the file, in any segment: space the broker preallocated
  (``log.preallocate=true``) and never wrote;
- a partial last batch at the end of a partition's newest segment (the segment listed from a
  partition folder, not a file named on its own): one still being written.

Anything else after the last whole batch is damage.

The writers take the same zeros as the end of the file (``kseg.log.segment.end_of_batches``):
their output ends at the last batch, as the broker trims the segment, and they say how many
bytes they left out. A batch still being written stops them, as bytes after the last batch
that are not all zeros do: what could be data is never dropped on the way.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from kseg.errors import TruncatedError
from kseg.log.decode import Tail
from kseg.log.segment import preallocated_zeros

PREALLOCATED = "preallocated"
IN_PROGRESS = "in progress"


class LiveTail(NamedTuple):
    """A tail that is not damage: which kind, and the sentence that says so."""

    kind: str  # PREALLOCATED or IN_PROGRESS
    text: str


def live_tail(path: str | os.PathLike, tail: Tail, newest: bool) -> LiveTail | None:
    """What ``tail`` (after the last whole batch of the file ``path``: local, an archive member or
    an object) is when it is not damage; None when it is. ``newest``: the file is its partition's newest segment, listed
    from the partition folder."""
    if isinstance(tail.error, TruncatedError):
        if not newest:
            return None
        return LiveTail(IN_PROGRESS, f"incomplete tail: {tail.length} bytes at the end of the partition's newest "
                                     f"segment do not form a complete batch yet (one still being written?) "
                                     f"({tail.error.message})")
    zeros = preallocated_zeros(path, tail)
    if zeros is None:
        return None
    return LiveTail(PREALLOCATED, f"{zeros} zero bytes after the last batch: space the broker preallocated "
                                  "(log.preallocate=true), not a batch")
