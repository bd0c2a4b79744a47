"""``index --check`` and ``index --rebuild`` as an operation split into units
(``kseg.ops.executors``): plan lists the segments of every input, run checks one segment's
offset, time and transaction indexes against its log, or builds its offset and time indexes
anew (into the output's stage, ``kseg.ops.staging``); merge keeps the plan order, checks each
segment's offsets against the partition's segments before it (a segment that opens at or below
their last offset is rebuilt again there, knowing it, as verify reads it again), adds up the
damage, writes indexes beside the segments only once every segment passed its checks, and
publishes an output folder once, whichever executor ran the units."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kseg.companions.build import build_indexes
from kseg.companions.check import check_segment_companions
from kseg.companions.check import companion_paths as companion_paths_of
from kseg.errors import InputError
from kseg.findings import Finding
from kseg.log.atomic import write_atomic_many
from kseg.log.checks import DamagePolicy, DamageTally, OffsetOrder, checked_batches, screened
from kseg.log.listing import INDEX_SUFFIX, LOG_SUFFIX, RUN, TIME_INDEX_SUFFIX, reading_groups
from kseg.log.segment import base_offset_of, companion_path
from kseg.ops.executors import Operation, execute, weight_of
from kseg.ops.staging import Stage, open_stage, publishing, write_into
from kseg.storage import as_path, gone

CHECK, REBUILD = "check", "rebuild"
VANISHED_UNIT, NOTHING, CHECKED = "vanished", "nothing", "checked"  # what a check found


@dataclass(frozen=True)
class IndexJob:
    mode: str  # CHECK or REBUILD
    output: str | None = None  # REBUILD: a folder for the indexes (None: beside the segments)
    force: bool = False
    index_interval_bytes: int = 4096
    on_damage: str = "stop"


@dataclass(frozen=True)
class IndexUnit:
    segment: str
    folder: str  # REBUILD into an output: the segment's folder there, relative to it ("" for a file input)
    stage: Stage | None
    weight: int = 0
    run: int | None = None  # the partition run it belongs to (offsets go up across a run's segments)


@dataclass
class IndexPartial:
    segment: str
    status: str = CHECKED
    findings: list[Finding] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # REBUILD beside the segments: written by merge
    written: tuple[str, int, str, int] | None = None  # (index, entries, time index, entries)
    damage: DamageTally = field(default_factory=DamageTally)
    unit: IndexUnit | None = None  # REBUILD: what was run, with the first and last offsets read
    opening: int | None = None
    last: int | None = None


@dataclass
class IndexResult:
    segments: list[IndexPartial] = field(default_factory=list)
    damage: DamageTally = field(default_factory=DamageTally)


def index_paths(inputs: list[Any], job: IndexJob, jobs: int = 1) -> IndexResult:
    """Check, or rebuild, the indexes of every segment of ``inputs`` on ``jobs`` processes."""
    return execute(OPERATION, list(inputs), job, jobs)


def plan(inputs: list[Any], job: IndexJob) -> list[IndexUnit]:
    pairs: list[tuple[Path, Any, int | None]] = []  # (segment, its input, its partition run)
    for root in inputs:
        for g in reading_groups([root]):
            run = len(pairs) if g.kind == RUN else None  # numbered by its first segment's place
            pairs.extend((seg, root, run) for seg in g.files if seg.suffix == LOG_SUFFIX)
    if not pairs:
        raise InputError("no .log segments found", file=str(inputs[0]))
    stage = None
    if job.mode == REBUILD:
        if job.output is None:
            for root in inputs:
                if not isinstance(root, Path):
                    raise InputError("cannot write beside segments in an archive or object storage: give "
                                     "-o/--output", file=str(root))
            if not job.force:  # the input's own indexes would be replaced
                raise InputError("--rebuild without -o replaces the indexes beside the segments: give --force to "
                                 "do so, or -o/--output to write them elsewhere", file=str(inputs[0]))
        else:
            stage = open_stage(list(inputs), as_path(job.output), force=job.force)
    return [IndexUnit(str(seg), "" if root.is_file() else "/".join(seg.parent.parts[len(root.parts):]), stage,
                      weight_of([seg]), run) for seg, root, run in pairs]


def run(unit: IndexUnit, job: IndexJob) -> IndexPartial:
    if job.mode == CHECK:
        return _check(as_path(unit.segment))
    return _rebuild(unit, job, None)


def _rebuild(unit: IndexUnit, job: IndexJob, after: int | None) -> IndexPartial:
    """The unit's segment indexed anew, read as if the partition's segments before it ended at
    offset ``after`` (None: as if it were the first)."""
    seg = as_path(unit.segment)
    base = base_offset_of(seg)
    if base is None:
        raise InputError("segment name does not start with its base offset", file=str(seg))
    p = IndexPartial(unit.segment, unit=unit)
    order = OffsetOrder(after)
    # Each batch checked (--on-damage): a skipped one gets no index entry, a carried one is indexed.
    entries = [b._replace(raw=memoryview(b"")) for b, _ in screened(checked_batches(seg, order=order),
                                                                  DamagePolicy(job.on_damage), str(seg), p.damage)]
    p.opening, p.last = order.opening, order.last
    index, timeindex = build_indexes(entries, base, job.index_interval_bytes)
    counts = (len(index) // 8, len(timeindex) // 12)
    if unit.stage is None:  # beside the segments: written by merge, once every segment passed its checks
        p.files = {str(companion_path(seg, INDEX_SUFFIX)): index, str(companion_path(seg, TIME_INDEX_SUFFIX)): timeindex}
        p.written = (str(companion_path(seg, INDEX_SUFFIX)), counts[0], str(companion_path(seg, TIME_INDEX_SUFFIX)), counts[1])
        return p

    def write(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic_many({companion_path(seg, INDEX_SUFFIX, folder): index,
                           companion_path(seg, TIME_INDEX_SUFFIX, folder): timeindex})  # both or neither

    write_into(unit.stage, unit.folder, write)
    where = as_path(job.output) if not unit.folder else as_path(f"{job.output}/{unit.folder}")  # type: ignore[arg-type]
    p.written = (str(companion_path(seg, INDEX_SUFFIX, where)), counts[0], str(companion_path(seg, TIME_INDEX_SUFFIX, where)),
                 counts[1])
    return p


def _check(seg: Any) -> IndexPartial:
    if gone(seg):  # deleted by retention since it was listed
        return IndexPartial(str(seg), VANISHED_UNIT)
    if not any(p.is_file() for p in companion_paths_of(seg).values()):
        return IndexPartial(str(seg), NOTHING)
    try:
        findings = check_segment_companions(seg)
    except OSError:
        if not gone(seg):
            raise
        return IndexPartial(str(seg), VANISHED_UNIT)
    return IndexPartial(str(seg), CHECKED, list(findings))


def merge(partials: Iterable[IndexPartial], job: IndexJob) -> IndexResult:
    result = IndexResult()
    run, after = None, None  # the partition run being merged, and the last offset of its segments so far
    with publishing(job.output if job.mode == REBUILD else None, force=job.force):
        for p in partials:
            if p.unit is not None and p.unit.run is not None:
                if p.unit.run != run:
                    run, after = p.unit.run, None
                if after is not None and p.opening is not None and p.opening <= after:
                    p = _rebuild(p.unit, job, after)  # its first offsets go back: what it holds, knowing it
                after = p.last if after is None or p.last is None else max(after, p.last)
            result.segments.append(p)
            result.damage.add(p.damage)
        for p in result.segments:
            if p.files:
                write_atomic_many({Path(k): v for k, v in p.files.items()})
                p.files = {}
    return result


OPERATION = Operation("index", plan, run, merge)
