"""kseg stats: counts per topic, partition and segment; the HyperLogLog; problems found."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES_LOGDIR, REALDATA, examples, v2_records
from kseg.cli.main import main
from kseg.log.encode import build_legacy_wrapper, build_v2_batch
from kseg.log.records import batch_records
from kseg.log.segment import Segment, segment_file_name
from kseg.model import make_record
from kseg.ops.stats import HyperLogLog, Timeline, stats_paths

T0 = 1_700_000_000_000


@pytest.mark.parametrize("n", [0, 1, 10, 1000, 20000, 200000])
def test_hyperloglog_error_bound(n):
    h = HyperLogLog()
    for i in range(n):
        h.add(b"key-%d" % i)
        h.add(b"key-%d" % (i // 2))  # duplicates do not count
    est = h.count()
    assert abs(est - n) <= max(1, 0.03 * n), (n, est)  # 1.04/sqrt(16384) = 0.8% standard error


def test_hyperloglog_merge():
    a, b, both = HyperLogLog(), HyperLogLog(), HyperLogLog()
    for i in range(30000):
        (a if i % 2 else b).add(b"%d" % i)
        both.add(b"%d" % i)
    a.merge(b)
    assert a.registers == both.registers


def test_timeline_bounded_and_merges():
    t = Timeline()
    for i in range(100000):
        t.add(T0 + i * 60_000, 1, 10)
    assert len(t.buckets) <= 512 and sum(p["records"] for p in t.points()) == 100000
    u = Timeline()
    u.add(T0, 5, 5)
    u.merge(t)
    assert u.width == t.width and sum(p["records"] for p in u.points()) == 100005


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def build(root):
    """Two partitions of topic t: keys, tombstones, keyless records, gzip and none, a
    committed and an aborted transaction and one left open; a v1 gzip wrapper in u-0."""
    p0 = root / "t-0"
    p0.mkdir(parents=True)
    data = b""
    off = 0
    for n in range(20):
        recs = [make_record(off + i, T0 + (off + i) * 1000, f"k{(off + i) % 50}".encode() if i % 10 else None,
                            None if i % 25 == 7 else b"x" * 100) for i in range(50)]
        data += build_v2_batch(recs, codec=1 if n % 2 else 0)
        off += 50
    (p0 / segment_file_name(0)).write_bytes(data)
    data = b""
    for pid, kind in ((5, 1), (6, 0), (7, None)):
        data += build_v2_batch([make_record(off, T0 + off * 1000, b"tk", b"v")], transactional=True,
                               producer_id=pid, producer_epoch=0, base_sequence=0)
        off += 1
        if kind is not None:
            marker = make_record(off, T0 + off * 1000, struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 1))
            data += build_v2_batch([marker], transactional=True, control=True, producer_id=pid, producer_epoch=0)
            off += 1
    (p0 / segment_file_name(1000)).write_bytes(data)
    p1 = root / "t-1"
    p1.mkdir()
    (p1 / segment_file_name(0)).write_bytes(build_v2_batch([make_record(0, T0, b"a", b"b")]) + b"\x00" * 63 + b"\x01")
    u = root / "u-0"
    u.mkdir()
    (u / segment_file_name(0)).write_bytes(build_legacy_wrapper(
        [make_record(i, T0 + i, b"k%d" % i, b"y" * 200, magic=1) for i in range(10)], magic=1, codec=1))
    (root / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 500\n")
    return root


def test_counts(tmp_path):
    root = build(tmp_path / "logs")
    res = run("stats", root, "--format", "json")
    assert res.exit_code == 1  # t-1 ends in damage: zeros but its last byte (zeros alone are preallocated space)
    doc = json.loads(res.output)
    t, u = doc["topics"]
    p0, p1 = t["partitions"]
    # Exact figures, from a direct walk.
    records = [r for log in sorted((root / "t-0").glob("*.log")) for b in Segment(log).batches()
               for r in batch_records(b)]
    assert p0["records"] == len(records) == 1000 + 5
    assert p0["keyless"] == 100  # every 10th data record (control records are not counted as data)
    assert p0["tombstones"] == sum(1 for r in records if r.key is not None and r.value is None)
    assert p0["distinct_keys_estimate"] == 46  # k1..k49 but the multiples of 10, and "tk" (exact when small)
    assert p0["transactions"] == {"committed": 1, "aborted": 1, "open": 1}
    assert p0["producers"] == 3
    assert set(p0["bytes_by_codec"]) == {"none", "gzip"} and p0["compression_ratio"] > 1
    assert p0["min_timestamp"] == T0 and p0["max_timestamp"] == T0 + 1004 * 1000
    assert sum(p0["batch_size_histogram"].values()) == p0["batches"] == 25
    assert len(p0["segments"]) == 2 and p0["segments"][1]["first_offset"] == 1000
    # Cleaner checkpoint at 500: the active segment is left out; half the first one is dirty.
    assert p0["first_dirty_offset"] == 500 and 0.4 < p0["dirty_ratio"] < 0.6
    assert p0["compaction"]["records_removable_estimate"] > 800
    assert p1["problem_count"] == 1 and "size field too small" in p1["problems"][0]
    assert u["records"] == 10 and u["bytes_by_magic"] == {"1": u["bytes"]} and u["compression_ratio"] > 5
    assert doc["records"] == 1005 + 1 + 10
    text = run("stats", root, "--segments").output
    rows = table_rows(text)
    t0 = rows["t-0"]
    assert t0["records"] == "1005" and 0.4 < float(t0["dirty"]) < 0.6 and t0["codecs"].startswith(("none", "gzip"))
    assert rows["t-1"]["records"] == "1" and rows["total (3 partitions)"]["records"] == "1016"
    assert "problem: " in text and "size field too small" in text
    assert "00000000000000001000.log" in text  # the segments table


def table_rows(text: str) -> dict[str, dict[str, str]]:
    """The first table of a text output (tabulate's "simple" format), as {first cell: {header: cell}}:
    the columns are where the dashes under the headers are."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    spans, col = [], 0
    for dashes in lines[rule].split("  "):
        if dashes:
            spans.append((col, col + len(dashes)))
        col += len(dashes) + 2
    cut = lambda line: [line[a:b].strip() for a, b in spans]  # noqa: E731
    head = cut(lines[rule - 1])
    rows = {}
    for line in lines[rule + 1:]:
        if not line.strip():
            break
        cells = cut(line)
        rows[cells[0]] = dict(zip(head, cells))
    return rows


def test_fixtures_and_real_data():
    res = run("stats", FIXTURES_LOGDIR, "--format", "json")
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert doc["records"] == 402 and len(doc["topics"]) == 22
    root = REALDATA / "Experts-in-team-innovation" / "kafka" / "data"
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    res = run("stats", root, "--format", "json")
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert {t["topic"] for t in doc["topics"]} >= {"__consumer_offsets", "sensor-data-topic"}




def test_c_walk_equals_python_path(tmp_path, monkeypatch):
    from kseg.ops import stats as stats_mod
    from test_tools_find import keyed_log_dir

    if stats_mod.SKETCH is None:
        pytest.skip("the C sketch walk is not built (or KSEG_PURE_PYTHON is set)")
    root = build(tmp_path / "logs")
    keyed_log_dir(root, per_partition_batches=10)
    # The fast side counts runs of v2 batches in C (``stats_v2_run``: CRCs, decompression, the
    # walk, the sketch) and the rest with the C walk; the slow side every batch in Python.
    real = REALDATA / "Experts-in-team-innovation" / "kafka" / "data"
    for path in (root, FIXTURES_LOGDIR, *([real] if real.is_dir() else [])):
        fast = stats_paths([path])
        monkeypatch.setattr(stats_mod, "SKETCH", None)
        slow = stats_paths([path])
        monkeypatch.undo()
        assert fast.acc.as_json() == slow.acc.as_json()
        assert fast.acc.keys.registers == slow.acc.keys.registers


def test_c_xxh64_is_xxhash():
    from xxhash import xxh64_intdigest

    try:
        from kseg.log import _sketch
    except ImportError:
        pytest.skip("the C sketch walk is not built")
    for n in range(0, 200):
        data = bytes((i * 131 + n) & 0xFF for i in range(n))
        assert _sketch.xxh64(data) == xxh64_intdigest(data)


def test_c_walk_rejects_malformed_records():
    try:
        from kseg.log import _sketch
    except ImportError:
        pytest.skip("the C sketch walk is not built")
    regs = bytearray(1 << 14)
    with pytest.raises(ValueError):
        _sketch.v2_stats(b"\x10\x00", 1, regs, 14, 0)
    with pytest.raises(ValueError):
        _sketch.v2_stats(b"", 1, regs, 14, 0)
    assert _sketch.v2_stats(b"", 0, regs, 14, 0) == (0, 0, None)


def test_sketches_are_dropped_once_merged(tmp_path):
    """Memory stays bounded: only the topics and the total keep a 16 KiB HyperLogLog."""
    from kseg.ops.stats import FrozenCount

    rep = stats_paths([build(tmp_path / "logs")])
    parts = [p for t in rep.topics for p in t.partitions]
    assert all(isinstance(p.acc.keys, FrozenCount) for p in parts)
    assert all(isinstance(s.acc.keys, FrozenCount) and not s.acc.timeline.buckets for p in parts for s in p.segments)
    assert parts[0].acc.as_json()["distinct_keys_estimate"] == 46


def _same_both_ways(log_bytes: bytes) -> None:
    """A segment of these bytes counts the same with the C walks (runs, sketch) as in Python."""
    import tempfile

    from kseg.ops import stats as stats_mod

    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / segment_file_name(0)
        log.write_bytes(log_bytes)
        fast = stats_mod.stats_partition([log], stats_mod.StatsOptions())
        saved, stats_mod.SKETCH = stats_mod.SKETCH, None
        try:
            slow = stats_mod.stats_partition([log], stats_mod.StatsOptions())
        finally:
            stats_mod.SKETCH = saved
        assert fast.acc.as_json() == slow.acc.as_json()


@given(st.lists(v2_records(max_size=12), min_size=1, max_size=4), st.sampled_from([0, 1, 2, 3, 4]))
@examples(60)
def test_c_walk_equals_python_path_on_any_records(batches, codec):
    from kseg.ops import stats as stats_mod

    if stats_mod.SKETCH is None:
        pytest.skip("the C sketch walk is not built (or KSEG_PURE_PYTHON is set)")
    _same_both_ways(b"".join(build_v2_batch(recs, codec=codec) for recs in batches))


@given(st.lists(st.tuples(v2_records(max_size=8), st.sampled_from([0, 1, 3, 4]), st.booleans(), st.booleans()),
                min_size=2, max_size=5),
       st.integers(0, 10_000), st.integers(1, 255), st.booleans())
@examples(300)
def test_c_run_counts_damage_as_the_python_path(batches, where, xor, fix_crc):
    """A byte changed anywhere (the CRC then wrong, or made right again so that only the records
    are wrong), transactional and LogAppendTime batches among the rest: the C run stops where
    the per-batch path must say something, and the figures and problems are the Python path's."""
    from kseg.checksums import crc32c
    from kseg.facts.record_batch_v2 import CRC_START
    from kseg.ops import stats as stats_mod

    if stats_mod.SKETCH is None:
        pytest.skip("the C sketch walk is not built (or KSEG_PURE_PYTHON is set)")
    parts = [bytearray(build_v2_batch(recs, codec=codec, producer_id=7 if txn else -1, transactional=txn,
                                      timestamp_type=int(lat), max_timestamp=T0 if lat else None))
             for recs, codec, txn, lat in batches]
    hit = parts[where % len(parts)]
    at = CRC_START + where % (len(hit) - CRC_START)
    hit[at] ^= xor
    if fix_crc:
        struct.pack_into(">I", hit, CRC_START - 4, crc32c(bytes(hit[CRC_START:])))
    _same_both_ways(b"".join(parts))


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_c_run_takes_every_sound_batch(tmp_path, codec):
    """Sound batches of every built-in codec are counted by the run, keys into the same registers
    as HyperLogLog.add_many; a control batch ends it (its marker is read the long way)."""
    from kseg.log.checks import stats_v2_run
    from kseg.log.fast import c_twin
    from test_answers import marker

    if c_twin("stats_v2_run") is None:
        pytest.skip("the C accelerator is not built (or KSEG_PURE_PYTHON is set)")
    recs = [[make_record(o, T0 + o, f"k{o % 7}".encode() if o % 3 else None, b"v" * o) for o in range(i, i + 5)]
            for i in range(0, 20, 5)]
    log = tmp_path / segment_file_name(0)
    log.write_bytes(b"".join(build_v2_batch(r, codec=codec) for r in recs)
                    + marker(20, 3, commit=True))
    entries = [b for chunk in Segment(log).batch_lists() for b in chunk]
    hll = HyperLogLog()
    run = stats_v2_run(entries, 0, hll.registers, hll.p)
    assert run.stop == 4 and run.records == 20
    assert run.keyless == sum(r.key is None for rs in recs for r in rs)
    expected = HyperLogLog()
    expected.add_many([r.key for rs in recs for r in rs if r.key is not None])
    assert hll.registers == expected.registers
    assert stats_v2_run(entries, 4, hll.registers, hll.p).stop == 4


@pytest.mark.parametrize("stamps", [[-1, 7], [7, -1], [-5, -1], [3, -1, 2]])
def test_negative_record_timestamps_are_left_out_of_the_smallest(stamps):
    """A record whose timestamp is below 0 (a producer's -1, or a flipped delta) is no time: the
    smallest timestamp is that of the others, in a sound batch (the C run), in one the run
    leaves to the sketch walk (a CRC that does not match) and in Python alike."""
    from kseg.ops import stats as stats_mod

    if stats_mod.SKETCH is None:
        pytest.skip("the C sketch walk is not built (or KSEG_PURE_PYTHON is set)")
    recs = [make_record(offset=i, timestamp=t, key=b"k", value=b"v") for i, t in enumerate(stamps)]
    sound = build_v2_batch(recs)
    damaged = bytearray(sound)
    damaged[-2] ^= 1  # the last value byte (before its header count): the CRC no longer matches, the records read
    want = min((t for t in stamps if t >= 0), default=None)
    for data in (sound, bytes(damaged)):
        _same_both_ways(data)
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            log = Path(d) / segment_file_name(0)
            log.write_bytes(data)
            assert stats_mod.stats_partition([log], stats_mod.StatsOptions()).acc.min_timestamp == want
