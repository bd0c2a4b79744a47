"""Text from the data is printed safely: controls and reordering characters escaped, excerpts short."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kseg.printable import EXCERPT_CHARS, excerpt, printable


def _unsafe(ch: str) -> bool:
    """Controls, and the characters that reorder or hide what follows them on a terminal."""
    return ch < " " or "\x7f" <= ch <= "\x9f" or "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069"


def test_terminal_escapes_and_bidi_overrides_are_escaped() -> None:
    assert printable("t\x1b]0;owned\x07-0") == "t\\x1b]0;owned\\x07-0"
    assert printable("evil\u202etxt.log") == "evil\\u202etxt.log"
    assert printable("a\nb\\c\x9b") == "a\\nb\\\\c\\x9b"
    assert printable("pay\u200bload\ufeff") == "pay\\u200bload\\ufeff"


def test_ordinary_names_are_kept_as_they_are() -> None:
    for name in ("orders-0", "zamówienia-3", "注文-1", "back\\slash", "tab-less name"):
        assert printable(name) == name


def _invisible(ch: str) -> bool:
    """Characters that show nothing, join or move text (also escaped): ALM, zero-width space,
    joiners and LRM/RLM, line and paragraph separators, word joiner and invisible operators, BOM."""
    return ch == "\u061c" or "\u200b" <= ch <= "\u200f" or ch in "\u2028\u2029\ufeff" or "\u2060" <= ch <= "\u2065"


@given(st.text())
def test_nothing_unsafe_survives(text: str) -> None:
    out = printable(text)
    assert not any(_unsafe(ch) or _invisible(ch) for ch in out)
    if not any(_unsafe(ch) or _invisible(ch) for ch in text):
        assert out == text


@given(st.binary(max_size=5000))
def test_excerpts_are_short_and_escaped(data: bytes) -> None:
    out = excerpt(data)
    assert len(out) <= 4 * EXCERPT_CHARS + 40
    assert not any(ch < " " or "\x7f" <= ch <= "\x9f" for ch in out)
    if len(data) > 4 * EXCERPT_CHARS:
        assert out.endswith(f"... ({len(data)} bytes in all)")


def test_an_excerpt_of_a_huge_line_is_bounded() -> None:
    out = excerpt(b"9" * 10_000_000)
    assert out == "9" * EXCERPT_CHARS + "... (10000000 bytes in all)"
    assert excerpt(b"ok\xff") == "ok\\xff"
    assert excerpt("line\\with") == "line\\\\with"
