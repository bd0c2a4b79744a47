"""A unit's many results, kept off the heap: the items a worker makes are pickled to a file in
a folder the caller owns once there are more than a few thousand, and read back once, in order,
by the process that merges (which removes the file as it finishes it).

Rules: memory stays bounded whatever a unit yields (``find`` matching every record of a
terabyte partition); the folder is the caller's to remove (a ``TemporaryDirectory`` around the
whole run), so an interrupted run leaves nothing behind.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator

IN_MEMORY = 4096  # items kept in the partial itself; past this they go to the file

# pickle and tempfile are imported where a spool first writes or reads its file: a run of one
# process (a plain dump) never does, and they are a few ms of its start-up.


@dataclass
class Spooled:
    """What a unit made, as it crosses back to the merging process: a file of pickled items
    (or none) and the last items in memory."""

    path: str | None = None
    count: int = 0
    tail: list[Any] = field(default_factory=list)

    def __iter__(self) -> Iterator[Any]:
        if self.path is not None:
            import pickle

            try:
                with open(self.path, "rb") as f:
                    for _ in range(self.count - len(self.tail)):
                        yield pickle.load(f)
            finally:
                os.unlink(self.path)
                self.path = None
        yield from self.tail

    def discard(self) -> None:
        """Drop the items unread (a part merge leaves out), their file removed."""
        if self.path is not None:
            os.unlink(self.path)
            self.path = None
        self.tail = []


class Spool:
    """Items collected in order; past ``IN_MEMORY`` they are written to a file in ``folder``,
    or, with no folder (one the merging process may not see: a Spark executor's), all kept in memory."""

    def __init__(self, folder: str | None, in_memory: int = IN_MEMORY):
        self.folder, self.in_memory = folder, in_memory
        self.items: list[Any] = []
        self.file: BinaryIO | None = None
        self.path: str | None = None
        self.count = 0

    def add(self, item: Any) -> None:
        self.items.append(item)
        self.count += 1
        if self.folder is not None and len(self.items) >= self.in_memory:
            import pickle
            import tempfile

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


BYTES_IN_MEMORY = 8 << 20  # a unit's output kept in the partial itself up to this; past it, a file
CHUNK = 1 << 20  # how the merging process reads a spooled output back (where it cannot sendfile)


# sendfile's "not between these two": the consumer copies through memory instead
_NO_SENDFILE = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSOCK, errno.EBADF, errno.ESPIPE}


@dataclass
class FileSpan:
    """Bytes of a spooled output's file, for the consumer to copy: ``send`` in the kernel
    (sendfile, no copy through this process) where it can, ``chunks`` otherwise."""

    file: BinaryIO
    start: int
    length: int

    def chunks(self) -> Iterator[bytes]:
        self.file.seek(self.start)
        left = self.length
        while left > 0 and (chunk := self.file.read(min(CHUNK, left))):
            left -= len(chunk)
            yield chunk

    def send(self, fd: int) -> bool:
        """The span written to ``fd``; False, nothing written, where sendfile cannot write there."""
        offset, end = self.start, self.start + self.length
        while offset < end:
            try:
                sent = os.sendfile(fd, self.file.fileno(), offset, min(end - offset, 1 << 30))
            except OSError as e:
                if offset == self.start and e.errno in _NO_SENDFILE:
                    return False
                raise
            if sent == 0:
                break
            offset += sent
        return True


@dataclass
class SpooledBytes:
    """A unit's output bytes as they cross back: a file (or none), then the last bytes in memory;
    ``notes``: lines for stderr, each with the output's length when it was told (its place)."""

    path: str | None = None
    size: int = 0
    tail: bytes = b""
    notes: list[tuple[int, str]] = field(default_factory=list)

    def __iter__(self) -> Iterator[bytes | FileSpan | str]:
        """The output (bytes, or spans of the file) and the notes (str) in the order they were
        made; read once: the file is removed as the iteration ends, however it ends."""
        f = open(self.path, "rb") if self.path is not None else None
        try:
            pos = 0
            for at, text in self.notes:
                yield from self._span(f, pos, at)
                pos = max(pos, at)
                yield text
            yield from self._span(f, pos, self.size)
        finally:
            if f is not None:
                f.close()
                os.unlink(f.name)
                self.path = None

    def _span(self, f: BinaryIO | None, start: int, end: int) -> Iterator[bytes | FileSpan]:
        in_file = self.size - len(self.tail)
        if f is not None and start < in_file and start < end:
            yield FileSpan(f, start, min(end, in_file) - start)
        if end > in_file and end > start:
            yield self.tail[max(start, in_file) - in_file:end - in_file]


_IOV_MAX = 1024  # buffers one writev takes (Linux's and the BSDs' limit; POSIX asks for 16 or more)


def write_all(fd: int, parts: list[bytes]) -> None:
    """``parts`` written to ``fd`` a thousand at a time: a renderer's pieces are a few KiB each
    (one system call each was 20,000 calls for 250 MB of output), and joining them first would
    copy them into memory faulted in each time."""
    for i in range(0, len(parts), _IOV_MAX):
        group = parts[i:i + _IOV_MAX]
        written = os.writev(fd, group)
        total = sum(map(len, group))
        if written < total:  # a short write (a full disk raises): the rest in plain writes
            rest = memoryview(b"".join(group))[written:]
            while rest:
                rest = rest[os.write(fd, rest):]


class ByteSpool:
    """A binary stream for a renderer: past ``in_memory`` bytes, written to a file in ``folder``;
    ``note(text)`` keeps a stderr line at its place in the output."""

    def __init__(self, folder: str, in_memory: int | None = None):
        self.folder = folder
        self.in_memory = BYTES_IN_MEMORY if in_memory is None else in_memory
        self.parts: list[bytes] = []
        self.pending = 0
        self.size = 0
        self.file: BinaryIO | None = None
        self.path: str | None = None
        self.notes: list[tuple[int, str]] = []

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.pending += len(data)
        self.size += len(data)
        if self.pending >= self.in_memory:
            if self.file is None:
                import tempfile

                fd, self.path = tempfile.mkstemp(prefix="spool-", dir=self.folder)
                self.file = os.fdopen(fd, "wb", buffering=0)
            write_all(self.file.fileno(), self.parts)
            self.parts, self.pending = [], 0
        return len(data)

    def flush(self) -> None:
        pass

    def note(self, text: str) -> None:
        self.notes.append((self.size, text))

    def done(self) -> SpooledBytes:
        if self.file is not None:
            self.file.close()
        return SpooledBytes(self.path, self.size, b"".join(self.parts), self.notes)
