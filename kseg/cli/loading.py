"""Ctrl-C and SIGTERM outside a command: while kseg is still importing code, exit 130 (143)
at once; once the command has finished, ignore them.

Python's own handler would print a traceback from whichever import it interrupts, or an
"Exception ignored" one from the interpreter's shutdown. The console entry point loads the
command group under ``quiet_interrupts``, and the group loads each command's module
(``KsegGroup``'s table) the same way; then a signal is the command's own business
(``guarded``: exit 130 or 143, no traceback, temporaries removed) until it returns, and
``ignore_interrupts`` covers the shutdown.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

from kseg.cli.exits import EXIT_INTERRUPTED, EXIT_TERMINATED
from kseg.interrupts import is_ours


@contextmanager
def quiet_interrupts() -> Iterator[None]:
    """While the block runs, SIGINT ends the process with 130 and prints nothing, SIGTERM with
    143 and ``kseg: terminated`` (only in the main thread, and only for a signal whose default
    handling was in place: one the parent set to be ignored stays ignored)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for signum, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
        current = signal.getsignal(signum)
        if current is default or is_ours(current):  # kseg's own: the command group's, loading a command
            previous[signum] = signal.signal(signum, _quit_while_loading)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _quit_while_loading(signum: int, frame: object) -> None:
    # nothing has been written yet: nothing to flush or clean up
    if signum == signal.SIGTERM:
        os.write(2, b"kseg: terminated\n")
        os._exit(EXIT_TERMINATED)
    os._exit(EXIT_INTERRUPTED)


def ignore_interrupts() -> None:
    """From now on SIGINT and SIGTERM do nothing (in the main thread): the command is done,
    and only the interpreter's shutdown is left, which a signal would only mar with a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
