"""Live: the real kafka-dump-log.sh still prints the damaged-segment goldens (``fixtures/kafka-damaged/``).

Why: ``tests/test_kafka_damaged_corpus.py`` holds ``kseg-dump-log`` to those goldens without Java; this
runs the check of ``tests/kafka/damaged.py --check`` on a sample (every damage once, its source and flags in turn:
``damaged.sampled``) for each release of the live tier (``brokers.live_releases``: 3.9.2 and 4.3.1 unless
KSEG_KAFKA_RELEASES names others) that has a golden folder, so a changed tool, a changed source fixture or a
changed damage generator shows here (``--check`` runs them all, three minutes a release). Needs ``java``
and ``mvn``; skipped otherwise (about 20 s per release: one JVM per run, three at a time).
"""

from __future__ import annotations

from pathlib import Path

import brokers
import damaged
import pytest

_why = brokers.unavailable()
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

RELEASES = [r for r in brokers.live_releases() if (damaged.FIXTURES / r / damaged.GOLDEN).is_file()]


@pytest.mark.parametrize("release", RELEASES)
def test_kafka_still_prints_the_goldens(release: str, tmp_path: Path) -> None:
    problems = damaged.check_goldens(damaged.FIXTURES / release, tmp_path, sample=True)
    assert problems == [], "\n".join(problems[:20])
