"""kseg salvage rebuilds a partition's producer snapshots and leader-epoch-checkpoint from the
batches it keeps (kseg.companions.producer_state): on every undamaged partition of the Kafka
corpora they are byte for byte the files the broker itself wrote (at each segment roll and at
its clean shutdown); on damaged copies they describe exactly the batches kept; kseg reads them
back."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from conftest import REPO
from kseg.companions.check import check_producer_snapshot
from kseg.companions.producer_state import LeaderEpochs, ProducerStates, leader_epoch_checkpoint, producer_snapshot
from kseg.companions.read import parse_producer_snapshot, read_leader_epoch_checkpoint, read_producer_snapshot
from kseg.log.segment import Segment, base_offset_of, partition_segments
from kseg.ops.salvage import SalvageOptions, salvage
from kseg.ops.verify import verify_paths
from test_salvage import EXAMPLES, zero

# Every log directory a broker wrote (every release line's corpus, the clients', admin, convert and
# tiered scenarios'); fixtures/logdir is kseg's own and not among them.
ROOTS = sorted(str(p.relative_to(REPO / "fixtures")) for p in (REPO / "fixtures").glob("kafka-*/**/logdir"))
# Every partition folder of the corpora that holds a file the broker wrote about its producers or epochs.
PARTITIONS = sorted(p for root in ROOTS for p in (REPO / "fixtures" / root).iterdir()
                    if p.is_dir() and (any(p.glob("*.snapshot")) or (p / "leader-epoch-checkpoint").exists()))
LIMIT = 256 << 20


def test_the_corpora_have_what_is_compared() -> None:
    assert {"kafka-2.8/logdir", "kafka-3.6/logdir", "kafka-3.9/logdir", "kafka-4.0/logdir", "kafka-4.1/logdir",
            "kafka-4.2/logdir", "kafka-4/logdir", "kafka-4.4/logdir", "kafka-tiered/logdir"} <= set(ROOTS)
    assert len(PARTITIONS) >= 170
    assert sum(1 for p in PARTITIONS for _ in p.glob("*.snapshot")) >= 200


@pytest.mark.parametrize("part", PARTITIONS, ids=[f"{p.parent.parent.name}/{p.name}" for p in PARTITIONS])
def test_rebuilt_files_are_the_brokers_own(part: Path, tmp_path: Path) -> None:
    out = tmp_path / part.name
    rep = salvage(part, out, SalvageOptions())
    assert rep.ok
    theirs = sorted(p.name for p in part.glob("*.snapshot"))
    ours = sorted(p.name for p in out.glob("*.snapshot"))
    assert set(theirs) <= set(ours)  # the broker may have deleted older ones; kseg writes one per roll
    for name in theirs + ["leader-epoch-checkpoint"] * (part / "leader-epoch-checkpoint").exists():
        assert (out / name).read_bytes() == (part / name).read_bytes(), name
    for snap in out.glob("*.snapshot"):  # and kseg reads its own files as the broker's
        assert read_producer_snapshot(snap).crc_valid and check_producer_snapshot(snap) == []
    assert verify_paths([out]).ok


def test_snapshot_bytes_round_trip() -> None:
    for part in PARTITIONS:
        for snap in part.glob("*.snapshot"):
            data = snap.read_bytes()
            assert producer_snapshot(parse_producer_snapshot(data).entries) == data


def _state_of(folder: Path) -> tuple[list, list]:
    producers, epochs = ProducerStates(), LeaderEpochs()
    for log in partition_segments(folder):
        for b in Segment(log).batches():
            producers.on_batch(b, LIMIT)
            epochs.on_batch(b)
    return producers.entries(), epochs.entries


IDEMPOTENT = [p for p in PARTITIONS if p.name in ("idempotent-0", "txn-0", "v2-0")]


@EXAMPLES
@given(part=st.sampled_from(IDEMPOTENT), seg=st.integers(0, 10), frac=st.floats(0, 0.999),
       length=st.integers(1, 2000))
def test_after_damage_they_describe_the_batches_kept(tmp_path_factory, part: Path, seg: int, frac: float,
                                                     length: int) -> None:
    tmp = tmp_path_factory.mktemp("rebuild")
    work = tmp / "in" / part.name
    shutil.copytree(part, work)
    logs = partition_segments(work)
    log = logs[seg % len(logs)]
    data = log.read_bytes()
    log.write_bytes(zero(data, int(frac * len(data)), length)[0])
    out = tmp / "out" / part.name
    rep = salvage(work, out, SalvageOptions())
    entries, epochs = _state_of(out)
    leo = rep.partitions[0].log_end_offset
    assert leo is not None
    snap = out / f"{leo:020d}.snapshot"
    assert list(read_producer_snapshot(snap).entries) == entries
    assert read_leader_epoch_checkpoint(out / "leader-epoch-checkpoint").entries == [tuple(e) for e in epochs]
    assert (out / "leader-epoch-checkpoint").read_bytes() == leader_epoch_checkpoint(epochs)
    for other in out.glob("*.snapshot"):  # one per segment base after the first, and the log end
        at = base_offset_of(other)
        assert at == leo or at in {base_offset_of(p) for p in logs[1:]}
    assert verify_paths([out]).ok
