"""Live tier: librdkafka and the Java client's tools write to a Kafka 4.3.1 broker, kseg reads it.

``clients.py`` runs the scenario (about three minutes on 2 cores) and keeps it as the corpus
would be kept (``logdir/``, ``records.json``, ``golden/`` from DumpLogSegments) in a temporary
folder; the checks of ``tests/test_kafka_clients_corpus.py`` then run on it: ``kseg verify``,
the records each consumer received, every DumpLogSegments output, the transactions counted.

Needs ``java``, ``mvn`` and the ``confluent-kafka`` package; skipped otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable(clients_release := "4")
if _why:
    pytest.skip(f"live Kafka clients tier skipped: {_why}", allow_module_level=True)
pytest.importorskip("confluent_kafka", reason="live Kafka clients tier skipped: confluent-kafka not installed")

import checks  # noqa: E402
import clients  # noqa: E402

assert clients.RELEASE == clients_release

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_kafka_clients_corpus as corpus  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("kafka-clients") / "4"
    clients.write(root, tmp_path_factory.mktemp("kafka-clients-broker"))
    return root


def test_verify(run: Path) -> None:
    corpus.check_verify(run)


def test_records_as_consumed(run: Path) -> None:
    received = json.loads((run / "records.json").read_text())
    for isolation, partitions in received.items():
        for partition in partitions:
            corpus.check_records(run, isolation, partition)


def test_transactions_counted(run: Path) -> None:
    for partition in clients.TRANSACTIONS:
        corpus.check_transactions(run, partition)


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
