"""The ``kseg`` command (click): parses options, calls operations, presents results.

``main`` holds the command group and the table of its commands, each imported when it
is used (``dump``, ``verify``, ``write`` for the writing commands, ``tools``,
``internals``, ``plugins``); ``kseg spark`` lives in ``kseg.spark.cli``. ``run`` is the
console entry point.
"""

from __future__ import annotations

from typing import Any

from kseg.cli.loading import ignore_interrupts, quiet_interrupts


def run() -> Any:
    """The ``kseg`` console script: Ctrl-C while the command is still loading ends it quietly,
    and once the command has finished (its output written) is ignored."""
    with quiet_interrupts():
        from kseg.cli.main import main  # late: the handler above must be in place first
    try:
        return main()
    finally:
        ignore_interrupts()
