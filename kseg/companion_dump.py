"""``dump`` of the companion files: entries as plain dicts, plus kafka-dump-log.sh's lines (spec §6.4).

The partition's text files (leader-epoch-checkpoint, partition.metadata, and
quorum-state, the KRaft quorum's JSON) are not read by kafka-dump-log.sh; their
"kafka" lines are kseg's, in the same ``name: value`` style.
"""

from __future__ import annotations

import json
from pathlib import Path

from .companions import (
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
from .dump import CompanionEvent
from .errors import DataError, InputError


def _optional_long(v: int) -> str:
    return "OptionalLong.empty" if v < 0 else f"OptionalLong[{v}]"


def _index_event(path: Path, kind: str,
                 idx: IndexFile[OffsetIndexEntry] | IndexFile[TimeIndexEntry]) -> CompanionEvent:
    """A .index or .timeindex: each entry's fields, in order, as kafka-dump-log.sh prints them."""
    entries = [e._asdict() for e in idx.entries]
    lines = ([f"{path} is empty."] if not idx.slots else
             [" ".join(f"{name}: {value}" for name, value in e.items()) for e in entries])
    info = {"zero_tail": idx.zero_tail} if idx.zero_tail else {}
    return CompanionEvent(path, kind, entries, {**info, "kafka_lines": lines})


def dump_companion(path: Path, kind: str) -> CompanionEvent:
    if kind == "index":
        return _index_event(path, kind, read_offset_index(path))
    if kind == "timeindex":
        return _index_event(path, kind, read_time_index(path))
    if kind == "txnindex":
        idx = read_txn_index(path)
        entries = [e._asdict() for e in idx.entries]
        lines = [f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
                 f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}" for e in idx.entries]
        return CompanionEvent(path, kind, entries, {"kafka_lines": lines})
    if kind == "leader_epoch":
        ckpt = read_leader_epoch_checkpoint(path)
        entries = [{"epoch": e.epoch, "start_offset": e.start_offset} for e in ckpt.entries]
        lines = [f"epoch: {e.epoch} startOffset: {e.start_offset}" for e in ckpt.entries]
        return CompanionEvent(path, kind, entries, {"version": ckpt.version, "kafka_lines": lines})
    if kind == "partition_metadata":
        meta = read_partition_metadata(path)
        return CompanionEvent(path, kind, [], {"version": meta.version, "topic_id": meta.topic_id,
                                               "kafka_lines": [f"version: {meta.version} topicId: {meta.topic_id}"]})
    if kind == "quorum_state":
        return _quorum_state(path)
    snap = read_producer_snapshot(path)
    entries = []
    lines = []
    for e in snap.entries:
        d = e._asdict()
        d["first_sequence"] = e.first_sequence
        entries.append(d)
        line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {_optional_long(e.current_txn_first_offset)} lastTimestamp: {e.timestamp} ")
        if e.has_batch_metadata:
            line += (f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                     f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        lines.append(line)
    return CompanionEvent(path, "snapshot", entries,
                          {"version": snap.version, "crc": snap.crc, "crc_valid": snap.crc_valid,
                           "kafka_lines": lines})


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
    compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    line = " ".join(f"{k}: {compact(v)}" for k, v in state.items())
    return CompanionEvent(path, "quorum_state", entries, {**info, "kafka_lines": [line]})
