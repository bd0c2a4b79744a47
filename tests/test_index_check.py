"""The index checks against verify's packed batch summaries (``BatchRows``): the C pass that
decides an index agrees with its log (``_speedups.index_sound``) never changes a verdict.

The loops of ``offset_index_findings`` and ``time_index_findings`` are the reference. Given the
same log and index files, the checks from ``BatchRows`` (the C pass first, the loops only where it
has any doubt) and from plain tuples (the loops alone) must find the same, whatever was done to
the files; and on the indexes a broker would write (``build_indexes``), the C pass must decide.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import examples
from kseg.companions.build import build_indexes
from kseg.companions.check import BatchRows, check_segment_companions, index_sound_py, summarize_batches
from kseg.companions.read import IndexSlots
from kseg.log.encode import build_v2_batch
from kseg.log.fast import c_twin
from kseg.log.segment import Segment, segment_file_name
from kseg.model import make_record

T0 = 1_700_000_000_000
BASE = 100


def _segment(folder: Path, sizes: list[int], stamps: list[int], interval: int) -> Path:
    """A segment of v2 batches of ``sizes`` records (timestamps from ``stamps``), with the
    .index and .timeindex a broker would write at ``interval`` bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / segment_file_name(BASE)
    data, offset = b"", BASE
    for n, ts in zip(sizes, stamps):
        recs = [make_record(offset + i, T0 + ts + i, b"k%d" % (offset + i), b"v" * 40) for i in range(n)]
        data += build_v2_batch(recs)
        offset += n
    log.write_bytes(data)
    index, timeindex = build_indexes(list(Segment(log).batches()), BASE, interval)
    log.with_suffix(".index").write_bytes(index)
    log.with_suffix(".timeindex").write_bytes(timeindex)
    return log


def _both_ways(log: Path) -> tuple[list, list]:
    summaries, controls = summarize_batches(Segment(log).batches())
    size = log.stat().st_size
    rows = BatchRows()
    rows.extend(summaries)
    return (check_segment_companions(log, rows, controls, size),
            check_segment_companions(log, list(summaries), controls, size))


_batches = st.lists(st.tuples(st.integers(1, 6), st.integers(0, 50)), min_size=1, max_size=30)


@given(_batches, st.sampled_from([0, 1, 200, 4096]), st.sampled_from(["index", "timeindex"]),
       st.integers(0, 10_000), st.integers(0, 0xFFFFFFFF), st.booleans())
@examples(120)
def test_packed_rows_find_what_tuples_find(tmp_path_factory, batches, interval, which, where, word, damage):
    """Healthy indexes, and indexes with one 4-byte word overwritten anywhere (offsets, positions,
    timestamps out of order, past the log, inside batches): the same findings both ways."""
    stamps, t = [], 0
    for _, step in batches:  # timestamps that mostly grow, sometimes step back
        t += step - 10
        stamps.append(t)
    log = _segment(tmp_path_factory.mktemp("ix") / "t-0", [n for n, _ in batches], stamps, interval)
    if damage:
        f = log.with_suffix("." + which)
        data = bytearray(f.read_bytes())
        if len(data) >= 4:
            at = (where % (len(data) // 4)) * 4
            struct.pack_into(">I", data, at, word)
            f.write_bytes(bytes(data))
    packed, tuples = _both_ways(log)
    assert packed == tuples


def test_broker_indexes_are_decided_in_c(tmp_path, monkeypatch):
    """On the indexes a broker writes the C pass decides: the loops are never reached."""
    if c_twin("index_sound") is None:
        pytest.skip("the C accelerator is not built (or KSEG_PURE_PYTHON is set)")
    log = _segment(tmp_path / "t-0", [3] * 200, list(range(0, 2000, 10)), 200)
    reached = []

    def loop_reached(*args, **kwargs):
        reached.append(args)
        return []

    summaries, controls = summarize_batches(Segment(log).batches())
    rows = BatchRows()
    rows.extend(summaries)
    monkeypatch.setattr(IndexSlots, "rows", loop_reached)  # what the loops go through
    assert check_segment_companions(log, rows, controls, log.stat().st_size) == []
    assert not reached


def test_c_pass_never_passes_what_the_loops_fault(tmp_path):
    """index_sound against its reference on entries around a broker's: True only where the
    loops find nothing."""
    sound = c_twin("index_sound")
    if sound is None:
        pytest.skip("the C accelerator is not built (or KSEG_PURE_PYTHON is set)")
    log = _segment(tmp_path / "t-0", [2, 3, 1, 4] * 10, [i * 7 for i in range(40)], 1)
    rows = BatchRows()
    rows.extend(summarize_batches(Segment(log).batches())[0])
    size = log.stat().st_size
    for kind, suffix, entry in ((0, ".index", 8), (1, ".timeindex", 12)):
        entries = log.with_suffix(suffix).read_bytes()
        assert sound(kind, entries, BASE, rows.data, size) and index_sound_py(kind, entries, BASE, rows.data, size)
        for i in range(0, len(entries), 4):
            for word in (0, 1, 0x7FFFFFFF, 0xFFFFFFFF):
                bad = bytearray(entries)
                struct.pack_into(">I", bad, i, word)
                if sound(kind, bytes(bad), BASE, rows.data, size):
                    assert index_sound_py(kind, bytes(bad), BASE, rows.data, size), (kind, i, word)


def test_rows_read_back_as_summaries():
    rows = BatchRows()
    rows.append((0, None, 4, T0, 100))
    rows.extend([(100, 5, 9, T0 + 1, 80)])
    assert len(rows) == 2 and rows[1] == (100, 5, 9, T0 + 1, 80) and rows[-2].first_offset is None
    assert list(BatchRows.joined([rows, rows])) == [*rows, *rows]
    with pytest.raises(IndexError):
        rows[2]
