"""The C accelerator (kseg.log._speedups via kseg.log.fast) and the pure-Python reference
(kseg.log.decode) must agree: same batches, consumed bytes and tail; same records or
the same error (class, message, byte position, ``where``, expected, found).

Inputs: every real file, client and spec vector, every generated fixture, and
hypothesis-generated and mutated buffers. No difference is tolerated.
"""

from __future__ import annotations

import importlib
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.log import checks, decode, fast
from kseg.log.encode import (
    build_legacy_message,
    build_legacy_wrapper,
    build_v2_batch,
    encode_v2_records,
)
from kseg.errors import KsegError
from kseg.model import make_record
from kseg.log.records import batch_records, payload_bytes

from conftest import (
    FIXTURES_LOGDIR,
    INT64_MAX,
    INT64_MIN,
    REALDATA,
    examples,
    fixture_logs,
    ids,
    legacy_records,
    log_like_vectors,
    real_log_files,
    spec_vectors,
    v2_records,
)

if not fast.ACCELERATED:
    pytest.skip("the C accelerator is not built (or KSEG_PURE_PYTHON is set)", allow_module_level=True)

FUZZ = examples(300)


@pytest.fixture(autouse=True)
def _accelerated(monkeypatch):
    monkeypatch.setattr(fast, "ACCELERATED", True)


# --------------------------------------------------------------------------- outcomes


def err_tuple(e: KsegError) -> tuple:
    return (type(e).__name__, e.message, e.position, e.where, e.expected, e.found)


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except KsegError as e:
        return err_tuple(e)


def pure(fn, *args):
    """``fn`` with the accelerator off, so that nested calls run the Python reference too."""
    fast.ACCELERATED = False
    try:
        return outcome(fn, *args)
    finally:
        fast.ACCELERATED = True


def both(name: str, *args):
    """(Python reference, C accelerator) outcomes of ``kseg.log.fast.<name>``."""
    return pure(getattr(fast, name), *args), outcome(getattr(fast, name), *args)


def scan_tuple(scan) -> tuple:
    batches = [(tuple(b[:7]), bytes(b.raw), tuple(b[8:])) for b in scan.batches]
    tail = None
    if scan.tail is not None:
        tail = (scan.tail.position, scan.tail.length, err_tuple(scan.tail.error))
    return batches, scan.consumed, tail


def same(py, c) -> None:
    assert py == c, f"\npython: {py!r}\nC:      {c!r}"


def compare_records(data: bytes, base_offset: int, base_ts: int, count: int, lat) -> None:
    same(*both("decode_v2_records", data, base_offset, base_ts, count, lat))
    # the verify summary equals what the decoded records imply
    summary = outcome(fast.check_v2_records, data, base_ts, count)
    implied = pure(decode.decode_v2_records, data, 0, base_ts, count, None)
    if implied[0] != "ok":
        same(implied, summary)
        return
    records = implied[1]
    if not records:
        assert summary == ("ok", (None, True, 0, 0))
        return
    deltas = [r.offset for r in records]
    want = (max(r.stored_timestamp for r in records), all(a < b for a, b in zip(deltas, deltas[1:])),
            min(deltas), max(deltas))
    assert summary == ("ok", want)


def compare_scan(buf: bytes, base: int = 0) -> None:
    for final in (True, False):
        py = decode.scan_entries(buf, base, final=final)
        c = fast.scan_entries(buf, base, final=final)
        assert scan_tuple(py) == scan_tuple(c)
    # walking in steps (as Segment.batches does) gives the same
    py = decode.scan_entries(buf, base, start=0, max_entries=2)
    c = fast.scan_entries(buf, base, start=0, max_entries=2)
    assert scan_tuple(py) == scan_tuple(c)


def compare_sound_runs(batches: list, limit: int = 1 << 20) -> None:
    """verify's runs of sound v2 batches (``checks.sound_v2_run``) from every place verify
    starts one (the first batch, and the one after each stop), after no offset, after the
    offset before the first batch (the run may go on) and after the first one (it may not),
    with and without a base offset from the segment's name; full and quick (``verify --quick``)."""
    from kseg.codecs import get_codec
    from kseg.formats.attributes import CODEC_LZ4

    fast.bind_lz4(get_codec(CODEC_LZ4))  # Kafka's LZ4 frames in C (else the codec object)
    if not batches:
        return
    first = batches[0].base_offset
    for quick in (False, True):
        for last, name_base in ((None, None), (first - 1, first), (first, None), (None, first + 1)):
            i = 0
            while i < len(batches):
                py, c = pure(checks.sound_v2_run, batches, i, last, name_base, limit, "", quick), \
                    outcome(checks.sound_v2_run, batches, i, last, name_base, limit, "", quick)
                same(py, c)
                i = max(i + 1, c[1].stop if c[0] == "ok" else i)
                last = c[1].last if c[0] == "ok" else None


def compare_batches(buf: bytes, limit: int = 1 << 20) -> int:
    """Scan, then compare every batch's records (v2), legacy records and wrapper contents,
    and verify's runs of sound v2 batches."""
    compare_scan(buf)
    compare_sound_runs(decode.scan_entries(buf).batches, limit)
    compared = 0
    for b in decode.scan_entries(buf).batches:
        if b.magic >= 2:
            try:
                data, _ = payload_bytes(b, limit=limit)
            except KsegError:
                continue
            compare_records(data, b.offset, b.base_timestamp, b.record_count, decode.effective_log_append_time(b))
            compared += 1
        elif b.codec == 0:
            same(*both("legacy_record", b, b.offset, b.timestamp))
            compared += 1
        else:
            try:
                inner, _ = payload_bytes(b, limit=limit)
            except KsegError:
                continue
            compare_scan(inner)
            for m in decode.scan_entries(inner).batches:
                same(*both("legacy_record", m, m.offset, m.timestamp))
            py, c = both("decode_legacy_wrapper", b, inner)
            same(py, c)
            if py[0] == "ok":
                same(*both("legacy_crc_mismatches", inner))
            compared += 1
    return compared


# --------------------------------------------------------------------------- real data, vectors, fixtures

REAL = real_log_files()
VECTORS = [v.path for v in log_like_vectors()] + spec_vectors()
FIXTURES = fixture_logs()


@pytest.mark.parametrize("path", REAL, ids=ids(REAL, REALDATA))
def test_real_files_agree(path) -> None:
    buf = path.read_bytes()
    compare_batches(buf)
    compare_scan(buf, base=1 << 33)  # positions are relative to a base


@pytest.mark.parametrize("path", VECTORS, ids=[p.name for p in VECTORS])
def test_vectors_agree(path) -> None:
    compare_batches(path.read_bytes())


@pytest.mark.skipif(not FIXTURES, reason=f"no fixtures under {FIXTURES_LOGDIR} (run fixtures/generate.py)")
@pytest.mark.parametrize("path", FIXTURES or [None], ids=ids(FIXTURES, FIXTURES_LOGDIR) or ["none"])
def test_fixtures_agree(path) -> None:
    compare_batches(path.read_bytes())


def test_real_records_agree_record_by_record() -> None:
    """Materialized records are equal field by field (not only 'no error')."""
    if not REAL:
        pytest.skip("no real data")
    n = 0
    for path in REAL:
        for b in decode.scan_entries(path.read_bytes()).batches:
            if b.magic < 2:
                continue
            data, _ = payload_bytes(b)
            args = (data, b.offset, b.base_timestamp, b.record_count, decode.effective_log_append_time(b))
            assert decode.decode_v2_records(*args) == fast.decode_v2_records(*args)
            n += b.record_count
    assert n > 10_000


# --------------------------------------------------------------------------- generated and mutated


def built(draw) -> bytes:
    magic = draw(st.sampled_from([0, 1, 2]))
    codec = draw(st.sampled_from([0, 1, 2, 3, 4] if magic == 2 else [0, 1, 2, 3]))
    if magic == 2:
        recs = draw(v2_records(max_size=5))
        return build_v2_batch(recs, codec=codec, timestamp_type=draw(st.sampled_from([0, 1])),
                              max_timestamp=draw(st.one_of(st.none(), st.integers(0, 1 << 45))))
    recs = draw(legacy_records(magic=magic, max_size=5))
    if codec == 0:
        return b"".join(build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value) for r in recs)
    return build_legacy_wrapper(recs, magic=magic, codec=codec)


@FUZZ
@given(data=st.data())
def test_built_batches_agree(data) -> None:
    buf = built(data.draw)
    assert compare_batches(buf) >= 1


@FUZZ
@given(data=st.data(), flips=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(1, 255)), max_size=5),
       cut=st.one_of(st.none(), st.integers(0, 1 << 16)), junk=st.binary(max_size=30))
def test_mutated_buffers_agree(data, flips, cut, junk) -> None:
    buf = bytearray(built(data.draw))
    for pos, x in flips:
        buf[pos % len(buf)] ^= x
    if cut is not None:
        del buf[cut % (len(buf) + 1):]
    compare_batches(bytes(buf) + junk)


@FUZZ
@given(buf=st.binary(max_size=120), base=st.integers(0, 1 << 40))
def test_random_buffers_scan_alike(buf, base) -> None:
    compare_scan(buf, base)
    compare_scan(b"\x00" * 8 + buf, base)


@FUZZ
@given(seed=st.integers(0, 1 << 32), size=st.sampled_from([0, 1, 1000, 65536, 65537, 200_000]),
       text=st.booleans(), flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=3),
       cut=st.one_of(st.none(), st.integers(0, 1 << 20)), limit=st.sampled_from([0, 999, 65536, 1 << 20]),
       junk=st.binary(max_size=8))
def test_lz4_frames_decompress_alike(seed, size, text, flips, cut, limit, junk) -> None:
    """``lz4_frame_bytes`` (Kafka's LZ4 frame into one bytes object, for decompress_payload)
    against its twin ``kafka_lz4._kafka_frame``: the data back from a frame the codec wrote, the
    same None for one cut, damaged, over the limit or not Kafka's; the codec object then says why."""
    import random

    from kseg.codecs import get_codec
    from kseg.codecs.kafka_lz4 import _kafka_frame
    from kseg.formats.attributes import CODEC_LZ4

    codec = get_codec(CODEC_LZ4)
    rng = random.Random(seed)
    data = bytes(rng.choice(b"kafka log segment ") for _ in range(size)) if text else rng.randbytes(size)
    frame = bytearray(codec.compress(data))
    if not flips and cut is None and limit >= size:
        assert fast.lz4_frame_bytes(codec, bytes(frame), limit) == data
    for pos, x in flips:
        frame[pos % len(frame)] ^= x
    if cut is not None:
        del frame[cut % (len(frame) + 1):]
    frame += junk  # after the end mark: ignored, as Java does
    expected = _kafka_frame(memoryview(bytes(frame)), 2, limit)
    assert fast.lz4_frame_bytes(codec, bytes(frame), limit) == expected
    assert fast.lz4_frame_bytes(codec, memoryview(bytes(frame)), limit) == expected


varint_bytes = st.lists(st.integers(0, 255), max_size=12).map(bytes)


@st.composite
def record_sections(draw) -> tuple[bytes, int, int, int]:
    """A valid records section, then a few targeted edits (lengths, varints, counts)."""
    base = draw(st.integers(0, 1 << 40))
    recs = [r._replace(offset=base + i) for i, r in enumerate(draw(v2_records(max_size=4)))]
    data = bytearray(encode_v2_records(recs, base, recs[0].stored_timestamp))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "varint"]))
        at = draw(st.integers(0, len(data)))
        if kind == "flip" and data:
            data[at % len(data)] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=3))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 4))]
        else:
            data[at:at] = draw(varint_bytes)
    count = draw(st.one_of(st.just(len(recs)), st.integers(-2, 6)))
    return bytes(data), count, base, recs[0].stored_timestamp


@FUZZ
@given(section=record_sections(), lat=st.one_of(st.none(), st.integers(0, 1 << 45)))
def test_record_sections_agree(section, lat) -> None:
    data, count, base, base_ts = section
    compare_records(data, base, base_ts, count, lat)


@FUZZ
@given(data=st.binary(max_size=60), count=st.integers(-1, 5), base=st.integers(-(1 << 40), 1 << 40),
       base_ts=st.integers(-(1 << 62), 1 << 62))
def test_random_record_bytes_agree(data, count, base, base_ts) -> None:
    compare_records(data, base, base_ts, count, None)


@FUZZ
@given(magic=st.sampled_from([0, 1]), key=st.one_of(st.none(), st.binary(max_size=20)),
       value=st.one_of(st.none(), st.binary(max_size=20)), patch=st.one_of(st.none(), st.tuples(
           st.integers(18, 60), st.binary(min_size=1, max_size=4))), cut=st.integers(0, 8))
def test_legacy_records_agree(magic, key, value, patch, cut) -> None:
    raw = bytearray(build_legacy_message(9, magic, 0, 1234, key, value))
    if patch is not None:
        at, b = patch
        raw[at:at + len(b)] = b
        struct.pack_into(">i", raw, 8, len(raw) - 12)
    if cut:
        del raw[-cut:]
        struct.pack_into(">i", raw, 8, len(raw) - 12)
    compare_batches(bytes(raw))


# --------------------------------------------------------------------------- the encoder twins

# Values a writer can legitimately hand in: every delta fits its varint.
enc_records = st.lists(st.tuples(
    st.integers(0, (1 << 31) - 1),  # offset delta
    st.integers(-(1 << 62), 1 << 62),  # timestamp delta
    st.integers(0, 255),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=40)),
    st.lists(st.tuples(st.binary(max_size=8).map(lambda b: b.decode("utf-8", "surrogateescape")),
                       st.one_of(st.none(), st.binary(max_size=8))), max_size=3),
), max_size=6)


@FUZZ
@given(rows=enc_records, base_offset=st.integers(-(1 << 61), 1 << 61), base_ts=st.integers(-(1 << 61), 1 << 61))
def test_v2_record_encoders_agree(rows, base_offset, base_ts) -> None:
    from kseg.log.encode import encode_v2_records_py

    records = [make_record(base_offset + od, base_ts + td, k, v, h, attributes=a) for od, td, a, k, v, h in rows]
    py = encode_v2_records_py(records, base_offset, base_ts)
    assert fast._speedups.encode_v2_records(records, base_offset, base_ts) == py
    assert decode.decode_v2_records(py, base_offset, base_ts, len(records), None) == records


@FUZZ
@given(magic=st.sampled_from([0, 1]), data=st.data(), relative=st.booleans())
def test_legacy_message_encoders_agree(magic, data, relative) -> None:
    from kseg.log.encode import build_legacy_message_set_py

    records = data.draw(legacy_records(magic=magic, max_size=6))
    records = [r._replace(attributes=data.draw(st.integers(0, 255))) for r in records]
    rel = records[0].offset if relative else None
    py = build_legacy_message_set_py(records, magic=magic, relative_to=rel)
    assert fast._speedups.encode_legacy_messages(records, magic, rel) == py
    compare_scan(py)


# --------------------------------------------------------------------------- the reported bugs, pinned


def _both(fn_name: str, *args):
    return both(fn_name, *args)


def test_bug1_truncated_varint_same_error() -> None:
    py, c = _both("decode_v2_records", b"\x80", 0, 0, 1, None)
    assert py == c


def test_bug2_position_after_attributes() -> None:
    py, c = _both("decode_v2_records", b"\x02\x00", 0, 0, 1, None)
    assert py == c


def test_bug3_varlong_wider_than_64_bits() -> None:
    data = b"\x1e\x00" + b"\xff" * 9 + b"\x7f" + b"\x00\x01\x01\x00"
    py, c = _both("decode_v2_records", data, 0, 0, 1, None)
    assert py == c
    assert INT64_MIN <= py[1][0].timestamp <= INT64_MAX


def test_bug4_summary_with_a_negative_first_delta(monkeypatch) -> None:
    data = b"\x0c\x00\x00\x01\x01\x01\x00"  # one record, offset delta -1
    c = fast.check_v2_records(data, 0, 1)
    monkeypatch.setattr(fast, "ACCELERATED", False)
    py = fast.check_v2_records(data, 0, 1)
    assert py == (0, True, -1, -1)
    assert c == py


@pytest.mark.parametrize(("relative", "wrapper_offset", "message"), [
    ([0, INT64_MAX], 5, "invalid wrapper offset"),  # the last inner offset says where the wrapper is
    ([INT64_MAX, 1], 5, "relative offset out of range"),  # INT64_MAX + 4 is no long (found by fuzzing)
    ([-(1 << 63) + 1], 5, "negative relative offset"),  # 5 - (-2**63 + 1) is no long either
    ([-1, 0], 5, "relative offset out of range"),
    ([0, 1], 1 << 62, None),
])
def test_bug7_v1_inner_offsets_that_are_no_long(relative, wrapper_offset, message) -> None:
    """A v1 wrapper's inner offsets become wrapper offset - last relative + relative; both twins
    refuse inner offsets that would leave the long range (the C code overflowed)."""
    inner = b"".join(build_legacy_message(rel, 1, 0, 1_700_000_000_000, b"k", b"v") for rel in relative)
    wrapper = decode.scan_entries(build_legacy_message(wrapper_offset, 1, 1, 1_700_000_000_000, None, b"x")).batches[0]
    py, c = _both("decode_legacy_wrapper", wrapper, inner)
    assert py == c
    if message is None:
        assert py[0] == "ok" and [r.offset for r in py[1]] == [wrapper_offset - 1, wrapper_offset]
    else:
        assert py[0] == "CorruptBatchError" and message in py[1], py


def test_encoders_refuse_a_delta_past_int64() -> None:
    """Both encoders refuse a timestamp delta that a varlong cannot carry, with a kseg error."""
    from kseg.log import encode
    from kseg.errors import InputError

    rec = [make_record(0, 1 << 63, None, None)]
    with pytest.raises(InputError):
        encode.encode_v2_records_py(rec, 0, 0)
    with pytest.raises(InputError):
        encode.encode_v2_records(rec, 0, 0)  # the C encoder behind the public function


def test_bug6_encoders_accept_the_same_bytes_like_types() -> None:
    from kseg.log.encode import encode_v2_records_py

    rec = [make_record(0, 0, bytearray(b"ab"), memoryview(b"cd"))]
    assert fast._speedups.encode_v2_records(rec, 0, 0) == encode_v2_records_py(rec, 0, 0)


def test_records_and_scan_agree_on_a_mixed_buffer() -> None:
    """A deterministic smoke test: every magic and codec back to back, then junk."""
    parts = []
    for magic in (0, 1, 2):
        for codec in ((0, 1, 2, 3, 4) if magic == 2 else (0, 1, 2, 3)):
            recs = [make_record(10 * len(parts) + i, 1000 + i, b"k", b"v" * i, magic=magic) for i in range(3)]
            if magic == 2:
                parts.append(build_v2_batch(recs, codec=codec))
            elif codec:
                parts.append(build_legacy_wrapper(recs, magic=magic, codec=codec))
            else:
                parts.extend(build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value) for r in recs)
    buf = b"".join(parts) + b"\x00" * 20
    assert compare_batches(buf) == len(parts)
    assert decode.scan_entries(buf).tail is not None


def test_legacy_batch_record_matches_the_reference() -> None:
    """The per-message fast path gives the Python reference's record (or error) for every legacy entry."""
    from kseg.log.segment import Segment

    seen = 0
    for log in fixture_logs() + real_log_files():
        for b in Segment(log).batches():
            if b.magic >= 2 or b.attributes & 7:
                continue
            seen += 1
            try:
                want = ("ok", decode.legacy_record(b, b.offset, b.timestamp))
            except KsegError as e:
                want = ("error", type(e).__name__, e.position, e.message)
            try:
                got = ("ok", fast.legacy_batch_record(b))
            except KsegError as e:
                got = ("error", type(e).__name__, e.position, e.message)
            assert got == want
    assert seen > 100


# --------------------------------------------------------------------------- configuration


def test_configure_takes_exactly_the_schema_layout() -> None:
    """The accelerator has no positions of its own: it takes every one from the schemas
    and refuses an incomplete, extra or (for its compile-time varint bounds) different set."""
    from kseg.layouts import accelerator_layout

    layout = accelerator_layout()
    sp = fast._speedups
    with pytest.raises(TypeError):
        sp.configure(**{k: v for k, v in layout.items() if k != "v2_crc_at"})
    with pytest.raises(TypeError):
        sp.configure(**layout, extra=1)
    with pytest.raises(ValueError):
        sp.configure(**{**layout, "max_varint_bytes": 4})
    with pytest.raises(ValueError):
        sp.configure(**{**layout, "v2_crc_at": -1})
    sp.configure(**layout)  # a refused call changed nothing; set it again all the same
    raw = build_v2_batch([make_record(7, 1, b"k", b"v")], codec=0)
    (batch,) = fast.scan_entries(raw).batches
    assert (batch.offset, batch.crc_valid, batch.record_count) == (7, True, 1)


def test_configure_fields_takes_exactly_the_models_fields() -> None:
    """The accelerator fills kseg.model's NamedTuples by field name: a field it does not know,
    a missing one or another order is refused or followed, never guessed."""
    from kseg.model import Batch, Header, Record

    sp = fast._speedups
    raw = build_v2_batch([make_record(7, 1, b"k", b"v", headers=[("h", b"x")])], codec=0)
    try:
        with pytest.raises(ValueError):
            sp.configure_fields(Batch._fields + ("extra",), Record._fields, Header._fields)
        with pytest.raises(ValueError):
            sp.configure_fields(Batch._fields, Record._fields[:-1], Header._fields)
        with pytest.raises(ValueError):
            sp.configure_fields(Batch._fields, Record._fields, ("name", "value"))
        with pytest.raises(RuntimeError):  # a refused call leaves it unconfigured
            sp.scan(memoryview(raw), 0, True, Batch, 0, -1)
        # Another order is followed: each field lands where the order given says.
        sp.configure_fields(tuple(reversed(Batch._fields)), tuple(reversed(Record._fields)),
                            tuple(reversed(Header._fields)))
        (flipped,), _, _ = sp.scan(memoryview(raw), 0, True, tuple, 0, -1)
        assert Batch(*reversed(flipped)).base_offset == 7
        assert Batch(*reversed(flipped)).record_count == 1
    finally:
        sp.configure_fields(Batch._fields, Record._fields, Header._fields)
    (batch,) = fast.scan_entries(raw).batches
    (record,) = batch_records(batch)
    assert (batch.base_offset, record.offset, record.key, record.headers[0].key) == (7, 7, b"k", "h")


# The C functions and their Python twins, as _speedups.c's header comment lists them.
_C_SOURCE = (Path(decode.__file__).parent / "_speedups.c").read_text()
_TWINS = dict(re.findall(r"^ \*   (\w+) +(kseg\.[\w.]+)$", _C_SOURCE, re.M))
_METHOD_TABLE = _C_SOURCE[_C_SOURCE.index("static PyMethodDef methods[]"):]
_METHODS = set(re.findall(r'^    \{"(\w+)", ', _METHOD_TABLE[:_METHOD_TABLE.index("};")], re.M)) - {
    "configure", "configure_fields", "configure_lz4"}


def test_every_c_function_is_listed_with_its_python_twin() -> None:
    assert _TWINS and set(_TWINS) == _METHODS, sorted(set(_TWINS) ^ _METHODS)


@pytest.mark.parametrize("name", sorted(_TWINS))
def test_the_listed_twin_exists(name: str) -> None:
    module, _, function = _TWINS[name].rpartition(".")
    assert callable(getattr(importlib.import_module(module), function)), _TWINS[name]
    assert callable(getattr(fast._speedups, name))


# --------------------------------------------------------------------------- verify: runs of plain messages


def _message(offset: int, *, magic: int = 1, attributes: int = 0, value: bytes = b"v", fix_crc: bool = True) -> bytes:
    """One uncompressed v0/v1 message, its attributes byte set afterwards (CRC fixed or not)."""
    import zlib

    from kseg.facts.message_v0v1 import ATTRIBUTES_POSITION, CRC_POSITION, CRC_START
    from kseg.log.encode import build_legacy_message_set

    ts = 1_700_000_000_000 + offset if magic else -1
    m = bytearray(build_legacy_message_set([make_record(offset, ts, b"k%d" % offset, value, magic=magic)],
                                           magic=magic))
    m[ATTRIBUTES_POSITION] = attributes
    if fix_crc:
        m[CRC_POSITION:CRC_START] = zlib.crc32(m[CRC_START:]).to_bytes(4, "big")
    return bytes(m)


def _found_both_ways(monkeypatch, folders: list[Path], options) -> dict[str, set[str]]:
    """verify of the folders, every fixture and real file, with and without the accelerator: the
    same report; the checks that found something in each folder."""
    from kseg.ops import verify as v

    paths = [*folders, *fixture_logs(), *real_log_files()]
    reports = []
    for accelerated in (True, False):
        monkeypatch.setattr(fast, "ACCELERATED", accelerated)
        reports.append(v.verify_paths(paths, options).files)
    assert reports[0] == reports[1]
    return {Path(f.path).parent.name: {p.check for p in f.problems} for f in reports[0][:len(folders)]}


def test_verify_takes_clean_runs_of_plain_messages_as_the_reference_does(tmp_path, monkeypatch) -> None:
    """verify's fast path for runs of plain v0/v1 messages finds what the message-by-message checks
    find (the same report, full and quick), and takes the clean runs at once."""
    from kseg.ops import verify as v

    def partition(name: str, messages: list[bytes]) -> Path:
        folder = tmp_path / f"{name}-0"
        folder.mkdir()
        (folder / "00000000000000001300.log").write_bytes(b"".join(messages))
        return folder

    def one_damaged(name: str, message: bytes) -> Path:  # each alone in its run
        messages = [_message(o) for o in range(1300, 1400)]
        messages[30] = message
        return partition(name, messages)

    value_too_long = bytearray(_message(1330))
    value_too_long[-len(b"v") - 4:-len(b"v")] = (7).to_bytes(4, "big")
    folders = [
        partition("clean", [_message(o, magic=o % 3 and 1) for o in range(1300, 2600)]),
        one_damaged("crc", _message(1330, value=b"w", fix_crc=False)[:-1] + b"v"),
        one_damaged("attributes", _message(1330, attributes=0x40)),
        one_damaged("gap", _message(1335)),
        one_damaged("back", _message(1320)),
        partition("below", [_message(o) for o in range(1000, 1100)]),  # all below the name's 1300
        one_damaged("undecodable", bytes(value_too_long)),
    ]
    taken: list[int] = []
    real_run = v.plain_run

    def spy(batches, start):
        run = real_run(batches, start)
        taken.append(0 if run is None else len(run.batches))
        return run

    monkeypatch.setattr(v, "plain_run", spy)
    for quick in (False, True):
        found = _found_both_ways(monkeypatch, folders, v.VerifyOptions(quick=quick))
        assert found == {"clean-0": set(), "crc-0": {"crc"}, "attributes-0": {"attributes"}, "gap-0": {"offsets"},
                         "back-0": {"offsets"}, "below-0": {"offsets"},
                         "undecodable-0": {"crc"} if quick else {"crc", "records"}}
    assert max(taken) >= 500  # the clean runs were taken whole


# --------------------------------------------------------------------------- verify: runs of sound v2 batches


def _v2(offset: int, *, codec: int = 0, n: int = 3, patch: dict[int, int] | None = None, fix_crc: bool = True,
        **kw) -> bytes:
    """A v2 batch of ``n`` records from ``offset``, bytes of its header then set (``patch``:
    position -> byte, attributes counted from the batch's start) and its CRC fixed or not."""
    from kseg.checksums import crc32c
    from kseg.facts.record_batch_v2 import CRC_POSITION, CRC_START

    records = [make_record(offset + k, 1_700_000_000_000 + offset + k, b"k%d" % (offset + k), b"value" * 9,
                           headers=[("h", b"x")]) for k in range(n)]
    b = bytearray(build_v2_batch(records, codec=codec, **kw))
    for at, value in (patch or {}).items():
        b[at] = value
    if fix_crc:
        b[CRC_POSITION:CRC_START] = crc32c(bytes(b[CRC_START:])).to_bytes(4, "big")
    return bytes(b)


def _rebuilt(header: bytes, records: bytes) -> bytes:
    """A v2 batch of this header and records section, its length and CRC made right."""
    from kseg.checksums import crc32c
    from kseg.facts.record_batch_v2 import CRC_POSITION, CRC_START

    b = bytearray(header + records)
    b[8:12] = (len(b) - 12).to_bytes(4, "big")
    b[CRC_POSITION:CRC_START] = crc32c(bytes(b[CRC_START:])).to_bytes(4, "big")
    return bytes(b)


def test_verify_takes_sound_runs_of_v2_batches_as_the_reference_does(tmp_path, monkeypatch) -> None:
    """verify's C path for runs of sound v2 batches (every codec) finds what the batch-by-batch
    checks find, the same report with and without the accelerator, and takes sound runs whole."""
    import lz4.frame

    from kseg.facts.record_batch_v2 import (
        ATTRIBUTES_POSITION,
        LAST_OFFSET_DELTA_POSITION,
        MAX_TIMESTAMP_POSITION,
        RECORD_BATCH_OVERHEAD,
    )
    from kseg.ops import verify as v

    def partition(name: str, batches: list[bytes]) -> Path:
        folder = tmp_path / f"{name}-0"
        folder.mkdir()
        (folder / "00000000000000001300.log").write_bytes(b"".join(batches))
        return folder

    def one_damaged(name: str, batch: bytes, codec: int = 0) -> Path:  # batch 10 of 40, 3 offsets each
        batches = [_v2(o, codec=codec) for o in range(1300, 1420, 3)]
        batches[10] = batch
        return partition(name, batches)

    first_length = _v2(1330)[RECORD_BATCH_OVERHEAD]
    undecodable = _v2(1330, patch={RECORD_BATCH_OVERHEAD: first_length - 2})  # a record's length one short
    kafka_lz4 = _v2(1330, codec=3)  # and the same records in a frame not as Kafka writes it (the codec object reads it)
    lz4_general = _rebuilt(kafka_lz4[:RECORD_BATCH_OVERHEAD], lz4.frame.compress(
        lz4.frame.decompress(kafka_lz4[RECORD_BATCH_OVERHEAD:]), content_checksum=True))
    folders = [
        partition("clean", [_v2(o, codec=(o // 3) % 5) for o in range(1300, 2800, 3)]),
        *(partition(f"clean-codec{c}", [_v2(o, codec=c) for o in range(1300, 1600, 3)]) for c in range(1, 5)),
        one_damaged("crc", _v2(1330, patch={RECORD_BATCH_OVERHEAD + 20: ord("X")}, fix_crc=False)),  # in a value
        one_damaged("crc-lz4", _v2(1330, codec=3, patch={RECORD_BATCH_OVERHEAD + 12: 0}, fix_crc=False), 3),
        one_damaged("lod", _v2(1330, patch={LAST_OFFSET_DELTA_POSITION + 3: 1})),  # 3 records over 2 offsets, a gap after
        one_damaged("max-timestamp", _v2(1330, patch={MAX_TIMESTAMP_POSITION + 7: 0})),
        one_damaged("undecodable", undecodable),
        one_damaged("lz4-undecodable", _v2(1330, codec=3, patch={RECORD_BATCH_OVERHEAD + 8: 0xFF}), 3),  # block size
        one_damaged("zstd-undecodable", _v2(1330, codec=4, patch={RECORD_BATCH_OVERHEAD + 5: 0xFF}), 4),
        one_damaged("lz4-frame", lz4_general, 3),
        one_damaged("undefined-bit", _v2(1330, patch={ATTRIBUTES_POSITION + 1: 0x80})),
        one_damaged("plugin-bits", _v2(1330, patch={ATTRIBUTES_POSITION: 0x01})),
        one_damaged("gap", _v2(1331)),
        one_damaged("back", _v2(1320)),
        partition("below", [_v2(o) for o in range(1000, 1100, 3)]),  # all below the name's 1300
    ]
    expected = {"clean-0": set(), **{f"clean-codec{c}-0": set() for c in range(1, 5)}, "crc-0": {"crc"},
                "crc-lz4-0": {"crc", "records"}, "lod-0": {"batch", "records", "offsets"},
                "max-timestamp-0": {"timestamps"}, "undecodable-0": {"records"}, "lz4-undecodable-0": {"records"},
                "zstd-undecodable-0": {"records"}, "lz4-frame-0": set(), "undefined-bit-0": {"attributes"},
                "plugin-bits-0": {"attributes"}, "gap-0": {"offsets"}, "back-0": {"offsets"}, "below-0": {"offsets"}}
    taken: list[int] = []
    real_run = v.sound_v2_run

    def spy(batches, start, *args):
        run = real_run(batches, start, *args)
        taken.append(run.stop - start)
        return run

    monkeypatch.setattr(v, "sound_v2_run", spy)
    for limit in (1 << 20, 100):  # 100 bytes: no compressed batch decompresses within it
        found = _found_both_ways(monkeypatch, folders, v.VerifyOptions(max_decompressed_bytes=limit))
        if limit > 100:
            assert found == expected
        else:
            assert found["clean-codec3-0"] == {"records"} and found["clean-0"] == {"records"}
    assert max(taken) >= 400  # the sound runs were taken whole


@pytest.mark.parametrize("quick", [False, True])
def test_runs_of_v2_batches_give_the_batch_by_batch_report(tmp_path, monkeypatch, quick) -> None:
    """verify with its runs of v2 batches (C, and their Python twin) against verify taking every
    batch one by one (the reference: each finding worded where it is found), full and --quick,
    on damage of every kind, control batches (the fixtures' transactions) and real files."""
    from kseg.facts.record_batch_v2 import ATTRIBUTES_POSITION, LAST_OFFSET_DELTA_POSITION, RECORD_BATCH_OVERHEAD
    from kseg.log.checks import SoundRun
    from kseg.ops import verify as v

    folders = []
    for name, bad in (("clean", None), ("crc", _v2(1330, patch={RECORD_BATCH_OVERHEAD + 20: 1}, fix_crc=False)),
                      ("lod", _v2(1330, patch={LAST_OFFSET_DELTA_POSITION + 3: 1})),
                      ("records", _v2(1330, patch={RECORD_BATCH_OVERHEAD: 3})),
                      ("control-bit", _v2(1330, patch={ATTRIBUTES_POSITION + 1: 0x20})),
                      ("undefined-bit", _v2(1330, patch={ATTRIBUTES_POSITION + 1: 0x80})),
                      ("gap", _v2(1331)), ("back", _v2(1320))):
        batches = [_v2(o, codec=(o // 3) % 5) for o in range(1300, 1420, 3)]
        if bad is not None:
            batches[10] = bad
        folder = tmp_path / f"{name}-0"
        folder.mkdir()
        (folder / "00000000000000001300.log").write_bytes(b"".join(batches))
        folders.append(folder)
    paths = [*folders, *fixture_logs(), *real_log_files()]
    options = v.VerifyOptions(quick=quick)
    with_runs = v.verify_paths(paths, options).files
    monkeypatch.setattr(fast, "ACCELERATED", False)
    assert v.verify_paths(paths, options).files == with_runs
    monkeypatch.setattr(v, "sound_v2_run", lambda batches, start, last, *rest: SoundRun(start, 0, 0, last))
    assert v.verify_paths(paths, options).files == with_runs
    assert {p.check for f in with_runs[:len(folders)] for p in f.problems} >= {"crc", "batch", "offsets", "attributes"}
