"""A unit's many results, kept off the heap: the items a worker makes are pickled to a file in
a folder the caller owns once there are more than a few thousand, and read back once, in order,
by the process that merges (which removes the file as it finishes it).

Rules: memory stays bounded whatever a unit yields (``find`` matching every record of a
terabyte partition); the folder is the caller's to remove (a ``TemporaryDirectory`` around the
whole run), so an interrupted run leaves nothing behind.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator

IN_MEMORY = 4096  # items kept in the partial itself; past this they go to the file


@dataclass
class Spooled:
    """What a unit made, as it crosses back to the merging process: a file of pickled items
    (or none) and the last items in memory."""

    path: str | None = None
    count: int = 0
    tail: list[Any] = field(default_factory=list)

    def __iter__(self) -> Iterator[Any]:
        if self.path is not None:
            try:
                with open(self.path, "rb") as f:
                    for _ in range(self.count - len(self.tail)):
                        yield pickle.load(f)
            finally:
                os.unlink(self.path)
                self.path = None
        yield from self.tail


class Spool:
    """Items collected in order; past ``IN_MEMORY`` they are written to a file in ``folder``."""

    def __init__(self, folder: str, in_memory: int = IN_MEMORY):
        self.folder, self.in_memory = folder, in_memory
        self.items: list[Any] = []
        self.file: BinaryIO | None = None
        self.path: str | None = None
        self.count = 0

    def add(self, item: Any) -> None:
        self.items.append(item)
        self.count += 1
        if len(self.items) >= self.in_memory:
            if self.file is None:
                fd, self.path = tempfile.mkstemp(prefix="spool-", dir=self.folder)
                self.file = os.fdopen(fd, "wb")
            pickler = pickle.Pickler(self.file, pickle.HIGHEST_PROTOCOL)
            for it in self.items:
                pickler.dump(it)
                pickler.clear_memo()
            self.items = []

    def done(self) -> Spooled:
        if self.file is not None:
            self.file.close()
        return Spooled(self.path, self.count, self.items)
