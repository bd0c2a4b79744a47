"""What Spark tasks run: the single-machine library code on one segment or one partition.

No PySpark here: each function takes plain, picklable arguments, runs kseg's own
code (a split operation's ``run``, the dump renderers, ``jobs.run_partition``,
``compact_partition``) and returns plain results. A ``KsegError`` is returned
(as ``Failed``), not raised, so that the driver reports exactly the error the
single-machine command would have reported, with the same exit code.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kseg.errors import KsegError
from kseg.ops.executors import Failed, Operation, run_caught  # noqa: F401 - Failed: what every task returns on an error
from kseg.storage import as_path

@dataclass
class TaskInfo:
    seconds: float = 0.0
    host: str = ""
    pid: int = 0
    cpu_seconds: float = 0.0


def _info(t0: float, c0: float | None = None) -> TaskInfo:
    cpu = 0.0 if c0 is None else round(time.process_time() - c0, 6)
    return TaskInfo(round(time.perf_counter() - t0, 6), socket.gethostname(), os.getpid(), cpu)


def _activate(registry: str | None) -> None:
    import gc

    # The worker's long-lived objects (PySpark, pyarrow, kseg) need no more scanning by the
    # cyclic collector: move them out of its way, as a fresh single-purpose process has them.
    gc.freeze()
    if registry:
        from kseg.ops.registry import use_registry

        use_registry(Path(registry))


# --------------------------------------------------------------------------- split operations


def operation_task(op: Operation, opts: Any, registry: str | None, unit: Any) -> tuple[Any, TaskInfo]:
    """``run`` of a split operation (``kseg.ops.executors``) on one unit, its exception returned
    as ``Failed`` (raised by the driver in plan order), with where and how long it ran."""
    _activate(registry)
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_caught(op, opts, unit)
    return result, _info(t0, c0)


# --------------------------------------------------------------------------- dump


@dataclass
class DumpParams:
    fmt: str
    payload: str
    key_decoder: str | None
    value_decoder: str | None
    deep: bool
    options: Any  # DumpOptions
    encoding: str = "utf-8"
    errors: str = "strict"
    registry: str | None = None
    kafka_version: str = "4"
    skip_record_metadata: bool = False
    index_sanity: bool = False
    verify_index: bool = False


@dataclass
class DumpResult:
    out: str
    err: str
    error: KsegError | None = None
    non_consecutive: dict = field(default_factory=dict)
    batches: int = 0
    records: int = 0
    problems: int = 0
    info: TaskInfo = field(default_factory=TaskInfo)


class _Counting:
    """Counts what the plain command counts: batches, records, problems (bad CRCs, bad batches, reported tails)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.batches = 0
        self.records = 0
        self.problems = 0

    def __call__(self, ev: Any) -> None:
        from kseg.ops.dump import BadBatchEvent, BatchEvent, TailEvent

        if isinstance(ev, BatchEvent):
            self.batches += 1
            if ev.records is not None:
                self.records += len(ev.records)
            if not ev.crc_valid:  # shown with a bad CRC: a data problem, as the plain command counts it
                self.problems += 1
        elif isinstance(ev, BadBatchEvent) or (isinstance(ev, TailEvent) and ev.reported):
            self.problems += 1
        self.inner(ev)


def dump_task(params: DumpParams, part_dir: str, item: tuple[int, str]) -> DumpResult:
    """Render one file as ``kseg dump`` would; the text goes to part files the driver streams in order."""
    from kseg.ops.dump import dump_file
    from kseg.render.dump import RENDERERS, KafkaRenderer, payload_decoder
    from kseg.render.payload import load_decoder

    _activate(params.registry)
    index, path = item
    t0 = time.perf_counter()
    kd = payload_decoder(params.payload, params.fmt)
    vd = kd
    if params.key_decoder:
        kd = load_decoder(params.key_decoder)
    if params.value_decoder:
        vd = load_decoder(params.value_decoder)
    stem = os.path.join(part_dir, f"{index:08d}")
    out = open(stem + ".out.tmp", "w", encoding=params.encoding, errors=params.errors, newline="")
    err = open(stem + ".err.tmp", "w", encoding=params.encoding, errors=params.errors, newline="")
    error = None
    with out, err:
        if params.fmt == "kafka":
            renderer = KafkaRenderer(out, err, kd, vd, deep=params.deep, kafka_version=params.kafka_version,
                                     skip_record_metadata=params.skip_record_metadata,
                                     index_sanity=params.index_sanity, verify_index=params.verify_index)
        else:
            renderer = RENDERERS[params.fmt](out, err, kd, vd)
        counting = _Counting(renderer)
        try:
            for ev in dump_file(as_path(path), params.options):  # type: ignore[arg-type]
                counting(ev)
        except KsegError as e:
            error = e
    os.replace(stem + ".out.tmp", stem + ".out")
    os.replace(stem + ".err.tmp", stem + ".err")
    result = DumpResult(stem + ".out", stem + ".err", error, getattr(renderer, "non_consecutive", {}),
                        counting.batches, counting.records, counting.problems, _info(t0))
    # The marker the driver waits for, written last: this file's error and gaps.
    import pickle

    with open(stem + ".done.tmp", "wb") as f:
        pickle.dump((error, result.non_consecutive, result.problems), f)
    os.replace(stem + ".done.tmp", stem + ".done")
    return result


# --------------------------------------------------------------------------- conversions


@dataclass
class ConvertParams:
    command: str  # up-convert, down-convert, recompress, rebase
    args: dict
    write: Any  # kseg.jobs.WriteOptions
    registry: str | None = None


def _up_options(a: dict):
    """The ``UpOptions`` of ``kseg up-convert``'s options."""
    from kseg.codecs.choice import choose as _codec_choice
    from kseg.ops.convert import UpOptions

    return UpOptions(to_magic=a["to_magic"], choice=_codec_choice(a["codec"], a["level"]),
                     log_append_time=a["log_append_time"], partition_leader_epoch=a["partition_leader_epoch"],
                     batch_records=a["batch_records"], batch_bytes=a["batch_bytes"],
                     limit=a["max_decompressed_bytes"])


def make_transform(p: ConvertParams):
    """The ``make_transform`` the plain command builds, from its options."""
    from kseg.codecs.choice import choose as _codec_choice
    from kseg.ops.convert import (
        DownOptions,
        RecompressOptions,
        down_convert,
        recompress,
        up_convert,
    )

    a = p.args
    limit = a["max_decompressed_bytes"]
    if p.command == "up-convert":
        o = _up_options(a)
        return lambda segs: (lambda b, s: up_convert(b, o, s), 0)
    if p.command == "down-convert":
        d = DownOptions(to_magic=a["to_magic"], choice=_codec_choice(a["codec"], a["level"]), limit=limit)
        return lambda segs: (lambda b, s: down_convert(b, d, s), 0)
    if p.command == "recompress":
        r = RecompressOptions(choice=_codec_choice(a["codec"], a["level"], keep_allowed=False),
                              batch_records=a["batch_records"], limit=limit)
        return lambda segs: (lambda b, s: recompress(b, r, s), 0)
    if p.command == "rebase":
        from kseg.ops.convert import rebase_maker

        return rebase_maker(a["base_offset"], limit)
    raise ValueError(f"unknown conversion {p.command}")


def _select(p: ConvertParams):
    wanted = p.args.get("topics_wanted")
    if p.command != "recompress":
        return None
    return lambda topic: not wanted or topic in wanted


@dataclass
class ConvertResult:
    summary: Any = None  # kseg.convert.Summary
    segments: int = 0
    task_dir: str | None = None
    name: str | None = None
    info: TaskInfo = field(default_factory=TaskInfo)
    ends: Any = None  # kseg.ops.logdir.PartitionEnds of a partition staged in object storage


# --------------------------------------------------------------------------- outputs in object storage


def _local_then_upload(staging: str, write: Any) -> Any:
    """``write(folder)`` into a local temporary folder on this executor, then every file it
    wrote uploaded under ``staging`` (an ``s3://`` staging prefix, ``StagedOutput.part()``):
    nothing reaches the output's own prefix before the driver's commit."""
    import shutil
    import tempfile

    from kseg.errors import OutputError
    from kseg.storage import upload_tree

    local = Path(tempfile.mkdtemp(prefix="kseg-task-"))
    try:
        result = write(local)
        try:
            upload_tree(local / as_path(staging).name, as_path(staging))  # type: ignore[arg-type]
        except OSError as e:
            raise OutputError(f"cannot write: {e}", file=staging) from None
        return result
    finally:
        shutil.rmtree(local, ignore_errors=True)


def convert_whole_task(p: ConvertParams, item: tuple[str, str, str | None]) -> ConvertResult | Failed:
    """A .log file or a partition folder: the plain ``run_job``, run on an executor
    (``staging``: an ``s3://`` output's staging prefix, written through a local folder)."""
    from kseg.ops.jobs import run_job

    _activate(p.registry)
    src, output, staging = item

    def write(out: Path) -> Any:
        if p.command == "up-convert" and p.args.get("input_format") == "kafka07":
            from kseg.ops.kafka07 import up_convert_kafka07

            return up_convert_kafka07(as_path(src), out, _up_options(p.args), p.args["base_offset"],  # type: ignore[arg-type]
                                      p.write)
        return run_job([as_path(src)], out, make_transform(p), p.write, select=_select(p),  # type: ignore[list-item]
                       command=p.command)

    t0 = time.perf_counter()
    try:
        if staging is None:
            result = write(Path(output))
        else:
            result = _local_then_upload(staging, lambda local: write(local / as_path(staging).name))
    except KsegError as e:
        return Failed(e)
    return ConvertResult(result.summary, len(result.segments), None, None, _info(t0))


def _task_dir(root_tmp: str, name: str) -> Path:
    import uuid

    return Path(root_tmp) / f".task-{name}-{uuid.uuid4().hex[:8]}"


def convert_partition_task(p: ConvertParams, root_tmp: str, item: tuple[str, list[str], bool]) -> ConvertResult | Failed:
    """One partition of a log directory, into a task-private folder under the output's temporary
    folder; or, ``root_tmp`` an ``s3://`` staging prefix, finished (``finish_partition``) in a local
    folder and uploaded under it."""
    from kseg.ops.jobs import JobResult, run_partition
    from kseg.ops.logdir import finish_partition
    from kseg.storage import is_remote

    _activate(p.registry)
    name, segs, keep = item
    t0 = time.perf_counter()
    paths = [as_path(s) for s in segs]
    result = JobResult()
    if is_remote(root_tmp):
        def write(local: Path) -> Any:
            run_partition(paths, local / name, make_transform(p), result, p.write, copy=not keep)  # type: ignore[arg-type]
            return finish_partition(paths[0].parent, local / name, p.command)  # type: ignore[arg-type]

        try:
            ends = _local_then_upload(f"{root_tmp}/{name}", write)
        except KsegError as e:
            return Failed(e)
        return ConvertResult(result.summary if keep else result.carried, len(result.segments), None, name,
                             _info(t0), ends)
    task_dir = _task_dir(root_tmp, name)
    try:
        run_partition(paths, task_dir / name, make_transform(p), result, p.write, copy=not keep)  # type: ignore[arg-type]
    except KsegError as e:
        import shutil

        shutil.rmtree(task_dir, ignore_errors=True)
        return Failed(e)
    return ConvertResult(result.summary if keep else result.carried, len(result.segments), str(task_dir), name,
                         _info(t0))


# --------------------------------------------------------------------------- compaction


@dataclass
class CompactResult:
    stats: Any = None  # CompactStats, None for a partition only copied
    partitions: int = 1
    segments: int = 0
    task_dir: str | None = None
    name: str | None = None
    info: TaskInfo = field(default_factory=TaskInfo)
    ends: Any = None  # as ConvertResult's
    copied_damage: Any = None  # kseg.log.checks.DamageTally of a partition only copied


def compact_whole_task(args: tuple, item: tuple[list[str], str | None, str | None]) -> CompactResult | Failed:
    """Segments of one partition, or a partition folder: the plain ``compact_job`` on an executor
    (``staging``: an ``s3://`` output's staging prefix, written through a local folder)."""
    from kseg.ops.compact import compact_job

    o, force, topics, registry, index_interval_bytes = args
    _activate(registry)
    inputs, output, staging = item
    sources = [as_path(i) for i in inputs]
    t0 = time.perf_counter()
    try:
        if output is None:
            r = compact_job(sources, None, o, force=force, topics=topics,  # type: ignore[arg-type]
                            index_interval_bytes=index_interval_bytes)
        elif staging is None:
            r = compact_job(sources, Path(output), o, force=force, topics=topics,  # type: ignore[arg-type]
                            index_interval_bytes=index_interval_bytes)
        else:
            r = _local_then_upload(staging, lambda local: compact_job(
                sources, local / as_path(staging).name, o, topics=topics,  # type: ignore[arg-type]
                index_interval_bytes=index_interval_bytes))
    except KsegError as e:
        return Failed(e)
    return CompactResult(r.stats, r.partitions, len(r.segments), None, None, _info(t0),
                         copied_damage=r.copied_damage)


def compact_partition_task(args: tuple, root_tmp: str | None,
                           item: tuple[str, list[str], bool]) -> CompactResult | Failed:
    """One partition of a log directory, as ``compact_job``'s loop does it (``root_tmp`` None: dry run)."""
    import shutil

    from kseg.log.checks import DamageTally
    from kseg.ops.compact import compact_group

    from kseg.ops.logdir import finish_partition
    from kseg.storage import is_remote

    o, index_interval_bytes, registry = args
    _activate(registry)
    name, seg_names, wanted = item
    segs = [as_path(s) for s in seg_names]
    t0 = time.perf_counter()
    damage = DamageTally()  # damaged batches of a partition only copied (--on-damage)
    if root_tmp is not None and is_remote(root_tmp):
        def write(local: Path) -> Any:
            stats, files = compact_group(segs, wanted, o, local / name, local / f".passes-{name}",  # type: ignore[arg-type]
                                         index_interval_bytes, damage)
            return stats, len(files), finish_partition(segs[0].parent, local / name, "compact")  # type: ignore[arg-type]

        try:
            stats, written, ends = _local_then_upload(f"{root_tmp}/{name}", write)
        except KsegError as e:
            return Failed(e)
        return CompactResult(stats, 1, written, None, name, _info(t0), ends, damage)
    task_dir = None if root_tmp is None else _task_dir(root_tmp, name)
    out_dir = None if task_dir is None else task_dir / name
    work = None if task_dir is None else task_dir / f".passes-{name}"
    try:
        stats, files = compact_group(segs, wanted, o, out_dir, work, index_interval_bytes, damage)
        written = len(files)
    except KsegError as e:
        if task_dir is not None:
            shutil.rmtree(task_dir, ignore_errors=True)
        return Failed(e)
    return CompactResult(stats, 1, written, None if task_dir is None else str(task_dir), name, _info(t0),
                         copied_damage=damage)
