"""The construct schemas in formats/ are the single source of truth.

* Every batch header of every real file, vector and fixture parses with
  construct to the same fields kseg's struct fast path put in ``Batch``; every
  v2 record parses with ``RecordV2`` to the same key, value, headers and deltas
  as the fast decoder; control keys, transaction markers, index entries and
  producer snapshots parse to what kseg reads.
* ``build(parse(x)) == x`` for those schemas.
* ``kseg.facts`` is what the schemas give (``make facts``), and the struct
  layouts derived in ``kseg.layouts`` have the schema's ``sizeof``,
  its field names, and unpack any bytes exactly as construct parses them.

Tolerated differences, in one place: construct's MessageV0/V1 and v2 record
``attributes`` are signed (Int8sb); ``Batch.attributes`` of a legacy entry and
``Record.attributes`` are the same byte read unsigned.
"""

from __future__ import annotations

import importlib
import io
import struct

import construct
import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

import kseg
from kseg import layouts
from kseg.facts import derive as facts
from kseg.companions.read import (
    parse_offset_index,
    parse_producer_snapshot,
    parse_time_index,
    parse_txn_index,
)
from kseg.log.control import control_info
from kseg.log.decode import scan_entries
from kseg.log.encode import encode_v2_records
from kseg.formats import (
    control_record,
    index_files,
    kafka07,
    log_entry,
    message_v0v1,
    producer_snapshot,
)
from kseg.formats import record_batch_v2
from kseg.formats.record_batch_v2 import RecordBatchV2, RecordBatchV2Header, RecordV2, RecordV2Body
from kseg.model import Header, make_record
from kseg.log.records import payload_bytes

from conftest import (
    FIXTURES_LOGDIR,
    REALDATA,
    examples,
    fixture_logs,
    ids,
    log_like_vectors,
    real_log_files,
    spec_vectors,
    v2_records,
    vector_entries,
)

# Compiled twins for the bulk runs (2x faster); test_compiled_schemas_agree proves them equal.
V2_HEADER_C = RecordBatchV2Header.compile()
RECORD_C = RecordV2.compile()

FILES = real_log_files() + [v.path for v in log_like_vectors()] + spec_vectors() + fixture_logs()
FILE_IDS = ids(FILES, REALDATA)


def u8(v: int) -> int:
    return v & 0xFF


def check_header(b: kseg.Batch, compiled: bool = True) -> None:
    raw = bytes(b.raw)
    if b.magic >= 2:
        schema = V2_HEADER_C if compiled else RecordBatchV2Header
        h = schema.parse(raw)
        assert (h.base_offset, h.batch_length + 12, h.partition_leader_epoch, h.magic, h.crc, h.attributes) == (
            b.offset, b.size, b.partition_leader_epoch, b.magic, b.crc, b.attributes)
        assert (h.last_offset_delta, h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch,
                h.base_sequence, h.record_count) == (
            b.last_offset_delta, b.base_timestamp, b.timestamp, b.producer_id, b.producer_epoch, b.base_sequence,
            b.record_count)
        assert schema.build(h) == raw[:61]
        if not compiled:
            whole = RecordBatchV2.parse(raw)
            assert whole.records == raw[61:]
            assert RecordBatchV2.build(whole) == raw
        return
    schema = message_v0v1.HEADER_BY_MAGIC[b.magic]
    h = schema.parse(raw)
    assert (h.offset, h.size + 12, h.crc, h.magic, u8(h.attributes)) == (b.offset, b.size, b.crc, b.magic,
                                                                          b.attributes)
    assert (h.timestamp if b.magic == 1 else -1) == b.timestamp
    assert schema.build(h) == raw[: schema.sizeof()]
    whole = message_v0v1.MESSAGE_BY_MAGIC[b.magic].parse(raw)
    assert message_v0v1.MESSAGE_BY_MAGIC[b.magic].build(whole) == raw
    if b.codec == 0:
        (r,) = kseg.batch_records(b)
        assert (whole.key, whole.value) == (r.key, r.value)
    else:
        assert whole.value == payload_region(b)


def payload_region(b: kseg.Batch) -> bytes | None:
    from kseg.log.decode import legacy_value_region

    _, value = legacy_value_region(b)
    return None if value is None else bytes(value)


def check_records(b: kseg.Batch, compiled: bool = True) -> int:
    """RecordV2 over the (decompressed) records section equals the fast decoder's records."""
    data, _ = payload_bytes(b)
    records = kseg.batch_records(b)
    schema = RECORD_C if compiled else RecordV2
    stream = io.BytesIO(data)
    for r in records:
        start = stream.tell()
        c = schema.parse_stream(stream)
        assert u8(c.attributes) == r.attributes
        assert c.timestamp_delta == r.stored_timestamp - b.base_timestamp
        assert c.offset_delta == r.offset - b.offset
        assert (c.key, c.value) == (r.key, r.value)
        assert [(h.key, h.value) for h in c.headers] == [
            (h.key.encode("utf-8", "surrogateescape"), h.value) for h in r.headers]
        assert schema.build(c) == data[start:stream.tell()]
    assert stream.tell() == len(data)  # the records use the section up exactly
    return len(records)


def check_control(b: kseg.Batch) -> None:
    for r in kseg.batch_records(b):
        key = control_record.ControlRecordKey.parse(r.key)
        info = control_info(r)
        assert (key.version, key.type if key.type in range(7) else -1) == (info.version, info.type_id)
        assert control_record.ControlRecordKey.build(key) == r.key[:4]
        if info.is_txn_marker:
            marker = control_record.EndTxnMarkerValue.parse(r.value)
            assert marker.coordinator_epoch == info.coordinator_epoch
            assert control_record.EndTxnMarkerValue.build(marker) == r.value[:6]


# --------------------------------------------------------------------------- every batch of every file


@pytest.mark.parametrize("path", FILES, ids=FILE_IDS)
def test_schemas_agree_with_the_fast_path(path) -> None:
    for b in kseg.open_segment(path).batches():
        check_header(b)
        if b.magic >= 2:
            try:
                payload_bytes(b)
                kseg.batch_records(b)
            except kseg.KsegError:
                # A batch kseg refuses must be refused by the schema too (or not span the section).
                data, _ = payload_bytes(b)
                with pytest.raises((construct.ConstructError, AssertionError)):
                    stream = io.BytesIO(data)
                    for _ in range(b.record_count):
                        RecordV2.parse_stream(stream)
                    assert stream.tell() == len(data)
                continue
            check_records(b)
            if b.is_control:
                check_control(b)


def test_every_file_kind_was_seen() -> None:
    if not FILES:
        pytest.skip("no data")
    kinds = {(b.magic, b.codec_name, b.is_control) for p in FILES for b in kseg.open_segment(p).batches()}
    assert {(0, "none", False), (1, "none", False), (2, "none", False), (2, "lz4", False),
            (2, "none", True)} <= kinds


def test_compiled_schemas_agree() -> None:
    """The compiled twins parse and build exactly as the declared schemas (spec vectors, small real files)."""
    paths = spec_vectors() + [p for p in real_log_files() if p.stat().st_size < 40_000][:12]
    if not paths:
        pytest.skip("no data")
    n = 0
    for path in paths:
        for b in kseg.open_segment(path).batches():
            check_header(b, compiled=False)
            if b.magic >= 2:
                n += check_records(b, compiled=False)
                raw = bytes(b.raw)
                assert V2_HEADER_C.parse(raw) == RecordBatchV2Header.parse(raw)
    assert n > 50


@pytest.mark.skipif(not fixture_logs(), reason=f"no fixtures under {FIXTURES_LOGDIR}")
def test_fixtures_are_included() -> None:
    assert set(fixture_logs()) <= set(FILES)


# --------------------------------------------------------------------------- single-record vectors


def test_kafkajs_record_body_vector() -> None:
    """kafkajs' v0_record.json is a record body without its length varint."""
    vec = next((v for v in vector_entries() if v.name == "v0_record.json"), None)
    if vec is None:
        pytest.skip("vector not present")
    body = vec.path.read_bytes()
    c = RecordV2Body.parse(body)
    assert RecordV2Body.build(c) == body
    assert (c.key, c.value) == (b"key-0", b"some-value-0")
    assert [h.key for h in c.headers] == [b"header-key-0", b"header-key-1", b"header-key-1"]
    # the fast decoder reads the same record once the length is put in front
    framed = RecordV2.build(c)
    assert framed.endswith(body) and framed[: -len(body)] == bytes([(2 * len(body)) & 0x7F | 0x80, (2 * len(body)) >> 7])
    (r,) = kseg.log.fast.decode_v2_records(framed, 0, 0, 1, None)
    assert (r.key, r.value) == (c.key, c.value)
    assert [(h.key.encode(), h.value) for h in r.headers] == [(h.key, h.value) for h in c.headers]


@pytest.mark.parametrize("name,version,type_id", [("abortTxCtrlRecKey", 0, 0), ("commitTxCtrlRecKey", 0, 1),
                                                  ("unknownCtrlRecKey", 0, -1)])
def test_sarama_control_keys(name, version, type_id) -> None:
    vec = next((v for v in vector_entries() if v.name == name), None)
    if vec is None:
        pytest.skip("vector not present")
    key = vec.path.read_bytes()
    parsed = control_record.ControlRecordKey.parse(key)
    assert control_record.ControlRecordKey.build(parsed) == key
    value = struct.pack(">hi", 0, 10)
    info = control_info(make_record(0, 0, key, value))
    assert (info.version, info.type_id) == (version, type_id)
    assert parsed.version == version and (parsed.type if type_id >= 0 else -1) == type_id


@pytest.mark.parametrize("name,epoch", [("abortTxCtrlRecValue", 10), ("commitTxCtrlRecValue", 15)])
def test_sarama_end_txn_marker_values(name, epoch) -> None:
    vec = next((v for v in vector_entries() if v.name == name), None)
    if vec is None:
        pytest.skip("vector not present")
    value = vec.path.read_bytes()
    parsed = control_record.EndTxnMarkerValue.parse(value)
    assert (parsed.version, parsed.coordinator_epoch) == (0, epoch)
    assert control_record.EndTxnMarkerValue.build(parsed) == value
    info = control_info(make_record(0, 0, struct.pack(">hh", 0, 0), value))
    assert info.coordinator_epoch == epoch


# --------------------------------------------------------------------------- records, both ways (hypothesis)


@examples(60)
@given(records=v2_records(max_size=4), attrs=st.integers(0, 127))
def test_record_v2_schema_builds_what_kseg_encodes(records, attrs) -> None:
    base_offset, base_ts = records[0].offset, records[0].stored_timestamp
    records = [r._replace(attributes=attrs) for r in records]
    ours = encode_v2_records(records, base_offset, base_ts)
    theirs = b"".join(RecordV2.build(dict(
        attributes=r.attributes, timestamp_delta=r.stored_timestamp - base_ts, offset_delta=r.offset - base_offset,
        key=r.key, value=r.value, headers=[dict(key=h.key.encode("utf-8"), value=h.value) for h in r.headers],
    )) for r in records)
    assert ours == theirs
    decoded = kseg.log.fast.decode_v2_records(theirs, base_offset, base_ts, len(records), None)
    assert decoded == records


# --------------------------------------------------------------------------- index files and snapshots


def companions(suffix: str):
    if not REALDATA.is_dir():
        return []
    return sorted(REALDATA.rglob(f"*{suffix}"))


INDEXES = companions(".index")
TIMEINDEXES = companions(".timeindex")
SNAPSHOTS = companions(".snapshot")


def base_of(path) -> int:
    return int(path.name.split(".")[0])


@pytest.mark.parametrize("path", INDEXES, ids=ids(INDEXES, REALDATA))
def test_offset_index_entries(path) -> None:
    data = path.read_bytes()
    parsed = parse_offset_index(data, base_of(path))
    schema = index_files.OffsetIndexEntry
    for i, e in enumerate(parsed.entries):
        raw = data[i * 8:(i + 1) * 8]
        c = schema.parse(raw)
        assert (base_of(path) + c.relative_offset, c.position) == tuple(e)
        assert schema.build(c) == raw


@pytest.mark.parametrize("path", TIMEINDEXES, ids=ids(TIMEINDEXES, REALDATA))
def test_time_index_entries(path) -> None:
    data = path.read_bytes()
    parsed = parse_time_index(data, base_of(path))
    schema = index_files.TimeIndexEntry
    for i, e in enumerate(parsed.entries):
        raw = data[i * 12:(i + 1) * 12]
        c = schema.parse(raw)
        assert (c.timestamp, base_of(path) + c.relative_offset) == tuple(e)
        assert schema.build(c) == raw


def test_txn_index_entries_round_trip() -> None:
    rows = [(0, 7, 110, 120, 110), (0, 2**62, 1, 2**40, 3)]
    data = b"".join(index_files.AbortedTxnEntry.build(dict(zip(layouts.ABORTED_TXN_ENTRY.names, r))) for r in rows)
    assert len(data) == 34 * len(rows)
    assert [tuple(e) for e in parse_txn_index(data).entries] == rows


@pytest.mark.parametrize("path", SNAPSHOTS[:1] + [p for p in SNAPSHOTS if p.stat().st_size > 10],
                         ids=ids(SNAPSHOTS[:1] + [p for p in SNAPSHOTS if p.stat().st_size > 10], REALDATA))
def test_producer_snapshots(path) -> None:
    data = path.read_bytes()
    snap = parse_producer_snapshot(data)
    header = producer_snapshot.ProducerSnapshotHeader.parse(data)
    assert (header.version, header.crc, header.count) == (snap.version, snap.crc, len(snap.entries))
    assert header.crc == crc32c(data[producer_snapshot.SNAPSHOT_CRC_START:]) and snap.crc_valid
    size = producer_snapshot.ProducerSnapshotEntry.sizeof()
    start = producer_snapshot.ProducerSnapshotHeader.sizeof()
    rebuilt = producer_snapshot.ProducerSnapshotHeader.build(header)
    for i, e in enumerate(snap.entries):
        raw = data[start + i * size:start + (i + 1) * size]
        c = producer_snapshot.ProducerSnapshotEntry.parse(raw)
        assert tuple(c[n] for n in layouts.SNAPSHOT_ENTRY.names) == tuple(e)
        rebuilt += producer_snapshot.ProducerSnapshotEntry.build(c)
    assert rebuilt == data


# --------------------------------------------------------------------------- derived layouts

DERIVED = [
    ("LOG_ENTRY_PREFIX", log_entry.LogEntryPrefix),
    ("BATCH_V2_HEADER", record_batch_v2.RecordBatchV2Header),
    ("MESSAGE_V0_HEADER", message_v0v1.MessageV0Header),
    ("MESSAGE_V1_HEADER", message_v0v1.MessageV1Header),
    ("LENGTH_I32", message_v0v1.LengthField),
    ("CONTROL_KEY", control_record.ControlRecordKey),
    ("END_TXN_MARKER", control_record.EndTxnMarkerValue),
    ("OFFSET_INDEX_ENTRY", index_files.OffsetIndexEntry),
    ("TIME_INDEX_ENTRY", index_files.TimeIndexEntry),
    ("ABORTED_TXN_ENTRY", index_files.AbortedTxnEntry),
    ("KAFKA07_HEADER", kafka07.Kafka07Header),
    ("SNAPSHOT_HEADER", producer_snapshot.ProducerSnapshotHeader),
    ("SNAPSHOT_ENTRY", producer_snapshot.ProducerSnapshotEntry),
]


@pytest.mark.parametrize("name,schema", DERIVED, ids=[d[0] for d in DERIVED])
def test_derived_layout_matches_its_schema(name, schema) -> None:
    layout = getattr(layouts, name)
    assert layout.size == layout.struct.size == schema.sizeof()
    assert layout.names == tuple(sc.name for sc in schema.subcons)
    assert layout.struct.format.startswith(">")


@pytest.mark.parametrize("name,schema", DERIVED, ids=[d[0] for d in DERIVED])
@examples(40)
@given(data=st.data())
def test_derived_layout_unpacks_like_the_schema(name, schema, data) -> None:
    layout = getattr(layouts, name)
    raw = data.draw(st.binary(min_size=layout.size, max_size=layout.size))
    parsed = schema.parse(raw)
    assert layout.struct.unpack(raw) == tuple(parsed[n] for n in layout.names)
    assert schema.build(parsed) == raw
    assert layout.struct.pack(*(parsed[n] for n in layout.names)) == raw


def test_layouts_in_use_are_the_derived_ones() -> None:
    """decode and encode use the derived structs, not hand-written copies."""
    from kseg.log import decode, encode

    assert decode._V2 is layouts.BATCH_V2_HEADER.struct is encode._V2
    assert decode._PREFIX is layouts.LOG_ENTRY_PREFIX.struct
    assert decode._V0 is layouts.MESSAGE_V0_HEADER.struct and decode._V1 is layouts.MESSAGE_V1_HEADER.struct


def test_facts_are_the_schemas_own() -> None:
    """kseg.facts (what the hot paths import instead of the construct schemas) is exactly what
    the schemas give today: a changed schema fails here until ``make facts`` is run."""
    assert facts.stale() == []
    for module in facts.SCHEMA_MODULES:
        copy = importlib.import_module("kseg.facts." + module.__name__.rsplit(".", 1)[1])
        constants, derived = facts.facts(module)
        assert {k: getattr(copy, k) for k in constants} == constants
        assert copy.LAYOUTS == derived
        for name, (fmt, names, where) in derived.items():
            schema = getattr(module, name)
            assert struct.calcsize(fmt) == schema.sizeof() and where == facts.positions(schema)


def test_derive_refuses_what_struct_cannot_express() -> None:
    with pytest.raises(TypeError):
        facts.derive(construct.Struct("x" / construct.Int32sl))
    with pytest.raises(TypeError):
        facts.derive(RecordV2Body)


def test_spec_constants_agree_with_schemas() -> None:
    assert record_batch_v2.RECORD_BATCH_OVERHEAD == RecordBatchV2Header.sizeof() == 61
    assert record_batch_v2.BATCH_LENGTH_MIN == 49
    assert message_v0v1.KEY_LENGTH_POSITION == {0: message_v0v1.MessageV0Header.sizeof(),
                                                1: message_v0v1.MessageV1Header.sizeof()}
    assert message_v0v1.RECORD_OVERHEAD_V0 == message_v0v1.MessageV0Header.sizeof() - 12 + 8
    assert message_v0v1.RECORD_OVERHEAD_V1 == message_v0v1.MessageV1Header.sizeof() - 12 + 8
    assert log_entry.HEADER_SIZE_UP_TO_MAGIC == log_entry.LogEntryPrefix.sizeof()
    # every record header type kseg decodes has a schema counterpart
    assert Header._fields == ("key", "value")
    assert [sc.name for sc in record_batch_v2.HeaderV2.subcons] == ["key", "value"]
    raw = scan_entries(kseg.log.encode.build_v2_batch([make_record(0, 5, b"k", b"v")])).batches[0].raw
    assert RecordBatchV2Header.parse(bytes(raw)).batch_length == len(raw) - 12


def test_field_position_constants_match_the_schemas() -> None:
    """The byte positions used on hot paths are the schemas' own field offsets."""
    from kseg.formats import log_entry as e
    from kseg.formats import message_v0v1 as m
    from kseg.formats import record_batch_v2 as r

    def offset_of(schema, name: str) -> int:
        pos = 0
        for sub in schema.subcons:
            if sub.name == name:
                return pos
            pos += sub.sizeof()
        raise KeyError(name)

    for schema in (e.LogEntryPrefix, r.RecordBatchV2Header, m.MessageV0Header, m.MessageV1Header):
        assert facts.positions(schema) == {s.name: offset_of(schema, s.name) for s in schema.subcons}
    assert offset_of(e.LogEntryPrefix, "size") == e.SIZE_POSITION
    assert offset_of(e.LogEntryPrefix, "magic") == e.MAGIC_POSITION
    assert e.EntryFraming.sizeof() == e.LOG_OVERHEAD == 12
    assert e.MIN_SIZE_BY_MAGIC == {0: 14, 1: 22, 2: 49}
    assert offset_of(m.MessageV1Header, "crc") == m.CRC_POSITION
    assert offset_of(m.MessageV1Header, "attributes") == m.ATTRIBUTES_POSITION

    assert offset_of(r.RecordBatchV2Header, "crc") == r.CRC_POSITION
    assert offset_of(r.RecordBatchV2Header, "attributes") == r.ATTRIBUTES_POSITION == r.CRC_START
    assert offset_of(r.RecordBatchV2Header, "last_offset_delta") == r.LAST_OFFSET_DELTA_POSITION
    assert offset_of(r.RecordBatchV2Header, "base_timestamp") == r.BASE_TIMESTAMP_POSITION
    assert offset_of(r.RecordBatchV2Header, "max_timestamp") == r.MAX_TIMESTAMP_POSITION
    assert offset_of(r.RecordBatchV2Header, "record_count") == r.RECORD_COUNT_POSITION
    assert offset_of(m.MessageV1Header, "timestamp") == m.V1_TIMESTAMP_POSITION
    assert offset_of(m.MessageV0Header, "magic") == m.CRC_START
    assert m.KEY_LENGTH_POSITION == {0: m.MessageV0Header.sizeof(), 1: m.MessageV1Header.sizeof()}


def test_batch_offset_and_timestamp_are_the_older_names() -> None:
    """``Batch.base_offset``/``max_timestamp`` are the fields; ``offset``/``timestamp`` read the same."""
    from kseg.model import Batch

    assert Batch._fields[3:7:3] == ("base_offset", "max_timestamp")
    seen = 0
    for path in sorted(FIXTURES_LOGDIR.rglob("*.log")):
        for b in scan_entries(path.read_bytes()).batches:
            assert (b.offset, b.timestamp) == (b.base_offset, b.max_timestamp)
            seen += 1
    assert seen > 100
