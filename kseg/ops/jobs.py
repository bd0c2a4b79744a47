"""Running a transform over one partition's segments into an output folder, segment by
segment, with indexes, safely (the conversions' unit of work, ``kseg.ops.convert_split``).

A transform is ``(batches, summary) -> entry bytes``; it never sees a file.
Each segment is built under a temporary name and renamed when complete.
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kseg.companions.build import TxnEntry, build_indexes, build_txn_index
from kseg.companions.check import ControlBatch, check_txn_index, control_type_of
from kseg.companions.producer_state import TxnState
from kseg.companions.read import read_txn_index
from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.errors import IndexFileError, KsegError
from kseg.findings import ERROR
from kseg.facts.log_entry import LOG_OVERHEAD
from kseg.facts.message_v0v1 import V1_TIMESTAMP_POSITION
from kseg.facts.record_batch_v2 import LAST_OFFSET_DELTA_POSITION, MAX_TIMESTAMP_POSITION
from kseg.formats.attributes import NO_TIMESTAMP
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.log.atomic import AtomicFile, commit_together
from kseg.log import identity
from kseg.log.checks import CARRY, SKIP, STOP, DamagePolicy, OffsetOrder, batch_damage, checked_batches, policed
from kseg.log.listing import INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from kseg.log.segment import Segment, base_offset_of, companion_path, segment_file_name
from kseg.model import Batch
from kseg.ops.convert import Summary
from kseg.ops.logdir import REBUILT, DamagedFiles
from kseg.ops.skips import Skipped, skipped_line
from kseg.storage import copy_times

Transform = Callable[[Iterable[Batch], Summary], Iterator[bytes]]
_PREFIX = LOG_ENTRY_PREFIX.struct
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")



@dataclass(frozen=True)
class WriteOptions:
    index: bool = True
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    force: bool = False
    on_damage: str = STOP  # --on-damage: stop, skip or carry (kseg.log.checks)
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES  # decompression bound of the damage checks
    skip_unconvertible: bool = False  # --skip-unconvertible (kseg.ops.skips)

    @property
    def damage_policy(self) -> DamagePolicy:
        return DamagePolicy(self.on_damage, self.limit)


@dataclass
class JobResult:
    summary: Summary = field(default_factory=Summary)  # the partitions converted (--topics: those topics)
    segments: list[Path] = field(default_factory=list)
    carried: Summary = field(default_factory=Summary)  # partitions of other topics, copied as they are
    carried_partitions: int = 0
    skipped: list[Skipped] = field(default_factory=list)  # partitions left out (--skip-unconvertible)
    damaged_files: DamagedFiles = field(default_factory=DamagedFiles)  # files carried over that failed their checks

    def add(self, other: "JobResult") -> None:
        self.summary.add(other.summary)
        self.segments.extend(other.segments)
        self.carried.add(other.carried)
        self.carried_partitions += other.carried_partitions
        self.skipped.extend(other.skipped)
        self.damaged_files.add(other.damaged_files)

    def line(self) -> str:
        """What the job did: the conversion's summary, then what was only carried over."""
        text = self.summary.line()
        if self.carried_partitions:
            text += (f"; {self.carried_partitions} partition(s) copied as they are (other topics, a KRaft log) "
                     f"({self.carried.batches_out} batches, {self.carried.bytes_out} bytes)")
            for also in (self.carried.damage.line(), self.carried.left_out.line()):
                if also:
                    text += f"; in those: {also}"
        if self.skipped:
            text += f"; {skipped_line(self.skipped)}"
        if self.damaged_files:
            text += f"; {self.damaged_files.line()}"
        return text

    @property
    def damaged(self) -> bool:
        """Damaged batches (or files carried over) were skipped or carried."""
        return bool(self.summary.damage or self.carried.damage or self.damaged_files)

    @property
    def incomplete(self) -> bool:
        """Damaged batches or unconvertible partitions were left out or carried (the command exits 1)."""
        return self.damaged or bool(self.skipped)


def entry_facts(raw: bytes, position: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(position, size, last offset, max timestamp, its offset) of each entry in ``raw``,
    read from the headers alone: what LogSegment.append is told (kseg.index_build.Append)."""
    at = 0
    end = len(raw)
    while at < end:
        offset, size, _, magic = _PREFIX.unpack_from(raw, at)
        total = size + LOG_OVERHEAD
        if magic >= 2:
            last = offset + _I32.unpack_from(raw, at + LAST_OFFSET_DELTA_POSITION)[0]
            max_ts = _I64.unpack_from(raw, at + MAX_TIMESTAMP_POSITION)[0]
        else:
            last = offset
            max_ts = _I64.unpack_from(raw, at + V1_TIMESTAMP_POSITION)[0] if magic == 1 else NO_TIMESTAMP
        yield position + at, total, last, max_ts, last
        at += total


class SegmentSink:
    """Collects one output segment's entries and writes it with its indexes."""

    def __init__(self, log_path: Path, base_offset: int, options: WriteOptions):
        self.log_path = log_path
        self.base_offset = base_offset
        self.options = options
        self.file = AtomicFile(log_path)
        self.appends: list[tuple[int, int, int, int, int]] = []  # what the indexes need, per entry
        self.position = 0
        self.companions: dict[str, bytes] = {}  # other files written with the segment, by suffix

    def write(self, raw: bytes) -> None:
        """Append one or more complete entries."""
        if self.options.index:
            self.appends.extend(entry_facts(raw, self.position))
        self.file.write(raw)
        self.position += len(raw)

    def commit(self) -> None:
        """The segment and its indexes, all or none (the segment renamed last)."""
        files = [self.file]
        try:
            written = dict(self.companions)
            if self.options.index:
                index, timeindex = build_indexes(self.appends, self.base_offset, self.options.index_interval_bytes)
                written.update({INDEX_SUFFIX: index, TIME_INDEX_SUFFIX: timeindex})
            for suffix, data in written.items():
                f = AtomicFile(companion_path(self.log_path, suffix))
                files.append(f)
                f.write(data)
        except BaseException:
            for f in files:
                f.abort()
            raise
        commit_together(files)

    def abort(self) -> None:
        self.file.abort()


def run_segment(src: Path, dst: Path, base_offset: int, transform: Transform, summary: Summary,
                options: WriteOptions, order: OffsetOrder | None = None, txn_shift: int | None = None,
                txns: CarriedTxns | None = None) -> None:
    """One segment through the transform, each batch checked as it is read (``--on-damage``;
    ``order``: the partition's offsets so far, when the segment is one of several): the
    transform sees only sound batches; a damaged one stops the run, is left out, or is carried
    (``transform.carry`` when the transform has one, else its bytes as they are). With
    ``txn_shift`` (the rewrite keeps transactions: its offsets move by that much), the
    segment's aborted transactions go with it (``carried_txn_index``; ``txns``: the partition
    they are read again from when that file is damaged)."""
    sink = SegmentSink(dst, base_offset, options)
    # The segment's ABORT markers, noted as its batches are read, for its .txnindex to be checked against
    markers: list[ControlBatch] | None = (
        [] if txn_shift is not None and companion_path(src, TXN_INDEX_SUFFIX).exists() else None)
    carry_bytes = getattr(transform, "carry", None) or _raw

    def carry(b: Batch) -> bytes:
        raw = carry_bytes(b)
        _count_damaged(summary, b)
        summary.batches_out += 1
        summary.bytes_out += len(raw)
        return raw

    try:
        checked = checked_batches(src, options.limit, summary.left_out, order or OffsetOrder())
        for raw in policed(checked if markers is None else noting_markers(checked, markers), options.damage_policy,
                           str(src), summary.damage, lambda good: transform(good, summary), carry,
                           lambda b: _count_damaged(summary, b)):
            sink.write(raw)
        if markers is not None:
            assert txn_shift is not None and txns is not None, "a rewrite that keeps transactions says where from"
            sink.companions[TXN_INDEX_SUFFIX] = carried_txn_index(src, txn_shift, txns, markers)
        identity.require_unchanged([src])  # the bytes written are those of the file as it still is
    except KsegError as e:
        sink.abort()
        raise e.located(file=str(src))
    except BaseException:
        sink.abort()
        raise
    sink.commit()
    # The input's time kept, as Kafka's cleaner keeps a cleaned segment's: where the batches carry
    # no timestamps (magic 0) a broker's time-based retention reads the file's modification time.
    copy_times(src, dst)


@dataclass
class CarriedTxns:
    """Where a rewrite's ``.txnindex`` files come from when one is damaged: ``--on-damage``
    (stop; skip writes it anew from the ABORT markers of the partition's segments, as the
    broker's recovery does; carry copies it as it is), and what was done (``damaged``)."""

    segments: list[Path]  # the partition's input segments, in offset order
    options: WriteOptions
    damaged: DamagedFiles = field(default_factory=DamagedFiles)
    # the segments read so far for from_markers, each with its entries, and the state after them:
    # a partition with several damaged .txnindex files is read once, up to the last of them
    _read: dict[Path, list[TxnEntry]] = field(default_factory=dict)
    _state: TxnState = field(default_factory=TxnState)

    def from_markers(self, upto: Path) -> list[TxnEntry]:
        """The aborted transactions whose ABORT marker lies in ``upto``, each from the first
        offset its producer's transaction had in the segments up to it (damaged batches left out)."""
        for seg in self.segments[len(self._read):]:
            if upto in self._read:
                break
            entries = []
            for b in Segment(seg).batches():
                if not batch_damage(b, str(seg), self.options.limit):
                    entry = self._state.on_batch(b, self.options.limit)
                    if entry is not None:
                        entries.append(entry)
            self._read[seg] = entries
        return self._read.get(upto, [])


def noting_markers(checked: Iterable[tuple[Batch, list]], markers: list[ControlBatch]) -> Iterator[tuple[Batch, list]]:
    """The checked batches as they come, the sound control batches noted in ``markers``."""
    for b, findings in checked:
        if b.is_control and not findings:
            markers.append((b.last_offset, control_type_of(b)))
        yield b, findings


def carried_txn_index(src: Path, shift: int, txns: CarriedTxns, markers: list[ControlBatch]) -> bytes:
    """The ``.txnindex`` beside ``src`` for its rewrite, each offset moved by ``shift``. A broker
    reads a segment's aborted transactions from that file alone (it rebuilds it only when it
    recovers the segment), so a rewrite that keeps the transactions takes it along: without it,
    read_committed consumers would be served the aborted records. One that fails
    ``kseg index --check``'s checks against the segment's ``markers`` (its sound control batches)
    goes as ``txns`` says; a partial entry at its end is left out, as Kafka's reader leaves it."""
    path = companion_path(src, TXN_INDEX_SUFFIX)
    errors = [f for f in check_txn_index(path, markers, base_offset_of(src)) if f.severity == ERROR]
    if not errors:
        return build_txn_index((e.version, e.producer_id, e.first_offset + shift, e.last_offset + shift,
                                e.last_stable_offset + shift) for e in read_txn_index(path).entries)
    e = errors[0]
    policy = txns.options.on_damage
    if policy == STOP:
        raise IndexFileError(f"{e.message} (the segment's aborted transactions, which the rewrite carries; "
                             "use --on-damage skip to write it anew from the ABORT markers or carry to copy it "
                             "as it is)", file=e.file, position=e.position, expected=e.expected, found=e.found)
    txns.damaged.done.append((REBUILT if policy == SKIP else CARRY, str(path), e.line(under=e.file)))
    if policy == CARRY:
        return path.read_bytes()
    return build_txn_index((pid, first + shift, last + shift, lso + shift)
                           for pid, first, last, lso in txns.from_markers(src))


def run_partition(segs: list[Path], out_dir: Path, make_transform: Callable[[list[Path]], tuple[Transform, int]],
                  result: JobResult, options: WriteOptions, *, copy: bool, txns: bool = False) -> None:
    """One partition's segments through the transform into ``out_dir`` (``copy``: as they are,
    counted as carried), adding to ``result``: a conversion's unit of work. ``txns``: the
    rewrite keeps transactions (each segment's ``.txnindex`` goes with it)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if copy:
        transform: Transform = _copy
        shift = 0
        summary = result.carried  # not the conversion's: the counts cover the selected topics only
        result.carried_partitions += 1
    else:
        transform, shift = make_transform(segs)
        summary = result.summary
    order = OffsetOrder()  # offsets go up across the partition's segments
    result.damaged_files.on_damage = options.on_damage
    carried = CarriedTxns(segs, options, result.damaged_files)
    for seg in segs:
        base = (base_offset_of(seg) or 0) + shift
        dst = out_dir / segment_file_name(base)
        run_segment(seg, dst, base, transform, summary, options, order, shift if txns or copy else None, carried)
        result.segments.append(dst)


def _raw(b: Batch) -> bytes:
    return bytes(b.raw)


def _count_damaged(summary: Summary, b: Batch) -> None:
    summary.batches_in += 1
    summary.bytes_in += b.size


def _copy(batches: Iterable[Batch], s: Summary) -> Iterator[bytes]:
    for b in batches:
        s.batches_in += 1
        s.bytes_in += b.size
        s.batches_out += 1
        s.copied += 1
        s.bytes_out += b.size
        yield bytes(b.raw)


def progress_printer() -> Callable[[str], None] | None:
    """One overwritten status line on stderr when it is a terminal (nothing otherwise)."""
    if not sys.stderr.isatty():
        return None

    def show(text: str) -> None:
        sys.stderr.write(f"\r\033[K{text[-150:]}")
        sys.stderr.flush()

    return show


__all__ = ["JobResult", "SegmentSink", "WriteOptions", "KsegError"]
