"""Load kseg's C accelerator from an instrumented build instead of the in-place one.

``KSEG_SPEEDUPS_SO=/path/_speedups.cpython-*.so`` makes ``import kseg.log._speedups``
load that file (a sanitizer or fuzzing build made by ``make sanitize-build`` or
``make fuzz-build``), leaving the normal build untouched. Imported by
``tests/fuzz/sitecustomize.py`` (so every Python process of a test run, subprocesses
included, gets it) and by ``tests/fuzz/run.py``.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

NAME = "kseg.log._speedups"


class _InstrumentedSpeedups(importlib.abc.MetaPathFinder):
    def __init__(self, path: str) -> None:
        self.path = path

    def find_spec(self, fullname, path=None, target=None):
        if fullname != NAME:
            return None
        return importlib.util.spec_from_file_location(fullname, self.path)


_so = os.environ.get("KSEG_SPEEDUPS_SO")
if _so:
    if not os.path.exists(_so):
        raise SystemExit(f"KSEG_SPEEDUPS_SO={_so}: no such file")
    sys.meta_path.insert(0, _InstrumentedSpeedups(_so))
