"""Live tier: a Kafka 4.3.1 broker driven by its own admin tools and Java clients, kseg checked on it.

One release only (``admin.RELEASE``, 4.3.1), so the live tier's time stays as it was; the other
releases' runs are kept as committed corpora (``fixtures/kafka-admin/<line>``, ``make
kafka-admin-corpus``). ``admin.py`` runs the scenario (several minutes on 2 cores: a JVM per tool call, a second
controller, a Streams application) and keeps it as the corpus is kept (``logdir/``,
``answers/``, ``golden/``) in a temporary folder; the checks of
``tests/test_kafka_admin_corpus.py`` then run on it: verify and index checks, every
DumpLogSegments output, every internal record decoded, ``kseg state``/``kseg txn`` against
what the tools answered.

Needs ``java``, ``javac`` and ``mvn``; skipped otherwise.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable(admin_release := "4") or (None if shutil.which("javac") else "javac not on PATH")
if _why:
    pytest.skip(f"live Kafka admin tier skipped: {_why}", allow_module_level=True)

import admin  # noqa: E402
import checks  # noqa: E402

assert admin.RELEASE == admin_release

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_kafka_admin_corpus as corpus  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kafka-admin") / admin.corpus_dir(admin.RELEASE).name
    admin.write(root, tmp_path_factory.mktemp("kafka-admin-broker"), admin.RELEASE)
    return root


@pytest.mark.parametrize("name", sorted(corpus.CHECKS))
def test_checks(run: Path, name: str) -> None:
    corpus.run_check(run, name)


def test_dump_like_kafka(run: Path) -> None:
    problems = []
    for tool, rel, entry in corpus.dump_cases(run):
        if checks.known_difference(tool, rel, entry["combo"]):
            continue  # a known difference (tests/kafka/checks.py), as the corpus test marks it
        try:
            corpus.check_dump(run, tool, entry)
        except AssertionError as exc:
            problems.append(f"{rel} {entry['combo']}: {exc}")
    assert not problems, "\n".join(problems[:20])
