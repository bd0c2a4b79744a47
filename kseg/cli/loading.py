"""Ctrl-C outside a command: while kseg is still importing code, exit 130 at once and
quietly; once the command has finished, ignore it.

Python's own handler would print a traceback from whichever import it interrupts, or an
"Exception ignored" one from the interpreter's shutdown. The console entry point loads the
command group under ``quiet_interrupts``, and the group loads each command's module
(``KsegGroup``'s table) the same way; then an interrupt is the command's own business
(``guarded``: exit 130, no traceback) until it returns, and ``ignore_interrupts`` covers
the shutdown.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

from kseg.cli.exits import EXIT_INTERRUPTED


@contextmanager
def quiet_interrupts() -> Iterator[None]:
    """While the block runs, SIGINT ends the process with 130 and prints nothing (only in the
    main thread, and only where Python's default handler was in place)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    previous = signal.signal(signal.SIGINT, _quit_while_loading)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _quit_while_loading(signum: int, frame: object) -> None:
    os._exit(EXIT_INTERRUPTED)  # nothing has been written yet: nothing to flush or clean up


def ignore_interrupts() -> None:
    """From now on SIGINT does nothing (in the main thread): the command is done, and only the
    interpreter's shutdown is left, which an interrupt would only mar with a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
