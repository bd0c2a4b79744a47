"""kseg's decoders of Kafka's internal topics against the real kafka-dump-log.sh.

fixtures/internal/build.py writes one segment per internal topic from field values
named as in Kafka's schemas (every ``__consumer_offsets`` record type of Kafka 4.4,
``__share_group_state``, ``__remote_log_metadata``, ``__transaction_state``) and,
with ``--golden``, runs Kafka's own DumpLogSegments (4.3.1 from kafka-tools, and
3.9.2) on them. ``kseg dump --format kafka`` must print the same bytes, with and
without ``--skip-record-metadata``, for ``--kafka-version 4`` and ``3.9``. The other
formats are checked against the field values the records were built from.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main

from conftest import REPO

INTERNAL = REPO / "fixtures" / "internal"
_spec = importlib.util.spec_from_file_location("internal_build", INTERNAL / "build.py")
build = importlib.util.module_from_spec(_spec)
sys.modules["internal_build"] = build
_spec.loader.exec_module(build)  # type: ignore[union-attr]


def dump(*args: str) -> bytes:
    old = Path.cwd()
    os.chdir(REPO)
    try:
        r = CliRunner().invoke(main, ["dump", *args], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert r.exit_code == 0, r.stderr
    return r.stdout_bytes


def segment(folder: str) -> str:
    return f"fixtures/internal/{folder}/00000000000000000000.log"


def test_segments_are_reproducible(tmp_path):
    for p in build.write_all(tmp_path):
        assert p.read_bytes() == (INTERNAL / p.parent.name / p.name).read_bytes(), p.parent.name


@pytest.mark.parametrize("folder,family,version,skip", build.GOLDEN_RUNS,
                         ids=[build.golden_name(*r) for r in build.GOLDEN_RUNS])
def test_kafka_lines_are_the_real_tools(folder, family, version, skip):
    golden = INTERNAL / "golden" / build.golden_name(folder, family, version, skip)
    # the "4" goldens are Kafka 4.3.1's tool's (4, the newest 4.x line, names transaction states since 4.4)
    args = ["--format", "kafka", "--kafka-version", "4.3" if version == "4" else version, "--decode", family]
    if skip:
        args.append("--skip-record-metadata")
    assert dump(*args, segment(folder)).decode() == golden.read_text()
    if family != "metadata":  # --decode auto picks the family by the topic folder
        assert dump(*args[:4], "--decode", "auto", *args[6:], segment(folder)).decode() == golden.read_text()


def records(folder: str) -> list[dict]:
    out = dump("--format", "jsonl", "--payload", "hex", "--decode", "auto", segment(folder)).decode().splitlines()
    return [r for r in map(json.loads, out) if r["type"] == "record"]


def test_every_offsets_record_type_decodes_to_its_fields():
    recs = [r for r in records("__consumer_offsets-0") if "key_decoded" in r]
    built = build.offsets_records()
    types = sorted({r["key_decoded"]["version"] for r in recs if r["key_decoded"].get("data") is not None})
    assert types == sorted(build.offsets.RECORD_TYPES)  # every type of Kafka 4.4
    for r, (key, value) in zip(recs, built):
        k, v = r["key_decoded"], r["value_decoded"]
        if k.get("data") is None or (value is not None and v.get("data") is None) or "definitions" in k:
            continue
        schemas = build.offsets.RECORD_TYPES[k["version"]]
        assert build.key_bytes(k["version"], schemas[0], k["data"]) == key
        if value is None:
            assert v is None
        elif v["schema"] != "GroupMetadataValue":  # members' protocol bytes are shown expanded
            assert build.value_bytes(schemas[1], v["version"], v["data"]) == value
    by_schema = {r["value_decoded"]["schema"]: r["value_decoded"] for r in recs if r["value_decoded"]}
    assert by_schema["ShareGroupStatePartitionMetadataValue"]["data"]["initializedTopics"] == [
        {"topicId": build.TOPIC_ORDERS, "topicName": "orders", "partitions": [0, 1, 2]}]
    assert by_schema["ConsumerGroupRegularExpressionValue"]["data"] == {
        "topics": ["payments", "payouts"], "version": 12, "timestamp": build.T0 + 5}
    assert by_schema["StreamsGroupMemberMetadataValue"]["data"]["userEndpoint"] == {"host": "app-1", "port": 8080}
    member = by_schema["GroupMetadataValue"]["data"]["members"][0]
    assert member["subscription"]["rackId"] == "rack-a"
    assert member["assignment"]["assignedPartitions"][1] == {"topic": "payments", "partitions": [0]}
    # a type-0 key with an OffsetCommitValue version 1: Kafka 4.1+ reads type 0 with version 0 only, 4.0 (and 3.x)
    # with any, so kseg reads it by 4.0.2's definitions and says so
    assert (recs[-3]["key_decoded"]["definitions"], recs[-3]["value_decoded"]["definitions"]) == ("4.0.2", "4.0.2")
    assert (recs[-3]["value_decoded"]["schema"], recs[-3]["value_decoded"]["version"]) == ("OffsetCommitValue", 1)
    assert recs[-3]["value_decoded"]["data"]["offset"] == 7
    assert recs[-2]["key_decoded"]["note"] == "unknown record type 9"


def test_share_group_state_fields():
    recs = records("__share_group_state-0")
    assert [r["key_decoded"]["schema"] for r in recs] == ["ShareSnapshotKey", "ShareUpdateKey", "ShareUpdateKey",
                                                          "ShareSnapshotKey", "ShareSnapshotKey", None]
    assert recs[0]["key_decoded"]["data"] == {"groupId": "sg", "topicId": build.TOPIC_ORDERS, "partition": 0}
    snap = recs[3]["value_decoded"]
    assert (snap["schema"], snap["version"]) == ("ShareSnapshotValue", 0)
    assert snap["data"]["startOffset"] == 111 and snap["data"]["deliveryCompleteCount"] == 0
    assert snap["data"]["stateBatches"][1] == {"firstOffset": 110, "lastOffset": 110, "deliveryState": 4,
                                               "deliveryCount": 5}
    assert "deliveryCompleteCount" not in recs[1]["value_decoded"]["data"]  # a tagged field at its default
    assert recs[2]["value_decoded"]["data"]["deliveryCompleteCount"] == 6
    assert recs[4]["value_decoded"] is None  # a tombstone
    text = dump("--decode", "auto", segment("__share_group_state-0")).decode()
    assert 'ShareUpdateKey v1 groupId="sg"' in text and "=> ShareUpdateValue v0 snapshotEpoch=0" in text


def test_remote_log_metadata_fields():
    recs = records("__remote_log_metadata-0")
    assert all(r["key_decoded"] is None for r in recs)
    values = [r["value_decoded"] for r in recs]
    assert [v["schema"] for v in values[:8]] == [
        "RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord", "RemoteLogSegmentMetadataRecord",
        "RemoteLogSegmentMetadataUpdateRecord", "RemoteLogSegmentMetadataUpdateRecord",
        "RemotePartitionDeleteMetadataRecord", "RemotePartitionDeleteMetadataRecord",
        "RemoteLogSegmentMetadataSnapshotRecord"]
    assert values[0]["data"]["remoteLogSegmentId"] == {
        "topicIdPartition": {"name": "orders", "id": build.TOPIC_ORDERS, "partition": 1}, "id": build.SEGMENT_1}
    assert (values[0]["type_id"], values[0]["state"]) == (0, "COPY_SEGMENT_STARTED")
    assert values[2]["data"]["txnIndexEmpty"] is True and values[2]["data"]["customMetadata"] == "c3RvcmU="
    assert values[6]["state"] == "DELETE_PARTITION_FINISHED"
    assert values[8]["notes"] == ["Kafka refuses this record: state can not be null"]
    for r, v in zip(recs, values):  # the decoded fields encode back to the record's bytes
        assert build.remote_value(v["type_id"], v["data"]) == bytes.fromhex(r["value"])


def test_transaction_state_fields():
    recs = records("__transaction_state-0")
    assert [r["value_decoded"] and r["value_decoded"]["state"] for r in recs] == [
        "Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "PrepareEpochFence", None]
    v = recs[3]["value_decoded"]["data"]
    assert (v["previousProducerId"], v["nextProducerId"], v["nextProducerEpoch"], v["clientTransactionVersion"]) \
        == (6, 8, 0, 2)
