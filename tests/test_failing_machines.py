"""kseg on a failing machine: a disk that fills up, a process killed or interrupted
part-way, a live broker's folder changing under the reader, files that cannot be read.

Each test runs the real ``kseg`` command in a subprocess and fails if a guarantee of
the robustness policy (docs/guides/robustness.md) breaks:

- a writing command whose output disk fills up ends with one error line and exit 2,
  leaves nothing behind (no partial output, no temporary file) and its input untouched;
- SIGKILL at a random point leaves the input byte-identical and the output name absent
  or complete (byte-identical to an undisturbed run, and verifying); a rerun with
  --force succeeds and clears what the killed run left; SIGINT exits 130, no traceback,
  with the same guarantees and nothing left behind;
- reading a partition while the broker appends, rolls and deletes segments never
  crashes; a vanished file is one note, a partial batch at the end of the newest
  segment is a note (exit 0), in an older segment an error; zeros preallocated after
  the last batch are a note, not a corrupt batch;
- an unreadable file (permission denied, a folder, a FIFO, a device, a symlink loop)
  is one clear line and exit 2, and with --keep-going the rest of the run goes on.

The full disk is a small tmpfs mounted for the test (root only: skipped otherwise).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from children import restore_signals
from verify_text import with_paths

from kseg.log.encode import build_legacy_message, build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record

KSEG = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]
IS_ROOT = os.geteuid() == 0
NOW_MS = "1800000000000"


def kseg(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*KSEG, *map(str, args)], capture_output=True, text=True, timeout=timeout)


def one_error_line(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("kseg: error:")]
    assert len(errors) == 1, stderr


def tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones too) and its content digest."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = "dir"
        for f in filenames:
            p = Path(dirpath, f)
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# --------------------------------------------------------------------------- inputs


def _partition(folder: Path, magic: int, *, segments: int = 2, batches: int = 40, per: int = 20,
               value_size: int = 200, seed: int = 1) -> Path:
    """A partition of incompressible records (so that no codec makes the output small)."""
    rnd = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    off = 0
    for _ in range(segments):
        base, buf = off, bytearray()
        for _ in range(batches):
            recs = [make_record(off + i, 1_700_000_000_000 + off + i, f"k{off + i}".encode(),
                                rnd.randbytes(value_size), magic=magic) for i in range(per)]
            if magic == 2:
                buf += build_v2_batch(recs, codec=0)
            else:
                for r in recs:
                    buf += build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value)
            off += per
        (folder / segment_file_name(base)).write_bytes(buf)
    return folder


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inputs")
    return {
        "v1": _partition(root / "v1" / "t-0", 1),
        "v2": _partition(root / "v2" / "t-0", 2),
        "v1 file": root / "v1" / "t-0" / segment_file_name(0),
        # many small batches: an index entry each with --index-interval-bytes 1
        "many": _partition(root / "many" / "t-0", 2, segments=1, batches=4000, per=1, value_size=20)
        / segment_file_name(0),
    }


# name -> (arguments with {in} and {out}, input, output is a folder to create first)
COMMANDS = {
    "up-convert": (["up-convert", "{in}", "-o", "{out}", "--to-magic", "2"], "v1", False),
    "up-convert (one file)": (["up-convert", "{in}", "-o", "{out}/" + segment_file_name(0), "--to-magic", "2"],
                              "v1 file", True),
    "down-convert": (["down-convert", "{in}", "-o", "{out}", "--to-magic", "1"], "v2", False),
    "recompress": (["recompress", "{in}", "-o", "{out}", "--codec", "lz4"], "v2", False),
    "rebase": (["rebase", "{in}", "-o", "{out}", "--base-offset", "5000"], "v2", False),
    "index --rebuild": (["index", "--rebuild", "{in}", "-o", "{out}", "--index-interval-bytes", "1"], "many", False),
    "compact": (["compact", "{in}", "-o", "{out}", "--include-active", "--now-ms", NOW_MS], "v2", False),
}
# the Spark writers, for the full disk only (a Spark start per run is too slow for the kill loops)
SPARK_WRITERS = {
    "spark up-convert": (["spark", "up-convert", "{in}", "-o", "{out}", "--to-magic", "2"], "v1", False),
    "spark compact": (["spark", "compact", "{in}", "-o", "{out}", "--include-active", "--now-ms", NOW_MS], "v2",
                      False),
}
WRITERS = {**COMMANDS, **SPARK_WRITERS}


def command(name: str, inputs: dict[str, Path], out: Path) -> list[str]:
    args, which, _ = WRITERS[name]
    return [a.replace("{in}", str(inputs[which])).replace("{out}", str(out)) for a in args]


def input_root(name: str, inputs: dict[str, Path]) -> Path:
    p = inputs[WRITERS[name][1]]
    return p.parent if p.is_file() else p


def outputs_ok(name: str, out: Path, reference: Path) -> None:
    """``out`` is complete: byte-identical to an undisturbed run's output, and verifies
    (a killed run's temporary files beside it are not part of it; a rerun removes them)."""
    done = {k: v for k, v in tree(out).items() if not k.endswith(".kseg-tmp")}
    assert done == tree(reference)
    if name != "index --rebuild":
        r = kseg("verify", "--quick", out)  # a partition folder, or the folder holding the one file
        assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def references(inputs, tmp_path_factory) -> dict[str, tuple[Path, float]]:
    """Each command's undisturbed output and how long it took."""
    root = tmp_path_factory.mktemp("references")
    out = {}
    for name, (_, _, is_dir) in COMMANDS.items():
        target = root / name.replace(" ", "_") / "out"
        target.parent.mkdir()
        if is_dir:
            target.mkdir()
        t0 = time.monotonic()
        r = kseg(*command(name, inputs, target))
        assert r.returncode == 0, r.stderr
        out[name] = (target, time.monotonic() - t0)
    return out


# --------------------------------------------------------------------------- a full disk


@contextmanager
def small_disk(where: Path, size: str):
    """A tmpfs of ``size`` mounted at ``where``, unmounted on the way out."""
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill up (needs root): {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.skipif(not IS_ROOT, reason="mounting a small tmpfs needs root")
@pytest.mark.parametrize("name", list(WRITERS))
def test_disk_full(name, inputs, tmp_path) -> None:
    if name in SPARK_WRITERS:
        pytest.importorskip("pyspark", reason="kseg spark needs the spark extra")
    before = tree(input_root(name, inputs))
    with small_disk(tmp_path / "disk", "64k") as disk:
        out = disk / "out"
        if WRITERS[name][2]:
            out.mkdir()
        r = kseg(*command(name, inputs, out), timeout=600)
        assert r.returncode == 2, r.stdout + r.stderr
        one_error_line(r.stderr)
        assert "No space left on device" in r.stderr
        left = tree(disk)
        assert left == ({"out/": "dir"} if WRITERS[name][2] else {}), left
    assert tree(input_root(name, inputs)) == before


# --------------------------------------------------------------------------- killed, interrupted


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([*KSEG, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".kseg-tmp")] if folder.exists() else []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_killed_at_random_points(name, inputs, references, tmp_path) -> None:
    reference, seconds = references[name]
    rnd = random.Random(name)
    before = tree(input_root(name, inputs))
    work = tmp_path / "w"
    work.mkdir()
    out = work / "out"
    for attempt in range(4):
        if COMMANDS[name][2]:
            out.mkdir(exist_ok=True)
        p = _start(command(name, inputs, out) + (["--force"] if attempt else []))
        time.sleep(rnd.uniform(0, seconds * 1.1))
        p.kill()
        p.communicate()
        assert tree(input_root(name, inputs)) == before
        if COMMANDS[name][2]:
            # index --rebuild: both files or neither; one file: it and its indexes or nothing
            # (the folder itself is the test's)
            names = {q.name for q in out.iterdir() if not q.name.startswith(".")}
            if names and (name == "index --rebuild" or segment_file_name(0) in names):
                outputs_ok(name, out, reference)
        elif out.exists():
            outputs_ok(name, out, reference)
    rerun = command(name, inputs, out) + ["--force"]
    r = kseg(*rerun)
    assert r.returncode == 0, r.stderr
    outputs_ok(name, out, reference)
    assert _leftovers(work) == [] and _leftovers(out) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_interrupted(name, inputs, references, tmp_path) -> None:
    reference, seconds = references[name]
    before = tree(input_root(name, inputs))
    rnd = random.Random(name + "int")
    for attempt in range(2):
        work = tmp_path / f"w{attempt}"
        work.mkdir()
        out = work / "out"
        if COMMANDS[name][2]:
            out.mkdir()
        p = _start(command(name, inputs, out))
        # once it is writing (its temporary name exists), at a random point
        deadline = time.monotonic() + 60
        watch = out if COMMANDS[name][2] else work
        while not _leftovers(watch) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rnd.uniform(0, seconds / 3))
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        assert "Traceback" not in err, err
        # 130; or, when the signal comes as the finished process exits, death by SIGINT
        # (which a shell reports as 130 too)
        assert p.returncode in (0, 130, -signal.SIGINT), (p.returncode, err)
        if p.returncode == 130:
            assert "kseg: interrupted" in err
        assert tree(input_root(name, inputs)) == before
        assert _leftovers(work) == [] and _leftovers(out) == []
        if COMMANDS[name][2]:
            names = {q.name for q in out.iterdir() if not q.name.startswith(".")}
            if names and (name == "index --rebuild" or segment_file_name(0) in names):
                outputs_ok(name, out, reference)
        elif out.exists():
            outputs_ok(name, out, reference)


_INTERRUPT_AT_IMPORT = """
import os, signal, sys
AT = sys.argv[1]
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == AT:
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
from kseg.cli import run
sys.argv = ["kseg", *sys.argv[2:]]
sys.exit(run())
"""


@pytest.mark.parametrize("module", ["kseg.errors", "kseg.log.segment", "kseg.ops.verify", "kseg.cli.common"])
def test_interrupted_while_loading(module, inputs) -> None:
    """Ctrl-C while the console script is still importing: exit 130 and nothing on stderr."""
    r = subprocess.run([sys.executable, "-c", _INTERRUPT_AT_IMPORT, module, "verify", str(inputs["v2"])],
                       capture_output=True, text=True, timeout=120, preexec_fn=restore_signals)
    assert (r.returncode, r.stderr, r.stdout) == (130, "", "")


_INTERRUPT_AT_EXIT = """
import atexit, os, signal, sys
atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))  # Ctrl-C as the interpreter shuts down
from kseg.cli import run
sys.argv = ["kseg", *sys.argv[1:]]
sys.exit(run())
"""


def test_interrupted_after_finishing(inputs) -> None:
    """Ctrl-C once the command is done (its output written, Python shutting down): no traceback."""
    r = subprocess.run([sys.executable, "-c", _INTERRUPT_AT_EXIT, "verify", "--quick", str(inputs["v2"])],
                       capture_output=True, text=True, timeout=120, preexec_fn=restore_signals)
    assert (r.returncode, r.stderr) == (0, "")
    assert "0 with errors" in r.stdout  # the output was written whole


# --------------------------------------------------------------------------- a live broker's folder


def _batch(offset: int, n: int = 5) -> bytes:
    recs = [make_record(offset + i, 1_700_000_000_000 + offset + i, b"k", b"v" * 50) for i in range(n)]
    return build_v2_batch(recs, codec=0)


def _live_partition(folder: Path, segments: int = 3, batches: int = 10) -> int:
    folder.mkdir(parents=True)
    off = 0
    for _ in range(segments):
        base, buf = off, bytearray()
        for _ in range(batches):
            buf += _batch(off)
            off += 5
        (folder / segment_file_name(base)).write_bytes(buf)
    return off


def notes(stdout: str) -> list[str]:
    return [line.strip() for line in with_paths(stdout).splitlines() if line.strip().startswith("note:")]


def test_incomplete_tail_of_the_newest_segment_is_a_note(tmp_path) -> None:
    part = tmp_path / "t-0"
    _live_partition(part)
    newest = sorted(part.glob("*.log"))[-1]
    with open(newest, "ab") as f:
        f.write(_batch(10_000)[:40])  # a batch still being written
    r = kseg("verify", part)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [n for n in notes(r.stdout) if "incomplete tail" in n and newest.name in n], r.stdout


def test_incomplete_tail_of_an_older_segment_is_an_error(tmp_path) -> None:
    part = tmp_path / "t-0"
    _live_partition(part)
    older = sorted(part.glob("*.log"))[0]
    older.write_bytes(older.read_bytes() + _batch(10_000)[:40])
    r = kseg("verify", part)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "do not form a complete batch" in r.stdout


def test_preallocated_segment_is_not_a_corrupt_batch(tmp_path) -> None:
    part = tmp_path / "t-0"
    _live_partition(part)
    newest = sorted(part.glob("*.log"))[-1]
    with open(newest, "ab") as f:
        f.truncate(newest.stat().st_size + (1 << 20))  # log.preallocate=true: zeros to segment.bytes
    r = kseg("verify", part)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [n for n in notes(r.stdout) if "preallocated" in n], r.stdout
    r = kseg("verify", newest)  # the same for the file alone
    assert r.returncode == 0, r.stdout + r.stderr


def test_vanished_file_is_one_note(tmp_path, monkeypatch) -> None:
    """A segment deleted by retention between the listing and its reading."""
    from click.testing import CliRunner

    from kseg.cli.main import main
    from kseg.ops import verify

    part = tmp_path / "t-0"
    _live_partition(part)
    doomed = sorted(part.glob("*.log"))[0]
    listed = verify.list_inputs

    def list_then_delete(paths):
        listings = listed(paths)
        doomed.unlink()
        return listings

    monkeypatch.setattr(verify, "list_inputs", list_then_delete)
    r = CliRunner().invoke(main, ["verify", str(part)])
    assert r.exit_code == 0, r.output
    assert len([n for n in notes(r.stdout) if "went away" in n and doomed.name in n]) == 1, r.output


def test_reading_while_the_broker_appends_rolls_and_deletes(tmp_path) -> None:
    """verify and dump in a loop while a writer appends batches in pieces, rolls segments
    and deletes the oldest: never a crash, never a traceback, never a data error."""
    part = tmp_path / "t-0"
    off = _live_partition(part, segments=2)
    stop = threading.Event()
    rnd = random.Random(7)

    def broker() -> None:
        nonlocal off
        active = sorted(part.glob("*.log"))[-1]
        while not stop.is_set():
            data = _batch(off)
            cut = rnd.randrange(1, len(data))
            with open(active, "ab") as f:  # appended in two writes: readers may see half a batch
                f.write(data[:cut])
                f.flush()
                time.sleep(0.001)
                f.write(data[cut:])
            off += 5
            if active.stat().st_size > 20_000:  # roll
                active = part / segment_file_name(off)
                active.touch()
                logs = sorted(part.glob("*.log"))
                if len(logs) > 3:  # retention
                    logs[0].unlink()

    writer = threading.Thread(target=broker)
    writer.start()
    try:
        deadline = time.monotonic() + 8
        runs = 0
        while time.monotonic() < deadline or runs < 4:
            for args in (["verify", part], ["verify", "--quick", part], ["dump", "-r", part]):
                r = kseg(*args)
                assert "Traceback" not in r.stderr, r.stderr
                assert r.returncode == 0, (args, r.stdout[-2000:], r.stderr)
            runs += 1
    finally:
        stop.set()
        writer.join()


# --------------------------------------------------------------------------- unreadable files


def _as_nobody() -> list[str] | None:
    for tool in (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"], ["runuser", "-u", "nobody", "--"]):
        if shutil.which(tool[0]):
            return tool
    return None


def _unreadable(kind: str, folder: Path) -> Path:
    p = folder / segment_file_name(1_000_000)
    if kind == "folder":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "device":
        try:
            os.mknod(p, stat.S_IFCHR | 0o644, os.makedev(1, 5))  # /dev/zero: never ends
        except PermissionError:
            p.symlink_to("/dev/zero")
    elif kind == "symlink loop":
        p.symlink_to(p.name)
    elif kind == "permission denied":
        p.write_bytes(_batch(1_000_000))
        p.chmod(0)
    return p


UNREADABLE = {
    "folder": "a folder where a file is expected",
    "fifo": "a FIFO",
    "device": "a device",
    "symlink loop": "a symlink loop",
    "permission denied": "Permission denied",
}


@pytest.mark.parametrize("kind", list(UNREADABLE))
def test_unreadable_file(kind, tmp_path) -> None:
    prefix: list[str] = []
    if kind == "permission denied":
        if IS_ROOT:
            found = _as_nobody()
            if found is None:
                pytest.skip("running as root and cannot drop privileges (no setpriv or runuser)")
            prefix = found
            tmp_path.chmod(0o755)
            for parent in tmp_path.parents:
                if parent.stat().st_mode & 0o005 != 0o005:
                    parent.chmod(parent.stat().st_mode | 0o005)
    part = tmp_path / "t-0"
    _live_partition(part, segments=2)
    for p in part.iterdir():
        p.chmod(0o644)
    part.chmod(0o755)
    bad = _unreadable(kind, part)
    good = sorted(part.glob("*.log"))[0]

    def run(*args) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *KSEG, *map(str, args)], capture_output=True, text=True, timeout=60)

    # named alone: one clear line, exit 2
    for cmd in (["dump"], ["verify"]):
        r = run(*cmd, bad)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        # a folder named on the command line is a folder input: it has no segments
        said = ("no segment files found", "no Kafka files found") if kind == "folder" else (UNREADABLE[kind],)
        lines = [line for line in (r.stderr + r.stdout).splitlines() if any(x in line for x in said)]
        assert len(lines) == 1, (cmd, r.stdout, r.stderr)
    # among others: dump --keep-going shows the rest, verify checks the rest; exit 2
    r = run("dump", "--keep-going", good, *([] if kind == "folder" else [bad]), part)
    assert r.returncode == 2, r.stdout + r.stderr
    named = 1 if kind == "folder" else 2  # named, and found in the folder
    assert len([line for line in r.stderr.splitlines() if UNREADABLE[kind] in line]) == named, r.stderr
    assert r.stdout.count("batch @") >= 3 * 10, r.stdout
    r = run("verify", part)
    assert r.returncode == 2, r.stdout + r.stderr
    assert len([line for line in r.stdout.splitlines() if UNREADABLE[kind] in line]) == 1, r.stdout + r.stderr
    assert "3 file(s) checked" in r.stdout, r.stdout + r.stderr
