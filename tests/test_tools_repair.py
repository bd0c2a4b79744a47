"""kseg repair: recovery after an unclean shutdown, offline, on damaged copies of generated
partitions, the fixtures and the real broker files."""

from __future__ import annotations

import json
import shutil
import struct

import pytest
from click.testing import CliRunner

from conftest import FIXTURES_LOGDIR, REALDATA
from kseg.cli.main import main
from kseg.companions.build import build_indexes
from kseg.companions.read import read_txn_index
from kseg.log.encode import build_v2_batch
from kseg.log.segment import Segment, segment_file_name
from kseg.model import make_record
from kseg.ops.verify import VerifyOptions, verify_paths

T0 = 1_700_000_000_000


def batches(first: int, n: int, per: int = 10, epoch: int = 0) -> list[bytes]:
    out = []
    for b in range(n):
        base = first + b * per
        recs = [make_record(base + i, T0 + base + i, f"k{(base + i) % 37}".encode(), b"v" * 50) for i in range(per)]
        out.append(build_v2_batch(recs, partition_leader_epoch=epoch))
    return out


def partition(folder, segments=3, n=20, per=10):
    folder.mkdir(parents=True)
    off = 0
    for _ in range(segments):
        (folder / segment_file_name(off)).write_bytes(b"".join(batches(off, n, per)))
        off += n * per
    (folder / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 250\n")
    return folder


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_clean_partition_is_copied_whole(tmp_path):
    src = partition(tmp_path / "t-0")
    res = run("repair", src, "-o", tmp_path / "out")
    assert res.exit_code == 0, res.output
    for p in src.glob("*.log"):
        assert (tmp_path / "out" / p.name).read_bytes() == p.read_bytes()
    assert verify_paths([tmp_path / "out"]).ok


@pytest.mark.parametrize("damage", ["crc", "partial", "zeros", "garbage"])
def test_cut_in_middle_segment_deletes_the_rest(tmp_path, damage):
    src = partition(tmp_path / "t-0")
    segs = sorted(src.glob("*.log"))
    mid = segs[1]
    data = bytearray(mid.read_bytes())
    cut_at = sum(len(b) for b in batches(200, 7))
    if damage == "crc":
        data[cut_at + 100] ^= 0xFF
        expected_lost = 13 * 10  # the bad batch and every one after it (still framed)
    elif damage == "partial":
        data = data[:cut_at + 70]
        expected_lost = 10  # the partial batch's header is readable
    elif damage == "zeros":
        data = data[:cut_at] + bytes(1 << 16)
        expected_lost = 0
    else:
        data = data[:cut_at] + b"\xde\xad\xbe\xef" * 40
        expected_lost = 0
    mid.write_bytes(bytes(data))
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    out = tmp_path / "out"
    res = run("repair", src, "-o", out, "--format", "json")
    assert res.exit_code == 1
    doc = json.loads(res.output)
    s0, s1, s2 = doc["partitions"][0]["segments"]
    assert s0["action"] == "kept" and s1["action"] == "truncated" and s2["action"] == "deleted"
    assert s1["cut"]["reason"] == damage and s1["cut"]["position"] == cut_at
    assert s1["kept_records"] == 70 and s1["last_offset"] == 269
    assert s1["cut"]["records_lost"] == expected_lost
    if damage in ("crc", "partial"):
        assert s1["cut"]["first_offset_lost"] == 270
    assert s2["cut"]["records_lost"] == 200 and s2["cut"]["first_offset_lost"] == 400
    # The input is untouched; the output is what recovery leaves, and it verifies clean.
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before
    assert sorted(p.name for p in out.glob("*.log")) == [segs[0].name, segs[1].name]
    assert (out / segs[1].name).read_bytes() == bytes(data[:cut_at])
    assert verify_paths([out]).ok
    # Indexes as LogSegment.recover rebuilds them (one append per batch).
    kept = list(Segment(out / segs[1].name).batches())
    assert (out / segs[1].with_suffix(".index").name).read_bytes() == build_indexes(kept, 200)[0]
    # leader-epoch-checkpoint truncated at the new log end offset (270).
    assert (out / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 250\n"
    assert doc["partitions"][0]["log_end_offset"] == 270


def test_epoch_entries_past_log_end_are_dropped(tmp_path):
    src = partition(tmp_path / "t-0", segments=1)
    (src / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n3 150\n5 190\n")
    log = next(src.glob("*.log"))
    log.write_bytes(log.read_bytes()[:-5])  # partial last batch: offsets 190..199 go
    res = run("repair", src, "-o", tmp_path / "out")
    assert res.exit_code == 1
    assert "epoch 5 at 190" in res.output
    assert (tmp_path / "out" / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n3 150\n"


def test_dry_run_writes_nothing_and_single_file(tmp_path):
    src = partition(tmp_path / "t-0", segments=1)
    log = next(src.glob("*.log"))
    log.write_bytes(log.read_bytes() + bytes(100))
    res = run("repair", "--dry-run", log)
    assert res.exit_code == 1
    assert "truncated at byte" in res.output and "(zeros)" in res.output
    assert not (tmp_path / "out").exists()
    res = run("repair", log, "-o", tmp_path / "fixed.log")
    assert res.exit_code == 1
    assert (tmp_path / "fixed.log").read_bytes() == log.read_bytes()[:-100]
    assert (tmp_path / "fixed.index").exists()


def test_refuses_input_as_output_and_existing(tmp_path):
    src = partition(tmp_path / "t-0", segments=1)
    assert run("repair", src, "-o", src).exit_code == 2
    (tmp_path / "out").mkdir()
    assert run("repair", src, "-o", tmp_path / "out").exit_code == 2
    assert run("repair", src, "-o", tmp_path / "out", "--force").exit_code == 0


def test_txnindex_rebuilt_from_kept_abort_markers(tmp_path):
    folder = tmp_path / "t-0"
    folder.mkdir()
    data = b""
    data += build_v2_batch([make_record(0, T0, b"a", b"1")], transactional=True, producer_id=7, producer_epoch=0)
    data += build_v2_batch([make_record(1, T0, b"b", b"2")], transactional=True, producer_id=8, producer_epoch=0)
    abort = make_record(2, T0, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 3))
    data += build_v2_batch([abort], transactional=True, control=True, producer_id=7, producer_epoch=0)
    commit = make_record(3, T0, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 3))
    data += build_v2_batch([commit], transactional=True, control=True, producer_id=8, producer_epoch=0)
    good = len(data)
    data += build_v2_batch([make_record(4, T0, b"c", b"3")], transactional=True, producer_id=9, producer_epoch=0)
    (folder / segment_file_name(0)).write_bytes(data[:-3])
    res = run("repair", folder, "-o", tmp_path / "out")
    assert res.exit_code == 1
    assert (tmp_path / "out" / segment_file_name(0)).stat().st_size == good
    entries = read_txn_index(tmp_path / "out" / segment_file_name(0, ".txnindex")).entries
    # producer 7 aborted offsets 0..2 while producer 8's transaction (from 1) was open: LSO 1
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset) for e in entries] == [(7, 0, 2, 1)]
    assert verify_paths([tmp_path / "out"]).ok


def test_fixtures_repair_to_themselves(tmp_path):
    res = run("repair", FIXTURES_LOGDIR, "-o", tmp_path / "out")
    assert res.exit_code == 0, res.output
    for log in FIXTURES_LOGDIR.glob("*/*.log"):
        assert (tmp_path / "out" / log.parent.name / log.name).read_bytes() == log.read_bytes()
    assert verify_paths([tmp_path / "out"], VerifyOptions()).ok


REAL = [REALDATA / "Experts-in-team-innovation" / "kafka" / "data", REALDATA / "LDI-POC"]


@pytest.mark.parametrize("root", REAL, ids=lambda p: p.parent.name if p.name == "data" else p.name)
def test_real_data(tmp_path, root):
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    res = run("repair", "--dry-run", "--format", "json", root)
    assert res.exit_code == 0, res.output
    # Damage a copy of a real partition: cut its log in the middle of the last batch.
    part = next(p for p in sorted(root.iterdir()) if p.is_dir() and list(p.glob("*.log"))
                and list(Segment(next(p.glob("*.log"))).batches()))
    copy = tmp_path / part.name
    shutil.copytree(part, copy)
    log = sorted(copy.glob("*.log"))[-1]
    last = list(Segment(log).batches())[-1]
    log.write_bytes(log.read_bytes()[:last.position + last.size // 2])
    res = run("repair", copy, "-o", tmp_path / "out", "--format", "json")
    assert res.exit_code == 1
    seg = json.loads(res.output)["partitions"][0]["segments"][-1]
    assert seg["cut"]["reason"] == "partial" and seg["cut"]["position"] == last.position
    assert seg["cut"]["first_offset_lost"] == last.offset


def test_log_directory_and_bad_usage(tmp_path):
    root = tmp_path / "logs"
    partition(root / "t-0", segments=2)
    partition(root / "u-0", segments=1)
    log = sorted((root / "u-0").glob("*.log"))[0]
    log.write_bytes(log.read_bytes()[:-7])
    res = run("repair", root, "-o", tmp_path / "out", "--format", "json")
    assert res.exit_code == 1
    doc = json.loads(res.output)
    assert [p["topic"] for p in doc["partitions"]] == ["t", "u"]
    assert doc["segments_truncated"] == 1 and doc["records_lost"] == 10
    assert verify_paths([tmp_path / "out"]).ok
    assert run("repair", root).exit_code == 2  # neither -o nor --dry-run
    assert run("repair", tmp_path / "nope", "--dry-run").exit_code == 2


def test_kraft_metadata_partition_keeps_its_other_files(tmp_path):
    src = REALDATA / "LDI-POC" / "__cluster_metadata-0"
    if not src.is_dir():
        pytest.skip(f"{src} not present")
    res = run("repair", src, "-o", tmp_path / "out")
    assert res.exit_code == 0, res.output
    names = {p.name for p in src.iterdir() if p.is_file()}
    assert names <= {p.name for p in (tmp_path / "out").iterdir()}


def test_a_failing_single_file_leaves_no_output_folder(tmp_path, monkeypatch):
    """``kseg repair FILE -o DIR``: the folder made for the file goes when the file cannot be read."""
    import kseg.ops.repair as repair_op
    from kseg.errors import InputError

    def unreadable(*a, **k):
        raise InputError("cannot read: Input/output error", file="seg")

    monkeypatch.setattr(repair_op, "repair_partition", unreadable)
    seg = sorted((FIXTURES_LOGDIR / "v2-txn-0").glob("*.log"))[0]
    r = CliRunner().invoke(main, ["repair", str(seg), "-o", str(tmp_path / "out")])
    assert r.exit_code == 2, r.output
    assert not (tmp_path / "out").exists()
    existing = tmp_path / "mine"
    existing.mkdir()
    r = CliRunner().invoke(main, ["repair", str(seg), "-o", str(existing), "--force"])
    assert r.exit_code == 2 and existing.is_dir()  # a folder the user had stays


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_snapshot_the_broker_cannot_read_is_dropped_and_said(tmp_path, dry_run):
    """A producer snapshot whose CRC does not match: the broker deletes it when it loads it and
    rebuilds producer state from the log; repair drops it too, says so and exits 1 (the readable
    one beside it is copied as it is)."""
    src = tmp_path / "in" / "txn-0"
    shutil.copytree(FIXTURES_LOGDIR.parent / "kafka-4.2" / "logdir" / "txn-0", src)
    bad, good = src / "00000000000000000080.snapshot", src / "00000000000000000015.snapshot"
    data = bytearray(bad.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    out = tmp_path / "out"
    args = ["repair", str(src), "--format", "json"] + (["--dry-run"] if dry_run else ["-o", str(out)])
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    [part] = doc["partitions"]
    assert [s["file"] for s in part["snapshots_corrupt"]] == [str(bad)]
    assert "crc mismatch" in part["snapshots_corrupt"][0]["problem"]
    if not dry_run:
        assert not (out / bad.name).exists() and (out / good.name).read_bytes() == good.read_bytes()
    text = CliRunner().invoke(main, ["repair", str(src), "--dry-run"])
    assert text.exit_code == 1 and f"{bad}: producer snapshot the broker cannot read (at byte" in text.output


def test_offsets_that_go_back_empty_the_segment_as_recovery_does(tmp_path):
    """A batch's base offset (no CRC covers it) set back below an earlier index entry: no index can be built,
    so the broker's recovery empties that segment and deletes the later ones (LogLoader.recoverLog on
    InvalidOffsetException; held to Kafka 4.3.1 in tests/kafka/test_repair_live.py). Repair did the same
    nowhere before: exit 2, or a time index going back."""
    src = partition(tmp_path / "t-0")
    middle = sorted(src.glob("*.log"))[1]
    data = bytearray(middle.read_bytes())
    seg = list(Segment(middle).batches())
    struct.pack_into(">q", data, seg[-1].position, 205)  # holds the largest timestamp: the final time entry goes back
    middle.write_bytes(bytes(data))
    res = run("repair", src, "-o", tmp_path / "out", "--format", "json")
    assert res.exit_code == 1, res.output
    report = json.loads(res.output)["partitions"][0]
    cut = report["segments"][1]["cut"]
    assert (cut["reason"], cut["position"], cut["batches_lost"]) == ("offsets", 0, 20)
    assert [s["action"] for s in report["segments"]] == ["kept", "truncated", "deleted"]
    assert report["log_end_offset"] == 200
    assert (tmp_path / "out" / middle.name).read_bytes() == b""
    assert not (tmp_path / "out" / segment_file_name(400)).exists()
    assert verify_paths([tmp_path / "out"]).ok


def test_epochs_recovery_assigns_are_added_to_the_checkpoint(tmp_path):
    """The checkpoint lost its last entry: recovery puts it back from the batches (LogSegment.recover ->
    LeaderEpochFileCache.assign), exit 1; a partition without one gets it written, exit 0."""
    src = tmp_path / "t-0"
    src.mkdir()
    (src / segment_file_name(0)).write_bytes(b"".join(batches(0, 3) + batches(30, 3, epoch=4)))
    (src / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    res = run("repair", src, "-o", tmp_path / "out", "--format", "json")
    assert res.exit_code == 1, res.output
    assert json.loads(res.output)["partitions"][0]["epochs_added"] == [[4, 30]]
    assert (tmp_path / "out" / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n4 30\n"
    (src / "leader-epoch-checkpoint").unlink()
    res = run("repair", src, "-o", tmp_path / "out2")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out2" / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n4 30\n"
