"""Live: the real kafka-dump-log.sh still prints the damaged-input goldens (``fixtures/kafka-damaged/``,
``fixtures/kafka-damaged-companions/``).

Why: ``tests/test_kafka_damaged_corpora.py`` holds
``kseg-dump-log`` to those goldens without Java; this reruns the tool on a sample of each corpus (its
``sampled``: every damage once, sources and flag combinations in turn) for each release of the live tier
(``brokers.live_releases``: 3.9.2 and 4.3.1 unless KSEG_KAFKA_RELEASES names others) that has a golden
folder, so a changed tool, a changed source fixture or a changed damage generator shows here (each module's
``--check DIR`` runs them all, a few minutes a release). Needs ``java`` and ``mvn``; skipped otherwise
(15 to 30 s per corpus and release: one JVM per run, three at a time).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import brokers
import damaged
import damaged_companions
import pytest

_why = brokers.unavailable()
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

CORPORA: list[ModuleType] = [damaged, damaged_companions]


@pytest.mark.parametrize("corpus,release", [
    pytest.param(m, r, id=f"{m.FIXTURES.name}:{r}") for m in CORPORA for r in brokers.live_releases()
    if (m.FIXTURES / r / damaged.GOLDEN).is_file()])
def test_kafka_still_prints_the_goldens(corpus: ModuleType, release: str, tmp_path: Path) -> None:
    problems = corpus.check_goldens(corpus.FIXTURES / release, tmp_path, sample=True)
    assert problems == [], "\n".join(problems[:20])
