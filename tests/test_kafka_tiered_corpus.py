"""Tiered storage and share groups on files a real Kafka 4.3.1 broker wrote (no Java needed).

``fixtures/kafka-tiered/`` (``tests/kafka/tiered.py``, ``make kafka-tiered-corpus``) holds the
remote store a broker's ``LocalTieredStorage`` wrote (``remote/``: segments, indexes, producer
snapshots, leader epoch checkpoints, a ``.txnindex``; the oldest segment deleted by retention),
the broker's ``__remote_log_metadata-0``, ``__share_group_state-0`` and ``__consumer_offsets-0``
(``logdir/``), what ``kafka-share-groups.sh --describe --offsets`` said before the broker stopped
and the records produced (``manifest.json``), and what DumpLogSegments printed (``dumps/``).

* ``kseg verify --remote-metadata`` finds the store clean and as the metadata says; damaged
  copies (a segment gone, one cut short, one nobody listed, one retention deleted put back)
  give exactly those errors and exit 1;
* ``kseg state`` of the metadata names exactly the store's segments (ids, offsets, sizes,
  COPY_SEGMENT_FINISHED; DELETE_SEGMENT_FINISHED for the deleted one);
* ``kseg dump --records`` of the store gives the records produced;
* every internal record decodes; ``kseg dump --format kafka`` prints what DumpLogSegments
  printed (its ``--remote-log-metadata-decoder``, ``--share-group-state-decoder``,
  ``--offsets-decoder``; the remote files under Kafka's names);
* ``kseg state`` of ``__share_group_state`` agrees with the share-group tool.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import tiered  # noqa: E402

ROOT = tiered.CORPUS
pytestmark = pytest.mark.skipif(not (ROOT / "manifest.json").is_file(), reason="no fixtures/kafka-tiered corpus")


@pytest.fixture(scope="module")
def manifest():
    return json.loads((ROOT / "manifest.json").read_text())


def test_store_verifies():
    tiered.check_store_verifies(ROOT)


def test_metadata_names_the_store():
    tiered.check_metadata_names_the_store(ROOT)


def test_remote_records(manifest):
    tiered.check_remote_records(ROOT, manifest)


def test_internal_records_decode():
    tiered.check_internal_records_decode(ROOT)


def test_dumps_match_kafka(manifest):
    assert tiered.dump_differences(ROOT, tiered.load_dumps(ROOT, manifest)) == []


def test_share_state(manifest):
    tiered.check_share_state(ROOT, manifest)


def test_cross_check_finds_damage(tmp_path):
    root = tmp_path / "c"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("dumps", "manifest.json"))
    folder, = (root / "remote").iterdir()
    logs = sorted(folder.glob("*.log"))
    gone, short, stray = logs[0], logs[1], folder / ("00000000000000099999-" + "A" * 22 + ".log")
    gone.unlink()
    short.write_bytes(short.read_bytes()[:-100])
    shutil.copyfile(logs[-1], stray)
    doc = tiered.kseg_json(["verify", "--no-index", "--remote-metadata", "logdir/__remote_log_metadata-0",
                            "remote"], cwd=root, ok=(1,))
    (cross,) = [f for f in doc["files"] if f["kind"] == "remote-log-metadata"]
    messages = sorted(p["message"] for p in cross["problems"] if p["severity"] == "error")
    sid = gone.stem.split("-", 1)[1]
    assert any(m.startswith(f"segment {sid} of tiered-0") and "not in the store" in m for m in messages), messages
    assert "size differs from the metadata's segmentSizeInBytes" in messages
    assert "last offset differs from the metadata's endOffset" in messages
    assert any("is in the store but no __remote_log_metadata record names it" in m for m in messages)
    assert len(messages) == 4, messages


def test_cross_check_deleted_segment_put_back(tmp_path):
    """A segment retention deleted (DELETE_SEGMENT_FINISHED) that is back in the store is an error."""
    root = tmp_path / "c"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("dumps", "manifest.json"))
    state = tiered.kseg_json(["state", "logdir/__remote_log_metadata-0"], cwd=root)
    part, = state["partitions"][0]["remote_partitions"].values()
    sid, seg = next((k, v) for k, v in part["segments"].items() if v["state"] == "DELETE_SEGMENT_FINISHED")
    folder, = (root / "remote").iterdir()
    (folder / f"{seg['startOffset']:020d}-{sid}.log").write_bytes(b"")
    doc = tiered.kseg_json(["verify", "--no-index", "--remote-metadata", "logdir", "remote"], cwd=root, ok=(1,))
    (cross,) = [f for f in doc["files"] if f["kind"] == "remote-log-metadata"]
    messages = [p["message"] for p in cross["problems"]]
    assert any("DELETE_SEGMENT_FINISHED" in m and "still there" in m for m in messages), messages


def test_no_metadata_partition_is_an_error(tmp_path):
    doc = tiered.kseg_json(["verify", "--remote-metadata", str(ROOT / "logdir" / "__share_group_state-0"),
                            str(ROOT / "remote")], cwd=tmp_path, ok=(1,))
    (cross,) = [f for f in doc["files"] if f["kind"] == "remote-log-metadata"]
    assert "no __remote_log_metadata partition" in cross["problems"][0]["message"]
