"""What makes one batch damaged: the error-level checks of a single batch, shared by
``kseg verify`` (which adds notes and the checks across batches) and every writer
(which must never re-encode, or give a fresh CRC to, bytes that failed them).

A batch is damaged when its stored CRC does not match its bytes, when its header
contradicts itself (lastOffsetDelta, record count) or when its records contradict
the header or do not decode (the v2 record walk, offset deltas, maxTimestamp, a
control batch's shape, a legacy wrapper's inner CRCs and offsets), whatever its CRC says.
For the writers, a batch whose offsets verify calls wrong in its partition (going back,
negative, below the segment's name) is damaged too (``OffsetOrder``): the framing offset is
outside every CRC.

The writers' policy (``--on-damage``) is here too: ``stop`` (an error naming the
batch), ``skip`` (leave it out) or ``carry`` (its bytes as they are, never re-encoded);
``policed`` applies it to a stream of batches as they are read, before any transform.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from kseg.checksums import crc32c
from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import CorruptBatchError, KsegError
from kseg.facts.message_v0v1 import CRC_START as LEGACY_CRC_START
from kseg.facts.primitives import INT64_MAX
from kseg.facts.record_batch_v2 import CRC_START as V2_CRC_START
from kseg.findings import ERROR, Finding
from kseg.printable import printable
from kseg.formats.attributes import (
    CODEC_MASK,
    CODEC_ZSTD,
    CONTROL_MASK,
    CREATE_TIME,
    PLUGIN_ID_MASK,
    TIMESTAMP_TYPE_MASK,
)
from kseg.log.control import control_info
from kseg.log.fast import c_twin
from kseg.log.records import batch_records, check_v2_batch_records, plain_run, run_decompressor, wrapper_records
from kseg.log.segment import LeftOut, Segment, base_offset_of, end_of_batches
from kseg.model import Batch, Record

STOP, SKIP, CARRY = "stop", "skip", "carry"
ON_DAMAGE_CHOICES = (STOP, SKIP, CARRY)
# Damaged batches listed by offsets in a summary; more are only counted (memory stays bounded).
MAX_LISTED = 20

# Attribute bits no format defines (v2: bit 7 and 12-15; bits 8-11 are kseg's plugin id).
V2_UNDEFINED_BITS = 0xF080
# What sends a v2 batch past a sound run to the per-batch path: a control batch (its records are
# read), bits verify notes; and codecs past the built-in ones (a plugin's id is in the attributes).
SOUND_RUN_REJECT = CONTROL_MASK | V2_UNDEFINED_BITS | PLUGIN_ID_MASK
# --quick reads no records: a control batch is checked as any other (its header and CRC)
QUICK_RUN_REJECT = V2_UNDEFINED_BITS | PLUGIN_ID_MASK
SOUND_RUN_MAX_CODEC = CODEC_ZSTD
# stats reads a control batch's marker and a plugin's payload the long way; the rest it counts alike
STATS_RUN_REJECT = CONTROL_MASK | PLUGIN_ID_MASK

__all__ = ["CARRY", "ON_DAMAGE_CHOICES", "SKIP", "STOP", "DamagePolicy", "DamageTally", "DamagedBatchError",
           "OffsetOrder", "batch_damage", "checked_batches", "header_errors", "policed", "screened", "sound_v2_run",
           "stats_v2_run"]


def _error(file: str, check: str, position: int | None, message: str, **kw: Any) -> Finding:
    return Finding(ERROR, check, file, position, message, **kw)


def _from_error(file: str, check: str, e: KsegError) -> Finding:
    return _error(file, check, e.position, e.message, expected=e.expected, found=e.found, where=e.where)


# --------------------------------------------------------------------------- the checks


def crc_ok(b: Batch) -> bool:
    """The stored CRC matches the bytes (CRC-32C for v2, CRC-32 for v0/v1)."""
    raw = b.raw
    if b.magic >= 2:
        return crc32c(raw[V2_CRC_START:]) == b.crc
    return zlib.crc32(raw[LEGACY_CRC_START:]) == b.crc


def header_errors(b: Batch, file: str) -> list[Finding]:
    """The header's errors: the CRC; for v2, lastOffsetDelta and the record count."""
    out = []
    raw = b.raw
    computed = crc32c(raw[V2_CRC_START:]) if b.magic >= 2 else zlib.crc32(raw[LEGACY_CRC_START:])
    if computed != b.crc:
        out.append(_error(file, "crc", b.position, "crc mismatch", expected=f"{computed:#010x} (computed over the bytes)",
                          found=f"{b.crc:#010x} (stored)"))
    if b.magic >= 2:
        lod, count = b.last_offset_delta, b.record_count
        assert lod is not None and count is not None  # set on every v2 batch
        if lod < 0:
            out.append(_error(file, "batch", b.position, "negative lastOffsetDelta", found=lod))
        if count < 0 or count > lod + 1:
            out.append(_error(file, "batch", b.position, "record count does not fit the offset range",
                              expected=f"0..{lod + 1}", found=count))
    return out


@dataclass
class RecordCheck:
    """What the record checks found: the errors and what was decoded (the records of a
    legacy entry or a control batch, the count of a v2 data batch, None when undecodable)
    with a legacy wrapper's inner CRC mismatches (verify adds its notes from these)."""

    errors: list[Finding]
    records: list[Record] | int | None
    bad_crcs: list[tuple[int, int, int]] = field(default_factory=list)


def record_check(b: Batch, file: str, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> RecordCheck:
    """Decode and check a batch's records (the C record walk for v2 data batches)."""
    errors: list[Finding] = []
    try:
        if b.magic >= 2 and not b.is_control:
            summary = check_v2_batch_records(b, limit=limit)
            errors.extend(v2_summary_errors(b, summary, file))
            return RecordCheck(errors, b.record_count)
        if b.magic < 2 and b.attributes & CODEC_MASK:
            records, bad_crcs = wrapper_records(b, limit=limit)
            errors.extend(wrapper_crc_errors(b, bad_crcs, file))
            order = wrapper_order_error(b, records, file)
            if order is not None:
                errors.append(order)
            return RecordCheck(errors, records, bad_crcs)
        records = batch_records(b, limit=limit)
    except KsegError as e:
        return RecordCheck([_from_error(file, "records", e)], None)
    if b.magic >= 2:
        errors.extend(v2_summary_errors(b, records_summary(b, records), file))
        errors.extend(control_errors(b, records, file))
    return RecordCheck(errors, records)


def records_summary(b: Batch, records: list[Record]) -> tuple[int | None, bool, int, int]:
    """(max stored timestamp, offset deltas increasing, min delta, max delta) of decoded records."""
    if not records:
        return None, True, 0, 0
    deltas = [r.offset - b.base_offset for r in records]
    ordered = all(x < y for x, y in zip(deltas, deltas[1:]))
    return max(r.stored_timestamp for r in records), ordered, min(deltas), max(deltas)


def v2_summary_errors(b: Batch, summary: tuple[int | None, bool, int, int], file: str) -> list[Finding]:
    max_ts, ordered, min_delta, max_delta = summary
    lod = b.last_offset_delta
    assert lod is not None  # a v2 batch
    out = []
    if not ordered:
        out.append(_error(file, "records", b.position, "record offsets do not increase inside the batch"))
    if b.record_count and (min_delta < 0 or max_delta > lod):
        out.append(_error(file, "records", b.position, "record offset deltas outside the batch's range",
                          expected=f"0..{lod}", found=f"{min_delta}..{max_delta}"))
    if b.record_count and b.timestamp_type == CREATE_TIME and max_ts != b.max_timestamp:
        out.append(_error(file, "timestamps", b.position, "maxTimestamp is not the largest record timestamp",
                          expected=max_ts, found=b.max_timestamp))
    return out


def control_errors(b: Batch, records: list[Record], file: str) -> list[Finding]:
    if not b.is_control:
        return []
    if not records:
        # What the log cleaner leaves when it removes a marker whose header it must keep for its
        # producer (DefaultRecordBatch.writeEmptyHeader): Kafka reads it as a batch of no records.
        return []
    # A transaction marker's batch holds that one marker; a KRaft control batch may hold several
    # records (a snapshot's header, kraft.version and voters; the log's kraft.version and voters).
    infos = []
    for r in records:
        try:
            infos.append(control_info(r))
        except KsegError as e:
            return [_from_error(file, "control", e.located(position=b.position))]
    markers = [i for i in infos if i.is_txn_marker]
    if markers and len(records) != 1:
        return [_error(file, "control", b.position, "a transaction marker's control batch must hold exactly one "
                       "record", found=len(records))]
    if markers and not b.is_transactional:
        return [_error(file, "control", b.position, "transaction marker in a non-transactional batch")]
    return []


def wrapper_crc_errors(b: Batch, bad_crcs: list[tuple[int, int, int]], file: str) -> list[Finding]:
    return [_error(file, "crc", b.position, "inner message crc mismatch", where=f"inner message {i}",
                   expected=f"{computed:#010x} (computed over the bytes)", found=f"{stored:#010x} (stored)")
            for i, stored, computed in bad_crcs]


def wrapper_order_error(b: Batch, records: list[Record], file: str) -> Finding | None:
    offsets = [r.offset for r in records]
    if any(x >= y for x, y in zip(offsets, offsets[1:])):
        return _error(file, "records", b.position, "inner offsets do not increase", found=offsets[:10])
    return None


#: A batch as the index checks need it (kseg.companions.check.BatchRows): position, first offset
#: (INT64_MIN: unknown), last offset, maxTimestamp, size; native int64s
SUMMARY_ROW = struct.Struct("=5q")


class SoundRun(NamedTuple):
    """v2 batches taken at once (``sound_v2_run``): up to ``stop``, with their ``records``, their
    ``bytes`` and the ``last`` offset after them."""

    stop: int
    records: int
    bytes: int
    last: int | None


def sound_v2_run(batches: list[Batch], start: int, last: int | None, name_base: int | None,
                 limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES, file: str = "", quick: bool = False,
                 rows: bytearray | None = None) -> SoundRun:
    """The v2 batches from ``batches[start]`` in which a full verify finds nothing to say, taken
    at once: no error of ``header_errors`` or ``record_check``, no attribute bit it notes, not
    control batches, built-in codecs; offsets following ``last`` one after another (None: from
    any first offset), none negative or below ``name_base``. The C twin decompresses and walks
    them without a Python object per batch or record; stop == start: take ``batches[start]``
    the long way (which says what is wrong with it). ``quick``: what ``verify --quick`` finds
    nothing in (the header, the CRC and the offsets; the records are not read). ``rows``: each
    batch taken appended as the index checks need it (``SUMMARY_ROW``)."""
    run = c_twin("sound_v2_run")
    if run is None:
        return sound_v2_run_py(batches, start, last, name_base, limit, file, quick, rows)
    from_c = run(batches, start, last, name_base, limit, crc32c, None if quick else run_decompressor(limit), KsegError,
                 QUICK_RUN_REJECT if quick else SOUND_RUN_REJECT, TIMESTAMP_TYPE_MASK, SOUND_RUN_MAX_CODEC, rows)
    return SoundRun(*from_c)


def sound_v2_run_py(batches: list[Batch], start: int, last: int | None, name_base: int | None,
                    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES, file: str = "", quick: bool = False,
                    rows: bytearray | None = None) -> SoundRun:
    """The reference of ``sound_v2_run``: the per-batch checks, batch after batch."""
    records = size = 0
    reject = QUICK_RUN_REJECT if quick else SOUND_RUN_REJECT
    i = start
    while i < len(batches):
        b = batches[i]
        if b.magic != 2 or b.attributes & reject or b.codec > SOUND_RUN_MAX_CODEC:
            break
        lod, count = b.last_offset_delta, b.record_count
        assert lod is not None and count is not None  # set on every v2 batch
        first, batch_last = b.base_offset, b.base_offset + lod
        if (batch_last > INT64_MAX or first < 0 or (name_base is not None and first < name_base)
                or (last is not None and first != last + 1)):
            break
        if header_errors(b, file) or (not quick and record_check(b, file, limit).errors):
            break
        if rows is not None:
            rows += SUMMARY_ROW.pack(b.position, first, batch_last, b.max_timestamp, b.size)
        records += count
        size += b.size
        last = batch_last
        i += 1
    return SoundRun(i, records, size, last)


class StatsRun(NamedTuple):
    """v2 batches counted at once (``stats_v2_run``): up to ``stop``; sums over them (``records``,
    ``bytes``, ``keyless``, ``tombstones``, the compressed payloads as ``stored`` and ``raw``,
    the smallest record timestamp ``min_timestamp`` and largest batch maxTimestamp
    ``max_timestamp``, each None where no batch had one >= 0, ``bytes_by_codec`` by codec id);
    ``rows``: per batch six int64s (size, record count, maxTimestamp, producer id, last offset,
    attributes)."""

    stop: int
    records: int = 0
    bytes: int = 0
    keyless: int = 0
    tombstones: int = 0
    stored: int = 0
    raw: int = 0
    min_timestamp: int | None = None
    max_timestamp: int | None = None
    bytes_by_codec: tuple[int, ...] = ()
    rows: bytes = b""


STATS_ROW = 6  # int64s per batch in StatsRun.rows


def stats_v2_run(batches: list[Batch], start: int, registers: bytearray, p: int,
                 limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> StatsRun:
    """The v2 batches from ``batches[start]`` that ``kseg stats`` counts the same however they
    are read, counted at once in C (see ``_speedups.stats_v2_run``): CRC as stored, not control
    batches, built-in codecs, records that walk whole; each non-null key into the HyperLogLog
    ``registers`` (2**p bytes). stop == start: count ``batches[start]`` batch by batch."""
    run = c_twin("stats_v2_run")
    if run is None:
        return stats_v2_run_py(batches, start, registers, p, limit)
    stop, sums, rows = run(batches, start, limit, crc32c, run_decompressor(limit), KsegError, STATS_RUN_REJECT,
                           TIMESTAMP_TYPE_MASK, SOUND_RUN_MAX_CODEC, registers, p)
    return StatsRun(stop, *sums, rows)


def stats_v2_run_py(batches: list[Batch], start: int, registers: bytearray, p: int,
                    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> StatsRun:
    """The reference of ``stats_v2_run``: no batch taken, so stats counts each one by one (the
    C run is held to giving the same figures as that, tests/test_stats.py)."""
    return StatsRun(start)


def batch_damage(b: Batch, file: str, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> list[Finding]:
    """Every error ``kseg verify`` finds in this batch on its own (none: the batch is sound)."""
    return _damage_and_first(b, file, limit)[0]


def _damage_and_first(b: Batch, file: str, limit: int) -> tuple[list[Finding], int]:
    """``batch_damage`` and the batch's first offset (a legacy wrapper's first inner record's,
    read by the same decoding; its own offset when its records do not decode)."""
    if b.magic < 2 and not b.attributes & CODEC_MASK:  # the hot case of legacy segments
        if zlib.crc32(b.raw[LEGACY_CRC_START:]) == b.crc:
            try:
                batch_records(b, limit=limit)
                return [], b.base_offset
            except KsegError as e:
                return [_from_error(file, "records", e)], b.base_offset
    check = record_check(b, file, limit)
    first = b.base_offset
    if b.magic < 2 and isinstance(check.records, list) and check.records:
        first = check.records[0].offset
    return header_errors(b, file) + check.errors, first


class OffsetOrder:
    """``kseg verify``'s offset errors across a partition's batches, for the writers: a batch
    whose first offset is negative, below its segment's base offset (from the file's name), or
    not above every offset before it in the partition (offsets going back) is damaged too. One
    per partition, shown every batch of its segments in order (as verify, damaged ones too)."""

    def __init__(self, after: int | None = None) -> None:
        self.last: int | None = after  # ``after``: the last offset of the partition's segments before
        self.opening: int | None = None  # the first offset of the first batch shown

    def errors(self, b: Batch, first: int, name_base: int | None, file: str) -> list[Finding]:
        """The batch's offset errors; its last offset then bounds the batches after it."""
        _, last = batch_span(b)
        if self.opening is None:
            self.opening = first
        before = self.last
        self.last = last if before is None else max(before, last)
        out = []
        if first < 0 or last < 0:
            out.append(_error(file, "offsets", b.position, "negative offset", expected=">= 0",
                              found=first if first < 0 else last))
        elif name_base is not None and first < name_base:
            out.append(_error(file, "offsets", b.position, "offset below the segment's base offset (from its name)",
                              expected=f">= {name_base}", found=first))
        if before is not None and first <= before:
            out.append(_error(file, "offsets", b.position, "offsets do not increase", expected=f"> {before}",
                              found=first))
        return out

    def first_wrong(self, batches: list[Batch], start: int, stop: int, name_base: int | None,
                    file: str) -> tuple[int, list[Finding]] | None:
        """``errors`` of the v2 batches ``batches[start:stop]`` in turn (a run read at once), up
        to the first that has any: its index and what is wrong; None when none has."""
        last = self.last
        low = 0 if name_base is None or name_base < 0 else name_base
        if self.opening is None and start < stop:
            self.opening = batches[start].base_offset
        for j in range(start, stop):
            b = batches[j]
            first = b.base_offset
            if first < low or (last is not None and first <= last):  # the slow path says what
                self.last = last
                found = self.errors(b, first, name_base, file)
                if found:
                    return j, found
                last = self.last
                continue
            end = first + b.last_offset_delta
            if last is None or end > last:
                last = end
        self.last = last
        return None


def checked_batches(path: Any, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                    left_out: LeftOut | None = None,
                    order: OffsetOrder | None = None) -> Iterator[tuple[Batch, list[Finding]]]:
    """Every batch of a segment with its damage (``batch_damage``; with ``order``, the offset
    errors across the partition too), raising what ends the walk early (a partial or corrupt
    tail) as ``strict_batches`` does, zeros a broker preallocated excepted (told to
    ``left_out``). Runs of uncompressed v0/v1 messages are checked at once in C (their CRCs and
    records), as verify takes them."""
    seg = Segment(path)
    file = str(seg.path)
    name_base = base_offset_of(seg.path)
    for entries in seg.batch_lists():
        i = 0
        while i < len(entries):
            run = plain_run(entries, i)
            if run is None:
                b = entries[i]
                findings, first = _damage_and_first(b, file, limit)
                if order is not None:  # told every batch, as verify's order is
                    offsets = order.errors(b, first, name_base, file)
                    findings = findings or offsets
                yield b, findings
                i += 1
                continue
            bad = set(run.bad_crcs)  # the run's records decoded: a bad CRC is all that can be wrong
            for k, b in enumerate(run.batches):
                findings = header_errors(b, file) if k in bad else []
                if order is not None:  # told every batch, as verify's order is
                    offsets = order.errors(b, b.base_offset, name_base, file)
                    findings = findings or offsets
                yield b, findings
            i += len(run.batches)
    end_of_batches(seg, left_out)


# --------------------------------------------------------------------------- the policy


def batch_span(b: Batch) -> tuple[int, int]:
    """The offsets a batch's header claims (a legacy entry: its one offset)."""
    if b.magic >= 2 and b.last_offset_delta is not None:
        return b.base_offset, b.base_offset + b.last_offset_delta
    return b.base_offset, b.base_offset


def describe(b: Batch) -> str:
    first, last = batch_span(b)
    return f"batch offsets {first}..{last}" if b.magic >= 2 else f"message offset {first}"


class DamagedBatchError(CorruptBatchError):
    """A batch failed its checks and ``--on-damage stop`` (the default) is in force."""

    hint = "use --on-damage skip or carry to go on"

    def __str__(self) -> str:
        return f"{super().__str__()} ({self.hint})"


def damaged_error(b: Batch, findings: list[Finding], file: str) -> DamagedBatchError:
    """The one error line for a damaged batch: the file, its byte position, its offsets, what is wrong."""
    first = findings[0]
    wheres = [w for w in (first.where, None if first.position in (None, b.position)
                          else f"the problem at byte {first.position}") if w]
    more = f" (and {len(findings) - 1} more problem(s))" if len(findings) > 1 else ""
    return DamagedBatchError(f"{describe(b)} is damaged: {first.message}", file=file, position=b.position,
                             where=", ".join(wheres) or None, expected=first.expected,
                             found=f"{first.found}{more}" if first.found is not None else (more.strip() or None))


def offsets_error(b: Batch, findings: list[Finding], file: str) -> CorruptBatchError:
    """A read's error for a batch whose offsets are wrong in its partition (``OffsetOrder``): as
    ``damaged_error`` says it, without the writers' hint (a read has nothing to carry)."""
    e = damaged_error(b, findings, file)
    return CorruptBatchError(e.message, file=e.file, position=e.position, where=e.where, expected=e.expected,
                             found=e.found)


_DONE = {SKIP: "skipped", CARRY: "carried"}


@dataclass
class DamageTally:
    """What a writer did with damaged batches: counts, bytes, and the first few by offsets."""

    skipped: int = 0
    carried: int = 0
    bytes: int = 0
    listed: list[dict] = field(default_factory=list)  # at most MAX_LISTED

    def __bool__(self) -> bool:
        return bool(self.skipped or self.carried)

    def record(self, action: str, b: Batch, findings: list[Finding], file: str) -> None:
        if action == SKIP:
            self.skipped += 1
        else:
            self.carried += 1
        self.bytes += b.size
        if len(self.listed) < MAX_LISTED:
            first, last = batch_span(b)
            self.listed.append({"action": action, "file": file, "position": b.position, "size": b.size,
                                "first_offset": first, "last_offset": last, "problem": findings[0].message})

    def add(self, other: "DamageTally") -> None:
        self.skipped += other.skipped
        self.carried += other.carried
        self.bytes += other.bytes
        self.listed.extend(other.listed[:max(0, MAX_LISTED - len(self.listed))])

    def line(self) -> str:
        """``damaged batches: 1 skipped (71 bytes): skipped offsets 3..3 (71 bytes at byte 91 of FILE: crc mismatch)``."""
        if not self:
            return ""
        heads = [f"{n} {verb}" for n, verb in ((self.skipped, "skipped"), (self.carried, "carried as they are")) if n]
        shown = "; ".join(f"{_DONE[d['action']]} offsets {d['first_offset']}..{d['last_offset']} ({d['size']} bytes "
                          f"at byte {d['position']} of {printable(d['file'])}: {d['problem']})" for d in self.listed)
        more = self.skipped + self.carried - len(self.listed)
        tail = f"; and {more} more" if more > 0 else ""
        return f"damaged batches: {', '.join(heads)} ({self.bytes} bytes): {shown}{tail}"

    def as_json(self) -> dict:
        return {"skipped": self.skipped, "carried": self.carried, "bytes": self.bytes, "batches": list(self.listed)}


@dataclass(frozen=True)
class DamagePolicy:
    """``--on-damage``: what a writer does with a damaged batch; ``limit`` bounds decompression."""

    on_damage: str = STOP
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES

    def __post_init__(self) -> None:
        if self.on_damage not in ON_DAMAGE_CHOICES:
            raise ValueError(f"on_damage must be one of {ON_DAMAGE_CHOICES}, not {self.on_damage!r}")


def screened(checked: Iterable[tuple[Batch, list[Finding]]], policy: DamagePolicy, file: str,
             tally: DamageTally) -> Iterator[tuple[Batch, bool]]:
    """Each batch (of ``checked_batches``) with whether it is damaged (and carried); skipped
    batches are left out, ``stop`` raises at the first damaged one."""
    for b, findings in checked:
        if not findings:
            yield b, False
            continue
        if policy.on_damage == STOP:
            raise damaged_error(b, findings, file)
        tally.record(policy.on_damage, b, findings, file)
        if policy.on_damage == CARRY:
            yield b, True


def policed(checked: Iterable[tuple[Batch, list[Finding]]], policy: DamagePolicy, file: str, tally: DamageTally,
            transform: Callable[[Iterator[Batch]], Iterator[bytes]],
            carry: Callable[[Batch], bytes], skip: Callable[[Batch], None] = lambda b: None) -> Iterator[bytes]:
    """``transform`` over the runs of sound batches, each run a call of its own (so what a
    transform holds back, a pending group, is written before a damaged batch); a damaged
    batch is ``carry(b)`` in its place, or left out (``skip(b)`` told), or stops the run."""
    it = iter(checked)
    damaged: list[tuple[Batch, list[Finding]]] = []

    def run() -> Iterator[Batch]:
        for b, findings in it:
            if findings:
                damaged.append((b, findings))
                return
            yield b

    while True:
        yield from transform(run())
        if not damaged:
            return
        b, findings = damaged.pop()
        if policy.on_damage == STOP:
            raise damaged_error(b, findings, file)
        if policy.on_damage == CARRY:
            raw = carry(b)
            tally.record(CARRY, b, findings, file)
            yield raw
        else:
            tally.record(SKIP, b, findings, file)
            skip(b)
