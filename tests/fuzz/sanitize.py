"""Load kseg's C accelerator from an instrumented build instead of the in-place one.

``KSEG_SPEEDUPS_SO=/path/_speedups.cpython-*.so`` makes ``import kseg.log._speedups``
load that file (and ``import kseg._checksum`` the ``_checksum`` build beside it) (a sanitizer or fuzzing build made by ``make sanitize-build`` or
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
CHECKSUM = "kseg._checksum"  # built beside it by tests/fuzz/build.sh, loaded from there too


class _InstrumentedSpeedups(importlib.abc.MetaPathFinder):
    def __init__(self, path: str) -> None:
        self.paths = {NAME: path}
        folder, name = os.path.split(path)
        checksum = os.path.join(folder, name.replace("_speedups", "_checksum", 1))
        if os.path.exists(checksum):
            self.paths[CHECKSUM] = checksum

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.paths:
            return None
        return importlib.util.spec_from_file_location(fullname, self.paths[fullname])


_so = os.environ.get("KSEG_SPEEDUPS_SO")
if _so:
    if not os.path.exists(_so):
        raise SystemExit(f"KSEG_SPEEDUPS_SO={_so}: no such file")
    sys.meta_path.insert(0, _InstrumentedSpeedups(_so))
