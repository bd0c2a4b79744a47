"""``kseg dump`` over many files: what it does with each file beyond rendering its events (notes,
hints, the problems counted for the exit code), and the same split into plan / run / merge
(``kseg.ops.executors``) so that worker processes render files side by side and the output is
the single process's, byte for byte."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Iterable, Iterator

from kseg.errors import InputError, KsegError
from kseg.lazy import load
from kseg.log.decode import Tail
from kseg.log.listing import INDEX_SUFFIX, LOG_SUFFIX
from kseg.log.tails import live_tail
from kseg.ops.dump import (BadBatchEvent, BatchEvent, DumpOptions, Event, HeaderRunEvent, LogSlice, NoteEvent,
                           PlainRunEvent, ReadOn, TailEvent, dump_file, sliceable)
from kseg.ops.executors import Operation, here_only, unwrap, weight_of
from kseg.ops.live_output import LiveSpool, follow
from kseg.ops.sniff import KAFKA, format_hint
from kseg.ops.spool import ByteSpool, SpooledBytes
from kseg.printable import printable
from kseg.storage import VANISHED, gone


# --------------------------------------------------------------------------- a dump's files, counted
#
# What ``kseg dump`` does with each file beyond rendering its events: the notes and hints it
# tells on stderr, the problems it counts (for exit 1), an unreadable file under --keep-going
# (exit 2). One function, for the single-process dump and for a unit of the split one.


@dataclass(frozen=True)
class LiveTails:
    """Whether a tail is what a live broker leaves (shown, but not a problem in the data): a
    partial batch at the end of a partition folder's newest segment, or preallocated zeros."""

    newest: frozenset[Path]  # the segments a broker may still be writing (``Group.newest``)

    def __call__(self, path: Path, tail: Tail) -> bool:
        return live_tail(path, tail, path in self.newest) is not None


@dataclass
class DumpCounts:
    problems: int = 0  # bad CRCs, partial or undecodable batches (exit 1)
    unreadable: int = 0  # files --keep-going went past (exit 2)
    batches: int = 0  # shown (a message of v0/v1 is a batch), for a run's report
    records: int = 0  # in the batches shown, whether or not their lines were asked for

    def absorb(self, other: "DumpCounts") -> None:
        self.problems += other.problems
        self.unreadable += other.unreadable
        self.batches += other.batches
        self.records += other.records


def dump_counted(path: Path, options: DumpOptions, consume: Callable[[Event], Any], tell: Callable[[str], Any],
                 live: Callable[[Path, Tail], bool], counts: DumpCounts, piece: LogSlice | None = None) -> bool:
    """One file's events (``piece``: of that slice of it) handed to ``consume`` (a renderer), its
    notes and hints to ``tell`` (a stderr line each), its problems added to ``counts``. An
    unreadable file is raised, or with --keep-going told and counted; one deleted since it was
    listed is a note. Returns whether a slice read on past its end (``ReadOn``)."""
    return _ended(_counted_steps(path, options, consume, tell, live, counts, piece, None))


def _ended(steps: Generator[None, None, bool]) -> bool:
    """What ``steps`` returns, run to its end."""
    try:
        while True:
            next(steps)
    except StopIteration as done:
        return done.value


def _counted_steps(path: Path, options: DumpOptions, consume: Callable[[Event], Any], tell: Callable[[str], Any],
                   live: Callable[[Path, Tail], bool], counts: DumpCounts, piece: LogSlice | None,
                   due: Callable[[], bool] | None) -> Generator[None, None, bool]:
    """``dump_counted``, pausing after an event whenever ``due()`` says so (``Here``: the output
    held so far leaves then); with ``due`` None it runs to its end at once."""
    read_on = False
    try:
        for ev in dump_file(path, options, piece):
            if isinstance(ev, NoteEvent):  # renamed, grew or changed while it was read
                tell(f"kseg: note: {printable(str(ev.path))}: {ev.text}")
                continue
            if isinstance(ev, ReadOn):
                read_on = True
                continue
            consume(ev)
            if isinstance(ev, BatchEvent):
                counts.batches += 1
                counts.records += ev.count
                counts.problems += not ev.crc_valid
            elif isinstance(ev, PlainRunEvent):
                counts.batches += len(ev.run.batches)
                counts.records += len(ev.run.batches)
                counts.problems += len(ev.run.bad_crcs)
            elif isinstance(ev, HeaderRunEvent):
                counts.batches += len(ev.batches)
                counts.records += ev.run.records
                counts.problems += len(ev.run.bad)
            elif (isinstance(ev, BadBatchEvent)
                    or (isinstance(ev, TailEvent) and ev.reported and not live(ev.path, ev.tail))):
                counts.problems += 1
            if isinstance(ev, TailEvent) and ev.reported and ev.tail.position == 0:
                hint = format_hint(path, KAFKA)
                if hint:
                    tell(f"kseg: {path}: {hint}")
            if due is not None and due():
                yield
    except InputError as e:
        if gone(path):  # a local file deleted by the broker since it was listed
            tell(f"kseg: note: {path}: {VANISHED}")
            return True
        if not options.keep_going:
            raise
        tell(f"kseg: error: {e}")  # one line; the rest goes on
        counts.unreadable += 1
        return True
    return read_on


# --------------------------------------------------------------------------- plan / run / merge
#
# Units are files (a partition's segments each one; the pool packs small ones together), and for
# ``-j`` a log heavier than a share of the work is cut into slices at checked batch boundaries
# (``kseg.ops.cuts``), when the options read it alike in slices (``sliceable``). A unit
# is rendered where it runs, by a renderer ``DumpJob.renderer`` makes: on a worker into a spool
# (memory, then a file past a few MiB) with its stderr lines at their places, in the merging
# process (``Here``: the pool's front end) into pieces merge writes out as they come; merge
# streams the units' bytes and lines in plan order, so the output is the single process's, byte
# for byte. What crosses
# files is merge's: the counts (exit code), the renderer's report at the end (its ``state()``
# of each unit, absorbed by the caller's renderer: Kafka's non-consecutive offsets and index
# findings, a decoder's failures), and an error that stops the dump after the output before it.


# Loaded by a dump in slices only (their index reading is no plain dump's).
SLICE_SHARE = "kseg.ops.cuts:slice_share"
CUT_POINTS = "kseg.ops.cuts:cut_points"
ENTRY_STARTS_AT = "kseg.ops.cuts:entry_starts_at"


@dataclass(frozen=True)
class DumpJob:
    """What every unit of a dump shares: the options; ``renderer(out, err)``, a picklable maker
    of the renderer (events in, bytes to ``out``, lines to ``err``, ``state()`` for merge); the
    live-tail rule."""

    options: DumpOptions
    renderer: Callable[[Any, Any], Any]
    live: LiveTails
    workers: int = 1  # what the units are spread over (``executors.spread``): large logs are cut for them


@dataclass(frozen=True)
class DumpUnit:
    path: Path
    spool: str
    weight: int = 0
    local: bool = False
    live: str | None = None  # where the output goes as it is rendered (``live``), not into the partial
    piece: LogSlice | None = None  # a slice of a large log (None: the whole file)


@dataclass
class DumpPartial:
    output: SpooledBytes
    counts: DumpCounts
    state: Any
    error: BaseException | None = None
    piece: LogSlice | None = None
    read_on: bool = False  # a slice that read to the end of its file: merge leaves out the later ones


@dataclass
class DumpTotals:
    """Merge's last item: the counts of the whole dump and each unit's renderer state, in order."""

    counts: DumpCounts = field(default_factory=DumpCounts)
    states: list[Any] = field(default_factory=list)


class _Lines:
    """A renderer's stderr in a unit: its text kept at its place in the output."""

    def __init__(self, spool: ByteSpool | _Held):
        self.spool = spool

    def write(self, text: str) -> int:
        self.spool.note(text)
        return len(text)

    def flush(self) -> None:
        pass


def plan(inputs: tuple[list[Path], str], job: DumpJob) -> list[DumpUnit]:
    """One unit per file, in the order given (``expand_for_dump``'s); a large log in slices."""
    files, spool = inputs
    return _units(files, spool, job.options, job.workers)


def splits(files: list[Path], options: DumpOptions, workers: int) -> bool:
    """Whether a dump of ``files`` spread over ``workers`` has more than one unit (a file is one at
    least: only a lone file is planned to see whether it is cut)."""
    return workers > 1 and (len(files) > 1 or len(_units(files, "", options, workers)) > 1)


def _units(files: list[Path], spool: str, options: DumpOptions, workers: int) -> list[DumpUnit]:
    units = [DumpUnit(f, spool, weight_of([f]), here_only(f)) for f in files]
    share = 0
    if workers > 1 and sliceable(options):
        share = load(SLICE_SHARE)(sum(u.weight for u in units), workers)
    return [s for u in units for s in _sliced(u, share)] if share else units


def log_cuts(path: Path, share: int) -> list[int]:
    """Where a dump cuts a log for slices of about ``share`` bytes (none: it is read whole)."""
    if path.suffix != LOG_SUFFIX or here_only(path):
        return []
    try:
        st = os.stat(path)
    except OSError:
        return []  # (its read says why)
    if st.st_size <= share * 3 // 2:
        return []
    return _cuts(str(path), st.st_size, share, (_identity(st), _identity(path.with_suffix(INDEX_SUFFIX))))


# The last log cut, as its files were then: a lone log given to ``dump -j`` is cut to see whether
# it splits (``splits``), then planned; its index is read (or its entries walked) once.
_last_cut: dict[tuple[Any, ...], tuple[int, ...]] = {}


def _identity(f: os.stat_result | Path) -> tuple[int, ...]:
    """A file as it is now (none: absent)."""
    try:
        st = f if isinstance(f, os.stat_result) else os.stat(f)
    except OSError:
        return ()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _cuts(path: str, size: int, share: int, identity: tuple[tuple[int, ...], ...]) -> list[int]:
    """``cut_points``, or the last log's cuts when its files look the same and an entry with a
    valid CRC still starts at each (a file rewritten within the clock's tick looks the same)."""
    key = (path, size, share, identity)
    found = _last_cut.get(key)
    if found is None or not all(load(ENTRY_STARTS_AT)(path, pos, size) for pos in found):
        found = tuple(load(CUT_POINTS)(path, size, share))
        _last_cut.clear()
        _last_cut[key] = found
    return list(found)


def _sliced(u: DumpUnit, share: int) -> list[DumpUnit]:
    cuts = log_cuts(u.path, share)
    if not cuts:
        return [u]
    starts, ends = [0, *cuts], [*cuts, None]
    return [dataclasses.replace(u, weight=(u.weight if b is None else b) - a, piece=LogSlice(a, b, k, len(starts)))
            for k, (a, b) in enumerate(zip(starts, ends))]


def run(unit: DumpUnit, job: DumpJob) -> DumpPartial:
    """One file (or slice) dumped into a spool (or a live file); an error it met is kept for merge
    to raise in its place."""
    spool: ByteSpool | LiveSpool = LiveSpool(unit.live) if unit.live else ByteSpool(unit.spool)
    counts, error, read_on = DumpCounts(), None, False
    try:
        renderer = job.renderer(spool, _Lines(spool))
        try:
            read_on = dump_counted(unit.path, job.options, renderer, lambda line: spool.note(line + "\n"), job.live,
                                   counts, unit.piece)
        except (KsegError, OSError) as e:
            error = e
        state = renderer.state()
    finally:
        output = spool.done()  # also when the unit fails: a reader of the live file is not left waiting
    return DumpPartial(output, counts, state, error, unit.piece, read_on)


def merge(partials: Iterable[DumpPartial], job: DumpJob) -> Iterator[bytes | str | DumpTotals]:
    """The output in plan order: bytes for stdout, text for stderr; then the totals; then the
    error that stopped the dump, if one did. The slices of a log after one that read on to its
    end are left out: the whole read never got to them."""
    total = DumpTotals()
    read_on = False
    for p in partials:
        if read_on and p.piece is not None and p.piece.part > 0:
            for _ in p.output:  # (a spooled file is removed as it is read)
                pass
            continue
        yield from p.output
        read_on = p.piece is not None and p.read_on  # (known once the output was read: ``Following``)
        total.counts.absorb(p.counts)
        total.states.append(p.state)
        if p.error is not None:
            yield total
            raise p.error
    yield total


def live(unit: DumpUnit, path: str) -> DumpUnit:
    """The unit writing its output to ``path`` as it renders it."""
    return dataclasses.replace(unit, live=path)


class _Later:
    """A unit's partial whose output is read before the rest of it is known: its slice at once
    (merge decides from it whether to show the output), its counts, renderer state, error and
    read-on from the finished partial (``_done``), once the output ended."""

    _done: DumpPartial | None = None

    def __init__(self, unit: DumpUnit):
        self.piece = unit.piece

    @property
    def counts(self) -> DumpCounts:
        return self._partial().counts

    @property
    def state(self) -> Any:
        return self._partial().state

    @property
    def error(self) -> BaseException | None:
        return self._partial().error

    @property
    def read_on(self) -> bool:
        return self._partial().read_on

    def _partial(self) -> DumpPartial:
        if self._done is None:
            raise RuntimeError("a unit's counts are known once its output was read")
        return self._done


class Following(_Later):
    """A unit's partial while it runs (``live``): its output read from the live file as it is
    written; the rest from ``finished()``, once the output ended."""

    def __init__(self, unit: DumpUnit, path: str, finished: Callable[[], Any], running: Callable[[], bool]):
        super().__init__(unit)
        self.output = self._output(path, finished, running)

    def _output(self, path: str, finished: Callable[[], Any], running: Callable[[], bool]) -> Iterator[Any]:
        yield from follow(path, running)
        self._done = unwrap(finished())


class _Held:
    """A renderer's output in this process (``Here``): its bytes and stderr lines in order, until
    merge takes them."""

    def __init__(self) -> None:
        self.items: list[bytes | str] = []
        self.pending = 0

    def write(self, data: bytes) -> int:
        self.items.append(bytes(data))
        self.pending += len(data)
        return len(data)

    def flush(self) -> None:
        pass

    def note(self, text: str) -> None:
        self.items.append(text)

    def due(self) -> bool:
        return self.pending >= HELD_BYTES

    def take(self) -> list[bytes | str]:
        items, self.items, self.pending = self.items, [], 0
        return items


HELD_BYTES = 1 << 20  # a unit rendered here hands merge its output about this much at a time


class Here(_Later):
    """A unit rendered in this process as merge reads its output (``Operation.here``): no spool
    file and no copy, about ``HELD_BYTES`` of output held at a time; the rest of its partial once
    the output ended. Its events and renderer are ``run``'s, so its bytes are too."""

    def __init__(self, unit: DumpUnit, job: DumpJob):
        super().__init__(unit)
        self.output = self._output(unit, job)

    def _output(self, unit: DumpUnit, job: DumpJob) -> Iterator[bytes | str]:
        held = _Held()
        counts, error, read_on = DumpCounts(), None, False
        renderer = job.renderer(held, _Lines(held))
        steps = _counted_steps(unit.path, job.options, renderer, lambda line: held.note(line + "\n"), job.live,
                               counts, unit.piece, held.due)
        try:
            while True:
                try:
                    next(steps)
                except StopIteration as done:
                    read_on = done.value
                    break
                yield from held.take()
        except (KsegError, OSError) as e:
            error = e
        state = renderer.state()
        yield from held.take()
        self._done = DumpPartial(SpooledBytes(None, 0, b"", []), counts, state, error, unit.piece, read_on)


OPERATION = Operation("dump", plan, run, merge, streams=True, live=live, following=Following, here=Here)
