"""What ``dump`` makes of a companion file: one event with its entries.

Apart from the reading (``kseg.ops.companion_dump``, which loads the companion readers),
so that a dump of .log files knows these event types without loading either.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kseg.companions.read import IndexSlots, TxnSlots

__all__ = ["CompanionEvent", "IndexEntries", "TxnEntries"]


@dataclass(frozen=True)
class CompanionEvent:
    """Entries of a non-log file (.index, .timeindex, .txnindex, .snapshot, checkpoints)."""

    path: Path
    kind: str
    entries: Sequence = field(default_factory=list)  # of dicts (IndexEntries for the index files)
    info: dict = field(default_factory=dict)
    parsed: Any = field(default=None, compare=False)  # the file as read (IndexSlots, snapshot, JSON...)
    # a producer snapshot's bytes, for a dump that judges them as kafka-dump-log.sh does (parsed is then
    # kseg's error where kseg cannot read them: the tool's reader may, or say otherwise)
    raw: bytes | None = field(default=None, compare=False, repr=False)


class _FileRows(Sequence):
    """A companion file's entries as dicts, each made when asked for from the file (``slots``),
    so that a file of any size is dumped in flat memory."""

    def __init__(self, slots: Any):
        self.slots = slots

    def __len__(self) -> int:
        return self.slots.count

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        return self._entry(i % len(self))

    def _entry(self, i: int) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError


class IndexEntries(_FileRows):
    """An .index or .timeindex file's entries: a writer that can prints ``slots`` in bulk instead."""

    def __init__(self, slots: IndexSlots, names: tuple[str, str]):
        super().__init__(slots)
        self.names = names  # the two fields of an entry (OffsetIndexEntry's, TimeIndexEntry's)

    def _entry(self, i: int) -> dict:
        return dict(zip(self.names, next(self.slots.rows(i, i + 1))))

    def __iter__(self) -> Iterator[dict]:
        names = self.names
        return (dict(zip(names, row)) for row in self.slots.rows())


class TxnEntries(_FileRows):
    """A .txnindex's entries, read from the file in pieces as they are taken."""

    def __init__(self, slots: TxnSlots):
        super().__init__(slots)

    def _entry(self, i: int) -> dict:
        for k, row in enumerate(self.slots.rows()):
            if k == i:
                return row._asdict()
        raise IndexError(i)  # pragma: no cover - the file shrank under the reader

    def __iter__(self) -> Iterator[dict]:
        return (row._asdict() for row in self.slots.rows())
