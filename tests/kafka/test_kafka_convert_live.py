"""Live tier: a real Kafka 3.9.2 broker judges ``kseg down-convert`` and ``kseg up-convert``.

One broker runs per module (``converting.run_scenario``: v2, LogAppendTime and v1
topics written by kafka-python, read whole by Fetch v0-v3 requests over a raw
socket; magic 0/1 message sets of every legacy codec produced into v2 and v1
topics, CreateTime and LogAppendTime); all its traffic happens in the module
fixture, then it is stopped and each test runs one of ``converting``'s checks,
the same ones ``tests/test_kafka_convert_corpus.py`` runs on the committed run
(``fixtures/kafka-convert/3.9/``):

* ``kseg down-convert --to-magic 0|1`` of each partition is byte for byte what
  each Fetch version served (snappy field by field, ``CODEC_OUTPUT_MAY_DIFFER``),
  dropping what the broker drops; at a zstd batch the broker answers
  UNSUPPORTED_COMPRESSION_TYPE and kseg refuses the partition (exit 2);
* ``kseg up-convert`` of each produced message set, at the broker's offset and
  given its leader epoch and append time, is the entries the broker wrote.

Needs ``java`` and ``mvn``; skipped otherwise.
"""

from __future__ import annotations

from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable("3.9")
if _why:
    pytest.skip(f"live Kafka conversion tier skipped: {_why}", allow_module_level=True)

import converting  # noqa: E402  (its broker run needs kafka-python, which the test extra installs)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> converting.Scenario:
    return converting.run_scenario(tmp_path_factory.mktemp("kafka-convert"))


def test_live_run_covers_the_cases(scenario: converting.Scenario) -> None:
    converting.check_coverage(scenario)


@pytest.mark.parametrize("topic", converting.DOWN_TOPICS)
@pytest.mark.parametrize("version", sorted(converting.FETCH_MAGIC))
def test_live_down_convert_like_old_fetch(scenario: converting.Scenario, topic: str, version: int,
                                          tmp_path: Path) -> None:
    converting.check_down_convert(scenario, topic, version, tmp_path)


def test_live_down_convert_drops_what_the_broker_drops(scenario: converting.Scenario, tmp_path: Path) -> None:
    converting.check_down_convert_drops(scenario, tmp_path)


@pytest.mark.parametrize("version", converting.ZSTD_FETCHES)
def test_live_down_convert_zstd_refused(scenario: converting.Scenario, version: int, tmp_path: Path) -> None:
    converting.check_zstd_refused(scenario, version, tmp_path)


@pytest.mark.parametrize("index", range(len(converting.UP_REQUESTS)), ids=converting.up_ids())
def test_live_up_convert_like_produce(scenario: converting.Scenario, index: int, tmp_path: Path) -> None:
    converting.check_up_convert(scenario, index, tmp_path)
