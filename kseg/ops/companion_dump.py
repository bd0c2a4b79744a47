"""``dump`` of the companion files: their entries as plain dicts (spec §6.4).

Each event (``kseg.ops.companion_events``) also carries the parsed file (``parsed``), from
which ``kseg.render.companions`` writes kafka-dump-log.sh's lines. A dump loads this module
(and the readers) only for a companion file.
"""

from __future__ import annotations

from pathlib import Path

from kseg.companions.read import (
    OffsetIndexEntry,
    TimeIndexEntry,
    parse_producer_snapshot,
    parse_quorum_state,
    read_index_slots,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    read_producer_snapshot,
    read_snapshot_bytes,
    read_text_file,
    read_txn_slots,
)
from kseg.errors import DataError, KsegError
from kseg.log.listing import QUORUM_STATE_FILE
from kseg.ops.companion_events import CompanionEvent, IndexEntries, TxnEntries

__all__ = ["dump_companion"]


def _index_event(path: Path, kind: str) -> CompanionEvent:
    slots = read_index_slots(path, kind)
    info = {"zero_tail": slots.zero_tail} if slots.zero_tail else {}
    names = (OffsetIndexEntry if slots.kind == "index" else TimeIndexEntry)._fields
    return CompanionEvent(path, kind, IndexEntries(slots, names), info, slots)  # type: ignore[arg-type]


def dump_companion(path: Path, kind: str, as_the_tool: bool = False) -> CompanionEvent:
    """A companion file's event; ``as_the_tool``: read as kafka-dump-log.sh reads it (a .txnindex's
    versions as Kafka checks them, ``TxnSlots.stop``; a producer snapshot's bytes carried, and kseg's
    error instead of raised, ``CompanionEvent.raw``)."""
    if kind in ("index", "timeindex"):
        return _index_event(path, kind)
    if kind == "txnindex":
        slots = read_txn_slots(path, as_kafka=as_the_tool)
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
    if kind == "offset_checkpoint":  # a log directory's recovery point, log start ... per partition
        offsets = read_offset_checkpoint(path)
        entries = [{"topic": t, "partition": n, "offset": o} for t, n, o in offsets.entries]
        info = {} if offsets.version is None else {"version": offsets.version}  # None: an empty file
        return CompanionEvent(path, kind, entries, info, offsets)
    if kind == "meta_properties":  # a key and value each (its keys are the file's: no field of ours)
        props = read_meta_properties(path)
        return CompanionEvent(path, kind, [{"key": k, "value": v} for k, v in props.items()], {}, props)
    raw = None
    if as_the_tool:
        raw = read_snapshot_bytes(path)
        try:
            snap = parse_producer_snapshot(raw)
        except DataError as e:
            return CompanionEvent(path, "snapshot", [], {}, e.located(file=str(path)), raw)
    else:
        snap = read_producer_snapshot(path)
    entries = []
    for e in snap.entries:
        d = e._asdict()
        d["first_sequence"] = e.first_sequence
        entries.append(d)
    return CompanionEvent(path, "snapshot", entries,
                          {"version": snap.version, "crc": snap.crc, "crc_valid": snap.crc_valid}, snap, raw)


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
