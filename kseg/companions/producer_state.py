"""Producer state and leader epochs rebuilt from a partition's batches, as the broker rebuilds
them when it recovers a log, in the broker's own files.

- **Producer state** (``ProducerStateManager``): per producer id of the v2 batches that carry one,
  its epoch, the last batch's sequence, offset and offset delta, the latest timestamp, the
  coordinator epoch of its last transaction marker and the first offset of its ongoing
  transaction. A data batch with a new epoch forgets the earlier batch; a COMMIT or ABORT marker
  ends the transaction and takes the marker record's timestamp and coordinator epoch; an empty
  control batch (its transaction cleaned away) changes nothing. ``producer_snapshot`` writes it
  as a version-1 ``<offset>.snapshot`` (``formats/producer_snapshot.py``: version, CRC-32C of
  what follows, the entries), entries by producer id.
- **Leader epochs** (``LeaderEpochFileCache.assign``): each v2 batch's partition leader epoch at
  its base offset; an epoch differing from the latest, or a start offset below it, replaces the
  entries at or above it in epoch or start offset. ``leader_epoch_checkpoint`` writes them as the
  text ``leader-epoch-checkpoint`` (version 0, count, ``epoch start_offset`` lines).
- **Aborted transactions** (``ProducerStateManager`` at each marker): ``TxnState`` gives the
  ``.txnindex`` entry of each ABORT marker, as recovery writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from kseg.checksums import crc32c
from kseg.companions.build import TxnEntry
from kseg.companions.read import SNAPSHOT_VERSION, ProducerEntry
from kseg.errors import KsegError
from kseg.facts.producer_snapshot import SNAPSHOT_CRC_START
from kseg.formats.attributes import CONTROL_ABORT, CONTROL_COMMIT
from kseg.layouts import SNAPSHOT_ENTRY, SNAPSHOT_HEADER
from kseg.log.control import control_info
from kseg.log.records import batch_records
from kseg.model import Batch

NO_SEQUENCE = -1
NO_OFFSET = -1
NO_PRODUCER_ID = -1


@dataclass
class _Producer:
    producer_id: int
    epoch: int = -1
    last_sequence: int = NO_SEQUENCE
    last_offset: int = NO_OFFSET
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    txn_first_offset: int = NO_OFFSET

    def new_epoch(self, epoch: int) -> None:
        if epoch != self.epoch:  # a new epoch: the batches of the old one are forgotten
            self.epoch = epoch
            self.last_sequence, self.last_offset, self.offset_delta = NO_SEQUENCE, NO_OFFSET, 0

    def entry(self) -> ProducerEntry:
        return ProducerEntry(self.producer_id, self.epoch, self.last_sequence, self.last_offset, self.offset_delta,
                             self.timestamp, self.coordinator_epoch, self.txn_first_offset)


class ProducerStates:
    """The producer state after each batch given, in log order."""

    def __init__(self) -> None:
        self.producers: dict[int, _Producer] = {}

    def on_batch(self, b: Batch, limit: int) -> None:
        pid = b.producer_id
        if b.magic < 2 or pid is None or pid == NO_PRODUCER_ID:
            return
        p = self.producers.get(pid) or _Producer(pid)
        if b.is_control:
            try:
                records = batch_records(b, limit=limit)
                info = control_info(records[0]) if records else None
            except KsegError:
                return
            if info is None or not info.is_txn_marker:
                return
            p.new_epoch(b.producer_epoch)
            p.coordinator_epoch = info.coordinator_epoch if info.coordinator_epoch is not None else -1
            p.txn_first_offset = NO_OFFSET
            p.timestamp = records[0].timestamp
        else:
            p.new_epoch(b.producer_epoch)
            count = b.last_offset - b.offset
            p.last_sequence = b.last_sequence
            p.last_offset, p.offset_delta, p.timestamp = b.last_offset, count, b.max_timestamp
            if b.is_transactional and p.txn_first_offset == NO_OFFSET:
                p.txn_first_offset = b.offset
        self.producers[pid] = p

    def entries(self) -> list[ProducerEntry]:
        return [self.producers[pid].entry() for pid in sorted(self.producers)]


def producer_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """A version-1 producer snapshot of ``entries``, its CRC-32C over the count and entries."""
    entries = list(entries)
    body = SNAPSHOT_HEADER.struct.pack(SNAPSHOT_VERSION, 0, len(entries))[SNAPSHOT_CRC_START:] + b"".join(
        SNAPSHOT_ENTRY.struct.pack(*e) for e in entries)
    return SNAPSHOT_HEADER.struct.pack(SNAPSHOT_VERSION, crc32c(body), len(entries))[:SNAPSHOT_CRC_START] + body


class TxnState:
    """Producer transactions as ProducerStateManager sees them: the open ones, and for each ABORT
    marker the .txnindex entry the broker writes (producer, first offset, the marker's offset,
    the last stable offset: the first offset of the other producers' open transactions)."""

    def __init__(self) -> None:
        self.open: dict[int, int] = {}  # producer id -> first offset of its ongoing transaction

    def on_batch(self, b: Batch, limit: int) -> TxnEntry | None:
        if b.magic < 2 or not b.is_transactional:
            return None
        pid = b.producer_id
        assert pid is not None
        if not b.is_control:
            self.open.setdefault(pid, b.offset)
            return None
        try:
            records = batch_records(b, limit=limit)
            ctype = control_info(records[0]).type_id if records else None
        except KsegError:
            ctype = None
        if ctype not in (CONTROL_ABORT, CONTROL_COMMIT):
            return None
        first = self.open.pop(pid, b.offset)
        if ctype != CONTROL_ABORT:
            return None
        others = [f for p, f in self.open.items() if p != pid]
        lso = min(others) if others else b.last_offset + 1
        return TxnEntry(pid, first, b.last_offset, lso)


class LeaderEpochs:
    """The leader-epoch cache after each batch given, in log order (``entries``: the cache as loaded
    from a checkpoint)."""

    def __init__(self, entries: list[tuple[int, int]] | None = None) -> None:
        self.entries: list[tuple[int, int]] = list(entries or [])  # (epoch, start offset)

    def on_recovered_batch(self, b: Batch) -> None:
        """As ``LogSegment.recover`` assigns: only a batch whose epoch is above the latest."""
        epoch = b.partition_leader_epoch
        if b.magic >= 2 and epoch is not None and (not self.entries or epoch > self.entries[-1][0]):
            self.on_batch(b)

    def on_batch(self, b: Batch) -> None:
        epoch = b.partition_leader_epoch
        if b.magic < 2 or epoch is None or epoch < 0:
            return
        if self.entries and self.entries[-1][0] == epoch and b.offset >= self.entries[-1][1]:
            return
        self.entries = [(e, o) for e, o in self.entries if e < epoch and o < b.offset]
        self.entries.append((epoch, b.offset))


def leader_epoch_checkpoint(entries: list[tuple[int, int]]) -> bytes:
    """A leader-epoch-checkpoint file: version 0, the count, ``epoch start_offset`` lines."""
    return ("0\n" + f"{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)).encode()


__all__ = ["LeaderEpochs", "ProducerStates", "TxnState", "leader_epoch_checkpoint", "producer_snapshot"]
