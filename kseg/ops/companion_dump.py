"""``dump`` of the companion files: their entries as plain dicts (spec §6.4).

Each event also carries the parsed file (``parsed``), from which
``kseg.render.companions`` writes kafka-dump-log.sh's lines.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kseg.companions.read import (
    IndexSlots,
    OffsetIndexEntry,
    TimeIndexEntry,
    TxnSlots,
    parse_quorum_state,
    read_index_slots,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    read_producer_snapshot,
    read_text_file,
    read_txn_slots,
)
from kseg.errors import KsegError
from kseg.log.listing import QUORUM_STATE_FILE

__all__ = ["CompanionEvent", "IndexEntries", "TxnEntries", "dump_companion"]


@dataclass(frozen=True)
class CompanionEvent:
    """Entries of a non-log file (.index, .timeindex, .txnindex, .snapshot, checkpoints)."""

    path: Path
    kind: str
    entries: Sequence = field(default_factory=list)  # of dicts (IndexEntries for the index files)
    info: dict = field(default_factory=dict)
    parsed: Any = field(default=None, compare=False)  # the file as read (IndexSlots, snapshot, JSON...)


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

    def __init__(self, slots: IndexSlots):
        super().__init__(slots)
        self.names = (OffsetIndexEntry if slots.kind == "index" else TimeIndexEntry)._fields

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


def _index_event(path: Path, kind: str) -> CompanionEvent:
    slots = read_index_slots(path, kind)
    info = {"zero_tail": slots.zero_tail} if slots.zero_tail else {}
    return CompanionEvent(path, kind, IndexEntries(slots), info, slots)  # type: ignore[arg-type]


def dump_companion(path: Path, kind: str) -> CompanionEvent:
    if kind in ("index", "timeindex"):
        return _index_event(path, kind)
    if kind == "txnindex":
        slots = read_txn_slots(path)
        return CompanionEvent(path, kind, TxnEntries(slots), {}, slots)
    if kind == "leader_epoch":
        ckpt = read_leader_epoch_checkpoint(path)
        entries = [{"epoch": e.epoch, "start_offset": e.start_offset} for e in ckpt.entries]
        return CompanionEvent(path, kind, entries, {"version": ckpt.version}, ckpt)
    if kind == "partition_metadata":
        meta = read_partition_metadata(path)
        return CompanionEvent(path, kind, [], {"version": meta.version, "topic_id": meta.topic_id}, meta)
    if kind == "quorum_state":
        return _quorum_state(path)
    snap = read_producer_snapshot(path)
    entries = []
    for e in snap.entries:
        d = e._asdict()
        d["first_sequence"] = e.first_sequence
        entries.append(d)
    return CompanionEvent(path, "snapshot", entries,
                          {"version": snap.version, "crc": snap.crc, "crc_valid": snap.crc_valid}, snap)


def _quorum_state(path: Path) -> CompanionEvent:
    """quorum-state: the KRaft quorum's JSON (QuorumStateData: leaderId, leaderEpoch, votedId,
    appliedOffset, currentVoters, data_version...). Entries are the voters; its keys are kept."""
    text = read_text_file(path, QUORUM_STATE_FILE)
    try:
        state = parse_quorum_state(text)
    except KsegError as e:
        raise e.located(file=str(path))
    voters = state.get("currentVoters")
    entries = [v if isinstance(v, dict) else {"voter": v} for v in voters] if isinstance(voters, list) else []
    info = {k: v for k, v in state.items() if k != "currentVoters"}
    return CompanionEvent(path, "quorum_state", entries, info, state)
