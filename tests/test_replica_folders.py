"""The partition folders the broker renames (Kafka's LocalLog): ``<topic>-<n>.<id>-delete``,
``-future`` and ``-stray``. Every reading command lists them under their topic-partition and says
what each is; writers' log-directory checkpoints name only the replicas the broker checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.log import listing
from kseg.log.listing import DELETING, FUTURE, LIVE, REPLICA_KINDS, STRAY
from tests.builders import write_partition

ID = "0123456789abcdef0123456789abcdef"  # a UUID's 32 hex digits, as LocalLog writes it

# (folder name, topic, partition, kind): names as LocalLog.logDeleteDirName / logFutureDirName /
# logStrayDirName make them, and as parseTopicPartitionName reads them back.
NAMES = [
    ("orders-0", "orders", 0, LIVE),
    (f"orders-0.{ID}-delete", "orders", 0, DELETING),
    (f"orders-12.{ID}-future", "orders", 12, FUTURE),
    (f"orders-3.{ID}-stray", "orders", 3, STRAY),
    (f"my.dotted-topic-7.{ID}-delete", "my.dotted-topic", 7, DELETING),  # dots and dashes in the topic
    (f"__consumer_offsets-49.{ID}-future", "__consumer_offsets", 49, FUTURE),
    (f"{'t' * 200}-1.{ID}-stray", "t" * 200, 1, STRAY),  # a topic LocalLog cut short to fit 255
]


def test_every_kind_has_a_row() -> None:
    assert {k for *_, k in NAMES} == {LIVE, *REPLICA_KINDS}


@pytest.mark.parametrize("name,topic,partition,kind", NAMES)
def test_names_parse_as_kafka_does(name: str, topic: str, partition: int, kind: str) -> None:
    assert listing.parse_partition_dir(name) == (topic, partition)
    assert listing.replica_kind(name) == kind
    note = listing.replica_note(f"/data/{name}")
    assert (note is None) == (kind == LIVE)
    if note:
        assert note == f"{name}: {REPLICA_KINDS[kind]}"


@pytest.mark.parametrize("name", [
    "orders-0.-delete",          # no id
    "orders.abc-delete",         # no partition
    f"orders-x.{ID}-future",     # partition not a number
    f"orders-0.{ID}-deleted",    # not one of the suffixes
    f"orders-0.{ID}.x-stray",    # the id holds a dot: Kafka cuts at the last one
])
def test_other_names_are_not_partitions(name: str) -> None:
    assert listing.replica_kind(name) == LIVE
    assert listing.parse_partition_dir(name) is None


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "logdir"
    for name in ("t-0", f"t-0.{ID}-delete", f"t-0.{ID[::-1]}-future", f"t-1.{ID}-stray", "t-1"):
        write_partition(root / name, 2, "none", segments=2, n_batches=1, per=2)
    return root


def test_log_dir_lists_each_replica_after_the_live_one(log_dir: Path) -> None:
    runs = [g for g in listing.list_input(log_dir).groups if g.kind == listing.RUN]
    assert [(g.name, g.replica) for g in runs] == [
        ("t-0", LIVE), (f"t-0.{ID}-delete", DELETING), (f"t-0.{ID[::-1]}-future", FUTURE),
        ("t-1", LIVE), (f"t-1.{ID}-stray", STRAY)]
    assert [g.note is None for g in runs] == [True, False, False, True, False]


def cli(*args: object) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def test_verify_says_what_each_replica_is(log_dir: Path) -> None:
    code, out, _ = cli("verify", "--format", "json", log_dir)
    assert code == 0
    notes = {p["message"] for f in json.loads(out)["files"] for p in f["problems"] if p["check"] == "replica"}
    assert notes == {listing.replica_note(log_dir / n) for n in
                     (f"t-0.{ID}-delete", f"t-0.{ID[::-1]}-future", f"t-1.{ID}-stray")}


def test_stats_lists_them_under_their_topic_partition(log_dir: Path) -> None:
    code, out, _ = cli("stats", "--format", "json", log_dir)
    assert code == 0
    parts = [p for t in json.loads(out)["topics"] for p in t["partitions"]]
    by_path = {Path(p["path"]).name: p for p in parts}
    assert len(by_path) == 5
    for name, p in by_path.items():
        assert (p["topic"], p["partition"]) == listing.parse_partition_dir(name)
        assert p.get("replica", LIVE) == listing.replica_kind(name)
        note = listing.replica_note(name)
        assert (note in p["notes"]) if note else not any("replica" in n or "deleted" in n for n in p["notes"])


def test_dump_notes_each_segment_of_a_renamed_replica(log_dir: Path) -> None:
    code, _, err = cli("dump", log_dir / f"t-0.{ID}-delete")
    assert code == 0
    assert err.count(REPLICA_KINDS[DELETING]) == 2  # both segments
    code, _, err = cli("dump", log_dir / "t-0")
    assert code == 0 and err == ""


def test_written_checkpoints_name_live_and_future_replicas_only(log_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, _, _ = cli("recompress", "--codec", "gzip", log_dir, "-o", out)
    assert code == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(p.name for p in log_dir.iterdir())
    lines = (out / "recovery-point-offset-checkpoint").read_text().split("\n")
    assert lines[:4] == ["0", "2", "t 0 4", "t 1 4"]


@pytest.mark.parametrize("kind", [LIVE, *REPLICA_KINDS])
def test_internal_topics_decode_in_every_replica_kind(kind: str) -> None:
    from kseg.decoders import family_for
    folder = "__consumer_offsets-3" if kind == LIVE else f"__consumer_offsets-3.{ID}-{kind}"
    assert family_for(f"/d/{folder}/00000000000000000000.log", "auto") == "offsets"


def _totals(doc: dict) -> tuple[int, int, int]:
    return doc["records"], doc["batches"], doc["bytes"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_stats_keeps_renamed_replicas_out_of_the_topic_totals(log_dir: Path, tmp_path: Path, jobs: str) -> None:
    live = tmp_path / "live"
    for name in ("t-0", "t-1"):  # the same live partitions alone: what the totals must be
        write_partition(live / name, 2, "none", segments=2, n_batches=1, per=2)
    code, out, _ = cli("stats", "--format", "json", "-j", jobs, log_dir)
    assert code == 0
    doc = json.loads(out)
    alone = json.loads(cli("stats", "--format", "json", live)[1])
    assert _totals(doc) == _totals(alone) and doc["records"] == 8
    rows = [(t["topic"], t.get("replica", LIVE), sorted(Path(p["path"]).name for p in t["partitions"]))
            for t in doc["topics"]]
    assert rows == [("t", LIVE, ["t-0", "t-1"]), ("t", DELETING, [f"t-0.{ID}-delete"]),
                    ("t", FUTURE, [f"t-0.{ID[::-1]}-future"]), ("t", STRAY, [f"t-1.{ID}-stray"])]
    live_topic = doc["topics"][0]
    assert _totals(live_topic) == _totals(alone["topics"][0]) and live_topic["partitions_count"] == 2
    for t in doc["topics"][1:]:
        assert _totals(t) == (4, 2, _totals(t)[2]) and t["partitions"][0]["replica"] == t["replica"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_stats_text_puts_renamed_replicas_below_the_total(log_dir: Path, jobs: str) -> None:
    code, out, _ = cli("stats", "-j", jobs, log_dir)
    assert code == 0
    names = [line.split("  ")[0] for line in out.splitlines()[2:7]]
    assert names == ["t-0", "t-1", "total (2 partitions)", "t-0 (delete)", "t-0 (future)"]
    assert out.splitlines()[7].startswith("t-1 (stray) ")
    assert out.splitlines()[-1].startswith("2 partition(s), 8 records, ")
    assert out.splitlines()[-1].endswith(" (renamed replicas not counted: 1 delete, 1 future, 1 stray); 0 problem(s)")


def test_stats_counts_a_problem_in_a_renamed_replica(log_dir: Path) -> None:
    seg = log_dir / f"t-1.{ID}-stray" / "00000000000000000000.log"
    seg.write_bytes(seg.read_bytes()[:-3])  # a torn last batch
    code, out, _ = cli("stats", "--format", "json", log_dir)
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert doc["problem_count"] == 0 and doc["topics"][-1]["problem_count"] == 1
    code, out, _ = cli("stats", log_dir)
    assert code == 1 and out.splitlines()[-1].endswith("; 1 problem(s)")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_stats_with_renamed_replicas_is_the_same_on_two_processes(log_dir: Path, fmt: str) -> None:
    assert cli("stats", "--format", fmt, "--segments", "-j", "1", log_dir) == \
        cli("stats", "--format", fmt, "--segments", "-j", "2", log_dir)
