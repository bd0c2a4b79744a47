"""``kseg spark`` behaves like a command: Ctrl-C at any moment exits 130 with one line and no
traceback, and the JVM and its Python workers end with kseg; each run's JVM log is a file of
its own, named by ``--timings``, the oldest pruned.

Every run is a real ``kseg spark verify`` in a child process of its own process group (a
terminal's Ctrl-C goes to the whole foreground group), marked by a unique environment
variable that the JVM and the Python workers it starts inherit: a process still carrying the
mark after kseg exited is a survivor, whatever its parent or session became.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from children import restore_signals

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "logdir"
MARK = "KSEG_TEST_RUN"

pytestmark = pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                                reason="no Java for a local Spark")


def marked(mark: str) -> dict[int, str]:
    """Live processes (not zombies) carrying ``MARK=mark``: pid -> command line."""
    found = {}
    needle = f"{MARK}={mark}".encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found[int(pid)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or not ours to read
            continue
    return found


def start(tmp: Path, mark: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp), **{MARK: mark})
    pytest.importorskip("pyspark")
    return subprocess.Popen([sys.executable, "-m", "kseg.cli.main", "spark", "verify", "--master", "local[1]",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=True, preexec_fn=restore_signals)


def wait_until(proc: subprocess.Popen, ready, seconds: float = 240) -> None:
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, ("kseg ended before the moment came", proc.communicate())
        assert time.monotonic() - t0 < seconds, "the moment never came"
        time.sleep(0.05)


def _jvm_started(mark: str):
    return lambda: any("java" in cmd.split(" ", 1)[0] for cmd in marked(mark).values())


def _workers_started(mark: str):
    return lambda: any("pyspark.daemon" in cmd or "pyspark.worker" in cmd for cmd in marked(mark).values())


MOMENTS = {"jvm started": _jvm_started, "python workers started": _workers_started}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_exits_130_and_leaves_no_process(tmp_path, moment):
    mark = uuid.uuid4().hex
    proc = start(tmp_path, mark, str(FIXTURES))
    try:
        wait_until(proc, MOMENTS[moment](mark))
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C: the whole foreground group
        _, err = proc.communicate(timeout=120)
        text = err.decode(errors="replace")
        assert proc.returncode == 130, text
        assert text.splitlines() == ["kseg: interrupted"], text
        deadline = time.monotonic() + 10  # kseg signals the JVM's group at exit (and its stdin closes)
        while marked(mark) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not marked(mark), f"survivors: {marked(mark)}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid in marked(mark):  # only the processes this test's run started
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_each_run_has_its_own_jvm_log_named_by_timings_and_old_ones_are_pruned(tmp_path):
    from kseg.spark.session import SPARK_LOGS_KEPT

    logs = tmp_path / f"kseg-spark-{os.getuid()}"
    logs.mkdir()
    for i in range(SPARK_LOGS_KEPT + 2):  # the logs of earlier runs
        (logs / f"20000101T0000{i:02d}Z-{1000 + i}.log").write_text("old\n")
    mark = uuid.uuid4().hex
    proc = start(tmp_path, mark, "--timings", str(FIXTURES / "v2-gzip-0"))
    out, err = proc.communicate(timeout=300)
    text = err.decode(errors="replace")
    assert proc.returncode == 0, text
    [timings] = [line for line in text.splitlines() if line.startswith("kseg spark: start-up ")]
    named = Path(timings.split("JVM log ", 1)[1].rstrip(")"))
    assert named.parent == logs and named.name.endswith(f"-{proc.pid}.log"), timings
    kept = sorted(p.name for p in logs.iterdir())
    assert len(kept) == SPARK_LOGS_KEPT and kept[-1] == named.name, kept
    assert "20000101T000000Z-1000.log" not in kept
