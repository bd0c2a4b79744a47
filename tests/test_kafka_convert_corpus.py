"""``kseg down-convert`` and ``kseg up-convert`` against a real Kafka 3.9.2 broker's conversions,
on a kept broker run (no Java needed).

``fixtures/kafka-convert/3.9/`` (``tests/kafka/converting.py``, ``make kafka-convert-corpus``)
holds the ``.log`` files of the v2, LogAppendTime, v1 and zstd partitions as the broker wrote
them (``logdir/``), the complete messages each old Fetch version (v0-v3) got from it when it read
them whole (``fetched/``), and per Produce request of a magic 0/1 message set the set sent, the
same messages at the offset the broker assigned (kseg's input) and the entries the broker wrote
(``produced/``), with the broker's offsets, leader epochs and append times in ``manifest.json``.

The checks are ``converting``'s, the ones the live test (``tests/kafka/test_kafka_convert_live.py``)
runs on a fresh broker:

* ``kseg down-convert --to-magic 0|1`` of each partition is byte for byte what the broker
  served to each Fetch version (snappy field by field: ``checks.CODEC_OUTPUT_MAY_DIFFER``),
  with the control batches and headers dropped and counted;
* ``kseg down-convert`` refuses the zstd partition (exit 2, naming the batch) where the broker
  answered UNSUPPORTED_COMPRESSION_TYPE;
* ``kseg up-convert`` of each produced message set, told the broker's leader epoch and append
  time, is byte for byte the entries the broker wrote;
* the corpus covers what it claims (every codec, commit and abort markers with an aborted data
  batch, LogAppendTime batches, a v1 topic, a zstd batch; every fetch accounted for).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import converting  # noqa: E402

from kseg.log.decode import scan_entries  # noqa: E402

ROOT = converting.CORPUS
pytestmark = pytest.mark.skipif(not (ROOT / "manifest.json").is_file(), reason="no fixtures/kafka-convert corpus")


@pytest.fixture(scope="module")
def scenario() -> converting.Scenario:
    return converting.load_corpus(ROOT)


def test_corpus_covers_the_cases(scenario: converting.Scenario) -> None:
    converting.check_coverage(scenario)
    manifest = json.loads((ROOT / "manifest.json").read_text())
    assert manifest["kafka_version"].startswith(converting.RELEASE + ".")
    assert sorted(p.name for p in (ROOT / "logdir").iterdir()) == sorted(manifest["partitions"])
    assert {f.suffix for f in (ROOT / "logdir").rglob("*") if f.is_file()} == {".log"}
    for f in manifest["fetched"]:  # each fetch started where the previous one's last complete message ended
        entries = scan_entries(scenario.fetched[f["topic"], f["fetch_version"]]).batches
        fetches = f["fetches"]
        assert fetches[0]["offset"] == 0 and sum(x["entries_kept"] for x in fetches) == len(entries)
        kept = 0
        for earlier, later in zip(fetches, fetches[1:]):
            kept += earlier["entries_kept"]
            assert later["offset"] == converting.last_offset(entries[kept - 1]) + 1


@pytest.mark.parametrize("topic", converting.DOWN_TOPICS)
@pytest.mark.parametrize("version", sorted(converting.FETCH_MAGIC))
def test_down_convert_like_old_fetch(scenario: converting.Scenario, topic: str, version: int,
                                     tmp_path: Path) -> None:
    converting.check_down_convert(scenario, topic, version, tmp_path)


def test_down_convert_drops_what_the_broker_drops(scenario: converting.Scenario, tmp_path: Path) -> None:
    converting.check_down_convert_drops(scenario, tmp_path)


@pytest.mark.parametrize("version", converting.ZSTD_FETCHES)
def test_down_convert_zstd_refused(scenario: converting.Scenario, version: int, tmp_path: Path) -> None:
    converting.check_zstd_refused(scenario, version, tmp_path)


@pytest.mark.parametrize("index", range(len(converting.UP_REQUESTS)), ids=converting.up_ids())
def test_up_convert_like_produce(scenario: converting.Scenario, index: int, tmp_path: Path) -> None:
    converting.check_up_convert(scenario, index, tmp_path)
