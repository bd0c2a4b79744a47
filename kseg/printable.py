"""Text that comes from the data (file and folder names, topic names, lines of a checkpoint,
keys and values) made safe to print on a terminal or in a report.

Rules: nothing from the input reaches a terminal raw. Control characters (C0, DEL, C1) and
the Unicode characters that reorder or hide text (bidirectional overrides and isolates,
zero-width characters) are written as escapes; everything else printable is kept as it is,
so a name in any script reads as itself. An excerpt of offending input is short: at most
``EXCERPT_CHARS`` characters, with the input's whole size said after it.
"""

from __future__ import annotations

import re

EXCERPT_CHARS = 200

# The format characters that move or hide text, as (first, last) code points: ALM, zero-width
# characters and LRM/RLM, line and paragraph separators, the bidi embeddings and overrides, the
# isolates and invisible operators, the BOM. kseg/render/_format.c's ``hides_text`` is the C twin.
HIDING = ((0x061C, 0x061C), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2069), (0xFEFF, 0xFEFF))
_HIDING = "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in HIDING)
# C0 controls, DEL, C1 controls, and those.
_UNSAFE = "\x00-\x1f\x7f-\x9f" + _HIDING
_UNSAFE_RE = re.compile(f"[{_UNSAFE}]")
_ESCAPES = re.compile(f"[\\\\{_UNSAFE}\udc80-\udcff]")  # also backslashes and undecodable bytes
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object) -> str:
    """``text`` with every control and reordering character escaped (``\\x1b``, ``\\u202e``).
    Text with nothing to escape is returned as it is; otherwise backslashes are doubled too,
    so that the escapes read back unambiguously."""
    s = text if isinstance(text, str) else str(text)
    if not _UNSAFE_RE.search(s):
        return s
    return _ESCAPES.sub(_escape, s)


#: what a JSON writer leaves raw of those (it escapes C0 itself)
_JSON_RAW_RE = re.compile(f"[\x7f-\x9f{_HIDING}]")


def json_safe(text: str) -> str:
    """JSON text with the characters ``printable`` escapes that JSON writes raw (DEL, C1 controls,
    the characters that move or hide text) as ``\\uXXXX``: the same values to a parser, nothing
    that reorders a terminal's line. Those characters only occur inside JSON strings."""
    if not _JSON_RAW_RE.search(text):
        return text
    return _JSON_RAW_RE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def excerpt(data: bytes | bytearray | memoryview | str, limit: int = EXCERPT_CHARS) -> str:
    """A short, escaped excerpt of input for an error message: bytes read as UTF-8 (a byte
    that is not, as ``\\xNN``), controls escaped, backslashes doubled, cut to ``limit``
    characters with the input's whole size said after it."""
    if isinstance(data, str):
        text, total, unit, whole = data[: limit + 1], len(data), "characters", True
    else:
        total, unit = len(data), "bytes"
        whole = total <= 4 * limit
        text = bytes(data[: 4 * limit]).decode("utf-8", "surrogateescape")
    shown = _ESCAPES.sub(_escape, text[:limit])
    return f"{shown}... ({total} {unit} in all)" if len(text) > limit or not whole else shown


__all__ = ["EXCERPT_CHARS", "HIDING", "excerpt", "json_safe", "printable"]
