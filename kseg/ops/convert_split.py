"""The conversions (up-convert, down-convert, recompress, rebase) as an operation split into
units (``kseg.ops.executors``): plan lists one unit per partition of a log directory (one for a
segment or a partition folder), run converts a partition into the output's stage
(``kseg.ops.staging``), merge adds up the partitions in plan order, decides the partitions left
out (``--skip-unconvertible``) or the first error, writes the log directory's own files and
publishes the output once, whichever executor ran the units."""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kseg.codecs.choice import choose
from kseg.decoders import RAFT_TOPICS
from kseg.defaults import DEFAULT_BATCH_BYTES, DEFAULT_BATCH_RECORDS
from kseg.errors import InputError, UnconvertibleError
from kseg.log.listing import LOG_SUFFIX
from kseg.log.segment import base_offset_of, log_dir_partitions, partition_segments, segment_file_name
from kseg.ops import convert
from kseg.ops.executors import Operation, execute, weight_of
from kseg.ops.jobs import CarriedTxns, JobResult, Transform, WriteOptions, progress_printer, run_partition, run_segment
from kseg.ops.kafka07 import up_convert_kafka07
from kseg.ops.logdir import (RAFT_LOG_AS_IT_IS, PartitionEnds, checkpointed_ends, finish_log_dir, finish_partition,
                             refuse_raft_log)
from kseg.ops.skips import refuse_for_one_partition, skipped_or_raise
from kseg.ops.staging import Stage, open_stage, publishing, watched, write_into
from kseg.storage import as_path

CONVERSIONS = ("up-convert", "down-convert", "recompress", "rebase")


@dataclass(frozen=True)
class ConvertJob:
    """A conversion as plain values (every process rebuilds its transform from them): the
    command, its options, the output and, for ``recompress``, the topics it converts."""

    command: str
    output: str
    write: WriteOptions = WriteOptions()
    to_magic: int = 2
    codec: str = "keep"
    level: int | None = None
    log_append_time: int | None = None
    partition_leader_epoch: int = -1
    batch_records: int = DEFAULT_BATCH_RECORDS
    batch_bytes: int = DEFAULT_BATCH_BYTES
    base_offset: int = 0  # rebase's, or the first offset of a kafka07 input
    topics: frozenset[str] = frozenset()  # recompress: only these (empty: all); others copied
    kafka07: bool = False  # up-convert of the pre-0.8 format

    @property
    def keeps_transactions(self) -> bool:
        """The rewrite keeps v2 batches' transactions (and so each segment's ``.txnindex``);
        below v2 there are none."""
        return self.command in ("up-convert", "recompress", "rebase")

    def converts(self, topic: str | None) -> bool:
        if topic in RAFT_TOPICS:
            return False  # copied as it is (RAFT_LOG_AS_IT_IS)
        return self.command != "recompress" or not self.topics or topic in self.topics

    def make_transform(self, segs: list[Path]) -> tuple[Transform, int]:
        """The partition's transform and the shift of its segment names (rebase's)."""
        limit = self.write.limit
        if self.command == "rebase":
            return convert.rebase_maker(self.base_offset, limit)(segs)
        if self.command == "up-convert":
            u = self.up_options()
            return (lambda b, s: convert.up_convert(b, u, s)), 0
        if self.command == "down-convert":
            d = convert.DownOptions(to_magic=self.to_magic, choice=choose(self.codec, self.level), limit=limit)
            return (lambda b, s: convert.down_convert(b, d, s)), 0
        r = convert.RecompressOptions(choice=choose(self.codec, self.level, keep_allowed=False),
                                      batch_records=self.batch_records, limit=limit)
        return (lambda b, s: convert.recompress(b, r, s)), 0

    def up_options(self) -> convert.UpOptions:
        return convert.UpOptions(to_magic=self.to_magic, choice=choose(self.codec, self.level),
                         log_append_time=self.log_append_time, partition_leader_epoch=self.partition_leader_epoch,
                         batch_records=self.batch_records, batch_bytes=self.batch_bytes, limit=self.write.limit)


@dataclass(frozen=True)
class ConvertUnit:
    """One partition of a log directory (``name`` its folder), or the whole input (``name`` "")."""

    src: str
    segments: tuple[str, ...]
    name: str
    convert: bool
    stage: Stage
    weight: int = 0


@dataclass
class ConvertPartial:
    src: str
    name: str
    result: JobResult
    seen: dict = field(default_factory=dict)
    ends: PartitionEnds | None = None
    unconvertible: UnconvertibleError | None = None


def convert_path(src: Any, job: ConvertJob, jobs: int = 1) -> JobResult:
    """A conversion of one segment, one partition folder or a whole log directory (each
    partition a unit, on ``jobs`` processes). ``job.command`` makes a folder output drop-in
    for a broker: the partition and log-directory files written beside the segments
    (``kseg.ops.logdir``). An input that changes, goes away or is renamed during the run is an
    InputChangedError (``kseg.log.identity``): nothing is published."""
    show = progress_printer()
    result = execute(CONVERSIONS_SPLIT[job.command], src, job, jobs,
                     (lambda u: show(u.name or u.src)) if show else None)
    if show:
        show("")
    return result


def plan(src: Any, job: ConvertJob) -> list[ConvertUnit]:
    """One unit per partition of a log directory, else one for the whole input."""
    src = as_path(src) if isinstance(src, str) else src
    if not src.exists():
        raise InputError("no such file or directory", file=str(src))
    output = as_path(job.output)
    whole = job.kafka07 or src.is_file() or bool(partition_segments(src))
    if not job.kafka07:
        refuse_raft_log(src)
    if job.topics & set(RAFT_TOPICS):
        raise InputError(f"--topics: {RAFT_LOG_AS_IT_IS}", file=str(src))
    if whole:
        refuse_for_one_partition(job.write.skip_unconvertible, src)
        stage = open_stage([src], output, force=job.write.force, folder=not (job.kafka07 or src.is_file()))
        return [ConvertUnit(str(src), (), "", True, stage, weight_of([src]))]
    parts = log_dir_partitions(src)
    if not parts:
        raise InputError("no segment files found (expected .log files or <topic>-<n> folders)", file=str(src))
    stage = open_stage([src], output, force=job.write.force)
    return [ConvertUnit(str(src), tuple(str(p) for p in part.segment_paths), part.path.name, job.converts(part.topic),
                        stage, weight_of(part.segment_paths)) for part in parts]


def run(unit: ConvertUnit, job: ConvertJob) -> ConvertPartial:
    """One unit written into the output's stage (``kseg.ops.staging``), with what it read."""
    src = as_path(unit.src)
    try:
        (result, ends), seen = watched(lambda: write_into(unit.stage, unit.name, lambda out: _write(unit, job, src, out)),
                                       src)
    except UnconvertibleError as e:
        if not unit.name:
            raise
        if not unit.stage.remote:
            shutil.rmtree(Path(unit.stage.where) / unit.name, ignore_errors=True)
        return ConvertPartial(unit.src, unit.name, JobResult(), unconvertible=e)
    return ConvertPartial(unit.src, unit.name, result, seen, ends)


def _write(unit: ConvertUnit, job: ConvertJob, src: Any, out: Path) -> tuple[JobResult, PartitionEnds | None]:
    if job.kafka07:
        return up_convert_kafka07(src, out, job.up_options(), job.base_offset, job.write), None
    result = JobResult()
    if not unit.name and src.is_file():
        transform, shift = job.make_transform([src])
        base = (base_offset_of(src) or 0) + shift
        dst = out if out.suffix == LOG_SUFFIX else out / segment_file_name(base)
        made = out.suffix != LOG_SUFFIX and not out.exists()
        if out.suffix != LOG_SUFFIX:
            out.mkdir(parents=True, exist_ok=True)
        try:
            result.damaged_files.on_damage = job.write.on_damage
            run_segment(src, dst, base, transform, result.summary, job.write,
                        txn_shift=shift if job.keeps_transactions else None,
                        txns=CarriedTxns([src], job.write, result.damaged_files))
        except BaseException:
            if made:  # nothing written: no output folder left behind either
                shutil.rmtree(out, ignore_errors=True)
            raise
        result.segments.append(dst)
        return result, None
    segs = [as_path(s) for s in unit.segments] if unit.name else partition_segments(src)
    run_partition(segs, out, job.make_transform, result, job.write, copy=not unit.convert, txns=job.keeps_transactions)
    result.damaged_files.on_damage = job.write.on_damage
    return result, finish_partition(src / unit.name if unit.name else src, out, job.command, result.damaged_files,
                                    copied=not unit.convert)


def merge(partials: Iterable[ConvertPartial], job: ConvertJob) -> JobResult:
    """The partitions in plan order: the totals, the partitions left out (or the first one's
    error), the log directory's own files, then the output published once."""
    result = JobResult()
    result.damaged_files.on_damage = job.write.on_damage
    seen: list[dict] = []
    named: list[tuple[Path, PartitionEnds | None]] = []
    source = ""
    with publishing(job.output, seen, force=job.write.force) as folder:
        for p in partials:
            if p.unconvertible is not None:
                result.skipped.append(skipped_or_raise(p.name, p.unconvertible, job.write.skip_unconvertible))
                continue
            result.add(p.result)
            seen.append(p.seen)
            source = p.src
            if p.name:
                named.append((Path(folder or job.output) / p.name, p.ends))
        if named and folder is not None:  # a log directory: drop-in for a broker
            finish_log_dir(as_path(source), folder, job.command, checkpointed_ends(named), result.damaged_files)
    return result


OPERATION = Operation("convert", plan, run, merge)  # the command is the job's: one Operation per command below
CONVERSIONS_SPLIT: dict[str, Operation] = {c: dataclasses.replace(OPERATION, name=c) for c in CONVERSIONS}
