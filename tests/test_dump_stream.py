"""``kseg dump`` as a stream in a real process: ``| head`` ends quietly with exit 0, Ctrl-C
stops promptly with exit 130 and no traceback; filters seek with the indexes and skip
batches on their headers; ``--from-time`` takes ISO-8601."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from children import restore_signals
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.companions.build import build_indexes
from kseg.log.encode import build_v2_batch
from kseg.log.segment import strict_batches
from kseg.model import make_record

BATCHES, PER_BATCH = 400, 100
T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def big_segment(tmp_path_factory) -> Path:
    """40,000 records (about 10 MB of jsonl), with .index and .timeindex."""
    folder = tmp_path_factory.mktemp("stream") / "t-0"
    folder.mkdir()
    log = folder / "00000000000000000000.log"
    value = b"v" * 200
    with open(log, "wb") as f:
        for i in range(BATCHES):
            first = i * PER_BATCH
            recs = [make_record(first + j, T0 + first + j, b"key-%d" % (first + j), value)
                    for j in range(PER_BATCH)]
            f.write(build_v2_batch(recs, base_offset=first, codec=1))
    index, timeindex = build_indexes(list(strict_batches(log)), 0, 4096)
    log.with_suffix(".index").write_bytes(index)
    log.with_suffix(".timeindex").write_bytes(timeindex)
    return log


def _kseg(*args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="0")
    # default signal dispositions: a suite started in the background hands its children "ignore SIGINT"
    return subprocess.Popen([sys.executable, "-m", "kseg.cli.main", *args], env=env, preexec_fn=restore_signals,
                            **kw)


def test_head_ends_quietly(big_segment) -> None:
    proc = _kseg("dump", "-r", "--format", "jsonl", str(big_segment), stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -n 1` does
    rc = proc.wait(timeout=60)
    err = proc.stderr.read().decode()
    assert json.loads(first)["type"] == "batch"
    assert rc == 0 and err == ""


def test_shell_pipe_to_head(big_segment) -> None:
    cmd = f"{sys.executable} -m kseg.cli.main dump -r {big_segment} | head -n 3; exit ${{PIPESTATUS[0]}}"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=60)
    assert proc.returncode == 0
    assert proc.stderr == b""
    assert len(proc.stdout.splitlines()) == 3


@pytest.mark.parametrize("reader", ["stalled", "busy"])
def test_ctrl_c_exits_130_without_traceback(big_segment, tmp_path, reader) -> None:
    """SIGINT while blocked on a full pipe (nobody reads) or while busy writing to a file."""
    if reader == "stalled":
        proc = _kseg("dump", "-r", "--format", "jsonl", str(big_segment), stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
        assert proc.stdout is not None
        proc.stdout.read(1)  # it is running and has written; now the pipe fills up
        time.sleep(0.5)
    else:
        many = [str(big_segment)] * 50
        out = tmp_path / "out.txt"
        with open(out, "wb") as f:
            proc = _kseg("dump", "-r", "--format", "text", *many, stdout=f, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while out.stat().st_size == 0 and time.monotonic() < deadline:  # past start-up, into the dump
            time.sleep(0.05)
        assert proc.poll() is None
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=10)
    assert time.monotonic() - t0 < 5
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert rc == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def _jsonl(*args: str) -> list[dict]:
    result = CliRunner().invoke(main, ["dump", "-r", "--format", "jsonl", *args])
    assert result.exit_code == 0, result.output
    return [json.loads(x) for x in result.stdout.splitlines()]


def test_from_offset_seeks_with_the_index(big_segment, monkeypatch) -> None:
    import kseg.ops.dump as dump

    starts = []
    real = dump.Segment.batch_lists

    def spy(self, *, start=0, end=None, **kw):
        starts.append(start)
        return real(self, start=start, end=end, **kw)

    monkeypatch.setattr(dump.Segment, "batch_lists", spy)
    target = 25_050
    out = _jsonl("--from-offset", str(target), "--to-offset", str(target + 149), str(big_segment))
    records = [o["offset"] for o in out if o["type"] == "record"]
    assert records == list(range(target, target + 150))
    assert starts and starts[0] > big_segment.stat().st_size // 2  # started near the offset, not at 0


def test_from_time_iso_and_ms_agree(big_segment) -> None:
    ms = T0 + 31_234
    iso = "2023-11-14T22:13:51.234Z"  # the same instant
    a = _jsonl("--from-time", str(ms), "--to-offset", "31300", str(big_segment))
    b = _jsonl("--from-time", iso, "--to-offset", "31300", str(big_segment))
    assert a == b
    assert [o["offset"] for o in a if o["type"] == "record"] == list(range(31_234, 31_301))


def test_bad_iso_time_is_a_usage_error(big_segment) -> None:
    result = CliRunner().invoke(main, ["dump", "--from-time", "yesterday", str(big_segment)])
    assert result.exit_code == 2


def test_stale_index_is_not_trusted(big_segment, tmp_path) -> None:
    """An index pointing into the middle of a batch: the dump reads from the start instead."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    log = folder / big_segment.name
    log.write_bytes(big_segment.read_bytes())
    index = bytearray(big_segment.with_suffix(".index").read_bytes())
    index[4:8] = (int.from_bytes(index[4:8], "big") + 7).to_bytes(4, "big")  # first entry: a wrong position
    log.with_suffix(".index").write_bytes(bytes(index))
    target = int.from_bytes(index[0:4], "big")
    out = _jsonl("--from-offset", str(target), "--to-offset", str(target + 10), str(log))
    assert [o["offset"] for o in out if o["type"] == "record"] == list(range(target, target + 11))


# --------------------------------------------------------------------------- index files


def test_index_lines_in_bulk_are_the_entry_by_entry_lines(tmp_path) -> None:
    """The index files' kafka and jsonl lines, written in pieces from the file's bytes, are those
    the entry-by-entry path writes from dicts; the text format has fixed columns that widen."""
    import dataclasses
    import io
    import struct as st_

    from kseg.ops.companion_dump import dump_companion
    from kseg.render.dump import JsonlRenderer, KafkaRenderer, TextRenderer

    index = tmp_path / "00000000000000000100.index"
    index.write_bytes(st_.pack(">iiii", 0, 0, 2_000_000_000, 2_147_483_647) + bytes(8))
    timeindex = tmp_path / "00000000000000000100.timeindex"
    timeindex.write_bytes(st_.pack(">qiqi", -1, 0, 9_223_372_036_854_775_807, 7))
    for path, kind in ((index, "index"), (timeindex, "timeindex")):
        ev = dump_companion(path, kind)
        by_entry = dataclasses.replace(ev, entries=list(ev.entries))
        for make in (lambda o: KafkaRenderer(o, io.StringIO(), None, None),
                     lambda o: JsonlRenderer(o, io.StringIO(), None, None)):
            bulk, plain = io.BytesIO(), io.BytesIO()
            make(bulk)(ev)
            make(plain)(by_entry)
            assert bulk.getvalue() == plain.getvalue()
    text = io.BytesIO()
    r = TextRenderer(text, io.StringIO(), None, None)
    r(dump_companion(index, "index"))
    r(dump_companion(timeindex, "timeindex"))
    assert text.getvalue().decode().splitlines() == [
        "  zero_tail 1",
        "    offset    position",
        "       100           0",
        "  2000000100  2147483647",
        "      timestamp    offset",
        "             -1       100",
        "  9223372036854775807       107",
    ]


def test_a_full_index_dumps_in_flat_memory(tmp_path) -> None:
    """A 10 MB .index (the broker's largest, 1.3 M entries) in every format: under 100 MB of RSS."""
    import struct as st_

    path = tmp_path / "00000000000000000000.index"
    n = 10 * 1024 * 1024 // 8
    path.write_bytes(b"".join(st_.pack(">ii", i * 100, i * 1600) for i in range(n)))
    # The peak of the process's own memory map (VmHWM: getrusage's would include the forked test's)
    code = ("import sys\nfrom kseg.cli.main import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write([x for x in open('/proc/self/status') if x.startswith('VmHWM')][0])\n")
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc/self/status to read a process's peak memory from")
    for fmt in ("text", "jsonl", "kafka"):
        proc = subprocess.run([sys.executable, "-c", code, "dump", "--format", fmt, str(path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        rss_kb = int(proc.stderr.decode().rsplit("VmHWM:", 1)[1].split()[0])
        assert rss_kb < 100 * 1024, (fmt, rss_kb)
        assert proc.stdout.count(b"\n") >= n
