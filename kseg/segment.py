"""Walking files: a segment, a partition folder, a whole log directory.

Reads in bulk chunks (memory stays flat whatever the file size) and hands the
bytes to the sans-IO decoder. Never writes to its input.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .decode import Tail
from .fast import scan_entries
from .errors import InputError, TruncatedError
from .formats.log_entry import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD
from .layouts import LOG_ENTRY_PREFIX
from .model import Batch
from .storage import as_path

CHUNK_SIZE = 8 * 1024 * 1024
STEP_ENTRIES = 512
SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex|snapshot)$")
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
LOG_SUFFIXES = (".log", ".checkpoint")


def base_offset_of(path: str | os.PathLike) -> int | None:
    """The offset a segment file's name starts with (digits up to the first dot), if any."""
    head = Path(path).name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def segment_file_name(base_offset: int, suffix: str = ".log") -> str:
    return f"{base_offset:020d}{suffix}"


@dataclass
class Segment:
    """One .log (or KRaft .checkpoint) file. ``tail`` is set once ``batches()`` has finished."""

    path: Path
    tail: Tail | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.path = as_path(self.path)  # type: ignore[assignment]

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
        try:
            f = self.path.open("rb")
        except OSError as e:
            raise InputError(f"cannot open: {e.strerror or e}", file=str(self.path)) from None
        with f:
            # A local file's size from its descriptor; an object's (read by ranges) from the store.
            file_size = os.fstat(f.fileno()).st_size if isinstance(self.path, Path) else f.size()
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


def strict_batches(path: str | os.PathLike) -> Iterator[Batch]:
    """Every batch of a segment, raising what ends the walk early (a partial or corrupt
    tail) instead of stopping quietly: for commands that write what they read."""
    seg = Segment(as_path(path))  # type: ignore[arg-type]
    yield from seg.batches()
    if seg.tail is not None:
        raise seg.tail.error


def is_log_file(path: Path) -> bool:
    return path.suffix in LOG_SUFFIXES


def partition_segments(folder: str | os.PathLike) -> list[Path]:
    """The .log files of a partition folder, in base-offset order."""
    folder = as_path(folder)
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
    root = as_path(root)
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
        p = as_path(raw)
        if not p.exists():
            raise InputError("no such file or directory", file=str(p))
        if p.is_file():
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
    p = as_path(path)
    if not p.is_file():
        raise InputError("no such file", file=str(p))
    return Segment(p)


def open_partition(path: str | os.PathLike) -> Partition:
    p = as_path(path)
    if not p.is_dir():
        raise InputError("not a folder", file=str(p))
    return Partition(p)


def open_log_dir(path: str | os.PathLike) -> list[Partition]:
    p = as_path(path)
    if not p.is_dir():
        raise InputError("not a folder", file=str(p))
    return log_dir_partitions(p)
