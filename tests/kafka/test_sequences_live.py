"""Live: kseg's producer-sequence arithmetic (``kseg.model.increment_sequence``, whose C twin is
``kseg/_sequence.h``; every format's lastSequence and record sequence go through them) against
Kafka's own ``DefaultRecordBatch.incrementSequence`` run on the JVM with the release's jars, over
every pair of int32 edge values and random ones: the wrap past int32 max a long-lived idempotent
producer reaches, and the overflow of damaged values (a negative delta) kafka-dump-log.sh prints.
Needs ``java`` and ``mvn``; skipped otherwise (a few seconds: one JVM per release).
"""

from __future__ import annotations

import itertools
import random
import subprocess
from pathlib import Path

import brokers
import pytest

from kseg.model import increment_sequence

_why = brokers.unavailable()
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

SOURCE = Path(__file__).resolve().parent.parent / "java" / "IncrementSequence.java"
INT32 = 1 << 31
EDGES = [-INT32, -INT32 + 1, -16777209, -2, -1, 0, 1, 2, 7, INT32 - 8, INT32 - 2, INT32 - 1]


def _pairs() -> list[tuple[int, int]]:
    rnd = random.Random(31)
    pairs = list(itertools.product(EDGES, repeat=2))
    pairs += [(rnd.randrange(-INT32, INT32), rnd.randrange(-INT32, INT32)) for _ in range(3000)]
    pairs += [(rnd.randrange(INT32 - 100, INT32), rnd.randrange(0, 200)) for _ in range(1000)]  # the wrap
    return pairs


@pytest.mark.parametrize("release", brokers.live_releases())
def test_sequences_as_kafka_computes_them(release: str) -> None:
    pairs = _pairs()
    lib = brokers.fetch(release)
    proc = subprocess.run(["java", *brokers.QUICK_START_OPTS, "-cp", f"{lib}/*", str(SOURCE)],
                          input="".join(f"{b} {d}\n" for b, d in pairs), capture_output=True, text=True, check=True)
    kafka = [int(v) for v in proc.stdout.split()]
    assert len(kafka) == len(pairs)
    wrong = [(b, d, k, increment_sequence(b, d)) for (b, d), k in zip(pairs, kafka) if increment_sequence(b, d) != k]
    assert wrong == []
