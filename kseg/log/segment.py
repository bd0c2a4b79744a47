"""Walking files: a segment, a partition folder, a whole log directory.

Reads in bulk chunks (memory stays flat whatever the file size) and hands the
bytes to the sans-IO decoder. Never writes to its input.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from kseg.defaults import RANGE_READ_BYTES, READ_CHUNK_BYTES
from kseg.errors import InputError, KsegError, TruncatedError
from kseg.facts.log_entry import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.log.decode import Tail, kafka_entry_at, kafka_short_entry
from kseg.log.fast import scan_entries
from kseg.log import identity
from kseg.log.listing import (  # the naming rules, beside the table of file kinds
    KAFKA_UUID,
    LOG_SUFFIX,
    OFFSET_DIGITS,
    PARTITION_DIR,
    STDIN,
    TIERED_PARTITION_DIR,
    TIERED_STEM,
    TIERED_TOPIC_DIR,
    base_offset_of,
    expand_inputs,
    is_stdin,
    not_a_file,
    parse_partition_dir,
    writer_partition_folders,
)
from kseg.model import Batch
from kseg.storage import ArchivePath, RemotePath, as_path, cannot_read

CHUNK_SIZE = READ_CHUNK_BYTES
STEP_ENTRIES = 512


def tiered_segment_id(path: str | os.PathLike) -> str | None:
    """The segment id in a tiered storage file name (``<start offset>-<segment id>.<suffix>``), if any."""
    m = TIERED_STEM.match(Path(path).name.split(".", 1)[0])
    return m.group("segment_id") if m else None


def rsm_transform(path: str | os.PathLike) -> str | None:
    """How Aiven's remote storage manager transformed a tiered ``.log`` object, from the
    ``<stem>.rsm-manifest`` beside it ("compressed", "encrypted", both), or None when the
    object holds the segment's bytes as they were (no manifest, or neither transform)."""
    p = as_path(path)
    if tiered_segment_id(p) is None:
        return None
    manifest = companion_path(p, ".rsm-manifest")
    try:
        if not manifest.is_file():
            return None
        doc = json.loads(manifest.read_bytes())
    except (OSError, ValueError):
        return None
    done = [what for what, on in (("compressed", doc.get("compression")), ("encrypted", doc.get("encryption")))
            if on]
    return " and ".join(done) or None


def is_stream(path: str | os.PathLike) -> bool:
    """Standard input, a pipe, a FIFO, a character device: read once, front to back, size unknown."""
    if is_stdin(path):
        return True
    if isinstance(path, (RemotePath, ArchivePath)):
        return False
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def is_input_file(path: str | os.PathLike) -> bool:
    """Something read as one file: a regular file, standard input or a stream."""
    if isinstance(path, (RemotePath, ArchivePath)):
        return path.is_file()
    return is_stdin(path) or (os.path.exists(path) and not os.path.isdir(path))


def segment_file_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    """A segment's (or a companion's) file name: the base offset in 20 digits, then the suffix."""
    return f"{base_offset:020d}{suffix}"


def companion_path(log: str | os.PathLike, suffix: str, folder: str | os.PathLike | None = None) -> Path:
    """The file beside a segment with the same stem: ``companion_path(log, ".index")``.

    ``folder`` puts it elsewhere (an output folder); transient suffixes such as
    ``.log.deleted`` are dropped with the rest of the name after the first dot.
    """
    p = as_path(log)
    where = as_path(folder) if folder is not None else p.parent
    return where / (p.name.split(".", 1)[0] + suffix)  # type: ignore[return-value]


def is_pipe(path: str | os.PathLike) -> bool:
    """A FIFO or a pipe (``<(zcat ...)`` is one as ``/dev/fd/N``)."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


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
    # The tail's first bytes (up to an entry's header up to its magic): what Kafka's reader decides on.
    tail_head: bytes = field(default=b"", init=False)
    # Bytes read from a stream (standard input, a pipe): its size once read.
    streamed: int | None = field(default=None, init=False)
    # The file's new name when the broker renamed it (.deleted, .cleaned) before or while it was read.
    renamed_to: Path | None = field(default=None, init=False)
    # How the file differs, once read, from when it was first opened (kseg.log.identity).
    change: identity.Change | None = field(default=None, init=False)
    identity: identity.Identity | None = field(default=None, init=False)

    def notes(self) -> list[str]:
        """What a reader says about the file having been renamed or changed during the run."""
        c = self.change
        note = c.reader_note() if c is not None else None
        if note is None and self.renamed_to is not None:
            note = identity.renamed_note(str(self.renamed_to))
        return [note] if note else []

    def __post_init__(self) -> None:
        self.path = as_path(self.path)  # type: ignore[assignment]

    def kafka_reads_on(self, end: int | None = None) -> Batch | None:
        """The entry at the tail as Kafka's reader takes it where kseg's scan stopped
        (``kseg.log.decode.kafka_short_entry``: a magic above 2, a v1 or v2 size below its
        header's), read from the file; None where Kafka does not read it as a batch either, or
        the tail is not a whole entry before ``end`` (the file's end by default)."""
        tail = self.tail
        if tail is None:
            return None
        limit = tail.position + tail.length if end is None else min(end, tail.position + tail.length)
        entry = kafka_entry_at(self.tail_head, limit - tail.position)
        if entry.found not in ("v2", "legacy"):
            return None
        want = LOG_OVERHEAD + entry.size if entry.found == "legacy" else max(LOG_OVERHEAD + entry.size,
                                                                            RECORD_BATCH_OVERHEAD)
        with self.path.open("rb") as f:
            f.seek(tail.position)
            data = f.read(want)
        return kafka_short_entry(data, tail.position) if len(data) == want else None

    @property
    def base_offset(self) -> int | None:
        return None if is_stream(self.path) else base_offset_of(self.path)

    @property
    def size(self) -> int:
        if self.streamed is not None:
            return self.streamed
        if is_stream(self.path):
            return 0
        return self.path.stat().st_size

    def batches(self, *, start: int = 0, end: int | None = None, chunk_size: int | None = None) -> Iterator[Batch]:
        """Yield the entries from byte ``start`` up to ``end`` (default: end of file).

        Stops at the first entry that cannot be framed; what stopped it is in ``self.tail``.
        """
        for entries in self.batch_lists(start=start, end=end, chunk_size=chunk_size):
            yield from entries

    def batch_lists(self, *, start: int = 0, end: int | None = None,
                    chunk_size: int | None = None) -> Iterator[list[Batch]]:
        """``batches()`` in the scanner's lists: up to STEP_ENTRIES entries each, all views of one
        chunk of the file (``READ_CHUNK_BYTES``, objects ``RANGE_READ_BYTES``), never empty; for
        readers that take runs of entries at once."""
        self.tail = None
        if chunk_size is None:
            chunk_size = CHUNK_SIZE if isinstance(self.path, Path) else RANGE_READ_BYTES
        if is_stdin(self.path):
            yield from self._stream_batches(sys.stdin.buffer, start, end, chunk_size)
            return
        problem = not_a_file(self.path) if isinstance(self.path, Path) else None
        if problem is not None and not (is_pipe(self.path) and base_offset_of(self.path) is None):
            # A pipe named for reading (<(zcat ...), a FIFO) is read as a stream below; a device
            # never ends, and a FIFO under a segment's name is not what a broker keeps.
            raise InputError(f"cannot read: {problem}", file=str(self.path))
        where = self.path
        try:
            f = where.open("rb")
        except FileNotFoundError as e:
            where = identity.follow(self.path)  # renamed by retention since it was listed
            if where is self.path:
                raise cannot_read(self.path, e) from None
            self.renamed_to = where
            try:
                f = where.open("rb")
            except OSError as e2:
                raise cannot_read(self.path, e2) from None
        except OSError as e:
            raise cannot_read(self.path, e) from None
        self.change = None
        try:
            yield from self._file_batches(f, where, start, end, chunk_size)
        finally:
            if isinstance(where, Path):
                self.change = identity.change(self.path, self.identity)

    def _file_batches(self, f, where, start: int, end: int | None, chunk_size: int) -> Iterator[list[Batch]]:
        with f:
            if not isinstance(self.path, Path):
                file_size = f.size()  # an object, read by ranges: its size from the store
            else:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    # A pipe, FIFO or process substitution: fstat says 0 bytes, and it cannot seek.
                    yield from self._stream_batches(f, start, end, chunk_size)
                    return
                self.identity = identity.opened(self.path, st)
                file_size = st.st_size
            limit = file_size if end is None else min(end, file_size)
            filepos = start
            want = chunk_size
            # Each chunk is read whole into its own bytes object (batches keep views of it)
            # and starts at an entry boundary: an entry cut by a chunk's end is read again
            # as the start of the next chunk, so no chunk is ever copied or concatenated.
            while filepos < limit:
                f.seek(filepos)
                asked = min(want, limit - filepos)
                try:
                    chunk = f.read(asked)
                except OSError as e:  # EIO and the like (archive members and objects raise ReadError)
                    raise cannot_read(self.path, e) from None
                eof = len(chunk) < asked or filepos + len(chunk) >= limit
                mv = memoryview(chunk)
                at = 0
                while True:
                    # Small steps: a list of 100k batches would keep the GC busy.
                    scan = scan_entries(mv, filepos, final=eof, start=at, max_entries=STEP_ENTRIES)
                    if scan.batches:
                        yield scan.batches
                    if scan.tail is not None:
                        scan.tail.error.located(file=str(self.path))
                        self.tail = scan.tail
                        at = scan.tail.position - filepos
                        self.tail_head = bytes(mv[at:at + HEADER_SIZE_UP_TO_MAGIC])
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
                    self.tail_head = bytes(chunk[:HEADER_SIZE_UP_TO_MAGIC])
                    return
                want = max(chunk_size, total)


    def _stream_batches(self, f, start: int, end: int | None, chunk_size: int) -> Iterator[list[Batch]]:
        """Entries of a stream, read front to back in chunks cut at entry boundaries:
        memory holds one chunk (or one entry larger than a chunk), never the whole stream."""
        name = str(self.path)
        read = 0

        def take(n: int) -> bytes:
            # Pipes return short reads: read until n bytes or the end, a chunk at a time.
            nonlocal read
            if end is not None:
                n = min(n, end - read)
            parts = []
            while n > 0:
                part = f.read(min(n, chunk_size))
                if not part:
                    break
                parts.append(part)
                n -= len(part)
                read += len(part)
            return b"".join(parts)

        while read < start:
            if not take(start - read):
                break
        filepos = read
        carry = b""
        want = chunk_size
        try:
            while True:
                asked = want - len(carry)
                if asked <= 0:
                    asked = chunk_size
                data = take(asked)
                eof = len(data) < asked or (end is not None and read >= end)
                chunk = carry + data if carry else data
                carry = b""
                mv = memoryview(chunk)
                at = 0
                while True:
                    scan = scan_entries(mv, filepos, final=eof, start=at, max_entries=STEP_ENTRIES)
                    if scan.batches:
                        yield scan.batches
                    if scan.tail is not None:
                        scan.tail.error.located(file=name)
                        self.tail = scan.tail
                        at = scan.tail.position - filepos
                        self.tail_head = bytes(mv[at:at + HEADER_SIZE_UP_TO_MAGIC])
                        return
                    at = scan.consumed
                    if len(scan.batches) < STEP_ENTRIES:
                        break
                if eof:
                    return
                carry = chunk[at:]
                filepos += at
                want = chunk_size
                if len(carry) >= HEADER_SIZE_UP_TO_MAGIC:
                    total = LOG_ENTRY_PREFIX.struct.unpack_from(carry, 0)[1] + LOG_OVERHEAD
                    want = max(chunk_size, total)
        finally:
            self.streamed = read
def zero_bytes_to_end(path: str | os.PathLike, start: int) -> int | None:
    """How many bytes there are from ``start`` to the end of the file when they are all
    zeros (a broker's preallocated segment, ``log.preallocate=true``); None when any is not
    (or the file cannot be read). Archive members and objects are read as files are."""
    zero = bytes(1 << 20)
    n = 0
    try:
        with (path.open("rb") if isinstance(path, (ArchivePath, RemotePath)) else open(path, "rb")) as f:
            f.seek(start)
            while chunk := f.read(len(zero)):
                if chunk != zero[:len(chunk)]:
                    return None
                n += len(chunk)
    except (OSError, KsegError):
        return None
    return n or None


def preallocated_zeros(path: str | os.PathLike, tail: Tail) -> int | None:
    """How many zero bytes follow the last batch when ``tail`` is space a broker preallocated
    (``log.preallocate=true``) and never wrote: all zeros to the end of the file, past a whole
    entry header. None for any other tail (a partial entry, or bytes that are not all zeros)."""
    if isinstance(tail.error, TruncatedError):
        return None
    return zero_bytes_to_end(path, tail.position)


@dataclass
class LeftOut:
    """What a writer left out after segments' last batches because it is no data: zeros a broker
    preallocated. The broker trims them when it closes a segment (``FileRecords.trim``), so an
    output without them is the segment as the broker keeps it; the writer says so."""

    segments: int = 0
    zero_bytes: int = 0

    def __bool__(self) -> bool:
        return bool(self.segments)

    def record(self, zeros: int) -> None:
        self.segments += 1
        self.zero_bytes += zeros

    def add(self, other: "LeftOut") -> None:
        self.segments += other.segments
        self.zero_bytes += other.zero_bytes

    def line(self) -> str:
        """The summary's words ("" when nothing was left out)."""
        if not self:
            return ""
        return (f"left out {self.zero_bytes} zero bytes a broker preallocated after the last batch of "
                f"{self.segments} segment(s) (log.preallocate=true; no data)")

    def as_json(self) -> dict:
        return {"segments": self.segments, "zero_bytes": self.zero_bytes}


def strict_batches(path: str | os.PathLike, left_out: LeftOut | None = None) -> Iterator[Batch]:
    """Every batch of a segment, raising what ends the walk early (a partial or corrupt
    tail) instead of stopping quietly: for commands that write what they read. Zeros a broker
    preallocated after the last batch end the walk as the end of the file would (told to
    ``left_out``)."""
    seg = Segment(as_path(path))  # type: ignore[arg-type]
    yield from seg.batches()
    end_of_batches(seg, left_out)


def end_of_batches(seg: "Segment", left_out: LeftOut | None = None) -> None:
    """After a writer's walk of ``seg``: raise what ended it early, unless that is zeros a
    broker preallocated (told to ``left_out``)."""
    if seg.tail is None:
        return
    zeros = preallocated_zeros(seg.path, seg.tail)
    if zeros is None:
        raise seg.tail.error
    if left_out is not None:
        left_out.record(zeros)


def partition_segments(folder: str | os.PathLike) -> list[Path]:
    """The .log files of a partition folder, in base-offset order."""
    folder = as_path(folder)
    logs = [p for p in folder.iterdir() if p.suffix == LOG_SUFFIX and base_offset_of(p) is not None]
    return sorted(logs, key=lambda p: base_offset_of(p))  # type: ignore[arg-type, return-value]


def partition_of(folder: str | os.PathLike) -> tuple[str, int] | None:
    """(topic, partition) of a partition folder, by its name (and its parent's, for Aiven's layout)."""
    folder = as_path(folder)
    return parse_partition_dir(folder.name, folder.parent.name)


def tiered_topic_id(folder: str | os.PathLike) -> str | None:
    """The topic id a tiered store's partition folder names (LocalTieredStorage's
    ``<topic>-<n>-<topic id>``, Aiven's ``<topic>-<topic id>/<n>``), if any."""
    folder = as_path(folder)
    m = TIERED_PARTITION_DIR.match(folder.name)
    if m:
        return m.group("topic_id")
    t = TIERED_TOPIC_DIR.match(folder.parent.name) if folder.name.isdigit() else None
    return t.group("topic_id") if t else None


@dataclass(frozen=True)
class Partition:
    """A topic-partition folder (``<topic>-<n>``) with its segments in offset order."""

    path: Path

    @property
    def topic(self) -> str | None:
        parsed = partition_of(self.path)
        return parsed[0] if parsed else None

    @property
    def partition(self) -> int | None:
        parsed = partition_of(self.path)
        return parsed[1] if parsed else None

    @property
    def segment_paths(self) -> list[Path]:
        return partition_segments(self.path)

    def segments(self) -> list[Segment]:
        return [Segment(p) for p in self.segment_paths]


def log_dir_partitions(root: str | os.PathLike) -> list[Partition]:
    """Partition folders directly under a broker log directory, sorted by topic and partition:
    the writers' listing (``kseg.log.listing.writer_partition_folders``). A folder of ``.log`` files
    not named by offset, a folder of log directories, or one with nothing Kafka in it is an
    InputError saying so: a writer could not name what it writes."""
    return [Partition(p) for p in writer_partition_folders(root)]


def open_segment(path: str | os.PathLike) -> Segment:
    """Open one segment file for reading."""
    p = as_path(path)
    if not is_input_file(p):
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
