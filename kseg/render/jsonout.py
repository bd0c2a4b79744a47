"""Strict JSON for every writer: never a bare ``NaN`` or ``Infinity``, never a character that
reorders or hides text written raw (``kseg.printable.json_safe``).

Python's json writes non-finite floats as ``NaN``/``Infinity``/``-Infinity``, which strict
parsers (jq, most languages) reject. kseg writes them as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"`` instead: the line stays JSON and the value stays
recognisable. The first attempt runs with ``allow_nan=False`` at full speed; only a
document that holds such a float is copied with the floats replaced.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable

from kseg.printable import json_safe

__all__ = ["dumps", "encoder", "finite"]


def _float_text(v: float) -> str:
    return "NaN" if v != v else "Infinity" if v > 0 else "-Infinity"


def finite(v: Any) -> Any:
    """``v`` with its non-finite floats (at any depth) as strings; ``v`` itself when it has none."""
    if isinstance(v, float):
        return v if math.isfinite(v) else _float_text(v)
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [finite(x) for x in v]
    return v


def dumps(obj: Any, **kw: Any) -> str:
    """``json.dumps(obj, **kw)``, strict: non-finite floats written as strings."""
    try:
        return json_safe(json.dumps(obj, allow_nan=False, **kw))
    except ValueError:
        return json_safe(json.dumps(finite(obj), allow_nan=False, **kw))


def encoder(**kw: Any) -> Callable[[Any], str]:
    """A compiled ``JSONEncoder(**kw).encode``, strict as ``dumps`` (for a writer's hot loop)."""
    encode = json.JSONEncoder(allow_nan=False, **kw).encode

    def strict(obj: Any) -> str:
        try:
            return json_safe(encode(obj))
        except ValueError:
            return json_safe(encode(finite(obj)))

    return strict
