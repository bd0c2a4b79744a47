"""The generated fixtures (fixtures/generate.py) and the index builder (kseg.companions.build).

* the generator reproduces the committed files byte for byte (``--check``);
* ``kseg verify fixtures/logdir`` is clean;
* every partition dumps the records of the generator's case table (imported, not restated);
* the pre-0.8 file dumps its payloads with ``--input-format kafka07``;
* .index/.timeindex/.txnindex equal what ``kseg.companions.build`` makes of the logs;
* the builder reproduces the real broker-written indexes under /work/shared/realdata.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.companions.read import parse_offset_index, parse_time_index, parse_txn_index
from kseg.log.decode import scan_entries
from kseg.errors import InputError
from kseg.companions.build import (
    CLOSE,
    Append,
    TxnEntry,
    appends_of,
    build_indexes,
    build_offset_index,
    build_time_index,
    build_txn_index,
    index_entries,
    index_segment,
)
from kseg.companions.check import check_leader_epoch_checkpoint, check_segment_companions

from conftest import REALDATA, REPO

FIXTURES = REPO / "fixtures"
LOGDIR = FIXTURES / "logdir"


def _load_generator():
    spec = importlib.util.spec_from_file_location("kseg_fixture_generator", FIXTURES / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


gen = _load_generator()
CASES = gen.CASES


def _cli(*args: str, cwd: Path = REPO):
    """Run the kseg CLI in-process with ``cwd`` as the working folder."""
    import os

    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def _b64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


# --------------------------------------------------------------------------- the generator


def test_generator_reproduces_committed_files():
    proc = subprocess.run([sys.executable, str(FIXTURES / "generate.py"), "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_check_names_a_changed_file(tmp_path):
    gen.generate(tmp_path)
    victim = tmp_path / gen.LOGDIR / "v2-none-0" / "00000000000000000000.log"
    victim.write_bytes(victim.read_bytes() + b"\0")
    (tmp_path / gen.LOGDIR / "stray.txt").write_text("x")
    diffs = gen.check(tmp_path)
    assert diffs == ["not generated: logdir/stray.txt", "differs: logdir/v2-none-0/00000000000000000000.log"]
    gen.generate(tmp_path)  # regeneration repairs the tree and removes strays
    assert gen.check(tmp_path) == []


# Folders of files written by real brokers and Kafka's own code (the Kafka oracle corpora): their
# size is what Kafka wrote, held to a budget of their own.
BROKER_CORPORA = ("kafka-2.8", "kafka-3.6", "kafka-3.9", "kafka-4.0", "kafka-4.1", "kafka-4.2", "kafka-4",
                  "kafka-4.4", "kafka-admin", "kafka-cleaner", "kafka-clients", "kafka-convert", "kafka-damaged",
                  "kafka-damaged-companions", "kafka-dump-log-usage", "kafka-tiered", "record-types")


def stored_size(p: Path) -> int:
    """A file's size without its trailing zeros: a broker preallocates an active segment's indexes
    (10 MiB of zeros, which 4.4 leaves in place even after a clean stop of a KRaft node's metadata
    log); git stores such runs in a few bytes, and the corpora keep them since they are what Kafka
    wrote and what its tool read for the goldens."""
    data = p.read_bytes()
    return len(data.rstrip(b"\0"))


def test_fixture_tree_is_small():
    def size(paths):
        return sum(p.stat().st_size for p in paths if p.is_file() and "__pycache__" not in p.parts)

    generated = [p for p in FIXTURES.rglob("*") if p.relative_to(FIXTURES).parts[0] not in BROKER_CORPORA]
    assert size(generated) < 400 * 1024
    corpora = [p for name in BROKER_CORPORA for p in (FIXTURES / name).rglob("*")]
    stored = sum(stored_size(p) for p in corpora if p.is_file() and "__pycache__" not in p.parts)
    # 12 MiB: the cleaner's key-map case alone needs more keys than the broker's smallest dedupe
    # buffer maps (1 MiB: 39,321 keys), about 2.5 MB per release; four brokers' releases and the
    # record-types corpus (0.5 MB) come to about 12.2 MB; 1.5 MiB more for kafka-clients (librdkafka's and
    # the Java client's traffic on 4.3.1, about 1.3 MB: its goldens are most of it); 1 MiB more for
    # kafka-admin (the operators' tools on 4.3.1, about 0.8 MB, goldens again most of it); 4 MiB
    # more for the 4.0, 4.1, 4.2 and 4.4 lines (about 1.1 MB each, goldens most of it), counted
    # without the zeros of preallocated indexes (stored_size); 4 MiB more for kafka-clients on 2.8, 3.9
    # and 4.4 (the same traffic on those releases: about 1.7, 1.3 and 1.3 MB, goldens most of it); 5 MiB
    # more for kafka-clients on 3.6, 4.0, 4.1 and 4.2 (about 1.35 MB each, goldens 0.8 MB of it); 2 MiB more
    # for kafka-admin on 4.0, 4.1, 4.2 and 4.4 (the operators' tools on those releases: about 0.42, 0.52, 0.52
    # and 0.54 MB, goldens 0.4 to 0.5 MB of each); 0.5 MiB more for kafka-admin on 3.9 (about 0.39 MB) and
    # the record-types corpora of 2.8 and 3.6 (about 0.2 MB); 0.5 MiB more for kafka-damaged (the tool's
    # outputs on damaged segments, 2.8.2, 3.6.2, 3.9.2 and 4.3.1, with damaged v2 records, legacy wrappers
    # and transaction markers: about 0.35 MB, xz); 0.25 MiB more for kafka-damaged-companions
    # (the same tools, and 2.8.2's and 3.6.2's, on damaged indexes, snapshots, checkpoints and internal-topic
    # records: about 0.17 MB, xz)
    assert stored < int(31.75 * 1024 * 1024)


def test_case_table_covers_the_brief():
    names = {c.name for c in CASES}
    for magic, codecs in ((0, "none gzip snappy lz4"), (1, "none gzip snappy lz4"), (2, "none gzip snappy lz4 zstd")):
        for codec in codecs.split():
            assert f"v{magic}-{codec}" in names
    tags = {t for c in CASES for t in c.tags}
    assert {"transactional", "control", "idempotent", "compacted", "empty", "logappendtime", "mixed",
            "headers"} <= tags
    records = [r for c in CASES for r in gen.case_records(c)]
    assert any(r.key is None for r in records) and any(r.value is None for r in records)
    assert any(r.key == b"" for r in records) and any(r.value == b"" for r in records)
    assert any(v is None for r in records for _, v in r.headers)
    assert all(1 <= len(c.segments) <= 3 for c in CASES)


def test_offsets_increase_within_each_partition():
    for case in CASES:
        offsets = [r.offset for r in gen.case_records(case)]
        assert offsets == sorted(set(offsets)), case.name


# --------------------------------------------------------------------------- verify and dump


def test_verify_logdir_is_clean():
    result = _cli("verify", "--format", "json", "fixtures/logdir")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] and report["errors"] == 0
    logs = {f["file"] for f in report["files"] if f["kind"] == "log"}
    expected = {f"fixtures/logdir/{c.folder}/{gen.segment_name(s.base, '.log')}" for c in CASES for s in c.segments}
    assert logs == expected
    # each partition's leader-epoch-checkpoint is checked too
    assert {f["file"] for f in report["files"] if f["kind"] == "leader-epoch-checkpoint"} == {
        f"fixtures/logdir/{c.folder}/leader-epoch-checkpoint" for c in CASES}
    counts = {f["file"]: f["records"] for f in report["files"]}
    for case in CASES:
        for seg in case.segments:
            assert counts[f"fixtures/logdir/{case.folder}/{gen.segment_name(seg.base, '.log')}"] == \
                len(gen.segment_records(seg))


def test_verify_logdir_text_exit_code():
    result = _cli("verify", "fixtures/logdir")
    assert result.exit_code == 0, result.output
    assert ", 0 with errors, 0 error(s) in all" in result.stdout


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_partition_dumps_the_case_records(case):
    result = _cli("dump", "--records", "--format", "jsonl", "--payload", "base64", f"fixtures/logdir/{case.folder}")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    records = [x for x in lines if x["type"] == "record"]
    seen = [
        gen.Expected(r["offset"], r["timestamp"], _b64(r["key"]), _b64(r["value"]),
                     tuple((h["key"], _b64(h["value"])) for h in r["headers"]))
        for r in records
    ]
    assert seen == gen.case_records(case)
    batches = [x for x in lines if x["type"] == "batch"]
    want_batches = [(f"fixtures/logdir/{case.folder}/{gen.segment_name(s.base, '.log')}", len(gen.encode_batch(b)))
                    for s in case.segments for b in s.batches]
    files = [b["file"] for b in batches]
    assert len(batches) == sum(n for _, n in want_batches)
    assert sorted(set(files)) == sorted({f for f, _ in want_batches})
    assert all(b["crc_valid"] for b in batches)
    assert not [x for x in lines if x["type"] in ("error", "trailing")]


def test_control_and_empty_batches_as_dumped():
    result = _cli("dump", "--records", "--format", "jsonl", "fixtures/logdir/v2-txn-0", "fixtures/logdir/compacted-v2-0")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    controls = [x["control"] for x in lines if x["type"] == "record" and "control" in x]
    assert [(c["type"], c["coordinator_epoch"]) for c in controls] == [("ABORT", 7), ("COMMIT", 7), ("COMMIT", 8)]
    empty = [x for x in lines if x["type"] == "batch" and x["count"] == 0]
    assert [(e["base_offset"], e["last_offset"], e["producer_id"], e["base_sequence"], e["max_timestamp"])
            for e in empty] == [(14, 18, 42, 10, gen.T0 + 18)]
    horizon = [x for x in lines if x["type"] == "batch" and x.get("delete_horizon_ms") is not None]
    assert [h["delete_horizon_ms"] for h in horizon] == [gen.DELETE_HORIZON]


def test_kafka07_dump_shows_the_payloads():
    path = f"{gen.KAFKA07_DIR}/{gen.KAFKA07_FILE}"
    result = _cli("dump", "--input-format", "kafka07", "--records", "--format", "jsonl", "--payload", "base64",
                  f"fixtures/{path}")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [_b64(x["value"]) for x in lines if x["type"] == "record"] == gen.kafka07_payloads()
    messages = [x for x in lines if x["type"] == "message"]
    assert [(m["magic"], m["codec"]) for m in messages] == [
        (m.magic, gen.CODEC_NAME[m.attributes & 3]) for m in gen.KAFKA07_MESSAGES]
    assert all(m["crc_valid"] for m in messages)
    text = _cli("dump", "--input-format", "kafka07", "--records", "--payload", "utf8", f"fixtures/{path}").stdout
    for payload in gen.kafka07_payloads():
        if payload.isascii() and payload.decode().isprintable():
            assert f"payload: {payload.decode()}" in text
    assert "compresscodec: gzip" in text
    verify = _cli("verify", "--input-format", "kafka07", f"fixtures/{path}")
    assert verify.exit_code == 0, verify.output


def test_kafka07_file_is_not_seen_as_a_log():
    assert not list((FIXTURES / gen.KAFKA07_DIR).glob("*.log"))


# --------------------------------------------------------------------------- companion files


def _segments():
    for case in CASES:
        for seg in case.segments:
            yield pytest.param(case, seg, id=f"{case.folder}/{seg.base}")


@pytest.mark.parametrize("case,seg", list(_segments()))
def test_indexes_match_index_segment(case, seg):
    stem = LOGDIR / case.folder / gen.segment_name(seg.base, "")
    log = stem.with_suffix(".log").read_bytes()
    index, timeindex = index_segment(log, seg.base, gen.INDEX_INTERVAL)
    assert stem.with_suffix(".index").read_bytes() == index
    assert stem.with_suffix(".timeindex").read_bytes() == timeindex
    txn = stem.with_suffix(".txnindex")
    assert txn.exists() == bool(seg.aborted)
    if seg.aborted:
        assert txn.read_bytes() == build_txn_index(seg.aborted)
    assert [f for f in check_segment_companions(stem.with_suffix(".log")) if f.severity == "error"] == []


def test_fixture_indexes_have_entries():
    n_offsets = n_times = 0
    for case in CASES:
        for seg in case.segments:
            stem = LOGDIR / case.folder / gen.segment_name(seg.base, "")
            n_offsets += len(parse_offset_index(stem.with_suffix(".index").read_bytes(), seg.base).entries)
            n_times += len(parse_time_index(stem.with_suffix(".timeindex").read_bytes(), seg.base).entries)
    assert n_offsets >= 30 and n_times >= 30


def test_txn_index_fixture():
    data = (LOGDIR / "v2-txn-0" / "00000000000000000005.txnindex").read_bytes()
    (entry,) = parse_txn_index(data, 5).entries
    assert tuple(entry) == (0, gen.TXN_P2, 2, 5, 0)


def test_timestamps_case_points_at_the_earlier_batch():
    # Batch 3..5 has a smaller max than batch 0..2, and 9..10 ties 6..8: the entries keep the earlier offsets.
    stem = LOGDIR / "v2-timestamps-0" / "00000000000000000000"
    times = parse_time_index(stem.with_suffix(".timeindex").read_bytes(), 0).entries
    assert [tuple(t) for t in times] == [(gen.T0 + 1002, 2), (gen.T0 + 5000, 8)]
    offsets = parse_offset_index(stem.with_suffix(".index").read_bytes(), 0).entries
    assert [e.offset for e in offsets] == [5, 10]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_leader_epoch_checkpoints(case):
    path = LOGDIR / case.folder / "leader-epoch-checkpoint"
    assert [f for f in check_leader_epoch_checkpoint(path) if f.severity == "error"] == []


# --------------------------------------------------------------------------- the builder's rules


def _app(position: int, size: int, last: int, ts: int = -1, ts_offset: int | None = None) -> Append:
    return Append(position, size, last, ts, last if ts_offset is None else ts_offset)


def test_interval_is_strict_and_counted_before_the_append():
    # 100-byte appends, interval 200: the entry comes at the 4th append (300 > 200), not the 3rd (200).
    appends = [_app(i * 100, 100, i) for i in range(6)]
    e = index_entries(appends, 0, 200)
    assert e.offsets == [(3, 300)]
    assert index_entries(appends, 0, 199).offsets == [(2, 200), (4, 400)]
    assert build_offset_index(appends, 0, 199) == bytes.fromhex("00000002000000c8" "0000000400000190")


def test_no_entry_for_the_first_append():
    assert index_entries([_app(0, 10_000, 5)], 0, 0).offsets == []
    assert index_entries([_app(0, 10_000, 5), _app(10_000, 1, 6)], 0, 0).offsets == [(6, 10_000)]


def test_time_index_rules():
    appends = [
        _app(0, 100, 0, 50), _app(100, 100, 1, 40), _app(200, 100, 2, 40),  # no larger max: entry repeats 50@0
        _app(300, 100, 3, 60), _app(400, 100, 4, 70),
    ]
    e = index_entries(appends, 0, 150, final=False)
    assert e.offsets == [(2, 200), (4, 400)]
    assert e.times == [(50, 0), (70, 4)]
    assert index_entries(appends[:4], 0, 150, final=True).times == [(50, 0), (60, 3)]
    assert build_time_index(appends[:4], 0, 150, final=False) == bytes.fromhex("0000000000000032" "00000000")
    # v0 data (timestamp -1) never makes an entry.
    assert index_entries([_app(i * 300, 300, i) for i in range(4)], 0, 100).times == []


def test_time_index_offsets_are_relative():
    e = build_time_index([_app(0, 10, 1005, 7)], 1000)
    assert e == bytes.fromhex("0000000000000007" "00000005")


def test_multi_batch_append_pairs_last_offset_with_first_position():
    log = (LOGDIR / "v2-none-0" / "00000000000000000000.log").read_bytes()
    batches = scan_entries(log, 0).batches
    assert len(batches) == 5
    appends = appends_of(batches, [1, 2, 2])
    assert [a.position for a in appends] == [0, batches[1].position, batches[3].position]
    assert appends[1].last_offset == batches[2].last_offset
    assert appends[1].size == batches[1].size + batches[2].size
    e = index_entries(appends, 0, 128)
    assert e.offsets == [(batches[2].last_offset, batches[1].position), (batches[4].last_offset, batches[3].position)]
    # Lists of batches are appends too, and the per-batch default is recovery's view.
    assert index_entries([[batches[0]], batches[1:3], batches[3:]], 0, 128) == e
    assert build_indexes(appends_of(batches), 0, 128) == index_segment(log, 0, 128)
    with pytest.raises(InputError):
        appends_of(batches, [2, 2])


def test_close_restarts_the_byte_count_and_writes_the_time_entry():
    appends = [_app(i * 100, 100, i, 10 + i) for i in range(4)]
    one = index_entries(appends, 0, 50)
    assert one.offsets == [(1, 100), (2, 200), (3, 300)]
    assert one.times == [(11, 1), (12, 2), (13, 3)]
    two = index_entries(appends[:1] + [CLOSE] + appends[1:], 0, 50)
    assert two.offsets == [(2, 200), (3, 300)]
    assert two.times == [(10, 0), (12, 2), (13, 3)]


def test_offsets_must_fit_the_segment():
    with pytest.raises(InputError):
        build_offset_index([_app(0, 10, 5)], 10)
    with pytest.raises(InputError):
        build_offset_index([_app(0, 10, 1 << 31)], 0)


def test_txn_index_layout():
    data = build_txn_index([TxnEntry(7, 10, 20, 15), (0, 8, 21, 30, 31)])
    assert data == bytes.fromhex(
        "0000" "0000000000000007" "000000000000000a" "0000000000000014" "000000000000000f"
        "0000" "0000000000000008" "0000000000000015" "000000000000001e" "000000000000001f"
    )
    assert [tuple(e) for e in parse_txn_index(data).entries] == [(0, 7, 10, 20, 15), (0, 8, 21, 30, 31)]
    assert build_txn_index([]) == b""
    with pytest.raises(InputError):
        build_txn_index([TxnEntry(7, 10, 20, 15), TxnEntry(8, 1, 20, 1)])


# --------------------------------------------------------------------------- real broker-written indexes

# Segments whose .index/.timeindex the broker wrote in one session (clean close at the end):
# recovery's per-batch replay (index_segment, interval 4096) gives them back byte for byte.
REAL_SINGLE_SESSION = [
    "Experts-in-team-innovation/kafka_logs/__cluster_metadata-0/00000000000000000000",  # 67 + 68 entries
    "Experts-in-team-innovation/kafka_logs/sensor-data-0/00000000000000000000",
    "Experts-in-team-innovation/kafka/data/first-0/00000000000000000000",
    "Experts-in-team-innovation/kafka/data/sensor-data-0/00000000000000000000",
    "LDI-POC/__consumer_offsets-6/00000000000000000000",  # Kafka 3.7.0; 2 + 3 entries
    "project_data_enginnering/data/kafka/__consumer_offsets-11/00000000000000000001",  # base offset 1
]

# Active segments that lived through clean broker restarts. Each close wrote a final time
# index entry (the max timestamp so far), and the reopened LogSegment counted bytes from 0
# again, so the .index has fewer entries than one replay gives and the .timeindex has one
# entry per session. With CLOSE after the batch ending at each listed offset (the earliest
# restart point the files allow) the builder reproduces both files byte for byte.
REAL_RESTARTED = {
    "Experts-in-team-innovation/kafka/data/__cluster_metadata-0/00000000000000000000": (6436,),
    "Experts-in-team-innovation/kafka/data/__consumer_offsets-0/00000000000000000000": (2, 8, 33),
    "Experts-in-team-innovation/kafka/data/__consumer_offsets-39/00000000000000000000": (2, 8, 33),
    "Experts-in-team-innovation/kafka/data/__consumer_offsets-3/00000000000000000000": (1,),
    "Experts-in-team-innovation/kafka/data/__consumer_offsets-19/00000000000000000000": (1,),
    "Experts-in-team-innovation/kafka/data/__consumer_offsets-20/00000000000000000000": (1,),
    "Experts-in-team-innovation/kafka/data/sensor-data-topic-0/00000000000000000000": (3, 33),
}


def _real(stem: str) -> tuple[bytes, int, bytes, bytes]:
    p = REALDATA / stem
    if not p.with_suffix(".log").exists():
        pytest.skip(f"real data not available: {p}")
    base = int(p.name)
    return (p.with_suffix(".log").read_bytes(), base, p.with_suffix(".index").read_bytes(),
            p.with_suffix(".timeindex").read_bytes())


@pytest.mark.parametrize("stem", REAL_SINGLE_SESSION)
def test_real_indexes_single_session(stem):
    log, base, index, timeindex = _real(stem)
    assert index_segment(log, base) == (index, timeindex)


@pytest.mark.parametrize("stem", sorted(REAL_RESTARTED))
def test_real_indexes_with_restarts(stem):
    log, base, index, timeindex = _real(stem)
    assert index_segment(log, base) != (index, timeindex)  # one session cannot explain them
    restarts = set(REAL_RESTARTED[stem])
    appends: list = []
    for b in scan_entries(log, 0).batches:
        appends.append(b)
        if b.last_offset in restarts:
            appends.append(CLOSE)
    assert build_indexes(appends, base) == (index, timeindex)


def test_every_real_index_is_accounted_for():
    if not REALDATA.is_dir():
        pytest.skip("no real data")
    found = {str(p.relative_to(REALDATA).with_suffix("")) for p in REALDATA.rglob("*.index")}
    assert found == set(REAL_SINGLE_SESSION) | set(REAL_RESTARTED)
