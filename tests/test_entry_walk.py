"""Where a log's entries start, by their lengths (``kseg.log.entry_walk``): the C walk and its
Python reference give the same positions on every magic, on large entries read header by header,
and on any flipped or cut byte, whatever the sizes of their reads; on a sound log every position is the first entry start that the
scanner finds at or after its multiple; a failed read is an OSError from both."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import examples
from kseg.log import entry_walk
from kseg.log.encode import build_v2_batch
from kseg.log.fast import _speedups, scan_entries
from kseg.model import make_record

sys.path.insert(0, str(Path(__file__).parent))
from builders import entries  # noqa: E402

WALKS = {"python": entry_walk.entry_starts_py}
if _speedups is not None:
    WALKS["c"] = _speedups.entry_starts
# (bytes per read, the entry length past which only a header is read): the walk's own, a header
# at a time, reads that end inside headers, whole-buffer reads whatever the entries' lengths.
READS = {"own": (entry_walk.WALK_READ_BYTES, entry_walk.LARGE_ENTRY_BYTES), "header": (17, 0),
         "odd": (100, 0), "no large rule": (4096, 1 << 30)}


def _large(n: int) -> bytes:
    """v2 batches of 20-40 KiB (past the walk's large-entry bound: read a header at a time)
    between small ones."""
    out = b""
    for i in range(n):
        size = (20 << 10) + (i * 7919) % (20 << 10) if i % 3 else 50
        out += build_v2_batch([make_record(i, 1_700_000_000_000 + i, b"k", bytes([i % 251]) * size)],
                              base_offset=i, partition_leader_epoch=0)
    return out


LOGS = {
    "v2 small batches": entries(2, "none", 0, n_batches=400, per=2),
    "v2 lz4": entries(2, "lz4", 0, n_batches=100, per=5),
    "v1 messages and wrappers": entries(1, "none", 0, n_batches=60, per=2) + entries(1, "gzip", 120, n_batches=30),
    "v0 snappy": entries(0, "snappy", 0, n_batches=50, per=3),
    "v2 large entries": _large(30),
}


def _walk(tmp_path: Path, data: bytes, every: int) -> dict[str, list[int]]:
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(data)
    fd = os.open(log, os.O_RDONLY)
    try:
        return {f"{name}, {reads} reads": walk(fd, len(data), every, *READS[reads])
                for name, walk in WALKS.items() for reads in READS}
    finally:
        os.close(fd)


def _first_at_or_after(starts: list[int], size: int, every: int) -> list[int]:
    out: list[int] = []
    for target in range(every, size, every):
        after = [p for p in starts if p >= target]
        if after and (not out or after[0] > out[-1]):
            out.append(after[0])
    return out


@pytest.mark.parametrize("name", list(LOGS))
@pytest.mark.parametrize("every", [1, 97, 4096, "a third"])
def test_the_walk_names_the_first_entry_start_after_each_multiple(tmp_path, name, every):
    data = LOGS[name]
    every = len(data) // 3 if every == "a third" else every
    starts = [b.position for b in scan_entries(data, 0, final=True).batches]
    found = _walk(tmp_path, data, every)
    expected = _first_at_or_after(starts, len(data), every)
    assert expected, "the case names no position: it proves nothing"
    for walk, positions in found.items():
        assert positions == expected, walk


@examples(300)
@given(log=st.sampled_from(sorted(LOGS)), flips=st.lists(st.integers(0, 10**9), max_size=3),
       cut=st.integers(0, 10**9), every=st.integers(1, 50_000))
def test_c_and_python_walk_alike_on_any_damage(tmp_path_factory, log, flips, cut, every):
    data = bytearray(LOGS[log])
    for f in flips:
        data[f % len(data)] ^= 0xFF
    data = bytes(data[:len(data) - cut % 300])
    found = _walk(tmp_path_factory.mktemp("w"), data, every)
    assert len(set(map(tuple, found.values()))) == 1, found


@pytest.mark.parametrize("walk", list(WALKS))
def test_a_read_that_fails_is_an_os_error(tmp_path, walk):
    d = os.open(tmp_path, os.O_RDONLY)  # reading a folder: EISDIR
    try:
        with pytest.raises(OSError):
            WALKS[walk](d, 1 << 20, 4096, *READS["own"])
    finally:
        os.close(d)
    with pytest.raises(ValueError):
        WALKS[walk](0, 100, 0, *READS["own"])
    with pytest.raises(ValueError):  # a read shorter than a header could never take one
        WALKS[walk](0, 100, 10, 16, 0)


def test_the_c_walk_is_the_one_in_use():
    from kseg.log.fast import ACCELERATED

    if not ACCELERATED:
        pytest.skip("the accelerator is off (KSEG_PURE_PYTHON) or not built: the Python walk is in use")
    assert entry_walk._C_ENTRY_STARTS is _speedups.entry_starts
