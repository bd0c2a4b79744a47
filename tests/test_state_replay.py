"""``kseg state`` applies every record or says why: KIP-848 consumer, share and streams group
records of ``__consumer_offsets``, transaction-state values it cannot read, KRaft snapshots it
cannot trust, and share-state merging in linear time.

Oracles: the record types Kafka defines (``kseg.decoders.offsets.RECORD_TYPES``, each present in
the shipped ``__consumer_offsets`` fixture), the share coordinator's combining rule written out
by its definition (``_combine_by_definition``), and logs built here whose true state is known.
"""

from __future__ import annotations

import struct
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import examples
from kseg.decoders import decode_record, metadata, offsets
from kseg.decoders.schema import encode
from kseg.log.encode import build_v2_batch
from kseg.log.records import batch_records
from kseg.log.segment import Segment, segment_file_name
from kseg.model import make_record
from kseg.ops.state import StateBatch, combine_state_batches, replay

ROOT = Path(__file__).resolve().parent.parent
OFFSETS = ROOT / "fixtures" / "internal" / "__consumer_offsets-0"
T0 = 1_700_000_000_000


# --------------------------------------------------------------------------- __consumer_offsets


def _records(folder: Path, family: str) -> list:
    out = []
    for log in sorted(folder.glob("*.log")):
        for batch in Segment(log).batches():
            for r in batch_records(batch):
                out.append((batch, r, decode_record(family, r, batch.is_control)))
    return out


def test_every_offsets_record_type_is_applied_or_noted() -> None:
    """Every record type Kafka defines for __consumer_offsets is in the fixture, and each record of it
    is applied (its group holds it) or named in a note: none is dropped in silence."""
    recs = _records(OFFSETS, "offsets")
    types = {struct.unpack(">h", r.key[:2])[0] for _, r, _ in recs if r.key}
    assert set(offsets.RECORD_TYPES) <= types
    (ps,) = replay([OFFSETS]).partitions
    assert ps.records + ps.not_applied == len(recs)  # transaction markers are applied too
    noted = {int(n.split(":")[0].split()[1]) for n in ps.notes if n.startswith("offset ")}
    groups = ps.state["groups"]
    latest = {r.key: (r, d) for b, r, d in recs if not b.is_control}  # what a compacted topic keeps
    for r, d in latest.values():
        if d is None or d.key is None or d.key.data is None or r.offset in noted:
            continue
        group = d.key.data.get("group", d.key.data.get("groupId"))
        g = groups.get(group, {})
        held = [*g.get("records", {}).values(), *(p for t in g.get("offsets", {}).values() for p in t.values()),
                *([g["metadata"]] if "metadata" in g else [])]
        if d.value is None:  # a tombstone: nothing its key held is left
            same_key = {o.offset for _, o, _ in recs if o.key == r.key}
            assert not any(v.get("record_offset") in same_key for v in held), (r.offset, d.key.schema)
            continue
        assert any(v.get("record_offset") == r.offset for v in held), (r.offset, d.key.schema)
    # the KIP-848 consumer group, the share group and the streams group are all there
    assert {"cg", "sg", "streams-app", "orders-app"} <= set(groups)
    member = groups["cg"]["records"]["ConsumerGroupCurrentMemberAssignmentKey memberId=m-1"]
    assert member["memberEpoch"] == 7 and member["assignedPartitions"][0]["partitions"] == [0, 1]


# --------------------------------------------------------------------------- __transaction_state


def test_an_unreadable_transaction_state_value_is_a_note_and_not_the_older_value(tmp_path: Path) -> None:
    from kseg.decoders import transactions

    folder = tmp_path / "__transaction_state-0"
    folder.mkdir()
    key = struct.pack(">h", 0) + encode(transactions.TRANSACTION_LOG_KEY, {"transactionalId": "tx-1"}, 0)
    good = struct.pack(">h", 0) + encode(transactions.TRANSACTION_LOG_VALUE, {
        "producerId": 7, "producerEpoch": 1, "transactionTimeoutMs": 60000, "transactionStatus": 0,
        "transactionPartitions": None, "transactionLastUpdateTimestampMs": T0,
        "transactionStartTimestampMs": T0}, 0)
    bad = struct.pack(">h", 99) + b"\x00\x01garbage"
    log = b"".join(build_v2_batch([make_record(i, T0 + i, key, v)], partition_leader_epoch=0)
                   for i, v in enumerate((good, bad)))
    (folder / segment_file_name(0)).write_bytes(log)
    (ps,) = replay([folder]).partitions
    assert ps.state["transactional_ids"]["tx-1"]["record_offset"] == 1
    assert "unreadable" in ps.state["transactional_ids"]["tx-1"]
    assert ps.records == 1 and ps.not_applied == 1
    assert any(n.startswith("offset 1: transactional id 'tx-1': value not decoded") for n in ps.notes), ps.notes


# --------------------------------------------------------------------------- KRaft snapshots


def _metadata_value(name: str, data: dict) -> bytes:
    message = next(m for m in metadata.RECORDS.values() if m.name == name)
    return bytes([1, message.api_key, 0]) + encode(message, data, 0)


def _topics_log(n: int) -> bytes:
    out = b""
    for i in range(n):
        value = _metadata_value("TopicRecord", {"name": f"topic-{i}", "topicId": str(uuid.UUID(int=i + 1))})
        out += build_v2_batch([make_record(i, T0 + i, None, value)], partition_leader_epoch=1)
    return out


def _kraft_folder(tmp_path: Path) -> Path:
    """A metadata log of ten TopicRecords (offsets 0-9), from its start."""
    folder = tmp_path / "__cluster_metadata-0"
    folder.mkdir()
    (folder / segment_file_name(0)).write_bytes(_topics_log(10))
    return folder


def test_an_unregistered_controller_leaves_the_image(tmp_path: Path) -> None:
    """Kafka 4.4's UnregisterControllerRecord removes the registration RegisterControllerRecord made."""
    folder = tmp_path / "__cluster_metadata-0"
    folder.mkdir()
    values = [_metadata_value("RegisterControllerRecord", {"controllerId": c, "incarnationId": str(uuid.UUID(int=c)),
                                                           "zkMigrationReady": False, "endPoints": [], "features": []})
              for c in (1, 2)]
    values.append(_metadata_value("UnregisterControllerRecord", {"controllerId": 1}))
    (folder / segment_file_name(0)).write_bytes(b"".join(
        build_v2_batch([make_record(i, T0 + i, None, v)]) for i, v in enumerate(values)))
    (ps,) = replay([folder]).partitions
    assert ps.records == 3 and ps.not_applied == 0
    assert sorted(ps.state["image"]["controllers"]) == ["2"]


SNAPSHOTS = {
    "garbage": b"\x13\x37" * 200,
    "empty": b"",
    "truncated": _topics_log(5)[:-7],
    "no header": _topics_log(5),  # batches, but not what the controller writes (no header or footer)
}


@pytest.mark.parametrize("kind", sorted(SNAPSHOTS))
def test_a_broken_snapshot_is_not_trusted(tmp_path: Path, kind: str) -> None:
    folder = _kraft_folder(tmp_path)
    snap = folder / "00000000000000000005-0000000001.checkpoint"
    snap.write_bytes(SNAPSHOTS[kind])
    (ps,) = replay([folder]).partitions
    assert ps.snapshot is None
    assert sorted(ps.state["image"]["topics"]) == sorted(f"topic-{i}" for i in range(10))
    assert ps.records == 10
    assert any(n.startswith(f"snapshot {snap} not used: ") for n in ps.notes), ps.notes


def test_a_snapshot_the_controller_wrote_is_used(tmp_path: Path) -> None:
    """The real KRaft snapshots of the shipped corpora are still taken (header, records, footer)."""
    snaps = sorted(ROOT.glob("fixtures/kafka-*/**/__cluster_metadata-0/*.checkpoint"))
    from kseg.log.listing import BOOTSTRAP_SNAPSHOT

    # the bootstrap snapshot (format's 0-0 checkpoint) precedes the log and is applied otherwise: with a
    # --standalone quorum it holds the kraft.version and voters at offsets past its end offset 0
    snaps = [s for s in snaps if s.name[:20].isdigit() and s.stat().st_size and s.name != BOOTSTRAP_SNAPSHOT]
    if not snaps:
        pytest.skip("no KRaft snapshot in the fixtures")
    from kseg.ops.state import snapshot_problem

    for s in snaps:
        assert snapshot_problem(s, int(s.name[:20])) is None, s


# --------------------------------------------------------------------------- share state


def _combine_by_definition(batches: list[StateBatch], start: int) -> list[StateBatch]:
    """The rule itself, offset by offset: the higher delivery count wins, then the higher state;
    equal neighbours joined (the oracle for the sweep)."""
    best: dict[int, tuple[int, int]] = {}
    for b in batches:
        for o in range(max(b.first, start), b.last + 1):
            if o not in best or (b.count, b.state) > best[o]:
                best[o] = (b.count, b.state)
    out: list[StateBatch] = []
    for o in sorted(best):
        count, state = best[o]
        if out and out[-1].last == o - 1 and (out[-1].count, out[-1].state) == (count, state):
            out[-1] = StateBatch(out[-1].first, o, state, count)
        else:
            out.append(StateBatch(o, o, state, count))
    return out


@examples(300)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12), st.sampled_from([0, 2, 4]), st.integers(1, 4)),
                max_size=25), st.integers(0, 30))
def test_combining_state_batches_follows_the_rule(raw, start) -> None:
    batches = [StateBatch(first, first + length, state, count) for first, length, state, count in raw]
    assert combine_state_batches(batches, start) == _combine_by_definition(batches, start)


def test_combining_50k_state_batches_takes_well_under_a_second() -> None:
    """An update of 50k state batches merged into a snapshot: linear (it took minutes)."""
    snapshot = [StateBatch(0, 200_000, 0, 1)]
    update = [StateBatch(4 * i, 4 * i + 1, 2, 2) for i in range(50_000)]
    t = time.process_time()
    out = combine_state_batches(snapshot + update, 0)
    took = time.process_time() - t
    assert len(out) == 100_000 and took < 2.0, took  # update and snapshot pieces alternate


# --------------------------------------------------------------------------- the KRaft bootstrap

LDI = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata" / "LDI-POC"
LDI = LDI if LDI.is_dir() else Path("/work/shared/realdata/LDI-POC")
BOOT_SNAP = "00000000000000000000-0000000000.checkpoint"


def _bootstrap_bytes(level: int) -> bytes:
    """The real bootstrap.checkpoint with its metadata.version record set to ``level``."""
    real = (LDI / "bootstrap.checkpoint").read_bytes()
    header, footer = real[:83], real[174:]  # SnapshotHeader batch, [FeatureLevelRecord batch], SnapshotFooter batch
    value = _metadata_value("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": level})
    return header + build_v2_batch([make_record(1, T0, None, value)]) + footer


def _log_dir(tmp_path: Path, log: str, boot_file: int | None, boot_snap: int | None) -> Path:
    """A copy of the LDI-POC log directory: its metadata log whole, cut to its first batch (a
    LeaderChange only), empty (as a broker creates it at start) or absent (formatted, never
    started); its bootstrap.checkpoint (19, as written, or another level) and a
    0-0 checkpoint holding bootstrap records, or not."""
    import shutil

    root = tmp_path / "logdir"
    shutil.copytree(LDI / "__cluster_metadata-0", root / "__cluster_metadata-0")
    seg = root / "__cluster_metadata-0" / segment_file_name(0)
    if log == "leader-change":
        seg.write_bytes(seg.read_bytes()[:91])
    elif log == "empty":
        seg.write_bytes(b"")
    elif log == "absent":  # as the format command leaves it: the 0-0 checkpoint alone
        for f in list(seg.parent.iterdir()):
            f.unlink()
    if boot_file is not None:
        data = (LDI / "bootstrap.checkpoint").read_bytes() if boot_file == 19 else _bootstrap_bytes(boot_file)
        (root / "bootstrap.checkpoint").write_bytes(data)
    if boot_snap is not None:
        (root / "__cluster_metadata-0" / BOOT_SNAP).write_bytes(_bootstrap_bytes(boot_snap))
    return root


# (case, log, bootstrap.checkpoint level, 0-0 checkpoint level, applied from (None: not applied),
# metadata.version of the image): the bootstrap counts once, and only where the log lacks it.
BOOTSTRAP_CASES = [
    ("as-written", "whole", 19, None, None, 19),
    ("log-holds-them", "whole", 7, None, None, 19),
    ("snapshot-and-log", "whole", 19, 7, None, 19),
    ("empty-log", "empty", 19, None, "bootstrap.checkpoint", 19),
    ("leader-change-only", "leader-change", 7, None, "bootstrap.checkpoint", 7),
    ("both-files-empty-log", "empty", 19, 7, BOOT_SNAP, 7),
    ("formatted-never-started", "absent", 19, 7, BOOT_SNAP, 7),
    ("only-the-snapshot", "leader-change", None, 8, BOOT_SNAP, 8),
]


@pytest.mark.skipif(not LDI.is_dir(), reason="real data not present")
@pytest.mark.parametrize("case,log,boot_file,boot_snap,applied_from,level", BOOTSTRAP_CASES,
                         ids=[c[0] for c in BOOTSTRAP_CASES])
def test_the_bootstrap_is_applied_once(tmp_path: Path, case: str, log: str, boot_file: int | None,
                                       boot_snap: int | None, applied_from: str | None, level: int) -> None:
    root = _log_dir(tmp_path, log, boot_file, boot_snap)
    given = root / "__cluster_metadata-0" if log == "absent" else root  # (no log: not a partition of the log dir)
    (ps,) = replay([given]).partitions
    assert ps.state["image"]["features"] == {"metadata.version": level}
    assert ps.bootstrap is not None and ps.bootstrap["applied"] == (applied_from is not None)
    assert not any("not used" in n for n in ps.notes), ps.notes  # the 0-0 checkpoint is no snapshot of the log
    if applied_from is not None:
        assert Path(ps.bootstrap["records_from"]).name == applied_from
        assert any("the image starts from the bootstrap records" in n for n in ps.notes)
    else:  # the log alone gives the same image: nothing of the bootstrap came in on top
        for f in (root / "bootstrap.checkpoint", root / "__cluster_metadata-0" / BOOT_SNAP):
            f.unlink(missing_ok=True)
        (alone,) = replay([given]).partitions
        assert alone.state == ps.state and alone.records == ps.records and alone.bootstrap is None


@pytest.mark.skipif(not LDI.is_dir(), reason="real data not present")
def test_state_on_the_real_log_dir_says_where_the_bootstrap_is() -> None:
    (meta, _) = replay([LDI]).partitions
    assert meta.bootstrap == {
        "files": [str(LDI / "bootstrap.checkpoint")], "records_from": str(LDI / "bootstrap.checkpoint"),
        "applied": False, "why": "the log holds them (the controller wrote them when it first became active; "
                                 "its first metadata record is at offset 1)"}
