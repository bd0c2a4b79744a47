"""``dump`` of the companion files: their entries as plain dicts (spec §6.4).

Each event also carries the parsed file (``parsed``), from which
``kseg.render.companions`` writes kafka-dump-log.sh's lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kseg.companions.read import (
    IndexFile,
    OffsetIndexEntry,
    TimeIndexEntry,
    read_leader_epoch_checkpoint,
    read_offset_index,
    read_partition_metadata,
    read_producer_snapshot,
    read_time_index,
    read_txn_index,
)
from kseg.errors import DataError, InputError

__all__ = ["CompanionEvent", "dump_companion"]


@dataclass(frozen=True)
class CompanionEvent:
    """Entries of a non-log file (.index, .timeindex, .txnindex, .snapshot, checkpoints)."""

    path: Path
    kind: str
    entries: list = field(default_factory=list)
    info: dict = field(default_factory=dict)
    parsed: Any = field(default=None, compare=False)  # the file as read (IndexFile, snapshot, JSON...)


def _index_event(path: Path, kind: str,
                 idx: IndexFile[OffsetIndexEntry] | IndexFile[TimeIndexEntry]) -> CompanionEvent:
    entries = [e._asdict() for e in idx.entries]
    info = {"zero_tail": idx.zero_tail} if idx.zero_tail else {}
    return CompanionEvent(path, kind, entries, info, idx)


def dump_companion(path: Path, kind: str) -> CompanionEvent:
    if kind == "index":
        return _index_event(path, kind, read_offset_index(path))
    if kind == "timeindex":
        return _index_event(path, kind, read_time_index(path))
    if kind == "txnindex":
        idx = read_txn_index(path)
        return CompanionEvent(path, kind, [e._asdict() for e in idx.entries], {}, idx)
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
    try:
        text = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=str(path)) from None
    try:
        state = json.loads(text)
    except ValueError as e:
        raise DataError(f"quorum-state is not JSON: {e}", file=str(path)) from None
    if not isinstance(state, dict):
        raise DataError("quorum-state is not a JSON object", file=str(path), found=type(state).__name__)
    voters = state.get("currentVoters")
    entries = [v if isinstance(v, dict) else {"voter": v} for v in voters] if isinstance(voters, list) else []
    info = {k: v for k, v in state.items() if k != "currentVoters"}
    return CompanionEvent(path, "quorum_state", entries, info, state)
