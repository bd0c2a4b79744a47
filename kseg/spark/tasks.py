"""What Spark tasks run: the single-machine library code on one segment or one partition.

No PySpark here: each function takes plain, picklable arguments, runs kseg's own
code (a split operation's ``run``, the dump renderers) and returns plain results. A ``KsegError`` is returned
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
from kseg.ops.dump import BadBatchEvent, BatchEvent, TailEvent, dump_file
from kseg.render.dump import RENDERERS, KafkaRenderer, payload_decoder
from kseg.render.payload import load_decoder
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
