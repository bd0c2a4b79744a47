"""kseg on Spark: the data source, the writer and the distributed commands, against the
single-machine commands on the same generated log directory.

One local Spark session (local[2], loopback) for the whole module; skipped when PySpark
(or Java) is not there. Every magic x codec, several topics, partitions and segments,
plus the fixtures' special cases (transactions, control batches, LogAppendTime,
compacted holes) and a log directory with corruption of several kinds.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from children import restore_signals

pyspark = pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from click.testing import CliRunner  # noqa: E402

from kseg.cli.main import main  # noqa: E402
from kseg.log.encode import build_v2_batch  # noqa: E402
from kseg.companions.build import build_indexes  # noqa: E402
from kseg.model import make_record  # noqa: E402
from kseg.log.segment import Segment, segment_file_name  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from builders import CASES, entries, kafka_python_records, write_partition  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "logdir"
NOW = "1800000000000"



# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for a local Spark")
    from kseg.spark import get_session

    session = get_session("local[2]", {"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    """Every magic x codec (a topic each; partition 0: 2 segments, partition 1: 3 smaller ones),
    plus the fixtures' log directory (transactions, controls, LogAppendTime, compaction)."""
    root = tmp_path_factory.mktemp("spark") / "logdir"
    for magic, codec in CASES:
        write_partition(root / f"m{magic}-{codec}-0", magic, codec, segments=2)
        write_partition(root / f"m{magic}-{codec}-1", magic, codec, segments=3, n_batches=2, per=5)
    if FIXTURES.is_dir():
        for part in FIXTURES.iterdir():
            if part.is_dir():
                shutil.copytree(part, root / part.name)
    return root


@pytest.fixture(scope="module")
def logdir_rows(spark, logdir) -> list:
    """Every record row of ``logdir`` read through format("kseg"), collected once for the module."""
    return spark.read.format("kseg").load(str(logdir)).collect()


def cli(*args, catch: bool = False):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=catch)
    return r


def jsonl(*args) -> list[dict]:
    r = cli("dump", "--format", "jsonl", "--payload", "base64", *args)
    assert r.exit_code == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def b64(v: bytes | None) -> str | None:
    return None if v is None else base64.b64encode(v).decode()


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- the data source


RECORD_FIELDS = ("topic", "partition", "segment", "offset", "timestamp", "timestamp_type", "key", "value",
                 "headers", "magic", "codec", "batch_position", "partition_leader_epoch", "producer_id",
                 "producer_epoch", "is_transactional", "is_control")


def expected_records(path: Path) -> list[tuple]:
    """The records of `kseg dump --records --format jsonl`, as rows of the record schema."""
    out = []
    batch = None
    for ev in jsonl("--records", path):
        if ev["type"] == "batch":
            batch = ev
            continue
        if ev["type"] != "record":
            continue
        file = Path(batch["file"])
        topic, _, part = file.parent.name.rpartition("-")
        v2 = batch["magic"] >= 2
        out.append((
            topic, int(part), batch["file"], ev["offset"], ev["timestamp"], ev["timestamp_type"], ev["key"],
            ev["value"], [(h["key"], h["value"]) for h in ev["headers"]], batch["magic"], batch["codec"],
            ev["batch_position"], batch.get("partition_leader_epoch"), batch.get("producer_id"),
            batch.get("producer_epoch"), batch["is_transactional"] if v2 else None,
            batch["is_control"] if v2 else None,
        ))
    return out


def as_expected(row) -> tuple:
    d = row.asDict(recursive=True)
    d["key"], d["value"] = b64(d["key"]), b64(d["value"])
    d["headers"] = [(h["key"], b64(h["value"])) for h in d["headers"]]
    return tuple(d[f] for f in RECORD_FIELDS)


def test_records_are_exactly_dumps_records(logdir, logdir_rows):
    got = [as_expected(r) for r in logdir_rows]
    want = expected_records(logdir)
    assert len(got) == len(want) > 1000
    assert got == want  # the same records, in the same order
    magics = {(r[9], r[10]) for r in got}
    assert {(m, c) for m, c in CASES} <= magics
    assert any(r[16] for r in got) and any(r[15] for r in got)  # control and transactional records


def test_sequence_and_tuple_path(spark, logdir):
    """The Arrow path and the Python-tuple path give the same rows; sequences follow kafka-dump-log."""
    path = str(logdir / "v2-idempotent-0")
    arrow = spark.read.format("kseg").load(path).collect()
    tuples = spark.read.format("kseg").option("arrow", "false").load(path).collect()
    assert arrow == tuples and arrow
    r = cli("dump", "-r", "--format", "kafka", path)
    seqs = [int(line.split(" sequence: ")[1].split()[0]) for line in r.stdout.splitlines() if " sequence: " in line]
    assert [row.sequence for row in arrow] == seqs


def test_columns_option_projects(spark, logdir):
    path = str(logdir / "v2-idempotent-0")
    full = spark.read.format("kseg").load(path)
    cols = ["value", "offset", "headers", "sequence", "topic"]
    part = spark.read.format("kseg").option("columns", ",".join(cols)).load(path)
    assert part.columns == [c for c in full.columns if c in cols]
    assert part.collect() == full.select(*part.columns).collect()
    tuples = spark.read.format("kseg").option("columns", ",".join(cols)).option("arrow", "false").load(path)
    assert tuples.collect() == part.collect()
    bf = spark.read.format("kseg").option("level", "batches").option("columns", "crc_valid,position").load(path)
    assert bf.columns == ["position", "crc_valid"] and all(r.crc_valid for r in bf.collect())


def test_batch_level_is_dumps_batch_lines(spark, logdir):
    bf = spark.read.format("kseg").option("level", "batches").load(str(logdir))
    got = [r.asDict() for r in bf.collect()]
    want = [ev for ev in jsonl(logdir) if ev["type"] == "batch"]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g["segment"] == w["file"]
        for k, v in w.items():
            if k in ("type", "file"):
                continue
            field = "position" if k == "position" else k
            assert g[field] == v, (k, g, w)


def test_pushed_down_filters_are_exact(spark, logdir, logdir_rows):
    df = spark.read.format("kseg").load(str(logdir))
    rows = [as_expected(r) for r in logdir_rows]
    cases = [
        ("offset >= 7 AND offset < 19", lambda r: 7 <= r[3] < 19),
        ("offset = 12", lambda r: r[3] == 12),
        ("offset IN (3, 17, 24)", lambda r: r[3] in (3, 17, 24)),
        ("timestamp > 1700000000150", lambda r: r[4] > 1700000000150),
        ("timestamp <= 1700000000100 AND timestamp >= 1700000000050", lambda r: 1700000000050 <= r[4] <= 1700000000100),
        ("topic IN ('m2-zstd', 'v2-txn') AND partition = 0", lambda r: r[0] in ('m2-zstd', 'v2-txn') and r[1] == 0),
        ("partition > 0 AND offset > 20", lambda r: r[1] > 0 and r[3] > 20),
        ("topic = 'm1-gzip' AND offset <= 13 AND timestamp >= 1700000000040", lambda r: r[0] == "m1-gzip" and r[3] <= 13 and r[4] >= 1700000000040),
    ]
    for where, keep in cases:
        got = [as_expected(r) for r in df.where(where).collect()]
        assert got == [r for r in rows if keep(r)], where
    # The same conditions given as reader options.
    opt = (spark.read.format("kseg").option("fromOffset", 7).option("toOffset", 18).option("topics", "m0-gzip,m2-none")
           .load(str(logdir)))
    assert [as_expected(r) for r in opt.collect()] == [r for r in rows if 7 <= r[3] <= 18 and r[0] in ("m0-gzip", "m2-none")]


@pytest.fixture(scope="module")
def big_segment(tmp_path_factory) -> Path:
    """One partition: a 3-segment log whose middle segment has 300 batches and an offset index
    with an entry every 512 bytes, for splits and index seeks."""
    folder = tmp_path_factory.mktemp("big") / "big-0"
    folder.mkdir()
    off = 0
    for n_batches in (5, 300, 7):
        base = off
        raw = bytearray()
        for i in range(n_batches):
            recs = [make_record(off + j, 1_700_000_000_000 + off + j, b"k%d" % ((off + j) % 13), b"v" * (20 + j),
                                [("h", b"%d" % j)] if j % 2 else []) for j in range(4)]
            raw += build_v2_batch(recs, codec=(0, 1, 4)[i % 3], partition_leader_epoch=1)
            off += 4
        path = folder / segment_file_name(base)
        path.write_bytes(bytes(raw))
        batches = [b._replace(raw=memoryview(b"")) for b in Segment(path).batches()]
        index, timeindex = build_indexes(batches, base, 512)
        path.with_suffix(".index").write_bytes(index)
        path.with_suffix(".timeindex").write_bytes(timeindex)
    return folder


def test_splits_and_index_seeks(spark, big_segment, tmp_path):
    path = str(big_segment)
    whole = spark.read.format("kseg").load(path)
    want = [as_expected(r) for r in whole.collect()]
    assert want == expected_records(big_segment)
    split = spark.read.format("kseg").option("splitBytes", 4096).option("minPartitionBytes", 0).load(path)
    assert split.rdd.getNumPartitions() > 5  # the big segment is read in several tasks
    assert [as_expected(r) for r in split.collect()] == want
    # The .log files alone: split where the entries' lengths lead, the same rows
    alone = tmp_path / big_segment.name
    alone.mkdir()
    for log in big_segment.glob("*.log"):
        (alone / log.name).write_bytes(log.read_bytes())
    by_lengths = spark.read.format("kseg").option("splitBytes", 4096).option("minPartitionBytes", 0).load(str(alone))
    assert by_lengths.rdd.getNumPartitions() > 5
    no_path = [w[:2] + w[3:] for w in want]  # all but the segment's path
    assert [as_expected(r)[:2] + as_expected(r)[3:] for r in by_lengths.collect()] == no_path
    for lo, hi in ((0, 3), (101, 507), (555, 1100), (1200, 1300), (530, 530)):
        got = split.where(f"offset >= {lo} AND offset <= {hi}").collect()
        assert [as_expected(r) for r in got] == [r for r in want if lo <= r[3] <= hi], (lo, hi)
    from kseg.ops.slices import Conditions, plan_slices, seek_range

    seg = str(big_segment / segment_file_name(20))
    cond = Conditions(offset_lo=600, offset_hi=640)
    [s] = plan_slices([seg], 0)
    start, end = seek_range(s, cond)
    assert 0 < start < end < os.path.getsize(seg)  # the index narrowed the read


def test_round_trip_through_a_dataframe(spark, logdir, logdir_rows, tmp_path):
    """Read, write back as v2/zstd segments, read with kafka-python: the same records."""
    df = spark.read.format("kseg").load(str(logdir))
    out = tmp_path / "out"
    (df.write.format("kseg").mode("append").option("magic", 2).option("codec", "zstd").option("segmentBytes", 600)
     .save(str(out)))
    parts = sorted(p.name for p in out.iterdir())
    assert parts == sorted(p.name for p in logdir.iterdir())
    assert cli("verify", out).exit_code == 0
    by_tp: dict[str, list] = {}
    for r in logdir_rows:
        by_tp.setdefault(f"{r.topic}-{r.partition}", []).append(
            (r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers)))
    rolled = 0
    for name, want in by_tp.items():
        segs = sorted((out / name).glob("*.log"))
        rolled += len(segs) > 1
        got = []
        for seg in segs:
            assert seg.with_suffix(".index").exists() and seg.with_suffix(".timeindex").exists()
            got.extend(kafka_python_records(seg.read_bytes()))
        assert got == want, name
        for seg in segs:  # every segment is named after its first offset, and is zstd v2
            first = next(Segment(seg).batches())
            assert first.magic == 2 and int(seg.name.split(".")[0]) == first.offset
    assert rolled > 5  # segment.bytes rolled segments


def test_write_legacy_format_and_ordering(spark, logdir, logdir_rows, tmp_path):
    from kseg.spark import write_log_dir

    df = spark.read.format("kseg").load(str(logdir)).where("topic LIKE 'm1-%' OR topic LIKE 'm0-%'")
    shuffled = df.repartition(3, "key")  # rows of a partition spread over tasks, out of order
    out = tmp_path / "v1"
    with pytest.raises(Exception, match="out of offset order|overlapping offsets"):
        shuffled.write.format("kseg").mode("append").option("magic", 1).save(str(out))
    assert not out.exists() and not list(tmp_path.glob(".v1.kseg-write-*"))
    write_log_dir(shuffled, str(out), magic=1, codec="gzip")
    legacy_rows: dict[str, list] = {}  # the rows df holds, by topic-partition, in offset order
    for r in sorted(logdir_rows, key=lambda r: r.offset):
        if r.topic.startswith(("m1-", "m0-")):
            legacy_rows.setdefault(f"{r.topic}-{r.partition}", []).append((r.offset, r.timestamp, r.key, r.value))
    assert sorted(p.name for p in out.iterdir()) == sorted(legacy_rows)
    for part in sorted(out.iterdir()):
        want = legacy_rows[part.name]
        got = [(o, t, k, v) for seg in sorted(part.glob("*.log")) for o, t, k, v, _ in
               kafka_python_records(seg.read_bytes())]
        assert got == want, part.name
        assert all(b.magic == 1 and b.codec_name == "gzip" for seg in part.glob("*.log")
                   for b in Segment(seg).batches())
    # mode("overwrite") replaces, mode("append") refuses an existing topic-partition
    df.where("topic = 'm1-none'").write.format("kseg").mode("overwrite").save(str(out))
    assert sorted(p.name for p in out.iterdir()) == ["m1-none-0", "m1-none-1"]
    with pytest.raises(Exception, match="exist already"):
        df.where("topic = 'm1-none'").write.format("kseg").mode("append").save(str(out))


# --------------------------------------------------------------------------- kseg spark verify


def _v2_segment(folder: Path, base: int, offsets: list[int]) -> Path:
    raw = b"".join(build_v2_batch([make_record(o, 1_700_000_000_000 + o, b"k", b"v")]) for o in offsets)
    path = folder / segment_file_name(base)
    path.write_bytes(raw)
    return path


@pytest.fixture(scope="module")
def bad_logdir(tmp_path_factory, logdir) -> Path:
    """Problems of every kind, in several partitions: a flipped byte (CRC), a truncated tail,
    offsets going backwards across segments, a gap across segments, many gaps (the note cap),
    a legacy wrapper first in a segment (quick mode), a corrupt compressed payload."""
    root = tmp_path_factory.mktemp("bad") / "logdir"
    for name in ("m2-gzip-0", "m1-snappy-1", "m0-lz4-0", "m2-none-1", "v2-txn-0", "compacted-v1-gzip-0"):
        shutil.copytree(logdir / name, root / name)
    seg = root / "m2-gzip-0" / segment_file_name(12)
    data = bytearray(seg.read_bytes())
    data[250] ^= 0xFF  # inside the second batch's compressed payload
    seg.write_bytes(bytes(data))
    seg = root / "m1-snappy-1" / segment_file_name(10)
    seg.write_bytes(seg.read_bytes()[:-7])  # a truncated tail
    back = root / "back-0"
    back.mkdir()
    _v2_segment(back, 0, [0, 1, 2, 3, 4, 5])
    _v2_segment(back, 6, [3, 4, 9, 7])  # offsets go backwards across the segment boundary
    _v2_segment(back, 10, [10, 11])
    gap = root / "gap-0"
    gap.mkdir()
    _v2_segment(gap, 0, [0, 1, 2])
    _v2_segment(gap, 10, [10, 11, 30])  # a gap across segments (a note), and one inside
    many = root / "many-0"
    many.mkdir()
    _v2_segment(many, 0, [0, 1, 2, 3])
    _v2_segment(many, 4, [4] + [10 * i for i in range(1, 30)])  # 29 gaps: past the cap of 20 notes
    legacy = root / "legacy-0"
    legacy.mkdir()
    (legacy / segment_file_name(0)).write_bytes(entries(1, "gzip", 0))
    (legacy / segment_file_name(12)).write_bytes(entries(1, "gzip", 11))  # overlaps by one
    (legacy / segment_file_name(24)).write_bytes(entries(1, "gzip", 30))  # a gap
    return root


@pytest.mark.parametrize("extra", [(), ("--quick",), ("--format", "json"), ("-v", "--no-index")])
def test_verify_same_report_on_corrupt_data(spark, bad_logdir, extra):
    plain = cli("verify", *extra, bad_logdir)
    dist = cli("spark", "verify", *extra, bad_logdir)
    assert plain.exit_code == 1 and dist.exit_code == 1
    assert dist.stdout == plain.stdout
    assert "error" in plain.stdout


def test_verify_same_report_on_clean_data(spark, logdir, tmp_path):
    plain = cli("verify", "-v", logdir)
    report = tmp_path / "report.parquet"
    dist = cli("spark", "verify", "-v", "--report", report, logdir)
    assert plain.exit_code == dist.exit_code == 0
    assert dist.stdout == plain.stdout
    import pyarrow.parquet as pq

    table = pq.read_table(report)
    assert table.num_rows == len(json.loads(cli("verify", "--format", "json", logdir).stdout)["files"])
    assert set(table.column_names) >= {"file", "ok", "batches", "records", "problems", "seconds"}
    rep_json = tmp_path / "report.json"
    assert cli("spark", "verify", "--report", rep_json, logdir / "v2-txn-0").exit_code == 0
    assert json.loads(rep_json.read_text())["ok"] is True
    # Files named one by one, and unusable input: exit 2 with the same message.
    segs = sorted((logdir / "m2-lz4-1").glob("*.log"))
    assert cli("spark", "verify", *segs).stdout == cli("verify", *segs).stdout
    missing = cli("spark", "verify", logdir / "nope")
    assert missing.exit_code == 2 and missing.stderr == cli("verify", logdir / "nope").stderr


def test_verify_newest_segment_being_written(spark, tmp_path):
    """A partial batch at the end of a folder's newest segment is what a live broker leaves:
    a note on Spark as in the plain command; the same file named alone is a problem."""
    part = tmp_path / "live-0"
    part.mkdir()
    _v2_segment(part, 0, [0, 1, 2])
    newest = _v2_segment(part, 3, [3, 4])
    newest.write_bytes(newest.read_bytes() + build_v2_batch([make_record(5, 1_700_000_000_005, b"k", b"v")])[:30])
    for target, code in ((part, 0), (newest, 1)):
        plain = cli("verify", "-v", target)
        dist = cli("spark", "verify", "-v", target)
        assert (plain.exit_code, dist.exit_code) == (code, code), plain.stdout
        assert dist.stdout == plain.stdout
    assert "newest segment" in cli("spark", "verify", "-v", part).stdout


def test_verify_cuts_a_large_segment_into_tasks(spark, tmp_path, monkeypatch):
    """One partition of one large segment: Spark runs its slices as tasks (the plan cuts it for
    the session's parallelism) and prints the plain command's report; --report has one row
    per file, the slices' seconds added."""
    from kseg.ops import cuts, verify as verify_op
    from test_slices import _damage_cases, _segment

    monkeypatch.setattr(cuts, "MIN_SLICE_BYTES", 1)
    for name in ("gaps past the note cap", "a flipped byte in a size field", "a cut tail"):
        folder = tmp_path / name.replace(" ", "-") / "t-0"
        data, indexed = _damage_cases()[name]
        _segment(folder, 0, data, indexed)
        planned = verify_op.plan([str(folder)], verify_op.VerifyOptions(workers=2))
        assert max(u.parts for u in planned) > 1, name
        report = tmp_path / f"{name}.json"
        plain = cli("verify", "-v", folder)
        dist = cli("spark", "verify", "-v", "--report", report, folder)
        assert (dist.exit_code, dist.stdout) == (plain.exit_code, plain.stdout), name
        doc = json.loads(report.read_text())
        log = [f for f in doc["files"] if f["file"].endswith(".log")]
        assert len(log) == 1 and log[0]["seconds"] > 0, name


# --------------------------------------------------------------------------- kseg spark dump


@pytest.mark.parametrize("args", [
    ("-r", "--format", "jsonl", "--payload", "base64"),
    ("-r", "--format", "kafka", "--payload", "utf8"),
    ("-r",),
    ("--from-offset", "5", "--to-offset", "17", "-r", "--format", "jsonl"),
    # --redact: the same key, the same tokens (every task hashes with the driver's key)
    ("-r", "--format", "jsonl", "--redact", "keys,values,headers", "--redact-key", "case-1"),
    ("-r", "--redact", "values", "--redact-key", "case-1"),
    ("-r", "--format", "kafka", "--payload", "utf8", "--decode", "auto", "--redact", "keys,secrets", "--redact-key",
     "case-1"),
    # the plain command's record lines, shaped: the same options, the same writers
    ("--format", "text", "--fields", "offset,key,headers", "--key-decoder", "hex"),
    ("-r", "--no-truncate", "--max-bytes", "700"),
    ("-r", "--format", "jsonl", "--decode", "auto", "--show-secrets"),
    ("--format", "kafka", "--verify-index-only", "--kafka-version", "3.6"),
])
def test_dump_same_output(spark, logdir, args):
    plain = cli("dump", *args, logdir)
    dist = cli("spark", "dump", *args, logdir)
    assert plain.exit_code == dist.exit_code == 0
    assert dist.stdout == plain.stdout
    assert dist.stderr == plain.stderr
    if "--redact" in args:  # and the redaction did something
        assert "redacted:" in plain.stdout and plain.stdout != cli("dump", *args[:args.index("--redact")],
                                                                     logdir).stdout


def test_dump_redact_with_a_random_key_is_one_key_per_run(spark, logdir):
    """Without --redact-key the key is random per run, but one for every task of the run: equal
    keys of different files stay equal."""
    out = cli("spark", "dump", "-r", "--format", "jsonl", "--redact", "keys", logdir)
    assert out.exit_code == 0, out.stderr
    plain = [json.loads(x) for x in cli("dump", "-r", "--format", "jsonl", logdir).stdout.splitlines()]
    red = [json.loads(x) for x in out.stdout.splitlines()]
    pairs, files, where = set(), {}, None
    for p, r in zip(plain, red):
        where = p["file"] if p["type"] == "batch" else where
        if p["type"] == "record" and p.get("key"):
            pairs.add((p["key"], r["key"]))
            files.setdefault(p["key"], set()).add(where)
    assert max(len(f) for f in files.values()) > 1  # a key found in several files
    assert len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs})  # one token per original key


def test_dump_report_counts_what_the_plain_dump_shows(spark, logdir, tmp_path):
    """--report: a row per file, in file order, its batches and records those of the plain dump's lines."""
    from kseg.cli.common import expand_for_dump

    report = tmp_path / "dump.json"
    dist = cli("spark", "dump", "-r", "--format", "jsonl", "--report", report, logdir)
    plain = cli("dump", "-r", "--format", "jsonl", logdir)
    assert dist.exit_code == plain.exit_code == 0 and dist.stdout == plain.stdout
    lines = [json.loads(x) for x in plain.stdout.splitlines()]
    doc = json.loads(report.read_text())
    assert doc["command"] == "dump" and doc["ok"] is True and doc["problems"] == 0
    rows = doc["files"]
    assert [r["file"] for r in rows] == [str(f) for f in expand_for_dump([logdir])[0]]
    assert sum(r["batches"] for r in rows) == sum(x["type"] == "batch" for x in lines)
    assert sum(r["records"] for r in rows) == sum(x["type"] == "record" for x in lines)
    assert all(r["host"] and r["seconds"] >= 0 and r["error"] is None for r in rows)


def _brotli_partition(logdir: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A registry naming the example brotli plugin, and m2-none-0 recompressed with it."""
    pytest.importorskip("kseg_brotli_plugin")
    reg, out = tmp_path / "reg.json", tmp_path / "brotli" / "t-0"
    assert cli("plugins", "register", "--registry", reg, "--alias", "brotli", "--class",
               "kseg_brotli_plugin:BrotliPlugin", "--version", "1.0.0").exit_code == 0
    assert cli("--plugin-registry", reg, "recompress", "--codec", "brotli", logdir / "m2-none-0", "-o",
               out).exit_code == 0
    return reg, out


def test_dump_reads_a_plugin_codec_of_the_commands_registry(spark, logdir, tmp_path):
    """--plugin-registry reaches the executors: they read batches of a codec only the registry names."""
    reg, out = _brotli_partition(logdir, tmp_path)
    plain = cli("--plugin-registry", reg, "dump", "-r", "--format", "jsonl", out)
    dist = cli("--plugin-registry", reg, "spark", "dump", "-r", "--format", "jsonl", out)
    assert plain.exit_code == dist.exit_code == 0, dist.stderr
    assert dist.stdout == plain.stdout and '"codec": "plugin:brotli"' in plain.stdout


def test_tasks_read_with_the_registry_the_driver_gives_them(spark, logdir, tmp_path):
    """A program (no kseg command) that activated a registry runs an operation on Spark: each task
    activates the driver's registry, whatever an earlier task left in its worker."""
    from kseg.codecs import plugins
    from kseg.ops.registry import use_registry
    from kseg.ops.verify import VerifyOptions
    from kseg.spark.jobs import spark_verify

    reg, out = _brotli_partition(logdir, tmp_path)
    segments = sorted(out.glob("*.log"))
    try:
        use_registry(reg)
        report, _, _ = spark_verify(spark, segments, VerifyOptions())
        assert report.ok and report.files[0].batches > 0, [p.message for f in report.files for p in f.problems]
        use_registry(None)  # the workers have read with the registry: now the driver has none
        report, _, _ = spark_verify(spark, segments, VerifyOptions())
        assert not report.ok
        assert any("plugin id 1 is not registered" in p.message for f in report.files for p in f.problems)
    finally:
        plugins._Active.path = plugins._UNSET
        plugins._reset()


def test_format_kseg_reads_and_writes_plugin_batches_with_the_registry_option(spark, logdir, tmp_path):
    """format("kseg")'s pluginRegistry option: the writer's early check of a plugin alias, its tasks
    and the reader's tasks all use that registry."""
    from kseg.spark import write_log_dir

    reg, _ = _brotli_partition(logdir, tmp_path)
    df = spark.read.format("kseg").load(str(logdir / "m2-none-0"))
    write_log_dir(df, str(tmp_path / "written"), codec="brotli", pluginRegistry=str(reg))
    back = spark.read.format("kseg").option("pluginRegistry", str(reg)).load(str(tmp_path / "written"))
    assert {r.codec for r in back.select("codec").distinct().collect()} == {"plugin:brotli"}
    columns = ("topic", "partition", "offset", "key", "value")
    assert sorted(back.select(*columns).collect()) == sorted(df.select(*columns).collect())


def test_dump_stops_at_the_same_error(spark, bad_logdir, tmp_path):
    plain = cli("dump", "-r", bad_logdir)
    dist = cli("spark", "dump", "-r", bad_logdir)
    assert plain.exit_code == dist.exit_code == 1
    assert dist.stdout == plain.stdout
    assert dist.stderr == plain.stderr and "kseg: error:" in dist.stderr
    stopped = tmp_path / "stopped.txt"  # -o: what was shown before the error is kept, as on stdout
    dist = cli("spark", "dump", "-r", "-o", stopped, bad_logdir)
    assert (dist.exit_code, dist.stdout, dist.stderr) == (1, "", plain.stderr)
    assert stopped.read_text() == plain.stdout and plain.stdout
    out = tmp_path / "dump.txt"
    dist = cli("spark", "dump", "-r", "--keep-going", "-o", out, bad_logdir)
    plain = cli("dump", "-r", "--keep-going", bad_logdir)
    assert out.read_text() == plain.stdout
    assert dist.exit_code == plain.exit_code and dist.stderr == plain.stderr


# --------------------------------------------------------------------------- conversions, compaction


@pytest.mark.parametrize("command", [
    ("up-convert", "--to-magic", "2", "--codec", "zstd"),
    ("up-convert", "--to-magic", "1"),
    ("down-convert", "--to-magic", "1", "--codec", "gzip"),
    ("recompress", "--codec", "lz4", "--topics", "m2-gzip,m1-none,v2-txn"),
    ("rebase", "--base-offset", "1000"),
])
def test_conversions_byte_identical(spark, logdir, tmp_path, command):
    a, b = tmp_path / "plain", tmp_path / "spark"
    plain = cli(*command, logdir, "-o", a)
    dist = cli("spark", *command, logdir, "-o", b)
    assert plain.exit_code == dist.exit_code == 0, (plain.stderr, dist.stderr)
    assert dist.stderr.replace(str(b), "OUT") == plain.stderr.replace(str(a), "OUT")
    assert tree(a) == tree(b) and len(tree(a)) > 100
    one = logdir / "m0-snappy-1"  # a partition folder: one task
    assert cli(*command, one, "-o", tmp_path / "p1").exit_code == 0
    assert cli("spark", *command, one, "-o", tmp_path / "p2").exit_code == 0
    assert tree(tmp_path / "p1") == tree(tmp_path / "p2")


def test_kafka07_up_convert_byte_identical(spark, tmp_path):
    """Pre-0.8 input takes its own path on the executors; the options reach it."""
    command = ("up-convert", "--to-magic", "2", "--input-format", "kafka07", "--base-offset", "10",
               "--partition-leader-epoch", "4", str(REPO / "fixtures" / "kafka07"))
    plain = cli(*command, "-o", tmp_path / "plain" / "t-0")
    dist = cli("spark", *command, "-o", tmp_path / "spark" / "t-0")
    assert plain.exit_code == dist.exit_code == 0, (plain.stderr, dist.stderr)
    assert tree(tmp_path / "plain") == tree(tmp_path / "spark") and tree(tmp_path / "plain")


def test_compact_byte_identical(spark, logdir, tmp_path):
    a, b = tmp_path / "plain", tmp_path / "spark"
    plain = cli("compact", "--now-ms", NOW, logdir, "-o", a)
    dist = cli("spark", "compact", "--now-ms", NOW, logdir, "-o", b)
    assert plain.exit_code == dist.exit_code == 0
    assert tree(a) == tree(b)
    for p in a.rglob("*.log"):  # the cleaner keeps each segment's mtime; so does the Spark run
        assert p.stat().st_mtime_ns == (b / p.relative_to(a)).stat().st_mtime_ns
    assert dist.stderr.replace(str(b), "OUT") == plain.stderr.replace(str(a), "OUT")
    for extra in (("--dry-run", "--format", "json"), ("--dry-run", "--topics", "v2-txn,compacted-v2")):
        assert cli("spark", "compact", "--now-ms", NOW, *extra, logdir).stdout == \
            cli("compact", "--now-ms", NOW, *extra, logdir).stdout
    # the index spacing reaches the executors, for a log directory and for one partition folder
    for src, name in ((logdir, "dir"), (logdir / "compacted-v2-0", "one")):
        c, d = tmp_path / f"plain-{name}", tmp_path / f"spark-{name}"
        assert cli("compact", "--now-ms", NOW, "--index-interval-bytes", "1", src, "-o", c).exit_code == 0
        assert cli("spark", "compact", "--now-ms", NOW, "--index-interval-bytes", "1", src, "-o", d).exit_code == 0
        assert tree(c) == tree(d)
    assert tree(tmp_path / "plain-dir") != tree(a)  # denser indexes than the default 4096 bytes
    report = tmp_path / "compact.json"
    assert cli("spark", "compact", "--now-ms", NOW, "--dry-run", "--report", report, logdir).exit_code == 0
    assert len(json.loads(report.read_text())["files"]) == len(list(logdir.iterdir()))


def test_failing_conversion_same_error_and_no_output(spark, bad_logdir, tmp_path):
    plain = cli("up-convert", "--to-magic", "2", bad_logdir, "-o", tmp_path / "a")
    dist = cli("spark", "up-convert", "--to-magic", "2", bad_logdir, "-o", tmp_path / "b")
    assert plain.exit_code == dist.exit_code != 0
    assert dist.stderr == plain.stderr
    assert not (tmp_path / "b").exists() and not list(tmp_path.glob(".b.*"))
    plain = cli("compact", "--now-ms", NOW, bad_logdir, "-o", tmp_path / "c")
    dist = cli("spark", "compact", "--now-ms", NOW, bad_logdir, "-o", tmp_path / "d")
    assert plain.exit_code == dist.exit_code and dist.stderr == plain.stderr
    assert (tmp_path / "c").exists() == (tmp_path / "d").exists()


def _damaged_corpus(root: Path) -> Path:
    """The Kafka 3.9 and 4 corpora's log directories in one, each partition of several batches
    damaged in another way: a zeroed page, a torn batch, an absurd length, garbage inserted."""
    import struct

    for corpus in ("kafka-3.9", "kafka-4"):
        for part in sorted((REPO / "fixtures" / corpus / "logdir").iterdir()):
            if part.is_dir():
                shutil.copytree(part, root / (part.name if corpus == "kafka-3.9" else f"k4-{part.name}"))
    damaged = 0
    for log in sorted(root.glob("*/*.log")):
        data = log.read_bytes()
        if len(data) < 400:
            continue
        at = len(data) // 3
        way = damaged % 4
        if way == 0:
            data = data[:at] + bytes(120) + data[at + 120:]
        elif way == 1:
            data = data[:at] + data[at + 37:]
        elif way == 2:
            data = data[:8] + struct.pack(">i", 0x7FFFFFF0) + data[12:]
        else:
            data = data[:at] + b"garbage!" * 9 + data[at:]
        log.write_bytes(data)
        damaged += 1
    assert damaged >= 4
    return root


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_salvage_same_output_and_report(spark, tmp_path, fmt):
    """kseg spark salvage over a damaged log directory: the plain command's files, byte for byte,
    and its report (every lost range), one task per partition."""
    src = _damaged_corpus(tmp_path / "in")
    a, b = tmp_path / "plain", tmp_path / "spark"
    plain = cli("salvage", "--format", fmt, src, "-o", a)
    dist = cli("spark", "salvage", "--format", fmt, src, "-o", b, "--report", tmp_path / "rows.json")
    assert plain.exit_code == dist.exit_code == 1, (plain.stderr, dist.stderr)
    assert dist.stdout.replace(str(b), "OUT") == plain.stdout.replace(str(a), "OUT")
    assert "lost" in plain.stdout and tree(a) == tree(b) and len(tree(a)) > 20
    rows = json.loads((tmp_path / "rows.json").read_text())["files"]
    assert len(rows) == len([p for p in src.iterdir() if p.is_dir()])
    dry = cli("spark", "salvage", "--dry-run", src)
    assert (dry.exit_code, dry.stdout) == (1, cli("salvage", "--dry-run", src).stdout)


# --------------------------------------------------------------------------- setup


def test_plain_cli_does_not_import_pyspark(logdir):
    code = ("import sys; from kseg.cli.main import main\n"
            "try:\n    main(['verify', sys.argv[1]])\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
            "assert 'pyspark' not in sys.modules and 'kseg.spark.source' not in sys.modules\n"
            "from kseg.cli.main import main as m\n"
            "import click\n"
            "ctx = click.Context(m)\n"
            "assert 'spark' in m.list_commands(ctx)\n"
            "assert 'pyspark' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code, str(logdir / "v2-txn-0")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    helped = cli("spark", "--help")
    assert helped.exit_code == 0
    for name in ("verify", "dump", "up-convert", "down-convert", "recompress", "compact"):
        assert name in helped.stdout
    for option in ("--master", "--report", "--quick", "--max-decompressed-bytes"):
        assert option in cli("spark", "verify", "--help").stdout


def test_session_defaults():
    from kseg.spark.session import session_defaults

    d = session_defaults(None, {})
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        assert d["spark.master"] == "local[*]"
        if "PYSPARK_PYTHON" not in os.environ:
            assert d["spark.pyspark.python"] == sys.executable
        if "SPARK_LOCAL_IP" not in os.environ:
            assert d["spark.driver.bindAddress"] == "127.0.0.1"
    cluster = session_defaults("spark://h:7077", {"spark.ui.enabled": "true"})
    assert "spark.driver.bindAddress" not in cluster and "spark.pyspark.python" not in cluster
    assert "spark.ui.enabled" not in cluster  # the user's setting stays
    assert cluster["spark.sql.python.filterPushdown.enabled"] == "true"


def test_register_in_a_plain_session(spark, logdir):
    """register() is all a session needs (here: the running one, format re-registered)."""
    from kseg.spark import read_log_dir, register

    register(spark)
    n = spark.read.format("kseg").load(str(logdir / "m2-zstd-0")).count()
    assert n == read_log_dir(spark, str(logdir / "m2-zstd-0")).count() == 24


# --------------------------------------------------------------------------- one report shape


def test_spark_json_report_is_verify_json_with_run_facts(spark, logdir, tmp_path):
    rep_json = tmp_path / "report.json"
    assert cli("spark", "verify", "--report", rep_json, logdir / "v2-txn-0").exit_code == 0
    doc = json.loads(rep_json.read_text())
    plain = json.loads(cli("verify", "--format", "json", logdir / "v2-txn-0").stdout)
    assert doc.pop("command") == "verify" and "files" in doc.pop("run")
    for f in doc["files"]:
        assert {"seconds", "cpu_seconds", "host"} <= set(f)
        for k in ("seconds", "cpu_seconds", "host"):
            del f[k]
    assert doc == plain


def test_parquet_report_is_typed_on_a_clean_run(spark, logdir, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    report = tmp_path / "clean.parquet"
    assert cli("spark", "verify", "--report", report, logdir / "v2-txn-0").exit_code == 0
    schema = pq.read_schema(report)
    problems = schema.field("problems").type
    assert pa.types.is_list(problems) and pa.types.is_struct(problems.value_type)
    assert problems.value_type.field("message").type == pa.string()
    assert schema.field("batches").type == pa.int64() and schema.field("cpu_seconds").type == pa.float64()


# --------------------------------------------------------------------------- Ctrl-C and closed pipes


SLOW_DECODER = """
import pathlib, time
def slow(b):
    pathlib.Path(__file__).with_name("started").touch()
    time.sleep(1)
    return b.hex()
"""


def _slow_dump(tmp_path, *pipe):
    (tmp_path / "slowdec.py").write_text(SLOW_DECODER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    cmd = [sys.executable, "-m", "kseg.cli.main", "spark", "dump", "-r", "--master", "local[1]",
           "--value-decoder", "slowdec:slow", str(FIXTURES)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
                            preexec_fn=restore_signals)


def _first_line(proc, seconds: float) -> bytes:
    """The first line of ``proc``'s stdout, which must come within ``seconds``."""
    import select

    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    if not ready:
        proc.kill()
        pytest.fail(f"no output in {seconds} s: the output waits for the units to end")
    return proc.stdout.readline()


def _wait_for(path: Path, proc, seconds: float = 240) -> None:
    import time

    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < seconds, "the job never started"
        time.sleep(0.2)


def test_ctrl_c_on_spark_exits_130_without_tracebacks(tmp_path):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for a local Spark")
    import signal

    proc = _slow_dump(tmp_path)
    _wait_for(tmp_path / "started", proc)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C: the whole foreground group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"WARNING" not in err and len(err.splitlines()) <= 1, err


def test_spark_dump_into_a_closed_pipe_stops_the_job(tmp_path):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for a local Spark")
    import time

    proc = _slow_dump(tmp_path)
    first = _first_line(proc, 150)  # `| head -1`: the job's start, and a record or two, not the whole job
    assert first.startswith(b"== ")
    proc.stdout.close()
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=120)  # every record sleeps 1 s: the whole job would take far longer
    assert time.monotonic() - t0 < 60 and b"Traceback" not in err, err
    assert proc.returncode == 0, err


def test_spark_refuses_standard_input_before_starting():
    r = CliRunner().invoke(main, ["spark", "verify", "-"], input=b"x")
    assert r.exit_code == 2 and r.stderr.startswith("kseg: error: -: kseg spark reads files by name")


# --------------------------------------------------------------------------- what Kafka wrote


@pytest.fixture(scope="module")
def broker_logdirs(tmp_path_factory) -> Path:
    """Every log directory a broker wrote in the corpora, side by side in one folder."""
    from test_what_kafka_wrote import BROKER_LOG_DIRS, FIXTURES as CORPORA

    root = tmp_path_factory.mktemp("brokers") / "all"
    for d in BROKER_LOG_DIRS:
        shutil.copytree(d, root / str(d.relative_to(CORPORA)).replace("/", "_"))
    return root


def _spark_commands() -> list[str]:
    from kseg.spark.cli import spark as group

    return sorted(group.commands)


@pytest.mark.parametrize("name", _spark_commands())
def test_every_spark_command_on_what_kafka_wrote(spark, broker_logdirs, tmp_path, name):
    """Each ``kseg spark`` command (from its click group: a new one needs its failure-matrix row)
    says and writes what the plain command does on what brokers wrote: readers over every broker
    log directory at once, writers on those that between them hold every kind of file."""
    from test_failure_matrix import COMMANDS
    from test_what_kafka_wrote import COVERING, EXTRA

    cmd = COMMANDS[name]
    inputs = COVERING if cmd.role == "writer" else [broker_logdirs]
    for n, where in enumerate(inputs):
        a, b = tmp_path / f"plain{n}{cmd.output_suffix}", tmp_path / f"spark{n}{cmd.output_suffix}"
        plain = cli(name, *cmd.argv(str(where), str(a)), *EXTRA.get(name, []))
        dist = cli("spark", name, *cmd.argv(str(where), str(b)), *EXTRA.get(name, []))
        assert plain.exit_code == dist.exit_code == 0, (where, plain.stderr, dist.stderr)
        assert dist.stdout.replace(str(b), "OUT") == plain.stdout.replace(str(a), "OUT"), where
        assert dist.stderr.replace(str(b), "OUT") == plain.stderr.replace(str(a), "OUT"), where
        if cmd.role == "writer":
            assert tree(b) == tree(a) and tree(a), where
