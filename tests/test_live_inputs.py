"""Live inputs beyond the failure matrix's cells: how ``stats --format json`` lists the notes of
a segment that went away during the run, and the one identity rule (``kseg.log.identity``)
in-process.

A segment that changes under a command (a broker appending, retention renaming it to
``.deleted`` or deleting it, an overwrite, a cut) is a fault of the failure matrix
(tests/test_failure_matrix.py: ``vanish``, ``renamed``, ``renamed_open``, ``overwrite``,
``appended``, ``shrink``), run on every command: writers publish nothing and exit 2 (or 1
naming the damage when the damage check met the overwritten bytes); readers go on, follow a
renamed segment under its new name or note that it went away; a segment only appended to is
at most a note.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
from pathlib import Path
from typing import Callable

import pytest
from children import KSEG_STOPPING, stopped_itself

from kseg.log.encode import build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record

BATCHES, PER = 60, 20  # per segment: offsets 0..1199, 1200..2399, 2400..3599


def _partition(folder: Path, *, segments: int = 3, magic: int = 2) -> Path:
    rnd = random.Random(1)
    folder.mkdir(parents=True)
    off = 0
    for _ in range(segments):
        base, buf = off, bytearray()
        for _ in range(BATCHES):
            recs = [make_record(off + i, 1_700_000_000_000 + off + i, f"k{off + i}".encode(), rnd.randbytes(200),
                                magic=magic) for i in range(PER)]
            if magic == 2:
                buf += build_v2_batch(recs, codec=0)
            else:
                from kseg.log.encode import build_legacy_message
                for r in recs:
                    buf += build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value)
            off += PER
        (folder / segment_file_name(base)).write_bytes(buf)
    os.utime(folder / segment_file_name(0), ns=(1_700_000_000_000_000_000,) * 2)  # well before the run
    return folder


def _seg(folder: Path, i: int) -> Path:
    return folder / segment_file_name(i * BATCHES * PER)


def run_during(args: list[str], target: Path, act: Callable[[], None]) -> tuple[int, str, str]:
    """Run kseg, stopped by itself right after it first opens ``target`` (stop_at_open), ``act()``,
    continue it: (exit code, stdout, stderr)."""
    env = {**os.environ, "KSEG_TEST_STOP_AT": str(target)}
    proc = subprocess.Popen([*KSEG_STOPPING, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if not stopped_itself(proc):
        out, err = proc.communicate()
        pytest.fail(f"kseg ended without opening {target}: exit {proc.returncode}: {err.decode()[-2000:]}")
    try:
        act()
    finally:
        proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def test_stats_json_lists_the_notes(tmp_path: Path) -> None:
    folder = _partition(tmp_path / "t-0")
    gone = _seg(folder, 1)
    code, out, err = run_during(["stats", str(folder), "--format", "json"], _seg(folder, 0), gone.unlink)
    assert code == 0, err
    notes = [n for t in json.loads(out)["topics"] for p in t["partitions"] for n in p["notes"]]
    assert notes == [f"{gone}: the file went away during the run (deleted by retention or renamed by the broker)"]


def test_identity_change_kinds(tmp_path: Path) -> None:
    """The one rule, in-process: appended, rewritten with the same size, replaced, renamed."""
    from kseg.log import identity

    p = tmp_path / segment_file_name(0)
    p.write_bytes(b"x" * 100)
    os.utime(p, ns=(1, 1))
    before = identity.Identity.of(p.stat())
    assert identity.change(p, before) is None
    with open(p, "ab") as f:
        f.write(b"y")
    c = identity.change(p, before)
    assert c is not None and c.appended and "size 100 -> 101" in c.detail()
    assert c.reader_note().startswith("the file grew during the run (size 100 -> 101")
    p.write_bytes(b"z" * 100)
    c = identity.change(p, before)
    assert c is not None and not c.appended and c.contents_changed
    assert c.reader_note().endswith("the report may not match the file")
    with identity.watching():
        before = identity.opened(p, p.stat())
        identity.require_unchanged()  # unchanged: nothing to say
        p.rename(p.with_name(p.name + ".deleted"))
        c = identity.change(p, before)
        assert c is not None and c.renamed_to == str(p) + ".deleted" and not c.contents_changed
        assert identity.follow(p) == Path(str(p) + ".deleted")
        with pytest.raises(identity.InputChangedError, match=r"renamed to 00000000000000000000\.log\.deleted"):
            identity.require_unchanged()
    assert identity.watched() == []  # the writer's run is over
