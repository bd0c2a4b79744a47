"""Runs of v2 batches taken as Arrow columns at once (``kseg.log.span_columns``'s
``v2_column_run``): the C twin and its Python reference ``v2_column_run_py`` take the same
batches and give the same columns, from generated batches with every header fact a column
shows and every damage the per-batch path knows (CRC, records that do not decode, a negative
count, a sequence past int32, compressed batches within a decompression limit or not, legacy
messages in between); and ``to_arrow`` / ``to_batches`` give the same table with the runs and
without them (the per-batch path), over the fixtures, the real segments and generated files,
filters and damage included.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kseg
from kseg.errors import KsegError
from kseg.facts.primitives import INT32_MAX, INT64_MAX
from kseg.facts.record_batch_v2 import CRC_START, RECORD_BATCH_OVERHEAD, RECORD_COUNT_POSITION
from kseg.formats.attributes import CODEC_GZIP, CODEC_ZSTD, LOG_APPEND_TIME
from kseg.log import fast
from kseg.log.decode import scan_entries
from kseg.log.encode import assemble_v2, build_legacy_message, build_v2_batch, encode_v2_records, header_of
from kseg.log import span_columns
from kseg.log.span_columns import (
    CONTROL_ROWS,
    CONTROL_SKIPPED,
    CONTROL_STOPS,
    v2_column_run,
    v2_column_run_py,
)
from kseg.checksums import crc32c
from kseg.model import Header, make_record
from tests.conftest import examples, real_log_files
from tests.test_api import LOGDIR, needs_arrow

needs_c = pytest.mark.skipif(fast.c_twin("v2_column_run") is None,
                             reason="the C accelerator is not built (or KSEG_PURE_PYTHON is set)")

# --------------------------------------------------------------------------- generated batches

keys = st.one_of(st.none(), st.binary(max_size=12))
header_keys = st.text(max_size=5) | st.binary(max_size=5).map(lambda b: b.decode("utf-8", "surrogateescape"))
DAMAGE = ("none", "crc", "records", "count", "trailing", "behind")


@st.composite
def batch_bytes(draw, offset: int) -> tuple[bytes, int]:
    """One entry of a .log at ``offset`` (a v2 batch, now and then a v1 message) and the next offset."""
    if draw(st.integers(0, 15)) == 0:
        return build_legacy_message(offset, 1, 0, 5, draw(keys), draw(keys)), offset + 1
    n = draw(st.integers(0, 5))
    gaps = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    offs, at = [], offset
    for g in gaps:
        at += g
        offs.append(at)
        at += 1
    records = [make_record(o, draw(st.integers(-5, 1 << 41)), draw(keys), draw(keys),
                           tuple(Header(k, v) for k, v in draw(st.lists(st.tuples(header_keys, keys), max_size=2))))
               for o in offs]
    lat = draw(st.booleans())
    raw = bytearray(build_v2_batch(
        records, base_offset=offset, codec=draw(st.sampled_from([0, 0, 0, CODEC_GZIP, CODEC_ZSTD])),
        timestamp_type=LOG_APPEND_TIME if lat else 0, max_timestamp=draw(st.integers(0, 99)) if lat else None,
        transactional=draw(st.booleans()), control=draw(st.integers(0, 5)) == 0,
        producer_id=draw(st.sampled_from([-1, 7, 1 << 40])), producer_epoch=draw(st.sampled_from([-1, 0, 3])),
        base_sequence=draw(st.sampled_from([-1, -1, 0, 5, INT32_MAX - 2, INT32_MAX, -INT32_MAX - 1])),
        partition_leader_epoch=draw(st.sampled_from([-1, 0, 9])),
        last_offset_delta=(max(0, at - offset - 1) + draw(st.integers(0, 1))) if n else None))
    damage = draw(st.sampled_from(DAMAGE))
    b = scan_entries(bytes(raw)).batches[0]
    if damage == "behind" and records and not b.codec:
        # offset deltas below zero: records before the batch's base offset (a sequence below int32's)
        h = header_of(b).with_(base_offset=offset + 2)
        raw = bytearray(assemble_v2(h, encode_v2_records(records, offset + 2, h.base_timestamp)))
    elif damage == "crc" and len(raw) > RECORD_BATCH_OVERHEAD:
        raw[-1] ^= 0x40  # the stored CRC no longer matches
    elif damage == "records" and len(raw) > RECORD_BATCH_OVERHEAD:
        raw[RECORD_BATCH_OVERHEAD] = 0x7F  # the first record's length, then the CRC made to match
    elif damage == "count":
        raw[RECORD_COUNT_POSITION:RECORD_COUNT_POSITION + 4] = b"\xff\xff\xff\xfe"
    elif damage == "trailing":
        raw += b"\x00"
        raw[8:12] = (int.from_bytes(raw[8:12], "big") + 1).to_bytes(4, "big")
    if damage in ("records", "count", "trailing"):
        raw[17:21] = crc32c(bytes(raw[CRC_START:])).to_bytes(4, "big")
    return bytes(raw), max(at, offset + 1)


@st.composite
def log_bytes(draw) -> bytes:
    out, offset = [], draw(st.sampled_from([0, 100, INT64_MAX - 200]))
    for _ in range(draw(st.integers(1, 8))):
        raw, offset = draw(batch_bytes(offset))
        out.append(raw)
    return b"".join(out)


def both_runs(batches: list, start: int, *args) -> tuple:
    """The Python reference's run and the C twin's (None where it takes nothing: then the
    reference takes nothing either)."""
    py = v2_column_run_py(batches, start, *args)
    c = v2_column_run(batches, start, *args)
    if c is None:
        assert py.stop == start, py
    else:
        assert c == py
    return py


@needs_c
@examples(300)
@given(log_bytes(), st.sampled_from([CONTROL_STOPS, CONTROL_SKIPPED, CONTROL_ROWS]), st.booleans(),
       st.sampled_from([1, 3, 1 << 30]), st.integers(0, 4), st.sampled_from([None, 1 << 20, 30]))
def test_c_and_python_take_the_same_runs(buf: bytes, controls: int, crc: bool, max_rows: int, bounds: int,
                                         limit: int | None) -> None:
    batches = scan_entries(buf).batches
    if not batches:
        return
    first = batches[0].base_offset
    lo, hi = ((None, None), (first + 1, None), (None, first + 6), (first + 2, first + 3), (1 << 63, None))[bounds]
    for max_bytes in (1 << 30, 20):
        i = 0
        while i < len(batches):
            run = both_runs(batches, i, lo, hi, max_rows, max_bytes, controls, crc, limit)
            i = max(i + 1, run.stop)


@needs_c
@pytest.mark.parametrize("name", sorted(p.name for p in LOGDIR.iterdir() if p.is_dir()))
def test_c_and_python_take_the_same_runs_of_the_fixtures(name: str) -> None:
    from kseg.log.segment import Segment

    for log in sorted((LOGDIR / name).glob("*.log")):
        for batches in Segment(log).batch_lists():
            for controls in (CONTROL_STOPS, CONTROL_SKIPPED, CONTROL_ROWS):
                i = 0
                while i < len(batches):
                    i = max(i + 1, both_runs(batches, i, None, None, 1 << 30, 1 << 30, controls, True, 1 << 20).stop)


# --------------------------------------------------------------------------- the same table


def read(path: Path, run, monkeypatch, **kw) -> tuple:
    """``arrow_batches`` read whole, taking column runs with ``run`` (None: none, the per-batch
    path); or the error."""
    import pyarrow as pa

    from kseg.ops.read import ReadFilter, arrow_batches, record_schema

    monkeypatch.setattr(span_columns, "v2_column_run", run or (lambda *a, **k: None))
    damaged: list = []
    batch_rows = kw.pop("batch_rows", 16384)
    columns = kw.pop("columns", None)
    try:
        got = list(arrow_batches([path], ReadFilter(**kw), columns, batch_rows, damaged))
    except KsegError as e:
        return ("error", type(e).__name__, e.message, e.position, e.file, e.where, e.expected, e.found)
    except pa.ArrowInvalid as e:  # a sequence that is no int32 (records behind their batch's base offset)
        return ("error", type(e).__name__, str(e))
    table = pa.Table.from_batches(got, schema=record_schema(columns))
    return ("ok", table, [len(b) for b in got], [(type(e).__name__, e.message, e.position) for e in damaged])


FILTERS = [{}, {"include_control": True}, {"from_offset": 3}, {"from_offset": 2, "to_offset": 40},
           {"to_offset": 1}, {"on_damage": "skip"}, {"batch_rows": 7, "include_control": True},
           {"batch_rows": 2, "on_damage": "skip", "from_offset": 1},
           {"columns": ["offset", "sequence", "is_control", "timestamp_type", "producer_id"]},
           {"from_time": 0}, {"from_offset": 1 << 64}]


def same_reads(path: Path, monkeypatch, filters=FILTERS) -> int:
    """The same table, Arrow batches and damage with the runs and without; how many runs were taken."""
    taken: list = []

    def counted(*a, **k):
        run = v2_column_run(*a, **k)
        taken.append(run is not None)
        return run

    for kw in filters:
        with_runs, without = read(path, counted, monkeypatch, **kw), read(path, None, monkeypatch, **kw)
        if with_runs[0] == "ok" and without[0] == "ok":
            assert with_runs[1].equals(without[1]), (path, kw)
            assert with_runs[2:] == without[2:], (path, kw)
        else:
            assert with_runs == without, (path, kw)
    return sum(taken)


@needs_arrow
@needs_c
def test_to_arrow_is_the_same_with_and_without_runs_over_the_fixtures(monkeypatch) -> None:
    taken = sum(same_reads(log, monkeypatch) for log in sorted(LOGDIR.glob("*/*.log")))
    assert taken > 0


@needs_arrow
@needs_c
def test_to_arrow_is_the_same_with_and_without_runs_over_the_real_segments(monkeypatch) -> None:
    logs = [p for p in real_log_files() if p.suffix == ".log"]
    if not logs:
        pytest.skip("no real segments here")
    for log in logs:
        same_reads(log, monkeypatch, FILTERS[:6])


@needs_arrow
@needs_c
def test_a_run_goes_on_from_one_chunk_into_the_next(tmp_path: Path, monkeypatch) -> None:
    """Runs go on across the scanner's lists (read ahead): one Arrow batch each, none cut where
    a chunk of the file ends."""
    from kseg.log.segment import Segment

    records = [make_record(o, o, b"k", b"v" * 50) for o in range(400)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(build_v2_batch(records[k:k + 10]) for k in range(0, 400, 10)))
    # a few batches per chunk of the file, two per list
    monkeypatch.setattr(Segment.batch_lists, "__kwdefaults__", {**Segment.batch_lists.__kwdefaults__,
                                                                "chunk_size": 1000})
    monkeypatch.setattr("kseg.log.segment.STEP_ENTRIES", 2)
    calls: list = []

    def counted(*a, **k):
        run = v2_column_run(*a, **k)
        calls.append(run)
        return run

    monkeypatch.setattr(span_columns, "v2_column_run", counted)
    batches = list(kseg.open_segment(path).to_batches(batch_rows=100))
    assert [len(b) for b in batches] == [100] * 4
    assert [r.rows for r in calls if r is not None] == [100] * 4


# --------------------------------------------------------------------------- the Spark data source


def spark_read(path: Path, run, monkeypatch, mode: str, rows: int) -> tuple:
    """The data source's ``record_arrow`` over a whole segment as one slice, with the runs or not."""
    import pyarrow as pa

    from kseg.ops.columns import arrow_schema, record_arrow
    from kseg.ops.read import source_of
    from kseg.ops.slices import ReadOptions

    monkeypatch.setattr(span_columns, "v2_column_run", run or (lambda *a, **k: None))
    try:
        got = list(record_arrow(source_of(path), None, ReadOptions(mode=mode, max_records_per_batch=rows)))
    except KsegError as e:
        return ("error", type(e).__name__, e.message, e.position, e.file)
    except pa.ArrowInvalid as e:
        return ("error", type(e).__name__, str(e))
    return ("ok", pa.Table.from_batches(got, schema=arrow_schema("records")), [len(b) for b in got])


def same_spark_reads(path: Path, monkeypatch) -> None:
    for mode in ("failfast", "dropmalformed"):
        for rows in (16384, 3):
            with_runs = spark_read(path, v2_column_run, monkeypatch, mode, rows)
            without = spark_read(path, None, monkeypatch, mode, rows)
            if with_runs[0] == "ok" and without[0] == "ok":
                assert with_runs[1].equals(without[1]), (path, mode, rows)
                assert with_runs[2] == without[2], (path, mode, rows)
            else:
                assert with_runs == without, (path, mode, rows)


@needs_arrow
@needs_c
def test_the_data_source_reads_the_same_with_and_without_runs(monkeypatch) -> None:
    for log in sorted(LOGDIR.glob("*/*.log")) + [p for p in real_log_files() if p.suffix == ".log"]:
        same_spark_reads(log, monkeypatch)


@needs_arrow
@needs_c
@examples(60)
@given(log_bytes())
def test_generated_files_read_the_same_with_and_without_runs(tmp_path_factory, monkeypatch, buf: bytes) -> None:
    """to_batches' and the data source's reads of generated segments (damage included)."""
    path = tmp_path_factory.mktemp("runs") / "00000000000000000000.log"
    path.write_bytes(buf)
    same_reads(path, monkeypatch, FILTERS[:3] + FILTERS[5:8])
    same_spark_reads(path, monkeypatch)
