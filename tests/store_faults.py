"""An object store that fails on cue inside a ``kseg`` child (the failure matrix's store faults).

``KSEG_TEST_STORE_FAULT`` = ``<how>:<call>:<n>``: after ``n`` calls of ``<call>`` (``copy``: the
server-side copies that publish an output; ``read``: the opens that read an object), the next
and every later one

- ``refuse``: fails with the store's own "connection refused" (deletes still work: the store
  refuses writes);
- ``down``: fails, and so does every delete from then on (the store is gone, for the client);
- ``stop``: the child stops itself (SIGSTOP) first, for the test to kill the real server, and
  then makes the call against the dead server.

With ``KSEG_TEST_STOP_AT_OUTPUT`` set, the child stops itself right after the first bytes it
writes to stdout or stderr have reached the pipe: the test sees the store as it was when the
command first said something (a summary printed before its output is published is caught
every time, not only when the test looks quickly enough).

Run as the child: ``python -c "import store_faults; store_faults.main()" ARGS`` with this
folder on PYTHONPATH; with neither variable it is plain ``kseg``.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
from typing import Any

ENV = "KSEG_TEST_STORE_FAULT"
STOP_AT_OUTPUT = "KSEG_TEST_STOP_AT_OUTPUT"
DOWN = "AWS Error NETWORK_CONNECTION during {call} operation: Connection refused"
CALLS = {"copy": ("copy_file",), "read": ("open_input_file", "open_input_stream")}
DELETES = ("delete_file", "delete_dir", "delete_dir_contents")


class Faulty:
    """A pyarrow filesystem whose ``CALLS[call]`` fail (or stop the process) after ``n`` calls."""

    def __init__(self, fs: Any, how: str, call: str, n: int):
        self._fs, self._how, self._n = fs, how, n
        self._watched = CALLS[call]
        self._lock = threading.Lock()
        self._count = 0
        self._failing = False

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._fs, name)
        if name not in self._watched and name not in DELETES:
            return real

        def call(*a: Any, **k: Any) -> Any:
            if name in DELETES:
                if self._failing and self._how == "down":
                    raise OSError(DOWN.format(call="DeleteObject"))
                return real(*a, **k)
            with self._lock:
                due = self._count >= self._n
                self._count += 1
                first = due and not self._failing
                self._failing = self._failing or due
            if due and self._how == "stop":
                if first:
                    os.kill(os.getpid(), signal.SIGSTOP)  # the test kills the server, then continues us
                return real(*a, **k)
            if due:
                raise OSError(DOWN.format(call="CopyObject" if name == "copy_file" else "GetObject"))
            return real(*a, **k)

        return call


def install() -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    how, call, n = spec.split(":")
    import kseg.storage as storage

    real = storage.filesystem
    made: dict[str, Faulty] = {}

    def filesystem(scheme: str) -> Any:
        if scheme not in made:
            made[scheme] = Faulty(real(scheme), how, call, int(n))
        return made[scheme]

    storage.filesystem = filesystem  # type: ignore[assignment]


class _StopAfterFirstWrite(io.RawIOBase):
    """A standard stream's file descriptor whose first write is followed by SIGSTOP (once for
    the process, whichever stream writes first)."""

    done = False

    def __init__(self, fd: int):
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, data: Any) -> int:
        n = os.write(self.fd, data)
        if n and not _StopAfterFirstWrite.done:
            _StopAfterFirstWrite.done = True
            os.kill(os.getpid(), signal.SIGSTOP)
        return n


def stop_at_output() -> None:
    if not os.environ.get(STOP_AT_OUTPUT):
        return
    for name in ("stdout", "stderr"):
        old = getattr(sys, name)
        setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(_StopAfterFirstWrite(old.fileno())),
                                            encoding=old.encoding, errors=old.errors, line_buffering=True))


def main() -> None:
    install()
    stop_at_output()
    from kseg.cli.main import main as kseg

    sys.argv[0] = "kseg"
    kseg()


def stopped(pid: int) -> bool:
    """Whether process ``pid`` has stopped itself (state T)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False
