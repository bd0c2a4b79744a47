"""kseg on a failing machine: a disk that fills up, a process killed or interrupted
part-way, a live broker's folder changing under the reader, files that cannot be read.

Each test runs the real ``kseg`` command in a subprocess and fails if a guarantee of
README's "Robustness" section breaks:

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
        # many small batches: an index entry each with --index-interval-bytes 1
        "many": _partition(root / "many" / "t-0", 2, segments=1, batches=4000, per=1, value_size=20)
        / segment_file_name(0),
    }


# name -> (arguments with {in} and {out}, input, output is a folder to create first)
COMMANDS = {
    "up-convert": (["up-convert", "{in}", "-o", "{out}", "--to-magic", "2"], "v1", False),
    "down-convert": (["down-convert", "{in}", "-o", "{out}", "--to-magic", "1"], "v2", False),
    "recompress": (["recompress", "{in}", "-o", "{out}", "--codec", "lz4"], "v2", False),
    "rebase": (["rebase", "{in}", "-o", "{out}", "--base-offset", "5000"], "v2", False),
    "index --rebuild": (["index", "--rebuild", "{in}", "-o", "{out}", "--index-interval-bytes", "1"], "many", True),
    "compact": (["compact", "{in}", "-o", "{out}", "--include-active", "--now-ms", NOW_MS], "v2", False),
}


def command(name: str, inputs: dict[str, Path], out: Path) -> list[str]:
    args, which, _ = COMMANDS[name]
    return [a.replace("{in}", str(inputs[which])).replace("{out}", str(out)) for a in args]


def input_root(name: str, inputs: dict[str, Path]) -> Path:
    p = inputs[COMMANDS[name][1]]
    return p.parent if p.is_file() else p


def outputs_ok(name: str, out: Path, reference: Path) -> None:
    """``out`` is complete: byte-identical to an undisturbed run's output, and verifies."""
    assert tree(out) == tree(reference)
    if name != "index --rebuild":
        r = kseg("verify", "--quick", out)
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
@pytest.mark.parametrize("name", list(COMMANDS))
def test_disk_full(name, inputs, tmp_path) -> None:
    before = tree(input_root(name, inputs))
    with small_disk(tmp_path / "disk", "64k") as disk:
        out = disk / "out"
        if COMMANDS[name][2]:
            out.mkdir()
        r = kseg(*command(name, inputs, out))
        assert r.returncode == 2, r.stdout + r.stderr
        one_error_line(r.stderr)
        assert "No space left on device" in r.stderr
        left = tree(disk)
        assert left == ({"out/": "dir"} if COMMANDS[name][2] else {}), left
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
        p = _start(command(name, inputs, out) + (["--force"] if attempt and name != "index --rebuild" else []))
        time.sleep(rnd.uniform(0, seconds * 1.1))
        p.kill()
        p.communicate()
        assert tree(input_root(name, inputs)) == before
        if COMMANDS[name][2]:
            # index --rebuild: both files or neither (the folder itself is the test's)
            names = {q.name for q in out.iterdir() if not q.name.startswith(".")}
            if names:
                outputs_ok(name, out, reference)
        elif out.exists():
            outputs_ok(name, out, reference)
    rerun = command(name, inputs, out) + ([] if name == "index --rebuild" else ["--force"])
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
            if any(not q.name.startswith(".") for q in out.iterdir()):
                outputs_ok(name, out, reference)
        elif out.exists():
            outputs_ok(name, out, reference)
