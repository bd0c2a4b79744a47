"""``kseg state`` and ``kseg txn``: answers from the broker's own records.

Oracles: the real __consumer_offsets and KRaft metadata logs in ../shared/realdata
(each group must live in the partition Kafka's hash rule gives it; the metadata
image must name every topic folder on disk), and partitions built here with
known transactions, markers, .txnindex and snapshots.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REALDATA
from kseg.cli.main import main
from kseg.companions.build import build_txn_index
from kseg.findings import ERROR, NOTE
from kseg.layouts import CONTROL_KEY, END_TXN_MARKER
from kseg.log.encode import build_v2_batch
from kseg.log.segment import parse_partition_dir, segment_file_name
from kseg.model import make_record
from kseg.ops.state import Limit, coordinator_partition, java_string_hash, replay
from kseg.ops.txn import explain_transactions

T0 = 1_700_000_000_000


def run(*args, ok=(0,)):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code in ok, (r.exit_code, r.stdout, r.stderr)
    return r


def need_realdata():
    if not REALDATA.is_dir():
        pytest.skip("no realdata folder")


def real_folders(prefix: str) -> list[Path]:
    need_realdata()
    return sorted(p for p in REALDATA.rglob(f"{prefix}-*") if p.is_dir() and parse_partition_dir(p.name))


# --------------------------------------------------------------------------- coordinators


@pytest.mark.parametrize("text, expected", [("", 0), ("a", 97), ("hello", 99162322), ("é", 233),
                                            ("Aa", 2112), ("BB", 2112)])
def test_java_string_hash(text, expected):
    # Values of Java's String.hashCode ("Aa" and "BB" are Java's classic collision).
    assert java_string_hash(text) == expected


def test_every_real_group_lives_where_the_hash_rule_says():
    checked = 0
    for folder in real_folders("__consumer_offsets"):
        _, n = parse_partition_dir(folder.name)
        for p in replay([folder]).partitions:
            for group in p.state["groups"]:
                assert coordinator_partition(group, 50) == n, (folder, group)
                checked += 1
    assert checked >= 3


def test_coordinator_of_command():
    out = run("state", "--coordinator-of", "DEVSmileCDR").stdout
    assert out.startswith("DEVSmileCDR: partition 6 of 50")
    data = json.loads(run("state", "--coordinator-of", "DEVSmileCDR", "--partitions", "7", "--format", "json").stdout)
    assert data == {"id": "DEVSmileCDR", "partitions": 7, "partition": coordinator_partition("DEVSmileCDR", 7)}


# --------------------------------------------------------------------------- __consumer_offsets


def test_real_consumer_offsets_state():
    need_realdata()
    folder = REALDATA / "LDI-POC" / "__consumer_offsets-6"
    data = json.loads(run("state", "--format", "json", folder).stdout)
    (p,) = data["partitions"]
    group = p["groups"]["DEVSmileCDR"]
    assert group["metadata"]["protocolType"] == "consumer"
    # the latest commit per partition wins: the topic the group consumed last moved to offset 3
    assert group["offsets"]["TestTopicPatient"]["0"]["offset"] == 3
    assert all(v["commitTimestamp"] > 0 for parts in group["offsets"].values() for v in parts.values())
    # the same state, replayed only up to offset 1, knows one commit
    early = json.loads(run("state", "--format", "json", "--at-offset", "1", folder).stdout)
    offsets = early["partitions"][0]["groups"]["DEVSmileCDR"]["offsets"]
    assert sum(len(v) for v in offsets.values()) == 1 and early["partitions"][0]["last_offset"] == 1


def offsets_key(group: str, topic: str, partition: int) -> bytes:
    def s(x: str) -> bytes:
        return struct.pack(">h", len(x)) + x.encode()
    return struct.pack(">h", 1) + s(group) + s(topic) + struct.pack(">i", partition)


def offsets_value(offset: int, ts: int) -> bytes:
    return struct.pack(">hqih", 3, offset, -1, 0) + struct.pack(">q", ts)


def marker(offset: int, pid: int, commit: bool, epoch: int = 0) -> bytes:
    key = CONTROL_KEY.struct.pack(0, 1 if commit else 0)
    value = END_TXN_MARKER.struct.pack(0, 3)
    return build_v2_batch([make_record(offset, T0 + offset, key, value)], transactional=True, control=True,
                          producer_id=pid, producer_epoch=epoch, partition_leader_epoch=0)


def test_transactional_offset_commits_count_only_when_committed(tmp_path):
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    rec = lambda off, value: make_record(off, T0 + off, offsets_key("g", "t", 0), offsets_value(value, T0))  # noqa
    log = (build_v2_batch([rec(0, 10)], partition_leader_epoch=0)
           + build_v2_batch([rec(1, 20)], transactional=True, producer_id=7, producer_epoch=0, base_sequence=0)
           + marker(2, 7, commit=False)
           + build_v2_batch([rec(3, 30)], transactional=True, producer_id=8, producer_epoch=0, base_sequence=0)
           + marker(4, 8, commit=True)
           + build_v2_batch([rec(5, 40)], transactional=True, producer_id=9, producer_epoch=0, base_sequence=0))
    (folder / segment_file_name(0)).write_bytes(log)
    (p,) = replay([folder]).partitions
    assert p.state["groups"]["g"]["offsets"]["t"]["0"]["offset"] == 30  # 20 aborted, 40 not committed yet
    assert any("aborted" in n for n in p.notes) and any("not committed yet" in n for n in p.notes)
    (early,) = replay([folder], Limit(at_offset=3)).partitions
    assert early.state["groups"]["g"]["offsets"]["t"]["0"]["offset"] == 10  # 30's commit marker is not reached


def test_tombstone_removes_a_commit(tmp_path):
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    log = (build_v2_batch([make_record(0, T0, offsets_key("g", "t", 0), offsets_value(5, T0))])
           + build_v2_batch([make_record(1, T0 + 1, offsets_key("g", "t", 1), offsets_value(6, T0))])
           + build_v2_batch([make_record(2, T0 + 2, offsets_key("g", "t", 0), None)]))
    (folder / segment_file_name(0)).write_bytes(log)
    (p,) = replay([folder]).partitions
    assert p.state["groups"]["g"]["offsets"] == {"t": {"1": {"offset": 6, "leaderEpoch": -1, "metadata": "",
                                                             "commitTimestamp": T0, "record_offset": 1}}}
    (at_time,) = replay([folder], Limit(at_time=T0)).partitions
    assert list(at_time.state["groups"]["g"]["offsets"]["t"]) == ["0"]


def test_a_damaged_batch_is_a_problem_and_not_applied(tmp_path):
    """A commit in a batch that fails its CRC is not applied (the state keeps the one before, and
    says why); the replay goes on, and the command exits 1. Before, the damaged commit was applied
    as if sound, and bytes that form no batch ended a segment's replay silently."""
    folder = tmp_path / "__consumer_offsets-0"
    folder.mkdir()
    first = build_v2_batch([make_record(0, T0, offsets_key("g", "t", 0), offsets_value(5, T0))])
    damaged = bytearray(build_v2_batch([make_record(1, T0 + 1, offsets_key("g", "t", 0), offsets_value(6, T0))]))
    damaged[-1] ^= 0x01  # the commit's last byte: the CRC no longer holds
    last = build_v2_batch([make_record(2, T0 + 2, offsets_key("g", "t", 1), offsets_value(7, T0))])
    (folder / segment_file_name(0)).write_bytes(first + bytes(damaged) + last)
    (p,) = replay([folder]).partitions
    offsets = p.state["groups"]["g"]["offsets"]["t"]
    assert offsets["0"]["offset"] == 5 and offsets["1"]["offset"] == 7
    assert len(p.problems) == 1 and "crc mismatch" in p.problems[0] and "offset 1 is not applied" in p.problems[0]
    r = run("state", folder, ok=(1,))
    assert "problem: " in r.stdout and "crc mismatch" in r.stdout
    older = tmp_path / "two" / "__consumer_offsets-0"  # garbage ending an older segment
    older.mkdir(parents=True)
    (older / segment_file_name(0)).write_bytes(first + b"\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff")
    (older / segment_file_name(2)).write_bytes(last)
    (p,) = replay([older]).partitions
    assert len(p.problems) == 1 and "not applied" in p.problems[0] and p.records == 2
    assert json.loads(run("state", "--format", "json", older, ok=(1,)).stdout)["partitions"][0]["problems"]


# --------------------------------------------------------------------------- the metadata log


def test_real_metadata_image_names_every_topic_on_disk():
    need_realdata()
    root = REALDATA / "LDI-POC"
    data = json.loads(run("state", "--format", "json", root / "__cluster_metadata-0").stdout)
    (p,) = data["partitions"]
    topics = p["image"]["topics"]
    on_disk = {parse_partition_dir(f.name)[0] for f in root.iterdir() if f.is_dir() and parse_partition_dir(f.name)}
    assert on_disk - {"__cluster_metadata"} <= set(topics)
    assert len(topics["__consumer_offsets"]["partitions"]) == 50
    assert p["image"]["features"]["metadata.version"] == 19
    assert "1" in p["image"]["brokers"]
    # every PartitionChangeRecord with a leader bumped the leader epoch from the PartitionRecord's 0
    part = topics["TestTopicPatient"]["partitions"]["0"]
    assert part["leaderEpoch"] >= 1 and part["partitionEpoch"] >= part["leaderEpoch"]
    text = run("state", root / "__cluster_metadata-0").stdout
    assert "topic TestTopicPatient" in text and "feature metadata.version=19" in text


# --------------------------------------------------------------------------- kseg txn


def data_batch(offset: int, pid: int, n: int = 2, epoch: int = 0, ts: int = T0) -> bytes:
    recs = [make_record(offset + i, ts + i, b"k", b"v") for i in range(n)]
    return build_v2_batch(recs, transactional=True, producer_id=pid, producer_epoch=epoch, base_sequence=0,
                          partition_leader_epoch=0)


def write_txns(folder: Path, *, txnindex: list | None = None) -> Path:
    """0-1: producer 1 (committed at 4), 2-3: producer 2 (aborted at 5), 6-8: producer 3, still open."""
    folder.mkdir(parents=True)
    log = (data_batch(0, 1) + data_batch(2, 2) + marker(4, 1, True) + marker(5, 2, False)
           + data_batch(6, 3, 3, ts=T0 + 6))
    (folder / segment_file_name(0)).write_bytes(log)
    entries = [(2, 2, 5, 6)] if txnindex is None else txnindex
    (folder / segment_file_name(0, ".txnindex")).write_bytes(build_txn_index(entries))
    return folder


def test_txn_lists_transactions_and_the_lso(tmp_path):
    folder = write_txns(tmp_path / "orders-0")
    report = explain_transactions([folder], now_ms=T0 + 1000)
    (p,) = report.partitions
    assert [(t.producer_id, t.state, t.first_offset, t.marker_offset, t.records) for t in p.transactions] == [
        (1, "committed", 0, 4, 2), (2, "aborted", 2, 5, 2), (3, "open", 6, None, 3)]
    assert p.last_stable_offset == 6 and p.log_end_offset == 9
    assert report.ok and not p.findings
    run("txn", folder, "--now-ms", T0 + 1000)


def test_txn_flags_a_hanging_transaction_with_its_abort_command(tmp_path):
    folder = write_txns(tmp_path / "orders-0")
    r = run("txn", folder, "--now-ms", T0 + 3_600_000, ok=(1,))
    assert "hanging: producer 3 open since offset 6" in r.stdout
    assert "kafka-transactions.sh --bootstrap-server <broker:port> abort --topic orders --partition 0 " \
           "--start-offset 6" in r.stdout
    data = json.loads(run("txn", folder, "--now-ms", T0 + 3_600_000, "--format", "json", ok=(1,)).stdout)
    assert [h["producer_id"] for h in data["partitions"][0]["hanging"]] == [3]
    assert data["ok"] is False
    # a longer timeout: not hanging
    run("txn", folder, "--now-ms", T0 + 3_600_000, "--max-timeout-ms", 7_200_000)


def test_txn_contradictions(tmp_path):
    folder = write_txns(tmp_path / "a-0", txnindex=[(2, 1, 5, 6)])  # wrong first offset
    (p,) = explain_transactions([folder], now_ms=T0).partitions
    assert any("does not list the aborted transaction of producer 2 (offsets 2..5)" in f.message
               for f in p.findings)
    other = tmp_path / "b-0"
    other.mkdir()
    (other / segment_file_name(0)).write_bytes(data_batch(0, 5, epoch=3) + marker(2, 6, True) + marker(3, 5, True)
                                               + data_batch(4, 5, epoch=2))
    (q,) = explain_transactions([other], now_ms=T0).partitions
    messages = [f.message for f in q.findings]
    assert any("COMMIT marker of producer 6 with no transactional data" in m for m in messages)
    assert any("producer 5's epoch goes down from 3 to 2" in m for m in messages)
    run("txn", other, ok=(1,))


def test_txn_empty_abort_is_in_no_txnindex(tmp_path):
    """Kafka indexes only transactions that wrote data (``ProducerAppendInfo.appendEndTxnMarker``):
    an ABORT with no data before it (a real 4.3.1 broker wrote one for kafka-python's abort of a
    transaction whose records were never sent) needs no .txnindex entry, and one listing it is wrong."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / segment_file_name(0)).write_bytes(data_batch(0, 1) + marker(2, 1, True) + marker(3, 4, False))
    (p,) = explain_transactions([folder], now_ms=T0).partitions
    assert [f.severity for f in p.findings] == [NOTE]
    assert "ABORT marker of producer 4 with no transactional data" in p.findings[0].message
    run("txn", folder)
    (folder / segment_file_name(0, ".txnindex")).write_bytes(build_txn_index([(4, 3, 3, 4)]))
    (q,) = explain_transactions([folder], now_ms=T0).partitions
    assert any("lists an aborted transaction of producer 4 (offsets 3..3) that the log does not show" in f.message
               for f in q.findings)


def _findings(folder: Path) -> list[tuple[str, str]]:
    (p,) = explain_transactions([folder], now_ms=T0).partitions
    return [(f.severity, f.message) for f in p.findings]


def test_txn_markers_whose_data_is_gone(tmp_path):
    """Where offsets are missing since a producer's previous marker (the log cleaner removed its
    batches, or retention deleted the segments before), its marker may have outlived its data,
    and the .txnindex entry the cleaner carried may start before what the log shows: notes,
    exit 0 (the broker's own cleaned logs are so: tests/test_what_kafka_wrote.py). Where no
    offset is missing, the same are problems."""
    # retention: the log starts at 100; producer 1's data was in a deleted segment
    late = tmp_path / "late-0"
    late.mkdir()
    (late / segment_file_name(100)).write_bytes(marker(100, 1, True) + marker(101, 2, False) + data_batch(102, 3))
    (late / segment_file_name(100, ".txnindex")).write_bytes(build_txn_index([(2, 90, 101, 102)]))
    found = _findings(late)
    assert [sev for sev, _ in found] == [NOTE, NOTE], found
    assert "removed by the log cleaner, or before the log start" in found[0][1]
    run("txn", late, "--now-ms", T0)
    # the cleaner: offsets 2..4 removed (producer 2's aborted data), its marker kept, its entry too;
    # producer 5's transaction shows from offset 8, its entry says 6
    cleaned = tmp_path / "cleaned-0"
    cleaned.mkdir()
    log = (data_batch(0, 1) + marker(5, 2, False) + data_batch(8, 5) + marker(10, 5, False) + marker(11, 1, True))
    (cleaned / segment_file_name(0)).write_bytes(log)
    (cleaned / segment_file_name(0, ".txnindex")).write_bytes(build_txn_index([(2, 2, 5, 6), (5, 6, 10, 11)]))
    assert [sev for sev, _ in _findings(cleaned)] == [NOTE]
    run("txn", cleaned)
    # no offset missing: the same entries are wrong
    dense = tmp_path / "dense-0"
    dense.mkdir()
    (dense / segment_file_name(0)).write_bytes(data_batch(0, 1) + marker(2, 2, False) + data_batch(3, 5)
                                               + marker(5, 5, False) + marker(6, 1, True))
    (dense / segment_file_name(0, ".txnindex")).write_bytes(build_txn_index([(2, 1, 2, 3), (5, 1, 5, 6)]))
    errors = [m for sev, m in _findings(dense) if sev == ERROR]
    assert any("lists an aborted transaction of producer 2 (offsets 1..2)" in m for m in errors), errors
    assert any("does not list the aborted transaction of producer 5 (offsets 3..5)" in m for m in errors), errors
    run("txn", dense, ok=(1,))


def test_txn_a_segment_without_its_indexes_is_recovered_by_the_broker(tmp_path):
    """An aborted transaction ends in a segment with no .txnindex: a problem where its .index is
    there (the broker opens the segment as it is and serves the aborted records), a note where
    neither is (the broker recovers such a segment, writing both; a segment fetched or attached
    alone)."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / segment_file_name(0)).write_bytes(data_batch(0, 2) + marker(2, 2, False))
    assert [sev for sev, _ in _findings(folder)] == [NOTE]
    run("txn", folder)
    (folder / segment_file_name(0, ".index")).write_bytes(b"")
    found = _findings(folder)
    assert found == [(ERROR, "missing: 1 aborted transaction(s) end in this segment")], found
    run("txn", folder, ok=(1,))


def test_txn_names_transactional_ids_from_transaction_state(tmp_path):
    folder = write_txns(tmp_path / "logs" / "orders-0")
    state = tmp_path / "logs" / "__transaction_state-3"
    state.mkdir()
    key = struct.pack(">h", 0) + struct.pack(">h", 9) + b"orders-tx"
    value = struct.pack(">hqhib", 0, 3, 0, 60000, 1) + struct.pack(">i", -1) + struct.pack(">qq", T0, T0)
    (state / segment_file_name(0)).write_bytes(build_v2_batch([make_record(0, T0, key, value)]))
    report = explain_transactions([tmp_path / "logs"], now_ms=T0)
    (p,) = [x for x in report.partitions if x.topic == "orders"]
    assert [t.transactional_id for t in p.transactions] == [None, None, "orders-tx"]


# --------------------------------------------------------------------------- share groups (KIP-932)

SHARE_TOPIC_ID = bytes(range(1, 17))


def share_key(kind: int, group: str, partition: int = 0) -> bytes:
    return struct.pack(">hh", kind, len(group)) + group.encode() + SHARE_TOPIC_ID + struct.pack(">i", partition)


def share_batches(batches: list[tuple[int, int, int, int]]) -> bytes:
    return bytes([len(batches) + 1]) + b"".join(struct.pack(">qqbh", *b) + b"\x00" for b in batches) + b"\x00"


def share_snapshot(start: int, batches: list, state_epoch: int = 1, leader_epoch: int = 0) -> bytes:
    return struct.pack(">hiiiqqq", 0, 0, state_epoch, leader_epoch, start, T0, T0) + share_batches(batches)


def share_update(start: int, batches: list, leader_epoch: int = -1) -> bytes:
    return struct.pack(">hiiq", 0, 0, leader_epoch, start) + share_batches(batches)


def test_share_state_replay(tmp_path):
    """A ShareSnapshot replaces the state, a ShareUpdate merges in as the share coordinator merges it:
    start offset and leader epoch only when set (-1: unchanged), batches combined (per offset the higher
    delivery count wins, then the higher state), offsets before the start offset dropped."""
    folder = tmp_path / "__share_group_state-0"
    folder.mkdir()
    recs = [
        (share_key(0, "g"), share_snapshot(0, [(0, 9, 2, 1)], state_epoch=3, leader_epoch=5)),
        (share_key(1, "g"), share_update(-1, [(5, 14, 0, 2)])),
        (share_key(0, "gone"), share_snapshot(0, [])),
        (share_key(0, "gone"), None),  # a tombstone: the share-partition was deleted
        (share_key(1, "g"), share_update(7, [(20, 21, 4, 1)], leader_epoch=6)),
    ]
    log = b"".join(build_v2_batch([make_record(i, T0 + i, k, v)], partition_leader_epoch=0)
                   for i, (k, v) in enumerate(recs))
    (folder / segment_file_name(0)).write_bytes(log)
    (ps,) = replay([folder]).partitions
    assert not ps.notes
    (sp,) = ps.state["share_groups"]["g"]
    assert (sp["startOffset"], sp["stateEpoch"], sp["leaderEpoch"], sp["record_offset"]) == (7, 3, 6, 4)
    assert [(b["firstOffset"], b["lastOffset"], b["deliveryStateName"], b["deliveryCount"])
            for b in sp["stateBatches"]] == [(7, 14, "Available", 2), (20, 21, "Archived", 1)]
    assert set(ps.state["share_groups"]) == {"g"}
    out = run("state", folder).stdout
    assert "share group g" in out and "start offset 7 state epoch 3 leader epoch 6" in out
    assert "7..14 Available x2, 20..21 Archived x1" in out


def test_combine_state_batches():
    from kseg.ops.state import StateBatch, combine_state_batches

    b = StateBatch
    # same delivery count: the higher state wins; contiguous equal batches join
    assert combine_state_batches([b(0, 9, 0, 1), b(5, 6, 4, 1), b(10, 12, 0, 1)], 0) == [
        b(0, 4, 0, 1), b(5, 6, 4, 1), b(7, 12, 0, 1)]
    # a higher delivery count wins over a terminal state
    assert combine_state_batches([b(0, 3, 2, 1), b(2, 5, 0, 3)], 1) == [b(1, 1, 2, 1), b(2, 5, 0, 3)]
    assert combine_state_batches([b(0, 3, 2, 1)], 4) == []
    assert combine_state_batches([], 0) == []


def test_state_of_a_log_dir_with_share_and_remote_metadata():
    """``kseg state`` of a real 4.3.1 log directory with __share_group_state and __remote_log_metadata
    (it stopped at them with a KeyError before)."""
    logdir = Path(__file__).resolve().parent.parent / "fixtures" / "kafka-tiered" / "logdir"
    if not logdir.is_dir():
        pytest.skip("no fixtures/kafka-tiered corpus")
    out = run("state", logdir).stdout
    assert "share group share-accept" in out and "remote segment(s)" in out and "group share-reject" in out
