"""``kseg-dump-log`` on damaged companion files and internal-topic records prints what kafka-dump-log.sh did.

Why: an index, a snapshot or a checkpoint file goes bad as a segment does, and a decoder
(``--offsets-decoder``, ``--transaction-log-decoder``, ``--cluster-metadata-decoder``) meets bad record
bytes in a batch that is whole; scripts read what the tool prints then. The goldens of
``fixtures/kafka-damaged-companions/<release>/`` (``tests/kafka/damaged_companions.py``, a corpus of its
own beside ``fixtures/kafka-damaged/``) were made on :func:`damaged_companions.variants`; these are written
again once per module and each row's command is run as the tool ran, in the same working directory, with
the release's ``--kafka-version``.

Held as ``tests/test_kafka_damaged_corpus.py`` holds its rows (its :func:`mismatch`): stdout byte for byte,
the exit code, stderr (one ``kseg-dump-log: error:`` line where the tool died with a stack trace). Where kseg
differs today the row is in ``checks.KNOWN_DIFFERENCES`` (file patterns ``damaged-companions/<case>``;
xfail strict, so a fix shows).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import checks  # noqa: E402
import damaged  # noqa: E402
import damaged_companions as companions  # noqa: E402
from test_kafka_damaged_corpus import manifest_counts, mismatch, unused_patterns  # noqa: E402

PREFIX = "damaged-companions"  # the file patterns of checks.KNOWN_DIFFERENCES for this corpus


def known_difference(release: str, row: dict[str, Any]) -> str | None:
    """Why kseg-dump-log differs from the tool on this row today, None where it should print what the tool did."""
    return checks.known_difference(release, f"{PREFIX}/{row['case']}", row["combo"], broker="*")


def releases() -> list[str]:
    return sorted(p.parent.name for p in companions.FIXTURES.glob(f"*/{damaged.GOLDEN}"))


def _rows() -> list:
    params = []
    for release in releases():
        for row in damaged.read_goldens(companions.FIXTURES / release):
            why = known_difference(release, row)
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            params.append(pytest.param(release, row, marks=marks, id=f"{release}:{row['case']}:{row['combo']}"))
    return params


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The variants written as the tool read them: their folder and each case's SHA-256."""
    root = tmp_path_factory.mktemp("kafka-damaged-companions")
    cases = companions.variants()
    companions.materialise(root, cases)
    return root, {case: damaged.sha256(data) for case, data in cases.items()}


@pytest.mark.parametrize("release,row", _rows())
def test_damaged_companion_like_kafka(release: str, row: dict[str, Any],
                                      corpus: tuple[Path, dict[str, str]]) -> None:
    root, sha = corpus
    assert sha.get(row["case"]) == row["sha256"], (
        f"{row['case']}: damaged_companions.variants() no longer makes the bytes the golden was made from: "
        f"python tests/kafka/damaged_companions.py --release {release} "
        f"--write fixtures/kafka-damaged-companions/{release}")
    problem = mismatch(release, row, root)
    assert problem is None, problem


@pytest.mark.parametrize("release", releases())
def test_every_damage_has_goldens(release: str) -> None:
    """Every case of variants() with each of its combinations: a new damage, source or combination needs its
    goldens written (and a removed one its goldens dropped)."""
    cases = companions.variants()
    assert {companions.source_of(case) for case in cases} == set(companions.SOURCES), "sources no damage takes"
    rows = damaged.read_goldens(companions.FIXTURES / release)
    got = {(r["case"], r["combo"]) for r in rows}
    assert len(got) == len(rows), "a case and combination twice"
    expected = set(companions.all_runs(cases))
    assert sorted(expected - got) == [], "no golden (python tests/kafka/damaged_companions.py --write)"
    assert sorted(got - expected) == [], "goldens of no variant"


def test_known_differences_are_used() -> None:
    """Each of this corpus's patterns of checks.KNOWN_DIFFERENCES names some golden row (a stale one goes)."""
    assert unused_patterns(PREFIX, companions.FIXTURES) == []


def test_manifests() -> None:
    assert releases() and manifest_counts(companions.FIXTURES) == []
    for release in releases():
        doc = json.loads((companions.FIXTURES / release / damaged.MANIFEST).read_text())
        assert doc["sources"] == {name: {"path": path, "sha256": damaged.sha256(companions.source_bytes(name))}
                                  for name, path in companions.SOURCES.items()}
