"""Making written outputs drop-in for a broker: the files beside the segments.

A partition folder gets its ``leader-epoch-checkpoint`` rebuilt from the written
batches (a v2 batch's partition leader epoch at the first offset it leads, as
the broker's LeaderEpochFileCache assigns them); ``partition.metadata`` (the
topic id does not change) and ``quorum-state`` are carried over; producer
``.snapshot`` files and KRaft ``<offset>-<epoch>.checkpoint`` snapshots are
carried over when the rewrite kept offsets and producer fields (``up-convert``,
``recompress``, ``compact``), else (``rebase``, ``down-convert``) left out: the
broker rebuilds producer state from the log at start-up.

A log directory gets its checkpoint files written from what is on disk, with the
entries the broker's LogManager writes after a clean shutdown:
``recovery-point-offset-checkpoint`` and ``replication-offset-checkpoint`` at
each partition's log end offset; ``log-start-offset-checkpoint`` only where the
input's names a log start still in the log and offsets did not move (the broker
writes one only where the log start is above the first segment, or the log is
tiered: without an entry the first segment's base offset is the log start);
``cleaner-offset-checkpoint`` carried over where offsets did not move (clamped to
the log); ``meta.properties`` and ``bootstrap.checkpoint`` are carried over. As the
broker's, the checkpoints name the live replicas (and a future replica whose live one is
in another log directory), never one being deleted or a stray one, nor the KRaft
metadata log (the raft layer keeps it, not the LogManager). An input checkpoint whose
entries are carried (log start, cleaner point) that fails its checks follows
``--on-damage`` as any file carried over; under skip the output's is written from the
log alone.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from kseg.companions.read import parse_offset_checkpoint
from kseg.decoders import RAFT_TOPICS
from kseg.errors import IndexFileError, InputError
from kseg.findings import Finding
from kseg.lazy import load
from kseg.log.atomic import write_atomic
from kseg.log.checks import SKIP, STOP
from kseg.log.listing import (
    BOOTSTRAP_FILE,
    CLEANER_CHECKPOINT,
    FUTURE,
    LEADER_EPOCH_FILE,
    LIVE,
    LOG_START_CHECKPOINT,
    META_PROPERTIES,
    PARTITION_METADATA_FILE,
    QUORUM_STATE_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    replica_kind,
)
from kseg.log.segment import Segment, base_offset_of, partition_of, partition_segments
from kseg.printable import printable
from kseg.storage import as_path, copy_file

# verify's check of one file, loaded when a file is carried over
FILE_ERRORS = "kseg.ops.verify:file_errors"
CARRIED_ROOT_FILES = (META_PROPERTIES, BOOTSTRAP_FILE)
CARRIED_PARTITION_FILES = (PARTITION_METADATA_FILE, QUORUM_STATE_FILE)
# Rewrites that keep every offset and every producer field of the batches they keep.
KEEPS_PRODUCER_STATE = ("up-convert", "recompress", "compact")
MOVES_OFFSETS = ("rebase",)
# Partition folder kinds a log directory's checkpoints name, preferred first (the broker's
# LogManager checkpoints its current and future logs; the ones being deleted and stray ones
# it only removes).
CHECKPOINTED = (LIVE, FUTURE)
# The KRaft metadata log: kept by the raft layer, never in the LogManager's checkpoints.
UNCHECKPOINTED_TOPICS = RAFT_TOPICS
RAFT_LOG_AS_IT_IS = ("the KRaft metadata log is the raft layer's (its snapshots and quorum-state name its offsets, "
                     "and the log cleaner never cleans it): in a log directory it is copied as it is, on its own "
                     "it is not rewritten")
# Input checkpoints whose entries the output carries (the others are written from the log alone).
CARRIED_CHECKPOINTS = (LOG_START_CHECKPOINT, CLEANER_CHECKPOINT)


def is_raft_log(path: Any) -> bool:
    """Whether ``path`` (a partition folder, or a segment in one) is a KRaft log's."""
    p = as_path(path) if isinstance(path, str) else path
    where = partition_of(p) or (partition_of(p.parent) if p.suffix else None)
    return where is not None and where[0] in RAFT_TOPICS


def refuse_raft_log(path: Any) -> None:
    """A writer given a KRaft log on its own (``RAFT_LOG_AS_IT_IS``) stops: exit 2."""
    if is_raft_log(path):
        raise InputError(RAFT_LOG_AS_IT_IS, file=str(path))


@dataclass(frozen=True)
class PartitionEnds:
    log_start: int
    log_end: int  # the next offset to be written

    @classmethod
    def kept(cls, first_segment: Any | None, log_end: int | None) -> "PartitionEnds | None":
        """From the first segment kept (its name gives the log start) and the log end; None
        when nothing was kept."""
        if first_segment is None or log_end is None:
            return None
        start = base_offset_of(first_segment)
        return cls(log_end if start is None else start, log_end)


REBUILT = "rebuilt"  # a file derived from the log (a .txnindex), written anew under --on-damage skip


@dataclass
class DamagedFiles:
    """Files a rewrite, repair or salvage carries over (producer snapshots, ``partition.metadata``, ``quorum-state``,
    ``meta.properties``) that fail their checks (``kseg verify``'s), and what ``on_damage`` made of
    each: ``stop`` raises at the first, ``skip`` leaves it out (a broker rebuilds producer state
    from the log without a snapshot, as it does when it finds one corrupt), ``carry`` copies it
    as it is. Either is said and makes the command exit 1."""

    on_damage: str = STOP
    done: list[tuple[str, str, str]] = field(default_factory=list)  # (SKIP, CARRY or REBUILT, the file, its problem)

    def __bool__(self) -> bool:
        return bool(self.done)

    def add(self, other: "DamagedFiles") -> None:
        self.done.extend(other.done)

    def line(self) -> str:
        """``damaged files: left out F (problem); carried G as it is (problem)`` ("" for none)."""
        said = [f"left out {printable(f)} ({printable(why)})" if action == SKIP else
                f"wrote {printable(f)} anew from the log ({printable(why)})" if action == REBUILT else
                f"carried {printable(f)} as it is ({printable(why)})" for action, f, why in self.done]
        return f"damaged files: {'; '.join(said)}" if said else ""

    def as_json(self) -> list[dict]:
        return [{"action": action, "file": f, "problem": why} for action, f, why in self.done]


def checked_copy(src: Any, dst: Path) -> Finding | None:
    """``src`` copied to the local file ``dst`` and checked there as ``kseg verify`` checks it
    (an archive member or an object is read once); its first error (None: sound). The copy is
    left for the caller either way."""
    copy_file(src, dst)
    errors = load(FILE_ERRORS)(dst)
    return errors[0] if errors else None


def carry_file(src: Any, dst: Path, damaged: DamagedFiles | None) -> None:
    """``src`` copied to ``dst`` once it passes its checks, else as ``damaged.on_damage`` says."""
    e = checked_copy(src, dst)
    if e is None:
        return
    policy = damaged.on_damage if damaged is not None else STOP
    if policy == STOP:
        dst.unlink(missing_ok=True)
        raise IndexFileError(f"{e.message} (a file carried over beside the segments; use --on-damage skip to leave it "
                             "out or carry to copy it as it is)", file=str(src), position=e.position, where=e.where,
                             expected=e.expected, found=e.found)
    assert damaged is not None
    if policy == SKIP:
        dst.unlink(missing_ok=True)
    damaged.done.append((policy, str(src), e.line(under=e.file)))


def checkpoint_text(lines: list[str]) -> bytes:
    """Kafka's CheckpointFile: version 0, the entry count, then the entries."""
    return ("0\n" + f"{len(lines)}\n" + "".join(f"{line}\n" for line in lines)).encode()


def finish_partition(src: Path | None, dst: Path, command: str,
                     damaged: DamagedFiles | None = None, *, copied: bool = False) -> PartitionEnds | None:
    """The files a broker keeps beside a written partition's segments (see the module comment);
    those carried over that fail their checks as ``damaged`` says (``carry_file``). ``copied``:
    the segments were copied as they are (another topic, a KRaft log), whatever the command."""
    segs = partition_segments(dst)
    epochs: list[tuple[int, int]] = []
    log_end = None
    for seg in segs:
        for b in Segment(seg).batches():
            last = b.offset + (b.last_offset_delta or 0) if b.magic >= 2 else b.offset
            log_end = last + 1 if log_end is None else max(log_end, last + 1)
            epoch = b.partition_leader_epoch if b.magic >= 2 else None
            if epoch is not None and epoch >= 0 and (not epochs or epoch > epochs[-1][0]):
                epochs.append((epoch, b.offset))
    write_atomic(dst / LEADER_EPOCH_FILE, checkpoint_text([f"{e} {o}" for e, o in epochs]))
    if src is not None and src.is_dir():
        for name in CARRIED_PARTITION_FILES:
            if (src / name).is_file():
                carry_file(src / name, dst / name, damaged)
        if (copied or command in KEEPS_PRODUCER_STATE) and log_end is not None:
            # Producer snapshots, and the KRaft snapshots of __cluster_metadata, hold offsets: they
            # stay true only where offsets and producer fields did.
            for snap in sorted([*src.glob("*.snapshot"), *src.glob("*-*.checkpoint")]):
                at = base_offset_of(snap.name.split("-")[0] + ".x")
                if at is not None and at <= log_end:
                    carry_file(snap, dst / snap.name, damaged)
    if not segs:
        return None
    start = base_offset_of(segs[0]) or 0
    return PartitionEnds(start, start if log_end is None else log_end)


def _carried_checkpoint(src: Path, name: str, damaged: DamagedFiles | None) -> dict[tuple[str, int], int]:
    """The entries of the input's checkpoint ``name`` (none without one); one that fails its
    checks as ``damaged`` says: stop raises, else (skip or carry) the output's is written from
    the log alone, and said: a checkpoint is always written anew, never copied."""
    if not (src / name).is_file():
        return {}
    with tempfile.TemporaryDirectory(prefix="kseg-checkpoint-") as tmp:
        copy = Path(tmp) / name
        e = checked_copy(src / name, copy)
        if e is None:
            return {(t, p): o for t, p, o in parse_offset_checkpoint(copy.read_bytes(), name).entries}
    policy = damaged.on_damage if damaged is not None else STOP
    if policy == STOP:
        raise IndexFileError(f"{e.message} (a checkpoint whose entries are carried over; use --on-damage skip to "
                             "write it from the log alone)", file=str(src / name), position=e.position,
                             where=e.where, expected=e.expected, found=e.found)
    assert damaged is not None
    damaged.done.append((REBUILT, str(src / name), e.line(under=e.file)))
    return {}


def checkpointed_ends(finished: Iterable[tuple[Path, PartitionEnds | None]]) -> dict[tuple[str, int], PartitionEnds]:
    """The ends a log directory's checkpoints name, from its finished partition folders (in name
    order): per topic-partition, the live replica's, else the future one's."""
    ends: dict[tuple[str, int], PartitionEnds] = {}
    rank: dict[tuple[str, int], int] = {}
    for part, e in finished:
        parsed = partition_of(part)
        kind = replica_kind(part.name)
        if parsed is None or e is None or kind not in CHECKPOINTED or parsed[0] in UNCHECKPOINTED_TOPICS:
            continue
        if CHECKPOINTED.index(kind) < rank.get(parsed, len(CHECKPOINTED)):
            ends[parsed], rank[parsed] = e, CHECKPOINTED.index(kind)
    return ends


def finish_log_dir(src: Path, dst: Path, command: str,
                   ends: dict[tuple[str, int], PartitionEnds] | None = None, damaged: DamagedFiles | None = None) -> None:
    """Every partition folder under ``dst`` finished, then the log directory's own files.
    ``ends`` given: the partitions were finished elsewhere (Spark tasks writing to object
    storage), and only the log directory's own files are written into ``dst``."""
    if ends is None:
        ends = checkpointed_ends((part, finish_partition(src / part.name, part, command, damaged))
                                 for part in sorted(p for p in dst.iterdir() if p.is_dir())
                                 if partition_of(part) is not None)
    moved = command in MOVES_OFFSETS  # the input's entries no longer hold: none carried, none read
    old_start = {} if moved else _carried_checkpoint(src, LOG_START_CHECKPOINT, damaged)
    old_cleaner = {} if moved else _carried_checkpoint(src, CLEANER_CHECKPOINT, damaged)
    keys = sorted(ends)
    starts = {}  # written where the input named a log start still in the log
    for k in keys:
        carried = old_start.get(k)
        if carried is not None and ends[k].log_start <= carried <= ends[k].log_end:
            starts[k] = carried
    write_atomic(dst / RECOVERY_POINT_CHECKPOINT,
                 checkpoint_text([f"{t} {p} {ends[(t, p)].log_end}" for t, p in keys]))
    write_atomic(dst / REPLICATION_CHECKPOINT,
                 checkpoint_text([f"{t} {p} {ends[(t, p)].log_end}" for t, p in keys]))
    write_atomic(dst / LOG_START_CHECKPOINT, checkpoint_text([f"{t} {p} {starts[(t, p)]}" for t, p in starts]))
    cleaner = []
    for t, p in keys:
        if (t, p) in old_cleaner:
            e = ends[(t, p)]
            start = starts.get((t, p), e.log_start)
            cleaner.append(f"{t} {p} {min(max(old_cleaner[(t, p)], start), e.log_end)}")
    write_atomic(dst / CLEANER_CHECKPOINT, checkpoint_text(cleaner))
    carry_root_files(src, dst, damaged)


def carry_root_files(src: Path, dst: Path | None, damaged: DamagedFiles | None) -> None:
    """The log directory's own files (meta.properties, bootstrap.checkpoint) carried into
    ``dst`` as ``carry_file`` does, and the input checkpoints whose entries are carried checked;
    ``dst`` None (a dry run): checked as the run would, nothing written."""
    with tempfile.TemporaryDirectory(prefix="kseg-root-") as tmp:
        for name in CARRIED_ROOT_FILES:
            if (src / name).is_file():
                carry_file(src / name, (dst or Path(tmp)) / name, damaged)
        if dst is None:
            for name in CARRIED_CHECKPOINTS:
                _carried_checkpoint(src, name, damaged)
