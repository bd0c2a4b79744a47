"""``dump`` of the companion files: entries as plain dicts, plus kafka-dump-log.sh's lines (spec §6.4)."""

from __future__ import annotations

from pathlib import Path

from .companions import read_offset_index, read_producer_snapshot, read_time_index, read_txn_index
from .dump import CompanionEvent


def _optional_long(v: int) -> str:
    return "OptionalLong.empty" if v < 0 else f"OptionalLong[{v}]"


def dump_companion(path: Path, kind: str) -> CompanionEvent:
    if kind == "index":
        idx = read_offset_index(path)
        entries = [{"offset": e.offset, "position": e.position} for e in idx.entries]
        lines = ([f"{path} is empty."] if not idx.slots else
                 [f"offset: {e.offset} position: {e.position}" for e in idx.entries])
        info = {"zero_tail": idx.zero_tail} if idx.zero_tail else {}
        return CompanionEvent(path, kind, entries, {**info, "kafka_lines": lines})
    if kind == "timeindex":
        idx = read_time_index(path)
        entries = [{"timestamp": e.timestamp, "offset": e.offset} for e in idx.entries]
        lines = ([f"{path} is empty."] if not idx.slots else
                 [f"timestamp: {e.timestamp} offset: {e.offset}" for e in idx.entries])
        info = {"zero_tail": idx.zero_tail} if idx.zero_tail else {}
        return CompanionEvent(path, kind, entries, {**info, "kafka_lines": lines})
    if kind == "txnindex":
        idx = read_txn_index(path)
        entries = [e._asdict() for e in idx.entries]
        lines = [f"version: {e.version} producerId: {e.producer_id} firstOffset: {e.first_offset} "
                 f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}" for e in idx.entries]
        return CompanionEvent(path, kind, entries, {"kafka_lines": lines})
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
