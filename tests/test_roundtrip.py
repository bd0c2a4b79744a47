"""Round trips are byte-identical (STYLE habit 8).

* Parse then build: ``rebuild_entry(batch) == bytes(batch.raw)`` for every
  entry with a valid CRC of every real file, every client vector, every spec
  vector and every generated fixture.
* Build then parse (hypothesis): random records -> kseg.log.encode -> kseg decode
  gives the same records, for every magic x codec; and the built bytes
  rebuild to themselves.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kseg
from kseg.log.decode import decode_v2_records, scan_entries
from kseg.log.encode import (
    build_legacy_message,
    build_legacy_wrapper,
    build_v2_batch,
    encode_v2_records,
)
from kseg.model import Header, make_record
from kseg.log.rebuild import rebuild_entry

from conftest import (
    FIXTURES_LOGDIR,
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    REALDATA,
    examples,
    fixture_logs,
    ids,
    legacy_records,
    log_like_vectors,
    real_log_files,
    same_record_fields,
    spec_vectors,
    v2_records,
    vector_entries,
)

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODECS = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
MAGIC_CODECS = [(m, c) for m in (0, 1, 2) for c in CODECS if c != ZSTD or m == 2]
MC_IDS = [f"m{m}-{CODECS[c]}" for m, c in MAGIC_CODECS]

RT_SETTINGS = examples(25)


def assert_rebuilds(path: Path) -> int:
    """Every CRC-valid entry of a file rebuilds to its own bytes; returns how many were checked."""
    checked = 0
    for batch in kseg.open_segment(path).batches():
        if not batch.crc_valid:
            continue
        assert rebuild_entry(batch) == bytes(batch.raw), f"{path} entry at byte {batch.position}"
        checked += 1
    return checked


# --------------------------------------------------------------------------- parse then build

REAL = real_log_files()
# Decodable client vectors (one fixture's records region is a zstd frame under codec "none").
VECTORS = [v for v in log_like_vectors() if "zstd.json" not in v.name]
SPEC = spec_vectors()


@pytest.mark.parametrize("path", REAL, ids=ids(REAL, REALDATA))
def test_real_file_rebuilds_byte_for_byte(path) -> None:
    checked = assert_rebuilds(path)
    valid = sum(b.crc_valid for b in kseg.open_segment(path).batches())
    assert checked == valid  # every CRC-valid entry was rebuilt (none for a truncated-only file)


def test_real_files_cover_every_codec_and_magic() -> None:
    if not REAL:
        pytest.skip("no real data")
    seen = set()
    for path in REAL:
        for b in kseg.open_segment(path).batches():
            seen.add((b.magic, b.codec_name))
    assert {(0, "none"), (0, "gzip"), (0, "snappy"), (1, "none"), (2, "none"), (2, "lz4"), (2, "gzip"),
            (2, "snappy")} <= seen


@pytest.mark.parametrize("vec", VECTORS, ids=[v.id for v in VECTORS])
def test_client_vector_rebuilds_byte_for_byte(vec) -> None:
    assert_rebuilds(vec.path)


@pytest.mark.parametrize("path", SPEC, ids=[p.name for p in SPEC])
def test_spec_vector_rebuilds_byte_for_byte(path) -> None:
    assert assert_rebuilds(path) >= 1


def test_sarama_legacy_bodies_rebuild(tmp_path) -> None:
    """Sarama message bodies (framed here with offset 0) include a v1 lz4 wrapper of v0 messages."""
    bodies = [v for v in vector_entries() if v.check.startswith("legacy message") and "crc_ok=True" in v.check
              and "zstd" not in v.check and "Bulk" in v.name]
    if not bodies:
        pytest.skip("sarama vectors not present")
    for vec in bodies:
        body = vec.path.read_bytes()
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(struct.pack(">qi", 0, len(body)) + body)
        assert assert_rebuilds(path) == 1, vec.name


FIXTURES = fixture_logs()


@pytest.mark.skipif(not FIXTURES, reason=f"no fixtures under {FIXTURES_LOGDIR} (run fixtures/generate.py)")
@pytest.mark.parametrize("path", FIXTURES or [None], ids=ids(FIXTURES, FIXTURES_LOGDIR) or ["none"])
def test_fixture_rebuilds_byte_for_byte(path) -> None:
    assert_rebuilds(path)


# --------------------------------------------------------------------------- build then parse


def decode_all(raw: bytes):
    scan = scan_entries(raw)
    assert scan.tail is None and scan.consumed == len(raw)
    return scan.batches, [r for b in scan.batches for r in kseg.batch_records(b)]


@pytest.mark.parametrize(("magic", "codec"), MAGIC_CODECS, ids=MC_IDS)
@RT_SETTINGS
@given(data=st.data())
def test_encode_decode_round_trip(magic, codec, data) -> None:
    if magic == 2:
        records = data.draw(v2_records())
        raw = build_v2_batch(records, codec=codec)
    else:
        records = data.draw(legacy_records(magic=magic))
        if codec == NONE:
            raw = b"".join(build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value) for r in records)
        else:
            raw = build_legacy_wrapper(records, magic=magic, codec=codec)
    batches, got = decode_all(raw)
    assert all(b.crc_valid and b.codec == codec and b.magic == magic for b in batches)
    assert [same_record_fields(r) for r in got] == [same_record_fields(r) for r in records]
    assert [r.magic for r in got] == [magic] * len(records)
    for b in batches:
        assert rebuild_entry(b) == bytes(b.raw)


@pytest.mark.parametrize("codec", list(CODECS), ids=list(CODECS.values()))
@RT_SETTINGS
@given(records=v2_records(max_size=5), txn=st.booleans(), log_append=st.booleans(),
       horizon=st.one_of(st.none(), st.integers(0, 1 << 45)), ple=st.integers(-1, INT32_MAX),
       pid=st.integers(-1, 1 << 62), epoch=st.integers(-1, 1 << 14), seq=st.integers(-1, INT32_MAX),
       extra_delta=st.integers(0, 100))
def test_v2_header_fields_round_trip(codec, records, txn, log_append, horizon, ple, pid, epoch, seq,
                                     extra_delta) -> None:
    lod = records[-1].offset - records[0].offset + extra_delta  # the cleaner keeps the original delta
    raw = build_v2_batch(records, codec=codec, transactional=txn, timestamp_type=int(log_append),
                         max_timestamp=1_900_000_000_000 if log_append else None, delete_horizon_ms=horizon,
                         partition_leader_epoch=ple, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                         last_offset_delta=lod)
    (b,), got = decode_all(raw)
    assert (b.partition_leader_epoch, b.producer_id, b.producer_epoch, b.base_sequence) == (ple, pid, epoch, seq)
    assert b.last_offset_delta == lod and b.record_count == len(records)
    assert b.is_transactional is txn and b.has_delete_horizon is (horizon is not None)
    assert b.delete_horizon_ms == horizon
    assert b.timestamp_type == int(log_append)
    if log_append:
        assert {r.timestamp for r in got} == {1_900_000_000_000}
    assert [same_record_fields(r) for r in got] == [same_record_fields(r) for r in records]
    assert rebuild_entry(b) == raw


@given(
    base_offset=st.integers(INT64_MIN // 2, INT64_MAX // 2),
    base_ts=st.integers(INT64_MIN // 2, INT64_MAX // 2),
    rows=st.lists(
        st.tuples(
            st.integers(-(1 << 62), 1 << 62),  # timestamp delta: any varlong
            st.integers(-(1 << 31), INT32_MAX),  # offset delta: any varint
            st.integers(0, 255),  # record attributes byte
            st.one_of(st.none(), st.binary(max_size=200)),
            st.one_of(st.none(), st.binary(max_size=200)),
            st.lists(st.tuples(st.binary(max_size=10), st.one_of(st.none(), st.binary(max_size=10))), max_size=3),
        ),
        max_size=6,
    ),
)
def test_varint_extremes_round_trip(base_offset, base_ts, rows) -> None:
    """encode_v2_records and decode_v2_records are inverse over the full varint ranges,
    with any attributes byte and header keys that are not valid UTF-8."""
    records = [
        make_record(base_offset + od, base_ts + td, k, v,
                    [Header(hk.decode("utf-8", "surrogateescape"), hv) for hk, hv in hs], attributes=attrs)
        for td, od, attrs, k, v, hs in rows
    ]
    data = encode_v2_records(records, base_offset, base_ts)
    got = decode_v2_records(data, base_offset, base_ts, len(records), None)
    assert got == records
    assert encode_v2_records(got, base_offset, base_ts) == data
    fast_got = kseg.log.fast.decode_v2_records(data, base_offset, base_ts, len(records), None)
    assert fast_got == records


def test_invalid_utf8_header_key_survives_a_rebuild() -> None:
    rec = make_record(5, 1000, b"k", b"v", [Header(b"\xff\xfeh".decode("utf-8", "surrogateescape"), None)])
    raw = build_v2_batch([rec])
    assert b"\x06\xff\xfeh\x01" in raw  # key length 3, raw bytes, null value
    (b,), (r,) = decode_all(raw)
    assert r.headers[0].key.encode("utf-8", "surrogateescape") == b"\xff\xfeh"
    assert rebuild_entry(b) == raw


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4], ids=["gzip", "snappy", "lz4"])
def test_legacy_wrapper_log_append_time_and_offset_zero_round_trip(magic, codec) -> None:
    records = [make_record(i, 1000 + i, b"k", b"v" * i, magic=magic) for i in range(3)]
    for log_append in (False, True):
        raw = build_legacy_wrapper(records, magic=magic, codec=codec, timestamp_type=int(log_append),
                                   wrapper_timestamp=7777 if log_append else None)
        (b,), got = decode_all(raw)
        assert rebuild_entry(b) == raw
        if magic == 1 and log_append:
            assert [r.timestamp for r in got] == [7777] * 3
        assert [r.offset for r in got] == [0, 1, 2]


def test_round_trip_files_are_untouched() -> None:
    """The rebuild helpers never write: the real files keep their size and bytes."""
    if not REAL:
        pytest.skip("no real data")
    path = REAL[0]
    before = path.read_bytes()
    assert_rebuilds(path)
    assert path.read_bytes() == before
