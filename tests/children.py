"""Child kseg processes stopped at a chosen moment: the tests that make a fault happen *during*
a run (a file deleted, renamed, overwritten or cut; a signal) stop the child with SIGSTOP once
it has the file open (tests/stop_at_open.py: the child stops itself), change the world, and
let it go on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable


# kseg that stops itself right after it first opens $KSEG_TEST_STOP_AT (tests/stop_at_open.py)
KSEG_STOPPING = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                 "import stop_at_open; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]


def restore_signals() -> None:
    """The child starts with default signal dispositions, however the suite was started (a
    background job's children inherit "ignore SIGINT")."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped by a signal (state T in /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


def stopped_itself(proc: subprocess.Popen, timeout: float = 120) -> bool:
    """Wait until the child has stopped itself (SIGSTOP, as stop_at_open does); False when it
    ended first. Waiting for a state the child keeps cannot miss it, as polling for a moment can."""
    return stop_when(proc, lambda: stopped(proc.pid), timeout)


def stop_when(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float = 60) -> bool:
    """SIGSTOP the child as soon as ``ready()``; False when it ended first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        if ready():
            proc.send_signal(signal.SIGSTOP)
            return True
        time.sleep(0.0005)
    raise AssertionError("the child never got there")
