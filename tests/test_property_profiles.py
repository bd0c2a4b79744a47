"""Every property test's example count follows the hypothesis profile (``tests/conftest.py``).

``HYPOTHESIS_PROFILE=nightly`` promises twenty times the examples of ``make test`` for every
property test, ``check`` a quarter. A test that fixes its own count with
``settings(max_examples=N)`` silently keeps N under every profile; ``examples(N)`` scales it.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _fixed_counts(path: Path) -> list[int]:
    """Lines of ``path`` that call ``settings(...)`` with a ``max_examples`` of their own."""
    tree = ast.parse(path.read_text(), str(path))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "settings"
            and any(k.arg == "max_examples" for k in node.keywords)]


def test_no_property_test_fixes_its_own_example_count() -> None:
    fixed = {p.name: lines for p in sorted(TESTS.glob("*.py")) if p.name != "conftest.py"
             for lines in [_fixed_counts(p)] if lines}
    assert not fixed, f"settings(max_examples=...) outside conftest (use conftest.examples(n)): {fixed}"


def test_the_rule_sees_a_fixed_count(tmp_path: Path) -> None:
    """The check itself finds both spellings it is meant to catch."""
    sample = tmp_path / "sample.py"
    sample.write_text("from hypothesis import settings\nimport hypothesis\n"
                      "@settings(max_examples=5)\ndef a(): pass\n"
                      "@hypothesis.settings(deadline=None, max_examples=7)\ndef b(): pass\n"
                      "@settings(deadline=None)\ndef c(): pass\n")
    assert _fixed_counts(sample) == [3, 5]
