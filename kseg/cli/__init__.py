"""The ``kseg`` command (click): parses options, calls operations, presents results.

``main`` holds the command group and the table of its commands, each imported when it
is used (``dump``, ``verify``, ``write`` for the writing commands, ``tools``,
``internals``, ``plugins``); ``kseg spark`` lives in ``kseg.spark.cli``. ``run`` is the
console entry point.
"""

from __future__ import annotations

import gc
from typing import Any

from kseg.cli.loading import ignore_interrupts, quiet_interrupts

COLLECT_EVERY = 10_000  # new objects between the cycle collector's young-generation runs (Python: 700)


def run() -> Any:
    """The ``kseg`` console script: Ctrl-C (SIGTERM) while the command is still loading ends it
    at once with 130 (143), during the command it ends the command the same way after its cleanup
    (``guarded``), and once the command has finished (its output written) it is ignored."""
    # A dump or a verify makes millions of short-lived objects that hold no cycles (a Batch per
    # entry): reference counting frees them. At Python's default, a collection every 700 new
    # objects, the cycle collector took a fifth of a dump of uncompressed v1 messages. Loading
    # the command makes tens of thousands more that live as long as the process: set before the
    # imports (3% of a small verify was the collector walking them), then frozen out of its way.
    gc.set_threshold(COLLECT_EVERY)
    with quiet_interrupts():
        from kseg.allocator import tune_for_chunks
        from kseg.cli.main import main  # late: the handler above must be in place first
    gc.freeze()
    tune_for_chunks()  # chunk after chunk in the same memory (kseg.allocator)
    try:
        return main(prog_name="kseg")  # the same usage lines and completion variable however started
    finally:
        ignore_interrupts()
