"""``kseg-dump-log`` on damaged files prints what the real kafka-dump-log.sh printed (no Java needed).

Why: a damaged file is when an operator runs the tool, and DumpLogSegments' way of failing (which lines
it prints before it stops, the exception, the exit code) is what scripts around it read. Two corpora,
one table (:data:`CORPORA`): damaged segments (``fixtures/kafka-damaged/``, ``tests/kafka/damaged.py``)
and damaged companion files and internal-topic records inside whole batches
(``fixtures/kafka-damaged-companions/``, ``tests/kafka/damaged_companions.py``, for the three decoders).
A new release joins a corpus by having a folder there. The goldens were made on the corpus's
``variants()``; these are written again once per corpus and each row's command is run as the tool ran,
in the same working directory, with the release's ``--kafka-version``.

Held to: stdout byte for byte, the exit code, and stderr: where the tool died with a stack trace, one
``kseg-dump-log: error:`` line; else the same bytes. Where kseg differs today the row is in
``checks.KNOWN_DIFFERENCES``, the one table of them, whose file patterns are ``<corpus>/<case>`` (one
reason per kind of difference; xfail strict, so a fix shows).
"""

from __future__ import annotations

import fnmatch
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, NamedTuple

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import checks  # noqa: E402
import damaged  # noqa: E402
import damaged_companions  # noqa: E402
from test_dump_log_dropin import kseg_version, run_dropin  # noqa: E402

KSEG_ERROR = b"kseg-dump-log: error: "


class Corpus(NamedTuple):
    """A corpus of damaged inputs and what the tool printed on them."""

    maker: ModuleType  # FIXTURES, SOURCES, variants(), materialise(), all_runs(), source_bytes()
    uncovered: Callable[[dict[str, bytes]], list[str]]  # what of the corpus's table no case takes


CORPORA: dict[str, Corpus] = {
    "damaged": Corpus(damaged, lambda cases: [
        name for name in damaged.DAMAGE if not any(f"{s}-{name}" in cases for s in damaged.SOURCES)]),
    "damaged-companions": Corpus(damaged_companions, lambda cases: sorted(
        set(damaged_companions.SOURCES) - {damaged_companions.source_of(case) for case in cases})),
}


def known_difference(corpus: str, release: str, row: dict[str, Any]) -> str | None:
    """Why kseg-dump-log differs from the tool on this row today, None where it should print what the tool did."""
    return checks.known_difference(release, f"{corpus}/{row['case']}", row["combo"], broker="*")


def releases(corpus: str) -> list[str]:
    return sorted(p.parent.name for p in CORPORA[corpus].maker.FIXTURES.glob(f"*/{damaged.GOLDEN}"))


def _rows() -> list:
    params = []
    for corpus, c in CORPORA.items():
        for release in releases(corpus):
            for row in damaged.read_goldens(c.maker.FIXTURES / release):
                why = known_difference(corpus, release, row)
                marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
                params.append(pytest.param(corpus, release, row, marks=marks,
                                           id=f"{corpus}:{release}:{row['case']}:{row['combo']}"))
    return params


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[Path, dict[str, str]]]:
    """A corpus's variants written as the tool read them (once per corpus): their folder and each case's
    SHA-256."""
    done: dict[str, tuple[Path, dict[str, str]]] = {}

    def write(corpus: str) -> tuple[Path, dict[str, str]]:
        if corpus not in done:
            root = tmp_path_factory.mktemp(f"kafka-{corpus}")
            cases = CORPORA[corpus].maker.variants()
            CORPORA[corpus].maker.materialise(root, cases)
            done[corpus] = root, {case: damaged.sha256(data) for case, data in cases.items()}
        return done[corpus]
    return write


def mismatch(release: str, row: dict[str, Any], root: Path) -> str | None:
    """How kseg-dump-log differs from the golden row (stdout, stderr, exit code), None if it does not."""
    assert row["command"][0] == "kafka-dump-log.sh"
    rc, out, err = run_dropin([*row["command"][1:], "--kafka-version", kseg_version(release)], root)
    out, err = checks.placeholder_paths(out, root), checks.placeholder_paths(err, root)
    expected_out, expected_err = row["stdout"].encode("latin-1"), row["stderr"].encode("latin-1")
    if out != expected_out:
        return "stdout " + checks._first_diff(expected_out, out)
    if expected_err.startswith(checks.JAVA_EXCEPTION):  # the tool's stack trace: one error line of ours
        if not (err.startswith(KSEG_ERROR) and err.count(b"\n") == 1 and err.endswith(b"\n")):
            return f"stderr: one kseg-dump-log error line expected for {expected_err!r}, got {err[:300]!r}"
    elif err != expected_err:
        return "stderr " + checks._first_diff(expected_err, err)
    if rc != row["exit"]:
        return f"kseg-dump-log exited {rc}, kafka-dump-log.sh {row['exit']}"
    return None


@pytest.mark.parametrize("corpus,release,row", _rows())
def test_damaged_like_kafka(corpus: str, release: str, row: dict[str, Any],
                            written: Callable[[str], tuple[Path, dict[str, str]]]) -> None:
    root, sha = written(corpus)
    maker = CORPORA[corpus].maker
    assert sha.get(row["case"]) == row["sha256"], (
        f"{row['case']}: {maker.__name__}.variants() no longer makes the bytes the golden was made from: "
        f"python tests/kafka/{maker.__name__}.py --release {release} --write fixtures/kafka-{corpus}/{release}")
    problem = mismatch(release, row, root)
    assert problem is None, problem


@pytest.mark.parametrize("corpus,release", [(c, r) for c in CORPORA for r in releases(c)])
def test_every_damage_has_goldens(corpus: str, release: str) -> None:
    """Every case of the corpus's variants() with each of its combinations: a new damage, source or
    combination needs its goldens written (and a removed one its goldens dropped)."""
    maker = CORPORA[corpus].maker
    cases = maker.variants()
    assert CORPORA[corpus].uncovered(cases) == [], "damages or sources no case takes"
    rows = damaged.read_goldens(maker.FIXTURES / release)
    got = {(r["case"], r["combo"]) for r in rows}
    assert len(got) == len(rows), "a case and combination twice"
    expected = set(maker.all_runs(cases))
    assert sorted(expected - got) == [], f"no golden (python tests/kafka/{maker.__name__}.py --write)"
    assert sorted(got - expected) == [], "goldens of no variant"


@pytest.mark.parametrize("corpus", CORPORA)
def test_known_differences_are_used(corpus: str) -> None:
    """Each of the corpus's patterns of checks.KNOWN_DIFFERENCES names some golden row (a stale one goes)."""
    ids = [f"{corpus}/{r['case']}:{r['combo']}" for release in releases(corpus)
           for r in damaged.read_goldens(CORPORA[corpus].maker.FIXTURES / release)]
    ours = [f"{rel}:{combo}" for _, rel, combo in checks.KNOWN_DIFFERENCES if rel.startswith(f"{corpus}/")]
    assert [p for p in ours if not any(fnmatch.fnmatchcase(i, p) for i in ids)] == []


@pytest.mark.parametrize("corpus", CORPORA)
def test_manifests(corpus: str) -> None:
    """Each release folder's manifest says its release, version, number of runs and the sources' bytes."""
    maker = CORPORA[corpus].maker
    assert releases(corpus)
    for release in releases(corpus):
        folder = maker.FIXTURES / release
        doc = json.loads((folder / damaged.MANIFEST).read_text())
        assert (doc["release"], doc["kafka_version"], doc["counts"]["runs"]) == (
            release, damaged.brokers.version(release), len(damaged.read_goldens(folder)))
        assert doc["sources"] == {name: {"path": path, "sha256": damaged.sha256(maker.source_bytes(name))}
                                  for name, path in maker.SOURCES.items()}
