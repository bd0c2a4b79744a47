"""Conversions between message formats and codecs, following the broker's rules (spec §7).

Each conversion is a generator: batches of one partition in, entry bytes out,
with a ``Summary`` that counts what was copied, patched, rebuilt and dropped,
so nothing disappears silently. They never touch files (see ``kseg.jobs``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Iterable, Iterator

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES, get_codec
from kseg.codecs.choice import CodecChoice
from kseg.defaults import DEFAULT_BATCH_BYTES, DEFAULT_BATCH_RECORDS
from kseg.errors import CorruptBatchError, InputError, UnconvertibleError
from kseg.facts.log_entry import LOG_OVERHEAD
from kseg.facts.primitives import INT32_MAX, INT64_MAX
from kseg.formats.attributes import (
    CODEC_MASK,
    CODEC_NAMES,
    CODEC_NONE,
    CODEC_PLUGIN,
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    PLUGIN_ID_MASK,
    PLUGIN_ID_SHIFT,
    TIMESTAMP_TYPE_MASK,
)
from kseg.layouts import ENTRY_FRAMING
from kseg.log.checks import DamageTally
from kseg.log.encode import (
    assemble_v2,
    build_legacy_message_set,
    build_legacy_wrapper,
    build_v2_batch,
    header_of,
    wrap_legacy,
)
from kseg.log.records import batch_records, codec_for, payload_bytes
from kseg.log.segment import LeftOut, base_offset_of, strict_batches
from kseg.model import Batch, Record

_FRAMING = ENTRY_FRAMING.struct


@dataclass
class Summary:
    batches_in: int = 0
    records_in: int = 0
    bytes_in: int = 0
    batches_out: int = 0
    records_out: int = 0
    bytes_out: int = 0
    copied: int = 0  # entries written byte for byte
    patched: int = 0  # entries whose header fields outside the payload changed
    rebuilt: int = 0  # entries encoded anew (records re-encoded; recompressed if compressed)
    recompressed: int = 0  # entries whose payload went through a compressor
    dropped: Counter = field(default_factory=Counter)
    # Damaged input batches (``--on-damage skip|carry``): counted in batches_in/bytes_in, and
    # carried ones in batches_out/bytes_out, never in the record counts (theirs are not to be believed).
    damage: DamageTally = field(default_factory=DamageTally)
    left_out: LeftOut = field(default_factory=LeftOut)  # zeros preallocated after the input's last batches

    def add(self, other: "Summary") -> None:
        for name in ("batches_in", "records_in", "bytes_in", "batches_out", "records_out", "bytes_out", "copied",
                     "patched",
                     "rebuilt", "recompressed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.dropped.update(other.dropped)
        self.damage.add(other.damage)
        self.left_out.add(other.left_out)

    def line(self) -> str:
        parts = [
            f"{self.batches_in} batches / {self.records_in} records in",
            f"{self.batches_out} batches / {self.records_out} records / {self.bytes_out} bytes out",
            f"copied {self.copied}, patched {self.patched}, rebuilt {self.rebuilt}, recompressed {self.recompressed}",
        ]
        if self.dropped:
            parts.append("dropped: " + ", ".join(f"{n} {what}" for what, n in sorted(self.dropped.items())))
        if self.bytes_in and self.bytes_out > self.bytes_in:
            grown = self.bytes_out - self.bytes_in
            parts.append(f"the output is larger than the input by {grown} bytes ({100 * grown / self.bytes_in:.1f}%)")
        if self.damage:
            parts.append(self.damage.line())
        if self.left_out:
            parts.append(self.left_out.line())
        return "; ".join(parts)

    def as_json(self) -> dict:
        return {
            "batches_in": self.batches_in, "records_in": self.records_in, "bytes_in": self.bytes_in,
            "batches_out": self.batches_out,
            "records_out": self.records_out, "bytes_out": self.bytes_out, "copied": self.copied,
            "patched": self.patched, "rebuilt": self.rebuilt, "recompressed": self.recompressed,
            "dropped": dict(self.dropped), "damaged": self.damage.as_json(), "left_out": self.left_out.as_json(),
        }


def _count_in(summary: Summary, batch: Batch, n_records: int) -> None:
    summary.batches_in += 1
    summary.records_in += n_records
    summary.bytes_in += batch.size


def _emit(summary: Summary, raw: bytes, n_records: int, entries: int = 1) -> bytes:
    summary.batches_out += entries
    summary.records_out += n_records
    summary.bytes_out += len(raw)
    return raw


def _n_records(batch: Batch) -> int:
    if batch.magic < 2:
        return 1  # legacy wrappers are counted when decoded
    assert batch.record_count is not None  # set on every v2 batch
    return batch.record_count


# --------------------------------------------------------------------------- up-conversion


@dataclass(frozen=True)
class UpOptions:
    to_magic: int
    choice: CodecChoice = CodecChoice()
    log_append_time: int | None = None  # stamp messages without timestamps (v0) as LogAppendTime
    batch_records: int = DEFAULT_BATCH_RECORDS
    batch_bytes: int = DEFAULT_BATCH_BYTES
    partition_leader_epoch: int = -1
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES


def up_convert(batches: Iterable[Batch], options: UpOptions, summary: Summary) -> Iterator[bytes]:
    """v0 -> v1, v0/v1 -> v2 (spec §7.3). Entries already at the target magic or above are copied,
    or recompressed when ``o.choice`` names a codec."""
    if options.to_magic not in (1, 2):
        raise InputError(f"up-convert targets magic 1 or 2, not {options.to_magic}")
    pending_state = _Pending()
    for at_target, run in groupby(batches, key=lambda batch: batch.magic >= options.to_magic):
        if not at_target:
            yield from _up_convert_run(run, options, summary, pending_state)
            continue
        yield from _flush_pending(pending_state, options, summary)
        if not options.choice.keep:
            # --codec is applied to entries already at the target magic too (recompressed), never ignored.
            ro = RecompressOptions(choice=options.choice, batch_records=options.batch_records,
                                   batch_bytes=options.batch_bytes,
                                   limit=options.limit)
            yield from recompress(run, ro, summary)
            continue
        for b in run:
            n = _n_records(b) if b.magic >= 2 or b.codec == 0 else len(batch_records(b, limit=options.limit))
            _count_in(summary, b, n)
            summary.copied += 1
            yield _emit(summary, bytes(b.raw), n)
    yield from _flush_pending(pending_state, options, summary)


@dataclass
class _Pending:
    """Uncompressed legacy messages waiting to be grouped into one v2 batch."""

    records: list[Record] = field(default_factory=list)
    size: int = 0
    ts_type: int = CREATE_TIME


def _flush_pending(p: _Pending, options: UpOptions, summary: Summary) -> Iterator[bytes]:
    if p.records:
        yield from _legacy_group_to_v2(p.records, p.ts_type, options, summary)
        p.records, p.size = [], 0


def _up_convert_run(batches: Iterable[Batch], options: UpOptions, summary: Summary,
                    pending: _Pending) -> Iterator[bytes]:
    """Entries below the target magic, converted."""
    for b in batches:
        records = batch_records(b, limit=options.limit)
        _count_in(summary, b, len(records))
        ts_type, records = _timestamps_for_up(b, records, options)
        if options.to_magic == 1:
            yield from _v0_to_v1(b, records, ts_type, options, summary)
            continue
        if b.codec == CODEC_NONE:
            # Consecutive uncompressed messages are grouped into v2 batches.
            r = records[0]
            size = len(r.key or b"") + len(r.value or b"") + 32
            if pending.records and (ts_type != pending.ts_type or len(pending.records) >= options.batch_records
                                    or pending.size + size > options.batch_bytes
                                    or r.offset - pending.records[0].offset > INT32_MAX  # an offset delta is an int32
                                    or (ts_type == LOG_APPEND_TIME and pending.records[0].timestamp != r.timestamp)):
                yield from _flush_pending(pending, options, summary)
            pending.ts_type = ts_type
            pending.records.append(r)
            pending.size += size
            continue
        yield from _flush_pending(pending, options, summary)
        codec = options.choice.id_for(b.codec)
        raw = build_v2_batch(
            records, codec=codec, level=options.choice.level, timestamp_type=ts_type,
            partition_leader_epoch=options.partition_leader_epoch,
            max_timestamp=_lat_max(records, ts_type, b, options),
            plugin_id=options.choice.plugin_id, codec_impl=options.choice.codec,
        )
        summary.rebuilt += 1
        summary.recompressed += codec != CODEC_NONE
        yield _emit(summary, raw, len(records))


def _timestamps_for_up(batch: Batch, records: list[Record], options: UpOptions) -> tuple[int, list[Record]]:
    """The timestamp type and records' (effective) timestamps after up-conversion.

    With ``log_append_time`` every converted entry, v0 or v1, is stamped with it, as
    the broker stamps what is produced to a LogAppendTime topic (``LogValidator``);
    the records keep their stored timestamps (-1 for v0), which a v2 batch carries
    beside the stamp. Without it v0 messages get none and v1 entries keep their type.
    """
    if options.log_append_time is not None:
        lat = options.log_append_time
        return LOG_APPEND_TIME, [r._replace(timestamp=lat) for r in records]
    if batch.magic == 0:
        return CREATE_TIME, records
    return batch.timestamp_type, records


def _lat_max(records: list[Record], ts_type: int, batch: Batch, options: UpOptions) -> int | None:
    if ts_type != LOG_APPEND_TIME:
        return None
    if options.log_append_time is not None:
        return options.log_append_time
    return batch.timestamp  # a v1 LogAppendTime entry: its stamp applies to every record


def _legacy_group_to_v2(records: list[Record], ts_type: int, options: UpOptions, summary: Summary) -> Iterator[bytes]:
    codec = options.choice.id_for(CODEC_NONE)
    max_ts = records[0].timestamp if ts_type == LOG_APPEND_TIME else None
    raw = build_v2_batch(
        records, codec=codec, level=options.choice.level, timestamp_type=ts_type,
        partition_leader_epoch=options.partition_leader_epoch, max_timestamp=max_ts,
        plugin_id=options.choice.plugin_id, codec_impl=options.choice.codec,
    )
    summary.rebuilt += 1
    summary.recompressed += codec != CODEC_NONE
    yield _emit(summary, raw, len(records))


def _v0_to_v1(batch: Batch, records: list[Record], ts_type: int, options: UpOptions,
              summary: Summary) -> Iterator[bytes]:
    lat = options.log_append_time if ts_type == LOG_APPEND_TIME else None
    attrs_ts = TIMESTAMP_TYPE_MASK if lat is not None else 0
    ts = NO_TIMESTAMP if lat is None else lat
    codec = options.choice.id_for(batch.codec)
    _require_legacy_codec(codec, 1, batch)
    inner = [r._replace(magic=1, attributes=attrs_ts, stored_timestamp=ts) for r in records]
    if codec == CODEC_NONE:
        summary.rebuilt += len(inner)
        yield _emit(summary, build_legacy_message_set(inner, magic=1), len(inner), len(inner))
        return
    raw = build_legacy_wrapper(inner, magic=1, codec=codec, level=options.choice.level, timestamp_type=ts_type,
                               wrapper_timestamp=ts, codec_impl=options.choice.codec)
    summary.rebuilt += 1
    summary.recompressed += 1
    yield _emit(summary, raw, len(records))


def _require_legacy_codec(codec: int, magic: int, batch: Batch) -> None:
    if codec == CODEC_PLUGIN or codec > 3:

        # Asking for the impossible is a usage error (exit 2): the data is fine, --codec is missing.
        name = batch.codec_name if codec == batch.codec else CODEC_NAMES.get(codec, f"codec {codec}")
        raise UnconvertibleError(
            f"{name} cannot be carried by magic {magic} (give a built-in --codec: none, gzip, snappy or lz4)",
            position=batch.position,
        )


# --------------------------------------------------------------------------- down-conversion


@dataclass(frozen=True)
class DownOptions:
    to_magic: int
    choice: CodecChoice = CodecChoice()
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES


def down_convert(batches: Iterable[Batch], options: DownOptions, summary: Summary) -> Iterator[bytes]:
    """v2 -> v0/v1 and v1 -> v0 as the broker serves old consumers (spec §7.4)."""
    if options.to_magic not in (0, 1):
        raise InputError(f"down-convert targets magic 0 or 1, not {options.to_magic}")
    for b in batches:
        if b.magic <= options.to_magic:
            n = 1 if b.codec == 0 else len(batch_records(b, limit=options.limit))
            _count_in(summary, b, n)
            summary.copied += 1
            yield _emit(summary, bytes(b.raw), n)
            continue
        if b.is_control:
            _count_in(summary, b, b.record_count or 0)
            summary.dropped["control batches"] += 1
            continue
        codec = options.choice.id_for(b.codec)
        _require_legacy_codec(codec, options.to_magic, b)
        records = batch_records(b, limit=options.limit)
        _count_in(summary, b, len(records))
        if not records:
            summary.dropped["empty batches"] += 1
            continue
        headers = sum(len(r.headers) for r in records)
        if headers:
            summary.dropped["headers"] += headers
        if b.magic >= 2 and (b.producer_id != -1 or b.is_transactional):
            summary.dropped["producer states"] += 1
        lat = b.timestamp if b.timestamp_type == LOG_APPEND_TIME else None
        ts_attr = TIMESTAMP_TYPE_MASK if (lat is not None and options.to_magic == 1) else 0
        if options.to_magic == 0:
            if any(r.timestamp != NO_TIMESTAMP for r in records):
                summary.dropped["timestamps"] += len(records)
            inner = [r._replace(magic=0, attributes=0, stored_timestamp=NO_TIMESTAMP) for r in records]
        else:
            inner = [r._replace(magic=1, attributes=ts_attr, stored_timestamp=r.timestamp) for r in records]
        if codec == CODEC_NONE:  # one message per record
            summary.rebuilt += len(inner)
            yield _emit(summary, build_legacy_message_set(inner, magic=options.to_magic), len(inner), len(inner))
            continue
        raw = build_legacy_wrapper(
            inner, magic=options.to_magic, codec=codec, level=options.choice.level,
            timestamp_type=b.timestamp_type if options.to_magic == 1 else CREATE_TIME,
            wrapper_timestamp=lat if lat is not None else None,
            codec_impl=options.choice.codec if not options.choice.keep else None,
        )
        summary.rebuilt += 1
        summary.recompressed += 1
        yield _emit(summary, raw, len(records))


# --------------------------------------------------------------------------- recompression


@dataclass(frozen=True)
class RecompressOptions:
    choice: CodecChoice
    batch_records: int = DEFAULT_BATCH_RECORDS
    batch_bytes: int = DEFAULT_BATCH_BYTES
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES


def recompress(batches: Iterable[Batch], options: RecompressOptions, summary: Summary) -> Iterator[bytes]:
    """Same magic, new codec. v2 batches keep every header field; legacy wrappers keep
    their inner messages byte for byte; uncompressed legacy messages are grouped into wrappers."""
    target = options.choice.id_for(CODEC_NONE)
    group: list[Batch] = []
    group_bytes = 0

    def flush() -> Iterator[bytes]:
        nonlocal group, group_bytes
        if group:
            yield from _wrap_group(group, target, options, summary)
            group, group_bytes = [], 0

    for b in batches:
        if b.magic < 2 and b.codec == CODEC_NONE and target != CODEC_NONE:
            if group and (b.magic != group[0].magic or b.timestamp_type != group[0].timestamp_type
                          or len(group) >= options.batch_records or group_bytes + b.size > options.batch_bytes
                          # a LogAppendTime wrapper's stamp is every inner message's: only equal ones share one
                          or (b.timestamp_type == LOG_APPEND_TIME and b.timestamp != group[0].timestamp)):
                yield from flush()
            _count_in(summary, b, 1)
            group.append(b)
            group_bytes += b.size
            continue
        yield from flush()
        if b.magic >= 2:
            yield from _recompress_v2(b, target, options, summary)
        elif b.codec == CODEC_NONE:
            _count_in(summary, b, 1)
            summary.copied += 1
            yield _emit(summary, bytes(b.raw), 1)
        else:
            yield from _recompress_wrapper(b, target, options, summary)
    yield from flush()


def _target_attributes(attrs: int, target: int, plugin_id: int | None) -> int:
    attrs = attrs & ~CODEC_MASK & ~PLUGIN_ID_MASK
    if plugin_id is not None:
        return attrs | CODEC_PLUGIN | (plugin_id << PLUGIN_ID_SHIFT)
    return attrs | target


def _compress(choice: CodecChoice, data: bytes, magic: int) -> bytes:
    codec = choice.codec if choice.codec is not None else get_codec(CODEC_NONE)
    return codec.compress(data, magic=magic, level=choice.level)


def _recompress_v2(batch: Batch, target: int, options: RecompressOptions, summary: Summary) -> Iterator[bytes]:
    count = _n_records(batch)
    _count_in(summary, batch, count)
    same = batch.codec == target and (target != CODEC_PLUGIN or batch.plugin_id == options.choice.plugin_id)
    if batch.is_control or (same and options.choice.level is None) or count == 0:
        summary.copied += 1
        yield _emit(summary, bytes(batch.raw), count)
        return
    plain, _ = payload_bytes(batch, limit=options.limit)
    payload = plain if target == CODEC_NONE else _compress(options.choice, plain, 2)
    header = header_of(batch).with_(attributes=_target_attributes(batch.attributes, target, options.choice.plugin_id))
    summary.recompressed += target != CODEC_NONE
    summary.rebuilt += 1
    yield _emit(summary, assemble_v2(header, payload), count)


def _recompress_wrapper(batch: Batch, target: int, options: RecompressOptions, summary: Summary) -> Iterator[bytes]:
    records = batch_records(batch, limit=options.limit)
    _count_in(summary, batch, len(records))
    if target == batch.codec and options.choice.level is None:
        summary.copied += 1
        yield _emit(summary, bytes(batch.raw), len(records))
        return
    if target == CODEC_NONE:
        # Unwrap: each inner message becomes a top-level message with its absolute offset.
        lat = batch.timestamp if batch.magic == 1 and batch.timestamp_type == LOG_APPEND_TIME else None
        if lat is not None:
            records = [r._replace(attributes=r.attributes | TIMESTAMP_TYPE_MASK, stored_timestamp=lat)
                       for r in records]
        summary.rebuilt += len(records)
        yield _emit(summary, build_legacy_message_set(records, magic=batch.magic), len(records), len(records))
        return
    _require_legacy_codec(target, batch.magic, batch)
    inner, _ = payload_bytes(batch, limit=options.limit)  # inner messages stay byte for byte
    value = _compress(options.choice, inner, batch.magic)
    summary.recompressed += 1
    summary.rebuilt += 1
    yield _emit(summary, wrap_legacy(batch.offset, batch.magic, target, value, timestamp_type=batch.timestamp_type,
                               timestamp=batch.timestamp), len(records))


def _wrap_group(group: list[Batch], target: int, options: RecompressOptions, summary: Summary) -> Iterator[bytes]:
    first = group[0]
    magic = first.magic
    _require_legacy_codec(target, magic, first)
    base = first.offset
    inner = bytearray()
    for m in group:
        raw = bytearray(m.raw)
        if magic == 1:
            raw[0:8] = (m.offset - base).to_bytes(8, "big", signed=True)  # outside the CRC
        inner += raw
    value = _compress(options.choice, bytes(inner), magic)
    ts = max(m.timestamp for m in group) if magic == 1 else NO_TIMESTAMP
    if magic == 1 and first.timestamp_type == LOG_APPEND_TIME:
        ts = group[-1].timestamp
    summary.recompressed += 1
    summary.rebuilt += 1
    yield _emit(summary, wrap_legacy(group[-1].offset, magic, target, value, timestamp_type=first.timestamp_type,
                               timestamp=ts), len(group))


# --------------------------------------------------------------------------- rebase


def rebase(batches: Iterable[Batch], delta: int, summary: Summary, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
           ) -> Iterator[bytes]:
    """Shift every offset by ``delta`` the way the broker assigns offsets in place (spec §7.2):
    v2 batches and v1 entries change only fields outside their CRC; v0 wrappers hold
    absolute inner offsets and are rewritten and recompressed (why KIP-31 exists)."""
    for b in batches:
        if b.magic >= 2 or b.codec == CODEC_NONE:
            _count_in(summary, b, _n_records(b))
            new = b.offset + delta
            _check_offset(new, b)
            summary.patched += 1
            yield _emit(summary, _with_offset(b, new), _n_records(b))
        elif b.magic == 1:
            if b.offset == 0:
                # librdkafka's wrapper offset 0 means base 0 (spec §2.3): the last inner
                # relative offset is the real last offset, so read it.
                records = batch_records(b, limit=limit)
                new = records[-1].offset + delta
                n = len(records)
            else:
                new = b.offset + delta
                n = 0  # counting inner records would need decompression, which rebase avoids
            _count_in(summary, b, n)
            _check_offset(new, b)
            summary.patched += 1
            yield _emit(summary, _with_offset(b, new), n)
        else:
            inner, _ = payload_bytes(b, limit=limit)
            out = bytearray(inner)
            pos = 0
            n = 0
            while pos < len(out):
                if pos + LOG_OVERHEAD > len(out):
                    raise CorruptBatchError("inner message set ends inside an entry's framing",
                                            position=b.position)
                old, size = _FRAMING.unpack_from(out, pos)
                _check_offset(old + delta, b)
                _FRAMING.pack_into(out, pos, old + delta, size)
                pos += LOG_OVERHEAD + size
                n += 1
            _count_in(summary, b, n)
            value = codec_for(b).compress(bytes(out), magic=0)
            summary.recompressed += 1
            summary.rebuilt += 1
            yield _emit(summary, wrap_legacy(b.offset + delta, 0, b.codec, value), n)


def _with_offset(batch: Batch, offset: int) -> bytes:
    """An entry's bytes with another offset in its framing (outside every CRC)."""
    raw = bytearray(batch.raw)
    _FRAMING.pack_into(raw, 0, offset, batch.size - LOG_OVERHEAD)
    return bytes(raw)


def _check_offset(offset: int, batch: Batch) -> None:
    if not 0 <= offset <= INT64_MAX:
        raise UnconvertibleError(f"rebased offset {offset} is out of range", position=batch.position)


def first_offset(batches: Iterable[Batch], limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> int | None:
    """The first offset of a partition's data (a legacy wrapper's first inner offset)."""
    for b in batches:
        if b.magic >= 2 or b.codec == CODEC_NONE:
            return b.offset
        return batch_records(b, limit=limit)[0].offset  # a wrapper's offset is its last
    return None


def partition_start(segs: list[Path], limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> int | None:
    """Where a partition starts: its first segment's base offset from the name (no
    decompression needed), else the first offset of its data."""

    first = base_offset_of(segs[0]) if segs else None
    for seg in segs if first is None else ():
        first = first_offset(strict_batches(seg), limit)
        if first is not None:
            break
    return first


@dataclass(frozen=True)
class Rebase:
    """A partition's rebase transform (for ``jobs.run_partition``) and how it carries a damaged
    batch (``--on-damage carry``): only the offset in its framing, outside every CRC, moves."""

    delta: int
    limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES

    def __call__(self, batches: Iterable[Batch], summary: Summary) -> Iterator[bytes]:
        return rebase(batches, self.delta, summary, limit=self.limit)

    def carry(self, batch: Batch) -> bytes:
        if batch.magic >= 2 or batch.codec == CODEC_NONE or batch.offset != 0 and batch.magic == 1:
            new = batch.offset + self.delta
            _check_offset(new, batch)
            return _with_offset(batch, new)
        why = ("its inner offsets are absolute and would be rewritten and recompressed" if batch.magic == 0 else
               "its offset 0 means its last offset is known only from its inner messages")
        raise CorruptBatchError(f"a damaged compressed v{batch.magic} wrapper cannot be carried by rebase: {why} "
                                "(use --on-damage skip)", position=batch.position)


def rebase_maker(base_offset: int, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES):
    """For ``ConvertJob.make_transform``: a partition's rebase transform and the shift of its segment names."""

    def make(segs: list[Path]):
        first = partition_start(segs, limit)
        delta = 0 if first is None else base_offset - first
        return Rebase(delta, limit), delta

    return make
