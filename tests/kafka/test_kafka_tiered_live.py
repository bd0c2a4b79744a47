"""Live tier: tiered storage and share groups on a real Kafka 4.3.1 broker (``tiered.py``).

One broker run (about a minute): ``LocalTieredStorage`` copies the rolled segments of a
``remote.storage.enable`` topic to its folder, local retention deletes them from the log
directory, size retention deletes the oldest from the store; two share groups consume
with the real ``ConsoleShareConsumer``; ``kafka-share-groups.sh --describe --offsets`` reports
them; the broker stops. Then, on its files:

* ``kseg verify --remote-metadata`` passes on the store (segments, indexes, producer
  snapshots, leader epoch checkpoints, the ``.txnindex``) and finds it as
  ``__remote_log_metadata`` says;
* ``kseg state`` of ``__remote_log_metadata`` names exactly the store's segments (ids,
  start offsets, sizes, COPY_SEGMENT_FINISHED) and the deleted ones as DELETE_SEGMENT_FINISHED;
* ``kseg dump --records`` of the store gives the records produced;
* every record of ``__remote_log_metadata``, ``__share_group_state`` and
  ``__consumer_offsets`` (share-group records 10-15 included) decodes;
* ``kseg dump --format kafka`` prints what DumpLogSegments prints: its three internal-topic
  decoders, and every remote file under Kafka's names (DumpLogSegments cannot parse
  ``<offset>-<segment id>`` names);
* ``kseg state`` of ``__share_group_state`` agrees with the share-group tool.

Needs ``java`` and ``mvn`` (and the ``kafka-storage`` test jar); skipped otherwise. The same
checks run without Java on the committed corpus (``tests/test_kafka_tiered_corpus.py``).
"""

from __future__ import annotations

from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable("4")
if _why is None and not any(brokers.fetch("4").glob("kafka-storage-*-test.jar")):
    _why = "the kafka-storage test jar (LocalTieredStorage) was not fetched"
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

import tiered  # noqa: E402


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("tiered-broker")
    manifest = tiered.run(work)
    root = tmp_path_factory.mktemp("tiered-files")
    tiered.copy_run(work, root)
    return root, manifest


def test_store_verifies(run):
    tiered.check_store_verifies(run[0])


def test_metadata_names_the_store(run):
    tiered.check_metadata_names_the_store(run[0])


def test_remote_records(run):
    tiered.check_remote_records(*run)


def test_internal_records_decode(run):
    tiered.check_internal_records_decode(run[0])


def test_dumps_match_kafka(run):
    assert tiered.dump_differences(run[0], tiered.kafka_dumps(run[0])) == []


def test_share_state(run):
    tiered.check_share_state(*run)
