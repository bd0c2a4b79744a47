"""One operation, many executors: every split operation (``kseg.ops.operations.SPLITTABLE``)
gives the same bytes and exit code run serially (``-j 1``, the reference) and on a process pool
(``-j 2``), on clean, multi-segment and damaged inputs; the check across segments that merge
makes agrees with reading each segment after its predecessor; errors surface in plan order;
a signal ends the command with its one line, its exit code and no worker left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.errors import DataError
from kseg.log.encode import build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record
from kseg.ops import verify
from kseg.ops.executors import Operation, execute
from kseg.ops.operations import SPLITTABLE
from kseg.storage import as_path

sys.path.insert(0, str(Path(__file__).parent))
from builders import write_partition  # noqa: E402
from children import restore_signals  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "logdir"

# Every split operation: the option sets its -j 1 and -j 2 runs are compared with.
CASES: dict[str, list[tuple[str, ...]]] = {
    "verify": [(), ("-v",), ("--quick", "-v"), ("--format", "json"), ("--no-index", "-v")],
    "stats": [(), ("--segments",), ("--format", "json")],
    "find": [("--value-regex", "."), ("--key", "k1"), ("--format", "json", "--from-offset", "3")],
    "dump": [(), ("--records",), ("--format", "jsonl", "--records"), ("--format", "kafka", "--records"),
             ("--format", "kafka", "--verify-index-only"), ("--records", "--keep-going", "--payload", "hex"),
             ("--format", "jsonl", "--records", "--keep-going", "--from-offset", "3"),
             ("--format", "text", "--fields", "offset,key", "--key-decoder", "hex"),
             ("--format", "jsonl", "--records", "--redact", "keys,values", "--redact-key", "k", "--decode", "auto")],
    "txn": [("--now-ms", "0"), ("--now-ms", "0", "--all", "--format", "json")],
    "diff": [(FIXTURES,), (FIXTURES, "--records", "--format", "json")],  # the fixtures against each input
}
# Every writer (and index, which checks or writes): the option sets whose outputs (every file's
# bytes), summaries and exit codes -j 1 and -j 2 must share ("-o OUT" is added but to a dry run
# or a check; NOW is compact's clock).
NOW = "1700000000000"
WRITERS: dict[str, list[tuple[str, ...]]] = {
    "up-convert": [("--to-magic", "2"), ("--to-magic", "2", "--codec", "zstd", "--on-damage", "skip"),
                   ("--to-magic", "1", "--on-damage", "carry", "--skip-unconvertible")],
    "down-convert": [("--to-magic", "1", "--codec", "gzip"), ("--to-magic", "0", "--codec", "gzip", "--on-damage", "skip")],
    "recompress": [("--codec", "lz4"), ("--codec", "snappy", "--topics", "v2-gzip,m", "--on-damage", "carry")],
    "rebase": [("--base-offset", "1000"), ("--base-offset", "5", "--on-damage", "skip", "--no-index")],
    "compact": [("--now-ms", NOW), ("--now-ms", NOW, "--on-damage", "skip", "--keep-segments"),
                ("--now-ms", NOW, "--dry-run", "--format", "json")],
    "salvage": [(), ("--format", "json"), ("--dry-run",)],
    "index": [("--rebuild",), ("--rebuild", "--on-damage", "skip", "--index-interval-bytes", "1"),
              ("--check",)],
    "export": [(), ("--format", "arrow", "--on-damage", "skip", "--from-offset", "3")],
}
TRANSACTIONS = [REPO / "fixtures" / "kafka-4" / "logdir", REPO / "fixtures" / "kafka-cleaner" / "4" / "before",
                REPO / "fixtures" / "kafka-cleaner" / "4" / "before2"]


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _v2_segment(folder: Path, base: int, offsets: list[int]) -> Path:
    raw = b"".join(build_v2_batch([make_record(o, 1_700_000_000_000 + o, b"k", b"v")]) for o in offsets)
    path = folder / segment_file_name(base)
    path.write_bytes(raw)
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """The fixtures' log directory; one partition of many segments; a log directory with
    problems across segments (offsets going back, a gap, gaps past the note cap), a flipped
    byte in a compressed payload and a cut tail."""
    root = tmp_path_factory.mktemp("executors")
    write_partition(root / "multi" / "m-0", 2, "gzip", segments=9, n_batches=5, per=6)
    bad = root / "bad"
    for name in ("v2-gzip-0", "v1-snappy-0", "v0-lz4-0", "compacted-v1-gzip-0", "mixed-magic-0"):
        dst = bad / name
        dst.mkdir(parents=True)
        for f in (FIXTURES / name).iterdir():
            dst.joinpath(f.name).write_bytes(f.read_bytes())
    seg = bad / "v2-gzip-0" / segment_file_name(17)
    data = bytearray(seg.read_bytes())
    data[150] ^= 0xFF  # inside the first batch's compressed records
    seg.write_bytes(bytes(data))
    seg = bad / "v1-snappy-0" / segment_file_name(0)
    seg.write_bytes(seg.read_bytes()[:-7])
    for name, segments in (("back-0", {0: [0, 1, 2, 3, 4, 5], 6: [3, 4, 9, 7], 10: [10, 11]}),
                           ("gap-0", {0: [0, 1, 2], 10: [10, 11, 30]}),
                           ("many-0", {0: [0, 1, 2, 3], 4: [4] + [10 * i for i in range(1, 30)], 300: [300, 302]}),
                           ("capped-0", {0: [0] + [2 * i for i in range(1, 25)], 100: [100, 101]})):
        (bad / name).mkdir()
        for base, offsets in segments.items():
            _v2_segment(bad / name, base, offsets)
    return {"logdir": FIXTURES, "multi": root / "multi" / "m-0", "bad": bad}


def test_every_split_operation_is_listed_and_has_cases():
    """A module of kseg.ops that defines an OPERATION is in the table, and each has its cases here."""
    defined = set()
    for path in sorted((REPO / "kseg" / "ops").glob("*.py")):
        if re.search(r"^OPERATION = Operation\(", path.read_text(), re.M):
            defined.add(path.stem)
    listed = {op.run.__module__.rsplit(".", 1)[1] for op in SPLITTABLE.values()}
    assert defined == listed, "an OPERATION not listed in kseg.ops.operations.SPLITTABLE"
    assert set(SPLITTABLE) == set(CASES) | set(WRITERS), "a split operation without its row in CASES or WRITERS"


@pytest.mark.parametrize("op,args", [(op, a) for op, cases in CASES.items() for a in cases])
@pytest.mark.parametrize("which", ["logdir", "multi", "bad"])
def test_pool_gives_the_serial_bytes(inputs, op, args, which):
    serial = cli(op, *args, "-j", "1", inputs[which])
    pooled = cli(op, *args, "-j", "2", inputs[which])
    assert (pooled.exit_code, pooled.stdout, pooled.stderr) == (serial.exit_code, serial.stdout, serial.stderr)
    assert serial.exit_code == 1 or which != "bad", serial.stdout


def _tree(root: Path) -> dict[str, bytes]:
    if root.is_file():
        return {"": root.read_bytes()}
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("op,args", [(op, a) for op, cases in WRITERS.items() for a in cases])
@pytest.mark.parametrize("which", ["logdir", "multi", "bad"])
def test_pool_writes_the_serial_output(inputs, tmp_path, op, args, which):
    """Each writer run serially and on a pool: the same files, byte for byte, the same summary
    and the same exit code (a failing run: the same one line, and no output from either)."""
    runs = []
    for j in ("1", "2"):
        out = tmp_path / f"out-{j}"
        r = cli(op, *args, "-j", j, inputs[which], *(() if {"--dry-run", "--check"} & set(args) else ("-o", out)))
        runs.append((r.exit_code, r.stdout.replace(str(out), "OUT"), r.stderr.replace(str(out), "OUT"),
                     _tree(out) if out.exists() else None, sorted(p.name for p in tmp_path.iterdir())))
    assert runs[0][:4] == runs[1][:4]
    assert runs[0][0] == 0 or which == "bad" or "--skip-unconvertible" in args, runs[0][2]
    assert runs[0][3] is not None or runs[0][0] != 0 or {"--dry-run", "--check"} & set(args)
    assert not [n for n in runs[1][4] if n.startswith(".")], "a temporary left behind"


@pytest.mark.parametrize("args", [(), ("--all", "--format", "json"), ("--max-timeout-ms", "10")])
def test_txn_pool_gives_the_serial_report_with_transactions(args):
    """Partitions with committed, aborted and open transactions (named from __transaction_state)."""
    serial = cli("txn", "--now-ms", "1800000000000", *args, "-j", "1", *TRANSACTIONS)
    pooled = cli("txn", "--now-ms", "1800000000000", *args, "-j", "2", *TRANSACTIONS)
    assert "txn-producer" in serial.stdout and "aborted" in serial.stdout
    assert (pooled.exit_code, pooled.stdout, pooled.stderr) == (serial.exit_code, serial.stdout, serial.stderr)


@pytest.mark.parametrize("args", [(), ("--records",), ("--format", "json", "--check-crc")])
def test_diff_pool_gives_the_serial_report_on_partitions_that_differ(inputs, tmp_path, args):
    """Two log directories of the same partitions, one with a batch changed, one cut short, one missing."""
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        for name in ("v2-gzip-0", "v1-snappy-0", "v0-lz4-0", "mixed-magic-0", "compacted-v2-0"):
            if root == b and name == "v0-lz4-0":
                continue
            (root / name).mkdir(parents=True)
            for f in (FIXTURES / name).iterdir():
                (root / name / f.name).write_bytes(f.read_bytes())
    for name in ("v2-gzip-0", "v1-snappy-0"):
        seg = sorted((b / name).glob("*.log"))[-1]
        data = bytearray(seg.read_bytes())
        data[-40] ^= 0xFF
        seg.write_bytes(bytes(data[:-3] if name == "v1-snappy-0" else data))
    serial = cli("diff", *args, "-j", "1", a, b)
    pooled = cli("diff", *args, "-j", "2", a, b)
    assert serial.exit_code == 1
    assert (pooled.exit_code, pooled.stdout, pooled.stderr) == (serial.exit_code, serial.stdout, serial.stderr)


def test_damaged_input_is_reported(inputs):
    r = cli("verify", "-j", "2", inputs["bad"])
    assert r.exit_code == 1 and "offsets do not increase" in r.stdout and "crc" in r.stdout.lower()


@pytest.mark.parametrize("quick", [False, True])
def test_merge_decides_offsets_across_segments_as_a_sequential_read(inputs, quick):
    """Each log read alone, then continued after a segment ending at ``prev``, is what reading
    it with ``prev`` gives: notes at their place, the note cap, offsets going back."""
    options = verify.VerifyOptions(quick=quick)
    segs = sorted(p for d in sorted(inputs["bad"].iterdir()) for p in d.glob("*.log"))
    assert len(segs) > 10
    for seg in segs:
        unit = verify.VerifyUnit(str(seg), verify.LOG_UNIT, 0)
        for prev in (None, -5, 0, 2, 3, 5, 9, 40, 10**6):
            got = verify.continue_after(verify.run(unit, options), prev, options)
            assert got == verify.verify_file(as_path(str(seg)), options, prev), (seg, prev)


# --------------------------------------------------------------------------- the executors themselves


@dataclass(frozen=True)
class _Unit:
    i: int
    weight: int = 1
    local: bool = False


def _plan(n: int, opts: frozenset) -> list[_Unit]:
    return [_Unit(i, weight=1 + i % 3) for i in range(n)]


def _run(u: _Unit, failing: frozenset) -> tuple[int, int]:
    if u.i in failing:
        raise DataError(f"unit {u.i} is broken", file=f"part-{u.i}", position=u.i)
    return u.i, u.i * u.i


def _merge(partials, opts) -> list:
    return list(partials)


TOY = Operation("toy", _plan, _run, _merge)


def _run_where(u: _Unit, failing: frozenset) -> tuple[int, int, bool]:
    return (*_run(u, failing), os.getpid() == _HERE_PID)


_HERE_PID = os.getpid()
# An operation whose units can also run in the merging process (``here``), as dump's do.
TOY_HERE = Operation("toy-here", _plan, _run_where, _merge, here=_run_where)


@pytest.mark.parametrize("n", [2, 3, 7, 50])
@pytest.mark.parametrize("jobs", [2, 3])
def test_two_ended_pool_runs_the_front_here_and_the_back_on_workers(n, jobs):
    """Units from the front run here, from the back on workers, and merge gets them in plan order:
    the serial results, here a prefix with the first unit in it, the workers' the rest (at least
    the last unit: a worker takes it before this process starts)."""
    serial = execute(TOY_HERE, n, frozenset(), 1)
    pooled = execute(TOY_HERE, n, frozenset(), jobs)
    assert [r[:2] for r in pooled] == [r[:2] for r in serial] == [(i, i * i) for i in range(n)]
    where = [r[2] for r in pooled]
    mine = where.count(True)
    assert where == [True] * mine + [False] * (n - mine) and 1 <= mine < n, where


@pytest.mark.parametrize("n", [0, 1, 2, 7, 50])
def test_pool_keeps_plan_order(n):
    assert execute(TOY, n, frozenset(), 2) == execute(TOY, n, frozenset(), 1) == [(i, i * i) for i in range(n)]


@pytest.mark.parametrize("failing", [{0}, {1}, {5}, {5, 9}, {49}])
@pytest.mark.parametrize("op", [TOY, TOY_HERE], ids=["pool", "two-ended"])
def test_pool_raises_the_error_serial_raises(op, failing):
    """The first failing unit in plan order, the same error (type, line), whichever runs it
    (the two-ended pool: this process from the front, a worker from the back)."""
    errors = []
    for jobs in (1, 2):
        with pytest.raises(DataError) as e:
            execute(op, 50, frozenset(failing), jobs)
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1] and f"unit {min(failing)} is broken" in errors[0][1]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


STOPPED_POOLS = """
import time
from kseg.ops.executors import _start_pool, _stop
left = []
for _ in range(20):
    pool = _start_pool(2)
    pool.submit(time.sleep, 30)
    manager, wakeup = pool._executor_manager_thread, pool._executor_manager_thread_wakeup
    _stop(pool)
    if manager.is_alive() and not wakeup._closed:
        left.append(manager)
print(len(left))
"""


def test_a_stopped_pool_leaves_nothing_for_the_exit_hook():
    """After ``_stop`` (an interrupt, an error), no pool's manager thread is left to race the
    interpreter's exit hook over its wake-up pipe: that race printed a traceback ("Bad file
    descriptor") under "kseg: interrupted" now and then."""
    r = subprocess.run([sys.executable, "-c", STOPPED_POOLS], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (r.stdout, r.stderr) == ("0\n", ""), (r.stdout, r.stderr)


@pytest.mark.parametrize("sig,code,line", [(signal.SIGTERM, 143, "kseg: terminated"),
                                           (signal.SIGINT, 130, "kseg: interrupted")])
@pytest.mark.parametrize("command", [("verify",), ("dump", "--records", "--format", "jsonl")])
def test_signal_with_a_pool_leaves_no_worker(tmp_path, sig, code, line, command):
    """Stopped while its workers run, the command ends with the signal's code and its line
    (dump: none on Ctrl-C), and none of its workers, nor a spooled output, outlives it."""
    root = tmp_path / "logdir"
    for p in range(4):
        write_partition(root / f"t-{p}", 2, "gzip", segments=4, n_batches=200, per=20)
    spools = tmp_path / "tmp"
    spools.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(spools)}
    proc = subprocess.Popen([sys.executable, "-c", "from kseg.cli import run; run()", *command, "-j", "2", str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, preexec_fn=restore_signals)
    workers: list[int] = []
    wanted = 1 if SPLITTABLE[command[0]].here else 2  # -j 2 with units run here too: one worker
    end = time.monotonic() + 60
    while time.monotonic() < end and proc.poll() is None:
        workers = _children(proc.pid)
        if len(workers) >= wanted:
            proc.send_signal(signal.SIGSTOP)
            workers = _children(proc.pid)
            break
        time.sleep(0.0005)
    assert len(workers) >= wanted, "the pool never started"
    proc.send_signal(sig)
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=60)
    if command[0] == "dump" and sig == signal.SIGINT:
        line = ""  # dump stops quietly on Ctrl-C, as serially
    assert (proc.returncode, err.decode()) == (code, line and line + "\n"), out
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)]
    assert list(spools.iterdir()) == []


def _run_or_die(u: _Unit, failing: frozenset) -> tuple[int, int]:
    if u.i in failing:
        os.kill(os.getpid(), signal.SIGKILL)  # a worker killed (the OOM killer, an operator)
    return _run(u, frozenset())


def test_a_worker_killed_is_one_error_line():
    from kseg.errors import InputError

    with pytest.raises(InputError, match="worker process ended unexpectedly"):
        execute(Operation("dies", _plan, _run_or_die, _merge), 20, frozenset({7}), 2)


def test_spool_gives_back_its_items_in_order_and_removes_its_file(tmp_path):
    from kseg.ops.spool import Spool

    spool = Spool(str(tmp_path), in_memory=100)
    for i in range(1050):
        spool.add(("item", i, b"x" * (i % 7)))
    done = spool.done()
    assert done.path is not None and len(done.tail) == 50
    assert list(done) == [("item", i, b"x" * (i % 7)) for i in range(1050)]
    assert list(tmp_path.iterdir()) == []


def test_find_with_many_matches_spools_and_leaves_nothing(tmp_path, monkeypatch):
    """Partitions whose matches pass the in-memory limit: -j 2 prints the serial bytes and the
    spool folder is gone afterwards, also when the reader stops early."""
    import tempfile

    from kseg.ops.find import FindOptions, find

    for n in range(3):
        write_partition(tmp_path / "data" / f"t-{n}", 2, "none", segments=2, n_batches=30, per=100)
    spool_root = tmp_path / "tmp"
    spool_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool_root))
    serial = cli("find", "--value-regex", ".", "-j", "1", tmp_path / "data")
    pooled = cli("find", "--value-regex", ".", "-j", "2", tmp_path / "data")
    assert serial.stdout.count("\n") > 3 * 4096  # each partition past the in-memory limit
    assert (pooled.exit_code, pooled.stdout, pooled.stderr) == (serial.exit_code, serial.stdout, serial.stderr)
    assert list(spool_root.iterdir()) == []
    found = find([tmp_path / "data"], FindOptions(), jobs=2)
    first = [next(found) for _ in range(10)]
    assert len(first) == 10
    found.close()
    assert list(spool_root.iterdir()) == []


def test_dump_spools_large_outputs_and_leaves_nothing(tmp_path, monkeypatch):
    """Files whose output passes the in-memory limit, stderr lines among them (a user decoder
    failing, a cut tail): -j 2 prints the serial bytes, the decoder's failures are summed
    across workers, and the spool folder is gone afterwards."""
    import tempfile

    from kseg.ops import spool

    for n in range(3):
        write_partition(tmp_path / "data" / f"t-{n}", 2, "none", segments=3, n_batches=20, per=50)
    seg = tmp_path / "data" / "t-1" / segment_file_name(0)
    seg.write_bytes(seg.read_bytes()[:-9])
    (tmp_path / "mydec.py").write_text("def dec(b):\n    if b'7-' in b:\n        raise ValueError('no 7')\n"
                                       "    return b.decode()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spool_root = tmp_path / "tmp"
    spool_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool_root))
    monkeypatch.setattr(spool, "BYTES_IN_MEMORY", 4096)
    for fmt in ("text", "jsonl", "kafka"):
        args = ("dump", "--records", "--format", fmt, "--value-decoder", "mydec:dec", tmp_path / "data")
        serial = cli(*args, "-j", "1")
        pooled = cli(*args, "-j", "2")
        assert serial.stdout.count("\n") > 3000 and "could not decode" in serial.stderr
        assert (pooled.exit_code, pooled.stdout, pooled.stderr) == (serial.exit_code, serial.stdout, serial.stderr)
        assert serial.exit_code == 1
    assert list(spool_root.iterdir()) == []


@pytest.mark.parametrize("count", [1, 1023, 1024, 1025, 2500])
def test_write_all_writes_every_piece_in_order(tmp_path, count):
    """The spool's writev groups (1024 pieces a call) leave nothing out and keep the order."""
    from kseg.ops.spool import write_all

    parts = [bytes([i % 251]) * (1 + i % 7) for i in range(count)]
    path = tmp_path / "out"
    with open(path, "wb", buffering=0) as f:
        write_all(f.fileno(), parts)
    assert path.read_bytes() == b"".join(parts)


def test_byte_spool_keeps_each_line_at_its_place(tmp_path):
    from kseg.ops.spool import ByteSpool, FileSpan

    spool = ByteSpool(str(tmp_path), in_memory=10)
    want: list = []
    for i in range(40):
        spool.write(b"%d," % i * (i % 4))
        want.append(b"%d," % i * (i % 4))
        if i % 7 == 0:
            spool.note(f"line {i}\n")
            want.append(f"line {i}\n")
    done = spool.done()
    assert done.path is not None
    got = [b"".join(x.chunks()) if isinstance(x, FileSpan) else x for x in done]
    assert b"".join(x for x in got if isinstance(x, bytes)) == b"".join(x for x in want if isinstance(x, bytes))
    merged, pending = [], b""
    for x in got:  # the bytes between two lines, joined: the order of bytes and lines as written
        if isinstance(x, bytes):
            pending += x
        else:
            merged += [pending, x]
            pending = b""
    expect, pending = [], b""
    for x in want:
        if isinstance(x, bytes):
            pending += x
        else:
            expect += [pending, x]
            pending = b""
    assert merged == expect
    assert list(tmp_path.iterdir()) == []


def test_dump_to_a_real_file_sends_spooled_outputs_in_the_kernel(tmp_path):
    """Output to a file descriptor (sendfile from the spools) and to a pipe: the serial bytes,
    with units whose output passes the in-memory limit."""
    from kseg.ops.spool import BYTES_IN_MEMORY

    for n in range(2):
        write_partition(tmp_path / "data" / f"t-{n}", 2, "none", segments=2, n_batches=120, per=400)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outputs = []
    for j in ("1", "2"):
        target = tmp_path / f"out-{j}"
        with open(target, "wb") as f:
            r = subprocess.run([sys.executable, "-c", "from kseg.cli import run; run()", "dump", "--records",
                                "--format", "jsonl", "-j", j, str(tmp_path / "data")], stdout=f,
                               stderr=subprocess.PIPE, env=env, timeout=300)
        piped = subprocess.run([sys.executable, "-c", "from kseg.cli import run; run()", "dump", "--records",
                                "--format", "jsonl", "-j", j, str(tmp_path / "data")], capture_output=True,
                               env=env, timeout=300)
        outputs.append((r.returncode, target.read_bytes(), r.stderr))
        assert (piped.returncode, piped.stdout, piped.stderr) == outputs[-1]
    assert outputs[0] == outputs[1]
    assert len(outputs[0][1]) > 4 * BYTES_IN_MEMORY  # each segment's output spooled to a file


def _followed(op, inputs, opts, jobs=1):
    """An executor as Spark's streamed one, in threads: units run one after another elsewhere, each
    writing its output to a live file; merge takes every partial at once and reads the output
    as it is written (``Operation.live``/``following``)."""
    import threading
    from functools import partial

    from kseg.ops.executors import run_caught

    units = list(op.plan(inputs, opts))
    folder = Path(inputs[1])
    done: dict[int, object] = {}
    stop = threading.Event()

    def work() -> None:
        for i, u in enumerate(units):
            if stop.is_set():  # merge ended early (an error): the units left are not run, as Spark's job is cancelled
                return
            done[i] = run_caught(op, opts, op.live(u, str(folder / f"{i}.live")))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()

    def finished(i: int):
        while i not in done:
            time.sleep(0.005)
        return done[i]

    partials = (op.following(u, str(folder / f"{i}.live"), partial(finished, i), worker.is_alive)
                for i, u in enumerate(units))

    def merged():
        # The worker is stopped and waited for however merge ends, before the caller removes
        # the folder its live files are in.
        try:
            yield from op.merge(partials, opts)
        finally:
            stop.set()
            worker.join()

    return merged()


@pytest.mark.parametrize("args", CASES["dump"])
@pytest.mark.parametrize("which", ["logdir", "bad"])
def test_followed_dump_gives_the_serial_output(inputs, monkeypatch, args, which):
    """Dump's units followed while they run (as ``kseg spark dump`` does) print the serial
    command's stdout and stderr, with the same exit code, on healthy and damaged data."""
    import kseg.cli.dump

    serial = cli("dump", *args, "-j", "1", inputs[which])
    monkeypatch.setattr(kseg.cli.dump, "execute", _followed)
    followed = cli("dump", *args, "-j", "2", inputs[which])
    assert (followed.exit_code, followed.stdout, followed.stderr) == (serial.exit_code, serial.stdout, serial.stderr)


def test_live_output_is_read_while_written_and_a_retry_goes_on_where_it_stopped(tmp_path):
    """Frames are there to read before the unit ends (the flusher); a retried attempt's file is
    read from where the failed one's stopped, so nothing shows twice; the files are removed."""
    from kseg.ops.live_output import FLUSH_EVERY, IDLE, LiveSpool, attempt_name, follow

    path = str(tmp_path / "0.live")
    first = LiveSpool(attempt_name(path, 0))
    first.write(b"== header\n")
    first.note("a note\n")
    first.write(b"line 1\n")
    reader = follow(path, lambda: True, pause=0.001)
    got, t0 = [], time.monotonic()
    while len(got) < 3:
        item = next(reader)
        if item is not IDLE:
            got.append(item)
        assert time.monotonic() - t0 < 20 * FLUSH_EVERY, "the frames were not flushed while the unit ran"
    assert got == [b"== header\n", "a note\n", b"line 1\n"]
    first.write(b"line 2 (lost with the attempt)\n")
    first._write_out()
    first.file.write(b"B\x00\x00")  # the attempt dies inside a frame
    first.file.flush()
    assert next(reader) == b"line 2 (lost with the attempt)\n"
    retry = LiveSpool(attempt_name(path, 1))
    for item in (b"== header\n", "a note\n", b"line 1\n", b"line 2 (lost with the attempt)\n", b"line 3\n"):
        retry.note(item) if isinstance(item, str) else retry.write(item)
    retry.done()
    assert [x for x in reader if x is not IDLE] == [b"line 3\n"]
    first.stop.set()
    assert sorted(os.listdir(tmp_path)) == []


def test_follow_ends_when_no_unit_will_write(tmp_path):
    from kseg.ops.live_output import follow

    assert list(follow(str(tmp_path / "never.live"), lambda: False)) == []
