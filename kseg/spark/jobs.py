"""The single-machine commands, distributed: the driver's side.

A split operation (``kseg.ops.executors``: verify, stats, diff, the writers) is planned here,
its units run in the executors and merged here (``run_operation``), so each returns what the
plain command's code returns and the CLI prints the same lines, plus per-unit rows for
``--report``. A writer's output is staged and published by the operation itself
(``kseg.ops.staging``): a local one under its temporary name (beside the output, so it must be
on a file system every executor sees), an ``s3://`` one under a staging prefix each executor
uploads its partitions to. A streaming operation (dump) takes its partials as the tasks leave
them, in plan order (``stream_operation``), and a unit's output as its task writes it
(``Operation.live``), so its output streams as the plain command's. The executors share none
of this process's memory: each task is given the plugin registry active here (``registry_use``)
and activates it before it reads.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from kseg.errors import InputError
from kseg.log.atomic import write_atomic
from kseg.ops.executors import Operation, spread, unwrap
from kseg.ops.registry import registry_use
from kseg.ops.verify import OPERATION as VERIFY
from kseg.render.reports import verify_json
from kseg.spark.tasks import Failed, left_task, live_name, operation_task, partial_name

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
    as the serial run raises it; a job that fails hands merge its error, so that a writer's
    stage is removed as on any other failure). Returns the result and each (unit, partial, ``TaskInfo``)."""
    opts = spread(opts, spark.sparkContext.defaultParallelism)
    units = list(op.plan(inputs, opts))
    try:
        results = run_tasks(spark, partial(operation_task, op, opts, registry_use()), units,
                            [int(getattr(u, "weight", 0) or 0) for u in units], f"kseg {op.name}")
    except BaseException as e:
        op.merge(_raising(e), opts)
        raise
    merged = op.merge((unwrap(r) for r, _ in results), opts)
    return merged, [(u, r, info) for u, (r, info) in zip(units, results)]


def _raising(e: BaseException) -> Any:
    raise e
    yield  # a generator: merge meets the error where it takes its first partial


def spark_verify(spark: Any, paths: Sequence[str | Path], options: Any) -> tuple[Any, list[FileRow], dict]:
    """``verify_paths`` on Spark, one task per file or slice of a large one (``kseg.ops.verify``'s
    plan / run / merge, cut for the session's parallelism); returns (VerifyReport, per-file
    rows, stats)."""
    report, ran = run_operation(spark, VERIFY, list(paths), options)
    infos: dict[str, list] = {}
    for u, _, info in ran:  # a file's slices: their seconds added, the first one's host
        seen = infos.setdefault(u.path, [0.0, info.host, 0.0])
        seen[0] += info.seconds
        seen[2] += info.cpu_seconds
    rows: list[FileRow] = []
    host = ""
    for fr in report.files:
        found = infos.get(fr.path)
        if found is not None:
            seconds, host, cpu = found
            rows.append(FileRow(fr.path, round(seconds, 6), host, {"cpu_seconds": round(cpu, 6)}))
        else:  # an index file, reported apart from its log
            rows.append(FileRow(fr.path, 0.0, host, {"cpu_seconds": 0.0}))
    return report, rows, {"files": sum(1 for u, _, _ in ran if u.kind != "manifest" and u.part == 0)}


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


# --------------------------------------------------------------------------- streamed (dump)


def stream_operation(spark: Any, op: Operation, inputs: Any, opts: Any, folder: str,
                     ran: list[tuple[Any, Any, Any]] | None = None) -> Iterator[Any]:
    """A streaming split operation (``Operation.streams``: dump) on Spark: plan on the driver,
    ``run`` of each unit in the executors, each partial left in ``folder`` (which every executor
    must be able to write) and handed to merge in plan order as soon as it is there, so the
    output of the first units leaves while the others run. The job is cancelled when the items
    end any other way than exhausted (an error, an interrupt, a reader gone). ``ran`` collects
    each (unit, partial, ``TaskInfo``) taken."""
    import uuid

    opts = spread(opts, spark.sparkContext.defaultParallelism)
    units = list(op.plan(inputs, opts))
    sc = spark.sparkContext
    group = f"kseg-{op.name}-{uuid.uuid4().hex[:8]}"
    box: dict[str, BaseException] = {}
    task = partial(left_task, op, opts, registry_use(), folder)

    def job() -> None:
        try:
            sc.setJobGroup(group, f"kseg {op.name}", interruptOnCancel=True)
            run_tasks(spark, task, list(enumerate(units)), [int(getattr(u, "weight", 0) or 0) for u in units],
                      f"kseg {op.name}", in_order=True)
        except BaseException as e:  # raised by the driver's thread, in its place
            box["exception"] = e

    def outcome(i: int, unit: Any) -> Any:
        path = Path(folder) / partial_name(i)
        while not path.exists() and thread.is_alive():
            time.sleep(0.01)
        if not path.exists():  # the job ended without this unit
            thread.join()
            raise box.get("exception") or InputError(f"kseg {op.name}: a Spark task ended without its result")
        result, info = pickle.loads(path.read_bytes())
        path.unlink()
        if ran is not None:
            ran.append((unit, result, info))
        return result

    def partials() -> Iterator[Any]:
        for i, unit in enumerate(units):
            if op.following is not None:  # taken at once, its output read as the task writes it
                yield op.following(unit, os.path.join(folder, live_name(i)), partial(outcome, i, unit), thread.is_alive)
            else:
                yield unwrap(outcome(i, unit))

    thread = threading.Thread(target=job, daemon=True)
    thread.start()
    try:
        yield from op.merge(partials(), opts)
        thread.join()
        if "exception" in box:
            raise box["exception"]
    finally:
        if thread.is_alive():
            sc.cancelJobGroup(group)
            thread.join(timeout=30)


# --------------------------------------------------------------------------- writers


def writer_rows(ran: list[tuple[Any, Any, Any]]) -> list[dict]:
    """``--report`` of a writer: a row per partition (unit) written, with where and how long it ran."""
    rows = []
    for unit, p, info in ran:
        name = getattr(unit, "name", "") or str(getattr(unit, "src", getattr(unit, "source", "")))
        if isinstance(p, Failed) or getattr(p, "unconvertible", None) is not None:
            continue
        if hasattr(p, "result"):  # a conversion
            result = p.result
            facts = {"segments": len(result.segments),
                     **(result.summary if unit.convert else result.carried).as_json()}
        elif hasattr(p, "stats"):  # compaction
            facts = {"compacted": p.stats is not None, "segments": p.written,
                     **(p.stats.as_json() if p.stats is not None else {})}
        else:  # salvage
            facts = p.partition.as_json()
        rows.append({"partition": name, **facts, "seconds": info.seconds, "host": info.host})
    return rows


# --------------------------------------------------------------------------- --report


def verify_report_json(report: Any, rows: list[FileRow], run: dict) -> dict:
    """``--report FILE.json`` of ``kseg spark verify``: the document of ``kseg verify --format json``
    (same keys, same values), each file adding where and how long it ran, plus the run's facts."""
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

