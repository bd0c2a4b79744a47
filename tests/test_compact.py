"""`kseg compact` against a small, obviously correct model of the cleaner's rules (spec §8)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from conftest import examples

from kseg.cli.main import main
from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.model import make_record
from kseg.log.segment import Segment, segment_file_name
from kseg.log.records import batch_records

sys.path.insert(0, str(Path(__file__).parent))
from builders import kafka_python_records  # noqa: E402

NOW = 1_800_000_000_000
RETENTION = 86_400_000
T0 = 1_700_000_000_000
COMMIT_KEY, ABORT_KEY = b"\x00\x00\x00\x01", b"\x00\x00\x00\x00"
MARKER_VALUE = b"\x00\x00\x00\x00\x00\x07"


def run(*args) -> tuple[int, str]:
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return r.exit_code, r.output


# --------------------------------------------------------------------------- a partition description


@dataclass
class B:
    """One batch of the test partition."""

    records: list[tuple[bytes | None, bytes | None]]  # (key, value)
    magic: int = 2
    codec: int = 0
    pid: int = -1
    txn: str | None = None  # None, "commit" or "abort": which marker ends its transaction
    marker: str | None = None  # a control batch: "commit" or "abort"
    first_offset: int = 0


@dataclass
class Partition:
    segments: list[list[B]] = field(default_factory=list)


def write(folder: Path, part: Partition) -> list[B]:
    """Write segments; returns every batch with its assigned first offset."""
    folder.mkdir(parents=True, exist_ok=True)
    off = 0
    out = []
    for seg in part.segments:
        base = off
        data = bytearray()
        for b in seg:
            b.first_offset = off
            recs = [make_record(off + i, T0 + off + i, k, v, magic=b.magic) for i, (k, v) in enumerate(b.records)]
            if b.marker:
                key = COMMIT_KEY if b.marker == "commit" else ABORT_KEY
                data += build_v2_batch([make_record(off, T0 + off, key, MARKER_VALUE)], producer_id=b.pid,
                                       producer_epoch=0, transactional=True, control=True)
                off += 1
            elif b.magic == 2:
                data += build_v2_batch(recs, codec=b.codec, producer_id=b.pid, producer_epoch=0 if b.pid >= 0 else -1,
                                       base_sequence=0 if b.pid >= 0 else -1, transactional=b.txn is not None)
                off += len(recs)
            elif b.codec == 0:
                for r in recs:
                    data += build_legacy_message(r.offset, b.magic, 0, r.stored_timestamp if b.magic else -1,
                                                 r.key, r.value)
                off += len(recs)
            else:
                if b.magic == 0:
                    recs = [r._replace(stored_timestamp=-1, magic=0) for r in recs]
                data += build_legacy_wrapper(recs, magic=b.magic, codec=b.codec)
                off += len(recs)
            out.append(b)
        (folder / segment_file_name(base)).write_bytes(bytes(data))
    return out


def model(part: Partition, *, include_active: bool = False, horizon_passed: bool = False) -> list[tuple]:
    """The records the cleaner keeps, by its rules, written as plainly as possible:
    - the active (last) segment is untouched;
    - records of aborted transactions go; keyless records go;
    - of a key, only the record with the latest offset among non-aborted records stays;
    - a tombstone stays until its delete horizon has passed (it is stamped on the first
      pass, so it passes only in a later run with a later clock: ``horizon_passed``);
    - transaction markers are not data (checked separately)."""
    segs = part.segments if include_active else part.segments[:-1]
    cleanable = [b for seg in segs for b in seg]
    active = [] if include_active else part.segments[-1]
    latest: dict[bytes, int] = {}
    for b in cleanable:
        if b.marker or b.txn == "abort":
            continue
        for i, (k, _) in enumerate(b.records):
            if k is not None:
                latest[k] = b.first_offset + i
    kept = []
    for b in cleanable:
        if b.marker or b.txn == "abort":
            continue
        for i, (k, v) in enumerate(b.records):
            off = b.first_offset + i
            if k is None or latest[k] != off:
                continue
            if v is None and horizon_passed and b.magic == 2:
                continue
            kept.append((off, k, v))
    for b in active:
        if not b.marker:
            kept.extend((b.first_offset + i, k, v) for i, (k, v) in enumerate(b.records))
    return kept


def kept_records(folder: Path) -> list[tuple]:
    out = []
    for seg in sorted(folder.glob("*.log")):
        for b in Segment(seg).batches():
            if b.is_control:
                continue
            out.extend((r.offset, r.key, r.value) for r in batch_records(b))
    return out


def markers(folder: Path) -> list[tuple[int, bool]]:
    """(offset, has delete horizon) of every control batch."""
    return [(b.offset, b.has_delete_horizon) for seg in sorted(folder.glob("*.log"))
            for b in Segment(seg).batches() if b.is_control and b.record_count]


# --------------------------------------------------------------------------- strategies

keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"]) | st.sampled_from([b"hot"] * 4)  # skewed reuse
record = st.tuples(st.one_of(st.none(), keys, keys, keys), st.one_of(st.none(), st.binary(min_size=0, max_size=8)))
layout = st.sampled_from([(2, 0), (2, 1), (2, 2), (2, 3), (2, 4), (1, 0), (1, 1), (1, 3), (0, 0), (0, 2)])


@st.composite
def batches(draw, txn_pid):
    magic, codec = draw(layout)
    recs = draw(st.lists(record, min_size=1, max_size=5))
    kind = draw(st.sampled_from(["plain", "plain", "idempotent", "txn"])) if magic == 2 else "plain"
    if kind == "txn":
        outcome = draw(st.sampled_from(["commit", "abort"]))
        pid = txn_pid
        return [B(recs, magic, codec, pid=pid, txn=outcome), B([], 2, 0, pid=pid, marker=outcome)]
    if kind == "idempotent":
        return [B(recs, magic, codec, pid=9000)]
    return [B(recs, magic, codec)]


@st.composite
def partitions(draw):
    n_segs = draw(st.integers(2, 4))
    segs = []
    pid = 100
    for _ in range(n_segs):
        seg = []
        for _ in range(draw(st.integers(1, 4))):
            pid += 1
            seg.extend(draw(batches(pid)))
        segs.append(seg)
    return Partition(segs)


SETTINGS = examples(40)


@SETTINGS
@given(part=partitions(), include_active=st.booleans())
def test_kept_records_match_the_model(tmp_path_factory, part, include_active):
    tmp = tmp_path_factory.mktemp("c")
    write(tmp / "t-0", part)
    args = ["compact", tmp / "t-0", "-o", tmp / "out", "--now-ms", NOW]
    if include_active:
        args.append("--include-active")
    code, text = run(*args)
    assert code == 0, text
    assert kept_records(tmp / "out") == model(part, include_active=include_active)
    # every output is valid: kseg verify and kafka-python (CRCs) agree
    code, text = run("verify", tmp / "out")
    assert code == 0, text
    for seg in (tmp / "out").glob("*.log"):
        kafka_python_records(seg.read_bytes())
    # compacting the compacted partition with the same clock changes nothing
    code, _ = run("compact", tmp / "out", "-o", tmp / "again", "--now-ms", NOW, *args[6:])
    assert code == 0
    for seg in (tmp / "out").iterdir():
        assert (tmp / "again" / seg.name).read_bytes() == seg.read_bytes(), seg.name
    # after the delete horizon, a later run removes the tombstones (the second step)
    code, _ = run("compact", tmp / "out", "-o", tmp / "later", "--now-ms", NOW + RETENTION + 1, *args[6:])
    assert code == 0
    assert kept_records(tmp / "later") == model(part, include_active=include_active, horizon_passed=True)


def test_two_step_tombstone_removal(tmp_path):
    part = Partition([[B([(b"k", b"1"), (b"k", None), (b"j", b"2")])], [B([(b"x", b"y")])]])
    write(tmp_path / "t-0", part)
    code, _ = run("compact", tmp_path / "t-0", "-o", tmp_path / "p1", "--now-ms", NOW)
    assert code == 0
    assert kept_records(tmp_path / "p1") == [(1, b"k", None), (2, b"j", b"2"), (3, b"x", b"y")]
    (b,) = Segment(tmp_path / "p1" / segment_file_name(0)).batches()
    assert b.delete_horizon_ms == NOW + RETENTION  # first step: the horizon is stamped
    assert b.offset == 0 and b.last_offset_delta == 2 and b.record_count == 2  # offsets kept, hole at 0
    for now, expected in ((NOW + RETENTION - 1, 3), (NOW + RETENTION, 2)):
        out = tmp_path / f"p{now}"
        assert run("compact", tmp_path / "p1", "-o", out, "--now-ms", now)[0] == 0
        assert len(kept_records(out)) == expected


def test_aborted_transactions_never_shadow_and_markers_go_in_two_steps(tmp_path):
    part = Partition([
        [B([(b"k", b"committed")]),
         B([(b"k", b"aborted")], pid=7, txn="abort"), B([], pid=7, marker="abort"),
         B([(b"z", b"1")]), B([(b"z", b"2")])],
        [B([(b"tail", b"t")])],
    ])
    write(tmp_path / "t-0", part)
    out = tmp_path / "out"
    code, text = run("compact", tmp_path / "t-0", "-o", out, "--now-ms", NOW, "--producer-id-expiration-ms", 1)
    assert code == 0, text
    assert kept_records(out) == [(0, b"k", b"committed"), (4, b"z", b"2"), (5, b"tail", b"t")]
    # the ABORT marker's data is gone, so the marker got its delete horizon; it goes after it
    assert markers(out) == [(2, True)]
    later = tmp_path / "later"
    assert run("compact", out, "-o", later, "--now-ms", NOW + RETENTION + 1, "--producer-id-expiration-ms", 1)[0] == 0
    assert markers(later) == []


def test_active_producer_keeps_an_empty_batch(tmp_path):
    part = Partition([[B([(b"k", b"1")], pid=5), B([(b"k", b"2")])], [B([(b"x", b"y")])]])
    write(tmp_path / "t-0", part)
    out = tmp_path / "out"
    assert run("compact", tmp_path / "t-0", "-o", out, "--now-ms", T0 + 1000)[0] == 0
    batches = list(Segment(out / segment_file_name(0)).batches())
    assert [(b.offset, b.record_count, b.producer_id) for b in batches] == [(0, 0, 5), (1, 1, -1)]
    assert batches[0].base_timestamp == -1 and batches[0].timestamp == T0  # writeEmptyHeader keeps maxTimestamp


def test_dry_run_and_summary(tmp_path):
    part = Partition([[B([(b"k", b"1"), (None, b"x"), (b"k", b"2")])], [B([(b"x", b"y")])]])
    write(tmp_path / "t-0", part)
    code, text = run("compact", tmp_path / "t-0", "--dry-run", "--now-ms", NOW, "--format", "json")
    assert code == 0
    summary = json.loads(text.strip().splitlines()[-1])
    assert summary["records_before"] == 4 and summary["records_after"] == 2 and summary["keyless_removed"] == 1
    assert not (tmp_path / "out").exists()


def test_a_full_key_map_cleans_in_rounds_as_the_broker(tmp_path):
    # 60 records over 20 keys in 6 batches; a map of 9 keys (240 bytes: 10 slots at load factor 0.9)
    # fills part-way, so each round cleans up to the last offset its map holds and the next goes on
    part = Partition([[B([(b"k%02d" % ((10 * j + i) % 20), b"v%d" % (10 * j + i)) for i in range(10)])
                       for j in range(6)], [B([(b"x", b"y")])]])
    write(tmp_path / "t-0", part)
    code, text = run("compact", tmp_path / "t-0", "-o", tmp_path / "small", "--now-ms", NOW, "--key-map-bytes", 240,
                     "--format", "json")
    assert code == 0, text
    stats = json.loads(text.splitlines()[-1])
    assert stats["rounds"] > 1 and stats["passes"] == 1
    code, text = run("compact", tmp_path / "t-0", "-o", tmp_path / "big", "--now-ms", NOW)
    assert code == 0, text
    assert kept_records(tmp_path / "small") == kept_records(tmp_path / "big")
    assert len(kept_records(tmp_path / "big")) == 20 + 1  # the latest of each key, and the active segment
    code, text = run("verify", tmp_path / "small")
    assert code == 0, text
    # one broker cleaning round only gets as far as its map
    code, text = run("compact", tmp_path / "t-0", "-o", tmp_path / "one", "--now-ms", NOW, "--key-map-bytes", 240,
                     "--single-pass", "--format", "json")
    assert code == 0, text
    assert json.loads(text.splitlines()[-1])["rounds"] == 1
    assert len(kept_records(tmp_path / "one")) > len(kept_records(tmp_path / "small"))


def test_a_key_map_without_room_for_a_key_is_refused(tmp_path):
    part = Partition([[B([(b"k", b"v")])], [B([(b"x", b"y")])]])
    write(tmp_path / "t-0", part)
    code, text = run("compact", tmp_path / "t-0", "-o", tmp_path / "o", "--now-ms", NOW, "--key-map-bytes", 24)
    assert code == 2 and "holds no key" in text and not (tmp_path / "o").exists()


from conftest import REALDATA as REAL  # noqa: E402


@pytest.mark.parametrize("folder", sorted(str(p) for p in REAL.rglob("__consumer_offsets-*") if p.is_dir()))
def test_real_consumer_offsets_compact_and_verify(tmp_path, folder):
    out = tmp_path / "out"
    code, text = run("compact", folder, "-o", out, "--include-active", "--now-ms", NOW)
    assert code == 0, text
    code, text = run("verify", out)
    assert code == 0, text
    assert set(os.listdir(out)) >= {p.name for p in Path(folder).glob("*.log")}


# --------------------------------------------------------------------------- groupSegmentsBySize


def write_small_segments(folder: Path, n_segments: int = 5, per: int = 6, keys: int = 4) -> list[Path]:
    """``n_segments`` segments of ``per`` one-record batches cycling over ``keys`` keys."""
    folder.mkdir(parents=True)
    paths = []
    offset = 0
    for s in range(n_segments):
        path = folder / segment_file_name(offset)
        data = b""
        for _ in range(per):
            rec = make_record(offset, 1_700_000_000_000 + offset, b"k%d" % (offset % keys), b"v%04d" % offset)
            data += build_v2_batch([rec], base_offset=offset, partition_leader_epoch=0)
            offset += 1
        path.write_bytes(data)
        os.utime(path, (1_700_000_000 + s, 1_700_000_000 + s))
        paths.append(path)
    return paths


def out_logs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".log")


def test_cleaned_segments_are_grouped_as_the_broker_groups_them(tmp_path):
    segs = write_small_segments(tmp_path / "t-0")
    code, err = run("compact", tmp_path / "t-0", "-o", tmp_path / "grouped", "--now-ms", "1800000000000")
    assert code == 0, err
    # the four cleaned segments become one, named after the first; the active one stays as it is
    assert out_logs(tmp_path / "grouped") == [segs[0].name, segs[4].name]
    grouped = tmp_path / "grouped" / segs[0].name
    assert os.stat(grouped).st_mtime == os.stat(segs[3]).st_mtime  # the last cleaned segment's time
    assert (tmp_path / "grouped" / segs[4].name).read_bytes() == segs[4].read_bytes()
    code, err = run("compact", tmp_path / "t-0", "-o", tmp_path / "kept", "--now-ms", "1800000000000",
                    "--keep-segments")
    assert code == 0, err
    assert out_logs(tmp_path / "kept") == [s.name for s in segs]
    assert kept_records(tmp_path / "grouped") == kept_records(tmp_path / "kept")
    assert b"".join((tmp_path / "kept" / s.name).read_bytes() for s in segs[:4]) == grouped.read_bytes()
    code, out = run("verify", tmp_path / "grouped")
    assert code == 0, out


def test_grouping_respects_segment_bytes_and_index_bytes(tmp_path):
    segs = write_small_segments(tmp_path / "t-0")
    size = segs[0].stat().st_size
    # room for two input segments per group: groups [0,1] [2,3], then the active segment
    code, err = run("compact", tmp_path / "t-0", "-o", tmp_path / "two", "--now-ms", "1800000000000",
                    "--segment-bytes", str(2 * size))
    assert code == 0, err
    assert out_logs(tmp_path / "two") == [segs[0].name, segs[2].name, segs[4].name]
    # index bytes: by Kafka's rules these small segments have an empty .index (no 4096 bytes between
    # entries) and a one-entry .timeindex (12 bytes, the entry a segment gets when it is rolled), so a
    # 12-byte limit keeps every segment apart, and 24 bytes pairs them
    code, err = run("compact", tmp_path / "t-0", "-o", tmp_path / "idx", "--now-ms", "1800000000000",
                    "--segment-index-bytes", "12")
    assert code == 0, err
    assert out_logs(tmp_path / "idx") == [s.name for s in segs]
    code, err = run("compact", tmp_path / "t-0", "-o", tmp_path / "idx2", "--now-ms", "1800000000000",
                    "--segment-index-bytes", "24")
    assert code == 0, err
    assert out_logs(tmp_path / "idx2") == [segs[0].name, segs[2].name, segs[4].name]


# (segments as (keys of one batch, an open transaction?) lists, options, segments cleaned, kept by reason):
# a segment kept as it was is counted under why, and the summary says what would clean it.
ONE = [[B([(b"k", b"1"), (b"k", b"2")])]]
THREE = [[B([(b"k", b"1")])], [B([(b"k", b"2")])], [B([(b"k", b"3")])]]
OPEN_TXN = [[B([(b"k", b"1")])], [B([(b"k", b"2")], pid=7, txn="commit")], [B([(b"k", b"3")])]]
KEPT_CASES = [
    ("only-segment-active", ONE, [], 0, {"active": 1}),
    ("only-segment-included", ONE, ["--include-active"], 1, {}),
    ("lag", THREE, ["--min-compaction-lag-ms", 10 ** 9], 0, {"lag": 2, "active": 1}),
    ("lag-and-included", THREE, ["--min-compaction-lag-ms", 10 ** 9, "--include-active"], 0, {"lag": 3}),
    ("open-transaction", OPEN_TXN, [], 1, {"unstable": 1, "active": 1}),
    ("all-cleaned", THREE, ["--include-active"], 3, {}),
]


@pytest.mark.parametrize("name,segments,args,cleaned,kept", KEPT_CASES, ids=[c[0] for c in KEPT_CASES])
def test_kept_segments_say_why(tmp_path, name, segments, args, cleaned, kept):
    from kseg.ops.compact import KEPT_WHY

    write(tmp_path / "t-0", Partition([list(s) for s in segments]))
    code, text = run("compact", tmp_path / "t-0", "--dry-run", "--now-ms", T0 + 1000, "--format", "json", *args)
    assert code == 0
    summary = json.loads(text.strip().splitlines()[-1])
    assert summary["segments_cleaned"] == cleaned
    assert {k: summary[f"kept_{k}"] for k in KEPT_WHY if summary[f"kept_{k}"]} == kept
    assert summary["segments_kept"] == sum(kept.values())
    code, text = run("compact", tmp_path / "t-0", "--dry-run", "--now-ms", T0 + 1000, *args)
    for k, n in kept.items():
        assert f"{n} {KEPT_WHY[k]}" in text
    if not kept:
        assert "kept as they were 0;" in text
