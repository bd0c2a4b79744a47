"""The ``kseg`` command (click): parses options, calls operations, presents results.

``main`` holds the command group and the plain commands, ``plugins`` the
``kseg plugins`` group; ``kseg spark`` lives in ``kseg.spark.cli``. ``run`` is
the console entry point.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from kseg.cli.exits import EXIT_INTERRUPTED


def run() -> Any:
    """The ``kseg`` console script: Ctrl-C while the command is still loading ends it quietly.

    Python's own handler would print a traceback from whichever import it interrupts;
    until the command group is loaded an interrupt exits at once with 130, as the
    commands themselves do later.
    """
    previous = signal.signal(signal.SIGINT, _quit_while_loading)
    try:
        from kseg.cli.main import main  # late: the handler above must be in place first
    finally:
        signal.signal(signal.SIGINT, previous)
    return main()


def _quit_while_loading(signum: int, frame: object) -> None:
    os._exit(EXIT_INTERRUPTED)  # nothing has been written yet: nothing to flush or clean up
