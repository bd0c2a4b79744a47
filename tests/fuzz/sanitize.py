"""Load kseg's C accelerator from an instrumented build instead of the in-place one.

``KSEG_SPEEDUPS_SO=/path/_speedups.cpython-*.so`` makes ``import kseg.log._speedups``
load that file (and ``kseg._checksum`` and ``kseg.render._format`` the builds beside it: a
sanitizer or fuzzing build made by ``tests/fuzz/build.sh``), leaving the normal build untouched. Imported by
``tests/fuzz/sitecustomize.py`` (so every Python process of a test run, subprocesses
included, gets it) and by ``tests/fuzz/run.py``.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

NAME = "kseg.log._speedups"
BESIDE = {"kseg._checksum": "_checksum", "kseg.render._format": "_format"}  # built beside it, loaded from there


class _InstrumentedSpeedups(importlib.abc.MetaPathFinder):
    def __init__(self, path: str) -> None:
        self.paths = {NAME: path}
        folder, name = os.path.split(path)
        for module, stem in BESIDE.items():
            other = os.path.join(folder, name.replace("_speedups", stem, 1))
            if os.path.exists(other):
                self.paths[module] = other

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.paths:
            return None
        return importlib.util.spec_from_file_location(fullname, self.paths[fullname])


_so = os.environ.get("KSEG_SPEEDUPS_SO")
if _so:
    if not os.path.exists(_so):
        raise SystemExit(f"KSEG_SPEEDUPS_SO={_so}: no such file")
    sys.meta_path.insert(0, _InstrumentedSpeedups(_so))
