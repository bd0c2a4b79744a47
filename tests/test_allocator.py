"""The allocator tuning (``kseg.allocator``): chunk after chunk reuses the same memory.

Counted, not timed: the minor page faults of reading a file in chunks the way a segment is read
(each new chunk allocated while the previous one is still held), with and without the tuning,
in fresh interpreters, once the reading has settled. Untuned, glibc maps and faults in chunks
anew pass after pass, as often as not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kseg.defaults import READ_CHUNK_BYTES

_CHUNKS = 6
_RUN = f"""
import resource, sys
if sys.argv[2] == "tuned":
    from kseg.allocator import tune_for_chunks
    assert tune_for_chunks()
faults = []

def read_through():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    held = None
    with open(sys.argv[1], "rb") as f:
        while True:
            chunk = f.read({READ_CHUNK_BYTES})
            if not chunk:
                break
            held = chunk  # the caller still has the previous chunk's batches when the next is read
            del chunk
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)

for _ in range(3):  # the last pass: the steady state
    read_through()
if sys.argv[3] == "thread":  # then a pass on another thread (an export's read-ahead)
    import threading
    t = threading.Thread(target=read_through)
    t.start()
    t.join()
print(faults[-1])
"""


def _faults(path: Path, mode: str, where: str = "main") -> int:
    out = subprocess.run([sys.executable, "-c", _RUN, str(path), mode, where], capture_output=True, text=True,
                         check=True)
    return int(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_chunks_reuse_their_pages_once_tuned(tmp_path: Path) -> None:
    data = tmp_path / "chunks"
    with data.open("wb") as f:
        f.truncate(_CHUNKS * READ_CHUNK_BYTES)
    pages = READ_CHUNK_BYTES // 4096
    untuned, tuned = _faults(data, "plain"), _faults(data, "tuned")
    # Untuned, whether glibc hands chunks back (and faults them in anew, a chunk's pages per pass
    # or more) depends on where its heap happens to end; tuned, the same pages come back.
    assert tuned < pages // 8
    assert tuned <= untuned


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt: Linux only")
def test_a_thread_reuses_the_same_pages_once_tuned(tmp_path: Path) -> None:
    """A thread reading chunks after the main thread did takes the pages the main thread freed:
    untuned, it reads into an arena of its own, its pages faulted in anew."""
    data = tmp_path / "chunks"
    with data.open("wb") as f:
        f.truncate(_CHUNKS * READ_CHUNK_BYTES)
    pages = READ_CHUNK_BYTES // 4096
    untuned, tuned = _faults(data, "plain", "thread"), _faults(data, "tuned", "thread")
    assert tuned < pages // 8
    assert untuned >= pages  # what the case proves: an untuned thread does fault its chunks in


def test_tuning_is_set_once() -> None:
    from kseg.allocator import tune_for_chunks

    first = tune_for_chunks()
    assert tune_for_chunks() is first
