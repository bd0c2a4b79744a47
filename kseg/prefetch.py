"""Reading ahead: the bytes of the next few small objects fetched in the background while the
current one is used, so that reading many objects in order costs about one round trip's wait
in all rather than one per object.

``ReadAhead`` knows nothing of stores: it runs the fetch functions it is given on a few
daemon threads (pyarrow releases the GIL while it waits on the network) and hands the bytes
over once, to ``take``. Memory is bounded: an item is fetched only while the bytes held
(fetched or in flight, not yet taken) stay under the budget. A fetch that fails is
forgotten: ``take`` answers None and the caller reads the object itself, so the error it
sees is the one a plain read gives, raised where a plain read raises it, never earlier.
Daemon threads never hold up the process's exit (Ctrl-C, an error ending the command).
"""

from __future__ import annotations

import os
import queue
import threading
from typing import TYPE_CHECKING, Callable, Hashable

if TYPE_CHECKING:  # loaded when a fetch starts: concurrent.futures brings logging, a tenth of start-up
    from concurrent.futures import Future

WORKERS = 8  # requests in flight at once
MAX_ITEM = 8 << 20  # larger objects are streamed by ranged reads, never fetched ahead
BUDGET = 64 << 20  # bytes fetched ahead and not yet taken, at most
WINDOW = 16  # items fetched ahead of the one being read, at most


class ReadAhead:
    """Items fetched in the background by key, each taken at most once."""

    def __init__(self, workers: int = WORKERS, budget: int = BUDGET):
        self.workers = workers
        self.budget = budget
        self._lock = threading.Lock()
        self._pid = -1
        self._reset()

    def _reset(self) -> None:
        # A forked child has none of its parent's threads: it starts over.
        self._pid = os.getpid()
        self._entries: dict[Hashable, tuple[Future, int]] = {}
        self._held = 0
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def want(self, key: Hashable, size: int, fetch: Callable[[], bytes | None]) -> bool:
        """Start fetching ``key`` (``size`` bytes, as listed) unless it is under way or the
        budget is spent; False when it was not started for the budget."""
        with self._lock:
            if self._pid != os.getpid():
                self._reset()
            if key in self._entries:
                return True
            if not self.workers or size > MAX_ITEM or self._held + size > self.budget:
                return False
            from concurrent.futures import Future

            future: Future = Future()
            self._entries[key] = (future, size)
            self._held += size
            if len(self._threads) < self.workers and len(self._threads) < len(self._entries):
                t = threading.Thread(target=self._work, name="kseg-read-ahead", daemon=True)
                self._threads.append(t)
                t.start()
            self._queue.put((future, fetch))
            return True

    def take(self, key: Hashable) -> bytes | None:
        """The bytes fetched for ``key`` (waiting while they are in flight), once; None when
        ``key`` was not fetched ahead or its fetch failed (the caller reads it itself)."""
        with self._lock:
            if self._pid != os.getpid():
                self._reset()
            entry = self._entries.pop(key, None)
            if entry is None:
                return None
            self._held -= entry[1]
        try:
            return entry[0].result()
        except Exception:  # the caller's own read raises the error, in the caller's words
            return None

    def drop(self, keys: list[Hashable]) -> None:
        """Forget items that will not be taken (skipped over), freeing their share of the budget."""
        with self._lock:
            for key in keys:
                entry = self._entries.pop(key, None)
                if entry is not None:
                    self._held -= entry[1]

    def held(self) -> int:
        with self._lock:
            return self._held

    def _work(self) -> None:
        q = self._queue
        while True:
            future, fetch = q.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fetch())
            except BaseException as e:  # noqa: BLE001 - handed to take(), which lets the caller read again
                future.set_exception(e)
