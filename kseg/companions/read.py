"""Readers for a segment's companion files (spec §5.2-5.6).

Binary files (.index, .timeindex, .txnindex, .snapshot) are parsed by sans-IO
functions that take the file's bytes (plus the segment base offset the name
carries); text files (leader-epoch-checkpoint, partition.metadata) by functions
that take their bytes. The ``read_*`` functions are thin file shells.

Rules: parsing only describes what is there, with Kafka's own conventions (the
zero-tail stop rule, a partial trailing entry counted, not fatal); judging an
index against its log is ``kseg.index_check``'s job. Only kseg errors escape:
an unreadable file is an ``InputError``, bytes the format cannot hold are a
``DataError`` subclass carrying the byte position (or line number).
"""

from __future__ import annotations

import base64
import binascii
import errno
import json
import io
import os
import re
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Generic, Iterable, Iterator, NamedTuple, TypeVar

from kseg.checksums import crc32c
from kseg.errors import DataError, IndexFileError, InputError, KsegError, TruncatedError
from kseg.facts.index_files import LAYOUTS as INDEX_LAYOUTS
from kseg.facts.primitives import INT32_MAX
from kseg.facts.producer_snapshot import SNAPSHOT_CRC_START
from kseg.layouts import (
    ABORTED_TXN_ENTRY,
    OFFSET_INDEX_ENTRY,
    SNAPSHOT_ENTRY,
    SNAPSHOT_HEADER,
    TIME_INDEX_ENTRY,
)
from kseg.log.listing import LEADER_EPOCH_FILE, META_PROPERTIES, PARTITION_METADATA_FILE
from kseg.log.segment import base_offset_of
from kseg.printable import excerpt as _excerpt
from kseg.storage import MemberReader, as_path, cannot_read, open_input, open_size, read_full, read_up_to

__all__ = [
    "AbortedTxn",
    "EpochEntry",
    "IndexFile",
    "LeaderEpochCheckpoint",
    "OffsetIndexEntry",
    "PartitionMetadata",
    "ProducerEntry",
    "ProducerSnapshot",
    "TimeIndexEntry",
    "TXN_INDEX_VERSION",
    "SNAPSHOT_VERSION",
    "decrement_sequence",
    "OffsetCheckpoint",
    "parse_leader_epoch_checkpoint",
    "parse_meta_properties",
    "parse_offset_checkpoint",
    "parse_offset_index",
    "parse_partition_metadata",
    "parse_producer_snapshot",
    "parse_time_index",
    "parse_txn_index",
    "read_leader_epoch_checkpoint",
    "read_offset_index",
    "read_meta_properties",
    "read_partition_metadata",
    "read_producer_snapshot",
    "read_time_index",
    "read_txn_index",
    "read_txn_slots",
    "read_offset_checkpoint",
    "read_text_file",
    "java_int",
    "parse_quorum_state",
    "IndexSlots",
    "TxnSlots",
]

TXN_INDEX_VERSION = 0
SNAPSHOT_VERSION = 1
CHECKPOINT_VERSION = 0  # leader-epoch-checkpoint (CheckpointFile format)

OFFSET_ENTRY_SIZE = OFFSET_INDEX_ENTRY.size  # 8
TIME_ENTRY_SIZE = TIME_INDEX_ENTRY.size  # 12
TXN_ENTRY_SIZE = ABORTED_TXN_ENTRY.size  # 34
SNAPSHOT_HEADER_SIZE = SNAPSHOT_HEADER.size  # 10
SNAPSHOT_ENTRY_SIZE = SNAPSHOT_ENTRY.size  # 46


# --------------------------------------------------------------------------- decoded objects


class OffsetIndexEntry(NamedTuple):
    """One .index entry: an absolute offset and a byte position in the .log."""

    offset: int
    position: int


class TimeIndexEntry(NamedTuple):
    """One .timeindex entry: the largest timestamp so far and the absolute offset of its batch's end."""

    timestamp: int
    offset: int


class AbortedTxn(NamedTuple):
    """One .txnindex entry; ``last_offset`` is the offset of the ABORT marker."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


E = TypeVar("E")
T = TypeVar("T")


@dataclass(frozen=True)
class IndexFile(Generic[E]):
    """A parsed index file.

    ``entries`` stops where Kafka's reader stops: at the first slot i > 0 whose
    offset equals the base offset (the preallocated zero tail, spec §6.4); the
    ``zero_tail`` slots from there on are counted, not returned, and
    ``tail_is_zero`` says whether they really are all zero bytes.
    ``partial_bytes`` is the length past the last whole slot.
    """

    base_offset: int
    entries: tuple[E, ...]
    entry_size: int
    zero_tail: int = 0
    tail_is_zero: bool = True
    partial_bytes: int = 0

    @property
    def slots(self) -> int:
        """Whole entry slots in the file, zero tail included (Kafka's ``entries``)."""
        return len(self.entries) + self.zero_tail

    @property
    def tail_position(self) -> int:
        """Byte position of the first slot after ``entries`` (zero tail or partial bytes)."""
        return len(self.entries) * self.entry_size


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement`` with the int32 wrap of ``DefaultRecordBatch.decrementSequence``."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


class ProducerEntry(NamedTuple):
    """One producer of a .snapshot (field names as in ProducerSnapshot.json, snake_case)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int  # -1: no batch metadata
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int  # -1: no open transaction

    @property
    def first_sequence(self) -> int:
        """lastSequence - offsetDelta, wrapping below 0 to int32 max (BatchMetadata.firstSeq)."""
        return decrement_sequence(self.last_sequence, self.offset_delta)

    @property
    def has_batch_metadata(self) -> bool:
        return self.last_offset >= 0

    @property
    def has_open_transaction(self) -> bool:
        return self.current_txn_first_offset >= 0


@dataclass(frozen=True)
class ProducerSnapshot:
    """A producer-state snapshot; a bad CRC is reported in ``crc_valid``, not raised."""

    version: int
    crc: int
    computed_crc: int
    entries: tuple[ProducerEntry, ...]

    @property
    def crc_valid(self) -> bool:
        return self.crc == self.computed_crc


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCheckpoint(NamedTuple):
    """``version`` is None for an empty file (Kafka reads that as no entries)."""

    version: int | None
    entries: list[EpochEntry]


class PartitionMetadata(NamedTuple):
    version: int
    topic_id: str  # URL-safe base64 of the 16 UUID bytes, as written in the file


# --------------------------------------------------------------------------- sans-IO parsers


def _split_slots(data: bytes | memoryview, size: int) -> tuple[memoryview, int]:
    mv = data if isinstance(data, memoryview) else memoryview(data)
    whole = len(mv) - len(mv) % size
    return mv[:whole], len(mv) - whole


def _is_zero(mv: memoryview) -> bool:
    return not mv.tobytes().strip(b"\x00")


def parse_offset_index(data: bytes | memoryview, base_offset: int) -> IndexFile[OffsetIndexEntry]:
    """Parse .index bytes (8-byte slots: relative offset int32, position int32). Never raises."""
    body, partial = _split_slots(data, OFFSET_ENTRY_SIZE)
    entries: list[OffsetIndexEntry] = []
    stop = None
    for i, (rel, pos) in enumerate(OFFSET_INDEX_ENTRY.struct.iter_unpack(body)):
        if i > 0 and rel == 0:
            stop = i
            break
        entries.append(OffsetIndexEntry(base_offset + rel, pos))
    return _index_file(base_offset, entries, OFFSET_ENTRY_SIZE, body, stop, partial)


def parse_time_index(data: bytes | memoryview, base_offset: int) -> IndexFile[TimeIndexEntry]:
    """Parse .timeindex bytes (12-byte slots: timestamp int64, relative offset int32). Never raises.

    The zero-tail rule is Kafka's (DumpLogSegments): stop at the first slot i > 0
    whose offset is the base offset, whatever its timestamp.
    """
    body, partial = _split_slots(data, TIME_ENTRY_SIZE)
    entries: list[TimeIndexEntry] = []
    stop = None
    for i, (ts, rel) in enumerate(TIME_INDEX_ENTRY.struct.iter_unpack(body)):
        if i > 0 and rel == 0:
            stop = i
            break
        entries.append(TimeIndexEntry(ts, base_offset + rel))
    return _index_file(base_offset, entries, TIME_ENTRY_SIZE, body, stop, partial)


class IndexSlots(NamedTuple):
    """An .index or .timeindex file as Kafka reads it, its entries left where they are (a 10 MB
    .index holds 1.3 M of them; a sparse file may claim billions): ``count`` entries of
    ``entry_size`` at the start of ``source`` (the bytes, or the file, read again in pieces when
    ``rows`` is asked for); the rest as ``IndexFile`` says it. ``first``/``last`` are the first and
    last entries (as ``rows`` gives them), ``last_slot`` the last whole slot's two fields as stored.
    For the dump and the checks, which go through the entries without an object each."""

    kind: str  # "index" | "timeindex"
    base_offset: int
    source: "memoryview | str | os.PathLike"
    count: int
    entry_size: int
    zero_tail: int
    tail_is_zero: bool
    partial_bytes: int
    first: "tuple[int, int] | None" = None
    last: "tuple[int, int] | None" = None
    last_slot: "tuple[int, int] | None" = None

    @property
    def slots(self) -> int:
        return self.count + self.zero_tail

    @property
    def size(self) -> int:
        """The file's length in bytes."""
        return self.slots * self.entry_size + self.partial_bytes

    def rows(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, int]]:
        """Entries ``start:stop`` as the file's fields, the offset made absolute: (offset, position)
        for an .index, (timestamp, offset) for a .timeindex. A file is read in pieces as they are
        taken, so memory stays flat whatever its size."""
        unpack = (OFFSET_INDEX_ENTRY if self.kind == "index" else TIME_INDEX_ENTRY).struct.iter_unpack
        base = self.base_offset
        parts = self.pieces(start, stop)
        if self.kind == "index":
            return (((base + rel, pos) for part in parts for rel, pos in unpack(part)))
        return (((ts, base + rel) for part in parts for ts, rel in unpack(part)))

    def pieces(self, start: int = 0, stop: int | None = None) -> Iterable[Any]:
        """Entries ``start:stop`` as stored, in pieces of whole entries (bounded memory)."""
        stop = self.count if stop is None else min(stop, self.count)
        size = self.entry_size
        if isinstance(self.source, memoryview):
            return (self.source[start * size:stop * size],)
        return _file_pieces(self.source, start * size, max(0, stop - start) * size, size)

    def index_file(self) -> IndexFile:
        """The file parsed whole (``parse_offset_index`` or ``parse_time_index``): small files only."""
        if isinstance(self.source, memoryview):
            whole = self.source.obj if isinstance(self.source.obj, (bytes, bytearray)) else self.source.tobytes()
        else:
            whole = _read(self.source)
        return (parse_offset_index if self.kind == "index" else parse_time_index)(whole, self.base_offset)


_INDEX_SHAPES = {  # kind -> (entry size, where the relative offset lies in an entry)
    "index": (OFFSET_ENTRY_SIZE, INDEX_LAYOUTS["OffsetIndexEntry"][2]["relative_offset"]),
    "timeindex": (TIME_ENTRY_SIZE, INDEX_LAYOUTS["TimeIndexEntry"][2]["relative_offset"]),
}


_U32 = next(code for code in "IL" if array(code).itemsize == 4)  # 4-byte words, whatever the C types

# Companion files are read this many bytes at a time (rounded down to whole entries).
READ_PIECE = 1 << 20
_ZEROS = bytes(READ_PIECE)


def _all_zero(piece: bytes | memoryview) -> bool:
    n = len(piece)
    if n <= READ_PIECE:
        return piece == _ZEROS[:n]
    return all(piece[i:i + READ_PIECE] == _ZEROS[:len(piece[i:i + READ_PIECE])] for i in range(0, n, READ_PIECE))


def _zero_from(f: BinaryIO, position: int, end: int) -> bool | None:
    """Whether bytes ``position:end`` of a local file are all zero, skipping its holes (a sparse
    file's gigabytes cost nothing); None when the file cannot tell its holes (read it instead)."""
    try:
        fd = f.fileno()
        seek_data, seek_hole = os.SEEK_DATA, os.SEEK_HOLE  # type: ignore[attr-defined]
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None
    pos = position
    try:
        while pos < end:
            try:
                data = os.lseek(fd, pos, seek_data)
            except OSError as e:
                if e.errno == errno.ENXIO:  # only a hole from here on
                    return True
                raise
            if data >= end:
                return True
            hole = min(os.lseek(fd, data, seek_hole), end)
            while data < hole:
                n = min(READ_PIECE, hole - data)
                if not _all_zero(os.pread(fd, n, data)):
                    return False
                data += n
            pos = hole
    except OSError as e:
        if e.errno in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            return None
        raise
    return True


class ViewReader:
    """Bytes already in memory read as a file, in views (no copies)."""

    def __init__(self, data: bytes | memoryview):
        self.mv = data if isinstance(data, memoryview) else memoryview(data)
        self.pos = 0

    def read(self, n: int) -> memoryview:
        part = self.mv[self.pos:self.pos + n]
        self.pos += len(part)
        return part

    def size(self) -> int:
        return len(self.mv)


def _scan_index(f: Any, kind: str, base_offset: int, source: Any) -> IndexSlots:
    """Read an index once, a piece at a time: where Kafka's reader stops (the first slot i > 0
    whose relative offset is 0), whether the slots from there are zero, the first and last
    entries. Memory: one piece."""
    size, rel_at = _INDEX_SHAPES[kind]
    unpack = (OFFSET_INDEX_ENTRY if kind == "index" else TIME_INDEX_ENTRY).struct.unpack_from
    step = READ_PIECE - READ_PIECE % size
    slot = 0  # whole slots read so far
    stop: int | None = None
    first = last = last_slot = None
    tail_is_zero = True
    partial = 0
    while True:
        piece = read_full(f, step)
        if not piece:
            break
        n = len(piece) // size
        partial = len(piece) - n * size
        body = piece[:n * size]
        if n:
            last_slot = unpack(body, (n - 1) * size)
        if stop is None and n:
            words = array(_U32)
            words.frombytes(body)
            try:  # a zero test needs no byte order
                k = words[rel_at // 4::size // 4].index(0, 1 if slot == 0 else 0)
            except ValueError:
                k = n
            if k:
                if first is None:
                    first = unpack(body, 0)
                last = unpack(body, (k - 1) * size)
            if k < n:
                stop = slot + k
                tail_is_zero = _all_zero(body[k * size:])
        elif n and tail_is_zero:
            tail_is_zero = _all_zero(body)
        slot += n
        if partial:
            break
        if stop is not None and isinstance(f, io.BufferedReader):
            rest = _skip_zero_tail(f, slot * size, size)
            if rest is not None:
                more_slots, partial, last_slot2, zero = rest
                slot += more_slots
                last_slot = last_slot2 or last_slot
                tail_is_zero = tail_is_zero and zero
                break
    count = slot if stop is None else stop
    rows = _absolute(kind, base_offset)
    return IndexSlots(kind, base_offset, source, count, size, slot - count, tail_is_zero, partial,
                      rows(first), rows(last), last_slot)


def _skip_zero_tail(f: io.BufferedReader, position: int, size: int) -> tuple[int, int, Any, bool] | None:
    """The rest of a local file's zero tail without reading its holes: (whole slots, partial bytes,
    last slot, all zero); None when the file cannot tell its holes."""
    length = open_size(f)
    if length is None or length <= position:
        return None
    end = position + (length - position) // size * size
    zero = _zero_from(f, position, end)
    if zero is None:
        return None
    last = None
    if end > position:
        raw = os.pread(f.fileno(), size, end - size)
        unpack = (OFFSET_INDEX_ENTRY if size == OFFSET_ENTRY_SIZE else TIME_INDEX_ENTRY).struct.unpack_from
        last = unpack(raw, 0) if len(raw) == size else None
    return (end - position) // size, length - end, last, zero


def _absolute(kind: str, base: int) -> Callable[[Any], "tuple[int, int] | None"]:
    if kind == "index":
        return lambda raw: None if raw is None else (base + raw[0], raw[1])
    return lambda raw: None if raw is None else (raw[0], base + raw[1])


def _file_pieces(path: Any, start: int, length: int, size: int) -> Iterator[bytes]:
    """``length`` bytes of a file from ``start``, in pieces of whole ``size``-byte entries."""
    if length <= 0:
        return
    step = READ_PIECE - READ_PIECE % size
    try:
        with open_input(path) as f:
            f.seek(start)
            while length > 0:
                piece = read_full(f, min(step, length))
                if not piece:
                    return
                length -= len(piece)
                yield piece[:len(piece) - len(piece) % size]
    except OSError as e:
        raise cannot_read(path, e) from None


# An index file read from a pipe (not a regular file) is held whole, up to this many bytes.
MAX_STREAMED_INDEX_BYTES = 64 * 1024 * 1024


def _read_stream(f: BinaryIO, path: Any) -> bytes:
    data = read_up_to(f, MAX_STREAMED_INDEX_BYTES + 1)
    if len(data) > MAX_STREAMED_INDEX_BYTES:
        raise DataError("an index file read from a pipe is too large (a regular file is read in pieces)",
                        file=str(path), position=MAX_STREAMED_INDEX_BYTES,
                        expected=f"at most {MAX_STREAMED_INDEX_BYTES} bytes", found="more")
    return data


def index_slots(data: bytes | memoryview, kind: str, base_offset: int) -> IndexSlots:
    """``parse_offset_index`` / ``parse_time_index`` without an object per entry: where the entries
    stop (the first slot i > 0 whose relative offset is 0) is found at C speed. Never raises."""
    reader = ViewReader(data)
    return _scan_index(reader, kind, base_offset, reader.mv)


def read_index_slots(path: str | os.PathLike, kind: str, base_offset: int | None = None) -> IndexSlots:
    """Read an .index or .timeindex file as ``index_slots``, in pieces (its entries are read again
    when ``rows`` is asked for); the base offset from the file name unless given."""
    base = _base(path, base_offset)
    try:
        with open_input(path) as f:
            if open_size(f) is None:  # a pipe or device: cannot be read twice, so held (bounded)
                return index_slots(_read_stream(f, path), kind, base)
            return _scan_index(f, kind, base, path)
    except OSError as e:
        raise cannot_read(path, e) from None


def _index_file(
    base_offset: int, entries: list, size: int, body: memoryview, stop: int | None, partial: int
) -> IndexFile:
    if stop is None:
        return IndexFile(base_offset, tuple(entries), size, 0, True, partial)
    tail = body[stop * size :]
    return IndexFile(base_offset, tuple(entries), size, len(tail) // size, _is_zero(tail), partial)


def parse_txn_index(data: bytes | memoryview, base_offset: int = 0) -> IndexFile[AbortedTxn]:
    """Parse .txnindex bytes (34-byte entries). A trailing partial entry is ignored (as Kafka
    does) and counted in ``partial_bytes``. A version other than 0 raises ``IndexFileError``.

    Kafka checks only the first byte of the int16 version; kseg requires the whole field to be 0.
    ``base_offset`` is recorded, not enforced (``index_check`` reports entries below it).
    """
    body, partial = _split_slots(data, TXN_ENTRY_SIZE)
    entries = []
    for i, fields in enumerate(ABORTED_TXN_ENTRY.struct.iter_unpack(body)):
        txn = AbortedTxn(*fields)
        if txn.version != TXN_INDEX_VERSION:
            raise IndexFileError(
                "unknown aborted-transaction entry version",
                position=i * TXN_ENTRY_SIZE,
                where=f"entry {i}",
                expected=TXN_INDEX_VERSION,
                found=txn.version,
            )
        entries.append(txn)
    return IndexFile(base_offset, tuple(entries), TXN_ENTRY_SIZE, 0, True, partial)


def _snapshot_header(head: bytes | memoryview, n: int) -> tuple[int, int, int]:
    """A snapshot's header (version, crc, count) checked against the file's length ``n``: the
    count is believed only as far as the bytes hold it (nothing is allocated by it)."""
    if n < SNAPSHOT_HEADER_SIZE:
        raise TruncatedError(
            "producer snapshot shorter than its header", position=0,
            expected=f"at least {SNAPSHOT_HEADER_SIZE} bytes", found=f"{n} bytes",
        )
    version, crc, count = SNAPSHOT_HEADER.struct.unpack_from(head, 0)
    if version != SNAPSHOT_VERSION:
        raise IndexFileError("unknown producer snapshot version", position=0, expected=SNAPSHOT_VERSION, found=version)
    if count < 0:
        raise IndexFileError("negative producer entry count", position=6, expected=">= 0", found=count)
    body = n - SNAPSHOT_HEADER_SIZE
    whole, rest = divmod(body, SNAPSHOT_ENTRY_SIZE)
    if count > whole:
        end = SNAPSHOT_HEADER_SIZE + whole * SNAPSHOT_ENTRY_SIZE
        raise TruncatedError(
            f"producer snapshot ends inside entry {whole} of {count}", position=end,
            where=f"entry {whole}",
            expected=f"{SNAPSHOT_HEADER_SIZE + count * SNAPSHOT_ENTRY_SIZE} bytes", found=f"{n} bytes",
        )
    if count < whole or rest:
        end = SNAPSHOT_HEADER_SIZE + count * SNAPSHOT_ENTRY_SIZE
        raise IndexFileError(
            "bytes after the producer entries", position=end,
            expected=f"{end} bytes for {count} entries", found=f"{n} bytes",
        )
    return version, crc, count


def parse_producer_snapshot(data: bytes | memoryview) -> ProducerSnapshot:
    """Parse a version-1 producer-state snapshot (spec §5.5).

    Raises ``TruncatedError`` when the bytes end before the header or the counted
    entries, ``IndexFileError`` for a wrong version, a negative count or bytes
    after the entries. A CRC mismatch is not raised: see ``crc_valid``.
    """
    mv = data if isinstance(data, memoryview) else memoryview(data)
    version, crc, _count = _snapshot_header(mv[:SNAPSHOT_HEADER_SIZE], len(mv))
    entries = tuple(
        ProducerEntry(*f) for f in SNAPSHOT_ENTRY.struct.iter_unpack(mv[SNAPSHOT_HEADER_SIZE:])
    )
    return ProducerSnapshot(version, crc, crc32c(mv[SNAPSHOT_CRC_START:]), entries)


# --------------------------------------------------------------------------- text files

# Java's BufferedReader.readLine ends a line at \n, \r or \r\n (str.splitlines knows more).
_LINE_END = re.compile(r"\r\n|\r|\n")
# Java's "\\s+": space, \t, \n, \x0b, \f, \r.
_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


# Text companions are small by nature (a checkpoint line is a topic name and two numbers; a
# log directory's offset checkpoints list its partitions): past these a file is not one, and is
# said so in one line instead of being read whole.
MAX_TEXT_BYTES = 64 * 1024 * 1024
MAX_LINE_CHARS = 64 * 1024
# How much of an offending line an error quotes (escaped, its length said after it).
EXCERPT_CHARS = 64


def excerpt(text: str | bytes) -> str:
    """A short escaped excerpt of a text companion's line or value (``kseg.printable.excerpt``)."""
    return _excerpt(text, EXCERPT_CHARS)


# Digits of the largest Java int and long (2147483647, 9223372036854775807).
_JAVA_DIGITS = {32: 10, 64: 19}


def _java_lines(data: bytes | str, what: str) -> list[str]:
    if len(data) > MAX_TEXT_BYTES:
        raise DataError(f"{what} is too large for a text companion file", position=MAX_TEXT_BYTES,
                        expected=f"at most {MAX_TEXT_BYTES} bytes", found=f"{len(data)} bytes")
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{what} is not UTF-8 text", position=e.start,
                            found=excerpt(bytes(data[e.start:e.start + 16]))) from None
    else:
        text = data
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":  # readLine returns null after a final line end
        lines.pop()
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS:
            raise DataError(f"line too long for {what}", where=f"line {n}",
                            expected=f"at most {MAX_LINE_CHARS} characters", found=excerpt(line))
    return lines


def java_int(text: str, bits: int = 32, where: str | None = None, what: str = "number") -> int:
    """``text`` read as Java's Integer.parseInt (``bits`` 32) or Long.parseLong (64) read it:
    an optional sign and decimal digits, in range, else a DataError quoting a short excerpt.
    The one reader of every number of a text companion (never a Python int of any size)."""
    if not _JAVA_INT.fullmatch(text):
        raise DataError(f"{what} is not an integer", where=where, found=excerpt(text))
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if len(text.lstrip("+-").lstrip("0")) > _JAVA_DIGITS[bits]:
        raise DataError(f"{what} out of range", where=where, expected=f"{lo}..{hi}", found=excerpt(text))
    value = int(text)
    if not lo <= value <= hi:
        raise DataError(f"{what} out of range", where=where, expected=f"{lo}..{hi}", found=value)
    return value


def _java_int(text: str, bits: int, line: int, what: str) -> int:
    return java_int(text, bits, f"line {line}", what)


def parse_leader_epoch_checkpoint(data: bytes | str) -> LeaderEpochCheckpoint:
    """Parse a leader-epoch-checkpoint (CheckpointFile: version, count, ``epoch startOffset`` lines).

    Follows Kafka's reader: an empty file has no entries; the version must be 0;
    exactly ``count`` entry lines must follow, each two whitespace-separated integers
    (epoch int32, start offset int64). Errors carry ``where="line N"`` (1-based).
    """
    lines = _java_lines(data, LEADER_EPOCH_FILE)
    if not lines:
        return LeaderEpochCheckpoint(None, [])
    version = _java_int(lines[0], 32, 1, "version")
    if version != CHECKPOINT_VERSION:
        raise DataError("unrecognized checkpoint version", where="line 1", expected=CHECKPOINT_VERSION, found=version)
    if len(lines) < 2:
        raise DataError("missing entry count", where="line 2", expected="an entry count", found="end of file")
    count = _java_int(lines[1], 32, 2, "entry count")
    if count < 0:
        raise DataError("negative entry count", where="line 2", expected=">= 0", found=count)
    entries = []
    for i in range(count):
        n = i + 3
        if n > len(lines):
            raise DataError(
                "fewer entries than the count says", where=f"line {n}",
                expected=f"{count} entries", found=f"{i} entries",
            )
        parts = _JAVA_SPACE.split(lines[n - 1])
        while parts and parts[-1] == "":  # Java's split drops trailing empty strings
            parts.pop()
        if len(parts) != 2:
            raise DataError(
                "malformed entry line", where=f"line {n}",
                expected="'<leaderEpoch> <startOffset>'", found=excerpt(lines[n - 1]),
            )
        entries.append(EpochEntry(_java_int(parts[0], 32, n, "leader epoch"), _java_int(parts[1], 64, n, "start offset")))
    if len(lines) > count + 2:
        raise DataError(
            "more lines than the entry count says", where=f"line {count + 3}",
            expected=f"{count} entries", found=excerpt(lines[count + 2]),
        )
    return LeaderEpochCheckpoint(version, entries)


class OffsetCheckpoint(NamedTuple):
    """A log directory's offset checkpoint (recovery point, log start, replication, cleaner)."""

    version: int | None
    entries: list[tuple[str, int, int]]  # (topic, partition, offset)


_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def parse_offset_checkpoint(data: bytes | str, what: str = "offset checkpoint") -> OffsetCheckpoint:
    """Parse a log directory's offset checkpoint (Kafka's OffsetCheckpointFile): version 0,
    an entry count, then exactly that many ``topic partition offset`` lines. An empty
    file has no entries, as Kafka reads it."""
    lines = _java_lines(data, what)
    if not lines:
        return OffsetCheckpoint(None, [])
    version = _java_int(lines[0], 32, 1, "version")
    if version != CHECKPOINT_VERSION:
        raise DataError("unrecognized checkpoint version", where="line 1", expected=CHECKPOINT_VERSION, found=version)
    if len(lines) < 2:
        raise DataError("missing entry count", where="line 2", expected="an entry count", found="end of file")
    count = _java_int(lines[1], 32, 2, "entry count")
    if count < 0:
        raise DataError("negative entry count", where="line 2", expected=">= 0", found=count)
    if len(lines) - 2 != count:
        raise DataError("the entry count does not match the lines", where="line 2",
                        expected=f"{count} entries", found=f"{len(lines) - 2} lines")
    entries = []
    for n in range(3, count + 3):
        parts = [x for x in _JAVA_SPACE.split(lines[n - 1]) if x]
        if len(parts) != 3:
            raise DataError("malformed entry line", where=f"line {n}",
                            expected="'<topic> <partition> <offset>'", found=excerpt(lines[n - 1]))
        if not _TOPIC.fullmatch(parts[0]):
            raise DataError("not a valid topic name", where=f"line {n}", found=excerpt(parts[0]))
        partition = _java_int(parts[1], 32, n, "partition")
        offset = _java_int(parts[2], 64, n, "offset")
        if partition < 0:
            raise DataError("negative partition", where=f"line {n}", expected=">= 0", found=partition)
        entries.append((parts[0], partition, offset))
    return OffsetCheckpoint(version, entries)


def parse_meta_properties(data: bytes | str) -> dict[str, str]:
    """Parse a log directory's meta.properties (Java properties: ``key=value`` lines,
    ``#``/``!`` comments) and check what the broker checks: ``version`` 0 with an integer
    ``broker.id``, or 1 with an integer ``node.id`` and a ``cluster.id``."""
    props: dict[str, str] = {}
    for n, line in enumerate(_java_lines(data, META_PROPERTIES), 1):
        text = line.strip()
        if not text or text[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)", text)
        if m is None:
            raise DataError("malformed line", where=f"line {n}", expected="'key=value'", found=excerpt(line))
        props[m.group(1)] = m.group(2).strip()
    if "version" not in props:
        raise DataError("no version", expected="version=0 or version=1", found="none")
    version = _java_int(props["version"], 32, 0, "version")
    if version not in (0, 1):
        raise DataError("unrecognized meta.properties version", expected="0 or 1", found=version)
    needed = ("broker.id",) if version == 0 else ("node.id", "cluster.id")
    for key in needed:
        if not props.get(key):
            raise DataError(f"version {version} needs {key}", expected=f"{key}=...", found="none")
    for key in ("broker.id", "node.id"):
        if key in props:
            value = _java_int(props[key], 32, 0, key)
            if value < 0:
                raise DataError(f"negative {key}", expected=">= 0", found=value)
    return props


_META_LINE = re.compile(r"([^:]*):[ \t\n\x0b\f\r]+(.*)", re.S)
_B64URL = re.compile(r"[A-Za-z0-9_-]{22}")


def parse_partition_metadata(data: bytes | str) -> PartitionMetadata:
    """Parse partition.metadata: ``version: 0`` then ``topic_id: <22-char base64url uuid>``.

    Kafka splits each line at ``:\\s+`` and ignores the key; kseg also requires the
    keys to be ``version`` and ``topic_id``. A negative version or the all-zero
    topic id is rejected, as Kafka does.
    """
    lines = _java_lines(data, PARTITION_METADATA_FILE)
    fields = []
    for n, key in ((1, "version"), (2, "topic_id")):
        if len(lines) < n:
            raise DataError(f"missing {key} line", where=f"line {n}", expected=f"'{key}: ...'", found="end of file")
        m = _META_LINE.fullmatch(lines[n - 1])
        if m is None or m.group(1) != key:
            raise DataError("malformed line", where=f"line {n}", expected=f"'{key}: ...'", found=excerpt(lines[n - 1]))
        fields.append(m.group(2))
    if len(lines) > 2:
        raise DataError("unexpected extra line", where="line 3", expected="end of file", found=excerpt(lines[2]))
    version = _java_int(fields[0], 32, 1, "version")
    if version < 0:
        raise DataError("negative partition metadata version", where="line 1", expected=">= 0", found=version)
    topic_id = fields[1]
    if not _B64URL.fullmatch(topic_id):
        raise DataError("topic id is not a base64url UUID", where="line 2", expected="22 characters [A-Za-z0-9_-]",
                        found=excerpt(topic_id))
    try:
        raw = base64.urlsafe_b64decode(topic_id + "==")
    except (binascii.Error, ValueError):  # pragma: no cover - the regex admits only valid text
        raise DataError("topic id is not a base64url UUID", where="line 2", found=topic_id) from None
    if len(raw) != 16 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != topic_id:
        raise DataError("topic id is not a canonical 16-byte UUID", where="line 2", found=topic_id)
    if not any(raw):
        raise DataError("topic id is the all-zero UUID", where="line 2", found=topic_id)
    return PartitionMetadata(version, topic_id)


# --------------------------------------------------------------------------- file shells


def _read(path: str | os.PathLike) -> bytes:
    try:
        with open_input(path) as f:
            return f.read()
    except OSError as e:
        raise cannot_read(path, e) from None


def _base(path: str | os.PathLike, base_offset: int | None) -> int:
    if base_offset is not None:
        return base_offset
    found = base_offset_of(path)
    if found is None:
        raise InputError("cannot tell the segment base offset from the file name", file=str(path),
                         expected="<20 digits>.<suffix>", found=Path(path).name)
    return found


def _parse_file(path: str | os.PathLike, parse: Callable[[bytes], T], what: str) -> T:
    """Read a text companion (at most MAX_TEXT_BYTES) and parse it; a parse error names the file."""
    data = read_text_file(path, what)
    try:
        return parse(data)
    except KsegError as e:
        raise e.located(file=str(path))


def _read_limited(path: str | os.PathLike, limit: int, what: str) -> bytes:
    """A file's bytes, refused (DataError) when it holds more than ``limit``: what is read is bounded
    whatever the file's size."""
    try:
        with open_input(path) as f:
            size = open_size(f)
            if size is None or size <= limit:
                data = read_up_to(f, limit + 1)
    except OSError as e:
        raise cannot_read(path, e) from None
    if size is not None and size > limit or len(data) > limit:
        raise DataError(f"{what} is too large", file=str(path), position=limit,
                        expected=f"at most {limit} bytes", found=f"{size} bytes" if size else f"more than {limit} bytes")
    return data


def read_text_file(path: str | os.PathLike, what: str = "text file") -> bytes:
    """A text companion's bytes (checkpoints, partition.metadata, meta.properties, quorum-state),
    refused past MAX_TEXT_BYTES."""
    return _read_limited(path, MAX_TEXT_BYTES, what)


def _index_file_of(slots: IndexSlots, entry: Callable[..., E]) -> IndexFile[E]:
    return IndexFile(slots.base_offset, tuple(entry(*row) for row in slots.rows()), slots.entry_size,
                     slots.zero_tail, slots.tail_is_zero, slots.partial_bytes)


def read_offset_index(path: str | os.PathLike, base_offset: int | None = None) -> IndexFile[OffsetIndexEntry]:
    """Read an .index file; the base offset comes from the file name unless given. The file is read
    in pieces and only its entries are held (a zero tail of any size costs nothing)."""
    return _index_file_of(read_index_slots(path, "index", base_offset), OffsetIndexEntry)


def read_time_index(path: str | os.PathLike, base_offset: int | None = None) -> IndexFile[TimeIndexEntry]:
    """Read a .timeindex file as ``read_offset_index`` reads an .index."""
    return _index_file_of(read_index_slots(path, "timeindex", base_offset), TimeIndexEntry)


class TxnSlots(NamedTuple):
    """A .txnindex whose entries are left in the file (or bytes) and read in pieces by ``rows``;
    every entry's version was checked when it was scanned."""

    base_offset: int
    source: "memoryview | str | os.PathLike"
    count: int
    partial_bytes: int
    # read as Kafka reads it: the error its reader throws at entry ``count`` (the entries before it are these)
    stop: KsegError | None = None

    def rows(self) -> Iterator[AbortedTxn]:
        if isinstance(self.source, memoryview):
            parts: Iterable = (self.source[:self.count * TXN_ENTRY_SIZE],)
        else:
            parts = _file_pieces(self.source, 0, self.count * TXN_ENTRY_SIZE, TXN_ENTRY_SIZE)
        unpack = ABORTED_TXN_ENTRY.struct.iter_unpack
        return (AbortedTxn(*fields) for part in parts for fields in unpack(part))


def _scan_txn(f: Any, base_offset: int, source: Any, as_kafka: bool = False) -> TxnSlots:
    """Count a .txnindex's entries a piece at a time, checking each one's version (IndexFileError
    at the first that is not 0, as ``parse_txn_index``). ``as_kafka``: Kafka's check, which reads
    the version's first byte alone, as a signed byte, and throws where it is above 0 (the slots
    then end before that entry, ``stop`` the error)."""
    step = READ_PIECE - READ_PIECE % TXN_ENTRY_SIZE
    count = partial = 0
    while True:
        piece = read_full(f, step)
        if not piece:
            break
        n = len(piece) // TXN_ENTRY_SIZE
        partial = len(piece) - n * TXN_ENTRY_SIZE
        body = bytes(piece[:n * TXN_ENTRY_SIZE])
        firsts = body[0::TXN_ENTRY_SIZE]
        if as_kafka:
            i = next((k for k, b in enumerate(firsts) if 0 < b < 0x80), None) if firsts.count(0) != n else None
            if i is not None:
                stop = IndexFileError("unexpected aborted-transaction entry version (Kafka's reader throws)",
                                      position=(count + i) * TXN_ENTRY_SIZE, where=f"entry {count + i}",
                                      expected="a first byte of 0 or below", found=firsts[i])
                return TxnSlots(base_offset, source, count + i, 0, stop)
        elif firsts.count(0) != n or body[1::TXN_ENTRY_SIZE].count(0) != n:
            i = next(k for k in range(n) if body[k * TXN_ENTRY_SIZE:k * TXN_ENTRY_SIZE + 2] != b"\0\0")
            version = ABORTED_TXN_ENTRY.struct.unpack_from(body, i * TXN_ENTRY_SIZE)[0]
            raise IndexFileError("unknown aborted-transaction entry version",
                                 position=(count + i) * TXN_ENTRY_SIZE, where=f"entry {count + i}",
                                 expected=TXN_INDEX_VERSION, found=version)
        count += n
        if partial:
            break
    return TxnSlots(base_offset, source, count, partial)


def read_txn_slots(path: str | os.PathLike, base_offset: int | None = None, as_kafka: bool = False) -> TxnSlots:
    """Scan a .txnindex in pieces (``TxnSlots``: its entries read again when asked for);
    ``as_kafka``: its versions checked as Kafka's reader checks them (``_scan_txn``)."""
    base = _base(path, base_offset)
    try:
        with open_input(path) as f:
            if open_size(f) is None:  # a pipe or device: cannot be read twice, so held (bounded)
                data = memoryview(_read_stream(f, path))
                return _scan_txn(ViewReader(data), base, data, as_kafka)
            return _scan_txn(f, base, path, as_kafka)
    except OSError as e:
        raise cannot_read(path, e) from None
    except KsegError as e:
        raise e.located(file=str(path))


def read_txn_index(path: str | os.PathLike, base_offset: int | None = None) -> IndexFile[AbortedTxn]:
    """Read a .txnindex file (its entries held; ``read_txn_slots`` goes through them in pieces)."""
    slots = read_txn_slots(path, base_offset)
    return IndexFile(slots.base_offset, tuple(slots.rows()), TXN_ENTRY_SIZE, 0, True, slots.partial_bytes)


# Kafka reads a snapshot whole (Files.readAllBytes): at most a Java array's size.
MAX_SNAPSHOT_BYTES = (1 << 31) - 1 - 8


def read_producer_snapshot(path: str | os.PathLike) -> ProducerSnapshot:
    """Read a .snapshot file (its name carries the log end offset, which is not needed to parse it).
    The header and the file's length are checked before the body is read: a count or a length
    the file cannot be is an error, not an allocation."""
    try:
        with open_input(path) as f:
            head = read_full(f, SNAPSHOT_HEADER_SIZE)
            size = open_size(f)
    except OSError as e:
        raise cannot_read(path, e) from None
    try:
        if size is not None:
            _snapshot_header(head, size)
            if size > MAX_SNAPSHOT_BYTES:
                raise IndexFileError("producer snapshot larger than Kafka reads", position=MAX_SNAPSHOT_BYTES,
                                     expected=f"at most {MAX_SNAPSHOT_BYTES} bytes", found=f"{size} bytes")
        return parse_producer_snapshot(_read_limited(path, MAX_SNAPSHOT_BYTES, "producer snapshot"))
    except KsegError as e:
        raise e.located(file=str(path))


def read_snapshot_bytes(path: str | os.PathLike) -> bytes:
    """A .snapshot file's bytes, as Kafka reads them (whole), refused past what Kafka can read."""
    try:
        return _read_limited(path, MAX_SNAPSHOT_BYTES, "producer snapshot")
    except KsegError as e:
        raise e.located(file=str(path))


def read_leader_epoch_checkpoint(path: str | os.PathLike) -> LeaderEpochCheckpoint:
    return _parse_file(path, parse_leader_epoch_checkpoint, LEADER_EPOCH_FILE)


def read_partition_metadata(path: str | os.PathLike) -> PartitionMetadata:
    return _parse_file(path, parse_partition_metadata, PARTITION_METADATA_FILE)


def read_meta_properties(path: str | os.PathLike) -> dict[str, str]:
    return _parse_file(path, parse_meta_properties, META_PROPERTIES)


def read_offset_checkpoint(path: str | os.PathLike) -> OffsetCheckpoint:
    """A log directory's offset checkpoint, read bounded (``parse_offset_checkpoint``)."""
    name = as_path(path).name
    return _parse_file(path, lambda data: parse_offset_checkpoint(data, name), name)


# --------------------------------------------------------------------------- seeking


def _last_before(path: str | os.PathLike, entry: Any, before: Callable[[int, tuple], bool]) -> tuple | None:
    """The fields of the last slot i for which ``before(i, fields)`` holds (None for none, or no
    readable file), ``before`` being true up to some slot and false after it (an index's entries
    are ordered). A local or object-store file is searched by reading one slot per step; an
    archive member (where a step back may mean decompressing again) is read once, front to back,
    in pieces. Memory: one piece."""
    size = entry.size
    try:
        with open_input(path) as f:
            n = open_size(f)
            if not n:
                return None
            slots = n // size
            if isinstance(f, MemberReader):
                return _scan_before(f, entry, before)

            def at(i: int) -> tuple:
                f.seek(i * size)
                return entry.struct.unpack(read_full(f, size))

            lo, hi = 0, slots
            while lo < hi:
                mid = (lo + hi) // 2
                if before(mid, at(mid)):
                    lo = mid + 1
                else:
                    hi = mid
            return at(lo - 1) if lo > 0 else None
    except (OSError, KsegError, struct.error):
        return None


def _scan_before(f: Any, entry: Any, before: Callable[[int, tuple], bool]) -> tuple | None:
    step = READ_PIECE - READ_PIECE % entry.size
    found = None
    i = 0
    while True:
        piece = read_full(f, step)
        whole = len(piece) - len(piece) % entry.size
        for fields in entry.struct.iter_unpack(piece[:whole]):
            if not before(i, fields):
                return found
            found = fields
            i += 1
        if len(piece) < step:
            return found


def offset_index_lookup(path: str | os.PathLike, base_offset: int, target: int) -> OffsetIndexEntry | None:
    """The last .index entry whose offset is at most ``target`` (where a read for ``target``
    may start), found by binary search; None when there is none or no readable file.
    As Kafka's reader, slots from the first i > 0 holding the base offset on are the zero tail."""

    def before(i: int, fields: tuple) -> bool:
        rel = fields[0]
        return (i == 0 or rel != 0) and base_offset + rel <= target

    found = _last_before(path, OFFSET_INDEX_ENTRY, before)
    return None if found is None else OffsetIndexEntry(base_offset + found[0], found[1])


def time_index_lookup(path: str | os.PathLike, base_offset: int, target_ms: int) -> TimeIndexEntry | None:
    """The last .timeindex entry whose timestamp is below ``target_ms``: every record up to its
    offset is older than ``target_ms``. None when there is none or no readable file."""

    def before(i: int, fields: tuple) -> bool:
        ts, rel = fields
        return (i == 0 or rel != 0) and ts < target_ms

    found = _last_before(path, TIME_INDEX_ENTRY, before)
    return None if found is None else TimeIndexEntry(found[0], base_offset + found[1])


def parse_quorum_state(data: bytes | str) -> dict:
    """quorum-state: the KRaft quorum's JSON object (QuorumStateData). Its numbers are Java ints
    and longs: one past a long is an error, as JSON nested past what a parser can follow."""
    if len(data) > MAX_TEXT_BYTES:
        raise DataError("quorum-state is too large for a text companion file", position=MAX_TEXT_BYTES,
                        expected=f"at most {MAX_TEXT_BYTES} bytes", found=f"{len(data)} bytes")
    try:
        state = json.loads(data, parse_int=lambda text: java_int(text, 64))
    except RecursionError:
        raise DataError("quorum-state is not JSON that Kafka reads: nested too deeply") from None
    except ValueError as e:
        raise DataError(f"quorum-state is not JSON: {e}") from None
    if not isinstance(state, dict):
        raise DataError("quorum-state is not a JSON object", expected="an object", found=type(state).__name__)
    return state
