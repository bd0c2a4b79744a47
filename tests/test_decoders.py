"""Decoders of what the broker writes about itself (``kseg dump --decode``), the dump of a
partition's other files, and the user-data decoders (``--key-decoder``/``--value-decoder``).

Real files come from /work/shared/realdata (read-only). Every __consumer_offsets,
__cluster_metadata, bootstrap.checkpoint and .snapshot file there must decode with no
raw fallback, and what is decoded is checked against facts visible in the same files,
not against kseg's own output: a group's __consumer_offsets partition is Kafka's
hash of its name, committed offsets lie within the real topics' logs next to them,
partition counts per topic match the folders and the PartitionRecords, and the
metadata.version levels are those SOURCES.md records.

Transactional segments (commits, aborts, their .txnindex and producer snapshot) and a
__transaction_state log are built here; the one real TransactionLogValue vector is
marked with where it came from.
"""

from __future__ import annotations

import base64
import json
import struct
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REALDATA, REPO, examples
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from kseg.cli.main import main
from kseg.companions.build import build_txn_index
from kseg.companions.read import read_producer_snapshot
from kseg.decoders import FAMILIES, DecodedRecord, decode_record, family_for
from kseg.decoders.metadata import decode_metadata_value
from kseg.decoders.schema import F, M, SchemaError, decode, kafka_json, to_snake_upper, uuid_str
from kseg.errors import OlderToolStopsError
from kseg.layouts import CONTROL_KEY, END_TXN_MARKER, SNAPSHOT_ENTRY, SNAPSHOT_HEADER
from kseg.log.encode import build_v2_batch
from kseg.log.records import batch_records
from kseg.log.segment import Segment, partition_segments, segment_file_name
from kseg.model import make_record
from kseg.log.listing import read_kind as file_kind

T0 = 1_700_000_000_000
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions default; the metadata logs below agree


def run(*args, ok=(0,)):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code in ok, (r.exit_code, r.stdout, r.stderr)
    return r


def jsonl(*args) -> list[dict]:
    return [json.loads(line) for line in run("dump", "--format", "jsonl", *args).stdout.splitlines()]


def need_realdata():
    if not REALDATA.is_dir():
        pytest.skip("no realdata folder")


def real(pattern: str) -> list[Path]:
    return sorted(REALDATA.glob(pattern)) if REALDATA.is_dir() else []


OFFSETS_LOGS = real("**/__consumer_offsets-*/*.log")
METADATA_LOGS = real("**/__cluster_metadata-*/*.log")
BOOTSTRAPS = real("**/bootstrap.checkpoint")
SNAPSHOTS = real("**/*.snapshot")
# CodeCrafters' cluster-metadata fixtures are metadata logs outside a __cluster_metadata folder.
LOOSE_METADATA = [p for p in (REALDATA / "kafka-gleam/00000000000000000000.log",
                              REALDATA / "codecrafters-kafka-go/00000000000000000000.log") if p.is_file()]


def rid(p: Path) -> str:
    return str(p.relative_to(REALDATA))


def decoded_records(path: Path, family: str) -> list[tuple]:
    """(batch, record, DecodedRecord or None) of every record of a file."""
    out = []
    for b in Segment(path).batches():
        for r in batch_records(b):
            out.append((b, r, decode_record(family, r, b.is_control)))
    return out


def java_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 wrap)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition_for(group: str, partitions: int = OFFSETS_PARTITIONS) -> int:
    """GroupMetadataManager.partitionFor: Utils.abs(groupId.hashCode) % partitions."""
    h = java_hash(group)
    return 0 if h == -(1 << 31) else abs(h) % partitions


def log_end_offset(folder: Path) -> int | None:
    last = None
    for seg in partition_segments(folder):
        for b in Segment(seg).batches():
            last = b.last_offset
    return None if last is None else last + 1


# --------------------------------------------------------------------------- the schema reader


def test_schema_reader_flexible_and_tagged():
    msg = M("T", "0-1", "1+",
            F("A", "int32"),
            F("B", "string", nullable="0+"),
            F("C", "[]Item", fields=(F("X", "int16"), F("Y", "[]int32"))),
            F("D", "int64", "1+", tagged="1+", tag=0, default=-1),
            F("E", "uuid"))
    uuid = bytes(range(16))
    v0 = struct.pack(">ih", 7, -1) + struct.pack(">i", 1) + struct.pack(">hi", 3, 2) + struct.pack(">ii", 1, 2) + uuid
    assert decode(msg, v0, 0).data == {"a": 7, "b": None, "c": [{"x": 3, "y": [1, 2]}], "e": uuid_str(uuid)}
    # flexible: compact lengths (+1), a struct's tagged section, a known tag and an unknown one
    v1 = (struct.pack(">i", 7) + b"\x03hi" + b"\x02" + struct.pack(">h", 3) + b"\x02" + struct.pack(">i", 9) + b"\x00"
          + uuid + b"\x02" + b"\x00\x08" + struct.pack(">q", 42) + b"\x05\x01\xff")
    d = decode(msg, v1, 1)
    assert d.data == {"a": 7, "b": "hi", "c": [{"x": 3, "y": [9]}], "d": 42, "e": uuid_str(uuid)}
    assert d.notes == ["unknown tagged field 5 (1 bytes) in T skipped"]
    # a tagged field at its default is left out, as Kafka's JSON converters do
    v1_default = v1[:-14] + b"\x01" + b"\x00\x08" + struct.pack(">q", -1)
    assert "d" not in decode(msg, v1_default, 1).data


@pytest.mark.parametrize("data, error", [
    (b"\x00\x00", "runs past the end"),
    # a string or bytes field past the end: in the words of Kafka's readArray (its tools print them)
    (struct.pack(">ih", 1, 5) + b"ab", r"Error reading byte array of 5 byte\(s\): only 2 byte\(s\) available"),
    (struct.pack(">ih", 1, -1) + struct.pack(">i", 2_000_000),
     "Tried to allocate a collection of size 2000000, but there are only 0 bytes remaining"),
    (struct.pack(">ih", 1, -1) + struct.pack(">i", -1), "non-nullable field c was serialized as null"),
    (struct.pack(">ih", 1, -1) + struct.pack(">i", 0) + bytes(16) + b"x", "bytes after the end"),
])
def test_schema_reader_errors(data, error):
    msg = M("T", "0", "none", F("A", "int32"), F("B", "string", nullable="0+"),
            F("C", "[]int32"), F("E", "uuid"))
    with pytest.raises(SchemaError, match=error):
        decode(msg, data, 0)


def test_unknown_version_is_a_schema_error():
    with pytest.raises(SchemaError, match="version 9 is not one kseg knows"):
        decode(M("T", "0-1", "none", F("A", "int8")), b"\x00", 9)


def test_kafka_json_is_jacksons_text():
    assert kafka_json({"a": [1, None, True], "s": "é\n\"", "f": 1e7, "g": 0.5, "h": 1.5e-5}) == \
        '{"a":[1,null,true],"s":"é\\n\\"","f":1.0E7,"g":0.5,"h":1.5E-5}'
    assert to_snake_upper("TopicRecord") == "TOPIC_RECORD"
    assert to_snake_upper("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
    assert to_snake_upper("ClearElrRecord") == "CLEAR_ELR_RECORD"


@examples(300)
@given(key=st.one_of(st.none(), st.binary(max_size=40)), value=st.one_of(st.none(), st.binary(max_size=80)),
       control=st.booleans(), family=st.sampled_from(FAMILIES))
def test_decoders_never_raise(key, value, control, family):
    r = make_record(0, T0, key, value)
    d = decode_record(family, r, control)
    assert d is None or isinstance(d, DecodedRecord)
    if d is not None:
        _kafka_text_or_stop(d, "3.9")
    for part in () if d is None else (d.key, d.value):
        if part is not None:
            json.dumps(part.as_json())
            part.describe()


def _kafka_text_or_stop(d: DecodedRecord, release: str) -> tuple[str | None, str | None] | str:
    """The release's (key, payload), or why its tool stops at the record (its parser's exception, which
    kafka-dump-log.sh lets end the dump: Kafka 3.x's transaction-log parser)."""
    try:
        return d.kafka_text(release)
    except OlderToolStopsError as e:
        assert e.message
        return e.message


@examples(200)
@given(st.data())
def test_decoders_never_raise_on_damaged_real_records(data):
    """Real records cut, extended and with a byte flipped: decoded or raw with a note."""
    need_realdata()
    path = data.draw(st.sampled_from([p for p in OFFSETS_LOGS + METADATA_LOGS if p.stat().st_size < 40000]))
    family = family_for(path, "auto")
    batch = next(Segment(path).batches())
    rec = batch_records(batch)[0]
    value = rec.value or b""
    cut = data.draw(st.integers(0, len(value)))
    damaged = bytearray(value[:cut] + data.draw(st.binary(max_size=8)))
    if damaged:
        i = data.draw(st.integers(0, len(damaged) - 1))
        damaged[i] ^= data.draw(st.integers(1, 255))
    d = decode_record(family, rec._replace(value=bytes(damaged)), batch.is_control)
    if d is not None and d.value is not None and d.value.is_raw:
        assert d.value.note


INTERNAL_LOGS = sorted((REPO / "fixtures" / "internal").glob("__*-0/*.log"))


@examples(300)
@given(st.data())
def test_decoders_never_raise_on_damaged_internal_records(data):
    """Every record of fixtures/internal (all families), its key or value cut, extended and
    with a byte flipped: decoded, or raw with a note, and kafka lines for both releases."""
    path = data.draw(st.sampled_from(INTERNAL_LOGS))
    family = family_for(path, "auto")
    recs = [r for b in Segment(path).batches() if not b.is_control for r in batch_records(b)]
    rec = data.draw(st.sampled_from(recs))
    which = data.draw(st.sampled_from(["key", "value"]))
    raw = getattr(rec, which) or b""
    cut = data.draw(st.integers(0, len(raw)))
    damaged = bytearray(raw[:cut] + data.draw(st.binary(max_size=8)))
    if damaged and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(damaged) - 1))
        damaged[i] ^= data.draw(st.integers(1, 255))
    d = decode_record(family, rec._replace(**{which: bytes(damaged)}))
    assert isinstance(d, DecodedRecord)
    for part in (d.key, d.value):
        if part is not None:
            json.dumps(part.as_json())
            part.describe()
            assert not part.is_raw or part.note
    assert d.kafka_text() != (None, None) and _kafka_text_or_stop(d, "3.9") != (None, None)


# --------------------------------------------------------------------------- family selection


@pytest.mark.parametrize("path, family", [
    ("d/__consumer_offsets-7/00000000000000000000.log", "offsets"),
    ("d/__transaction_state-49/00000000000000000000.log.deleted", "transactions"),
    ("d/__cluster_metadata-0/00000000000000000000.log", "metadata"),
    ("d/__cluster_metadata-0/00000000000000001234-0000000005.checkpoint", "metadata"),
    ("d/bootstrap.checkpoint", "metadata"),
    ("d/__share_group_state-3/00000000000000000000.log", "share-group-state"),
    ("d/__remote_log_metadata-12/00000000000000000000.log", "remote-log-metadata"),
    ("d/orders-0/00000000000000000000.log", None),
    ("d/__consumer_offsets/00000000000000000000.log", None),
])
def test_auto_family(path, family):
    assert family_for(path, "auto") == family
    assert family_for(path, "offsets") == "offsets"
    assert family_for(path, None) is None and family_for(path, "none") is None


def test_file_kinds_of_text_files():
    assert file_kind(Path("x/leader-epoch-checkpoint"), strict=True) == "leader_epoch"
    assert file_kind(Path("x/partition.metadata"), strict=True) == "partition_metadata"
    assert file_kind(Path("x/quorum-state"), strict=True) == "quorum_state"
    assert file_kind(Path("x/bootstrap.checkpoint"), strict=True) == "checkpoint"


# --------------------------------------------------------------------------- real __consumer_offsets


def test_realdata_inventory():
    need_realdata()
    assert len(OFFSETS_LOGS) >= 10 and len(METADATA_LOGS) == 3 and len(BOOTSTRAPS) == 3 and len(SNAPSHOTS) >= 70


@pytest.mark.parametrize("path", OFFSETS_LOGS, ids=rid)
def test_real_consumer_offsets_decode_without_fallback(path):
    rows = decoded_records(path, "offsets")
    assert rows
    for b, r, d in rows:
        assert d is not None and not d.fallbacks, (r.offset, d)
        assert d.key is not None and d.key.schema in ("OffsetCommitKey", "GroupMetadataKey")
        if r.value is None:
            assert d.value is None and d.kafka_payload == "<DELETE>"
        else:
            assert d.value.schema == {"OffsetCommitKey": "OffsetCommitValue",
                                      "GroupMetadataKey": "GroupMetadataValue"}[d.key.schema]
            assert not d.value.notes


@pytest.mark.parametrize("path", OFFSETS_LOGS, ids=rid)
def test_real_groups_sit_in_their_hash_partition(path):
    """Kafka puts a group's records in partition abs(hash(group)) % 50: every decoded
    group name (offset commits and group metadata) must name this folder's partition."""
    partition = int(path.parent.name.rsplit("-", 1)[1])
    groups = {d.key.data["group"] for _, _, d in decoded_records(path, "offsets")}
    assert groups
    for g in groups:
        assert offsets_partition_for(g) == partition, g


def test_real_group_names():
    need_realdata()
    groups = defaultdict(set)
    for p in OFFSETS_LOGS:
        for _, _, d in decoded_records(p, "offsets"):
            groups[rid(p).split("/")[0]].add(d.key.data["group"])
    assert "DEVSmileCDR" in groups["LDI-POC"]
    assert {"sensor-group", "sensor-consumer-group", "console-consumer-10214"} <= groups["Experts-in-team-innovation"]
    assert "third" in groups["kafkafun"]
    assert "KMOffsetCache-kafkamanager" in groups["project_data_enginnering"]


def test_real_committed_offsets_lie_within_the_topics_logs():
    """A committed offset is the next offset to read: 0 <= offset <= the topic-partition's
    log end offset, for every commit whose topic folder is in the same data directory."""
    need_realdata()
    checked = 0
    for p in OFFSETS_LOGS:
        for _, _, d in decoded_records(p, "offsets"):
            if d.key.schema != "OffsetCommitKey" or d.value is None:
                continue
            k = d.key.data
            folder = p.parent.parent / f"{k['topic']}-{k['partition']}"
            if not folder.is_dir() or not partition_segments(folder):
                continue
            end = log_end_offset(folder)
            assert 0 <= d.value.data["offset"] <= end, (rid(p), k, d.value.data, end)
            checked += 1
    assert checked >= 20


def test_real_group_subscriptions_are_expanded():
    """Consumer-protocol members' subscription/assignment bytes become objects naming real topics."""
    need_realdata()
    data_dir = REALDATA / "Experts-in-team-innovation/kafka/data"
    topics = metadata_topics(data_dir / "__cluster_metadata-0/00000000000000000000.log")
    seen = 0
    for p in sorted(data_dir.glob("__consumer_offsets-*/*.log")):
        for _, _, d in decoded_records(p, "offsets"):
            if d.value is None or d.value.schema != "GroupMetadataValue":
                continue
            for m in d.value.data["members"]:
                assert set(m["subscription"]["topics"]) <= set(topics.values())
                for a in m["assignment"]["assignedPartitions"]:
                    assert a["topic"] in topics.values()
                seen += 1
    assert seen


def test_real_offsets_kafka_lines():
    need_realdata()
    path = REALDATA / "project_data_enginnering/data/kafka/__consumer_offsets-11/00000000000000000001.log"
    out = run("dump", "--format", "kafka", "--decode", "offsets", path).stdout.splitlines()
    assert out[3] == ('| offset: 1 CreateTime: 1625263313282 keySize: 30 valueSize: 32 sequence: -1 headerKeys: [] '
                      'key: {"type":"2","data":{"group":"KMOffsetCache-kafkamanager"}} '
                      'payload: {"version":"3","data":{"protocolType":"consumer","generation":2,"protocol":null,'
                      '"leader":null,"currentStateTimestamp":1625263313279,"members":[]}}')
    assert out[5].endswith('key: {"type":"2","data":{"group":"KMOffsetCache-kafkamanager"}} payload: <DELETE>')
    commit = REALDATA / "LDI-POC/__consumer_offsets-6/00000000000000000000.log"
    lines = [x for x in run("dump", "--format", "kafka", "--decode", "auto", commit).stdout.splitlines()
             if '"type":"1"' in x]
    assert len(lines) == 7 and all(' key: {"type":"1","data":{"group":"DEVSmileCDR","topic":"' in x for x in lines)
    assert lines[-1].endswith(' key: {"type":"1","data":{"group":"DEVSmileCDR","topic":"TestTopicPatient",'
                              '"partition":0}} payload: {"version":"3","data":{"offset":3,"leaderEpoch":-1,'
                              '"metadata":"","commitTimestamp":1769793578176}}')


def test_real_offsets_jsonl_and_text():
    need_realdata()
    path = REALDATA / "Experts-in-team-innovation/kafka/data/__consumer_offsets-19/00000000000000000000.log"
    recs = [o for o in jsonl("--decode", "auto", path) if o["type"] == "record"]
    assert [o["key_decoded"]["schema"] for o in recs] == ["GroupMetadataKey"] * 3
    assert recs[0]["key_decoded"] == {"schema": "GroupMetadataKey", "version": 2,
                                      "data": {"group": "console-consumer-10214"}}
    v = recs[0]["value_decoded"]
    assert v["schema"] == "GroupMetadataValue" and v["version"] == 3
    assert v["data"]["members"][0]["subscription"]["topics"]
    assert recs[2]["value"] is None and recs[2]["value_decoded"] is None  # a tombstone
    text = run("dump", "--decode", "auto", path).stdout
    assert 'GroupMetadataKey v2 group="console-consumer-10214" => GroupMetadataValue v3 protocolType="consumer"' in text
    assert 'group="console-consumer-10214" => <tombstone>' in text
    # without --decode the jsonl contract is unchanged
    plain = [o for o in jsonl("--records", path) if o["type"] == "record"]
    assert all("key_decoded" not in o and "value_decoded" not in o for o in plain)


# --------------------------------------------------------------------------- real metadata log


def metadata_topics(path: Path) -> dict[str, str]:
    return {d.value.data["topicId"]: d.value.data["name"] for _, _, d in decoded_records(path, "metadata")
            if d is not None and d.value is not None and d.value.schema == "TopicRecord"}


@pytest.mark.parametrize("path", METADATA_LOGS + BOOTSTRAPS + LOOSE_METADATA, ids=rid)
def test_real_metadata_decodes_without_fallback(path):
    rows = decoded_records(path, "metadata")
    assert rows
    for b, r, d in rows:
        assert d is not None and not d.fallbacks, (r.offset, d)
        assert d.key is None and d.value is not None and not d.value.notes
        if b.is_control:
            assert d.value.schema in ("LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord")
        else:
            assert d.value.extra["type"] == to_snake_upper(d.value.schema)
            assert d.kafka_payload.startswith('{"type":"' + d.value.extra["type"] + '","version":')


@pytest.mark.parametrize("path", METADATA_LOGS + LOOSE_METADATA, ids=rid)
def test_real_metadata_topics_and_partitions(path):
    """Each TopicRecord's partitions are PartitionRecords numbered 0..n-1 (none orphaned),
    and every <topic>-<n> folder beside the metadata log is a known topic with partition n."""
    topics = metadata_topics(path)
    partitions = defaultdict(set)
    for _, _, d in decoded_records(path, "metadata"):
        if d is not None and d.value is not None and d.value.schema == "PartitionRecord":
            partitions[d.value.data["topicId"]].add(d.value.data["partitionId"])
            assert len(d.value.data["replicas"]) >= 1 and d.value.data["leader"] in d.value.data["replicas"]
    assert topics and set(partitions) == set(topics)
    counts = {topics[t]: len(ps) for t, ps in partitions.items()}
    for t, ps in partitions.items():
        assert ps == set(range(len(ps))), topics[t]
    if path.parent.name.startswith("__cluster_metadata-"):
        for folder in path.parent.parent.iterdir():
            if folder.is_dir() and not folder.name.startswith("__cluster_metadata"):
                topic, _, n = folder.name.rpartition("-")
                assert topic in counts and int(n) < counts[topic], folder.name
        if "__consumer_offsets" in counts:
            assert counts["__consumer_offsets"] == OFFSETS_PARTITIONS


def test_real_metadata_known_topics():
    need_realdata()
    ldi = set(metadata_topics(REALDATA / "LDI-POC/__cluster_metadata-0/00000000000000000000.log").values())
    assert {"TestTopicPatient", "__consumer_offsets"} <= ldi
    gleam = REALDATA / "kafka-gleam/00000000000000000000.log"
    assert set(metadata_topics(gleam).values()) == {"saz"}


def feature_levels(path: Path) -> dict[str, int]:
    return {d.value.data["name"]: d.value.data["featureLevel"] for _, _, d in decoded_records(path, "metadata")
            if d is not None and d.value is not None and d.value.schema == "FeatureLevelRecord"}


@pytest.mark.parametrize("rel, level", [
    ("LDI-POC/bootstrap.checkpoint", 19),  # SOURCES.md: metadata.version=19 (3.7-IV4)
    ("LDI-POC/__cluster_metadata-0/00000000000000000000.log", 19),
    ("kafka-gleam/00000000000000000000.log", 20),  # SOURCES.md: metadata.version=20
    ("Experts-in-team-innovation/kafka/data/bootstrap.checkpoint", 20),  # SOURCES.md: 3.8-IV0
    ("Experts-in-team-innovation/kafka/data/__cluster_metadata-0/00000000000000000000.log", 20),
])
def test_real_metadata_version(rel, level):
    need_realdata()
    assert feature_levels(REALDATA / rel)["metadata.version"] == level


def test_real_metadata_kafka_lines():
    need_realdata()
    boot = REALDATA / "LDI-POC/bootstrap.checkpoint"
    out = run("dump", "--format", "kafka", "--decode", "auto", boot).stdout.splitlines()
    assert out[:2] == [f"Dumping {boot}", "KRaft bootstrap snapshot"]
    assert out[3] == ("| offset: 0 CreateTime: 1769791430952 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] "
                      'SnapshotHeader {"version":0,"lastContainedLogTimestamp":0}')
    assert out[5] == ("| offset: 1 CreateTime: 1769791430996 keySize: -1 valueSize: 23 sequence: -1 headerKeys: [] "
                      'payload: {"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version",'
                      '"featureLevel":19}}')
    assert out[7].endswith('headerKeys: [] SnapshotFooter {"version":0}')
    gleam = REALDATA / "kafka-gleam/00000000000000000000.log"
    payloads = [x.split(" payload: ", 1)[1] for x in
                run("dump", "--format", "kafka", "--decode", "metadata", gleam).stdout.splitlines() if " payload: " in x]
    topic = json.loads(payloads[1])
    assert topic["type"] == "TOPIC_RECORD" and topic["data"]["name"] == "saz"
    parts = [json.loads(x) for x in payloads if '"PARTITION_RECORD"' in x]
    assert [p["data"]["partitionId"] for p in parts] == [0, 1]
    assert all(p["data"]["topicId"] == topic["data"]["topicId"] for p in parts)


def test_real_metadata_jsonl_and_text():
    need_realdata()
    path = REALDATA / "LDI-POC/bootstrap.checkpoint"
    recs = [o for o in jsonl("--decode", "auto", path) if o["type"] == "record"]
    assert recs[1]["value_decoded"] == {"schema": "FeatureLevelRecord", "version": 0, "type": "FEATURE_LEVEL_RECORD",
                                        "type_id": 12, "data": {"name": "metadata.version", "featureLevel": 19}}
    assert recs[0]["key_decoded"] is None and recs[0]["value_decoded"]["schema"] == "SnapshotHeaderRecord"
    text = run("dump", "--decode", "auto", path).stdout
    assert 'FeatureLevelRecord v0 name="metadata.version" featureLevel=19' in text
    assert "(control) SnapshotHeaderRecord v0 version=0 lastContainedLogTimestamp=0" in text


def test_unknown_metadata_type_and_version_are_raw_with_a_note():
    unknown_type = decode_metadata_value(bytes([1, 90, 0, 0]))
    assert unknown_type.is_raw and "unknown metadata record type 90" in unknown_type.note
    assert unknown_type.as_json()["raw"] == "015a0000"
    newer = decode_metadata_value(bytes([1, 2, 9]) + b"\x02x" + bytes(16) + b"\x00")
    assert newer.is_raw and newer.schema == "TopicRecord" and "version 9 is not one kseg knows" in newer.note
    r = make_record(5, T0, None, bytes([1, 90, 0, 0]))
    d = decode_record("metadata", r)
    assert d.kafka_payload.startswith("Error at 5, skipping. ")


# --------------------------------------------------------------------------- offsets: unknown types


def offsets_key(rtype: int, body: bytes) -> bytes:
    return struct.pack(">h", rtype) + body


def kstr(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def test_unknown_offsets_record_type_is_raw():
    d = decode_record("offsets", make_record(9, T0, offsets_key(9, kstr("g")), b"\x00\x00"))
    assert [p.note for p in d.fallbacks] == ["unknown record type 9"] * 2
    assert d.kafka_key == "Unknown record type 9 at offset 9, skipping." and d.kafka_payload is None


def test_unknown_offsets_value_version_is_raw():
    key = offsets_key(1, kstr("g") + kstr("t") + struct.pack(">i", 0))
    d = decode_record("offsets", make_record(3, T0, key, struct.pack(">hq", 9, 5)))
    assert d.key.data == {"group": "g", "topic": "t", "partition": 0}
    assert d.value.is_raw and "OffsetCommitValue version 9" in d.value.note
    assert d.kafka_key.startswith("Error at offset 3, skipping. ")


def test_offsets_commit_versions():
    key = offsets_key(1, kstr("g") + kstr("t") + struct.pack(">i", 2))
    v1 = struct.pack(">hq", 1, 12) + kstr("m") + struct.pack(">qq", T0, T0 + 5)
    assert decode_record("offsets", make_record(0, T0, key, v1)).value.data == \
        {"offset": 12, "metadata": "m", "commitTimestamp": T0, "expireTimestamp": T0 + 5}
    v4 = struct.pack(">hqi", 4, 12, 3) + b"\x02m" + struct.pack(">q", T0) + b"\x00"  # flexible
    d = decode_record("offsets", make_record(0, T0, key, v4))
    assert d.value.data == {"offset": 12, "leaderEpoch": 3, "metadata": "m", "commitTimestamp": T0}
    assert d.kafka_payload == f'{{"version":"4","data":{{"offset":12,"leaderEpoch":3,"metadata":"m","commitTimestamp":{T0}}}}}'


def test_value_cut_short_is_javas_null_message():
    """Java's reader throws a BufferUnderflowException, whose message is null, where the bytes end
    too soon (Kafka 4.3.1's --offsets-decoder on Kafka 3.9's early-access ShareGroupMetadataValue,
    fixtures/record-types/3.9/golden-kafka-4/offsets.stdout)."""
    d = decode_record("offsets", make_record(80, T0, offsets_key(3, kstr("g")), struct.pack(">hi", 0, 7)[:4]))
    assert d.value.is_raw
    assert d.kafka_key == ("Error at offset 80, skipping. Could not read record with version 0 from value's "
                           "buffer due to: null.")


@pytest.mark.parametrize("version,directory_ids", [(0, False), (1, True), (32767, True), (-300, False)])
def test_control_message_printed_at_its_version_field(version, directory_ids):
    """kafka-dump-log.sh prints a KRaft control message at the version its own Version field holds
    (a LeaderChange's voterDirectoryId, '1+', appears from 1 on: fixtures/record-types/4/golden/metadata.stdout)."""
    from kseg.decoders import control_kafka_text
    from kseg.decoders.metadata import CONTROL_RECORDS
    from kseg.decoders.schema import encode

    schema = CONTROL_RECORDS[2][0]
    value = encode(schema, {"version": version, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": []}, 0)
    text = control_kafka_text(make_record(0, T0, CONTROL_KEY.struct.pack(0, 2), value), "4")
    voter = '{"voterId":1,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA"}' if directory_ids else '{"voterId":1}'
    assert text == f'LeaderChange: {{"version":{version},"leaderId":1,"voters":[{voter}],"grantingVoters":[]}}'


def test_consumer_group_record_type():
    key = offsets_key(3, kstr("grp"))
    d = decode_record("offsets", make_record(0, T0, key, struct.pack(">hi", 0, 7) + b"\x00"))
    assert (d.key.schema, d.key.data) == ("ConsumerGroupMetadataKey", {"groupId": "grp"})
    assert (d.value.schema, d.value.data) == ("ConsumerGroupMetadataValue", {"epoch": 7})


# --------------------------------------------------------------------------- __transaction_state


def txn_key(tid: str) -> bytes:
    return struct.pack(">h", 0) + kstr(tid)


def txn_value_v0(pid: int, epoch: int, status: int, partitions: dict[str, list[int]] | None, ts: int) -> bytes:
    out = struct.pack(">hqhib", 0, pid, epoch, 60000, status)
    if partitions is None:
        out += struct.pack(">i", -1)
    else:
        out += struct.pack(">i", len(partitions))
        for topic, ids in partitions.items():
            out += kstr(topic) + struct.pack(">i", len(ids)) + b"".join(struct.pack(">i", i) for i in ids)
    return out + struct.pack(">qq", ts, ts - 100)


# A TransactionLogValue v1 (flexible) written by a Kafka 4.0 broker at transaction.version 1:
# the Ongoing record of transactional id "my-txn-id" on __transaction_state-11, copied out of
# the segment with dd | xxd and published with its kafka-dump-log --transaction-log-decoder
# output (state Ongoing, partitions [txtest-0], timeout 60000).
REAL_TXN_VALUE_V1 = bytes.fromhex("0001" "0000000000000000" "0000" "0000ea60" "01" "02" "07747874657374"
                                  "02" "00000000" "00" "0000019e7b4b367a" "0000019e7b4b367a" "00")


def test_real_transaction_log_value_v1_vector():
    assert len(REAL_TXN_VALUE_V1) == 48
    d = decode_record("transactions", make_record(0, T0, txn_key("my-txn-id"), REAL_TXN_VALUE_V1))
    assert not d.fallbacks
    assert d.value.version == 1 and d.value.extra == {"state": "Ongoing"}
    assert d.value.data["transactionPartitions"] == [{"topic": "txtest", "partitionIds": [0]}]
    assert d.kafka_text("3.9") == (
        "transaction_metadata::transactionalId=my-txn-id",
        f"producerId:0,producerEpoch:0,state=Ongoing,partitions=[txtest-0],txnLastUpdateTimestamp={0x19e7b4b367a},"
        "txnTimeoutMs=60000")
    kafka_4_3 = (
        '{"type":"0","data":{"transactionalId":"my-txn-id"}}',
        '{"version":"1","data":{"producerId":0,"producerEpoch":0,"transactionTimeoutMs":60000,'
        '"transactionStatus":1,"transactionPartitions":[{"topic":"txtest","partitionIds":[0]}],'
        f'"transactionLastUpdateTimestampMs":{0x19e7b4b367a},"transactionStartTimestampMs":{0x19e7b4b367a}}}}}')
    assert d.kafka_text("4.3") == kafka_4_3
    # Kafka 4.4 (the default, "4") names the state
    assert d.kafka_text() == d.kafka_text("4") == (kafka_4_3[0],
                                                    kafka_4_3[1].replace('"transactionStatus":1', '"transactionStatus":"Ongoing"'))


def write_transaction_state(folder: Path) -> Path:
    folder.mkdir(parents=True)
    values = [
        (txn_key("orders-app"), txn_value_v0(7, 0, 0, None, T0)),  # Empty
        (txn_key("orders-app"), txn_value_v0(7, 0, 1, {"orders": [0, 1]}, T0 + 10)),  # Ongoing
        (txn_key("orders-app"), txn_value_v0(7, 0, 2, {"orders": [0, 1]}, T0 + 20)),  # PrepareCommit
        (txn_key("orders-app"), txn_value_v0(7, 0, 4, {"orders": [0, 1]}, T0 + 30)),  # CompleteCommit
        (txn_key("my-txn-id"), REAL_TXN_VALUE_V1),
        (txn_key("gone"), None),  # a tombstone
    ]
    data = b"".join(build_v2_batch([make_record(i, T0 + i, k, v)], partition_leader_epoch=0)
                    for i, (k, v) in enumerate(values))
    path = folder / segment_file_name(0)
    path.write_bytes(data)
    return path


def test_transaction_state_log_in_three_formats(tmp_path):
    path = write_transaction_state(tmp_path / "__transaction_state-3")
    # Kafka 3.x's lines (Kafka 4's are golden lines of the real tool: test_kafka_golden.py)
    lines = run("dump", "--format", "kafka", "--kafka-version", "3.9", "--decode", "auto", path).stdout.splitlines()
    records = [x.split(" key: ", 1)[1] for x in lines if x.startswith("| ")]
    assert records == [
        f"transaction_metadata::transactionalId=orders-app payload: producerId:7,producerEpoch:0,state=Empty,"
        f"partitions=[],txnLastUpdateTimestamp={T0},txnTimeoutMs=60000",
        f"transaction_metadata::transactionalId=orders-app payload: producerId:7,producerEpoch:0,state=Ongoing,"
        f"partitions=[orders-0,orders-1],txnLastUpdateTimestamp={T0 + 10},txnTimeoutMs=60000",
        f"transaction_metadata::transactionalId=orders-app payload: producerId:7,producerEpoch:0,state=PrepareCommit,"
        f"partitions=[orders-0,orders-1],txnLastUpdateTimestamp={T0 + 20},txnTimeoutMs=60000",
        f"transaction_metadata::transactionalId=orders-app payload: producerId:7,producerEpoch:0,state=CompleteCommit,"
        f"partitions=[orders-0,orders-1],txnLastUpdateTimestamp={T0 + 30},txnTimeoutMs=60000",
        "transaction_metadata::transactionalId=my-txn-id payload: producerId:0,producerEpoch:0,state=Ongoing,"
        f"partitions=[txtest-0],txnLastUpdateTimestamp={0x19e7b4b367a},txnTimeoutMs=60000",
        "transaction_metadata::transactionalId=gone payload: <DELETE>",
    ]
    recs = [o for o in jsonl("--decode", "transactions", path) if o["type"] == "record"]
    assert recs[0]["key_decoded"] == {"schema": "TransactionLogKey", "version": 0,
                                      "data": {"transactionalId": "orders-app"}}
    assert recs[1]["value_decoded"]["state"] == "Ongoing"
    assert recs[1]["value_decoded"]["data"] == {
        "producerId": 7, "producerEpoch": 0, "transactionTimeoutMs": 60000, "transactionStatus": 1,
        "transactionPartitions": [{"topic": "orders", "partitionIds": [0, 1]}],
        "transactionLastUpdateTimestampMs": T0 + 10, "transactionStartTimestampMs": T0 - 90}
    assert recs[0]["value_decoded"]["data"]["transactionPartitions"] is None
    assert recs[5]["value_decoded"] is None
    text = run("dump", "--decode", "auto", path).stdout
    assert 'TransactionLogKey v0 transactionalId="orders-app" => TransactionLogValue v0 producerId=7' in text
    assert 'transactionalId="gone" => <tombstone>' in text


# --------------------------------------------------------------------------- transactional user data


PID_COMMIT, PID_ABORT, COORD_EPOCH = 4000, 4001, 5


def marker(offset: int, pid: int, commit: bool) -> bytes:
    key = CONTROL_KEY.struct.pack(0, 1 if commit else 0)
    value = END_TXN_MARKER.struct.pack(0, COORD_EPOCH)
    return build_v2_batch([make_record(offset, T0 + offset, key, value)], transactional=True, control=True,
                          producer_id=pid, producer_epoch=0, partition_leader_epoch=0)


def data_batch(offset: int, pid: int, n: int = 2, transactional: bool = True) -> bytes:
    recs = [make_record(offset + i, T0 + offset + i, f"k{offset + i}".encode(), f"v{offset + i}".encode())
            for i in range(n)]
    return build_v2_batch(recs, transactional=transactional, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                          base_sequence=0 if pid >= 0 else -1, partition_leader_epoch=0)


def snapshot_bytes(entries: list[tuple], *, corrupt: bool = False) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(SNAPSHOT_ENTRY.struct.pack(*e) for e in entries)
    crc = crc32c(body) ^ (1 if corrupt else 0)
    return SNAPSHOT_HEADER.struct.pack(1, crc, len(entries)) + body[4:]


def write_txn_partition(folder: Path) -> Path:
    """offsets 0-1: a transaction of 4000, 2-3: one of 4001, 4: COMMIT 4000, 5: ABORT 4001,
    6: plain data; the .txnindex holds the aborted one; the snapshot both producers."""
    folder.mkdir(parents=True)
    log = (data_batch(0, PID_COMMIT) + data_batch(2, PID_ABORT) + marker(4, PID_COMMIT, True)
           + marker(5, PID_ABORT, False) + data_batch(6, -1, 1, transactional=False))
    (folder / segment_file_name(0)).write_bytes(log)
    (folder / segment_file_name(0, ".txnindex")).write_bytes(build_txn_index([(PID_ABORT, 2, 5, 6)]))
    # ProducerSnapshot entries: pid, epoch, lastSeq, lastOffset, offsetDelta, timestamp, coordEpoch, txnFirst
    entries = [(PID_COMMIT, 0, 1, 1, 1, T0 + 1, COORD_EPOCH, -1), (PID_ABORT, 0, 1, 3, 1, T0 + 3, COORD_EPOCH, -1)]
    (folder / segment_file_name(7, ".snapshot")).write_bytes(snapshot_bytes(entries))
    return folder


def test_transactional_segment_dumps_in_three_formats(tmp_path):
    folder = write_txn_partition(tmp_path / "orders-0")
    log, txn, snap = (folder / segment_file_name(0), folder / segment_file_name(0, ".txnindex"),
                      folder / segment_file_name(7, ".snapshot"))
    kafka = run("dump", "--format", "kafka", "--records", log, txn, snap).stdout.splitlines()
    flags = [x.split("partitionLeaderEpoch: 0 ")[1].split(" deleteHorizonMs")[0] for x in kafka
             if x.startswith("baseOffset: ")]
    assert flags == ["isTransactional: true isControl: false"] * 2 + ["isTransactional: true isControl: true"] * 2 \
        + ["isTransactional: false isControl: false"]
    assert [x.split("headerKeys: [] ")[1] for x in kafka if "endTxnMarker" in x] == [
        f"endTxnMarker: COMMIT coordinatorEpoch: {COORD_EPOCH}", f"endTxnMarker: ABORT coordinatorEpoch: {COORD_EPOCH}"]
    assert f"version: 0 producerId: {PID_ABORT} firstOffset: 2 lastOffset: 5 lastStableOffset: 6" in kafka
    assert (f"producerId: {PID_COMMIT} producerEpoch: 0 coordinatorEpoch: {COORD_EPOCH} currentTxnFirstOffset: "
            f"OptionalLong.empty lastTimestamp: {T0 + 1} firstSequence: 0 lastSequence: 1 lastOffset: 1 "
            f"offsetDelta: 1 timestamp: {T0 + 1}") in kafka
    objs = jsonl("--records", log, txn, snap)
    controls = [o["control"] for o in objs if o["type"] == "record" and "control" in o]
    assert controls == [{"type": "COMMIT", "type_id": 1, "version": 0, "coordinator_epoch": COORD_EPOCH},
                        {"type": "ABORT", "type_id": 0, "version": 0, "coordinator_epoch": COORD_EPOCH}]
    assert [o for o in objs if o["type"] == "txnindex_entry"] == [
        {"type": "txnindex_entry", "file": str(txn), "version": 0, "producer_id": PID_ABORT, "first_offset": 2,
         "last_offset": 5, "last_stable_offset": 6}]
    snaps = [o for o in objs if o["type"] == "snapshot_entry"]
    assert [(s["producer_id"], s["last_offset"], s["coordinator_epoch"]) for s in snaps] == \
        [(PID_COMMIT, 1, COORD_EPOCH), (PID_ABORT, 3, COORD_EPOCH)]
    assert [o for o in objs if o["type"] == "snapshot"][0]["crc_valid"] is True
    text = run("dump", "--records", log, txn, snap).stdout
    assert "transactional control" in text and "COMMIT coordinator epoch 5" in text
    assert f"{PID_ABORT}" in text and "crc_valid True" in text


def test_transactional_segment_verifies(tmp_path):
    folder = write_txn_partition(tmp_path / "orders-0")
    snap = folder / segment_file_name(7, ".snapshot")
    txn = folder / segment_file_name(0, ".txnindex")
    report = json.loads(run("verify", "--format", "json", folder).stdout)
    assert report["ok"] and report["errors"] == 0
    run("verify", snap)
    run("verify", txn)
    # a corrupted snapshot CRC fails
    snap.write_bytes(snapshot_bytes([(PID_COMMIT, 0, 1, 1, 1, T0 + 1, COORD_EPOCH, -1)], corrupt=True))
    r = run("verify", "--format", "json", snap, ok=(1,))
    assert any("crc mismatch" in p["message"] for f in json.loads(r.stdout)["files"] for p in f["problems"])
    assert not read_producer_snapshot(snap).crc_valid
    # a txn index entry naming the COMMIT marker fails against the log
    txn.write_bytes(build_txn_index([(PID_COMMIT, 0, 4, 6)]))
    r = run("verify", "--format", "json", folder, ok=(1,))
    assert any("not an ABORT marker" in p["message"] for f in json.loads(r.stdout)["files"] for p in f["problems"])


# --------------------------------------------------------------------------- real snapshots and text files


@pytest.mark.parametrize("path", SNAPSHOTS, ids=rid)
def test_real_snapshots_dump_and_verify(path):
    objs = jsonl(path)
    head = [o for o in objs if o["type"] == "snapshot"]
    assert head == [{"type": "snapshot", "file": str(path), "version": 1, "crc": head[0]["crc"], "crc_valid": True}]
    end = int(path.name.split(".")[0])
    for e in (o for o in objs if o["type"] == "snapshot_entry"):
        assert e["last_offset"] < end
    kafka = run("dump", "--format", "kafka", path).stdout.splitlines()
    assert kafka[0] == f"Dumping {path}" and len(kafka) == 1 + sum(o["type"] == "snapshot_entry" for o in objs)
    run("verify", path)


def test_real_snapshot_producers_wrote_the_log_beside_it():
    """A snapshot's producers are the idempotent producers of the log next to it, and their
    last offsets are offsets of that log."""
    need_realdata()
    path = REALDATA / "Experts-in-team-innovation/kafka/data/sensor-data-topic-0/00000000000000000035.snapshot"
    entries = [o for o in jsonl(path) if o["type"] == "snapshot_entry"]
    batches = {b.last_offset: b.producer_id for b in Segment(path.parent / segment_file_name(0)).batches()}
    assert len(entries) == 3
    for e in entries:
        assert batches.get(e["last_offset"]) == e["producer_id"]


def test_text_files_dump_in_three_formats(tmp_path):
    need_realdata()
    qs = REALDATA / "Experts-in-team-innovation/kafka/data/__cluster_metadata-0/quorum-state"
    lec = REALDATA / "Experts-in-team-innovation/kafka/data/__cluster_metadata-0/leader-epoch-checkpoint"
    pm = tmp_path / "partition.metadata"
    topic_id = base64.urlsafe_b64encode(bytes(range(1, 17))).rstrip(b"=").decode()
    pm.write_text(f"version: 0\ntopic_id: {topic_id}")
    objs = jsonl(qs, lec, pm)
    assert {"type": "quorum_state", "file": str(qs), "clusterId": "", "leaderId": 1, "leaderEpoch": 5, "votedId": -1,
            "appliedOffset": 0, "data_version": 0} in objs
    assert {"type": "quorum_state_entry", "file": str(qs), "voterId": 1} in objs
    epochs = [(o["epoch"], o["start_offset"]) for o in objs if o["type"] == "leader_epoch_entry"]
    assert epochs == [(1, 0), (2, 1020), (3, 1551), (4, 2223), (5, 6437)]
    # the leader epochs start where the metadata log says a new leader took over (LeaderChange records)
    leader_changes = [r.offset for b in Segment(lec.parent / segment_file_name(0)).batches() if b.is_control
                      for r in batch_records(b)]
    assert [o for _, o in epochs] == leader_changes
    assert {"type": "partition_metadata", "file": str(pm), "version": 0, "topic_id": topic_id} in objs
    kafka = run("dump", "--format", "kafka", qs, lec, pm).stdout.splitlines()
    assert kafka == [
        f"Dumping {qs}",
        'clusterId: "" leaderId: 1 leaderEpoch: 5 votedId: -1 appliedOffset: 0 currentVoters: [{"voterId":1}] '
        "data_version: 0",
        f"Dumping {lec}",
        "epoch: 1 startOffset: 0", "epoch: 2 startOffset: 1020", "epoch: 3 startOffset: 1551",
        "epoch: 4 startOffset: 2223", "epoch: 5 startOffset: 6437",
        f"Dumping {pm}",
        f"version: 0 topicId: {topic_id}",
    ]
    text = run("dump", qs, lec, pm).stdout
    assert "(quorum_state)" in text and "leaderEpoch 5" in text and "6437" in text and topic_id in text
    bad = tmp_path / "quorum-state"
    bad.write_text("{not json")
    r = run("dump", bad, ok=(1,))
    assert "quorum-state is not JSON" in r.stderr


# --------------------------------------------------------------------------- user-data decoders


def upper(b: bytes) -> str:
    """A user's decoder for ``--value-decoder test_decoders:upper``."""
    return b.decode().upper()


def broken(b: bytes) -> str:
    raise ValueError("no")


def write_user_topic(folder: Path) -> Path:
    folder.mkdir(parents=True)
    recs = [make_record(0, T0, struct.pack(">i", 7), struct.pack(">q", -2)),
            make_record(1, T0 + 1, b"\x00\xff", json.dumps({"a": [1, 2]}).encode()),
            make_record(2, T0 + 2, b"k", b"hello")]
    path = folder / segment_file_name(0)
    path.write_bytes(build_v2_batch(recs, partition_leader_epoch=0))
    return path


USER_KEYS = [struct.pack(">i", 7), b"\x00\xff", b"k"]
USER_VALUES = [struct.pack(">q", -2), b'{"a": [1, 2]}', b"hello"]


@pytest.mark.parametrize("name, expected", [
    ("int", lambda b: struct.unpack(">i", b)[0] if len(b) == 4 else f"<{len(b)} bytes, not an int>"),
    ("long", lambda b: struct.unpack(">q", b)[0] if len(b) == 8 else f"<{len(b)} bytes, not a long>"),
    ("hex", lambda b: b.hex()),
    ("base64", lambda b: base64.b64encode(b).decode()),
    # json: bytes neither JSON nor UTF-8 are shown raw (key_b64 with key_error), losslessly
    ("json", lambda b: json.loads(b) if b.startswith(b"{") else _utf8_or_b64(b)),
])
def test_builtin_key_and_value_decoders(tmp_path, name, expected):
    path = write_user_topic(tmp_path / "t-0")
    recs = [o for o in jsonl("--key-decoder", name, "--value-decoder", name, "--records", path)
            if o["type"] == "record"]
    assert [_shown(o, "key") for o in recs] == [expected(b) for b in USER_KEYS]
    assert [_shown(o, "value") for o in recs] == [expected(b) for b in USER_VALUES]


def _utf8_or_b64(b: bytes) -> object:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return ("b64", base64.b64encode(b).decode())


def _shown(o: dict, name: str) -> object:
    if name in o:
        return o[name]
    assert o[name + "_error"].startswith("json decoder: ")
    return ("b64", o[name + "_b64"])


def test_utf8_decoder_is_lossless(tmp_path):
    """Valid UTF-8 stays a string; other bytes come back exactly from key_b64/value_b64."""
    path = write_user_topic(tmp_path / "t-0")
    recs = [o for o in jsonl("--key-decoder", "utf8", "--value-decoder", "utf8", "--records", path)
            if o["type"] == "record"]

    def back(o: dict, name: str) -> bytes:
        return o[name].encode() if name in o else base64.b64decode(o[name + "_b64"])

    assert [back(o, "key") for o in recs] == USER_KEYS
    assert [back(o, "value") for o in recs] == USER_VALUES
    assert "key" not in recs[1] and recs[2]["key"] == "k"


def test_decoders_in_kafka_and_text_formats(tmp_path):
    path = write_user_topic(tmp_path / "t-0")
    lines = [x for x in run("dump", "--format", "kafka", "--key-decoder", "int", "--value-decoder", "json",
                            path).stdout.splitlines() if x.startswith("| ")]
    assert [x.split("headerKeys: [] ")[1] for x in lines] == [
        "key: 7 payload: \\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe",
        'key: <2 bytes, not an int> payload: {"a":[1,2]}',
        "key: <1 bytes, not an int> payload: hello",
    ]
    text = run("dump", "--key-decoder", "hex", "--value-decoder", "long", "--records", path).stdout
    assert "key 00000007  value -2\n" in text and 'key 00ff  value "<13 bytes, not a long>"' in text


def test_module_function_decoders(tmp_path):
    path = write_user_topic(tmp_path / "t-0")
    recs = [o for o in jsonl("--value-decoder", "test_decoders:upper", "--records", path) if o["type"] == "record"]
    assert recs[2]["value"] == "HELLO"
    recs = [o for o in jsonl("--value-decoder", "test_decoders:broken", "--records", path) if o["type"] == "record"]
    # a failed decode is marked, not a string that could be a value: the raw bytes and why
    assert "value" not in recs[2] and base64.b64decode(recs[2]["value_b64"]) == USER_VALUES[2]
    assert recs[2]["value_error"] == "decoder test_decoders:broken failed: ValueError: no"
    r = run("dump", "--value-decoder", "no_such_module_x:f", path, ok=(2,))
    assert "cannot load decoder" in r.stderr
    r = run("dump", "--value-decoder", "nonsense", path, ok=(2,))
    assert "unknown decoder" in r.stderr


def test_decode_auto_leaves_user_topics_alone(tmp_path):
    path = write_user_topic(tmp_path / "t-0")
    recs = [o for o in jsonl("--decode", "auto", path) if o["type"] == "record"]
    assert len(recs) == 3 and all("value_decoded" not in o for o in recs)
    forced = [o for o in jsonl("--decode", "offsets", path) if o["type"] == "record"]
    assert all(o["key_decoded"]["raw"] is not None and o["key_decoded"]["note"] for o in forced)


@pytest.mark.parametrize("value, said", [
    (b"\x00\x02\x00", "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                      "preview release of KRaft in 2.8 to newer versions are not supported."),
    (b"\x07\x02\x00", "Could not deserialize metadata record due to unknown frame version 7(only frame version 1 "
                      "is supported)"),
    (b"\x01", "Error while reading type"),
    (b"\x01\x02", "Error while reading version"),
    (b"\x01\x7d\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 125"),
    (b"\x01\x02\x00\x01", "Failed to deserialize record with type 2"),  # a TopicRecord cut short
])
def test_metadata_records_kafka_cannot_read_are_worded_as_its_reader_words_them(value, said):
    """What MetadataRecordSerde says of a record it cannot read, which kafka-dump-log.sh prints
    after "skipping." (AbstractApiMessageSerde.read in Kafka 3.x and 4.x)."""
    from kseg.decoders.metadata import decode_metadata_record
    from kseg.model import make_record

    d = decode_metadata_record(make_record(5, 0, None, value))
    assert d.kafka_payload == f"Error at 5, skipping. {said}"


def test_a_metadata_record_with_bytes_after_it_is_garbage_to_kafka():
    from kseg.decoders.metadata import decode_metadata_record
    from kseg.decoders.schema import encode
    from kseg.decoders.generated import NEWEST
    from kseg.model import make_record

    topic = NEWEST.METADATA[2]
    value = b"\x01\x02\x00" + encode(topic, {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAA"}, 0)
    assert decode_metadata_record(make_record(5, 0, None, value)).kafka_payload.startswith('{"type":"TOPIC_RECORD"')
    d = decode_metadata_record(make_record(5, 0, None, value + b"xyz"))
    assert d.kafka_payload == "Error at 5, skipping. Found 3 byte(s) of garbage after 2"
