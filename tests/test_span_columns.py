"""Records to Arrow's column buffers (``kseg.log.span_columns``): the C twin ``span_columns``
and its Python reference give the same buffers, from the C reader's spans and from decoded
records alike; spans outside their data are refused alike; and the Arrow rows built from them
(``to_arrow``, the Spark data source's ``record_arrow``) are the records, accelerated or not.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kseg.log import fast
from kseg.log.decode import scan_entries
from kseg.log.records import RecordSpans, batch_records, batch_spans
from kseg.log.span_columns import HEADER_SPAN, RECORD_SPAN, ColumnBuffers, records_part, span_columns_py
from kseg.model import Header, make_record
from tests.test_api import LOGDIR, PARTITIONS

C = fast.c_twin("span_columns")
needs_c = pytest.mark.skipif(C is None, reason="the C accelerator is not built (or KSEG_PURE_PYTHON is set)")


def c_columns(parts: list) -> ColumnBuffers:
    return ColumnBuffers(*C(parts))


def outcome(fn, parts: list) -> tuple:
    try:
        return ("ok", tuple(fn(parts)))
    except (ValueError, OverflowError) as e:
        return ("error", type(e).__name__, str(e))


def fixture_parts(name: str) -> tuple[list, list]:
    """A partition's batches as the C reader's spans (where it gives them) and as decoded records."""
    spans, records = [], []
    for log in sorted((LOGDIR / name).glob("*.log")):
        for b in scan_entries(log.read_bytes()).batches:
            recs = batch_records(b)
            part = records_part(recs)
            records.append(part)
            found = batch_spans(b)
            spans.append((found.data, found.records, found.headers) if found is not None else part)
    return spans, records


@needs_c
@pytest.mark.parametrize("name", PARTITIONS)
def test_fixture_spans_and_records_give_the_same_columns(name: str) -> None:
    spans, records = fixture_parts(name)
    want = span_columns_py(records)
    assert want.rows > 0
    assert span_columns_py(spans) == want
    assert c_columns(spans) == want
    assert c_columns(records) == want


keys = st.one_of(st.none(), st.binary(max_size=20))
header_keys = st.text(max_size=6) | st.binary(max_size=6).map(lambda b: b.decode("utf-8", "surrogateescape"))
records = st.lists(st.builds(lambda o, t, k, v, hs: make_record(o, t, k, v, tuple(Header(hk, hv) for hk, hv in hs)),
                             st.integers(-2**63, 2**63 - 1), st.integers(-2**63, 2**63 - 1), keys, keys,
                             st.lists(st.tuples(header_keys, keys), max_size=3)), max_size=12)


@needs_c
@given(st.lists(records, max_size=4))
def test_records_parts_c_equals_python(batches: list) -> None:
    parts = [records_part(b) for b in batches]
    want = span_columns_py(parts)
    assert c_columns(parts) == want
    assert want.rows == sum(map(len, batches))
    assert want.key_nulls == sum(r.key is None for b in batches for r in b)


def _span(size: int):
    return st.integers(-1, size + 1)


@st.composite
def raw_parts(draw) -> list:
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        data = draw(st.binary(max_size=40))
        n = len(data)
        nh = draw(st.integers(0, 3))
        heads = b"".join(HEADER_SPAN.pack(*(draw(_span(n)) for _ in range(4))) for _ in range(nh))
        recs = b"".join(RECORD_SPAN.pack(draw(st.integers(-2**63, 2**63 - 1)), draw(st.integers(-2**63, 2**63 - 1)),
                                         *(draw(_span(n)) for _ in range(4)), draw(st.integers(-1, nh + 1)),
                                         draw(st.integers(-1, nh + 1)), -1, -1, -1)
                        for _ in range(draw(st.integers(0, 4))))
        if draw(st.booleans()) and recs:
            recs = recs[:-1]  # a partial span
        parts.append((data, recs, heads))
    return parts


@needs_c
@given(raw_parts())
def test_raw_spans_are_taken_or_refused_alike(parts: list) -> None:
    assert outcome(c_columns, parts) == outcome(span_columns_py, parts)


# --------------------------------------------------------------------------- the Arrow rows


@pytest.mark.parametrize("name", PARTITIONS)
def test_record_arrow_is_record_tuples(name: str) -> None:
    """The Spark data source's Arrow path gives the rows of its tuple path."""
    pytest.importorskip("pyarrow")
    from kseg.ops.columns import RECORD_COLUMNS, record_arrow, record_tuples
    from kseg.ops.read import source_of
    from kseg.ops.slices import ReadOptions

    opts = ReadOptions()
    for log in sorted((LOGDIR / name).glob("*.log")):
        s = source_of(log)
        rows = [tuple(r) for b in record_arrow(s, None, opts) for r in zip(*b.to_pydict().values())]
        want = [tuple(row) for row in record_tuples(s, None, opts)]
        headers = RECORD_COLUMNS.index("headers")
        rows = [(*r[:headers], [(h["key"], h["value"]) for h in r[headers]], *r[headers + 1:]) for r in rows]
        assert rows == want


def test_to_arrow_is_the_same_without_the_accelerator(tmp_path: Path) -> None:
    """Every fixture partition's to_arrow() in a process with KSEG_PURE_PYTHON=1 (records, the
    Python twin) equals this process's (spans, C where built)."""
    pa = pytest.importorskip("pyarrow")
    import kseg

    code = ("import sys, kseg, pyarrow as pa\n"
            "t = pa.concat_tables([kseg.open_partition(p).to_arrow() for p in sys.argv[2:]])\n"
            "with pa.OSFile(sys.argv[1], 'wb') as f, pa.ipc.new_file(f, t.schema) as w:\n"
            "    w.write_table(t)\n")
    out = tmp_path / "pure.arrow"
    parts = [str(LOGDIR / n) for n in PARTITIONS]
    env = dict(os.environ, KSEG_PURE_PYTHON="1")
    subprocess.run([sys.executable, "-c", code, str(out), *parts], check=True, env=env, timeout=120)
    pure = pa.ipc.open_file(pa.memory_map(str(out))).read_all()
    here = pa.concat_tables([kseg.open_partition(p).to_arrow() for p in parts])
    assert pure.equals(here)


def test_a_header_key_that_is_not_utf8_reads_as_the_decoders_replacement() -> None:
    pa = pytest.importorskip("pyarrow")
    from kseg.ops.columns import _RecordColumns, arrow_schema
    from kseg.ops.read import source_of

    bad = b"k\xff\xfe".decode("utf-8", "surrogateescape")
    recs = [make_record(0, 1, b"a", b"b", (Header(bad, b"v"), Header("ok", None)))]
    batch = scan_entries((LOGDIR / "v2-headers-0" / "00000000000000000000.log").read_bytes()).batches[0]
    source = source_of(LOGDIR / "v2-headers-0" / "00000000000000000000.log")
    want = [[{"key": "k??", "value": b"v"}, {"key": "ok", "value": None}]]
    cols = _RecordColumns(arrow_schema("records"))
    cols.add(source, batch, recs)  # decoded records
    assert cols.flush().column("headers").to_pylist() == want
    data, spans, heads = records_part(recs)  # the same as spans, as the C reader gives them
    cols.add_spans(source, batch, RecordSpans(data, spans, heads, 1, 0))
    cols.add(source, batch, recs)  # and a run of each kind in one flush
    assert cols.flush().column("headers").to_pylist() == want * 2
    assert pa is not None
