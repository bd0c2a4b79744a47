"""The C record-line writer (``kseg.render._format``) and its Python reference
(``kseg.render.lines``) give the same bytes: on every fixture, every real file and
hypothesis-generated records, in every format and payload mode."""

from __future__ import annotations

import base64
import os
import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.errors import KsegError
from kseg.log.decode import scan_entries
from kseg.log import fast
from kseg.log import records as records_mod
from kseg.log.decode import effective_log_append_time
from kseg.log.records import batch_records, batch_spans, payload_bytes
from kseg.model import Batch, Header, Record, make_record, sequence_at
from kseg.printable import HIDING
from kseg.render import lines

from conftest import FIXTURES_LOGDIR, REALDATA, examples, fixture_logs, ids, real_log_files

_format = pytest.importorskip("kseg.render._format")

MODES = (lines.NONE, lines.UTF8, lines.HEX, lines.BASE64)
KAFKA_MODES = MODES + (lines.JAVA,)
#: a batch's fields as Kafka 2.8's record lines repeat them (``lines.kafka_batch_fields``)
BATCH_FIELDS = (" baseOffset: 0 lastOffset: 9 baseSequence: -1 lastSequence: -1 producerEpoch: -1 "
                "partitionLeaderEpoch: 0 batchSize: 80 magic: 2 compressType: NONE position: 7")


def agree(records: list[Record], position: int = 7, magic: int = 2, base_offset: int = 0,
          base_sequence: int = -1, ts_name: str = "CreateTime") -> None:
    for k in MODES:
        for v in MODES:
            assert _format.jsonl_records(records, ts_name, position, k, v) == \
                lines.jsonl_records(records, ts_name, position, k, v)
            assert _format.text_records(records, k, v) == lines.text_records(records, k, v)
    for k in KAFKA_MODES:
        for v in KAFKA_MODES:
            for last in (None, base_offset - 1, base_offset + 5):
                for fields in (None, BATCH_FIELDS) if last is None else (None,):  # Kafka 4's lines, 2.8's
                    gc: list = []
                    gp: list = []
                    c = _format.kafka_records(records, ts_name, magic, base_offset, base_sequence, k, v, last, gc,
                                              True, fields)
                    p = lines.kafka_records(records, ts_name, magic, base_offset, base_sequence, k, v, last, gp,
                                            True, fields)
                    assert c == p
                    assert gc == gp


def spans_agree(b: Batch, records: list[Record] | KsegError) -> None:
    """Lines from batch_spans equal the reference's from the records; a batch that does not decode
    fails in batch_spans with the same error."""
    if not fast.ACCELERATED:
        return
    if isinstance(records, KsegError):
        with pytest.raises(KsegError) as info:
            batch_spans(b)
        assert (type(info.value), str(info.value)) == (type(records), str(records))
        return
    spans = batch_spans(b)
    if spans is None:
        assert b.magic < 2 and not b.is_compressed  # one message: no spans to speak of
        return
    assert spans.count == len(records)
    if records:
        assert spans.first_offset == records[0].offset
    seq = -1 if b.base_sequence is None else b.base_sequence
    ts_name = b.timestamp_type_name
    for k in MODES:
        for v in MODES:
            assert _format.jsonl_spans(spans.data, spans.records, spans.headers, ts_name, b.position, k, v) == \
                lines.jsonl_records(records, ts_name, b.position, k, v)
            assert _format.text_spans(spans.data, spans.records, spans.headers, k, v) == \
                lines.text_records(records, k, v)
    for k in KAFKA_MODES:
        for v in KAFKA_MODES:
            for last in (None, b.offset - 1, b.offset + 5):
                for brace, fields in ((True, None), (False, None), (False, lines.kafka_batch_fields(
                        b, spans.first_offset, b.codec_name.upper()))):
                    gc: list = []
                    gp: list = []
                    c, c_last = _format.kafka_spans(spans.data, spans.records, spans.headers, b.timestamp_type_name,
                                                    b.magic, b.offset, seq, k, v, last, gc, brace, fields)
                    p = lines.kafka_records(records, b.timestamp_type_name, b.magic, b.offset, seq, k, v, last, gp,
                                            brace, fields)
                    assert c == p
                    assert gc == gp
                    assert c_last == (records[-1].offset if records else last)


def batch_lines_agree(b: Batch, ts_name: str | None = None, codec_name: str | None = None) -> None:
    ts_name = b.timestamp_type_name if ts_name is None else ts_name
    codec_name = b.codec_name if codec_name is None else codec_name
    for crc_valid in (True, False):
        assert _format.kafka_batch_line(b, crc_valid, ts_name, codec_name) == \
            lines.kafka_batch_line(b, crc_valid, ts_name, codec_name)


def agree_file(data: bytes) -> int:
    n = 0
    for b in scan_entries(data).batches:
        batch_lines_agree(b)
        try:
            records = batch_records(b)
        except KsegError as e:
            spans_agree(b, e)
            continue
        if b.is_control:
            continue
        seq = -1 if b.base_sequence is None else b.base_sequence
        agree(records, b.position, b.magic, b.offset, seq, b.timestamp_type_name)
        spans_agree(b, records)
        n += len(records)
    return n


REAL = real_log_files()
FIXTURES = fixture_logs()


@pytest.mark.parametrize("path", REAL, ids=ids(REAL, REALDATA))
def test_real_files_render_alike(path) -> None:
    agree_file(path.read_bytes())


@pytest.mark.skipif(not FIXTURES, reason=f"no fixtures under {FIXTURES_LOGDIR}")
@pytest.mark.parametrize("path", FIXTURES or [None], ids=ids(FIXTURES, FIXTURES_LOGDIR) or ["none"])
def test_fixtures_render_alike(path) -> None:
    agree_file(path.read_bytes())


payloads = st.one_of(
    st.none(),
    st.binary(max_size=80),
    st.text(max_size=70).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"\xb5", b"\\xb5", b"null", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xc2\x85",
                     b"\xe2\x80\xa8", b'"\\\n\r\t\b\f\x00\x1f\x7f', ("é" * 61).encode(), ("€" * 58 + "\\n\\x01").encode(), b"a" * 59 + b"\x01"]),
)
header_keys = st.one_of(st.text(max_size=12),
                        st.binary(max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape")))


@st.composite
def records(draw) -> list[Record]:
    n = draw(st.integers(0, 5))
    first = draw(st.integers(-5, 1 << 40))
    out = []
    off = first
    for _ in range(n):
        off += draw(st.integers(0, 3))
        headers = tuple(Header(draw(header_keys), draw(payloads)) for _ in range(draw(st.integers(0, 3))))
        ts = draw(st.one_of(st.integers(-(1 << 63), (1 << 63) - 1), st.integers(-2, 300_000_000_000_000),
                            st.sampled_from([0, 253402300799999, 253402300800000, -1])))
        magic = draw(st.sampled_from([0, 1, 2]))
        crc = draw(st.one_of(st.none(), st.integers(0, 0xFFFFFFFF)))
        out.append(Record(off, ts, draw(payloads), draw(payloads), headers, ts, draw(st.integers(0, 255)), magic,
                          crc))
    return out


#: what kseg.printable escapes beyond C0: DEL, C1 controls and every character that moves or hides text
HIDDEN = ["\x7f", *map(chr, range(0x80, 0xA0)), *(chr(c) for a, b in HIDING for c in range(a, b + 1))]
#: their neighbours, and other text that stays as it is
SHOWN = ["\xa0", "\u061b", "\u061d", "\u200a", "\u2010", "\u2027", "\u202f", "\u205f", "\u206a", "\ufefe",
         "\uff00", "é", "\U0001f600"]


def test_no_character_that_hides_text_is_written_raw() -> None:
    """Keys, values and header keys holding each such character: the text and JSON Lines writers (C and
    Python alike) escape them, JSON Lines so that a parser reads the same text; the others stay as they are."""
    recs = [make_record(i, 1_700_000_000_000, ch.encode(), f"v{ch}w".encode(), (Header(f"h{ch}", b"x"),))
            for i, ch in enumerate(HIDDEN + SHOWN)]
    agree(recs)
    jsonl = _format.jsonl_records(recs, "CreateTime", 0, lines.UTF8, lines.UTF8).decode()
    text = _format.text_records(recs, lines.UTF8, lines.UTF8).decode()
    for out in (jsonl, text):
        assert [ch for ch in HIDDEN if ch in out] == []
        assert [ch for ch in SHOWN if ch not in out] == []
    for line, r in zip(jsonl.splitlines(), recs):
        obj = json.loads(line)
        assert (obj["key"], obj["value"], obj["headers"][0]["key"]) == (r.key.decode(), r.value.decode(),
                                                                       r.headers[0].key)


#: base sequences around the edges of Kafka's int arithmetic (-1: none; other negatives: damaged)
EDGE_SEQUENCES = (-(1 << 31), -16777208, -2, -1, 0, 7, (1 << 31) - 8, (1 << 31) - 1)


@pytest.mark.parametrize("base_sequence", EDGE_SEQUENCES)
def test_record_sequences_of_any_base_and_delta_render_alike(base_sequence: int) -> None:
    """Offset deltas of either sign and near int32's ends: the C and Python lines agree, and give
    ``kseg.model.sequence_at`` (Kafka's rule, held to the JVM in tests/kafka/test_sequences_live.py)."""
    base = 1 << 40
    deltas = (-(1 << 31), -16777209, -1, 0, 1, 7, (1 << 31) - 1)
    recs = [make_record(base + d, 1_700_000_000_000, b"k", b"v") for d in deltas]
    agree(recs, 0, 2, base, base_sequence)
    text = lines.kafka_records(recs, "CreateTime", 2, base, base_sequence, lines.NONE, lines.NONE, None, [], True)
    assert [int(line.split(b" sequence: ")[1].split()[0]) for line in text.splitlines()] == \
        [sequence_at(base_sequence, d) for d in deltas]


@examples(300)
@given(records(), st.integers(0, 1 << 40), st.sampled_from([0, 1, 2]), st.integers(-(1 << 31), 0x7FFFFFFF))
def test_generated_records_render_alike(recs, position, magic, base_sequence) -> None:
    base = recs[0].offset if recs else 0
    agree(recs, position, magic, base, base_sequence)


@examples(300)
@given(records(), st.integers(0, 1 << 40), st.sampled_from(["CreateTime", "LogAppendTime"]),
       st.lists(st.integers(0, lines.HEADERS_IF_ANY), min_size=1, max_size=9),
       st.sampled_from(MODES), st.sampled_from(MODES), st.sampled_from([-1, lines.TEXT_WIDTH]))
def test_chosen_fields_render_alike(recs, position, ts_name, fields, k, v, width) -> None:
    """``dump --fields``'s writers: any fields in any order (repeated too), cut or whole (-1)."""
    codes = bytes(fields)
    assert _format.jsonl_fields(recs, ts_name, position, k, v, codes) == \
        lines.jsonl_fields(recs, ts_name, position, k, v, codes)
    assert _format.text_fields(recs, ts_name, position, k, v, codes, width) == \
        lines.text_fields(recs, ts_name, position, k, v, codes, width)


def test_chosen_fields_are_the_default_lines_pieces() -> None:
    """Every field in the default order gives the default lines (jsonl); text's, with headers shown."""
    recs = [Record(5, 1700000000000, b"k", b"\xff" * 70, (Header("h", b"x"),), 0, 0, 2, None)]
    every = bytes(range(len(lines.RECORD_FIELDS)))
    for impl in (_format, lines):
        assert impl.jsonl_fields(recs, "CreateTime", 9, lines.UTF8, lines.UTF8, every) == \
            lines.jsonl_records(recs, "CreateTime", 9, lines.UTF8, lines.UTF8)
        shown = impl.text_fields(recs, "CreateTime", 9, lines.UTF8, lines.UTF8, bytes([0, 1, 3, 4, 5]), 60)
        assert shown == lines.text_records(recs, lines.UTF8, lines.UTF8)
        both = [*recs, recs[0]._replace(headers=())]  # the default line leaves no headers out
        assert impl.text_fields(both, "CreateTime", 9, lines.UTF8, lines.UTF8, lines.DEFAULT_TEXT_FIELDS, 60) == \
            lines.text_records(both, lines.UTF8, lines.UTF8)
    with pytest.raises(ValueError):
        _format.jsonl_fields(recs, "CreateTime", 9, lines.UTF8, lines.UTF8, bytes([lines.HEADERS_IF_ANY + 1]))


_ODD_BYTES = (b"\xb5", b"\xc3\xa9", b"\xe2\x82", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b"\x00", b"\x7f")


def test_ascii_runs_end_anywhere() -> None:
    """The writers copy ASCII eight bytes at a time: a value of every length up to 40 with a
    non-ASCII, invalid or control sequence at every place renders as the reference does."""
    values = [b"a" * n for n in range(41)]
    values += [b"x" * i + odd + b"y" * j for odd in _ODD_BYTES for i in range(18) for j in (0, 1, 7, 8, 9)]
    recs = [Record(i, 1700000000000 + i, v, v[::-1], (), 1700000000000 + i, 0, 1, None) for i, v in enumerate(values)]
    for k in KAFKA_MODES:
        gc: list = []
        gp: list = []
        assert _format.kafka_records(recs, "CreateTime", 1, 0, -1, k, k, None, gc) == \
            lines.kafka_records(recs, "CreateTime", 1, 0, -1, k, k, None, gp)
    agree(recs[:60])
    agree(recs[60::7])


@pytest.mark.parametrize("magnitude", range(20))
def test_numbers_of_every_length(magnitude: int) -> None:
    """Offsets and timestamps of each decimal length, both signs, at each padding width's edge."""
    for v in {10 ** magnitude - 1, 10 ** magnitude, 10 ** magnitude + 1}:
        for n in (v, -v):
            if -(1 << 63) <= n < (1 << 63):
                agree([Record(n, n, b"k", b"v", (), n, 0, 2, None)], position=abs(n))
    agree([Record(-(1 << 63), -(1 << 63), None, None, (), -(1 << 63), 0, 2, None)])
    agree([Record((1 << 63) - 1, (1 << 63) - 1, None, None, (), (1 << 63) - 1, 0, 2, None)])


def test_legacy_crc_checked() -> None:
    from kseg.log.encode import legacy_message_crc

    r = Record(3, 5, b"k", b"v", (), 5, 0, 1, 0)
    good = r._replace(crc=legacy_message_crc(r))
    for rec, word in ((r, b"false"), (good, b"true")):
        line = _format.kafka_records([rec], "CreateTime", 1, 3, -1, 0, 0, None, [])
        assert b"isValid: " + word in line


# --------------------------------------------------------------------------- lossless jsonl, text


def test_jsonl_is_lossless() -> None:
    """Byte 0xB5 and the four characters \\xb5 print differently, and both come back exactly."""
    recs = [Record(0, 0, b"\xb5", b"\\xb5", (Header("h\udcff", b"\xff"),), 0, 0, 2, None)]
    line = json.loads(_format.jsonl_records(recs, "CreateTime", 0, lines.UTF8, lines.UTF8))
    assert "key" not in line and base64.b64decode(line["key_b64"]) == b"\xb5"
    assert line["value"].encode() == b"\\xb5"
    assert base64.b64decode(line["headers"][0]["key_b64"]) == b"h\xff"
    assert base64.b64decode(line["headers"][0]["value_b64"]) == b"\xff"


def test_text_null_differs_from_bytes_null() -> None:
    recs = [Record(0, 1700000000000, None, b"null", (), 0, 0, 2, None)]
    line = _format.text_records(recs, lines.UTF8, lines.UTF8).decode()
    assert "key null" in line and 'value "null"' in line
    assert "2023-11-14T22:13:20.000Z" in line


def test_iso_utc() -> None:
    assert lines.iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert lines.iso_utc(1700000000123) == "2023-11-14T22:13:20.123Z"
    assert lines.iso_utc(-1) == "-"


# --------------------------------------------------------------------------- whole dumps, both writers


from kseg.log.encode import build_legacy_message_set, build_v2_batch  # noqa: E402
from kseg.ops.dump import DumpOptions, dump_paths  # noqa: E402
from kseg.render import bulk  # noqa: E402
from kseg.render.dump import RENDERERS, KafkaRenderer, payload_decoder  # noqa: E402

from conftest import legacy_records, v2_records  # noqa: E402

DUMPS = [("jsonl", "utf8"), ("jsonl", "hex"), ("jsonl", "none"), ("text", "utf8"), ("text", "base64"),
         ("kafka", "utf8"), ("kafka", "none")]


def _dump(paths: list, fmt: str, payload: str, writer, monkeypatch, records: bool = True, **filters) -> bytes:
    import io

    for name in ("jsonl_records", "text_records", "kafka_records", "kafka_batch_line"):
        monkeypatch.setattr(bulk, name, getattr(writer, name))
    out, err = io.BytesIO(), io.StringIO()
    kd = payload_decoder(payload, fmt)
    r = KafkaRenderer(out, err, kd, kd, deep=records) if fmt == "kafka" else RENDERERS[fmt](out, err, kd, kd)
    # the C writer as the CLI runs it: record lines from spans, plain v0/v1 messages in runs
    spans = writer is _format and getattr(r, "takes_spans", False)
    runs = writer is _format and getattr(r, "takes_plain_runs", False)
    heads = writer is _format and getattr(r, "takes_header_runs", False)
    options = DumpOptions(records=records, keep_going=True, record_spans=spans, plain_runs=runs, header_runs=heads,
                          **filters)
    try:
        for ev in dump_paths(paths, options):
            r(ev)
    except KsegError:
        pass
    r.close()
    return out.getvalue() + err.getvalue().encode()


def dumps_agree(paths: list, monkeypatch, **filters) -> None:
    for records in (True, False):
        for fmt, payload in DUMPS:
            assert _dump(paths, fmt, payload, _format, monkeypatch, records, **filters) == \
                _dump(paths, fmt, payload, lines, monkeypatch, records, **filters)


def test_whole_dumps_agree_on_fixtures_and_real_files(monkeypatch) -> None:
    dumps_agree(FIXTURES, monkeypatch)
    dumps_agree(REAL, monkeypatch)


@pytest.mark.parametrize("filters", [{"from_offset": 3}, {"to_offset": 6}, {"from_offset": 2, "to_offset": 9},
                                     {"from_offset": 5, "from_time": 0}],
                         ids=["from", "to", "range", "with-time"])
def test_filtered_dumps_agree(monkeypatch, filters) -> None:
    """Batches wholly inside an offset range are written from spans, the others record by record."""
    dumps_agree(FIXTURES, monkeypatch, **filters)


@examples(60)
@given(st.lists(st.one_of(v2_records(), legacy_records(magic=0), legacy_records(magic=1)), min_size=1, max_size=4),
       st.sampled_from([0, 1]))
def test_whole_dumps_agree_on_generated_segments(tmp_path, monkeypatch, groups, codec) -> None:
    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as f:
        for recs in groups:
            if recs[0].magic >= 2:
                f.write(build_v2_batch(recs, codec=codec))
            else:
                f.write(build_legacy_message_set(recs, magic=recs[0].magic))
    dumps_agree([path], monkeypatch)


def test_batch_line_is_batch_json() -> None:
    """The jsonl batch line written without a dict equals the dict's JSON, on every fixture and real file."""
    from kseg.ops.dump import BatchEvent
    from kseg.render.dump import batch_json, batch_line

    enc = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    n = 0
    for path in FIXTURES + REAL:
        name = json.dumps(str(path), ensure_ascii=False)
        for b in scan_entries(path.read_bytes()).batches:
            ev = BatchEvent(path, b, b.offset, b.last_offset, b.record_count or 1, b.crc_valid)
            assert batch_line(ev, name) == enc(batch_json(ev)) + "\n"
            n += 1
    assert n > 100


def _payloads() -> list[tuple[Batch, bytes]]:
    """(batch, decompressed payload) of every fixture batch that has spans: v2 batches and legacy wrappers."""
    out = []
    for path in FIXTURES:
        for b in scan_entries(path.read_bytes()).batches:
            if b.magic >= 2 or b.is_compressed:
                try:
                    out.append((b, payload_bytes(b)[0]))
                except KsegError:
                    pass
    return out


PAYLOADS = _payloads()


def _outcome(fn, *args):
    try:
        return fn(*args)
    except KsegError as e:
        return (type(e), str(e))


@pytest.mark.skipif(not fast.ACCELERATED, reason="the C reader is off (KSEG_PURE_PYTHON=1): no spans")
@examples(300)
@given(st.data())
def test_spans_fail_as_records_do_on_damaged_payloads(data) -> None:
    """The spans mode of the C readers runs the same checks as the record mode: on a damaged
    payload both fail with the same error, or both succeed with the same records."""
    b, payload = data.draw(st.sampled_from(PAYLOADS))
    damaged = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 3))):
        if not damaged:
            break
        damaged[data.draw(st.integers(0, len(damaged) - 1))] = data.draw(st.integers(0, 255))
    damaged = bytes(damaged[: data.draw(st.integers(0, len(damaged)))])
    if b.magic >= 2:
        lat = effective_log_append_time(b)
        records = _outcome(fast.decode_v2_records, damaged, b.offset, b.base_timestamp, b.record_count, lat)
        spans = _outcome(fast.v2_record_spans, damaged, b.offset, b.base_timestamp, b.record_count, lat)
    else:
        records = _outcome(fast.decode_legacy_wrapper, b, damaged)
        spans = _outcome(fast.legacy_record_spans, b, damaged)
    if isinstance(records, tuple):
        assert spans == records
        return
    assert not isinstance(spans, tuple) or isinstance(spans[0], bytes), spans
    found = spans[2]
    assert found == (records[0].offset if records else b.offset)


INT = {8: st.integers(-(1 << 7), (1 << 7) - 1), 16: st.integers(-(1 << 15), (1 << 15) - 1),
       32: st.integers(-(1 << 31), (1 << 31) - 1), 64: st.integers(-(1 << 63), (1 << 63) - 1)}


@given(st.builds(Batch, position=st.integers(0, 1 << 62), size=INT[32], magic=st.just(2), base_offset=INT[64],
                 crc=st.integers(0, (1 << 32) - 1), attributes=st.integers(0, 0xFFFF), max_timestamp=INT[64],
                 raw=st.just(memoryview(b"")), partition_leader_epoch=INT[32],
                 last_offset_delta=st.integers(0, (1 << 31) - 1), base_timestamp=INT[64], producer_id=INT[64],
                 producer_epoch=INT[16], base_sequence=st.one_of(st.just(-1), st.integers(0, (1 << 31) - 1), INT[32]),
                 record_count=INT[32])
       | st.builds(Batch, position=st.integers(0, 1 << 62), size=INT[32], magic=st.sampled_from([0, 1]),
                   base_offset=INT[64], crc=st.integers(0, (1 << 32) - 1), attributes=st.integers(0, 0xFF),
                   max_timestamp=INT[64], raw=st.just(memoryview(b""))),
       st.sampled_from(["CreateTime", "LogAppendTime", "NoTimestampType"]),
       st.one_of(st.sampled_from(["none", "gzip", "zstd", "plugin:7"]), st.text(max_size=8)))
def test_generated_batch_lines_agree(b: Batch, ts_name: str, codec_name: str) -> None:
    """Every field's extremes, the sequence wrap past int32, every attribute bit, and plugin aliases
    of any text (lone surrogates shown as backslash escapes) are written alike."""
    batch_lines_agree(b, ts_name, codec_name)



# --------------------------------------------------------------------------- runs of plain v0/v1 messages


def _plain_segment(path) -> list[int]:
    """1,300 uncompressed messages (v0, v1 CreateTime and LogAppendTime, null keys and values, a gap),
    more than one scanner list; one with a bad CRC and one whose value length is wrong. Returns
    the positions of those two."""
    from kseg.facts.message_v0v1 import KEY_LENGTH_POSITION
    from kseg.formats.attributes import TIMESTAMP_TYPE_MASK

    V1_KEY_LENGTH_AT = KEY_LENGTH_POSITION[1]

    recs = []
    for i in range(1300):
        offset = i + (5 if i > 640 else 0)
        if i % 7 == 3:
            recs.append(make_record(offset, -1, None if i % 2 else b"k%d" % i, b"v" * (i % 40), magic=0))
        else:
            attrs = TIMESTAMP_TYPE_MASK if i % 11 == 0 else 0
            recs.append(make_record(offset, 1_700_000_000_000 + i, b"key-%d" % i, None if i % 13 == 0 else
                                    "vé %d \x01\"" .encode() * (i % 5), attributes=attrs, magic=1))
    data = bytearray()
    positions = []
    for r in recs:
        positions.append(len(data))
        data += build_legacy_message_set([r], magic=r.magic)
    data[positions[23] - 1] ^= 0x55  # the last byte of message 22's value: its CRC fails
    value_length_at = positions[900] + V1_KEY_LENGTH_AT + 4 + len(b"key-900")
    data[value_length_at:value_length_at + 4] = (0x7FFFFFFF).to_bytes(4, "big")  # message 900 does not decode
    path.write_bytes(bytes(data))
    return [positions[22], positions[900]]


def test_plain_runs_agree_with_the_per_message_path(tmp_path, monkeypatch) -> None:
    """Runs of plain messages (one C call each) give the per-message lines, in every format, with and
    without records, around a bad CRC, a gap and scanner-list boundaries."""
    path = tmp_path / "00000000000000000000.log"
    _plain_segment(path)
    dumps_agree([path], monkeypatch)
    dumps_agree([path], monkeypatch, from_offset=600, to_offset=1000)  # across the gap and the bad message
    dumps_agree([path], monkeypatch, to_offset=22)


def test_plain_runs_with_offsets_out_of_order(tmp_path, monkeypatch) -> None:
    """An offset range keeps a slice of a run, or (offsets out of order) some of its messages."""
    from kseg.model import make_record

    path = tmp_path / "00000000000000000000.log"
    offsets = [10, 11, 3, 12, 13, 2, 14]
    path.write_bytes(b"".join(build_legacy_message_set([make_record(o, 1_700_000_000_000 + o, b"k", b"v%d" % o,
                                                                    magic=1)], magic=1) for o in offsets))
    for lo, hi in ((10, None), (None, 3), (3, 12), (12, 13), (20, None)):
        filters = {k: v for k, v in (("from_offset", lo), ("to_offset", hi)) if v is not None}
        dumps_agree([path], monkeypatch, **filters)


@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
def test_plain_runs_in_the_cli(tmp_path, fmt) -> None:
    """``kseg dump`` of plain messages: the same output, errors and exit code with the C runs as
    with the Python per-message path, the bad CRC counted as a problem."""
    import subprocess
    import sys

    path = tmp_path / "00000000000000000000.log"
    bad_crc, undecodable = _plain_segment(path)
    for args in (["-r", "--keep-going"], ["--keep-going"], ["-r"]):
        runs = []
        for pure in ("", "1"):
            env = {**os.environ, "KSEG_PURE_PYTHON": pure}
            runs.append(subprocess.run([sys.executable, "-m", "kseg.cli.main", "dump", "--format", fmt, *args,
                                        "--payload", "utf8", str(path)], capture_output=True, env=env, timeout=120))
        c, p = runs
        assert (c.returncode, c.stdout, c.stderr) == (p.returncode, p.stdout, p.stderr)
        assert c.returncode == 1
        if fmt == "kafka":  # the bad CRC; with -r, message 900's line too (its record stops the dump)
            assert c.stdout.count(b"isvalid: false") == (2 if args == ["-r"] else 1)
        if args == ["-r"]:  # stopped by message 900, after what came before it
            at = undecodable + 26 + 4 + len(b"key-900")
            assert f"at byte {at}: value length does not match the message size".encode() in c.stderr
            if fmt == "kafka":  # message 899 (offset 904) is shown; of message 900 its line, as the tool prints it
                assert b"| offset: 904 " in c.stdout and b"| offset: 905 " not in c.stdout
                assert c.stdout.endswith(b"offset: 905 position: 50407 CreateTime: 1700000000900 size: 41 magic: 1 "
                                         b"compresscodec: none crc: 1796383688 isvalid: false\n")
        else:
            assert b"2 problem(s)" in c.stderr  # the bad CRC and the message that does not decode


# --------------------------------------------------------------------------- runs of v2 batch lines

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # a v2 batch header, written here from the spec (not kseg's encoder)
_V2_HEADER_FIELDS = st.fixed_dictionaries({
    "base_offset": st.one_of(st.integers(0, 1 << 40), INT[64]),
    "attributes": st.one_of(st.sampled_from([0, 0x08, 0x10, 0x20, 0x30, 0x40, 0x70, 0x78, 1, 2, 3, 4, 5, 7]),
                            st.integers(0, 0xFFFF).map(lambda v: v - (1 << 16) if v >= 1 << 15 else v)),
    "lod": st.one_of(st.integers(0, 3), INT[32]),
    "base_ts": INT[64], "max_ts": st.one_of(st.integers(0, 1 << 45), INT[64]),
    "pid": INT[64], "epoch": INT[16], "ple": INT[32],
    "seq": st.one_of(st.just(-1), st.integers((1 << 31) - 3, (1 << 31) - 1), INT[32]),
    "count": st.one_of(st.integers(0, 3), INT[32]),
    "crc_ok": st.booleans(),
    "legacy": st.integers(0, 9),  # 0: a v1 message in its place
})


def _v2_batch(f: dict) -> bytes:
    """One v2 batch of these header fields over a few bytes of records (lines alone read none)."""
    from kseg.checksums import crc32c

    body = b"\x00" * 7
    head = _V2_HEADER.pack(f["base_offset"], 49 + len(body), f["ple"], 2, 0, f["attributes"], f["lod"], f["base_ts"],
                           f["max_ts"], f["pid"], f["epoch"], f["seq"], f["count"])
    crc = crc32c(head[21:] + body) ^ (0 if f["crc_ok"] else 1)
    return head[:17] + struct.pack(">I", crc) + head[21:] + body


@examples(200)
@given(st.lists(_V2_HEADER_FIELDS, min_size=1, max_size=12))
def test_header_runs_agree_with_the_per_batch_path(tmp_path_factory, monkeypatch, fields) -> None:
    """v2 batches shown by their lines alone, taken in runs (one C call each, ``v2_header_run``): the
    per-batch lines in every format, whatever their header holds (every attribute bit, codecs past
    zstd, bad CRCs, a last offset past int64, sequences wrapping, negative counts), between v1
    messages that end a run."""
    path = tmp_path_factory.mktemp("runs") / "00000000000000000000.log"
    path.write_bytes(b"".join(
        build_legacy_message_set([make_record(7, 1_700_000_000_000, b"k", b"v", magic=1)], magic=1)
        if f["legacy"] == 0 else _v2_batch(f) for f in fields))
    for fmt, payload in DUMPS:
        assert _dump([path], fmt, payload, _format, monkeypatch, records=False) == \
            _dump([path], fmt, payload, lines, monkeypatch, records=False)


@pytest.mark.skipif(fast.c_twin("v2_header_run") is None, reason="the C reader is off (KSEG_PURE_PYTHON=1)")
@examples(200)
@given(st.lists(_V2_HEADER_FIELDS, min_size=1, max_size=12), st.integers(0, 12))
def test_header_run_twins_agree(fields, start) -> None:
    """``v2_header_run`` (C) takes the batches its reference ``v2_header_run_py`` takes, with the same
    record count and bad CRCs, from any start."""
    from kseg.log import decode
    from kseg.log.records import v2_header_run_py

    data = b"".join(build_legacy_message_set([make_record(7, 1, b"k", b"v", magic=1)], magic=1)
                    if f["legacy"] == 0 else _v2_batch(f) for f in fields)
    batches = decode.scan_entries(data).batches
    start = min(start, len(batches))
    assert records_mod.v2_header_run(batches, start) == v2_header_run_py(batches, start)


@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
def test_header_runs_in_the_cli(tmp_path, fmt) -> None:
    """``kseg dump`` of v2 batches without --records: the same output and exit code with the C runs as
    with the Python per-batch path, a bad CRC counted as a problem (exit 1), a healthy run exit 0."""
    import subprocess
    import sys

    good = {"base_offset": 0, "attributes": 0, "lod": 0, "base_ts": 1, "max_ts": 1_700_000_000_000, "pid": 7,
            "epoch": 0, "ple": 0, "seq": 0, "count": 1, "crc_ok": True, "legacy": 1}
    for bad, code in ((False, 0), (True, 1)):
        path = tmp_path / str(bad) / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(b"".join(_v2_batch({**good, "base_offset": i, "seq": i, "crc_ok": not (bad and i == 700),
                                             "attributes": 0x10 if i % 9 == 0 else 0}) for i in range(1500)))
        outs = []
        for pure in ("", "1"):
            env = {**os.environ, "KSEG_PURE_PYTHON": pure}
            outs.append(subprocess.run([sys.executable, "-m", "kseg.cli.main", "dump", "--format", fmt, str(path)],
                                       capture_output=True, env=env, timeout=120))
        c, p = outs
        assert (c.returncode, c.stdout, c.stderr) == (p.returncode, p.stdout, p.stderr)
        assert c.returncode == code and c.stdout.count(b"\n") >= 1500, c.stderr


# --------------------------------------------------------------------------- runs of v2 batches with records

_CONTROL_KEY, _CONTROL_VALUE = b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05"  # a COMMIT marker, epoch 5
_PIECES = st.lists(st.fixed_dictionaries({
    "records": v2_records(max_size=3),
    "codec": st.sampled_from([0, 0, 0, 1, 2, 3, 4]),
    "lat": st.booleans(),
    "transactional": st.booleans(),
    "kind": st.sampled_from(["batch"] * 8 + ["control", "bad-crc", "undecodable", "v1"]),
}), min_size=1, max_size=10)


def _record_pieces(pieces: list[dict]) -> bytes:
    """A segment of v2 batches with records (any codec, LogAppendTime, a bad CRC, records that do
    not decode, control batches) and v1 messages, made by kseg's encoder; the offsets go on from
    piece to piece (gaps and a step back where a piece's own records start lower)."""
    out = bytearray()
    for p in pieces:
        recs = p["records"]
        if p["kind"] == "v1":
            out += build_legacy_message_set([make_record(recs[0].offset, 1_700_000_000_000, b"k", b"v", magic=1)],
                                            magic=1)
            continue
        if p["kind"] == "control":
            recs = [make_record(recs[0].offset, recs[0].timestamp, _CONTROL_KEY, _CONTROL_VALUE)]
        raw = bytearray(build_v2_batch(recs, codec=p["codec"], timestamp_type=int(p["lat"]),
                                       transactional=p["transactional"] or p["kind"] == "control",
                                       control=p["kind"] == "control", producer_id=7, base_sequence=3))
        if p["kind"] == "bad-crc":
            raw[17] ^= 0x40
        elif p["kind"] == "undecodable":
            raw[-1] ^= 0xFF  # the records' (or the compressed stream's) last byte
        out += raw
    return bytes(out)


@examples(120)
@given(_PIECES, st.sampled_from([None, 1, 60, 200]))
def test_record_runs_agree_with_the_per_batch_path(tmp_path_factory, monkeypatch, pieces, budget) -> None:
    """v2 batches shown with their records, taken in runs (``v2_record_run`` and the ``*_record_run``
    writers, one C call each): the per-batch lines of the Python reference in every format, with
    every codec, LogAppendTime, bad CRCs, gaps between offsets (Kafka's report), and the batches a
    run leaves to the per-batch path (control batches, records that do not decode, v1 messages, the
    run's byte budget reached)."""
    path = tmp_path_factory.mktemp("runs") / "00000000000000000000.log"
    path.write_bytes(_record_pieces(pieces))
    if budget is not None:
        monkeypatch.setattr(records_mod, "RECORD_RUN_BYTES", budget)
    for fmt, payload in DUMPS:
        assert _dump([path], fmt, payload, _format, monkeypatch) == _dump([path], fmt, payload, lines, monkeypatch)


@pytest.mark.skipif(fast.c_twin("v2_record_run") is None, reason="the C reader is off (KSEG_PURE_PYTHON=1)")
@examples(150)
@given(_PIECES, st.integers(0, 10), st.sampled_from([1 << 20, 1, 40, 150]))
def test_record_run_twins_agree(pieces, start, max_bytes) -> None:
    """``v2_record_run`` (C) takes the batches its reference ``v2_record_run_py`` takes (``batch_spans``
    of each, joined), with the same data, spans, record count and bad CRCs, from any start and
    within any byte budget."""
    from kseg.log.records import v2_record_run_py

    batches = scan_entries(_record_pieces(pieces)).batches
    start = min(start, len(batches))
    got = records_mod.v2_record_run(batches, start, max_bytes=max_bytes)
    assert got == v2_record_run_py(batches, start, max_bytes=max_bytes)
    assert got.stop == start or got.spans.count == got.records


def test_record_runs_end_where_the_per_batch_path_must_speak(tmp_path, monkeypatch) -> None:
    """What a run takes and leaves, on one-record batches: a control batch, a batch whose records
    do not decode and a v1 message each end a run (the per-batch path shows them); a bad CRC does not
    (the run says it); the byte budget cuts a run; without the C reader there are no runs."""
    from kseg.ops.dump import BatchEvent, BadBatchEvent, HeaderRunEvent

    kinds = ["batch"] * 5 + ["bad-crc"] + ["batch"] * 3 + ["control", "batch", "batch", "undecodable", "batch", "v1",
                                                           "batch"]
    pieces = [{"records": [make_record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * i)], "codec": i % 2, "lat": False,
               "transactional": False, "kind": kind} for i, kind in enumerate(kinds)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_record_pieces(pieces))
    options = DumpOptions(records=True, keep_going=True, record_spans=True, header_runs=True)
    events = [ev for ev in dump_paths([path], options) if isinstance(ev, (BatchEvent, BadBatchEvent, HeaderRunEvent))]
    if fast.c_twin("v2_record_run") is None:
        assert not any(isinstance(ev, HeaderRunEvent) for ev in events)
        return
    shape = [(type(ev).__name__, len(ev.batches) if isinstance(ev, HeaderRunEvent) else ev.batch.offset)
             for ev in events]
    assert shape == [("HeaderRunEvent", 9), ("BatchEvent", 9), ("HeaderRunEvent", 2), ("BadBatchEvent", 12),
                     ("HeaderRunEvent", 1), ("BatchEvent", 14), ("HeaderRunEvent", 1)]
    first = events[0]
    assert first.run.bad.keys() == {5} and first.run.records == 9 and first.run.spans.count == 9
    monkeypatch.setattr(records_mod, "RECORD_RUN_BYTES", 30)  # a few records: each run cut after the one reaching it
    sizes = [len(ev.batches) for ev in dump_paths([path], options) if isinstance(ev, HeaderRunEvent)]
    assert len(sizes) > 4 and max(sizes) < 9


@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
def test_record_runs_in_the_cli(tmp_path, fmt) -> None:
    """``kseg dump --records`` of one-record v2 batches: the same output, errors and exit code with the
    C runs as with the Python per-batch path; a bad CRC is a problem (exit 1), records that do not
    decode stop the dump where the per-batch path stops it."""
    import subprocess
    import sys

    for case in ("good", "bad-crc", "undecodable"):
        pieces = [{"records": [make_record(i, 1_700_000_000_000 + i, b"key-%d" % i, "vé %d" .encode() % i)],
                   "codec": 3 if i % 5 == 0 else 0, "lat": i % 7 == 0, "transactional": False,
                   "kind": case if i == 700 else "batch"} for i in range(1500)]
        path = tmp_path / case / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(_record_pieces(pieces))
        outs = []
        for pure in ("", "1"):
            env = {**os.environ, "KSEG_PURE_PYTHON": pure}
            outs.append(subprocess.run([sys.executable, "-m", "kseg.cli.main", "dump", "-r", "--format", fmt,
                                        "--payload", "utf8", str(path)], capture_output=True, env=env, timeout=120))
        c, p = outs
        assert (c.returncode, c.stdout, c.stderr) == (p.returncode, p.stdout, p.stderr)
        assert c.returncode == (0 if case == "good" else 1), c.stderr
        if case != "undecodable":
            assert c.stdout.count(b"key-1499") == 1
        else:  # the dump stops at batch 700
            assert b"key-699" in c.stdout and b"key-701" not in c.stdout
            assert c.stderr.count(b"kseg: error:") == 1 and b"lz4 payload" in c.stderr
