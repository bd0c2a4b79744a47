"""Walking files: a segment, a partition folder, a whole log directory.

Reads in bulk chunks (memory stays flat whatever the file size) and hands the
bytes to the sans-IO decoder. Never writes to its input.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from kseg.errors import InputError, TruncatedError
from kseg.formats.log_entry import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.log.decode import Tail
from kseg.log.fast import scan_entries
from kseg.model import Batch

CHUNK_SIZE = 8 * 1024 * 1024
STEP_ENTRIES = 512
SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)$")
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
LOG_SUFFIXES = (".log", ".checkpoint")


# Names the broker gives a segment (and its companions) on the way out or in: deleted,
# cleaned, or being swapped in by the cleaner. The file is still what it was.
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")


def base_offset_of(path: str | os.PathLike) -> int | None:
    """The offset a segment file's name starts with (digits up to the first dot), if any."""
    head = Path(path).name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def segment_file_name(base_offset: int, suffix: str = ".log") -> str:
    """A segment's (or a companion's) file name: the base offset in 20 digits, then the suffix."""
    return f"{base_offset:020d}{suffix}"


def companion_path(log: str | os.PathLike, suffix: str, folder: str | os.PathLike | None = None) -> Path:
    """The file beside a segment with the same stem: ``companion_path(log, ".index")``.

    ``folder`` puts it elsewhere (an output folder); transient suffixes such as
    ``.log.deleted`` are dropped with the rest of the name after the first dot.
    """
    p = Path(log)
    return Path(folder if folder is not None else p.parent) / (p.name.split(".", 1)[0] + suffix)


def not_a_file(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as a file (a folder, a FIFO, a device, a symlink loop:
    opening some of them would block or never end), or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a symlink loop, not a file"
        return None  # missing or not permitted: opening it says so
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder where a file is expected"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    return "not a regular file"


def check_file(path: str | os.PathLike) -> None:
    """InputError unless ``path`` is a regular file (see ``not_a_file``)."""
    problem = not_a_file(path)
    if problem is not None:
        raise InputError(f"cannot read: {problem}", file=str(path))


@dataclass
class Segment:
    """One .log (or KRaft .checkpoint) file. ``tail`` is set once ``batches()`` has finished."""

    path: Path
    tail: Tail | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    @property
    def base_offset(self) -> int | None:
        return base_offset_of(self.path)

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def batches(self, *, start: int = 0, end: int | None = None, chunk_size: int = CHUNK_SIZE) -> Iterator[Batch]:
        """Yield the entries from byte ``start`` up to ``end`` (default: end of file).

        Stops at the first entry that cannot be framed; what stopped it is in ``self.tail``.
        """
        self.tail = None
        check_file(self.path)
        try:
            f = open(self.path, "rb")
        except OSError as e:
            raise InputError(f"cannot open: {e.strerror}", file=str(self.path)) from None
        with f:
            file_size = os.fstat(f.fileno()).st_size
            limit = file_size if end is None else min(end, file_size)
            filepos = start
            want = chunk_size
            # Each chunk is read whole into its own bytes object (batches keep views of it)
            # and starts at an entry boundary: an entry cut by a chunk's end is read again
            # as the start of the next chunk, so no chunk is ever copied or concatenated.
            while filepos < limit:
                f.seek(filepos)
                asked = min(want, limit - filepos)
                chunk = f.read(asked)
                eof = len(chunk) < asked or filepos + len(chunk) >= limit
                mv = memoryview(chunk)
                at = 0
                while True:
                    # Small steps: a list of 100k batches would keep the GC busy.
                    scan = scan_entries(mv, filepos, final=eof, start=at, max_entries=STEP_ENTRIES)
                    yield from scan.batches
                    if scan.tail is not None:
                        scan.tail.error.located(file=str(self.path))
                        self.tail = scan.tail
                        return
                    at = scan.consumed
                    if len(scan.batches) < STEP_ENTRIES:
                        break
                if eof:
                    return
                if at:
                    filepos += at
                    want = chunk_size
                    continue
                # Not one whole entry in this chunk: read the whole entry next time.
                if len(chunk) < HEADER_SIZE_UP_TO_MAGIC:
                    want = max(chunk_size, HEADER_SIZE_UP_TO_MAGIC)
                    continue
                total = LOG_ENTRY_PREFIX.struct.unpack_from(chunk, 0)[1] + LOG_OVERHEAD
                if filepos + total > limit:
                    # The entry claims more bytes than the file has: do not read them all.
                    err = TruncatedError(
                        "entry runs past the end of the data",
                        file=str(self.path),
                        position=filepos,
                        expected=f"{total} bytes",
                        found=f"{limit - filepos} bytes",
                    )
                    self.tail = Tail(filepos, limit - filepos, err)
                    return
                want = max(chunk_size, total)


def zero_bytes_to_end(path: str | os.PathLike, start: int) -> int | None:
    """How many bytes there are from ``start`` to the end of the file when they are all
    zeros (a broker's preallocated segment, ``log.preallocate=true``); None when any is not
    (or the file cannot be read)."""
    zero = bytes(1 << 20)
    n = 0
    try:
        with open(path, "rb") as f:
            f.seek(start)
            while chunk := f.read(len(zero)):
                if chunk != zero[:len(chunk)]:
                    return None
                n += len(chunk)
    except OSError:
        return None
    return n or None


def strict_batches(path: str | os.PathLike) -> Iterator[Batch]:
    """Every batch of a segment, raising what ends the walk early (a partial or corrupt
    tail) instead of stopping quietly: for commands that write what they read."""
    seg = Segment(Path(path))
    yield from seg.batches()
    if seg.tail is not None:
        raise seg.tail.error


def is_log_file(path: Path) -> bool:
    return path.suffix in LOG_SUFFIXES


def partition_segments(folder: str | os.PathLike) -> list[Path]:
    """The .log files of a partition folder, in base-offset order."""
    folder = Path(folder)
    logs = [p for p in folder.iterdir() if p.suffix == ".log" and base_offset_of(p) is not None]
    return sorted(logs, key=lambda p: base_offset_of(p))  # type: ignore[arg-type, return-value]


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    m = PARTITION_DIR.match(name)
    if not m:
        return None
    return m.group("topic"), int(m.group("partition"))


@dataclass(frozen=True)
class Partition:
    """A topic-partition folder (``<topic>-<n>``) with its segments in offset order."""

    path: Path

    @property
    def topic(self) -> str | None:
        parsed = parse_partition_dir(self.path.name)
        return parsed[0] if parsed else None

    @property
    def partition(self) -> int | None:
        parsed = parse_partition_dir(self.path.name)
        return parsed[1] if parsed else None

    @property
    def segment_paths(self) -> list[Path]:
        return partition_segments(self.path)

    def segments(self) -> list[Segment]:
        return [Segment(p) for p in self.segment_paths]


def log_dir_partitions(root: str | os.PathLike) -> list[Partition]:
    """Partition folders directly under a broker log directory, sorted by topic and partition."""
    root = Path(root)
    found = []
    for child in root.iterdir():
        if child.is_dir() and parse_partition_dir(child.name) and any(
            p.suffix == ".log" for p in child.iterdir()
        ):
            found.append(Partition(child))
    return sorted(found, key=lambda p: (p.topic or "", p.partition or 0))


def expand_inputs(paths: list[str | os.PathLike]) -> list[Path]:
    """Files named directly, plus the segment files of folders (partition or log dir), in order.

    A folder's .log files come in offset order; a log directory's partitions by
    topic and partition; companion files (.index, ...) are included when a folder
    is given only if ``companions`` is asked for by the caller (see ``expand_with_companions``).
    """
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            problem = not_a_file(p)  # a symlink loop
            raise InputError(f"cannot read: {problem}" if problem else "no such file or directory", file=str(p))
        if not p.is_dir():  # a file, or something that is not one (said when it is read)
            out.append(p)
        elif any(c.suffix == ".log" for c in p.iterdir() if c.is_file()):
            out.extend(partition_segments(p))
        else:
            parts = log_dir_partitions(p)
            if not parts:
                raise InputError("no segment files found (expected .log files or <topic>-<n> folders)", file=str(p))
            for part in parts:
                out.extend(part.segment_paths)
    return out


def open_segment(path: str | os.PathLike) -> Segment:
    """Open one segment file for reading."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", file=str(p))
    return Segment(p)


def open_partition(path: str | os.PathLike) -> Partition:
    p = Path(path)
    if not p.is_dir():
        raise InputError("not a folder", file=str(p))
    return Partition(p)


def open_log_dir(path: str | os.PathLike) -> list[Partition]:
    p = Path(path)
    if not p.is_dir():
        raise InputError("not a folder", file=str(p))
    return log_dir_partitions(p)
