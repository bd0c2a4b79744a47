"""The ``salvage`` operation: every batch the damage did not touch, into a new output.

``repair`` does what the broker's recovery does: it keeps what precedes the first bad
batch. Salvage reads on past damage: at each bad region it resynchronises on the next
position where a batch passes every check (``kseg.log.salvage_scan``: framing, offsets
between the neighbours, the CRC), and then ``kseg verify``'s own batch checks
(``kseg.log.checks.batch_damage``), so a batch with a valid CRC and impossible contents is
not kept either. Every segment of a partition is read, not only up to the first cut.

The output is a partition folder (or log directory, or .log file) of the input's shape: the
kept batches byte for byte, indexes rebuilt as ``LogSegment.recover`` would, the
``.txnindex`` from the ABORT markers kept, and the leader-epoch-checkpoint and producer
snapshots rebuilt from the batches kept as the broker builds them
(``kseg.companions.producer_state``: a snapshot at each later segment's base offset and at the
log end). Each region left out is reported with its byte range and
the offsets it may have held, from the batches on either side. Nothing here prints.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterable

from kseg.companions.build import TxnEntry, build_indexes, build_txn_index
from kseg.companions.producer_state import LeaderEpochs, ProducerStates, TxnState, leader_epoch_checkpoint, producer_snapshot
from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import InputError, KsegError
from kseg.formats.attributes import CODEC_MASK
from kseg.facts.log_entry import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MIN_SIZE_BY_MAGIC
from kseg.facts.message_v0v1 import ATTRIBUTES_POSITION as LEGACY_ATTRIBUTES_POSITION
from kseg.facts.primitives import INT32_MAX, INT64_MAX
from kseg.facts.record_batch_v2 import LAST_OFFSET_DELTA_POSITION, RECORD_BATCH_OVERHEAD
from kseg.log import identity
from kseg.log.atomic import AtomicFile, write_atomic
from kseg.log.checks import STOP, batch_damage, crc_ok
from kseg.log.decode import scan_entries
from kseg.log.records import batch_records
from kseg.log.salvage_scan import FOUND, MORE, NONE, Limits, find, next_batch
from kseg.log.listing import (INDEX_SUFFIX, LEADER_EPOCH_FILE, LOG_SUFFIX, PRODUCER_SNAPSHOT_SUFFIX,
                               TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
from kseg.log.segment import base_offset_of, partition_of, segment_file_name
from kseg.model import Batch, Record
from kseg.ops.logdir import DamagedFiles, PartitionEnds, carry_root_files, checkpointed_ends, finish_log_dir
from kseg.ops.repair import _groups, carry_other_files, record_count
from kseg.ops.executors import Operation, execute, weight_of
from kseg.ops.staging import Stage, open_stage, publishing, watched, write_into
from kseg.storage import as_path, copy_times

WINDOW = 8 << 20  # bytes read at a time
# A batch right after this many zero bytes may have had its offset field zeroed with them
# (shorter runs end batches by themselves: a record's zero header count, a zero byte of data).
ZERO_RUN = 8
DEFAULT_MAX_BATCH_BYTES = 64 << 20  # the largest batch believed: memory stays bounded whatever a length claims
# Why a region was left out, as the report names it.
ZEROS = "zeros"  # zero bytes (preallocated or zeroed space)
CRC = "crc"  # a framed batch whose CRC does not match
DAMAGED = "damaged"  # a batch with a valid CRC whose contents verify rejects
OFFSETS = "offsets"  # a batch with a valid CRC whose offsets run into the batch after it
PARTIAL = "partial"  # a batch cut short by the end of the file
GARBAGE = "garbage"  # bytes that frame no batch


@dataclass(frozen=True)
class SalvageOptions:
    dry_run: bool = False
    force: bool = False
    index: bool = True
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
    # Keep the records of the batches that frame, decompress and parse but fail their CRC (in the
    # report, for a separate file, never in the partition): untrusted, but sometimes all there is.
    keep_crc_failed: bool = False
    on_damage: str = STOP  # a file carried over beside the segments that fails its checks (``DamagedFiles``)


@dataclass
class CrcFailedBatch:
    """A batch inside a lost range whose CRC fails but whose records read: not kept, but shown."""

    file: str
    batch: Batch
    records: list[Record]

    @property
    def crc_stored(self) -> int:
        return self.batch.crc

    @property
    def crc_computed(self) -> int:
        return self.batch.computed_crc()

    def as_json(self) -> dict[str, Any]:
        b = self.batch
        return {"file": self.file, "position": b.position, "offsets": [b.offset, b.last_offset],
                "records": len(self.records), "crc_stored": self.crc_stored, "crc_computed": self.crc_computed}


@dataclass
class LostRange:
    """Bytes ``start``..``end`` (exclusive) of a segment, left out; the offsets they may have held."""

    file: str
    start: int
    end: int
    reason: str
    message: str
    first_offset: int | None = None  # from the kept batch before (or the segment's base offset)
    last_offset: int | None = None  # from the kept batch after; None: nothing after says
    claimed: tuple[int, int] | None = None  # the offsets the damaged header at ``start`` claims, if it frames
    # Nothing kept after it in the partition: its end offset is unknown; zeros there may be
    # preallocated space (log.preallocate) as well as zeroed batches.
    at_end: bool = False

    @property
    def bytes(self) -> int:
        return self.end - self.start

    @property
    def offsets(self) -> int | None:
        """How many offsets lie between the neighbours (an upper bound in a compacted log)."""
        if self.first_offset is None or self.last_offset is None:
            return None
        return max(self.last_offset - self.first_offset + 1, 0)

    def as_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["bytes"] = self.bytes
        d["offsets"] = self.offsets
        d["claimed"] = list(self.claimed) if self.claimed else None
        return d


@dataclass
class SegmentSalvage:
    file: str
    output: str | None
    size: int
    kept_bytes: int = 0
    kept_batches: int = 0
    kept_records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    lost: list[LostRange] = field(default_factory=list)
    crc_failed: list[CrcFailedBatch] | None = None  # with SalvageOptions.keep_crc_failed

    def as_json(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("file", "output", "size", "kept_bytes", "kept_batches", "kept_records",
                                          "first_offset", "last_offset")}
        d["lost"] = [r.as_json() for r in self.lost]
        if self.crc_failed is not None:
            d["crc_failed"] = [c.as_json() for c in self.crc_failed]
        return d


@dataclass
class PartitionSalvage:
    path: str
    topic: str | None
    partition: int | None
    segments: list[SegmentSalvage] = field(default_factory=list)
    log_end_offset: int | None = None
    # Rebuilt from the batches kept (a partition folder only): the leader-epoch-checkpoint's
    # entries, and each producer snapshot written (its file name and producer count).
    leader_epochs: list[tuple[int, int]] | None = None
    snapshots: list[tuple[str, int]] = field(default_factory=list)
    damaged_files: DamagedFiles = field(default_factory=DamagedFiles)  # files carried over that fail their checks

    @property
    def lost(self) -> list[LostRange]:
        return [r for s in self.segments for r in s.lost]

    @property
    def ends(self) -> PartitionEnds | None:
        """Where its log starts and ends as salvaged, for the log directory's checkpoints."""
        return PartitionEnds.kept(self.segments[0].file if self.segments else None, self.log_end_offset)

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "topic": self.topic, "partition": self.partition,
                "log_end_offset": self.log_end_offset, "segments": [s.as_json() for s in self.segments],
                "leader_epochs": None if self.leader_epochs is None else [list(e) for e in self.leader_epochs],
                "producer_snapshots": [{"file": n, "producers": c} for n, c in self.snapshots],
                "damaged_files": self.damaged_files.as_json()}


@dataclass
class SalvageReport:
    input: str
    output: str | None
    dry_run: bool
    partitions: list[PartitionSalvage] = field(default_factory=list)
    damaged_files: DamagedFiles = field(default_factory=DamagedFiles)  # a log directory's own, carried over

    @property
    def lost(self) -> list[LostRange]:
        return [r for p in self.partitions for r in p.lost]

    @property
    def ok(self) -> bool:
        """True when every byte of the input was kept, and every file carried over passed its checks."""
        return not self.lost and not self.damaged_files and not any(p.damaged_files for p in self.partitions)

    @property
    def crc_failed(self) -> list[CrcFailedBatch] | None:
        """The CRC-failed batches whose records read, when they were asked for."""
        found = [s.crc_failed for p in self.partitions for s in p.segments]
        return None if not found or found[0] is None else [c for cs in found for c in cs or []]

    def as_json(self) -> dict[str, Any]:
        segs = [s for p in self.partitions for s in p.segments]
        crc_failed = self.crc_failed
        return {
            "input": self.input, "output": self.output, "dry_run": self.dry_run, "ok": self.ok,
            "batches_kept": sum(s.kept_batches for s in segs), "records_kept": sum(s.kept_records for s in segs),
            "bytes_lost": sum(r.bytes for r in self.lost), "ranges_lost": len(self.lost),
            **({} if crc_failed is None else {"crc_failed_batches": len(crc_failed),
                                              "crc_failed_records": sum(len(c.records) for c in crc_failed)}),
            "partitions": [p.as_json() for p in self.partitions], "damaged_files": self.damaged_files.as_json(),
        }


# --------------------------------------------------------------------------- one segment


class _Reader:
    """A window over a file: the bytes from ``start``, re-read where the scan needs them."""

    def __init__(self, f: BinaryIO, size: int):
        self.f, self.size = f, size
        self.start, self.buf = 0, b""

    def load(self, at: int, need: int) -> None:
        want = max(0, min(max(WINDOW, need), self.size - at))  # no more than the file holds (read allocates it)
        self.f.seek(at)
        self.start, self.buf = at, self.f.read(want)
        if len(self.buf) < min(want, self.size - at):  # shrank since it was measured: the check at publish says so
            self.size = at + len(self.buf)

    @property
    def final(self) -> bool:
        return self.start + len(self.buf) >= self.size


def _classify(data: bytes, final_end: bool) -> tuple[str, str, tuple[int, int] | None]:
    """Why a region of bytes is not a batch (its first bytes say), and the offsets a header
    at its start claims when it frames one."""
    if not any(data):
        return ZEROS, f"{len(data)} zero bytes", None
    if len(data) >= HEADER_SIZE_UP_TO_MAGIC:
        size = int.from_bytes(data[8:12], "big", signed=True)
        magic = data[16]
        offset = int.from_bytes(data[0:8], "big", signed=True)
        claimed: tuple[int, int] | None = None
        if magic in MIN_SIZE_BY_MAGIC and size >= MIN_SIZE_BY_MAGIC[magic]:
            if magic < 2:
                claimed = (offset, offset)
            elif len(data) >= RECORD_BATCH_OVERHEAD:
                lod = int.from_bytes(data[LAST_OFFSET_DELTA_POSITION:LAST_OFFSET_DELTA_POSITION + 4], "big",
                                     signed=True)
                claimed = (offset, offset + lod) if lod >= 0 else None
            total = size + LOG_OVERHEAD
            if total <= len(data):
                scan = scan_entries(data[:total], 0, max_entries=1)
                if scan.batches and not crc_ok(scan.batches[0]):
                    b = scan.batches[0]
                    after = f", then {len(data) - total} bytes that frame no batch" if len(data) > total else ""
                    return CRC, (f"batch crc mismatch: computed {b.computed_crc():#010x}, stored {b.crc:#010x}"
                                 + after), claimed
            elif final_end:
                return PARTIAL, f"a batch of {total} bytes cut short by the end of the file at {len(data)}", claimed
    return GARBAGE, "bytes that frame no batch", None


class _SegmentWalk:
    """One segment, resynchronised past each bad region; kept batches go to ``out``."""

    def __init__(self, path: Path, o: SalvageOptions, lim: Limits, txn: TxnState, out: AtomicFile | None,
                 pending: list[LostRange], rebuild: "_Rebuild"):
        self.path, self.o, self.lim, self.txn, self.out, self.pending = path, o, lim, txn, out, pending
        self.rebuild = rebuild
        self.kept: list[Batch] = []
        self.txns: list[TxnEntry] = []
        self.rep = SegmentSalvage(str(path), str(out.path) if out else None, 0,
                                  crc_failed=[] if o.keep_crc_failed else None)

    def run(self) -> SegmentSalvage:
        src = as_path(self.path)
        with src.open("rb") as f:
            try:
                identity.opened(self.path, os.fstat(f.fileno()))
            except (OSError, AttributeError, ValueError):  # not a local file: nothing to watch
                pass
            f.seek(0, os.SEEK_END)
            size = f.tell()
            self.rep.size = size
            r = _Reader(f, size)
            r.load(0, 0)
            pos = scan = 0  # pos: first byte not accounted for; scan: where the search goes on
            # Inside a bad region that starts with a plausible header whose CRC fails: the
            # offsets it claims are a neighbour too (a batch found inside its bytes must lie above
            # them); past its bytes (``claim_end``) its claim says nothing, its offset fields may be
            # what the damage changed.
            region: Limits | None = None
            claim_end: int | None = None
            while scan < r.size:
                status, p, total = next_batch(r.buf, scan - r.start, region or self.lim, final=r.final)
                if status == MORE:
                    r.load(r.start + p, total)
                    scan = r.start
                    continue
                if (claim_end is not None and scan < claim_end
                        and (status != FOUND or r.start + p >= claim_end)):
                    r.load(claim_end, 0)  # search again from its end, as if no header had claimed
                    scan, region, claim_end = r.start, self.lim, None
                    continue
                if status != FOUND:
                    break
                at = r.start + p
                raw = memoryview(r.buf)[p:p + total]
                b = scan_entries(raw, at, max_entries=1).batches[0]
                if at > pos and region is None:
                    claim, end = self._claimed_last(f, pos)
                    region = self.lim if claim is None or at >= end else self.lim._replace(
                        min_offset=max(self.lim.min_offset, claim + 1))
                    if b.offset < region.min_offset:
                        scan, claim_end = at + 1, end
                        continue
                region, claim_end = None, None
                findings = batch_damage(b, str(self.path), self.o.max_decompressed_bytes)
                if findings:
                    self._lose(f, pos, at + total, DAMAGED, "batch with a valid crc but damaged contents: "
                               + findings[0].message, (b.offset, b.last_offset))
                    pos = scan = at + total
                    continue
                inner = _legacy_inner_last(b, self.o.max_decompressed_bytes)
                if inner is not None and inner != b.offset:
                    # Magic 0 keeps absolute offsets inside a compressed wrapper, whose own offset is
                    # the last of them; no CRC covers the wrapper's offset field.
                    self._lose(f, pos, at + total, OFFSETS, f"its offset field says {b.offset} but its last inner "
                               f"message has offset {inner}: its offset field is damaged", (b.offset, b.last_offset))
                    pos = scan = at + total
                    continue
                after, first_known = self._successor_offset(f, r, at + total)
                if (after is not None and first_known and after > b.last_offset + 1
                        and at - pos >= ZERO_RUN and not any(self._bytes(f, r, at - ZERO_RUN, ZERO_RUN))):
                    # Zeros run up to it and a gap opens before the next batch: the zeroing may have
                    # reached into its offset field (no CRC covers it), so its offsets are not believed.
                    self._lose(f, pos, at + total, OFFSETS, f"follows zeroed bytes and leaves offsets "
                               f"{b.last_offset + 1}..{after - 1} before the next batch: its offset field may be "
                               "zeroed too", (b.offset, b.last_offset))
                    pos = scan = at + total
                    continue
                if after is not None and after <= b.last_offset:
                    # Its offsets run into the batch after it: one offset field was damaged, and
                    # the header of the one after did not come out of nowhere.
                    self._lose(f, pos, at + total, OFFSETS, f"offsets {b.offset}..{b.last_offset} run into the "
                               f"next batch's {after}: its offset field is damaged", (b.offset, b.last_offset))
                    pos = scan = at + total
                    continue
                if at > pos:
                    self._lose(f, pos, at)
                self._keep(b, raw)
                pos = scan = at + total
            if pos < r.size:
                self._lose(f, pos, r.size, final_end=True)
        return self.rep

    def _claimed_last(self, f: BinaryIO, at: int) -> tuple[int | None, int]:
        """The last offset a header at ``at`` claims, when its framing is plausible (its CRC
        failed, or a batch would have been found there), and where its bytes end."""
        f.seek(at)
        head = f.read(4096)
        status, p, total = find(head, 0, False, self.lim)
        if status == NONE or p != 0 or len(head) < HEADER_SIZE_UP_TO_MAGIC:
            return None, at
        if head[16] >= 2 and len(head) < RECORD_BATCH_OVERHEAD:
            return None, at
        end = at + int.from_bytes(head[8:12], "big", signed=True) + LOG_OVERHEAD
        offset = int.from_bytes(head[0:8], "big", signed=True)
        if head[16] < 2:
            return offset, end
        return offset + int.from_bytes(head[LAST_OFFSET_DELTA_POSITION:LAST_OFFSET_DELTA_POSITION + 4], "big",
                                       signed=True), end

    @staticmethod
    def _bytes(f: BinaryIO, r: _Reader, at: int, n: int) -> bytes:
        rel = at - r.start
        if 0 <= rel and rel + n <= len(r.buf):
            return r.buf[rel:rel + n]
        f.seek(at)
        return f.read(n)

    def _successor_offset(self, f: BinaryIO, r: _Reader, at: int) -> tuple[int | None, bool]:
        """The offset field of a whole, CRC-valid batch starting right at ``at`` that fits above
        the lower neighbour (None if there is none), and whether that is its first offset (v2, or
        an uncompressed v0/v1 message; a wrapper's is its last)."""
        lim = Limits(self.lim.min_offset, INT64_MAX, self.o.max_batch_bytes)
        rel = at - r.start
        if 0 <= rel and at + RECORD_BATCH_OVERHEAD <= r.start + len(r.buf):
            head: bytes | memoryview = memoryview(r.buf)[rel:rel + RECORD_BATCH_OVERHEAD]
        else:
            f.seek(at)
            head = f.read(RECORD_BATCH_OVERHEAD)
        status, p, total = find(head, 0, False, lim)
        if status == NONE or p != 0:
            return None, False
        if total == 0 or total > len(head):
            if 0 <= rel and at + total <= r.start + len(r.buf):
                head = memoryview(r.buf)[rel:rel + total]
            else:
                f.seek(at)
                head = f.read(total)
        status, p, _ = next_batch(head, 0, lim, final=True)
        if status != FOUND or p != 0:
            return None, False
        first_known = head[16] >= 2 or not head[LEGACY_ATTRIBUTES_POSITION] & CODEC_MASK
        return int.from_bytes(head[0:8], "big", signed=True), first_known

    def _keep(self, b: Batch, raw: memoryview) -> None:
        rep = self.rep
        for r in self.pending:
            r.last_offset = b.offset - 1
        self.pending.clear()
        entry = self.txn.on_batch(b, self.o.max_decompressed_bytes)
        if entry is not None:
            self.txns.append(entry)
        self.rebuild.producers.on_batch(b, self.o.max_decompressed_bytes)
        self.rebuild.epochs.on_batch(b)
        if self.out is not None:
            self.out.write(raw)
        rep.kept_batches += 1
        rep.kept_records += record_count(b, self.o.max_decompressed_bytes)
        self.kept.append(b._replace(position=rep.kept_bytes, raw=memoryview(b"")))
        rep.kept_bytes += b.size
        if rep.first_offset is None:
            rep.first_offset = b.offset
        rep.last_offset = b.last_offset
        self.lim = self.lim._replace(min_offset=b.last_offset + 1)

    def _lose(self, f: BinaryIO, start: int, end: int, reason: str | None = None, message: str = "",
              claimed: tuple[int, int] | None = None, final_end: bool = False) -> None:
        if reason is None:
            f.seek(start)
            head = f.read(min(end - start, self.o.max_batch_bytes))
            reason, message, claimed = _classify(head, final_end and end - start <= len(head))
            if reason == ZEROS and len(head) < end - start:  # only the first piece was looked at
                f.seek(start)
                reason = ZEROS if _zeros(f, end - start) else GARBAGE
                message = f"{end - start} zero bytes" if reason == ZEROS else "bytes that frame no batch"
        r = LostRange(str(self.path), start, end, reason, message, first_offset=self.lim.min_offset, claimed=claimed)
        self.rep.lost.append(r)
        self.pending.append(r)
        if self.rep.crc_failed is not None:
            self._crc_failed(f, start, end)

    def _crc_failed(self, f: BinaryIO, start: int, end: int) -> None:
        """The batches framed one after the other from the start of a lost range whose CRC fails
        and whose records read (the framing ends at the first bytes that frame no batch)."""
        f.seek(start)
        data = f.read(min(end - start, self.o.max_batch_bytes))
        pos = 0
        while pos < len(data):
            try:
                scan = scan_entries(data, start, start=pos, max_entries=1)
            except KsegError:
                return
            if not scan.batches:
                return
            b = scan.batches[0]
            pos = scan.consumed
            if crc_ok(b):
                continue
            try:
                records = batch_records(b, limit=self.o.max_decompressed_bytes)
            except KsegError:
                continue
            assert self.rep.crc_failed is not None
            self.rep.crc_failed.append(CrcFailedBatch(str(self.path), b._replace(raw=bytes(b.raw)), records))


class _Rebuild:
    """The partition's producer state and leader epochs over the batches kept, and the producer
    snapshots taken as the broker takes them: at each later segment's base offset (when it rolled)
    and at the log end."""

    def __init__(self) -> None:
        self.producers = ProducerStates()
        self.epochs = LeaderEpochs()
        self.snapshots: dict[int, tuple[bytes, int]] = {}

    def take(self, offset: int) -> None:
        entries = self.producers.entries()
        self.snapshots[offset] = (producer_snapshot(entries), len(entries))


def _legacy_inner_last(b: Batch, limit: int) -> int | None:
    """The last inner offset of a compressed magic-0 wrapper (absolute, as its own offset
    should be); None for any other batch."""
    if b.magic != 0 or not b.attributes & CODEC_MASK:
        return None
    inner = batch_records(b, limit=limit)
    return inner[-1].offset if inner else None


def _zeros(f: BinaryIO, n: int) -> bool:
    while n > 0:
        chunk = f.read(min(WINDOW, n))
        if not chunk:
            return True
        if any(chunk):
            return False
        n -= len(chunk)
    return True


# --------------------------------------------------------------------------- partitions and outputs


def salvage_partition(segs: list[Path], out_dir: Path | None, o: SalvageOptions, *,
                      folder: Path | None = None) -> PartitionSalvage:
    """Salvage one partition's segments (in offset order) into ``out_dir`` (None: dry run)."""
    parsed = partition_of(folder) if folder is not None else None
    pr = PartitionSalvage(str(folder if folder is not None else segs[0]), parsed[0] if parsed else None,
                          parsed[1] if parsed else None, damaged_files=DamagedFiles(o.on_damage))
    txn = TxnState()
    rebuild = _Rebuild()
    pending: list[LostRange] = []  # lost ranges waiting for the next kept batch to bound them
    low = 0
    for i, path in enumerate(segs):
        base = base_offset_of(path)
        if i and base is not None:
            rebuild.take(base)
        nxt = base_offset_of(segs[i + 1]) if i + 1 < len(segs) else None
        # A segment's offsets lie below the next one's base and within an int of its own
        # (its indexes store them relative to it).
        top = min(nxt - 1 if nxt is not None else INT64_MAX, base + INT32_MAX if base is not None else INT64_MAX)
        lim = Limits(max(low, base or 0), top, o.max_batch_bytes)
        dst: Path | None = None
        if out_dir is not None:
            name = segment_file_name(base) if base is not None else path.name
            dst = out_dir / name if out_dir.suffix != LOG_SUFFIX else out_dir
        out = AtomicFile(dst) if dst is not None else None
        try:
            walk = _SegmentWalk(path, o, lim, txn, out, pending, rebuild)
            rep = walk.run()
        except BaseException:
            if out is not None:
                out.abort()
            raise
        pr.segments.append(rep)
        if rep.last_offset is not None:
            low = rep.last_offset + 1
            pr.log_end_offset = low
        elif pr.log_end_offset is None and base is not None:
            pr.log_end_offset = base
        if out is None or dst is None:
            continue
        try:
            identity.require_unchanged([path])  # what was kept is the file as it still is
        except BaseException:
            out.abort()
            raise
        out.commit()
        copy_times(path, dst)
        if o.index and base is not None:
            stem = dst.name.split(".")[0]
            index, timeindex = build_indexes(walk.kept, base, o.index_interval_bytes)
            write_atomic(dst.with_name(stem + INDEX_SUFFIX), index)
            write_atomic(dst.with_name(stem + TIME_INDEX_SUFFIX), timeindex)
            if walk.txns:
                write_atomic(dst.with_name(stem + TXN_INDEX_SUFFIX), build_txn_index(walk.txns))
    for r in pending:  # after the partition's last kept batch: nothing says where its offsets end
        r.at_end = True
    if folder is not None:
        carry_other_files(folder, out_dir, pr.damaged_files)
        _write_rebuilt(rebuild, out_dir, pr)
    return pr


def _write_rebuilt(rebuild: _Rebuild, out_dir: Path | None, pr: PartitionSalvage) -> None:
    """The leader-epoch-checkpoint and the producer snapshots, from the batches kept."""
    if pr.log_end_offset is not None:
        rebuild.take(pr.log_end_offset)
    pr.leader_epochs = list(rebuild.epochs.entries)
    pr.snapshots = [(segment_file_name(at, PRODUCER_SNAPSHOT_SUFFIX), n) for at, (_, n) in sorted(rebuild.snapshots.items())]
    if out_dir is None:
        return
    write_atomic(out_dir / LEADER_EPOCH_FILE, leader_epoch_checkpoint(pr.leader_epochs))
    for at, (data, _) in sorted(rebuild.snapshots.items()):
        write_atomic(out_dir / segment_file_name(at, PRODUCER_SNAPSHOT_SUFFIX), data)


@dataclass(frozen=True)
class SalvageJob:
    options: SalvageOptions
    output: str | None  # None: a dry run


@dataclass(frozen=True)
class SalvageUnit:
    """One partition folder of the input (``name`` its folder's, "" for the input itself), or
    one segment file."""

    source: str  # the input as given
    folder: str | None  # the partition folder; None for a segment file
    segments: tuple[str, ...]
    name: str
    stage: Stage | None  # None: a dry run
    weight: int = 0


@dataclass
class SalvagePartial:
    source: str
    partition: PartitionSalvage
    seen: dict = field(default_factory=dict)


def salvage(input_path: Any, output: Any, o: SalvageOptions, jobs: int = 1) -> SalvageReport:
    """Salvage a .log file, a partition folder or a log directory into ``output`` (a file or
    folder of the same shape), each partition a unit on ``jobs`` processes; with ``o.dry_run``
    only report. An input that changes during the run publishes nothing (``kseg.log.identity``)."""
    return execute(OPERATION, input_path, SalvageJob(o, None if output is None else str(output)), jobs)


def plan(input_path: Any, job: SalvageJob) -> list[SalvageUnit]:
    """One unit per partition folder (or the segment file); the output's stage opened."""
    o = job.options
    src = as_path(input_path)
    if not src.exists():
        raise InputError("no such file or directory", file=str(src))
    if job.output is None and not o.dry_run:
        raise InputError("give -o/--output, or --dry-run")
    if src.is_file():
        stage = None if o.dry_run else open_stage([src], as_path(job.output), force=o.force, folder=False)  # type: ignore[arg-type]
        return [SalvageUnit(str(src), None, (str(src),), "", stage, weight_of([src]))]
    groups = _groups(src)  # unreadable input: exit 2 before the output is staged
    stage = None if o.dry_run else open_stage([src], as_path(job.output), force=o.force)  # type: ignore[arg-type]
    return [SalvageUnit(str(src), str(folder), tuple(str(s) for s in segs), "" if folder == src else folder.name,
                        stage, weight_of(segs)) for folder, segs in groups]


def run(unit: SalvageUnit, job: SalvageJob) -> SalvagePartial:
    """One partition salvaged into the stage, with what it read."""
    o = job.options
    segs = [as_path(s) for s in unit.segments]
    folder = None if unit.folder is None else as_path(unit.folder)

    def write(out: Path) -> PartitionSalvage:
        if folder is not None:
            out.mkdir(parents=True, exist_ok=True)
            pr = salvage_partition(segs, out, o, folder=folder)
        else:
            dst = out if out.suffix == LOG_SUFFIX else out / segs[0].name
            created = out.suffix != LOG_SUFFIX and not out.exists()
            if out.suffix != LOG_SUFFIX:
                out.mkdir(parents=True, exist_ok=True)
            try:
                pr = salvage_partition(segs, dst, o)
            except BaseException:
                if created:
                    shutil.rmtree(out, ignore_errors=True)
                raise
        if unit.stage is not None and unit.stage.where != unit.stage.output:  # named as published
            final = unit.stage.output + (f"/{unit.name}" if unit.name else "")
            for s in pr.segments:
                if s.output:
                    rel = Path(s.output).relative_to(out).as_posix()
                    s.output = str(as_path(final if rel == "." else f"{final}/{rel}"))
        return pr

    def read() -> PartitionSalvage:
        if unit.stage is None:
            return salvage_partition(segs, None, o, folder=folder)
        return write_into(unit.stage, unit.name, write)

    pr, seen = watched(read, as_path(unit.source))  # a segment listed, then renamed or deleted by retention
    return SalvagePartial(unit.source, pr, seen)


def merge(partials: Iterable[SalvagePartial], job: SalvageJob) -> SalvageReport:
    """The partitions' reports in plan order; the output published once."""
    dry = job.options.dry_run
    report: SalvageReport | None = None
    seen: list[dict] = []
    named: list[tuple[Path, PartitionEnds | None]] = []
    with publishing(None if dry else job.output, seen, force=job.options.force) as folder:
        for p in partials:
            if report is None:
                report = SalvageReport(str(as_path(p.source)), None if dry else job.output, dry,
                                       damaged_files=DamagedFiles(job.options.on_damage))
            report.partitions.append(p.partition)
            seen.append(p.seen)
            if Path(p.partition.path) != Path(p.source) and p.partition.topic is not None:  # in a log directory
                named.append((Path(folder or ".") / Path(p.partition.path).name, p.partition.ends))
        if named:  # a log directory: its checkpoints at the salvaged ends, its own files (checked only, dry)
            assert report is not None
            if folder is None:
                carry_root_files(as_path(report.input), None, report.damaged_files)
            else:
                finish_log_dir(as_path(report.input), folder, "salvage", checkpointed_ends(named),
                               report.damaged_files)
    assert report is not None, "a plan of no units"
    return report


OPERATION = Operation("salvage", plan, run, merge)


__all__ = ["CrcFailedBatch", "LostRange", "PartitionSalvage", "SalvageOptions", "SalvageReport", "SegmentSalvage", "salvage",
           "salvage_partition"]
