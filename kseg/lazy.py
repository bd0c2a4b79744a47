"""Loading on use: ``"package.module:attribute"`` references, resolved at first need.

What a short command never needs (other commands, the internal-topic decoders, the
tiered-store check) is named this way instead of imported, so that ``kseg dump`` and
``kseg verify`` start fast. Such references are strings at module level, and
tests/test_layers.py treats each as an import (layers, circles) and checks that it
names something that exists.
"""

from __future__ import annotations

import importlib
from typing import Any

_loaded: dict[str, Any] = {}


def load(reference: str) -> Any:
    """The object ``reference`` (``"kseg.x.y:name"``) names; its module is imported the first time."""
    found = _loaded.get(reference)
    if found is None:
        module, _, name = reference.partition(":")
        found = _loaded[reference] = getattr(importlib.import_module(module), name)
    return found
