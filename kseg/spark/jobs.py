"""The single-machine commands, distributed: the driver's side.

verify and dump go per file (segment); conversions and compaction per
topic-partition (order matters inside one). Each returns what the plain
command's code returns (a ``VerifyReport``, a ``JobResult``, a
``CompactResult``) so the CLI prints the same lines, plus per-file rows for
``--report``.

Outputs are built as the plain commands build them: under the output's
temporary name (beside the output, so it must be on a file system every
executor sees), each task in a private folder there; the driver moves each
partition into place and renames the whole when every task has succeeded. An
``s3://`` output is staged under a prefix beside it (``StagedOutput``): each task
uploads its finished partition there from its executor, and the driver copies
everything into place when every task has succeeded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Sequence

from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.errors import InputError, KsegError
from kseg.storage import RemotePath, StagedOutput, size_of, upload_tree
from kseg.ops.executors import Operation, unwrap
from kseg.spark.tasks import (
    ConvertParams,
    DumpParams,
    DumpResult,
    Failed,
    compact_partition_task,
    compact_whole_task,
    convert_partition_task,
    convert_whole_task,
    dump_task,
    operation_task,
)
from kseg.spark.tasks import (
    CompactResult as TaskCompactResult,
)

MIN_TASK_BYTES = 32 * 1024 * 1024  # a Python task costs tens of milliseconds: do not make many tiny ones
FILE_COST_BYTES = 256 * 1024  # what opening one more file costs, in bytes read


def pack(weights: Sequence[int], parallelism: int, *, in_order: bool = False,
         min_task_bytes: int = MIN_TASK_BYTES) -> list[list[int]]:
    """Group item indexes into tasks: as many tasks as ``min_task_bytes`` pieces of the total
    (a file that size or larger has a task to itself), at least ``parallelism`` when there
    are enough items.

    ``in_order``: consecutive items (for output streamed in order); else largest first
    into the lightest task (balanced), heaviest tasks first.
    """
    import heapq
    import math

    n_items = len(weights)
    if n_items == 0:
        return []
    costs = [max(0, w) + FILE_COST_BYTES for w in weights]
    total = sum(costs)
    n = min(n_items, max(math.ceil(total / max(1, min_task_bytes)), max(1, parallelism)))
    if in_order:
        per = total / n
        groups: list[list[int]] = [[]]
        load = 0.0
        for i, c in enumerate(costs):
            if groups[-1] and load + c > per * 1.05 and len(groups) < n:
                groups.append([])
                load = 0.0
            groups[-1].append(i)
            load += c
        return groups
    heap = [(0, b) for b in range(n)]
    bins: list[list[int]] = [[] for _ in range(n)]
    loads = [0] * n
    for i in sorted(range(n_items), key=lambda k: -costs[k]):
        load, b = heapq.heappop(heap)
        bins[b].append(i)
        loads[b] = load + costs[i]
        heapq.heappush(heap, (loads[b], b))
    order = sorted(range(n), key=lambda b: -loads[b])
    return [sorted(bins[b]) for b in order if bins[b]]


def run_tasks(spark: Any, fn: Callable[[Any], Any], items: Sequence[Any], weights: Sequence[int] | None = None,
              name: str = "kseg", *, in_order: bool = False, one_per_task: bool = False) -> list[Any]:
    """``fn(item)`` for every item on Spark; results in item order.

    Items are packed into tasks by ``weights`` (bytes; see ``pack``) unless ``one_per_task``.
    """
    if not items:
        return []
    sc = spark.sparkContext
    if one_per_task:
        groups = [[i] for i in range(len(items))]
    else:
        groups = pack(weights if weights is not None else [0] * len(items), sc.defaultParallelism,
                      in_order=in_order)
    sc.setJobDescription(name)
    rdd = sc.parallelize([[(i, items[i]) for i in g] for g in groups], numSlices=len(groups))
    out = rdd.flatMap(partial(_indexed, fn)).collect()
    out.sort(key=lambda pair: pair[0])
    return [r for _, r in out]


def _indexed(fn: Callable[[Any], Any], group: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
    return [(i, fn(item)) for i, item in group]


def _first_failure(results: list[Any]) -> KsegError | None:
    for r in results:
        if isinstance(r, Failed):
            return r.error
    return None


def registry_path() -> str | None:
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return os.environ.get("KSEG_PLUGIN_REGISTRY")
    value = ctx.find_root().params.get("plugin_registry")
    return None if value is None else str(Path(value).absolute())


# --------------------------------------------------------------------------- verify


@dataclasses.dataclass
class FileRow:
    """One file's row in --report."""

    file: str
    seconds: float = 0.0
    host: str = ""
    extra: dict = dataclasses.field(default_factory=dict)


def run_operation(spark: Any, op: Operation, inputs: Any, opts: Any) -> tuple[Any, list[tuple[Any, Any, Any]]]:
    """A split operation (``kseg.ops.executors``) on Spark: plan on the driver, ``run`` of each unit
    in the executors, merge on the driver in plan order (the first error in plan order raised,
    as the serial run raises it). Returns the result and each (unit, partial, ``TaskInfo``)."""
    units = list(op.plan(inputs, opts))
    results = run_tasks(spark, partial(operation_task, op, opts, registry_path()), units,
                        [int(getattr(u, "weight", 0) or 0) for u in units], f"kseg {op.name}")
    partials = [unwrap(r) for r, _ in results]
    ran = [(u, p, info) for u, p, (_, info) in zip(units, partials, results)]
    return op.merge(partials, opts), ran


def spark_verify(spark: Any, paths: Sequence[str | Path], options: Any) -> tuple[Any, list[FileRow], dict]:
    """``verify_paths`` on Spark, one task per file (``kseg.ops.verify``'s plan / run / merge);
    returns (VerifyReport, per-file rows, stats)."""
    from kseg.ops.verify import OPERATION

    report, ran = run_operation(spark, OPERATION, list(paths), options)
    infos = {u.path: info for u, _, info in ran}
    rows: list[FileRow] = []
    host = ""
    for fr in report.files:
        info = infos.get(fr.path)
        if info is not None:
            host = info.host
            rows.append(FileRow(fr.path, info.seconds, info.host, {"cpu_seconds": info.cpu_seconds}))
        else:  # an index file, reported apart from its log
            rows.append(FileRow(fr.path, 0.0, host, {"cpu_seconds": 0.0}))
    return report, rows, {"files": sum(1 for u, _, _ in ran if u.kind != "manifest")}


def verify_rows(report: Any, rows: list[FileRow]) -> list[dict]:
    out = []
    for f, row in zip(report.files, rows):
        out.append({
            "file": f.path, "kind": f.kind, "ok": f.ok, "batches": f.batches, "records": f.records,
            "bytes": f.bytes, "errors": len(f.errors), "notes": sum(1 for p in f.problems if p.severity == "note"),
            "suppressed_notes": f.suppressed_notes,
            "problems": [{k: (None if v is None else str(v)) if k in ("expected", "found") else v
                          for k, v in p.as_json().items()} for p in f.problems],
            "seconds": row.seconds, "cpu_seconds": row.extra.get("cpu_seconds"), "host": row.host,
        })
    return out


# --------------------------------------------------------------------------- dump


def spark_dump(spark: Any, files: list[Path], params: DumpParams, out: Any, err: Any,
               tmp_dir: str | None = None) -> tuple[KsegError | None, list[dict], dict, int]:
    """Render every file on Spark and stream the text to ``out``/``err`` in file order as
    files finish, stopping after the first file that fails (as the plain command does).

    ``out``/``err`` are binary streams. Returns (the first error, per-file rows, the kafka
    renderer's non-consecutive offsets merged in order, the number of data problems shown). The part files go under
    ``tmp_dir`` (default: the system's temporary folder; on a cluster, give a shared one).
    """
    import pickle
    import tempfile
    import uuid

    base = Path(tmp_dir) if tmp_dir else Path(tempfile.gettempdir())
    part_dir = base / f".kseg-dump-{uuid.uuid4().hex[:12]}"
    part_dir.mkdir(parents=True)
    items = [(i, str(f)) for i, f in enumerate(files)]
    box: dict[str, Any] = {}
    sc = spark.sparkContext
    group = f"kseg-dump-{uuid.uuid4().hex[:8]}"

    def run() -> None:
        try:
            sc.setJobGroup(group, "kseg dump", interruptOnCancel=True)
            weights = [_size(f) for _, f in items]
            box["results"] = run_tasks(spark, partial(dump_task, params, str(part_dir)), items, weights,
                                       "kseg dump", in_order=True)
        except BaseException as e:  # reported by the main thread
            box["exception"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    error: KsegError | None = None
    non_consecutive: dict[str, list] = {}
    finished = 0
    problems = 0
    try:
        for i, _ in items:
            stem = part_dir / f"{i:08d}"
            done = Path(str(stem) + ".done")
            while not done.exists() and thread.is_alive():
                time.sleep(0.01)
            if not done.exists():
                break  # the job ended without this file: its exception is raised below
            _copy(Path(str(stem) + ".out"), out)
            _copy(Path(str(stem) + ".err"), err)
            file_error, pairs_by_path, file_problems = pickle.loads(done.read_bytes())
            problems += file_problems
            for path, pairs in pairs_by_path.items():
                non_consecutive.setdefault(path, []).extend(pairs)
            finished += 1
            if file_error is not None:
                error = file_error
                break
        if error is not None:
            sc.cancelJobGroup(group)
            thread.join(timeout=30)
            rows: list[dict[str, Any]] = [{"file": f, "error": str(error) if k == finished - 1 else None}
                                          for k, (_, f) in enumerate(items[:finished])]
            return error, rows, non_consecutive, problems
        thread.join()
        if "exception" in box:
            raise box["exception"]
        results: list[DumpResult] = box["results"]
        rows = [{"file": f, "batches": r.batches, "records": r.records, "problems": r.problems, "error": None,
                 "seconds": r.info.seconds, "host": r.info.host} for (_, f), r in zip(items, results)]
        return None, rows, non_consecutive, problems
    except BaseException:
        sc.cancelJobGroup(group)
        raise
    finally:
        shutil.rmtree(part_dir, ignore_errors=True)


def _copy(path: Path, out: Any) -> None:
    with open(path, "rb") as f:
        shutil.copyfileobj(f, out, 1 << 20)
    out.flush()


# --------------------------------------------------------------------------- conversions


def spark_convert(spark: Any, params: ConvertParams, src: Path, output: Path) -> tuple[Any, list[dict]]:
    """``run_job`` on Spark: per topic-partition for a log directory, one task otherwise.
    Returns (a JobResult-like object with ``summary`` and ``segments``, per-partition rows).
    An ``s3://`` output is staged as ``spark_compact``'s."""
    from kseg.log.atomic import check_output

    if not src.exists():
        raise InputError("no such file or directory", file=str(src))
    check_output([src], output, force=params.write.force)
    with _staging(output) as staged:
        result, rows = _convert(spark, params, src, output, staged)
        if staged is not None:
            staged.commit(replace=params.write.force)
    return result, rows


@contextlib.contextmanager
def _staging(output: Path | None) -> Any:
    """The staging prefix of an ``s3://`` output (None for a local one), removed on every way
    out; a failure that cannot remove it names it (and how to remove it) in its one line."""
    staged = StagedOutput(output, existed=output.exists()) if isinstance(output, RemotePath) else None
    try:
        yield staged
    except Exception as e:
        note = None if staged is None else staged.left_behind(e)
        if note is not None:
            raise note from None
        raise
    finally:
        if staged is not None:
            staged.abort()


def _convert(spark: Any, params: ConvertParams, src: Path, output: Path,
             staged: StagedOutput | None) -> tuple[Any, list[dict]]:
    from kseg.log.atomic import AtomicDir
    from kseg.log.segment import log_dir_partitions, partition_segments
    from kseg.ops.convert import Summary
    from kseg.ops.jobs import JobResult

    if src.is_file() or partition_segments(src) or (params.command == "up-convert"
                                                   and params.args.get("input_format") == "kafka07"):
        [r] = run_tasks(spark, partial(convert_whole_task, params),
                        [(str(src), str(output), None if staged is None else str(staged.part()))], None,
                        f"kseg {params.command}")
        if isinstance(r, Failed):
            raise r.error
        result = JobResult(r.summary)
        result.segments = [Path()] * r.segments
        return result, [_convert_row(str(src), r)]
    result = JobResult(Summary())
    rows: list[dict] = []
    wanted = params.args.get("topics_wanted")
    parts = log_dir_partitions(src)
    if not parts:
        raise InputError("no segment files found (expected .log files or <topic>-<n> folders)", file=str(src))
    items = [(part.path.name, [str(p) for p in part.segment_paths],
              params.command != "recompress" or not wanted or part.topic in wanted) for part in parts]
    weights = [sum(_size(p) for p in segs) for _, segs, _ in items]
    with contextlib.ExitStack() as stack:
        root = None if staged is not None else stack.enter_context(AtomicDir(output))
        results = run_tasks(spark, partial(convert_partition_task, params,
                                           str(root.tmp) if root is not None else str(staged.part())),  # type: ignore[union-attr]
                            items, weights, f"kseg {params.command}")
        if root is not None:
            _move_into(root.tmp, results)
        results = _skipping(items, results, params.write.skip_unconvertible, result)
        failure = _first_failure(results)
        if failure is not None:
            raise failure
        for (name, _, keep), r in zip(items, results):
            if r is None:  # skipped (--skip-unconvertible): its task wrote nothing
                continue
            if keep:
                result.summary.add(r.summary)
            else:  # as run_job: other topics' partitions are carried over, not counted as converted
                result.carried.add(r.summary)
                result.carried_partitions += 1
            result.segments.extend([Path()] * r.segments)
            rows.append(_convert_row(name, r))
        if root is not None:
            from kseg.ops.logdir import finish_log_dir

            finish_log_dir(src, root.tmp, params.command)  # as run_job: drop-in for a broker
        else:
            _stage_log_dir_files(src, staged, params.command, [r for r in results if r is not None])  # type: ignore[arg-type]
    return result, rows


def _skipping(items: list[tuple], results: list[Any], skip: bool, result: Any) -> list[Any]:
    """As ``run_job``'s loop: a partition whose task failed as unconvertible is recorded in
    ``result.skipped`` (None in its place), or its error, naming the option, stops the run."""
    from kseg.errors import UnconvertibleError
    from kseg.ops.skips import skipped_or_raise

    out: list[Any] = []
    for (name, _, _), r in zip(items, results):
        if isinstance(r, Failed) and isinstance(r.error, UnconvertibleError) and _first_failure(out) is None:
            result.skipped.append(skipped_or_raise(name, r.error, skip))
            r = None
        out.append(r)
    return out


def _stage_log_dir_files(src: Path, staged: StagedOutput, command: str, results: list[Any]) -> None:
    """The log directory's own files (offset checkpoints, ``meta.properties``) from the partition
    ends the tasks returned, staged beside the partitions they uploaded."""
    import tempfile

    from kseg.log.segment import parse_partition_dir
    from kseg.ops.logdir import finish_log_dir

    ends = {}
    for r in results:
        parsed = parse_partition_dir(r.name)
        if parsed is not None and r.ends is not None:
            ends[parsed] = r.ends
    local = Path(tempfile.mkdtemp(prefix="kseg-logdir-"))
    try:
        finish_log_dir(src, local, command, ends)
        upload_tree(local, staged.part(), staged.hashes)
    finally:
        shutil.rmtree(local, ignore_errors=True)


def _size(p: str) -> int:
    try:
        return size_of(p)
    except (OSError, KsegError):
        return 0


def _move_into(root_tmp: Path, results: list[Any]) -> None:
    """Each task's partition folder into the output's temporary folder (the driver's commit)."""
    for r in results:
        if isinstance(r, Failed) or r.task_dir is None:
            continue
        task_dir = Path(r.task_dir)
        src = task_dir / r.name
        if src.exists():
            os.replace(src, root_tmp / r.name)
        shutil.rmtree(task_dir, ignore_errors=True)


def _convert_row(name: str, r: Any) -> dict:
    return {"partition": name, "segments": r.segments, **r.summary.as_json(), "seconds": r.info.seconds,
            "host": r.info.host}


# --------------------------------------------------------------------------- compaction


def spark_compact(spark: Any, inputs: list[Path], output: Path | None, o: Any, *, force: bool,
                  topics: set[str] | None, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> tuple[Any, list[dict]]:
    """``compact_job`` on Spark: per partition for a log directory, one task otherwise. An
    ``s3://`` output is staged (``StagedOutput``): tasks upload their partitions under the
    staging prefix, and the driver copies all into place once every task succeeded."""
    from kseg.log.atomic import check_output

    registry = registry_path()
    if isinstance(output, RemotePath):
        check_output(inputs, output, force=force)
    with _staging(output) as staged:
        result, rows = _compact(spark, inputs, output, o, force, topics, index_interval_bytes, registry, staged)
        if staged is not None:
            staged.commit(replace=force)
    return result, rows


def _compact(spark: Any, inputs: list[Path], output: Path | None, o: Any, force: bool, topics: set[str] | None,
             index_interval_bytes: int, registry: str | None, staged: StagedOutput | None) -> tuple[Any, list[dict]]:
    from kseg.log.atomic import AtomicDir, check_output
    from kseg.log.segment import log_dir_partitions, partition_segments
    from kseg.ops.compact import CompactResult

    if not (len(inputs) == 1 and inputs[0].is_dir() and not partition_segments(inputs[0])):
        item = ([str(i) for i in inputs], None if output is None else str(output),
                None if staged is None else str(staged.part()))
        [r] = run_tasks(spark, partial(compact_whole_task, (o, force, topics, registry, index_interval_bytes)),
                        [item], None, "kseg compact")
        if isinstance(r, Failed):
            raise r.error
        result = CompactResult(r.stats, r.partitions)
        if r.copied_damage is not None:
            result.copied_damage.add(r.copied_damage)
        result.segments = [Path()] * r.segments
        return result, [_compact_row(",".join(str(i) for i in inputs), r)]
    parts = log_dir_partitions(inputs[0])
    if not parts:
        raise InputError("no segment files found (expected .log files or <topic>-<n> folders)", file=str(inputs[0]))
    items = [(part.path.name, [str(p) for p in part.segment_paths], not topics or part.topic in topics)
             for part in parts]
    weights = [sum(_size(p) for p in segs) for _, segs, _ in items]
    if output is not None and staged is None:
        check_output(inputs, output, force=force)
    result = CompactResult()
    rows: list[dict] = []
    root = AtomicDir(output) if output is not None and staged is None else None
    where = str(staged.part()) if staged is not None else None if root is None else str(root.tmp)
    try:
        results = run_tasks(spark, partial(compact_partition_task, (o, index_interval_bytes, registry), where),
                            items, weights, "kseg compact")
        if root is not None:
            _move_into(root.tmp, results)
        failure = _first_failure(results)
        if failure is not None:
            raise failure
        for (name, _, _), r in zip(items, results):
            if r.stats is not None:
                result.stats.add(r.stats)
                result.partitions += 1
            else:  # another topic's partition, copied as it is
                result.copied_partitions += 1
            if r.copied_damage is not None:
                result.copied_damage.add(r.copied_damage)
            result.segments.extend([Path()] * r.segments)
            rows.append(_compact_row(name, r))
    except BaseException:
        if root is not None:
            root.abort()
        raise
    if root is not None:
        from kseg.ops.compact import finish_compacted

        finish_compacted(inputs, root.tmp)
        root.commit()
    if staged is not None:
        _stage_log_dir_files(inputs[0], staged, "compact", results)
    return result, rows


def _compact_row(name: str, r: TaskCompactResult) -> dict:
    stats = r.stats.as_json() if r.stats is not None else {}
    return {"partition": name, "compacted": r.stats is not None, "segments": r.segments, **stats,
            "seconds": r.info.seconds, "host": r.info.host}


# --------------------------------------------------------------------------- --report


def verify_report_json(report: Any, rows: list[FileRow], run: dict) -> dict:
    """``--report FILE.json`` of ``kseg spark verify``: the document of ``kseg verify --format json``
    (same keys, same values), each file adding where and how long it ran, plus the run's facts."""
    from kseg.render.reports import verify_json

    doc = verify_json(report)
    for entry, row in zip(doc["files"], rows):
        entry.update(seconds=row.seconds, cpu_seconds=row.extra.get("cpu_seconds"), host=row.host)
    doc["command"] = "verify"
    doc["run"] = run
    return doc


def _verify_schema() -> Any:
    """The Parquet columns of a verify report, typed whether or not any file had a problem."""
    import pyarrow as pa

    problem = pa.struct([("severity", pa.string()), ("check", pa.string()), ("file", pa.string()),
                         ("position", pa.int64()), ("message", pa.string()), ("expected", pa.string()),
                         ("found", pa.string()), ("where", pa.string())])
    return pa.schema([("file", pa.string()), ("kind", pa.string()), ("ok", pa.bool_()), ("batches", pa.int64()),
                      ("records", pa.int64()), ("bytes", pa.int64()), ("errors", pa.int64()), ("notes", pa.int64()),
                      ("suppressed_notes", pa.int64()), ("problems", pa.list_(problem)),
                      ("seconds", pa.float64()), ("cpu_seconds", pa.float64()), ("host", pa.string())])


def _typed(table: Any) -> Any:
    """Columns that are all null (a clean run) typed as strings rather than Arrow's null type."""
    import pyarrow as pa

    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_null(t):
            t = pa.string()
        elif pa.types.is_list(t) and pa.types.is_null(t.value_type):
            t = pa.list_(pa.string())
        elif pa.types.is_struct(t):
            t = pa.struct([pa.field(c.name, pa.string() if pa.types.is_null(c.type) else c.type) for c in t])
        fields.append(pa.field(f.name, t))
    return table.cast(pa.schema(fields))


def write_report(path: Path, command: str, rows: list[dict], summary: dict, document: dict | None = None) -> None:
    """Per-file (or per-partition) results: Parquet for .parquet/.pq names, else JSON
    (``document`` when given: verify's, the shape of ``kseg verify --format json``)."""
    from kseg.log.atomic import write_atomic

    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        if command == "verify":
            table = pa.Table.from_pylist(rows, schema=_verify_schema())
        elif rows:
            table = _typed(pa.Table.from_pylist(rows))
        else:
            table = pa.table({"file": pa.array([], pa.string())})
        table = table.replace_schema_metadata({"kseg.command": command,
                                               "kseg.summary": __import__("json").dumps(summary)})
        tmp = path.with_name(f".{path.name}.{os.getpid()}.kseg-tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        return
    import json

    doc = document if document is not None else {"command": command, **summary, "files": rows}
    write_atomic(path, (json.dumps(doc, indent=2) + "\n").encode())


def stdout_binary() -> Any:
    return getattr(sys.stdout, "buffer", sys.stdout)
