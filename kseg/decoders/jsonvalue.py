"""JSON from data and from users' decoders, held to what kseg can write back out.

Python's json parses and writes nested values by recursion: a value of 100,000 ``[`` ends in
a RecursionError, and a decoder's ``bytes`` or ``set`` in a TypeError half-way through a
line. Here a parse is depth-limited (a ValueError, never a RecursionError) and a decoded
value is checked, without recursion, before any writer sees it.
"""

from __future__ import annotations

import json
from typing import Any

# Deepest nesting kseg parses or writes: well inside Python's recursion limit (1000), also for
# the indented (pure-Python, recursive) encoder called from deep in a command.
MAX_DEPTH = 500

_SCALARS = (str, int, float, bool, type(None))
_KEYS = (str, int, bool, type(None))  # what json.dumps turns into object keys (floats left out: NaN)


# Python writes an int of up to 4300 digits (sys.int_info.default_max_str_digits); past it, a ValueError.
_MAX_INT_BITS = 14_000


class TooDeep(ValueError):
    """JSON nested deeper than MAX_DEPTH."""


def loads_bounded(data: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads``; nesting deeper than ``max_depth`` raises TooDeep (a ValueError), never a
    RecursionError. Data with fewer brackets than the limit is parsed without a further look."""
    opens = data.count(b"[" if isinstance(data, bytes) else "[") + data.count(b"{" if isinstance(data, bytes) else "{")
    try:
        value = json.loads(data)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {max_depth} levels") from None
    if opens > max_depth and nesting_exceeds(value, max_depth):
        raise TooDeep(f"JSON nested deeper than {max_depth} levels")
    return value


def nesting_exceeds(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether lists and dicts in ``value`` nest deeper than ``max_depth`` (a cycle does)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (list, tuple)):
            children = v
        elif isinstance(v, dict):
            children = v.values()
        else:
            continue
        if depth > max_depth:
            return True
        stack.extend((c, depth + 1) for c in children)
    return False


def json_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why ``value`` cannot be written as JSON (a type JSON has not, a key that is not text,
    nesting past ``max_depth``), or None. Non-finite floats are fine: writers show them as
    strings (``kseg.render.jsonout``)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, _SCALARS):
            if isinstance(v, int) and v.bit_length() > _MAX_INT_BITS:
                return "an integer too large to write as text"
            continue
        if depth > max_depth:
            return f"a value nested deeper than {max_depth} levels"
        if isinstance(v, (list, tuple)):
            stack.extend((c, depth + 1) for c in v)
        elif isinstance(v, dict):
            for k, c in v.items():
                if not isinstance(k, _KEYS):
                    return f"an object key of type {type(k).__name__}, which JSON cannot hold"
                stack.append((c, depth + 1))
        else:
            return f"a value of type {type(v).__name__}, which JSON cannot hold"
    return None
