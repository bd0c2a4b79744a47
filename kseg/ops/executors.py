"""Executors: run an operation's plan / run / merge steps, knowing nothing about the operation.

An ``Operation`` is three functions an operation module exposes: ``plan(inputs, opts)``
lists small picklable units of work (cheap: listing, names, index lookups); ``run(unit,
opts)`` reads one unit's bytes and returns a small picklable partial; ``merge(partials,
opts)`` takes the partials in plan order and owns every rule that crosses units. The
executors here only decide where ``run`` happens: ``serial`` (the reference) in this
process, ``pool`` in local worker processes. Both hand merge the partials in plan order,
so the result is the same whichever ran; an error raised by ``run`` is raised here, in
plan order, exactly as the serial run raises it (units after it are not merged).

Units may say ``weight`` (bytes to read: the pool packs light consecutive units into one
task) and ``local`` (true: only this process can read it, such as stdin; the run is serial).
An operation whose merge writes the units' output out (dump) may also say how a unit runs
``here``: the pool then takes units from the front in this process, their output going straight
out, and from the back on ``jobs - 1`` workers, whose output waits in spools, until the two meet.
Kafka work is CPU-bound Python: workers are processes. They ignore SIGINT (a terminal's
Ctrl-C reaches the whole process group; this process decides) and are ended when the run
ends any other way than done (Ctrl-C, SIGTERM, an error), so none outlives the command.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import signal
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from kseg.errors import InputError, KsegError
from kseg.interrupts import uninterrupted
from kseg.lazy import load
from kseg.log.listing import is_stdin

if TYPE_CHECKING:  # concurrent.futures (and the logging it loads) only once a pool runs
    from concurrent.futures import Future, ProcessPoolExecutor

AUTO = "auto"
TASKS_PER_WORKER = 6  # light units are packed so that each worker gets about this many tasks
IN_FLIGHT_PER_WORKER = 3  # tasks submitted ahead of the one whose result is awaited (results kept in plan order)
# A worker that is not forked (no fork on the platform) starts with nothing of this process's:
# it is given the plugin registry active here, loaded only then.
WORKER_SETUP = "kseg.ops.registry:registry_use"


@dataclass(frozen=True)
class Operation:
    """An operation that can be split: its three steps (module-level functions, so picklable)."""

    name: str
    plan: Callable[[Any, Any], Sequence[Any]]
    run: Callable[[Any, Any], Any]
    merge: Callable[[Iterable[Any], Any], Any]
    # merge is a generator whose items are the result (find: matches as they come, in plan
    # order): the executor returns it, and ends the workers when it is exhausted or closed.
    streams: bool = False
    # For an executor whose partials arrive only when a unit ends (Spark), an operation whose
    # units' output should leave while they run (dump) says how: ``live(unit, path)`` is the unit
    # writing its output to ``path`` as it goes (``kseg.ops.live_output``); ``following(unit, path,
    # finished, running)`` is the partial merge takes at once, its output read from ``path`` and
    # the rest from ``finished()`` (the unit's partial, when it is there).
    live: Callable[[Any, str], Any] | None = None
    following: Callable[[Any, str, Callable[[], Any], Callable[[], bool]], Any] | None = None
    # An operation whose output this process writes anyway (dump: to stdout) says how a unit runs
    # here, its output going out as merge reads it instead of through a worker's spool:
    # ``here(unit, opts)`` is that unit's partial. The pool then runs units from the front here and
    # from the back on its workers, until the two meet (``_two_ended``).
    here: Callable[[Any, Any], Any] | None = None


@dataclass
class Failed:
    """What ``run_caught`` returns for an exception ``run`` raised: carried back to be raised
    in plan order, where the serial run would have raised it."""

    error: BaseException


def run_caught(op: Operation, opts: Any, unit: Any) -> Any:
    """``op.run(unit, opts)``, an exception returned as ``Failed`` (for executors whose own
    machinery would wrap or reorder it: worker processes, Spark)."""
    try:
        return op.run(unit, opts)
    except Exception as e:  # noqa: BLE001 - raised again, unchanged, by ``unwrap``
        return Failed(e)


def unwrap(result: Any) -> Any:
    """A partial as ``run`` returned it, or the exception it raised, raised here."""
    if isinstance(result, Failed):
        raise result.error
    return result


def here_only(path: Any) -> bool:
    """A path only this process may read (a unit's ``local``): standard input, and objects and
    archive members, whose connections and archive readers a forked worker must not share."""
    return is_stdin(path) or not isinstance(path, Path)


def weight_of(paths: Iterable[Any]) -> int:
    """A unit's ``weight``: the bytes of the files and objects it reads, so that executors can
    balance objects too (standard input, and a path that cannot be stat'ed, count 0)."""
    total = 0
    for p in paths:
        if is_stdin(p):
            continue
        try:
            total += p.stat().st_size
        except (OSError, KsegError):
            pass
    return total


def available_cores() -> int:
    """The cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def parse_jobs(value: str | int) -> int:
    """``-j/--jobs``: a count >= 1 or ``auto`` (the cores this process may use); ValueError otherwise."""
    if isinstance(value, int):
        n = value
    elif value.strip().lower() == AUTO:
        return available_cores()
    else:
        n = int(value)
    if n < 1:
        raise ValueError(f"{value}: give a count of 1 or more, or {AUTO}")
    return n


def spread(opts: Any, workers: int) -> Any:
    """``opts`` told the workers its units will be spread over, when it has a ``workers`` field
    left at 1 (verify and find cut a large segment into slices for them; the result is the same)."""
    if workers > 1 and getattr(opts, "workers", None) == 1:
        return dataclasses.replace(opts, workers=workers)
    return opts


def execute(op: Operation, inputs: Any, opts: Any, jobs: int = 1,
            progress: Callable[[Any], None] | None = None) -> Any:
    """``op`` over ``inputs``: serially for ``jobs`` 1 (or a single unit, or one only this
    process can read), else on a pool of ``jobs`` worker processes. ``progress(unit)`` is
    called as each unit is started (serial) or its partial taken (pool)."""
    opts = spread(opts, jobs)
    units = list(op.plan(inputs, opts))
    if jobs <= 1 or len(units) <= 1 or any(getattr(u, "local", False) for u in units):
        partials = _serial(op, units, opts, progress)
    elif op.here is not None:
        partials = _two_ended(op, units, opts, jobs, progress)
    else:
        partials = _pooled(op, units, opts, jobs, progress)
    if op.streams:
        return _streamed(op.merge(partials, opts), partials)
    try:
        return op.merge(partials, opts)
    finally:
        partials.close()  # a merge that stopped early (an error, a signal) ends the workers now


def _streamed(results: Iterator[Any], partials: Iterator[Any]) -> Iterator[Any]:
    """A streaming merge's items; the workers end with it, however it ends (a consumer that
    stops early closes it)."""
    try:
        yield from results
    finally:
        partials.close()


def serial(op: Operation, inputs: Any, opts: Any) -> Any:
    """The reference executor: every unit run here, one after another."""
    return execute(op, inputs, opts, 1)


def pool(op: Operation, inputs: Any, opts: Any, jobs: int) -> Any:
    """A local process pool of ``jobs`` workers; the partials reach merge in plan order."""
    return execute(op, inputs, opts, max(2, jobs))


def _serial(op: Operation, units: list[Any], opts: Any, progress: Callable[[Any], None] | None) -> Iterator[Any]:
    for u in units:
        if progress:
            progress(u)
        yield op.run(u, opts)


def pack(weights: Sequence[int], tasks: int) -> list[range]:
    """Consecutive units grouped so that none of about ``tasks`` groups weighs much more than
    an even share (a unit heavier than a share is a group of its own): few tasks for many
    tiny units, one per unit for large ones."""
    total = sum(max(0, w) for w in weights)
    share = total / max(1, tasks)
    groups: list[range] = []
    start, load = 0, 0
    for i, w in enumerate(weights):
        w = max(0, w)
        if i > start and load + w > share:
            groups.append(range(start, i))
            start, load = i, 0
        load += w
    if weights:
        groups.append(range(start, len(weights)))
    return groups


def _run_group(op: Operation, opts: Any, units: list[Any]) -> list[Any]:
    """A worker's task: the units of one group, stopping at the first that fails (as serial would)."""
    out = []
    for u in units:
        r = run_caught(op, opts, u)
        out.append(r)
        if isinstance(r, Failed):
            break
    return out


def _worker_start(setup: Callable[[], None] | None = None) -> None:
    # Ctrl-C in a terminal reaches every process of the group: the parent decides what it means.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # What the fork brought (modules, the plan) needs no more scanning by the cyclic collector,
    # whose writes would also copy those shared pages into every worker.
    gc.freeze()
    if setup is not None:
        setup()


def _context() -> Any:
    # fork: workers start at once with everything this process has loaded (codec plugins too).
    import multiprocessing  # loaded by a pool only: a serial run starts faster without it

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else methods[0])


def _pooled(op: Operation, units: list[Any], opts: Any, jobs: int,
            progress: Callable[[Any], None] | None) -> Iterator[Any]:
    groups = pack([int(getattr(u, "weight", 0) or 0) for u in units], jobs * TASKS_PER_WORKER)
    pending: deque[tuple[range, Future]] = deque()
    todo = iter(groups)
    workers = min(jobs, len(groups))
    with _running(workers) as executor:
        def submit() -> None:
            g = next(todo, None)
            if g is not None:
                pending.append((g, executor.submit(_run_group, op, opts, [units[i] for i in g])))

        with uninterrupted():
            for _ in range(workers * IN_FLIGHT_PER_WORKER):
                submit()
        while pending:
            g, future = pending.popleft()
            results = future.result()
            submit()  # raises too once the pool is broken
            yield from _taken(units, g, results, progress)


def _taken(units: list[Any], group: range, results: list[Any], progress: Callable[[Any], None] | None) -> Iterator[Any]:
    """A group's partials as a worker returned them, in order (an error it met raised in its place)."""
    for i, r in zip(group, results):
        if progress:
            progress(units[i])
        yield unwrap(r)


@contextmanager
def _running(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` processes for the run inside: shut down when it ends done, ended at
    once when it ends any other way (an error, an interrupt, a consumer that stopped early)."""
    from concurrent.futures.process import BrokenProcessPool

    executor = _start_pool(workers)
    finished = False
    try:
        yield executor
        finished = True
    except BrokenProcessPool:
        raise InputError("a worker process ended unexpectedly (killed, or out of memory?); "
                         "run again with fewer --jobs") from None
    finally:
        if finished:
            executor.shutdown(wait=True)
        else:
            _stop(executor)


def _start_pool(workers: int) -> ProcessPoolExecutor:
    """``workers`` processes, forked from this one (or started with the plugin registry)."""
    from concurrent.futures import ProcessPoolExecutor  # loaded by a pool only, as multiprocessing

    # Workers are forked at the first submit: a signal then would be raised inside the fork
    # hooks (and lost) or in a child before it ignores it; held back, it is raised after.
    with uninterrupted():
        context = _context()
        setup = None if context.get_start_method() == "fork" else load(WORKER_SETUP)()
        return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_start,
                                   initargs=(setup,))


def _two_ended(op: Operation, units: list[Any], opts: Any, jobs: int,
               progress: Callable[[Any], None] | None) -> Iterator[Any]:
    """The pool for an operation with ``here``: this process takes the groups of units from the
    front, each unit's output going out as merge reads it (no spool, no copy); ``jobs - 1``
    workers take them from the back, one group each at a time, until the two ends meet; then the
    workers' partials follow in plan order. Whichever end is faster does more of the work."""
    groups = pack([int(getattr(u, "weight", 0) or 0) for u in units], jobs * TASKS_PER_WORKER)
    workers = max(1, min(jobs - 1, len(groups) - 1))
    claimed: dict[int, Future] = {}
    front, back = 0, len(groups)  # groups[front:back]: taken by neither end yet
    with _running(workers) as executor:
        def top_up() -> None:
            # A group for each idle worker, from the back; never the one this process is on.
            nonlocal back
            with uninterrupted():
                while back - 1 > front and sum(not f.done() for f in claimed.values()) < workers:
                    back -= 1
                    claimed[back] = executor.submit(_run_group, op, opts, [units[i] for i in groups[back]])

        top_up()
        while front < back:
            g = groups[front]
            front += 1
            for i in g:
                if progress:
                    progress(units[i])
                yield op.here(units[i], opts)
                top_up()
        for k in range(back, len(groups)):
            yield from _taken(units, groups[k], claimed.pop(k).result(), progress)


def _stop(executor: ProcessPoolExecutor) -> None:
    """End the workers now (an interrupt, an error, a consumer that stopped early): queued
    tasks are dropped, running ones killed, and each worker reaped so that none is left."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    # Taken before the shutdown, which forgets them when it does not wait.
    manager = getattr(executor, "_executor_manager_thread", None)
    wakeup = getattr(executor, "_executor_manager_thread_wakeup", None)
    executor.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join()
    # The pool's manager thread closes its wake-up pipe as it ends; left running, it races the
    # interpreter's exit hook, which writes to that pipe ("Bad file descriptor" and a traceback on
    # stderr). Still running after the wait (a loaded machine), the pipe is marked closed first: the
    # hook then leaves it alone, and the thread's own close skips it (the pipe goes with the pool).
    if manager is not None:
        manager.join(timeout=5)
        if manager.is_alive() and wakeup is not None:
            wakeup._closed = True
