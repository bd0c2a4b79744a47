"""Running a transform over files: INPUT (a segment, a partition folder or a log
directory) to the matching OUTPUT, segment by segment, with indexes, safely.

A transform is ``(batches, summary) -> entry bytes``; it never sees a file.
Outputs are built under a temporary name and renamed when complete.
"""

from __future__ import annotations

import shutil
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kseg.companions.build import build_indexes
from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.errors import InputError, KsegError, UnconvertibleError
from kseg.facts.log_entry import LOG_OVERHEAD
from kseg.facts.message_v0v1 import V1_TIMESTAMP_POSITION
from kseg.facts.record_batch_v2 import LAST_OFFSET_DELTA_POSITION, MAX_TIMESTAMP_POSITION
from kseg.formats.attributes import NO_TIMESTAMP
from kseg.layouts import LOG_ENTRY_PREFIX
from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.log.atomic import AtomicDir, AtomicFile, check_output, commit_together
from kseg.log import identity
from kseg.log.checks import STOP, DamagePolicy, checked_batches, policed
from kseg.log.segment import (
    base_offset_of,
    companion_path,
    log_dir_partitions,
    partition_segments,
    segment_file_name,
)
from kseg.model import Batch
from kseg.ops.convert import Summary
from kseg.ops.logdir import finish_log_dir, finish_partition
from kseg.ops.skips import Skipped, refuse_for_one_partition, skipped_line, skipped_or_raise

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

    def add(self, other: "JobResult") -> None:
        self.summary.add(other.summary)
        self.segments.extend(other.segments)
        self.carried.add(other.carried)
        self.carried_partitions += other.carried_partitions
        self.skipped.extend(other.skipped)

    def line(self) -> str:
        """What the job did: the conversion's summary, then what was only carried over."""
        text = self.summary.line()
        if self.carried_partitions:
            text += (f"; {self.carried_partitions} partition(s) of other topics copied as they are "
                     f"({self.carried.batches_out} batches, {self.carried.bytes_out} bytes)")
            if self.carried.damage:
                text += f"; in those: {self.carried.damage.line()}"
        if self.skipped:
            text += f"; {skipped_line(self.skipped)}"
        return text

    @property
    def damaged(self) -> bool:
        """Damaged batches were skipped or carried."""
        return bool(self.summary.damage or self.carried.damage)

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
            if self.options.index:
                index, timeindex = build_indexes(self.appends, self.base_offset, self.options.index_interval_bytes)
                for suffix, data in ((".index", index), (".timeindex", timeindex)):
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


def _run_segment(src: Path, dst: Path, base_offset: int, transform: Transform, summary: Summary,
                 options: WriteOptions) -> None:
    """One segment through the transform, each batch checked as it is read (``--on-damage``):
    the transform sees only sound batches; a damaged one stops the run, is left out, or is
    carried (``transform.carry`` when the transform has one, else its bytes as they are)."""
    sink = SegmentSink(dst, base_offset, options)
    carry_bytes = getattr(transform, "carry", None) or _raw

    def carry(b: Batch) -> bytes:
        raw = carry_bytes(b)
        _count_damaged(summary, b)
        summary.batches_out += 1
        summary.bytes_out += len(raw)
        return raw

    try:
        for raw in policed(checked_batches(src, options.limit), options.damage_policy, str(src), summary.damage,
                           lambda good: transform(good, summary), carry, lambda b: _count_damaged(summary, b)):
            sink.write(raw)
        identity.require_unchanged([src])  # the bytes written are those of the file as it still is
    except KsegError as e:
        sink.abort()
        raise e.located(file=str(src))
    except BaseException:
        sink.abort()
        raise
    sink.commit()


def run_job(
    inputs: list[Path],
    output: Path,
    make_transform: Callable[[list[Path]], tuple[Transform, int]],
    options: WriteOptions,
    *,
    select: Callable[[str | None], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    command: str | None = None,
) -> JobResult:
    """Apply a transform to one segment, one partition folder or a whole log directory.

    ``make_transform(segment_paths)`` returns the transform for a partition and the
    shift of its segment names (non-zero only for rebase). ``select(topic)`` says
    whether a log directory's partition is transformed or copied as it is. ``command``
    (up-convert, down-convert, recompress, rebase) makes a folder output drop-in for a
    broker: the partition and log-directory files written beside the segments (``kseg.ops.logdir``).
    An input that changes, goes away or is renamed during the run is an InputChangedError
    (``kseg.log.identity``): nothing is published.
    """
    with identity.watching():
        return _run_job(inputs, output, make_transform, options, select=select, progress=progress, command=command)


def _run_job(inputs: list[Path], output: Path, make_transform: Callable[[list[Path]], tuple[Transform, int]],
             options: WriteOptions, *, select: Callable[[str | None], bool] | None,
             progress: Callable[[str], None] | None, command: str | None) -> JobResult:
    if len(inputs) != 1:
        raise InputError("give one INPUT (a .log file, a partition folder or a log directory)")
    src = inputs[0]
    if not src.exists():
        raise InputError("no such file or directory", file=str(src))
    segs = [] if src.is_file() else partition_segments(src)
    if src.is_file() or segs:
        refuse_for_one_partition(options.skip_unconvertible, src)
    check_output(inputs, output, force=options.force)
    result = JobResult()
    if progress is None:
        progress = progress_printer()
    if src.is_file():
        transform, shift = make_transform([src])
        base = (base_offset_of(src) or 0) + shift
        dst = output if output.suffix == ".log" else output / segment_file_name(base)
        made = output.suffix != ".log" and not output.exists()
        if output.suffix != ".log":
            output.mkdir(parents=True, exist_ok=True)
        try:
            _run_segment(src, dst, base, transform, result.summary, options)
        except BaseException:
            if made:  # nothing written: no output folder left behind either
                shutil.rmtree(output, ignore_errors=True)
            raise
        result.segments.append(dst)
        return result
    with AtomicDir(output) as tmp_root:
        if segs:
            run_partition(segs, tmp_root.tmp, make_transform, result, options, copy=False, progress=progress)
            if command is not None:
                finish_partition(src, tmp_root.tmp, command)
        else:
            parts = log_dir_partitions(src)
            if not parts:
                raise InputError("no segment files found (expected .log files or <topic>-<n> folders)",
                                 file=str(src))
            for part in parts:
                keep = select is None or select(part.topic)
                one = JobResult()  # added to the result only when the partition is written whole
                try:
                    run_partition(part.segment_paths, tmp_root.tmp / part.path.name, make_transform, one,
                                  options, copy=not keep, progress=progress)
                except UnconvertibleError as e:
                    result.skipped.append(skipped_or_raise(part.path.name, e, options.skip_unconvertible))
                    shutil.rmtree(tmp_root.tmp / part.path.name, ignore_errors=True)
                    continue
                result.add(one)
            if command is not None:
                finish_log_dir(src, tmp_root.tmp, command)
        identity.require_unchanged()  # every segment read, as it still is: else nothing is published
    if progress:
        progress("")
    result.segments = [output / p.relative_to(tmp_root.tmp) for p in result.segments]
    return result


def run_partition(segs: list[Path], out_dir: Path, make_transform, result: JobResult, options: WriteOptions,
                   *, copy: bool, progress: Callable[[str], None] | None = None) -> None:
    """One partition's segments through the transform into ``out_dir`` (``copy``: as they are,
    counted as carried), adding to ``result``: the unit ``run_job`` and a Spark task share."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if copy:
        transform: Transform = _copy
        shift = 0
        summary = result.carried  # not the conversion's: the counts cover the selected topics only
        result.carried_partitions += 1
    else:
        transform, shift = make_transform(segs)
        summary = result.summary
    for seg in segs:
        if progress:
            progress(f"{len(result.segments) + 1}: {seg}")
        base = (base_offset_of(seg) or 0) + shift
        dst = out_dir / segment_file_name(base)
        _run_segment(seg, dst, base, transform, summary, options)
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


__all__ = ["JobResult", "SegmentSink", "WriteOptions", "run_job", "KsegError"]
