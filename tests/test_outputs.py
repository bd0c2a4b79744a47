"""Outputs that never replace what kseg did not create, and SIGTERM handled like Ctrl-C.

Real ``kseg`` processes. Where a test needs a writer held at a given moment (writing, about
to publish, uploading, cleaning up), the process is started through ``CHILD``, which wraps
that step of kseg's own code: it leaves a marker file and waits for the test's ``go`` (or,
for a cleanup, is slowed down). Nothing else of kseg's is changed. Each child's SIGINT and
SIGTERM are reset to their defaults (a child of a background shell inherits "ignore
SIGINT"), so the tests do not depend on how pytest was started.

- A folder or file that appears at ``-o`` during a run is left as it is: exit 2, one line,
  no temporary left; with --force too (only what was there at the start is replaced).
- Two writers to one ``-o`` (with or without --force): one exits 0, the other 2, and the
  output is one complete run's result.
- SIGTERM at several moments (local and ``s3://`` outputs): exit 143, ``kseg: terminated``,
  no traceback, the input unchanged, no ``.kseg-tmp``, no ``kseg-out-*`` folder in the
  temporary folder, no staging objects; a second signal during the cleanup changes nothing.
- ``kseg dump`` and ``kseg verify`` under SIGTERM: 143, no traceback.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kseg.log.encode import build_legacy_message
from kseg.log.segment import segment_file_name
from kseg.model import make_record

ROOT = Path(__file__).resolve().parent.parent
APPEARED = "the output appeared during the run (created by another process?); nothing was replaced"
CHANGED = "the output was replaced during the run (by another process?); nothing was replaced"

# The console entry point, with optional pause points (KSEG_TEST_PAUSE: a comma-separated list
# of write, publish, upload, commit, command; KSEG_TEST_HOLD: the folder for markers and "go";
# KSEG_TEST_SLOW_CLEANUP: seconds each cleanup of an output takes longer).
CHILD = r'''
import os, sys, time
from pathlib import Path

PAUSE = set(filter(None, os.environ.get("KSEG_TEST_PAUSE", "").split(",")))
HOLD = Path(os.environ.get("KSEG_TEST_HOLD", "."))
SLOW = float(os.environ.get("KSEG_TEST_SLOW_CLEANUP", "0"))

def pause(what):
    (HOLD / f"{what}.{os.getpid()}").touch()
    while not (HOLD / "go").exists():
        time.sleep(0.005)

def once(what, fn):
    done = []
    def wrapped(*a, **k):
        if not done:
            done.append(1)
            pause(what)
        return fn(*a, **k)
    return wrapped

def slowly(fn):
    def wrapped(*a, **k):
        (HOLD / f"cleaning.{os.getpid()}").touch()
        time.sleep(SLOW)
        return fn(*a, **k)
    return wrapped

if PAUSE or SLOW:
    import kseg.cli.common as common
    import kseg.cli.storage as cli_storage
    import kseg.log.atomic as atomic
    import kseg.storage as storage
    if "write" in PAUSE:
        atomic.AtomicFile.write = once("write", atomic.AtomicFile.write)
    if "publish" in PAUSE:  # the output itself, not a file inside its temporary folder
        import kseg.ops.jobs as jobs
        def before_publishing(fn, path_of):
            def wrapped(first, *a, **k):
                if atomic.TMP_SUFFIX not in str(Path(path_of(first)).parent):
                    pause("publish")
                return fn(first, *a, **k)
            return wrapped
        atomic.AtomicDir.commit = before_publishing(atomic.AtomicDir.commit, lambda d: d.path)
        atomic.AtomicFile.commit = before_publishing(atomic.AtomicFile.commit, lambda f: f.path)
        atomic.commit_together = before_publishing(atomic.commit_together, lambda fs: fs[0].path)
        jobs.commit_together = atomic.commit_together
    if "upload" in PAUSE:
        cli_storage.upload_tree = once("upload", cli_storage.upload_tree)
    if "commit" in PAUSE:
        storage.StagedOutput.commit = once("commit", storage.StagedOutput.commit)
    if "command" in PAUSE:  # inside the command, as if its first step took long
        real_call = common._guarded_call
        common._guarded_call = lambda fn, a, k: real_call(once("command", fn), a, k)
    if SLOW:  # the outermost cleanups: what a second signal there cuts short, nothing else cleans
        atomic.AtomicDir.abort = slowly(atomic.AtomicDir.abort)
        storage.StagedOutput.abort = slowly(storage.StagedOutput.abort)

from kseg.cli import run
sys.argv = ["kseg", *sys.argv[1:]]
sys.exit(run())
'''


def _default_signals() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)


def start(args: list, *, hold: Path | None = None, pause: str = "", slow: float = 0.0,
          env: dict | None = None, stdout=subprocess.PIPE) -> subprocess.Popen:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    e.update({"KSEG_TEST_PAUSE": pause, "KSEG_TEST_HOLD": str(hold or "."), "KSEG_TEST_SLOW_CLEANUP": str(slow)})
    return subprocess.Popen([sys.executable, "-c", CHILD, *map(str, args)], stdout=stdout, stderr=subprocess.PIPE,
                            text=True, env=e, preexec_fn=_default_signals)


def kseg(*args, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    p = start(list(args), env=env)
    out, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def wait_for(hold: Path, what: str, procs: list[subprocess.Popen], n: int = 1, timeout: float = 60) -> None:
    """Until ``n`` processes have left the marker ``what`` (fails if one ends first)."""
    deadline = time.monotonic() + timeout
    while len(list(hold.glob(f"{what}.*"))) < n:
        for p in procs:
            if p.poll() is not None and not (hold / f"{what}.{p.pid}").exists():
                out, err = p.communicate()
                pytest.fail(f"ended before {what}: {p.returncode}\n{out}\n{err}")
        assert time.monotonic() < deadline, f"no {what} marker"
        time.sleep(0.005)


def tree(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too), files by content digest."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root) + "/"] = "dir"
        for f in filenames:
            p = Path(dirpath, f)
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def leftovers(*folders: Path) -> list[str]:
    """Temporary names (``.kseg-tmp``, lock files) and local staging folders left anywhere below."""
    found = []
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            found += [os.path.join(dirpath, n) for n in dirnames + filenames
                      if n.endswith(".kseg-tmp") or n.startswith("kseg-out-")]
    return found


def one_line(stderr: str, line: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert stderr.splitlines() == [line], stderr


# --------------------------------------------------------------------------- inputs


def _partition(folder: Path, *, segments: int = 2, per_segment: int = 2000, seed: int = 1) -> Path:
    """v1 messages of incompressible values (so that up-convert has real work)."""
    rnd = random.Random(seed)
    folder.mkdir(parents=True)
    off = 0
    for _ in range(segments):
        base, buf = off, bytearray()
        for _ in range(per_segment):
            r = make_record(off, 1_700_000_000_000 + off, b"k", rnd.randbytes(200))
            buf += build_legacy_message(r.offset, 1, 0, r.timestamp, r.key, r.value)
            off += 1
        (folder / segment_file_name(base)).write_bytes(buf)
    return folder


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inputs")
    return {"small": _partition(root / "small" / "t-0"),
            "big": _partition(root / "big" / "t-0", per_segment=60_000)}


# name -> arguments with {in} and {out}; the output is a folder unless it ends in .log
WRITERS = {
    "up-convert": ["up-convert", "{in}", "-o", "{out}", "--to-magic", "2"],
    "up-convert (one file)": ["up-convert", "{in}/" + segment_file_name(0), "-o", "{out}.log", "--to-magic", "2"],
    "compact": ["compact", "{in}", "-o", "{out}", "--include-active", "--now-ms", "1800000000000"],
    "index --rebuild": ["index", "--rebuild", "{in}", "-o", "{out}"],
}


def command(name: str, src: Path, out: Path) -> tuple[list[str], Path]:
    """The arguments, and the output name they write."""
    args = [a.replace("{in}", str(src)).replace("{out}", str(out)) for a in WRITERS[name]]
    return args, Path(args[args.index("-o") + 1])


@pytest.fixture(scope="module")
def references(inputs, tmp_path_factory) -> dict[str, dict[str, str]]:
    """Each writer's undisturbed output (its tree, or a file's digest)."""
    root = tmp_path_factory.mktemp("references")
    refs = {}
    for name in WRITERS:
        args, out = command(name, inputs["small"], root / name.replace(" ", "_"))
        r = kseg(*args)
        assert r.returncode == 0, r.stderr
        refs[name] = digest(out)
    return refs


def digest(out: Path) -> dict[str, str]:
    """A folder output's tree; a segment output's digest with its index files'."""
    if out.is_dir():
        return tree(out)
    files = [out] + [out.with_suffix(s) for s in (".index", ".timeindex") if out.suffix == ".log"]
    return {f.suffix: hashlib.sha256(f.read_bytes()).hexdigest() for f in files if f.exists()}


def names(out: Path) -> list[str]:
    """What a complete output is, by name, in the folder holding it."""
    if out.suffix != ".log":
        return [out.name]
    return sorted(out.stem + s for s in (".index", ".log", ".timeindex"))


# --------------------------------------------------------------------------- something appears at -o


@pytest.mark.parametrize("force", [False, True], ids=["", "--force"])
@pytest.mark.parametrize("appears", ["folder", "file"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_output_appearing_during_the_run_is_kept(name, appears, force, inputs, tmp_path) -> None:
    """Whatever another process put at -o while kseg was writing stays; kseg says so, exit 2."""
    before = tree(inputs["small"])
    work, hold = tmp_path / "w", tmp_path / "hold"
    work.mkdir(), hold.mkdir()
    args, out = command(name, inputs["small"], work / "out")
    p = start(args + (["--force"] if force else []), hold=hold, pause="publish")
    wait_for(hold, "publish", [p])
    if appears == "folder":
        out.mkdir()
        (out / "theirs.txt").write_text("not kseg's")
    else:
        out.write_text("not kseg's")
    theirs = digest(out)
    (hold / "go").touch()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2, err
    one_line(err, f"kseg: error: {out}: {APPEARED}")
    assert digest(out) == theirs
    assert sorted(os.listdir(work)) == [out.name] and leftovers(work) == []
    assert tree(inputs["small"]) == before


def test_folder_made_while_a_long_run_writes(inputs, tmp_path) -> None:
    """No pause points: the folder is made as soon as the run's temporary folder exists."""
    work = tmp_path / "w"
    work.mkdir()
    args, out = command("up-convert", inputs["big"], work / "out")
    p = start(args)
    deadline = time.monotonic() + 60
    while not leftovers(work) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    out.mkdir()
    (out / "theirs.txt").write_text("mine")
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2, err
    one_line(err, f"kseg: error: {out}: {APPEARED}")
    assert tree(out) == {"theirs.txt": hashlib.sha256(b"mine").hexdigest()}
    assert leftovers(work) == []


@pytest.mark.parametrize("name", ["up-convert", "up-convert (one file)"])
def test_force_replaces_what_was_there_at_the_start(name, inputs, references, tmp_path) -> None:
    """--force replaces the old output at the end; if it was replaced meanwhile, nothing is."""
    work, hold = tmp_path / "w", tmp_path / "hold"
    work.mkdir(), hold.mkdir()
    args, out = command(name, inputs["small"], work / "out")
    out.write_text("old")
    r = kseg(*args, "--force")
    assert r.returncode == 0, r.stderr
    assert digest(out) == references[name] and leftovers(work) == []
    # replaced by someone else during the run: theirs stays
    p = start(args + ["--force"], hold=hold, pause="publish")
    wait_for(hold, "publish", [p])
    (work / "theirs").write_text("theirs")
    if out.is_dir():
        import shutil

        shutil.rmtree(out)
    else:
        out.unlink()
    os.rename(work / "theirs", out)
    (hold / "go").touch()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2, err
    one_line(err, f"kseg: error: {out}: {CHANGED}")
    assert out.read_text() == "theirs" and leftovers(work) == []


# --------------------------------------------------------------------------- two writers, one -o


@pytest.mark.parametrize("old", [False, True], ids=["new", "old output"])
@pytest.mark.parametrize("force", [False, True], ids=["", "--force"])
@pytest.mark.parametrize("name", ["up-convert", "up-convert (one file)", "compact"])
def test_two_writers_one_output(name, force, old, inputs, references, tmp_path) -> None:
    """Both held just before publishing, then let go together: one wins, the other exits 2
    having replaced nothing; the output is the winner's, complete."""
    if old and not force:
        pytest.skip("without --force an existing output is refused at the start")
    work, hold = tmp_path / "w", tmp_path / "hold"
    work.mkdir(), hold.mkdir()
    args, out = command(name, inputs["small"], work / "out")
    if old:
        out.mkdir() if out.suffix != ".log" else out.write_text("old")
    procs = [start(args + (["--force"] if force else []), hold=hold, pause="publish") for _ in range(2)]
    wait_for(hold, "publish", procs, n=2)
    (hold / "go").touch()
    results = [(p.returncode, err) for p in procs for _, err in [p.communicate(timeout=60)]]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, err in results if code == 2)
    # the other's segment, or its first index file, beat it to the name
    assert loser in (f"kseg: error: {out}: {APPEARED}\n", f"kseg: error: {out}: {CHANGED}\n"), loser
    assert digest(out) == references[name]
    assert sorted(os.listdir(work)) == names(out) and leftovers(work) == []


def test_two_writers_no_pause(inputs, references, tmp_path) -> None:
    """Started together, unaided: exactly one result, and it is complete."""
    work = tmp_path / "w"
    work.mkdir()
    args, out = command("up-convert", inputs["small"], work / "out")
    procs = [start(args) for _ in range(2)]
    results = [(p.returncode, err) for p in procs for _, err in [p.communicate(timeout=60)]]
    assert sorted(code for code, _ in results) == [0, 2], results
    assert digest(out) == references["up-convert"] and leftovers(work) == []


# --------------------------------------------------------------------------- SIGTERM, local output


def _terminated(p: subprocess.Popen, *, timeout: float = 60, said: str = "") -> str:
    """143 and the one line (after ``said``: what the command had printed before)."""
    _, err = p.communicate(timeout=timeout)
    assert p.returncode == 143, (p.returncode, err)
    rest = err
    if said:
        first, _, rest = err.partition("\n")
        assert first.startswith(said), err
    one_line(rest, "kseg: terminated")
    return err


@pytest.mark.parametrize("moment", ["command", "write", "publish"])
@pytest.mark.parametrize("name", list(WRITERS))
def test_sigterm_while_writing(name, moment, inputs, tmp_path) -> None:
    before = tree(inputs["small"])
    work, hold, tmp = tmp_path / "w", tmp_path / "hold", tmp_path / "tmp"
    work.mkdir(), hold.mkdir(), tmp.mkdir()
    args, out = command(name, inputs["small"], work / "out")
    p = start(args, hold=hold, pause=moment, env={"TMPDIR": str(tmp)})
    wait_for(hold, moment, [p])
    p.send_signal(signal.SIGTERM)
    _terminated(p)
    assert tree(inputs["small"]) == before
    assert os.listdir(work) == [] and os.listdir(tmp) == []


def test_sigterm_while_loading(inputs, tmp_path) -> None:
    """While the console script imports the command: 143 and the one line, at once."""
    script = ("import os, signal, sys\n"
              "class T:\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name == 'kseg.ops.jobs': os.kill(os.getpid(), signal.SIGTERM)\n"
              "sys.meta_path.insert(0, T())\n"
              "from kseg.cli import run\n"
              "sys.argv = ['kseg', *sys.argv[1:]]\n"
              "sys.exit(run())\n")
    args, out = command("up-convert", inputs["small"], tmp_path / "out")
    r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_default_signals)
    assert (r.returncode, r.stderr) == (143, "kseg: terminated\n")
    assert os.listdir(tmp_path) == []


def test_sigterm_at_random_points(inputs, tmp_path) -> None:
    """No pause points: a long run terminated at random moments while it writes."""
    before = tree(inputs["big"])
    rnd = random.Random(7)
    for attempt in range(3):
        work, tmp = tmp_path / f"w{attempt}", tmp_path / f"tmp{attempt}"
        work.mkdir(), tmp.mkdir()
        args, out = command("up-convert", inputs["big"], work / "out")
        p = start(args, env={"TMPDIR": str(tmp)})
        deadline = time.monotonic() + 60
        while not leftovers(work) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rnd.uniform(0, 0.5))
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        assert "Traceback" not in err, err
        # 143; or, when the signal comes as the finished process exits, 0 or death by SIGTERM
        assert p.returncode in (0, 143, -signal.SIGTERM), (p.returncode, err)
        if p.returncode == 143:
            one_line(err, "kseg: terminated")
            assert os.listdir(work) == []
        assert leftovers(work) == [] and os.listdir(tmp) == []
    assert tree(inputs["big"]) == before


SIGNALS = {"SIGTERM": (signal.SIGTERM, 143, "kseg: terminated"), "SIGINT": (signal.SIGINT, 130, "kseg: interrupted")}


@pytest.mark.parametrize("first, second", [("SIGTERM", "SIGINT"), ("SIGTERM", "SIGTERM"), ("SIGINT", "SIGINT"),
                                           ("SIGINT", "SIGTERM")])
def test_second_signal_during_cleanup(first, second, inputs, tmp_path) -> None:
    """A signal, then (once the cleanup has begun, and it is slow) a second: the cleanup
    finishes, the first signal's code and line, nothing left."""
    work, hold = tmp_path / "w", tmp_path / "hold"
    work.mkdir(), hold.mkdir()
    args, out = command("up-convert", inputs["small"], work / "out")
    p = start(args, hold=hold, pause="write", slow=1.0)
    wait_for(hold, "write", [p])
    signum, code, line = SIGNALS[first]
    p.send_signal(signum)
    wait_for(hold, "cleaning", [p])
    p.send_signal(SIGNALS[second][0])
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, (p.returncode, err)
    one_line(err, line)
    assert os.listdir(work) == []


def test_two_signals_at_once(inputs, tmp_path) -> None:
    """SIGTERM and SIGINT back to back, while a long run writes: one line, 143 or 130, nothing left."""
    work = tmp_path / "w"
    work.mkdir()
    args, out = command("up-convert", inputs["big"], work / "out")
    p = start(args)
    deadline = time.monotonic() + 60
    while not leftovers(work) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(0.1)
    p.send_signal(signal.SIGTERM)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    # both may be pending when Python looks, and then it takes SIGINT first
    assert (p.returncode, err) in ((143, "kseg: terminated\n"), (130, "kseg: interrupted\n")), (p.returncode, err)
    assert os.listdir(work) == []


def test_killed_run_is_cleaned_by_the_next(inputs, references, tmp_path) -> None:
    """SIGKILL leaves the temporary; the next run into the same place removes it."""
    work, hold = tmp_path / "w", tmp_path / "hold"
    work.mkdir(), hold.mkdir()
    args, out = command("up-convert", inputs["small"], work / "out")
    p = start(args, hold=hold, pause="publish")
    wait_for(hold, "publish", [p])
    p.kill()
    p.communicate()
    assert leftovers(work)
    r = kseg(*args)
    assert r.returncode == 0, r.stderr
    assert digest(out) == references["up-convert"] and leftovers(work) == []


# --------------------------------------------------------------------------- reading commands


@pytest.mark.parametrize("cmd", [["dump"], ["verify"], ["dump", "--records"]])
def test_sigterm_reading(cmd, inputs, tmp_path) -> None:
    hold = tmp_path / "hold"
    hold.mkdir()
    p = start([*cmd, inputs["small"]], hold=hold, pause="command")
    wait_for(hold, "command", [p])
    p.send_signal(signal.SIGTERM)
    _terminated(p)


def test_sigterm_during_a_dump(inputs) -> None:
    """A dump in full flow (its first lines read): 143, no traceback."""
    p = start(["dump", "--records", inputs["big"]])
    assert p.stdout.readline()
    p.send_signal(signal.SIGTERM)
    _terminated(p)


# --------------------------------------------------------------------------- s3:// outputs


@pytest.fixture
def s3(object_store, tmp_path):
    """Environment for a child that writes to the test server, TMPDIR a fresh folder."""
    pytest.importorskip("pyarrow")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE")}
    env.update(object_store.env)
    env["TMPDIR"] = str(tmp)
    return env, tmp, object_store.fs()


def _keys(fs, prefix: str) -> list[str]:
    from pyarrow import fs as pafs

    return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
                  if i.type == pafs.FileType.File)


@pytest.mark.parametrize("moment", ["write", "upload", "commit"])
def test_sigterm_with_an_s3_output(moment, s3, inputs, tmp_path) -> None:
    env, tmp, fs = s3
    fs.create_dir("kseg-test")
    prefix = f"kseg-test/sigterm-{moment}"
    hold = tmp_path / "hold"
    hold.mkdir()
    p = start(["up-convert", inputs["small"], "-o", f"s3://{prefix}/out", "--to-magic", "2"], hold=hold,
              pause=moment, env=env)
    wait_for(hold, moment, [p])
    if moment == "commit":
        assert _keys(fs, prefix)  # the staging objects are there
    p.send_signal(signal.SIGTERM)
    # the command's summary is printed only once the output is in place: never here
    _terminated(p)
    assert _keys(fs, prefix) == []
    assert os.listdir(tmp) == []


def test_second_signal_during_s3_cleanup(s3, inputs, tmp_path) -> None:
    env, tmp, fs = s3
    fs.create_dir("kseg-test")
    prefix = "kseg-test/sigterm-twice"
    hold = tmp_path / "hold"
    hold.mkdir()
    p = start(["up-convert", inputs["small"], "-o", f"s3://{prefix}/out", "--to-magic", "2"], hold=hold,
              pause="commit", slow=1.0, env=env)
    wait_for(hold, "commit", [p])
    p.send_signal(signal.SIGTERM)
    wait_for(hold, "cleaning", [p])
    p.send_signal(signal.SIGINT)
    _terminated(p)  # no summary: the output was never in place
    assert _keys(fs, prefix) == [] and os.listdir(tmp) == []


def test_s3_output_appearing_during_the_run(s3, inputs, tmp_path) -> None:
    env, tmp, fs = s3
    fs.create_dir("kseg-test")
    prefix = "kseg-test/appears"
    hold = tmp_path / "hold"
    hold.mkdir()
    p = start(["up-convert", inputs["small"], "-o", f"s3://{prefix}/out", "--to-magic", "2"], hold=hold,
              pause="commit", env=env)
    wait_for(hold, "commit", [p])
    with fs.open_output_stream(f"{prefix}/out/theirs.txt") as f:
        f.write(b"theirs")
    (hold / "go").touch()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2, err
    one_line(err, f"kseg: error: s3://{prefix}/out: {APPEARED}")
    assert _keys(fs, prefix) == [f"{prefix}/out/theirs.txt"]
    assert os.listdir(tmp) == []


def test_s3_output_failure_leaves_nothing(s3, inputs, tmp_path) -> None:
    """A failing write (the input is not a segment folder): exit 2, no local staging folder."""
    env, tmp, fs = s3
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / segment_file_name(0)).write_bytes(b"\x00" * 3 + b"garbage" * 10)
    r = kseg("up-convert", bad, "-o", "s3://kseg-test/failing/out", "--to-magic", "2", env=env)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stderr
    assert _keys(fs, "kseg-test/failing") == [] and os.listdir(tmp) == []


# --------------------------------------------------------------------------- kseg spark


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries ``mark`` (the child and all it started)."""
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if mark.encode() in (d / "environ").read_bytes():
                    found.append(int(d.name))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("later", [0.5, 10.0], ids=["while the JVM starts", "later"])
@pytest.mark.parametrize("cmd", ["verify", "up-convert"])
def test_sigterm_kseg_spark(cmd, later, inputs, tmp_path) -> None:
    """SIGTERM to ``kseg spark``: 143, the one line, no traceback, no JVM left, no temporaries."""
    pytest.importorskip("pyspark", reason="kseg spark needs the spark extra")
    mark = f"KSEG_TEST_MARK_{os.getpid()}_{cmd}_{int(later)}"
    work, tmp = tmp_path / "w", tmp_path / "tmp"
    work.mkdir(), tmp.mkdir()
    args = ["spark", "verify", inputs["small"]] if cmd == "verify" else \
        ["spark", "up-convert", inputs["small"], "-o", work / "out", "--to-magic", "2"]
    p = start(args, env={mark: "1", "TMPDIR": str(tmp)})
    deadline = time.monotonic() + 120
    while len(_marked(mark)) < 2 and p.poll() is None:  # the JVM's launcher has started
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(later)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert "Traceback" not in err, err
    if p.returncode == 0:  # finished before the signal
        return
    assert p.returncode == 143, (p.returncode, err)
    assert err.splitlines()[-1:] == ["kseg: terminated"] and "rror" not in err, err
    deadline = time.monotonic() + 60
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _marked(mark) == []
    assert os.listdir(work) == []


# --------------------------------------------------------------------------- publishing, in-process


@pytest.mark.parametrize("renameat2", [True, False], ids=["renameat2", "fallbacks"])
@pytest.mark.parametrize("kind", ["file", "folder"])
def test_publish(kind, renameat2, tmp_path, monkeypatch) -> None:
    """Onto nothing; onto what appeared (refused, both kept); replacing what was there at the
    start (done, the old one removed); replacing what changed since (refused, both kept)."""
    from kseg.errors import OutputError
    from kseg.log import atomic

    if not renameat2:
        monkeypatch.setattr(atomic, "_renameat2", [None])
    elif atomic._libc_renameat2() is None:
        pytest.skip("no renameat2 in this C library")

    def made(name: str, text: str) -> Path:
        p = tmp_path / name
        if kind == "folder":
            p.mkdir()
            (p / "f").write_text(text)
        else:
            p.write_text(text)
        return p

    def text(p: Path) -> str:
        return (p / "f").read_text() if kind == "folder" else p.read_text()

    out = tmp_path / "out"
    atomic.publish(made("t1", "one"), out, None)
    assert text(out) == "one" and not (tmp_path / "t1").exists()
    with pytest.raises(OutputError, match="appeared during the run"):
        atomic.publish(made("t2", "two"), out, None)
    assert text(out) == "one" and text(tmp_path / "t2") == "two"
    atomic.publish(tmp_path / "t2", out, atomic._identity(out))
    assert text(out) == "two" and sorted(os.listdir(tmp_path)) == ["out"]
    stale = atomic._identity(made("t3", "three"))
    with pytest.raises(OutputError, match="replaced during the run"):
        atomic.publish(made("t4", "four"), out, stale)
    assert text(out) == "two" and text(tmp_path / "t4") == "four"
    assert sorted(os.listdir(tmp_path)) == ["out", "t3", "t4"]  # no lock file left
