"""What Spark tasks run: the single-machine library code on one segment or one partition.

No PySpark here (but for asking which attempt a task is): each function takes plain,
picklable arguments, runs kseg's own code (a split operation's ``run``) and returns plain
results. A ``KsegError`` is returned (as ``Failed``), not raised, so that the driver reports
exactly the error the single-machine command would have reported, with the same exit code.
What a worker must set up before it reads (the driver's plugin registry) comes from the
driver as ``setup``, a picklable callable each task calls first: the driver decides what it does.
"""

from __future__ import annotations

import gc
import os
import pickle
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable

from kseg.allocator import tune_for_chunks
from kseg.ops.executors import Failed, Operation, run_caught  # noqa: F401 - Failed: what every task returns on an error
from kseg.ops.live_output import attempt_name


@dataclass
class TaskInfo:
    seconds: float = 0.0
    host: str = ""
    pid: int = 0
    cpu_seconds: float = 0.0


def _info(t0: float, c0: float) -> TaskInfo:
    return TaskInfo(round(time.perf_counter() - t0, 6), socket.gethostname(), os.getpid(),
                    round(time.process_time() - c0, 6))


def _start(setup: Callable[[], None]) -> None:
    # The worker's long-lived objects (PySpark, pyarrow, kseg) need no more scanning by the
    # cyclic collector: move them out of its way, as a fresh single-purpose process has them.
    gc.freeze()
    tune_for_chunks()  # as the kseg command does (kseg.allocator)
    setup()


# --------------------------------------------------------------------------- split operations


def operation_task(op: Operation, opts: Any, setup: Callable[[], None], unit: Any) -> tuple[Any, TaskInfo]:
    """``run`` of a split operation (``kseg.ops.executors``) on one unit after the worker's
    ``setup``, its exception returned as ``Failed`` (raised by the driver in plan order), with
    where and how long it ran."""
    _start(setup)
    t0, c0 = time.perf_counter(), time.process_time()
    result = run_caught(op, opts, unit)
    return result, _info(t0, c0)


def left_task(op: Operation, opts: Any, setup: Callable[[], None], folder: str, item: tuple[int, Any]) -> TaskInfo:
    """``operation_task`` on the ``index``-th unit, its result left in ``folder`` as
    ``partial_name(index)`` for the driver, which takes each as soon as it is there (a streamed
    merge: the output of the first units leaves while the others run)."""
    index, unit = item
    if op.live is not None:  # its output read by the driver as it is written (a retry: the next file)
        unit = op.live(unit, attempt_name(os.path.join(folder, live_name(index)), _attempt()))
    result, info = operation_task(op, opts, setup, unit)
    path = os.path.join(folder, partial_name(index))
    with open(path + ".tmp", "wb") as f:
        pickle.dump((result, info), f, pickle.HIGHEST_PROTOCOL)
    os.replace(path + ".tmp", path)  # there whole, or not yet
    return info


def partial_name(index: int) -> str:
    return f"{index:08d}.partial"


def live_name(index: int) -> str:
    return f"{index:08d}.live"


def _attempt() -> int:
    """Which attempt at its task this is (Spark runs a failed task again): 0 the first."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return 0
    ctx = TaskContext.get()
    return ctx.attemptNumber() if ctx is not None else 0
