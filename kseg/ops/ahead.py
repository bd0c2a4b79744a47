"""An iterator produced on a thread of its own, a few items ahead of its consumer.

Why: ``export`` reads records into Arrow batches (C that holds the GIL) while pyarrow's
Parquet writer encodes and compresses the previous ones (C++ that lets the GIL go); on a second
core the two overlap. Items arrive in order; what the producer raises is raised in the consumer
at the item where it happened; a consumer that stops (an error, Ctrl-C, ``close``) stops the
producer at its next item, and the thread is gone when the iterator is. Memory: ``depth`` items.
"""

from __future__ import annotations

import queue
import threading
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

_END = object()
_POLL_S = 0.1  # how often a producer waiting on a full queue looks whether the consumer left


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def ahead(items: Iterable[T], depth: int = 2) -> Iterator[T]:
    """``items``, produced on another thread at most ``depth`` items ahead of the consumer."""
    q: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        it = iter(items)
        try:
            for item in it:
                if not put(item):
                    return
            put(_END)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put(_Raised(e))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="kseg-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()


__all__ = ["ahead"]
