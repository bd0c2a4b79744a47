"""SIGINT and SIGTERM as exceptions, and cleanup that a second signal cannot cut short.

A writing command cleans up on its way out (``except BaseException``/``finally``): its
temporaries go, the output name is left as it was. ``catching_signals`` makes SIGTERM take
that same way out as Ctrl-C: the signal raises ``Terminated``, a ``KeyboardInterrupt``, so
every such block runs; the command ends with 143 (SIGINT: 130). Once one signal has started
the way out, the next is noted and ignored (the cleanup is under way and must not stop
half-way); a third ends the process at once (a cleanup that hangs, say on an unreachable
object store), leaving what the next run into the same place removes. ``uninterrupted``
holds signals back while a cleanup or a publishing rename runs, and raises on leaving it.

Handlers run in the main thread only; elsewhere these are no-ops.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator

EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + the signal, as a shell reports it
ESCAPE_AFTER = 3  # signals: the first starts the way out, the second is ignored, the third ends the process


class Terminated(KeyboardInterrupt):
    """SIGTERM: a KeyboardInterrupt, so that whatever cleans up after Ctrl-C runs for it too."""


def exit_code(e: BaseException) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED


class _State:
    installed = 0  # nesting of catching_signals
    holding = 0  # nesting of uninterrupted (main thread)
    pending: int | None = None  # a signal held back
    received = 0  # signals since the way out started (0: not started)
    signum: int | None = None  # the signal that started it


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _exception(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _handler(signum: int, frame: Any) -> None:
    if _State.received:  # the way out is under way: let it finish, unless told a third time
        _State.received += 1
        if _State.received >= ESCAPE_AFTER:
            os.write(2, b"kseg: stopped before cleaning up\n")
            os._exit(128 + signum)
        return
    if _State.holding:
        if _State.pending is None:
            _State.pending = signum
        return
    _State.received = 1
    _State.signum = signum
    raise _exception(signum)


def interruption() -> KeyboardInterrupt | None:
    """The signal that started the way out, as its exception, or None: for code whose library
    turned the interrupt into an error of its own (py4j: "Answer from Java side is empty")."""
    return None if _State.signum is None else _exception(_State.signum)


@contextmanager
def catching_signals() -> Iterator[None]:
    """While the block runs, SIGTERM raises ``Terminated`` and SIGINT ``KeyboardInterrupt``
    (each only where the default disposition was in place: a signal the parent set to be
    ignored stays ignored); the previous handlers are back afterwards."""
    if not _main_thread():
        yield
        return
    saved = {}
    for signum, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        current = signal.getsignal(signum)
        if current is default:
            saved[signum] = current
            signal.signal(signum, _handler)
    _State.installed += 1
    try:
        yield
    finally:
        _State.installed -= 1
        for signum, previous in saved.items():
            signal.signal(signum, previous)
        if not _State.installed:
            _State.received, _State.pending = 0, None


def is_ours(handler: Any) -> bool:
    """``handler`` is the one ``catching_signals`` installs (which loading code may stand in for)."""
    return handler is _handler


def stopping() -> bool:
    """A signal has started the way out."""
    return bool(_State.received)


@contextmanager
def uninterrupted() -> Iterator[None]:
    """Signals wait until the block is done (a cleanup, a rename that publishes an output);
    one that came meanwhile is raised on leaving it, unless the way out has already started."""
    if not _main_thread():
        yield
        return
    _State.holding += 1
    try:
        yield
    finally:
        _State.holding -= 1
        if not _State.holding and _State.pending is not None:
            signum, _State.pending = _State.pending, None
            if not _State.received:
                _State.received = 1
                raise _exception(signum)
