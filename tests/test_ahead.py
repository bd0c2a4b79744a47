"""``kseg.ops.ahead``: an iterator produced on another thread gives the same items in the same
order, raises what the producer raised at the item where it did, and a consumer that stops
stops the producer (its source closed, its thread gone, at most ``depth`` items read past)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import examples
from kseg.ops.ahead import ahead


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "kseg-ahead"]


@examples(50)
@given(st.lists(st.integers()), st.integers(min_value=1, max_value=4))
def test_the_same_items_in_order(items, depth):
    assert list(ahead(iter(items), depth)) == items
    assert not _ahead_threads()


@pytest.mark.parametrize("error", [ValueError("bad batch"), KeyboardInterrupt()])
def test_what_the_producer_raises_comes_at_its_item(error):
    def source():
        yield 1
        yield 2
        raise error

    got = []
    with pytest.raises(type(error)) as caught:
        for item in ahead(source(), 1):
            got.append(item)
    assert got == [1, 2] and caught.value is error
    assert not _ahead_threads()


def test_a_consumer_that_stops_stops_the_producer():
    produced: list[int] = []
    closed = threading.Event()

    def source():
        try:
            for n in range(10_000):
                produced.append(n)
                yield n
        finally:
            closed.set()

    it = ahead(source(), 2)
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    it.close()
    assert closed.is_set(), "the source was not closed"
    assert len(produced) <= 3 + 2 + 1, produced  # what was taken, the queue, the one being put
    assert not _ahead_threads()


def test_an_error_in_the_consumer_stops_the_producer():
    closed = threading.Event()

    def source():
        try:
            yield from range(10_000)
        finally:
            closed.set()

    with pytest.raises(RuntimeError):
        for n in ahead(source(), 2):
            if n == 5:
                raise RuntimeError("the writer failed")
    assert closed.is_set() and not _ahead_threads()
