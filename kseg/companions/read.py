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
import os
import re
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, Iterator, NamedTuple, TypeVar

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
from kseg.log.segment import base_offset_of
from kseg.storage import open_input

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
    "read_partition_metadata",
    "read_producer_snapshot",
    "read_time_index",
    "read_txn_index",
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
    """An .index or .timeindex file as Kafka reads it, its entries left in their bytes (a 10 MB
    .index holds 1.3 M of them): ``count`` entries of ``entry_size`` at the start of ``body``;
    the rest as ``IndexFile`` says it. For the dump, which prints them without an object each."""

    kind: str  # "index" | "timeindex"
    base_offset: int
    body: memoryview
    count: int
    entry_size: int
    zero_tail: int
    tail_is_zero: bool
    partial_bytes: int

    @property
    def slots(self) -> int:
        return self.count + self.zero_tail

    def rows(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, int]]:
        """Entries ``start:stop`` as the file's fields, the offset made absolute: (offset, position)
        for an .index, (timestamp, offset) for a .timeindex."""
        stop = self.count if stop is None else min(stop, self.count)
        part = self.body[start * self.entry_size:stop * self.entry_size]
        base = self.base_offset
        if self.kind == "index":
            return ((base + rel, pos) for rel, pos in OFFSET_INDEX_ENTRY.struct.iter_unpack(part))
        return ((ts, base + rel) for ts, rel in TIME_INDEX_ENTRY.struct.iter_unpack(part))

    def index_file(self) -> IndexFile:
        """The file parsed whole (``parse_offset_index`` or ``parse_time_index``)."""
        whole = self.body.obj if isinstance(self.body.obj, (bytes, bytearray)) else self.body.tobytes()
        return (parse_offset_index if self.kind == "index" else parse_time_index)(whole, self.base_offset)


_INDEX_SHAPES = {  # kind -> (entry size, where the relative offset lies in an entry)
    "index": (OFFSET_ENTRY_SIZE, INDEX_LAYOUTS["OffsetIndexEntry"][2]["relative_offset"]),
    "timeindex": (TIME_ENTRY_SIZE, INDEX_LAYOUTS["TimeIndexEntry"][2]["relative_offset"]),
}


_U32 = next(code for code in "IL" if array(code).itemsize == 4)  # 4-byte words, whatever the C types


def index_slots(data: bytes | memoryview, kind: str, base_offset: int) -> IndexSlots:
    """``parse_offset_index`` / ``parse_time_index`` without an object per entry: where the entries
    stop (the first slot i > 0 whose relative offset is 0) is found at C speed. Never raises."""
    size, rel_at = _INDEX_SHAPES[kind]
    body, partial = _split_slots(data, size)
    n = len(body) // size
    stop = None
    if n > 1:
        words = array(_U32)
        words.frombytes(body)
        try:  # a zero test needs no byte order
            stop = words[rel_at // 4::size // 4].index(0, 1)
        except ValueError:
            stop = None
    if stop is None:
        return IndexSlots(kind, base_offset, body, n, size, 0, True, partial)
    tail = body[stop * size:]
    return IndexSlots(kind, base_offset, body, stop, size, len(tail) // size, _is_zero(tail), partial)


def read_index_slots(path: str | os.PathLike, kind: str, base_offset: int | None = None) -> IndexSlots:
    """Read an .index or .timeindex file as ``index_slots``; the base offset from the file name unless given."""
    return index_slots(_read(path), kind, _base(path, base_offset))


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


def parse_producer_snapshot(data: bytes | memoryview) -> ProducerSnapshot:
    """Parse a version-1 producer-state snapshot (spec §5.5).

    Raises ``TruncatedError`` when the bytes end before the header or the counted
    entries, ``IndexFileError`` for a wrong version, a negative count or bytes
    after the entries. A CRC mismatch is not raised: see ``crc_valid``.
    """
    mv = data if isinstance(data, memoryview) else memoryview(data)
    n = len(mv)
    if n < SNAPSHOT_HEADER_SIZE:
        raise TruncatedError(
            "producer snapshot shorter than its header", position=0,
            expected=f"at least {SNAPSHOT_HEADER_SIZE} bytes", found=f"{n} bytes",
        )
    version, crc, count = SNAPSHOT_HEADER.struct.unpack_from(mv, 0)
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


def _java_lines(data: bytes | str, what: str) -> list[str]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{what} is not UTF-8 text", position=e.start) from None
    else:
        text = data
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":  # readLine returns null after a final line end
        lines.pop()
    return lines


def _java_int(text: str, bits: int, line: int, what: str) -> int:
    if not _JAVA_INT.fullmatch(text):
        raise DataError(f"{what} is not an integer", where=f"line {line}", found=text)
    value = int(text)
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not lo <= value <= hi:
        raise DataError(f"{what} out of range", where=f"line {line}", expected=f"{lo}..{hi}", found=value)
    return value


def parse_leader_epoch_checkpoint(data: bytes | str) -> LeaderEpochCheckpoint:
    """Parse a leader-epoch-checkpoint (CheckpointFile: version, count, ``epoch startOffset`` lines).

    Follows Kafka's reader: an empty file has no entries; the version must be 0;
    exactly ``count`` entry lines must follow, each two whitespace-separated integers
    (epoch int32, start offset int64). Errors carry ``where="line N"`` (1-based).
    """
    lines = _java_lines(data, "leader-epoch-checkpoint")
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
                expected="'<leaderEpoch> <startOffset>'", found=lines[n - 1],
            )
        entries.append(EpochEntry(_java_int(parts[0], 32, n, "leader epoch"), _java_int(parts[1], 64, n, "start offset")))
    if len(lines) > count + 2:
        raise DataError(
            "more lines than the entry count says", where=f"line {count + 3}",
            expected=f"{count} entries", found=lines[count + 2],
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
                            expected="'<topic> <partition> <offset>'", found=lines[n - 1])
        if not _TOPIC.fullmatch(parts[0]):
            raise DataError("not a valid topic name", where=f"line {n}", found=parts[0])
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
    for n, line in enumerate(_java_lines(data, "meta.properties"), 1):
        text = line.strip()
        if not text or text[0] in "#!":
            continue
        m = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)", text)
        if m is None:
            raise DataError("malformed line", where=f"line {n}", expected="'key=value'", found=line)
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
    lines = _java_lines(data, "partition.metadata")
    fields = []
    for n, key in ((1, "version"), (2, "topic_id")):
        if len(lines) < n:
            raise DataError(f"missing {key} line", where=f"line {n}", expected=f"'{key}: ...'", found="end of file")
        m = _META_LINE.fullmatch(lines[n - 1])
        if m is None or m.group(1) != key:
            raise DataError("malformed line", where=f"line {n}", expected=f"'{key}: ...'", found=lines[n - 1])
        fields.append(m.group(2))
    if len(lines) > 2:
        raise DataError("unexpected extra line", where="line 3", expected="end of file", found=lines[2])
    version = _java_int(fields[0], 32, 1, "version")
    if version < 0:
        raise DataError("negative partition metadata version", where="line 1", expected=">= 0", found=version)
    topic_id = fields[1]
    if not _B64URL.fullmatch(topic_id):
        raise DataError("topic id is not a base64url UUID", where="line 2", expected="22 characters [A-Za-z0-9_-]",
                        found=topic_id)
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
        raise InputError(f"cannot read: {e.strerror or e}", file=str(path)) from None


def _base(path: str | os.PathLike, base_offset: int | None) -> int:
    if base_offset is not None:
        return base_offset
    found = base_offset_of(path)
    if found is None:
        raise InputError("cannot tell the segment base offset from the file name", file=str(path),
                         expected="<20 digits>.<suffix>", found=Path(path).name)
    return found


def _parse_file(path: str | os.PathLike, parse: Callable[[bytes], T]) -> T:
    """Read a file and parse its bytes; a parse error names the file."""
    data = _read(path)
    try:
        return parse(data)
    except KsegError as e:
        raise e.located(file=str(path))


def read_offset_index(path: str | os.PathLike, base_offset: int | None = None) -> IndexFile[OffsetIndexEntry]:
    """Read an .index file; the base offset comes from the file name unless given."""
    return parse_offset_index(_read(path), _base(path, base_offset))


def read_time_index(path: str | os.PathLike, base_offset: int | None = None) -> IndexFile[TimeIndexEntry]:
    """Read a .timeindex file; the base offset comes from the file name unless given."""
    return parse_time_index(_read(path), _base(path, base_offset))


def read_txn_index(path: str | os.PathLike, base_offset: int | None = None) -> IndexFile[AbortedTxn]:
    """Read a .txnindex file; the base offset comes from the file name unless given."""
    base = _base(path, base_offset)
    return _parse_file(path, lambda data: parse_txn_index(data, base))


def read_producer_snapshot(path: str | os.PathLike) -> ProducerSnapshot:
    """Read a .snapshot file (its name carries the log end offset, which is not needed to parse it)."""
    return _parse_file(path, parse_producer_snapshot)


def read_leader_epoch_checkpoint(path: str | os.PathLike) -> LeaderEpochCheckpoint:
    return _parse_file(path, parse_leader_epoch_checkpoint)


def read_partition_metadata(path: str | os.PathLike) -> PartitionMetadata:
    return _parse_file(path, parse_partition_metadata)



# --------------------------------------------------------------------------- seeking


def _last_before(data: bytes, size: int, before: Callable[[int], bool]) -> int:
    """Binary search: the last slot i for which ``before(i)`` holds (-1 for none), ``before``
    being true up to some slot and false after it (an index's entries are ordered)."""
    lo, hi = 0, len(data) // size
    while lo < hi:
        mid = (lo + hi) // 2
        if before(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


def _read_or_none(path: str | os.PathLike) -> bytes | None:
    try:
        with open_input(path) as f:
            return f.read()
    except (OSError, InputError):
        return None


def offset_index_lookup(path: str | os.PathLike, base_offset: int, target: int) -> OffsetIndexEntry | None:
    """The last .index entry whose offset is at most ``target`` (where a read for ``target``
    may start), found by binary search; None when there is none or no readable file.
    As Kafka's reader, slots from the first i > 0 holding the base offset on are the zero tail."""
    data = _read_or_none(path)
    if not data:
        return None
    unpack = OFFSET_INDEX_ENTRY.struct.unpack_from

    def before(i: int) -> bool:
        rel, _ = unpack(data, i * OFFSET_ENTRY_SIZE)
        return (i == 0 or rel != 0) and base_offset + rel <= target

    i = _last_before(data, OFFSET_ENTRY_SIZE, before)
    if i < 0:
        return None
    rel, pos = unpack(data, i * OFFSET_ENTRY_SIZE)
    return OffsetIndexEntry(base_offset + rel, pos)


def time_index_lookup(path: str | os.PathLike, base_offset: int, target_ms: int) -> TimeIndexEntry | None:
    """The last .timeindex entry whose timestamp is below ``target_ms``: every record up to its
    offset is older than ``target_ms``. None when there is none or no readable file."""
    data = _read_or_none(path)
    if not data:
        return None
    unpack = TIME_INDEX_ENTRY.struct.unpack_from

    def before(i: int) -> bool:
        ts, rel = unpack(data, i * TIME_ENTRY_SIZE)
        return (i == 0 or rel != 0) and ts < target_ms

    i = _last_before(data, TIME_ENTRY_SIZE, before)
    if i < 0:
        return None
    ts, rel = unpack(data, i * TIME_ENTRY_SIZE)
    return TimeIndexEntry(ts, base_offset + rel)
