"""``kseg-dump-log`` on damaged segments prints what the real kafka-dump-log.sh printed (no Java needed).

Why: a damaged segment is when an operator runs the tool, and DumpLogSegments' way of failing (which
lines it prints before it stops, the exception, the exit code) is what scripts around it read. The
goldens of ``fixtures/kafka-damaged/<release>/`` (``tests/kafka/damaged.py``; a new release joins by
having a folder there) were made on :func:`damaged.variants`; these are written again once per module
and each row's command is run as the tool was, in the same working directory, with the release's
``--kafka-version``.

Held to: stdout byte for byte, the exit code, and stderr: where the tool died with a stack trace, one
``kseg-dump-log: error:`` line; else the same bytes. Where kseg differs today the row is in
``checks.KNOWN_DIFFERENCES``, the one table of them (one reason per kind of difference; xfail strict, so a
fix shows).
"""

from __future__ import annotations

import fnmatch
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import checks  # noqa: E402
import damaged  # noqa: E402
from test_dump_log_dropin import kseg_version, run_dropin  # noqa: E402

KSEG_ERROR = b"kseg-dump-log: error: "
DAMAGED = "damaged"  # the file patterns of checks.KNOWN_DIFFERENCES for this corpus: damaged/<case>

def known_difference(release: str, row: dict[str, Any]) -> str | None:
    """Why kseg-dump-log differs from the tool on this row today (``checks.KNOWN_DIFFERENCES``, whose file
    patterns for this corpus are ``damaged/<case>``), None where it should print what the tool did."""
    return checks.known_difference(release, f"{DAMAGED}/{row['case']}", row["combo"], broker="*")


def releases() -> list[str]:
    return sorted(p.parent.name for p in damaged.FIXTURES.glob(f"*/{damaged.GOLDEN}"))


def _rows() -> list:
    params = []
    for release in releases():
        for row in damaged.read_goldens(damaged.FIXTURES / release):
            row_id = f"{release}:{row['case']}:{row['combo']}"
            why = known_difference(release, row)
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            params.append(pytest.param(release, row, marks=marks, id=row_id))
    return params


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The variants written as the tool read them: their folder and each case's SHA-256."""
    root = tmp_path_factory.mktemp("kafka-damaged")
    cases = damaged.variants()
    damaged.materialise(root, cases)
    return root, {case: damaged.sha256(data) for case, data in cases.items()}


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


@pytest.mark.parametrize("release,row", _rows())
def test_damaged_like_kafka(release: str, row: dict[str, Any], corpus: tuple[Path, dict[str, str]]) -> None:
    root, sha = corpus
    assert sha.get(row["case"]) == row["sha256"], (
        f"{row['case']}: damaged.variants() no longer makes the bytes the golden was made from: "
        f"python tests/kafka/damaged.py --release {release} --write fixtures/kafka-damaged/{release}")
    problem = mismatch(release, row, root)
    assert problem is None, problem


@pytest.mark.parametrize("release", releases())
def test_every_damage_has_goldens(release: str) -> None:
    """Every damage of DAMAGE, on every source it applies to, with every combination: a new damage, source
    or combination needs its goldens written (and a removed one its goldens dropped)."""
    cases = damaged.variants()
    applies = {name: [s for s in damaged.SOURCES if f"{s}-{name}" in cases] for name in damaged.DAMAGE}
    assert [name for name, sources in applies.items() if not sources] == [], "damages no source takes"
    expected = {(case, combo) for case in cases for combo in damaged.COMBOS}
    rows = damaged.read_goldens(damaged.FIXTURES / release)
    got = {(r["case"], r["combo"]) for r in rows}
    assert len(got) == len(rows), "a case and combination twice"
    assert sorted(expected - got) == [], "no golden (python tests/kafka/damaged.py --write)"
    assert sorted(got - expected) == [], "goldens of no variant"


def unused_patterns(prefix: str, fixtures: Path) -> list[str]:
    """The patterns of checks.KNOWN_DIFFERENCES for the corpus of ``fixtures`` (file patterns ``prefix/<case>``)
    that name no golden row: stale ones, to go. Fails when the corpus has none at all."""
    ids = [f"{prefix}/{r['case']}:{r['combo']}" for folder in sorted(fixtures.glob(f"*/{damaged.GOLDEN}"))
           for r in damaged.read_goldens(folder.parent)]
    ours = [f"{rel}:{combo}" for _, rel, combo in checks.KNOWN_DIFFERENCES if rel.startswith(f"{prefix}/")]
    assert ours, f"no known difference for {prefix}: drop this check"
    return [p for p in ours if not any(fnmatch.fnmatchcase(i, p) for i in ids)]


def manifest_counts(fixtures: Path) -> list[str]:
    """Where a release folder's manifest does not say its release, version or number of runs."""
    problems = []
    for folder in sorted(p.parent for p in fixtures.glob(f"*/{damaged.GOLDEN}")):
        doc = json.loads((folder / damaged.MANIFEST).read_text())
        if (doc["release"], doc["kafka_version"], doc["counts"]["runs"]) != (
                folder.name, damaged.brokers.version(folder.name), len(damaged.read_goldens(folder))):
            problems.append(str(folder))
    return problems


def test_known_differences_are_used() -> None:
    """Each of this corpus's patterns of checks.KNOWN_DIFFERENCES names some golden row (a stale one goes)."""
    assert unused_patterns(DAMAGED, damaged.FIXTURES) == []


def test_manifests() -> None:
    assert releases() and manifest_counts(damaged.FIXTURES) == []
