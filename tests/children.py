"""Child kseg processes stopped at a chosen moment: the tests that make a fault happen *during*
a run (a file deleted, renamed, overwritten or cut; a signal) stop the child with SIGSTOP once
it has the file open, change the world, and let it go on."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable


def restore_signals() -> None:
    """The child starts with default signal dispositions, however the suite was started (a
    background job's children inherit "ignore SIGINT")."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def opened(pid: int, target: Path, *, mapped: bool = False) -> bool:
    """Whether process ``pid`` has ``target`` open (or, with ``mapped``, mapped: a segment read
    through mmap may have its descriptor closed at once, so that a fast run is missed every time
    by looking at descriptors alone; a mapping may outlive the reading, so only where that is fine)."""
    name = str(target)
    try:
        if any(os.readlink(f"/proc/{pid}/fd/{fd}") == name for fd in os.listdir(f"/proc/{pid}/fd")):
            return True
        if not mapped:
            return False
        with open(f"/proc/{pid}/maps") as maps:
            return any(line.rstrip("\n").endswith(" " + name) for line in maps)
    except OSError:
        return False


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped by a signal (state T in /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "T"
    except (OSError, IndexError):
        return False


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
