"""The live tier of the record-types corpus: each release's DumpLogSegments still prints the
committed goldens of ``fixtures/record-types/`` (``oracle/record_types.py --check``; about a minute).
``tests/test_record_types_corpus.py`` holds kseg to those goldens without Java."""

from __future__ import annotations

import sys
from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable()
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

sys.path.insert(0, str(brokers.ORACLE))

import record_types  # noqa: E402


@pytest.mark.parametrize("release", list(record_types.RELEASES))
def test_goldens_are_what_kafka_prints(release: str) -> None:
    assert record_types.check([release]) == []
