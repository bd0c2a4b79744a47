"""Companion files: readers (kseg.companions.read) and checks against the log (kseg.companions.check).

Real files come from /work/shared/realdata (read-only; expected values from its
SOURCES.md); synthetic index bytes are packed with the layouts in kseg.layouts,
one vector per rule.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st
from conftest import examples

from kseg.companions.read import (
    AbortedTxn,
    EpochEntry,
    OffsetIndexEntry,
    ProducerEntry,
    TimeIndexEntry,
    decrement_sequence,
    index_slots,
    parse_leader_epoch_checkpoint,
    parse_offset_index,
    parse_partition_metadata,
    parse_producer_snapshot,
    parse_time_index,
    parse_txn_index,
    read_leader_epoch_checkpoint,
    read_offset_index,
    read_partition_metadata,
    read_producer_snapshot,
    read_time_index,
    read_txn_index,
)
from kseg.errors import DataError, IndexFileError, InputError, KsegError, TruncatedError
from kseg.findings import Finding
from kseg.companions.check import (
    BatchSummary,
    check_producer_snapshot,
    check_segment_companions,
    check_standalone,
    companion_paths,
    control_type_of,
    index_sanity_problem,
    offset_index_findings,
    producer_snapshot_findings,
    summarize_batches,
    time_index_findings,
    txn_index_findings,
)
from kseg.layouts import (
    ABORTED_TXN_ENTRY,
    BATCH_V2_HEADER,
    OFFSET_INDEX_ENTRY,
    SNAPSHOT_ENTRY,
    SNAPSHOT_HEADER,
    TIME_INDEX_ENTRY,
)
from kseg.log.segment import Segment

from conftest import REALDATA as REAL  # noqa: E402
LDI = REAL / "LDI-POC/__consumer_offsets-6"
EXPERTS = REAL / "Experts-in-team-innovation"

needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="real data not available")


# --------------------------------------------------------------------------- helpers


def pack_offset_index(entries, base=0) -> bytes:
    return b"".join(OFFSET_INDEX_ENTRY.struct.pack(o - base, p) for o, p in entries)


def pack_time_index(entries, base=0) -> bytes:
    return b"".join(TIME_INDEX_ENTRY.struct.pack(t, o - base) for t, o in entries)


def pack_txn(entries) -> bytes:
    return b"".join(ABORTED_TXN_ENTRY.struct.pack(*e) for e in entries)


def pack_snapshot(entries, *, version=1, crc=None, count=None) -> bytes:
    n = len(entries) if count is None else count
    rows = b"".join(SNAPSHOT_ENTRY.struct.pack(*e) for e in entries)
    stored = crc32c(struct.pack(">i", n) + rows) if crc is None else crc  # CRC covers bytes [6, end)
    return SNAPSHOT_HEADER.struct.pack(version, stored, n) + rows


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def notes(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "note"]


def only_error(findings: list[Finding], text: str) -> Finding:
    errs = errors(findings)
    assert len(errs) == 1, errs
    assert text in errs[0].message, errs[0]
    return errs[0]


def control_batch(offset: int, control_type: int, *, producer_id: int = 7, ts: int = 1000) -> bytes:
    """A v2 control batch with one marker record, packed by hand (spec §3.1, §3.3, §3.4)."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, 5)  # EndTxnMarker: version 0, coordinator epoch 5
    body = b"\x00\x00\x00" + bytes([len(key) * 2]) + key + bytes([len(value) * 2]) + value + b"\x00"
    record = bytes([len(body) * 2]) + body
    attrs = 0x10 | 0x20  # transactional | control
    header = bytearray(BATCH_V2_HEADER.struct.pack(
        offset, 49 + len(record), 0, 2, 0, attrs, 0, ts, ts, producer_id, 0, -1, 1,
    ))
    batch = header + record
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


# (path, entry count, first entry, last entry) from SOURCES.md
REAL_OFFSET_INDEXES = [
    ("LDI-POC/__consumer_offsets-6/00000000000000000000.index", 2, (3, 4730), (7, 9571)),
    ("Experts-in-team-innovation/kafka/data/__cluster_metadata-0/00000000000000000000.index",
     113, (56, 4101), (6747, 471859)),
    ("Experts-in-team-innovation/kafka_logs/__cluster_metadata-0/00000000000000000000.index",
     67, (57, 4168), (3819, 275118)),
    ("Experts-in-team-innovation/kafka/data/first-0/00000000000000000000.index", 0, None, None),
]
REAL_TIME_INDEXES = [
    ("LDI-POC/__consumer_offsets-6/00000000000000000000.timeindex", 3,
     (1769791783399, 3), (1769793578176, 12)),
    ("Experts-in-team-innovation/kafka/data/__cluster_metadata-0/00000000000000000000.timeindex",
     115, (1728488924323, 56), (1728493059855, 6813)),
    ("Experts-in-team-innovation/kafka_logs/__cluster_metadata-0/00000000000000000000.timeindex",
     68, (1728480972983, 57), (1728482882097, 3846)),
    ("Experts-in-team-innovation/kafka/data/__consumer_offsets-0/00000000000000000000.timeindex",
     4, (1728489600750, 2), (1728493043315, 36)),
    ("Experts-in-team-innovation/kafka/data/sensor-data-topic-0/00000000000000000000.timeindex",
     3, (1728489866968, 3), (1728493031796, 34)),
    ("project_data_enginnering/data/kafka/__consumer_offsets-11/00000000000000000001.timeindex",
     1, (1625619544680, 8), (1625619544680, 8)),
]


# --------------------------------------------------------------------------- real files: readers


@needs_real
@pytest.mark.parametrize("rel,count,first,last", REAL_OFFSET_INDEXES)
def test_real_offset_index(rel, count, first, last):
    idx = read_offset_index(REAL / rel)
    assert len(idx.entries) == count
    assert (idx.zero_tail, idx.partial_bytes) == (0, 0)
    if count:
        assert idx.entries[0] == OffsetIndexEntry(*first)
        assert idx.entries[-1] == OffsetIndexEntry(*last)


@needs_real
def test_real_offset_index_second_entry():
    idx = read_offset_index(LDI / "00000000000000000000.index")
    assert idx.entries == (OffsetIndexEntry(3, 4730), OffsetIndexEntry(7, 9571))


@needs_real
@pytest.mark.parametrize("rel,count,first,last", REAL_TIME_INDEXES)
def test_real_time_index(rel, count, first, last):
    idx = read_time_index(REAL / rel)
    assert len(idx.entries) == count
    assert (idx.zero_tail, idx.partial_bytes) == (0, 0)
    assert idx.entries[0] == TimeIndexEntry(*first)
    assert idx.entries[-1] == TimeIndexEntry(*last)


@needs_real
def test_time_index_base_offset_from_name():
    # base 1: entry (ts, relative 7) is absolute offset 8
    idx = read_time_index(REAL / REAL_TIME_INDEXES[-1][0])
    assert idx.base_offset == 1
    assert idx.entries[0].offset == 8


REAL_SNAPSHOTS = sorted(REAL.rglob("*.snapshot")) if REAL.is_dir() else []


@needs_real
def test_real_snapshots_parse_with_valid_crc():
    assert len(REAL_SNAPSHOTS) > 50
    empty = 0
    for p in REAL_SNAPSHOTS:
        snap = read_producer_snapshot(p)
        assert snap.version == 1
        assert snap.crc_valid, p
        assert len(snap.entries) == (p.stat().st_size - 10) // 46
        empty += p.stat().st_size == 10
        assert check_producer_snapshot(p) == [], p
    assert empty > 40


@needs_real
def test_real_ldi_snapshot_is_empty():
    snap = read_producer_snapshot(LDI / "00000000000000000013.snapshot")
    assert (snap.version, snap.entries, snap.crc_valid) == (1, (), True)
    assert snap.crc == 0x48674BC7


@needs_real
def test_real_snapshot_with_producers():
    snap = read_producer_snapshot(EXPERTS / "kafka/data/sensor-data-topic-0/00000000000000000035.snapshot")
    assert snap.crc_valid
    assert [e.producer_id for e in snap.entries] == [2000, 3000, 1001]
    first = snap.entries[0]
    assert first == ProducerEntry(2000, 0, 29, 33, 0, 1728492413708, -1, -1)
    assert first.first_sequence == 29
    assert first.has_batch_metadata and not first.has_open_transaction


@needs_real
def test_real_leader_epoch_checkpoint():
    version, entries = read_leader_epoch_checkpoint(EXPERTS / "kafka/data/__cluster_metadata-0/leader-epoch-checkpoint")
    assert version == 0
    assert entries == [(1, 0), (2, 1020), (3, 1551), (4, 2223), (5, 6437)]
    assert entries[0] == EpochEntry(epoch=1, start_offset=0)


@needs_real
def test_all_real_leader_epoch_checkpoints():
    paths = sorted(REAL.rglob("leader-epoch-checkpoint"))
    assert len(paths) > 20
    for p in paths:
        version, entries = read_leader_epoch_checkpoint(p)
        assert version == 0 and entries, p
        assert check_standalone(p) == [], p


# --------------------------------------------------------------------------- real files: checks


def _summaries(log: Path):
    seg = Segment(log)
    summaries, controls = summarize_batches(seg.batches())
    assert seg.tail is None
    return summaries, controls, seg.size


REAL_LOGS_WITH_INDEXES = sorted(
    {p.with_suffix(".log") for p in REAL.rglob("*.timeindex")} if REAL.is_dir() else []
)


@needs_real
@pytest.mark.parametrize("log", REAL_LOGS_WITH_INDEXES, ids=lambda p: str(p.relative_to(REAL)))
def test_real_indexes_check_clean_against_their_log(log):
    summaries, controls, size = _summaries(log)
    findings = check_segment_companions(log, summaries, controls, size)
    assert errors(findings) == []
    # and the same without summaries: the check reads the log itself
    assert check_segment_companions(log) == findings


@needs_real
def test_real_check_is_not_vacuous():
    """Move one real index entry by one byte: the check must see it."""
    log = LDI / "00000000000000000000.log"
    summaries, _, size = _summaries(log)
    batches = [(s.position, s.first_offset, s.last_offset) for s in summaries]
    good = (LDI / "00000000000000000000.index").read_bytes()
    assert offset_index_findings(good, "x.index", 0, batches, size) == []
    bad = pack_offset_index([(3, 4731), (7, 9571)])
    only_error(offset_index_findings(bad, "x.index", 0, batches, size), "not the start of a batch")
    tbatches = [(s.position, s.last_offset, s.max_timestamp) for s in summaries]
    tgood = (LDI / "00000000000000000000.timeindex").read_bytes()
    assert time_index_findings(tgood, "x.timeindex", 0, tbatches) == []
    tbad = pack_time_index([(1769791783399, 3), (1769792518094, 7), (1769793578176, 12)])
    only_error(time_index_findings(tbad, "x.timeindex", 0, tbatches), "timestamp mismatch")


@needs_real
def test_check_segment_companions_on_a_copy(tmp_path):
    for name in ("00000000000000000000.log", "00000000000000000000.index", "00000000000000000000.timeindex"):
        shutil.copy(LDI / name, tmp_path / name)
    log = tmp_path / "00000000000000000000.log"
    assert check_segment_companions(log) == []
    (tmp_path / "00000000000000000000.index").write_bytes(pack_offset_index([(3, 4730), (7, 99999)]))
    f = only_error(check_segment_companions(log), "past the end of the log")
    assert f.position == 8 and f.file.endswith(".index")
    # missing companions are fine
    (tmp_path / "00000000000000000000.index").unlink()
    (tmp_path / "00000000000000000000.timeindex").unlink()
    assert check_segment_companions(log) == []


def test_companion_paths_keep_transient_suffix(tmp_path):
    paths = companion_paths(tmp_path / "00000000000000000042.log.deleted")
    assert paths[".index"].name == "00000000000000000042.index.deleted"
    assert paths[".txnindex"].name == "00000000000000000042.txnindex.deleted"
    assert companion_paths(tmp_path / "bootstrap.checkpoint") == {}


@needs_real
def test_control_type_of_real_kraft_batches():
    seg = Segment(EXPERTS / "kafka/data/bootstrap.checkpoint")
    types = [control_type_of(b) for b in seg.batches() if b.is_control]
    assert types == [3, 4]  # SNAPSHOT_HEADER, SNAPSHOT_FOOTER


# --------------------------------------------------------------------------- parsers: synthetic


def test_offset_index_zero_tail_and_partial():
    data = pack_offset_index([(103, 0), (110, 4200)], base=100) + bytes(8 * 5) + b"\x01\x02\x03"
    idx = parse_offset_index(data, 100)
    assert idx.entries == (OffsetIndexEntry(103, 0), OffsetIndexEntry(110, 4200))
    assert (idx.zero_tail, idx.tail_is_zero, idx.partial_bytes, idx.slots) == (5, True, 3, 7)
    assert idx.tail_position == 16


def test_offset_index_first_entry_at_base_is_kept():
    # Kafka's stop rule applies only to slots after the first
    idx = parse_offset_index(pack_offset_index([(100, 0), (100, 0)], base=100), 100)
    assert idx.entries == (OffsetIndexEntry(100, 0),)
    assert idx.zero_tail == 1


def test_time_index_zero_tail_rule_is_offset_only():
    data = pack_time_index([(5000, 1), (6000, 0), (0, 0)])
    idx = parse_time_index(data, 0)
    assert idx.entries == (TimeIndexEntry(5000, 1),)
    assert idx.zero_tail == 2 and not idx.tail_is_zero


def test_txn_index_parse_and_partial():
    rows = [(0, 7, 10, 20, 10), (0, 8, 15, 30, 21)]
    idx = parse_txn_index(pack_txn(rows) + b"\x00" * 5, 0)
    assert idx.entries == tuple(AbortedTxn(*r) for r in rows)
    assert idx.partial_bytes == 5


def test_txn_index_bad_version_position():
    data = pack_txn([(0, 7, 10, 20, 10), (1, 8, 15, 30, 21)])
    with pytest.raises(IndexFileError) as ei:
        parse_txn_index(data, 0)
    assert ei.value.position == 34 and ei.value.found == 1


def test_read_txn_index_locates_errors(tmp_path):
    p = tmp_path / "00000000000000000000.txnindex"
    p.write_bytes(pack_txn([(2, 7, 10, 20, 10)]))
    with pytest.raises(IndexFileError) as ei:
        read_txn_index(p)
    assert ei.value.file == str(p) and ei.value.position == 0


SNAP_ROW = (42, 3, 9, 120, 4, 1700000000000, 2, -1)


def test_snapshot_roundtrip_and_first_sequence():
    snap = parse_producer_snapshot(pack_snapshot([SNAP_ROW]))
    assert snap.crc_valid and snap.entries == (ProducerEntry(*SNAP_ROW),)
    assert snap.entries[0].first_sequence == 5


@pytest.mark.parametrize("last,delta,first", [(9, 4, 5), (2, 5, 0x7FFFFFFF - 2), (0, 0, 0), (0, 1, 0x7FFFFFFF)])
def test_decrement_sequence_wraps(last, delta, first):
    # vectors from DefaultRecordBatch.decrementSequence: below 0 wraps to int32 max
    assert decrement_sequence(last, delta) == first


def test_snapshot_bad_crc_is_reported_not_raised():
    data = pack_snapshot([SNAP_ROW], crc=0x12345678)
    snap = parse_producer_snapshot(data)
    assert not snap.crc_valid and snap.computed_crc == crc32c(data[6:])
    f = only_error(producer_snapshot_findings(data, "x.snapshot"), "crc mismatch")
    assert f.position == 2


def test_snapshot_structure_errors():
    with pytest.raises(TruncatedError) as ei:
        parse_producer_snapshot(b"\x00\x01\x00")
    assert ei.value.position == 0
    with pytest.raises(IndexFileError) as ei:
        parse_producer_snapshot(pack_snapshot([], version=2))
    assert ei.value.found == 2
    with pytest.raises(TruncatedError) as ei:  # says 2 entries, holds 1
        parse_producer_snapshot(pack_snapshot([SNAP_ROW], count=2))
    assert ei.value.position == 56
    with pytest.raises(IndexFileError) as ei:  # says 0 entries, holds 1
        parse_producer_snapshot(pack_snapshot([SNAP_ROW], count=0))
    assert ei.value.position == 10
    with pytest.raises(IndexFileError):
        parse_producer_snapshot(pack_snapshot([], count=-1))


@needs_real
def test_real_snapshot_cut_at_every_length_and_with_junk():
    data = (EXPERTS / "kafka/data/sensor-data-topic-0/00000000000000000035.snapshot").read_bytes()
    assert len(parse_producer_snapshot(data).entries) == 3
    for n in range(len(data)):
        with pytest.raises((TruncatedError, IndexFileError)):
            parse_producer_snapshot(data[:n])
    with pytest.raises(IndexFileError) as ei:
        parse_producer_snapshot(data + b"junk")
    assert ei.value.position == len(data)


def test_snapshot_findings_duplicates_and_end_offset():
    data = pack_snapshot([SNAP_ROW, SNAP_ROW])
    only_error(producer_snapshot_findings(data, "x"), "appears twice")
    only_error(producer_snapshot_findings(pack_snapshot([SNAP_ROW]), "x", end_offset=120), "not below")
    assert producer_snapshot_findings(pack_snapshot([SNAP_ROW]), "x", end_offset=121) == []


# --------------------------------------------------------------------------- text files


def test_leader_epoch_checkpoint_forms():
    assert parse_leader_epoch_checkpoint(b"") == (None, [])
    assert parse_leader_epoch_checkpoint(b"0\r\n2\r\n0 0\r\n4 3\r\n") == (0, [(0, 0), (4, 3)])
    assert parse_leader_epoch_checkpoint("0\n1\n7\t 12") == (0, [(7, 12)])


@pytest.mark.parametrize("text,line", [
    ("1\n0\n", "line 1"),  # version
    ("0\n", "line 2"),  # no count
    ("0\n2\n0 0\n", "line 4"),  # fewer entries
    ("0\n1\n0 0\n1 5\n", "line 4"),  # more lines
    ("0\n1\n0 x\n", "line 3"),
    ("0\n1\n 0 0\n", "line 3"),  # leading space: Java's split gives 3 parts
    ("0\n1\n0 0 0\n", "line 3"),
    ("0\n1\n0 99999999999999999999\n", "line 3"),  # start offset past int64
    ("0\n1\n٣ 0\n", "line 3"),  # not an ASCII digit
])
def test_leader_epoch_checkpoint_errors_name_the_line(text, line):
    with pytest.raises(DataError) as ei:
        parse_leader_epoch_checkpoint(text)
    assert ei.value.where == line


def test_leader_epoch_checkpoint_order_is_checked(tmp_path):
    p = tmp_path / "leader-epoch-checkpoint"
    p.write_text("0\n2\n4 10\n3 12\n")
    (f,) = check_standalone(p)
    assert f.severity == "error" and "line 4" in f.message


TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # UUID 00..01


def test_partition_metadata():
    assert parse_partition_metadata(f"version: 0\ntopic_id: {TOPIC_ID}".encode()) == (0, TOPIC_ID)
    assert parse_partition_metadata(f"version: 0\ntopic_id: {TOPIC_ID}\n").topic_id == TOPIC_ID


@pytest.mark.parametrize("text,where", [
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "line 2"),  # all-zero uuid
    ("version: -1\ntopic_id: " + TOPIC_ID, "line 1"),
    ("version:0\ntopic_id: " + TOPIC_ID, "line 1"),
    ("version: 0\n", "line 2"),
    ("version: 0\ntopic: " + TOPIC_ID, "line 2"),
    ("version: 0\ntopic_id: abc", "line 2"),
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAR", "line 2"),  # not canonical (stray low bits)
    ("version: 0\ntopic_id: " + TOPIC_ID + "\nmore", "line 3"),
])
def test_partition_metadata_errors(text, where):
    with pytest.raises(DataError) as ei:
        parse_partition_metadata(text)
    assert ei.value.where == where


def test_text_readers_on_files(tmp_path):
    p = tmp_path / "partition.metadata"
    p.write_bytes(f"version: 0\ntopic_id: {TOPIC_ID}".encode())
    assert read_partition_metadata(p).version == 0
    assert check_standalone(p) == []
    p.write_bytes(b"\xff\xfe")
    with pytest.raises(DataError) as ei:
        read_partition_metadata(p)
    assert ei.value.file == str(p) and ei.value.position == 0


# --------------------------------------------------------------------------- file shells


@pytest.mark.parametrize("reader", [read_offset_index, read_time_index, read_txn_index, read_producer_snapshot,
                                    read_leader_epoch_checkpoint, read_partition_metadata])
def test_missing_file_is_input_error(tmp_path, reader):
    p = tmp_path / "00000000000000000000.nothing"
    with pytest.raises(InputError) as ei:
        reader(p)
    assert ei.value.file == str(p)


def test_index_name_without_base_offset(tmp_path):
    p = tmp_path / "foo.index"
    p.write_bytes(b"")
    with pytest.raises(InputError):
        read_offset_index(p)
    assert read_offset_index(p, base_offset=5).base_offset == 5
    assert errors(check_standalone(p))


# --------------------------------------------------------------------------- .index rules

# A log of 4 batches: (position, first offset, last offset); 400 bytes long.
LOG = [(0, 100, 104), (100, 105, 109), (200, 110, 114), (300, 115, 119)]
LOG_SIZE = 400


def check_index(entries, batches=LOG, base=100, extra=b""):
    return offset_index_findings(pack_offset_index(entries, base) + extra, "x.index", base, batches, LOG_SIZE)


def test_offset_index_good():
    assert check_index([(109, 100), (119, 300)]) == []
    assert check_index([]) == []


def test_offset_index_multi_batch_append_is_not_an_error():
    # One append of batches 1-3 (positions 100..300): entry = (last offset of the chunk, start of
    # its first batch). kafka-dump-log reports a mismatch here; the broker is fine with it.
    assert check_index([(119, 100)]) == []


def test_offset_index_position_past_end():
    f = only_error(check_index([(109, 100), (119, 400)]), "past the end of the log")
    assert (f.position, f.found) == (8, 400)


def test_offset_index_position_not_a_batch_start():
    f = only_error(check_index([(109, 150)]), "not the start of a batch")
    assert f.position == 0 and f.found == 150 and "100, 200" in f.expected


def test_offset_index_earlier_batch_holds_the_offset():
    # entry says offset 107 starts at 200, but batch at 100 holds 105..109 (and the batch at 200
    # starts at 110, past the entry's offset: in an ordered log both rules fire)
    findings = errors(check_index([(107, 200)]))
    assert [f.found for f in findings if "a batch before position 200" in f.message] == [109]
    assert [f.found for f in findings if "starts after the indexed offset" in f.message] == [110]
    # in a log whose batches overlap, the first rule alone catches it
    overlapping = [(0, 100, 104), (100, 105, 112), (200, 106, 114)]
    f = only_error(check_index([(107, 200)], batches=overlapping), "a batch before position 200")
    assert f.found == 112 and f.position == 0


def test_offset_index_batch_at_position_starts_after_offset():
    batches = [(0, 100, 104), (100, 110, 114)]  # offsets 105..109 are gone (compaction hole)
    f = only_error(check_index([(107, 100)], batches=batches), "starts after the indexed offset")
    assert f.found == 110
    # an unknown first offset (legacy wrapper, not decompressed) is not judged
    assert check_index([(107, 100)], batches=[(0, 100, 104), (100, None, 114)]) == []


def test_offset_index_order():
    findings = errors(check_index([(119, 300), (109, 100)]))
    assert {f.message for f in findings} >= {"offsets do not increase", "positions do not increase"}
    assert all(f.position == 8 for f in findings if "increase" in f.message)


def test_offset_index_negative_relative_offset():
    findings = check_index([(99, 0)], batches=None)
    f = only_error(findings, "negative relative offset")
    assert f.found == -1


def test_offset_index_partial_length():
    f = only_error(check_index([(109, 100)], extra=b"\x00\x00\x00"), "not a multiple of 8")
    assert f.position == 8 and f.found == 11


def test_offset_index_zero_tail_is_a_note_only():
    findings = check_index([(109, 100), (119, 300)], extra=bytes(8 * 3))
    assert errors(findings) == []
    (n,) = notes(findings)
    assert "3 preallocated zero entries" in n.message and n.position == 16


def test_offset_index_nonzero_tail_is_an_error():
    extra = OFFSET_INDEX_ENTRY.struct.pack(0, 0) + OFFSET_INDEX_ENTRY.struct.pack(19, 300)
    f = only_error(check_index([(109, 100)], extra=extra), "not all zero")
    assert f.position == 8


def test_offset_index_standalone_skips_log_rules():
    assert offset_index_findings(pack_offset_index([(109, 150)], 100), "x", 100) == []


# --------------------------------------------------------------------------- .timeindex rules

# (position, last offset, max timestamp)
TLOG = [(0, 104, 1000), (100, 109, 1500), (200, 114, 1400), (300, 119, 2000)]


def check_time(entries, batches=TLOG, base=100, extra=b""):
    return time_index_findings(pack_time_index(entries, base) + extra, "x.timeindex", base, batches)


def test_time_index_good():
    assert check_time([(1000, 104), (1500, 109), (2000, 119)]) == []


def test_time_index_out_of_order_timestamps():
    f = only_error(check_time([(1500, 109), (1500, 109)], batches=None), "timestamps do not increase")
    assert f.position == 12
    findings = errors(check_time([(2000, 119), (1500, 109)], batches=None))
    assert {f.message.split(" (")[0] for f in findings} == {
        "timestamps do not increase", "offsets decrease", "last timestamp is below the first"}


def test_time_index_offset_not_found():
    f = only_error(check_time([(1500, 107)]), "not found in the log")
    assert f.expected == 107 and "109" in f.found


def test_time_index_timestamp_mismatch():
    f = only_error(check_time([(1600, 109)]), "timestamp mismatch")
    assert f.found == 1600 and f.expected.startswith("1500")


def test_time_index_earlier_batch_has_larger_timestamp():
    f = only_error(check_time([(1400, 114)]), "larger timestamp")
    assert f.found == 1500


def test_time_index_zero_tail_note_and_kafka_sanity_note():
    findings = check_time([(1000, 104), (1500, 109)], extra=bytes(12 * 4))
    assert errors(findings) == []
    texts = [f.message for f in notes(findings)]
    assert any("4 preallocated zero entries" in t for t in texts)
    assert any("index-sanity-check would fail" in t for t in texts)


# (position, last offset, max timestamp, first offset): what kseg.verify hands the check
TLOG_FIRST = [(0, 104, 1000, 100), (100, 109, 1500, 105), (200, 114, 1400, 110), (300, 119, 2000, 115)]


@pytest.mark.parametrize("entry,batches,error", [
    # Kafka 2.8-3.6: the offset of the first record holding the batch's largest timestamp
    ((1500, 107), TLOG_FIRST, None),
    ((1500, 105), TLOG_FIRST, None),
    ((2000, 115), TLOG_FIRST, None),
    # inside a batch, but that batch's largest timestamp is another
    ((1600, 107), TLOG_FIRST, "timestamp mismatch"),
    # inside a batch while an earlier batch has a larger timestamp
    ((1400, 112), TLOG_FIRST, "larger timestamp"),
    # past the log
    ((3000, 125), TLOG_FIRST, "not found in the log"),
    # the batch's first offset unknown (a compressed legacy wrapper): only its last offset is known to be in it
    ((1500, 107), [(p, last, ts, None) for p, last, ts, _ in TLOG_FIRST], "not found in the log"),
    ((1500, 107), TLOG, "not found in the log"),
])
def test_time_index_entry_inside_a_batch(entry, batches, error):
    findings = check_time([entry], batches=batches)
    if error is None:
        assert errors(findings) == []
    else:
        only_error(findings, error)


@pytest.mark.parametrize("kind,slots,batches,empty", [
    # a segment being written, no entry yet: slot 0 is preallocated space, not an entry
    ("index", 128, None, True),
    ("index", 1, None, True),
    ("timeindex", 85, None, True),
    ("timeindex", 85, [(0, 102, 1000, 100)], True),
    # a time-index entry (0, base offset) is possible where the batch holding the base offset has timestamp 0
    ("timeindex", 85, [(0, 102, 0, 100)], False),
])
def test_zero_first_slot_is_empty_space(kind, slots, batches, empty):
    size = 8 if kind == "index" else 12
    data = bytes(size * slots)
    if kind == "index":
        findings = offset_index_findings(data, "x.index", 100, None if batches is None else [(0, 100, 102)], 4096)
    else:
        findings = time_index_findings(data, "x.timeindex", 100, batches)
    assert errors(findings) == [], findings
    zero_note = [f for f in notes(findings) if "preallocated zero" in f.message]
    if empty:
        assert len(zero_note) == 1 and zero_note[0].position == 0
        assert f"{slots} preallocated zero entr" in zero_note[0].message
    else:
        assert all(f.position != 0 for f in zero_note)


def test_zero_first_slot_of_a_rolled_index_file_is_an_error_against_its_log():
    """Only a lone zero slot is empty space: an entry (base offset, 0) followed by entries is read as one."""
    data = pack_offset_index([(100, 0), (104, 100)], base=100)
    assert errors(offset_index_findings(data, "x.index", 100, [(0, 100, 103), (100, 104, 109)], 200)) == []
    only_error(offset_index_findings(data, "x.index", 100, [(0, 101, 103), (100, 104, 109)], 200),
               "starts after the indexed offset")


@pytest.mark.parametrize("kind,entries,tail,problem", [
    # Kafka's last entry is the last whole slot: a zero tail makes a time index's last timestamp 0
    ("timeindex", [(1000, 104)], 4, "the last timestamp 0 is below the first 1000"),
    ("timeindex", [(1000, 104), (1500, 109)], 0, None),
    ("timeindex", [(1500, 104), (1000, 109)], 0, "the last timestamp 1000 is below the first 1500"),
    ("timeindex", [], 3, None),  # all zero: last timestamp 0, first 0
    # ... and an offset index's last offset the base offset, which passes
    ("index", [(104, 100)], 4, None),
    ("index", [(99, 100)], 0, "the last offset 99 is below the base offset 100"),
])
def test_index_sanity_check_reads_the_last_slot(kind, entries, tail, problem):
    size = 8 if kind == "index" else 12
    data = (pack_offset_index(entries, 100) if kind == "index" else pack_time_index(entries, 100)) + bytes(size * tail)
    assert index_sanity_problem(index_slots(data, kind, 100), kind) == problem
    assert index_sanity_problem(index_slots(data, kind, 100).index_file(), kind) == problem


def test_time_index_partial_length():
    f = only_error(check_time([(1000, 104)], extra=b"\x00" * 5), "not a multiple of 12")
    assert f.position == 12


# --------------------------------------------------------------------------- .txnindex rules

CONTROLS = [(120, 0), (130, 1), (140, None), (150, 0)]  # ABORT, COMMIT, undecodable, ABORT


def check_txn(rows, controls=CONTROLS, base=100, extra=b""):
    return txn_index_findings(pack_txn(rows) + extra, "x.txnindex", base, controls)


def test_txn_index_good():
    assert check_txn([(0, 7, 110, 120, 110), (0, 8, 90, 150, 121)]) == []


def test_txn_entry_without_abort_marker():
    f = only_error(check_txn([(0, 7, 110, 125, 110)]), "no ABORT marker at offset 125")
    assert f.position == 0


def test_txn_entry_on_a_commit_marker():
    f = only_error(check_txn([(0, 7, 110, 120, 110), (0, 7, 121, 130, 121)]), "not an ABORT marker")
    assert f.position == 34 and f.found == "COMMIT"


def test_txn_entry_on_undecodable_control_is_a_note():
    findings = check_txn([(0, 7, 110, 140, 110)])
    assert errors(findings) == [] and len(notes(findings)) == 1


def test_txn_structure_rules():
    findings = errors(check_txn([(0, 7, 110, 150, 110), (1, 7, 160, 120, 110), (0, 7, 10, 99, 10)],
                                controls=None))
    messages = " | ".join(f.message for f in findings)
    for text in ("unknown entry version", "first offset after the last", "last offsets do not increase",
                 "below the segment's base offset"):
        assert text in messages


def test_txn_partial_entry_is_a_note():
    findings = check_txn([(0, 7, 110, 120, 110)], extra=b"\x00" * 10)
    assert errors(findings) == []
    (n,) = notes(findings)
    assert n.position == 34


def test_txn_end_to_end_with_a_real_abort_marker(tmp_path):
    log = tmp_path / "00000000000000000100.log"
    log.write_bytes(control_batch(100, 0) + control_batch(101, 1))
    seg = Segment(log)
    assert [control_type_of(b) for b in seg.batches()] == [0, 1]
    txn = tmp_path / "00000000000000000100.txnindex"
    txn.write_bytes(pack_txn([(0, 7, 90, 100, 90)]))
    assert check_segment_companions(log) == []
    txn.write_bytes(pack_txn([(0, 7, 90, 100, 90), (0, 7, 95, 101, 95)]))
    f = only_error(check_segment_companions(log), "not an ABORT marker")
    assert f.file == str(txn) and f.position == 34


# --------------------------------------------------------------------------- summaries


@needs_real
def test_summarize_batches_matches_verify_tuple_order():
    summaries, controls = summarize_batches(Segment(LDI / "00000000000000000000.log").batches())
    assert summaries[3] == BatchSummary(4730, 3, 3, 1769791783399, 156)
    assert controls == []


# --------------------------------------------------------------------------- only kseg errors escape


PARSERS = [
    lambda b: parse_offset_index(b, 0),
    lambda b: parse_time_index(b, 10),
    lambda b: parse_txn_index(b, 0),
    parse_producer_snapshot,
    parse_leader_epoch_checkpoint,
    parse_partition_metadata,
]


@examples(300)
@given(data=st.binary(max_size=300), which=st.integers(0, len(PARSERS) - 1))
def test_random_bytes_raise_only_kseg_errors(data, which):
    try:
        PARSERS[which](data)
    except KsegError:
        pass


@examples(200)
@given(rows=st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(-(2**15), 2**15 - 1),
                               st.integers(-(2**31), 2**31 - 1)), max_size=4),
       cut=st.integers(0, 200), junk=st.binary(max_size=8))
def test_snapshot_mutations_raise_only_kseg_errors(rows, cut, junk):
    data = pack_snapshot([(p, e, s, p, s, p, s, p) for p, e, s in rows])
    for candidate in (data, data[:cut], data + junk):
        try:
            snap = parse_producer_snapshot(candidate)
        except KsegError:
            continue
        assert snap.version == 1


@examples(200)
@given(data=st.binary(max_size=200), base=st.integers(0, 2**40))
def test_checks_never_raise(data, base):
    log = [(0, base, base + 3), (100, base + 4, base + 9)]
    offset_index_findings(data, "x", base, log, 200)
    time_index_findings(data, "x", base, [(0, base + 3, 5), (100, base + 9, 7)])
    txn_index_findings(data, "x", base, [(base + 3, 0)])
    producer_snapshot_findings(data, "x", base)


@examples(200)
@given(text=st.text(alphabet="0123456789 -+\n\r\t:abc_", max_size=60))
def test_text_parsers_raise_only_data_errors(text):
    for parse in (parse_leader_epoch_checkpoint, parse_partition_metadata):
        try:
            parse(text)
        except DataError:
            pass


# --------------------------------------------------------------------------- index files without an object per entry


def _index_files() -> list[Path]:
    roots = [Path(__file__).parent.parent / "fixtures", Path(__file__).parent.parent.parent / "shared" / "realdata"]
    return sorted(p for r in roots if r.exists() for p in r.rglob("*") if p.suffix in (".index", ".timeindex"))


def _same_as_parsed(data: bytes, kind: str, base: int) -> None:
    from kseg.companions.read import index_slots, parse_offset_index, parse_time_index

    full = (parse_offset_index if kind == "index" else parse_time_index)(data, base)
    slots = index_slots(data, kind, base)
    assert tuple(slots.rows()) == tuple(tuple(e) for e in full.entries)
    assert (slots.count, slots.zero_tail, slots.tail_is_zero, slots.partial_bytes, slots.slots) == \
        (len(full.entries), full.zero_tail, full.tail_is_zero, full.partial_bytes, full.slots)
    assert slots.index_file() == full
    assert list(slots.rows(1, 3)) == [tuple(e) for e in full.entries[1:3]]


def test_index_slots_read_the_real_files_as_the_parser_does() -> None:
    files = _index_files()
    assert len(files) > 50
    for path in files:
        _same_as_parsed(path.read_bytes(), "index" if path.suffix == ".index" else "timeindex", 7)


@given(st.sampled_from(["index", "timeindex"]), st.integers(0, 1 << 40),
       st.lists(st.tuples(st.integers(-(1 << 31), (1 << 31) - 1), st.integers(-(1 << 31), (1 << 31) - 1),
                          st.sampled_from([0, 0, 1, -1, 1 << 40])), max_size=12),
       st.binary(max_size=11))
def test_index_slots_agree_with_the_parser(kind, base, rows, tail) -> None:
    """Relative offsets of 0 anywhere (where Kafka's reader stops), zero tails with and without junk,
    partial slots."""
    if kind == "index":
        data = b"".join(struct.pack(">ii", rel % 3 and rel, pos) for rel, pos, _ in rows)
    else:
        data = b"".join(struct.pack(">qi", ts, rel % 3 and rel) for rel, _, ts in rows)
    _same_as_parsed(data + tail, kind, base)
    _same_as_parsed(data + bytes(len(tail)), kind, base)


def test_index_entries_are_a_sequence_of_dicts(tmp_path) -> None:
    from kseg.ops.companion_dump import dump_companion

    path = tmp_path / "00000000000000000100.index"
    path.write_bytes(struct.pack(">iiiiii", 0, 0, 5, 4100, 9, 8200) + bytes(16))
    ev = dump_companion(path, "index")
    want = [{"offset": 100, "position": 0}, {"offset": 105, "position": 4100}, {"offset": 109, "position": 8200}]
    assert list(ev.entries) == want and len(ev.entries) == 3 and ev.info == {"zero_tail": 2}
    assert ev.entries[-1] == want[-1] and ev.entries[1:] == want[1:]
    with pytest.raises(IndexError):
        ev.entries[3]


# --------------------------------------------------------------------------- kafka-dump-log.sh's index walk


def _segment_with_batches(tmp_path: Path, offsets: list[tuple[int, int, int]]) -> Path:
    """A .log of v2 batches (first offset, last offset, max timestamp) written with kseg's encoder."""
    from kseg.log.encode import build_v2_batch
    from kseg.model import make_record

    data = b""
    for first, last, ts in offsets:
        records = [make_record(o, ts - (last - o), None, b"v", [], magic=2) for o in range(first, last + 1)]
        data += build_v2_batch(records)
    log = tmp_path / "00000000000000000100.log"
    log.write_bytes(data)
    return log


def test_dump_index_findings_and_their_lines(tmp_path):
    from kseg.companions.check import dump_index_findings
    from kseg.render.companions import index_findings_lines

    log = _segment_with_batches(tmp_path, [(100, 104, 1000), (105, 109, 1500), (110, 114, 2000)])
    positions = [b.position for b in Segment(log).batches()]
    # .index: an append's largest offset at its first batch (healthy, but the tool compares with that
    # batch's last offset), listed twice to show the release's list (3.x) and map (4) semantics
    index = pack_offset_index([(109, positions[0]), (114, positions[1]), (109, positions[0])], base=100)
    found = dump_index_findings(index_slots(index, "index", 100), log)
    assert found.index_mismatches == [(109, 104), (114, 109), (109, 104)]
    timeindex = pack_time_index([(1500, 107), (1400, 109), (2000, 114), (2500, 120)], base=100)
    tfound = dump_index_findings(index_slots(timeindex, "timeindex", 100), log)
    assert tfound.not_found == [(107, 109), (120, -1)]
    assert tfound.timestamp_mismatches == [(1400, 1500)]
    assert tfound.out_of_order == [(1400, 1500)]
    path = "/d/00000000000000000100.index"
    assert index_findings_lines({path: found}, "3.9") == [
        f"Mismatches in :{path}", "  Index offset: 109, log offset: 104", "  Index offset: 114, log offset: 109",
        "  Index offset: 109, log offset: 104"]
    assert index_findings_lines({path: found}, "4") == [
        f"Mismatches in :{path}", "  Index offset: 114, log offset: 109", "  Index offset: 109, log offset: 104"]
    tpath = "/d/00000000000000000100.timeindex"
    assert index_findings_lines({tpath: tfound}, "3.9") == [
        f"Found timestamp mismatch in :{tpath}", "  Index timestamp: 1400, log timestamp: 1500",
        f"Found out of order timestamp in :{tpath}", "  Index timestamp: 1400, Previously indexed timestamp: 1500",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 107, found log offset: 109", "Indexed offset: 120, found log offset: -1"]
    assert index_findings_lines({tpath: tfound}, "4")[4] == f"The following indexed offsets are not found in :{tpath}"
    assert not dump_index_findings(index_slots(index, "index", 100), tmp_path / "missing.log")
