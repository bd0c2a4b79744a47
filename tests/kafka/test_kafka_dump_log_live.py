"""Live: the real kafka-dump-log.sh (DumpLogSegments of the live tier's releases: 3.9.2 and 4.3.1 unless
KSEG_KAFKA_RELEASES names others) and ``kseg-dump-log`` on
the same command lines at their edges (``usage.CASES``: help, a missing ``--files``, unknown
options, missing files, ignored names, bad values, decoder classes), compared as
``usage.differences`` says. Needs ``java`` and ``mvn``; skipped otherwise (about a minute: one
JVM per case).
"""

from __future__ import annotations

import brokers
import pytest
import usage

_why = brokers.unavailable()
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)


@pytest.mark.parametrize("release", [r for r in usage.RELEASES if r in brokers.live_releases()])
def test_usage_like_kafka_live(release: str) -> None:
    problems = []
    for case, kafka in usage.kafka_usage(release).items():
        if usage.not_compared(release, case):
            continue
        found = usage.differences(case, kafka, *usage.kseg_usage(release, usage.CASES[case]))
        problems.extend(f"{case}: {p}" for p in found)
    assert problems == []
