"""Live tier: librdkafka and the Java client's tools write to a Kafka broker, kseg reads it.

``clients.py`` runs the scenario (about three minutes on 2 cores) on one release's broker and keeps it
as the corpus would be kept (``logdir/``, ``records.json``, ``golden/`` from that release's
DumpLogSegments) in a temporary folder; the checks of ``tests/test_kafka_clients_corpus.py`` then run
on it: ``kseg verify``, the records each consumer received, every DumpLogSegments output, the
transactions counted.

One release by default (``clients.DEFAULT_RELEASE``, 4.3.1); ``KSEG_KAFKA_RELEASES`` (as the live dump
tier reads it, ``brokers.live_releases``) runs those of its releases the scenario knows
(``clients.JAVA_TOOLS``) instead, one broker at a time.

Needs ``java``, ``mvn`` and the ``confluent-kafka`` package; skipped otherwise.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import brokers
import clients
import pytest


def _releases() -> list[str]:
    if not os.environ.get("KSEG_KAFKA_RELEASES"):
        return [clients.DEFAULT_RELEASE]
    return [r for r in brokers.live_releases() if r in clients.JAVA_TOOLS]


RELEASES = _releases()
_why = brokers.unavailable(*RELEASES) if RELEASES else "KSEG_KAFKA_RELEASES names no release clients.py runs"
if _why:
    pytest.skip(f"live Kafka clients tier skipped: {_why}", allow_module_level=True)
pytest.importorskip("confluent_kafka", reason="live Kafka clients tier skipped: confluent-kafka not installed")

import checks  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_kafka_clients_corpus as corpus  # noqa: E402


@pytest.fixture(scope="module", params=RELEASES)
def run(request, tmp_path_factory) -> Path:
    """One release's run kept as a corpus (a module-scoped fixture per release: one broker at a time)."""
    release = request.param
    root = tmp_path_factory.mktemp("kafka-clients") / release
    clients.write(root, tmp_path_factory.mktemp(f"kafka-clients-broker-{release}"), release)
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


def test_shows_the_clients(run: Path) -> None:
    corpus.check_shows_the_clients(run)
