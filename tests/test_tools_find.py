"""kseg find: filters, index seeks, Kafka's default partitioner (murmur2)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from conftest import FIXTURES_LOGDIR, REALDATA, examples
from kseg.cli.main import main
from kseg.companions.build import build_indexes
from kseg.log.encode import build_v2_batch
from kseg.log.segment import Segment, segment_file_name
from kseg.model import make_record
from kseg.ops.find import FindOptions, FindStats, default_partition, find, murmur2

T0 = 1_700_000_000_000

# Kafka's UtilsTest.testMurmur2 (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java).
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]
# kafka-python's test_partitioner.py: the Java client's partition for these keys over 1000 partitions.
PARTITION_VECTORS = [(b"", 681), (b"a", 524), (b"ab", 434), (b"abc", 107), (b"123456789", 566), (b"\x00 ", 742)]


@pytest.mark.parametrize("data,expected", KAFKA_VECTORS)
def test_murmur2_kafka_vectors(data, expected):
    assert murmur2(data) == expected


@pytest.mark.parametrize("key,partition", PARTITION_VECTORS)
def test_default_partition_java_vectors(key, partition):
    assert default_partition(key, 1000) == partition


@given(st.binary(max_size=64))
@examples(300)
def test_murmur2_same_as_kafka_python(data):
    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data) & 0xFFFFFFFF


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def keyed_log_dir(root, partitions=4, per_partition_batches=60, per=20):
    """A topic whose records sit where the default partitioner puts their keys, two segments
    per partition, with .index/.timeindex; headers on every 5th record; some transactions."""
    by_part: dict[int, list] = {p: [] for p in range(partitions)}
    for i in range(partitions * per_partition_batches * per):
        key = f"user-{i % 5000}".encode()
        by_part[default_partition(key, partitions)].append((key, i))
    for p, items in by_part.items():
        folder = root / f"orders-{p}"
        folder.mkdir(parents=True)
        chunks = [items[j:j + per] for j in range(0, len(items), per)]
        half = len(chunks) // 2
        off = 0
        for seg_chunks in (chunks[:half], chunks[half:]):
            base = off
            data = b""
            for n, chunk in enumerate(seg_chunks):
                recs = [make_record(off + k, T0 + i, key, b"payload-%d" % i,
                                    [("trace", b"t%d" % (i % 3))] if i % 5 == 0 else [])
                        for k, (key, i) in enumerate(chunk)]
                txn = n % 10 == 3
                data += build_v2_batch(recs, codec=1 if n % 2 else 0, producer_id=100 + n % 3 if txn else -1,
                                       producer_epoch=0 if txn else -1, transactional=txn,
                                       base_sequence=0 if txn else -1)
                off += len(chunk)
            log = folder / segment_file_name(base)
            log.write_bytes(data)
            batches = list(Segment(log).batches())
            index, timeindex = build_indexes(batches, base, 1024)
            log.with_suffix(".index").write_bytes(index)
            log.with_suffix(".timeindex").write_bytes(timeindex)
    return root


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return keyed_log_dir(tmp_path_factory.mktemp("find") / "logs")


def all_records(logdir):
    out = []
    for folder in sorted(logdir.iterdir()):
        for log in sorted(folder.glob("*.log")):
            from kseg.log.records import batch_records
            for b in Segment(log).batches():
                for r in batch_records(b):
                    out.append((folder.name, b, r))
    return out


def test_key_everywhere_and_with_partitioner(logdir):
    key = b"user-42"
    part = default_partition(key, 4)
    expected = [(f, r.offset) for f, b, r in all_records(logdir) if r.key == key]
    assert expected and {f for f, _ in expected} == {f"orders-{part}"}
    st1 = FindStats()
    got = [(f"{m.topic}-{m.partition}", m.record.offset) for m in find([logdir], FindOptions(key=key), st1)]
    assert got == expected
    assert st1.batches_skipped > 0  # uncompressed batches without the key bytes are never decoded
    # ... nor compressed ones (half of them) whose decompressed records do not hold them
    assert st1.records < len(all_records(logdir)) // 10
    st2 = FindStats()
    got2 = [(f"{m.topic}-{m.partition}", m.record.offset)
            for m in find([logdir], FindOptions(key=key, partitioner_topic="orders", partitions=4), st2)]
    assert got2 == expected and st2.partitions == [f"orders-{part}"]
    res = run("find", logdir, "--key", "user-42", "--partitioner", "--topic", "orders", "--partitions", 4,
              "--format", "json")
    assert res.exit_code == 0
    docs = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(f"{d['topic']}-{d['partition']}", d["offset"]) for d in docs] == expected
    assert docs[0]["key"] == "user-42"


@pytest.mark.parametrize("opts,pred", [
    (dict(key_regex=r"^user-1\d$"), lambda b, r: r.key is not None and r.key.startswith(b"user-1") and len(r.key) == 7),
    (dict(value_regex=r"payload-7\d\d$"), lambda b, r: r.value.startswith(b"payload-7") and len(r.value) == 11),
    (dict(header="trace"), lambda b, r: any(h.key == "trace" for h in r.headers)),
    (dict(header="trace=t1"), lambda b, r: ("trace", b"t1") in [tuple(h) for h in r.headers]),
    (dict(producer_id=101), lambda b, r: b.producer_id == 101),
    (dict(transactional=True), lambda b, r: b.is_transactional),
    (dict(key_regex="^user-7", from_offset=150, to_offset=190),
     lambda b, r: r.key.startswith(b"user-7") and 150 <= r.offset <= 190),
    (dict(from_time=T0 + 2000, to_time=T0 + 2100), lambda b, r: T0 + 2000 <= r.timestamp <= T0 + 2100),
])
def test_filters_match_a_full_scan(logdir, opts, pred):
    expected = [(f, r.offset) for f, b, r in all_records(logdir) if not b.is_control and pred(b, r)]
    got = [(f"{m.topic}-{m.partition}", m.record.offset) for m in find([logdir], FindOptions(**opts))]
    assert got == expected and expected
    no_index = [(f"{m.topic}-{m.partition}", m.record.offset)
                for m in find([logdir], FindOptions(use_indexes=False, **opts))]
    assert no_index == expected


def test_indexes_narrow_the_scan(logdir):
    st = FindStats()
    list(find([logdir], FindOptions(from_offset=1100, to_offset=1120), st))
    assert st.seeks > 0 and st.segments_skipped > 0
    full = FindStats()
    list(find([logdir], FindOptions(from_offset=1100, to_offset=1120, use_indexes=False), full))
    assert st.batches * 5 < full.batches
    st = FindStats()
    got = list(find([logdir], FindOptions(from_time=T0 + 3000), st))
    assert got and st.seeks + st.segments_skipped > 0


def test_bad_usage(logdir):
    assert run("find", logdir).exit_code == 2
    assert run("find", logdir, "--key-regex", "(").exit_code == 2
    assert run("find", logdir, "--key", "a", "--partitioner", "--topic", "orders").exit_code == 2
    assert run("find", logdir, "--key", "a", "--partitioner", "--topic", "nope", "--partitions", 4).exit_code == 2


def test_fixtures_and_key_decoder():
    res = run("find", FIXTURES_LOGDIR / "v2-headers-0", "--header", "h=x")
    assert res.exit_code == 0 and "v2-headers-0 offset 1 " in res.stdout
    res = run("find", FIXTURES_LOGDIR, "--key", "k1", "--key-decoder", "hex", "--format", "json")
    assert {json.loads(x)["key"] for x in res.stdout.splitlines()} == {"6b31"}


def test_damaged_data_exit_1(tmp_path):
    folder = tmp_path / "t-0"
    folder.mkdir()
    data = build_v2_batch([make_record(0, T0, b"a", b"1")]) + b"\x00\x00\x00"
    (folder / segment_file_name(0)).write_bytes(data)
    # named on its own, a partial batch at its end is damage (in the folder's newest segment, one
    # still being written: tests/test_tails.py)
    res = run("find", folder / segment_file_name(0), "--key", "a")
    assert res.exit_code == 1 and "t-0 offset 0" in res.stdout


@pytest.mark.parametrize("rule_out", [["--key", "zz"], ["--producer-id", "77"], ["--from-time", str(T0 + 10**9)]])
def test_a_batch_ruled_out_is_checked_first(tmp_path, rule_out):
    """A batch whose CRC does not match is damage, whatever would have ruled it out: its key's
    bytes, producer or timestamps are what the mismatch says cannot be trusted (a flipped bit
    in a key would otherwise hide the record and exit 0)."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    bad = bytearray(build_v2_batch([make_record(1, T0, b"zy", b"2")], base_offset=1))
    bad[-1] ^= 0x01  # the value's last byte: the CRC no longer matches
    data = build_v2_batch([make_record(0, T0, b"a", b"1")]) + bytes(bad)
    (folder / segment_file_name(0)).write_bytes(data)
    res = run("find", folder, *rule_out)
    assert res.exit_code == 1 and "crc mismatch" in res.stderr, (res.stdout, res.stderr)


def test_real_data():
    root = REALDATA / "Experts-in-team-innovation" / "kafka" / "data"
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    res = run("find", root, "--value-regex", "temperature", "--format", "json")
    assert res.exit_code == 0
    docs = [json.loads(x) for x in res.stdout.splitlines()]
    assert docs and all("temperature" in d["value"] for d in docs)
    assert {d["topic"] for d in docs} <= {"sensor-data", "sensor-data-topic", "first"}


def test_legacy_wrappers_by_offset(tmp_path):
    """A v1 wrapper carries its last inner offset: a range ending inside it still finds its records."""
    from builders import write_partition

    folder = write_partition(tmp_path / "old-0", 1, "gzip", segments=2)
    got = [m.record.offset for m in find([folder], FindOptions(from_offset=5, to_offset=9))]
    assert got == [5, 6, 7, 8, 9]


# (args after the log directory, exit code, topics of the matches or a phrase of the error):
# --topic filters by the partitions' topic names; an option that cannot apply is an error.
TOPIC_CASES = [
    (["--value-regex", "."], 0, {"sensor-data", "sensor-data-topic", "first"}),
    (["--topic", "sensor-data", "--value-regex", "."], 0, {"sensor-data"}),
    (["--topic", "sensor-data-topic", "--value-regex", "."], 0, {"sensor-data-topic"}),
    (["--topic", "first", "--value-regex", "."], 0, {"first"}),
    (["--topic", "nonexistent", "--key", "x"], 2, "--topic nonexistent: no partition of this topic under the paths "
                                                 "given (the topics there: "),
    (["--partitions", "4", "--key", "x"], 2, "--partitions is the topic's partition count for --partitioner"),
    (["--partitioner", "--topic", "sensor-data", "--key", "x"], 2, "--partitioner needs"),
]


@pytest.mark.parametrize("args,code,want", TOPIC_CASES)
def test_topic_filter_on_real_data(args, code, want):
    root = REALDATA / "Experts-in-team-innovation" / "kafka" / "data"
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    res = run("find", root, "--format", "json", *args)
    assert res.exit_code == code, res.stderr
    if code == 0:
        topics = {json.loads(x)["topic"] for x in res.stdout.splitlines()}
        assert topics == want if "--topic" in args else topics >= want
    else:
        assert want in res.stderr and res.stdout == ""


def test_topic_filter_on_files_without_a_topic(tmp_path):
    log = tmp_path / segment_file_name(0)
    log.write_bytes(build_v2_batch([make_record(0, T0, b"a", b"1")]))
    res = run("find", log, "--key", "a", "--topic", "t")
    assert res.exit_code == 2 and "no <topic>-<n> partition folder is there" in res.stderr
    assert run("find", log, "--key", "a").exit_code == 0


def test_text_names_the_folder_given_several_log_directories(tmp_path):
    """Two log directories holding the same partition: given both, a text line names the
    partition's folder (topic-n alone would not say which); given one, topic-n as before.
    JSON lines name the file either way."""
    dirs = []
    for side in ("broker", "backup"):
        folder = tmp_path / side / "orders-0"
        folder.mkdir(parents=True)
        recs = [make_record(i, T0 + i, b"k", f"{side}-{i}".encode()) for i in range(3)]
        (folder / segment_file_name(0)).write_bytes(build_v2_batch(recs, base_offset=0))
        dirs.append(tmp_path / side)
    both = run("find", "--key", "k", "--from-offset", "1", "--to-offset", "1", *dirs)
    assert both.exit_code == 0, both.output
    assert both.stdout.splitlines() == [f'{d / "orders-0"} offset 1 timestamp {T0 + 1} key "k" value "{d.name}-1"'
                                        for d in dirs]
    one = run("find", "--key", "k", "--from-offset", "1", "--to-offset", "1", dirs[1])
    assert one.stdout.splitlines() == [f'orders-0 offset 1 timestamp {T0 + 1} key "k" value "backup-1"']
    docs = [json.loads(x) for x in run("find", "--key", "k", "--from-offset", "1", "--to-offset", "1", "--format",
                                         "json", *dirs).stdout.splitlines()]
    assert [d["file"] for d in docs] == [str(d / "orders-0" / segment_file_name(0)) for d in dirs]
