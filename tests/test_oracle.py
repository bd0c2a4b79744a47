"""kafka-python as an independent oracle for kseg, in both directions.

(a) kafka-python's builders write, kseg reads (public API, on a temp file):
    offsets, timestamps, keys, values, headers and CRC validity must match.
(b) kseg's encoders write, kafka-python's readers read: every record must
    come back identical and ``validate_crc()`` must be True.

Every magic x codec kafka-python allows is run (zstd with magic 2 only).
Every known difference from kafka-python, in one place:
* kafka-python writes a v0/v1 compressed wrapper with offset 0 and timestamp 0
  (the broker rewrites both, spec §2.3). Its inner offsets are the absolute
  offsets it was given. kseg, like Java, reads a v1 wrapper offset 0 as
  "absolute base 0", so it returns the offsets as written; kafka-python's own
  reader computes base = 0 - last inner offset and, that being negative,
  ignores it: the same offsets by another rule.
* kafka-python writes v2 batches with baseOffset 0 and absolute offsets as the
  offset deltas, partitionLeaderEpoch 0, and falls back to an uncompressed
  batch (codec 0) when compression does not shrink the records.
* kafka-python's builders cannot write LogAppendTime or control batches (the
  broker does): the tests stamp them in place as the broker does (attributes,
  maxTimestamp / wrapper timestamp, new CRC).
* v0 messages have no timestamp: kafka-python reports None, kseg -1.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st
from kafka.record import MemoryRecords, MemoryRecordsBuilder
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

import kseg
from kseg.log.control import control_info
from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.model import make_record

from conftest import INT32_MAX, examples, headers_st, keys_or_values, legacy_records, timestamps, v2_records

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
MAGIC_CODECS = [(m, c) for m in (0, 1, 2) for c in CODEC_NAMES if c != ZSTD or m == 2]
MC_IDS = [f"m{m}-{CODEC_NAMES[c]}" for m, c in MAGIC_CODECS]

ORACLE_SETTINGS = examples(15)

LOG_APPEND_TIME = 1_800_000_000_000


# --------------------------------------------------------------------------- helpers


def read_with_kseg(tmp_path: Path, data: bytes, name: str = "00000000000000000000.log"):
    """Write ``data`` as a segment and read it back through the public API."""
    path = tmp_path / name
    path.write_bytes(bytes(data))
    seg = kseg.open_segment(path)
    batches = list(seg.batches())
    assert seg.tail is None, seg.tail
    return batches, [r for b in batches for r in kseg.batch_records(b)]


def kp_batches(data: bytes):
    records = MemoryRecords(bytes(data))
    out = []
    while True:
        batch = records.next_batch()
        if batch is None:
            return out
        out.append(batch)


def kp_records(data: bytes):
    """kafka-python's view: (batch, crc ok, [records]) for every batch."""
    out = []
    for batch in kp_batches(data):
        ok = batch.validate_crc()  # must be called before iterating
        recs = list(batch)
        out.append((batch, ok, recs))
    return out


def kp_build(magic: int, codec: int, records, *, offset: int = 0, **producer) -> bytes:
    builder = MemoryRecordsBuilder(magic, codec, batch_size=1 << 24, offset=offset, **producer)
    for r in records:
        md = builder.append(r.timestamp if magic else None, r.key, r.value, list(r.headers) if magic == 2 else [])
        assert md is not None
    builder.close()
    return bytes(builder.buffer())


def headers_of(kp_record) -> tuple:
    return tuple((k, None if v is None else bytes(v)) for k, v in kp_record.headers)


def restamp_v2(data: bytes, *, attributes_or: int = 0, max_timestamp: int | None = None) -> bytes:
    """Change a v2 batch in place as the broker does, and recompute its CRC-32C."""
    buf = bytearray(data)
    (attrs,) = struct.unpack_from(">h", buf, 21)
    struct.pack_into(">h", buf, 21, attrs | attributes_or)
    if max_timestamp is not None:
        struct.pack_into(">q", buf, 35, max_timestamp)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def restamp_legacy_wrapper(data: bytes, *, offset: int, timestamp: int, log_append: bool) -> bytes:
    """Give a kafka-python v1 wrapper the offset/timestamp a broker would, with a new CRC-32."""
    buf = bytearray(data)
    struct.pack_into(">q", buf, 0, offset)
    if log_append:
        buf[17] |= 0x08
    struct.pack_into(">q", buf, 18, timestamp)
    struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])))
    return bytes(buf)


def compressible(n: int = 2000) -> bytes:
    return b"kseg-oracle " * (n // 12)


# --------------------------------------------------------------------------- (a) kafka-python writes, kseg reads


@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS, ids=MC_IDS)
@ORACLE_SETTINGS
@given(data=st.data())
def test_kseg_reads_kafka_python(tmp_path, magic, codec, data) -> None:
    if magic == 2:
        records = data.draw(v2_records(max_size=6))
    else:
        records = data.draw(legacy_records(magic=magic, max_size=6, consecutive=True))
    # kafka-python writes v2 offsets as deltas from baseOffset 0 (int32).
    first = records[0].offset if magic < 2 else records[0].offset % (1 << 30)
    # kafka-python assigns consecutive offsets from ``offset``; compaction gaps are not writable.
    records = [r._replace(offset=first + i) for i, r in enumerate(records)]
    raw = kp_build(magic, codec, records, offset=first)
    batches, got = read_with_kseg(tmp_path, raw)

    assert all(b.crc_valid for b in batches)
    assert all(ok for _, ok, _ in kp_records(raw))
    assert [r.offset for r in got] == [r.offset for r in records]
    assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in records]
    if magic == 0:
        assert all(r.timestamp == -1 for r in got)
        assert all(b.timestamp_type == -1 for b in batches)
    else:
        assert [r.timestamp for r in got] == [r.timestamp for r in records]
    if magic == 2:
        assert [tuple(map(tuple, r.headers)) for r in got] == [tuple(map(tuple, r.headers)) for r in records]
        (b,) = batches
        assert (b.offset, b.partition_leader_epoch, b.record_count) == (0, 0, len(records))
        assert b.last_offset == records[-1].offset
        assert b.timestamp == max(r.timestamp for r in records)
        assert b.base_timestamp == records[0].timestamp
    # The codec kseg reports is the one the attributes carry (kafka-python may
    # have fallen back to none), and kafka-python agrees.
    kp = kp_batches(raw)
    assert [b.codec for b in batches] == [k.compression_type for k in kp]
    assert {b.codec for b in batches} <= {NONE, codec}
    if codec and magic < 2:
        (wrapper,) = batches
        assert wrapper.is_compressed and (wrapper.offset, wrapper.timestamp) == (0, 0 if magic == 1 else -1)
        # kafka-python's reader drops its negative base (0 - last); kseg applies
        # Java's offset-0 rule: both give the offsets as written.
        kp_offsets = [r.offset for _, _, recs in kp_records(raw) for r in recs]
        assert kp_offsets == [r.offset for r in records]
    elif magic < 2:
        assert len(batches) == len(records)


@pytest.mark.parametrize(("magic", "codec"), [mc for mc in MAGIC_CODECS if mc[1]], ids=[
    i for i, mc in zip(MC_IDS, MAGIC_CODECS) if mc[1]])
def test_kafka_python_compressed_batch_really_is_compressed(tmp_path, magic, codec) -> None:
    records = [make_record(10 + i, 1_700_000_000_000 + i, b"k%d" % i, compressible(), magic=magic)
               for i in range(5)]
    raw = kp_build(magic, codec, records, offset=10)
    batches, got = read_with_kseg(tmp_path, raw)
    assert [b.codec for b in batches] == [codec]
    assert batches[0].size < sum(len(r.value) for r in records)
    assert [(r.offset, r.key, r.value) for r in got] == [(r.offset, r.key, r.value) for r in records]


@pytest.mark.parametrize("codec", list(CODEC_NAMES), ids=list(CODEC_NAMES.values()))
@ORACLE_SETTINGS
@given(records=v2_records(max_size=5), pid=st.integers(0, 2**63 - 1), epoch=st.integers(0, 2**15 - 1),
       seq=st.one_of(st.integers(0, 1000), st.integers(INT32_MAX - 5, INT32_MAX)), txn=st.booleans())
def test_kseg_reads_kafka_python_producer_fields(tmp_path, codec, records, pid, epoch, seq, txn) -> None:
    records = [r._replace(offset=i) for i, r in enumerate(records)]
    raw = kp_build(2, codec, records, transactional=txn, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    (b,), got = read_with_kseg(tmp_path, raw)
    (kb, ok, _), = kp_records(raw)
    assert ok and b.crc_valid
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (pid, epoch, seq)
    assert b.is_transactional is txn and not b.is_control
    # lastSequence wraps past int32 max back to 0 (spec §3.1), as kafka-python computes it.
    assert b.last_sequence == kb.last_sequence
    assert [r.offset for r in got] == list(range(len(records)))


@pytest.mark.parametrize("codec", list(CODEC_NAMES), ids=list(CODEC_NAMES.values()))
@ORACLE_SETTINGS
@given(records=v2_records(max_size=5))
def test_kseg_reads_kafka_python_log_append_time(tmp_path, codec, records) -> None:
    records = [r._replace(offset=i) for i, r in enumerate(records)]
    raw = restamp_v2(kp_build(2, codec, records), attributes_or=0x08, max_timestamp=LOG_APPEND_TIME)
    (b,), got = read_with_kseg(tmp_path, raw)
    (kb, ok, krecs), = kp_records(raw)
    assert ok and b.crc_valid and b.timestamp_type_name == "LogAppendTime" and kb.timestamp_type == 1
    assert [r.timestamp for r in got] == [LOG_APPEND_TIME] * len(records) == [r.timestamp for r in krecs]
    # the stored deltas are kept: kseg can still tell what the producer wrote
    assert [r.stored_timestamp for r in got] == [r.timestamp for r in records]


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4], ids=["gzip", "snappy", "lz4"])
@pytest.mark.parametrize("log_append", [False, True], ids=["CreateTime", "LogAppendTime"])
def test_kseg_reads_kafka_python_v1_wrapper_restamped_by_a_broker(tmp_path, codec, log_append) -> None:
    records = [make_record(i, 1_700_000_000_000 + 7 * i, None, compressible(300), magic=1) for i in range(4)]
    raw = kp_build(1, codec, records)
    stamped = restamp_legacy_wrapper(raw, offset=503, timestamp=LOG_APPEND_TIME, log_append=log_append)
    (b,), got = read_with_kseg(tmp_path, stamped)
    assert b.crc_valid and b.offset == 503
    assert [r.offset for r in got] == [500, 501, 502, 503]
    want_ts = [LOG_APPEND_TIME] * 4 if log_append else [r.timestamp for r in records]
    assert [r.timestamp for r in got] == want_ts
    kp = [r for _, ok, recs in kp_records(stamped) for r in recs]
    assert [r.offset for r in kp] == [500, 501, 502, 503]
    assert [r.timestamp for r in kp] == want_ts


@pytest.mark.parametrize("marker", [0, 1], ids=["ABORT", "COMMIT"])
def test_kseg_reads_a_control_batch_stamped_on_kafka_python_bytes(tmp_path, marker) -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True, producer_id=77,
                                        producer_epoch=3, base_sequence=-1, batch_size=1 << 20)
    key = struct.pack(">hh", 0, marker)
    value = struct.pack(">hi", 0, 42)
    builder.append(0, timestamp=1_700_000_000_000, key=key, value=value, headers=[])
    raw = restamp_v2(bytes(builder.build()), attributes_or=0x20)
    (b,), (r,) = read_with_kseg(tmp_path, raw)
    (kb, ok, (kr,)), = kp_records(raw)
    assert ok and b.crc_valid and b.is_control and b.is_transactional and kb.is_control_batch
    info = control_info(r)
    assert (info.type_id, info.version, info.coordinator_epoch) == (kr.type, kr.version, 42)
    assert info.type_name == ("ABORT" if kr.abort else "COMMIT")


# --------------------------------------------------------------------------- (b) kseg writes, kafka-python reads


def assert_kp_reads_v2(raw: bytes, records, *, log_append_time: int | None = None) -> None:
    ((kb, ok, krecs),) = kp_records(raw)
    assert ok
    assert [r.offset for r in krecs] == [r.offset for r in records]
    want_ts = [log_append_time] * len(records) if log_append_time is not None else [r.timestamp for r in records]
    assert [r.timestamp for r in krecs] == want_ts
    assert [(r.key, r.value) for r in krecs] == [(r.key, r.value) for r in records]
    assert [headers_of(k) for k in krecs] == [tuple(map(tuple, r.headers)) for r in records]


@pytest.mark.parametrize("codec", list(CODEC_NAMES), ids=list(CODEC_NAMES.values()))
@ORACLE_SETTINGS
@given(records=v2_records(max_size=8), ple=st.integers(-1, 2**31 - 1))
def test_kafka_python_reads_kseg_v2(tmp_path, codec, records, ple) -> None:
    raw = build_v2_batch(records, codec=codec, partition_leader_epoch=ple)
    assert_kp_reads_v2(raw, records)
    (kb,) = kp_batches(raw)
    assert (kb.compression_type, kb.base_offset, kb.leader_epoch) == (codec, records[0].offset, ple)
    assert kb.last_offset == records[-1].offset
    assert kb.max_timestamp == max(r.timestamp for r in records)
    # and kseg reads its own bytes the same way (public API, on a file)
    (b,), got = read_with_kseg(tmp_path, raw)
    assert b.crc_valid and b.codec == codec
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


@pytest.mark.parametrize("codec", list(CODEC_NAMES), ids=list(CODEC_NAMES.values()))
@ORACLE_SETTINGS
@given(records=v2_records(max_size=5), pid=st.integers(0, 2**63 - 1), epoch=st.integers(0, 2**15 - 1),
       seq=st.one_of(st.integers(0, 1000), st.integers(INT32_MAX - 5, INT32_MAX)), txn=st.booleans(),
       log_append=st.booleans())
def test_kafka_python_reads_kseg_v2_producer_fields(codec, records, pid, epoch, seq, txn, log_append) -> None:
    raw = build_v2_batch(records, codec=codec, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                         transactional=txn, timestamp_type=1 if log_append else 0,
                         max_timestamp=LOG_APPEND_TIME if log_append else None)
    assert_kp_reads_v2(raw, records, log_append_time=LOG_APPEND_TIME if log_append else None)
    (kb,) = kp_batches(raw)
    assert (kb.producer_id, kb.producer_epoch, kb.base_sequence) == (pid, epoch, seq)
    assert kb.is_transactional is txn and kb.is_control_batch is False
    assert kb.timestamp_type == (1 if log_append else 0)
    (b,) = kseg.log.decode.scan_entries(raw).batches
    assert b.last_sequence == kb.last_sequence


@pytest.mark.parametrize("marker", [0, 1], ids=["ABORT", "COMMIT"])
def test_kafka_python_reads_a_kseg_control_batch(marker) -> None:
    rec = make_record(1234, 1_700_000_000_000, struct.pack(">hh", 0, marker), struct.pack(">hi", 0, 9))
    raw = build_v2_batch([rec], control=True, transactional=True, producer_id=5, producer_epoch=1)
    ((kb, ok, (kr,)),) = kp_records(raw)
    assert ok and kb.is_control_batch and kb.is_transactional and kb.base_sequence == -1
    assert (kr.offset, kr.type, kr.version) == (1234, marker, 0)
    assert kr.abort is (marker == 0) and kr.commit is (marker == 1)


def test_kafka_python_reads_an_empty_kseg_batch() -> None:
    raw = build_v2_batch([], base_offset=100, last_offset_delta=4, max_timestamp=1_700_000_000_000,
                         producer_id=42, producer_epoch=3, base_sequence=10, partition_leader_epoch=5)
    ((kb, ok, recs),) = kp_records(raw)
    assert ok and recs == [] and kb.records_count == 0
    assert (kb.base_offset, kb.last_offset, kb.first_timestamp, kb.max_timestamp) == (100, 104, -1, 1_700_000_000_000)
    # The cleaner's empty batch of spec §11, byte for byte.
    assert raw.hex() == (
        "0000000000000064000000310000000502" "87f0f5b0" "000000000004ffffffffffffffff"
        "0000018bcfe56800000000000000002a00030000000a00000000")


@pytest.mark.parametrize("magic", [0, 1])
@ORACLE_SETTINGS
@given(data=st.data())
def test_kafka_python_reads_kseg_legacy_messages(magic, data) -> None:
    records = data.draw(legacy_records(magic=magic, max_size=6))
    raw = b"".join(build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value) for r in records)
    out = kp_records(raw)
    assert len(out) == len(records)
    for (kb, ok, (kr,)), r in zip(out, records):
        assert ok and kr.validate_crc() and kb.magic == magic and kb.compression_type == 0
        assert (kr.offset, kr.key, kr.value) == (r.offset, r.key, r.value)
        assert kr.timestamp == (None if magic == 0 else r.timestamp)


@pytest.mark.parametrize(("magic", "codec"), [(m, c) for m in (0, 1) for c in (GZIP, SNAPPY, LZ4)],
                         ids=[f"m{m}-{CODEC_NAMES[c]}" for m in (0, 1) for c in (GZIP, SNAPPY, LZ4)])
@ORACLE_SETTINGS
@given(data=st.data(), log_append=st.booleans())
def test_kafka_python_reads_kseg_legacy_wrappers(magic, codec, data, log_append) -> None:
    records = data.draw(legacy_records(magic=magic, max_size=6))
    log_append = log_append and magic == 1
    raw = build_legacy_wrapper(records, magic=magic, codec=codec, timestamp_type=1 if log_append else 0,
                               wrapper_timestamp=LOG_APPEND_TIME if log_append else None)
    ((kb, ok, krecs),) = kp_records(raw)
    assert ok and kb.compression_type == codec and kb.magic == magic
    assert kb.timestamp_type == (None if magic == 0 else int(log_append))
    assert all(kr.validate_crc() for kr in krecs)  # inner CRC-32s
    assert [kr.offset for kr in krecs] == [r.offset for r in records]
    assert [(kr.key, kr.value) for kr in krecs] == [(r.key, r.value) for r in records]
    if magic == 0:
        assert [kr.timestamp for kr in krecs] == [None] * len(records)
    elif log_append:
        assert [kr.timestamp for kr in krecs] == [LOG_APPEND_TIME] * len(records)
    else:
        assert [kr.timestamp for kr in krecs] == [r.timestamp for r in records]
    # kseg reads back the same records; the wrapper carries the last offset and (v1) max timestamp
    (b,) = kseg.log.decode.scan_entries(raw).batches
    assert b.offset == records[-1].offset and b.crc_valid
    if magic == 1 and not log_append:
        assert b.timestamp == max(r.timestamp for r in records)
    got = kseg.batch_records(b)
    assert [(r.offset, r.key, r.value) for r in got] == [(r.offset, r.key, r.value) for r in records]


@examples(30)
@given(key=keys_or_values, value=keys_or_values, headers=headers_st, ts=timestamps)
def test_single_record_bytes_equal_kafka_python(key, value, headers, ts) -> None:
    """Uncompressed v2: kseg and kafka-python write the same bytes (except the fields
    kafka-python leaves to the broker: baseOffset 0 and partitionLeaderEpoch 0)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    builder.append(0, timestamp=ts, key=key, value=value, headers=headers)
    theirs = bytes(builder.build())
    ours = build_v2_batch([make_record(0, ts, key, value, headers)], partition_leader_epoch=0)
    assert ours == theirs


def test_all_magic_codec_pairs_are_covered() -> None:
    assert len(MAGIC_CODECS) == 4 + 4 + 5
    # zstd is refused in legacy formats by kafka-python, kseg and Java alike
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=ZSTD, batch_size=1 << 20)
    builder.append(0, 0, None, b"x")
    with pytest.raises(Exception, match="(?i)compression|codec"):
        builder.build()
    with pytest.raises(kseg.UnsupportedCodecError):
        build_legacy_wrapper([make_record(0, 0, None, b"x", magic=1)], magic=1, codec=ZSTD)
