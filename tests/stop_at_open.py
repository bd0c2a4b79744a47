"""Stop this process (SIGSTOP) right after it has opened a given file and taken its identity
(the ``fstat`` kseg makes of a segment it opens): imported by a test's child before kseg, so
that a change made to the file "while kseg has it open" is made at a known moment, instead of
whenever a poller of /proc happens to see the descriptor (a fast run on a busy machine closes
it before the poller looks, every time).

The file is named by ``KSEG_TEST_STOP_AT``; the first ``os.fstat`` of a descriptor open on it
stops the process, once."""

from __future__ import annotations

import os
import signal

TARGET = os.environ.get("KSEG_TEST_STOP_AT", "")
_real_fstat = os.fstat
_done = False


def _fstat(fd: int) -> os.stat_result:
    global _done
    result = _real_fstat(fd)
    if not _done:
        try:
            here = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            here = ""
        if here == TARGET:
            _done = True
            os.kill(os.getpid(), signal.SIGSTOP)
    return result


if TARGET:
    os.fstat = _fstat
