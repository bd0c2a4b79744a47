"""Compaction as an operation split into units (``kseg.ops.executors``): plan lists one unit per
partition of a log directory (one for a partition folder or the segment files of one partition),
run cleans a partition into the output's stage (``kseg.ops.staging``; a dry run writes nothing),
merge adds up the partitions in plan order, writes the log directory's own files and publishes
the output once, whichever executor ran the units."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kseg.decoders import RAFT_TOPICS
from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.errors import InputError
from kseg.log import identity
from kseg.log.checks import DamageTally
from kseg.log.listing import LOG_SUFFIX
from kseg.log.segment import LeftOut, base_offset_of, log_dir_partitions, partition_segments
from kseg.ops.compact import CompactOptions, CompactResult, CompactStats, compact_group, input_segments
from kseg.ops.executors import Operation, execute, weight_of
from kseg.ops.logdir import (RAFT_LOG_AS_IT_IS, DamagedFiles, PartitionEnds, checkpointed_ends, finish_log_dir,
                             finish_partition, refuse_raft_log)
from kseg.ops.staging import Stage, open_stage, publishing, watched, write_into
from kseg.storage import as_path


@dataclass(frozen=True)
class CompactJob:
    options: CompactOptions
    output: str | None  # None: a dry run
    force: bool = False
    topics: frozenset[str] | None = None  # a log directory's topics to compact (others copied); None: all
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES

    @property
    def output_path(self) -> Any:
        return as_path(self.output) if self.output is not None else None


@dataclass(frozen=True)
class CompactUnit:
    """One partition: a log directory's (``name`` its folder) or the whole input (``name`` "")."""

    source: str  # the partition folder, or the log directory for its partitions ("" for segment files)
    segments: tuple[str, ...]
    name: str
    wanted: bool
    stage: Stage | None  # None: a dry run
    weight: int = 0


@dataclass
class CompactPartial:
    source: str
    name: str
    wanted: bool
    stats: CompactStats | None
    written: int
    copied_damage: DamageTally = field(default_factory=DamageTally)
    copied_left_out: LeftOut = field(default_factory=LeftOut)
    damaged_files: DamagedFiles = field(default_factory=DamagedFiles)
    seen: dict = field(default_factory=dict)
    ends: PartitionEnds | None = None


def compact_paths(inputs: list[Any], job: CompactJob, jobs: int = 1) -> CompactResult:
    """Compact a partition folder, segment files of one partition, or each partition of a log
    directory (``job.topics`` limits which; others are copied) on ``jobs`` processes. An input
    segment that changes, goes away or is renamed during the run is an InputChangedError
    (``kseg.log.identity``): nothing is published."""
    return execute(OPERATION, list(inputs), job, jobs)


def plan(inputs: list[Any], job: CompactJob) -> list[CompactUnit]:
    """One unit per partition of a log directory, else one; the output's stage opened."""
    topics = job.topics
    units: list[tuple[str, list[Path], str, bool]] = []  # (source, segments, name, compact?)
    for p in inputs:
        refuse_raft_log(p)
    if topics and topics & set(RAFT_TOPICS):
        raise InputError(f"--topics: {RAFT_LOG_AS_IT_IS}", file=str(inputs[0]))
    if len(inputs) == 1 and inputs[0].is_dir():
        segs = partition_segments(inputs[0])
        if segs:
            _no_topics_for_one_partition(topics, inputs[0])
            units.append((str(inputs[0]), segs, "", True))
        else:
            parts = log_dir_partitions(inputs[0])
            if not parts:
                raise InputError("no segment files found (expected .log files or <topic>-<n> folders)",
                                 file=str(inputs[0]))
            missing = sorted((topics or set()) - {part.topic for part in parts})
            if missing:
                there = ", ".join(sorted({str(part.topic) for part in parts}))
                raise InputError(f"--topics: no partition of {', '.join(missing)} in this log directory "
                                 f"(the topics there: {there})", file=str(inputs[0]))
            units += [(str(inputs[0]), part.segment_paths, part.path.name,
                       (not topics or part.topic in topics) and part.topic not in RAFT_TOPICS)  # RAFT_LOG_AS_IT_IS
                      for part in parts]
    else:
        _no_topics_for_one_partition(topics, inputs[0])
        for p in inputs:
            if not p.is_file() or p.suffix != LOG_SUFFIX:
                raise InputError("expected a partition folder, a log directory or .log files of one partition",
                                 file=str(p))
        units.append(("", sorted(inputs, key=lambda p: base_offset_of(p) or 0), "", True))
    stage = None if job.output is None else open_stage(inputs, job.output_path, force=job.force)
    return [CompactUnit(source, tuple(str(s) for s in segs), name, wanted, stage, weight_of(segs))
            for source, segs, name, wanted in units]


def _no_topics_for_one_partition(topics: frozenset[str] | None, where: Path) -> None:
    """``--topics`` chooses among a log directory's partitions: given one partition, it cannot apply."""
    if topics:
        raise InputError("--topics chooses which partitions of a log directory to compact; this input is one "
                         "partition: leave --topics out (or give the log directory)", file=str(where))


def run(unit: CompactUnit, job: CompactJob) -> CompactPartial:
    """One partition cleaned (or copied) into the stage, finished for a broker, with what it read."""
    segs = [as_path(s) for s in unit.segments]
    damage = DamageTally()  # damaged batches of a partition only copied (--on-damage)
    left_out = LeftOut()  # and the zeros preallocated after its segments' last batches
    files = DamagedFiles(job.options.damage_policy.on_damage)  # files carried over that fail their checks

    def write(out: Path | None) -> tuple[CompactStats | None, int, PartitionEnds | None]:
        work = None if out is None else out / ".passes-partition" if not unit.name else \
            out.parent / f".passes-{unit.name}"
        stats, written = compact_group(segs, unit.wanted, job.options, out, work, job.index_interval_bytes, damage,
                                       left_out)
        ends = None
        if out is not None and unit.source:
            src = as_path(unit.source) / unit.name if unit.name else as_path(unit.source)
            ends = finish_partition(src, out, "compact", files)
        return stats, len(written), ends

    try:
        (stats, written, ends), seen = watched(
            lambda: write(None) if unit.stage is None else write_into(unit.stage, unit.name, write))
    except FileNotFoundError as e:  # an input segment's times, sizes, bytes looked up by name
        err = identity.vanished(e, input_segments([as_path(unit.source)] if unit.source else segs))
        if err is None:
            raise
        raise err from None
    inputs = {os.path.abspath(s) for s in unit.segments}  # not the passes' own files, removed by now
    seen = {k: v for k, v in seen.items() if k in inputs}
    return CompactPartial(unit.source, unit.name, unit.wanted, stats, written, damage, left_out, files, seen, ends)


def merge(partials: Iterable[CompactPartial], job: CompactJob) -> CompactResult:
    """The partitions in plan order: the totals, the log directory's own files, then the
    output published once."""
    result = CompactResult()
    seen: list[dict] = []
    named: list[tuple[Path, PartitionEnds | None]] = []
    source = ""
    with publishing(job.output, seen, force=job.force) as folder:
        for p in partials:
            if p.stats is not None:
                result.stats.add(p.stats)
            if p.wanted:
                result.partitions += 1
            else:  # another topic's partition, copied as it is
                result.copied_partitions += 1
            result.copied_damage.add(p.copied_damage)
            result.stats.left_out.add(p.copied_left_out)
            result.damaged_files.add(p.damaged_files)
            result.segments.extend([Path()] * p.written)
            seen.append(p.seen)
            source = p.source
            if p.name:
                named.append((Path(folder or ".") / p.name, p.ends))
        if named and folder is not None:  # a log directory: drop-in for a broker
            result.damaged_files.on_damage = job.options.damage_policy.on_damage
            finish_log_dir(as_path(source), folder, "compact", checkpointed_ends(named), result.damaged_files)
    return result


OPERATION = Operation("compact", plan, run, merge)
