"""A unit's output read while the unit still runs: for executors whose partials arrive only when
a unit ends (Spark), so that ``kseg spark dump big.log | head -1`` prints its first line at once,
as the plain command does, and not after the whole segment was rendered.

The unit writes its output into a file of frames (``LiveSpool``), flushed every ``FLUSH_EVERY``
seconds by a thread, so what a slow decoder rendered so far is there to read. The merging process
reads the frames as they come (``follow``), and stops at the end frame. A retried task (Spark
runs a failed task again) writes the same frames to the next attempt's file (``attempt_name``):
the reader goes on there from the frame where the failed attempt's file stopped, so nothing is
shown twice.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from typing import BinaryIO, Callable, Iterator

from kseg.ops.spool import SpooledBytes

FLUSH_EVERY = 0.1  # seconds: the latest a rendered line waits before the reader can see it
BUFFER = 1 << 20  # bytes buffered in the unit before they are written out regardless
PAUSE = 0.02  # seconds the reader waits for more frames


class _Idle:
    def __repr__(self) -> str:
        return "IDLE"


IDLE = _Idle()
"""``follow``'s item when nothing new is there yet: the consumer flushes what it has buffered."""

_HEAD = struct.Struct(">cI")  # kind, length
_BYTES, _NOTE, _END = b"B", b"N", b"E"


def attempt_name(path: str, attempt: int) -> str:
    """The live file of a task's ``attempt`` (0: the first)."""
    return path if attempt == 0 else f"{path}.{attempt}"


class LiveSpool:
    """A binary stream for a renderer (``write``, and ``note`` for a stderr line at its place),
    written as frames to ``path`` as it goes. ``done()`` writes the end frame; call it however
    the unit ends, so that the reader never waits for a unit that is over. It returns what a
    ``ByteSpool`` returns, empty: the output is in the file, not in the partial."""

    def __init__(self, path: str):
        self.file: BinaryIO = open(path, "xb")  # never another attempt's or run's file
        self.pending = bytearray()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.flusher = threading.Thread(target=self._flush_every, daemon=True)
        self.flusher.start()

    def write(self, data: bytes) -> int:
        self._frame(_BYTES, bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def note(self, text: str) -> None:
        self._frame(_NOTE, text.encode("utf-8", "surrogateescape"))

    def done(self) -> SpooledBytes:
        if not self.stop.is_set():
            self.stop.set()
            self.flusher.join()
            self._frame(_END, b"")
            self._write_out()
            self.file.close()
        return SpooledBytes()

    def _frame(self, kind: bytes, payload: bytes) -> None:
        if not payload and kind != _END:
            return
        with self.lock:
            self.pending += _HEAD.pack(kind, len(payload))
            self.pending += payload
            if len(self.pending) >= BUFFER:
                self._write_out_locked()

    def _flush_every(self) -> None:
        while not self.stop.wait(FLUSH_EVERY):
            self._write_out()

    def _write_out(self) -> None:
        with self.lock:
            self._write_out_locked()

    def _write_out_locked(self) -> None:
        if self.pending:
            self.file.write(self.pending)
            self.file.flush()
            self.pending = bytearray()


def follow(path: str, running: Callable[[], bool], pause: float = PAUSE) -> Iterator[bytes | str | _Idle]:
    """The frames of ``path`` (bytes for stdout, text for stderr) as they are written, ``IDLE``
    while none is new; to the end frame, or until ``running()`` says no unit will write more
    (the caller then learns why from the unit's partial). The files are removed as it ends."""
    attempt, consumed, buf = 0, 0, b""
    f: BinaryIO | None = None
    try:
        while True:
            alive = running()  # asked before reading: what a unit wrote before it ended is read below
            if f is None:
                f = _open_at(attempt_name(path, attempt), consumed)
            data = f.read() if f is not None else b""
            buf += data
            frames, buf, ended = _frames(buf)
            for kind, payload in frames:
                consumed += _HEAD.size + len(payload)
                yield payload if kind == _BYTES else payload.decode("utf-8", "surrogateescape")
            if ended:
                return
            if data:
                continue
            if os.path.exists(attempt_name(path, attempt + 1)):  # a retry: go on where this one stopped
                if f is not None:
                    f.close()
                f, buf, attempt = None, b"", attempt + 1
                continue
            if not alive:
                return
            yield IDLE
            time.sleep(pause)
    finally:
        if f is not None:
            f.close()
        for a in range(attempt + 2):
            try:
                os.unlink(attempt_name(path, a))
            except OSError:
                pass


def _open_at(name: str, offset: int) -> BinaryIO | None:
    try:
        f = open(name, "rb")
    except FileNotFoundError:
        return None
    f.seek(offset)
    return f


def _frames(buf: bytes) -> tuple[list[tuple[bytes, bytes]], bytes, bool]:
    """The whole frames at the start of ``buf``, what is left after them, and whether the end
    frame was among them."""
    out, pos = [], 0
    while len(buf) - pos >= _HEAD.size:
        kind, length = _HEAD.unpack_from(buf, pos)
        if len(buf) - pos - _HEAD.size < length:
            break
        pos += _HEAD.size
        if kind == _END:
            return out, b"", True
        out.append((kind, buf[pos:pos + length]))
        pos += length
    return out, buf[pos:], False
