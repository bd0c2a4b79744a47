"""The ``dump`` operation: what is in a file, as a stream of plain events.

It returns data, never text: one renderer per output format (``kseg.render``)
turns the events into lines on a stream it is given.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.decoders import FAMILY, HIDDEN_BYTES, decode_record, family_for, hide_secrets
from kseg.decoders.identities import redact_ids
from kseg.errors import KsegError
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.lazy import load
from kseg.log.decode import KafkaLegacyLine, Tail
from kseg.log.listing import INDEX_SUFFIX, TIME_INDEX_SUFFIX, read_kind, replica_note
from kseg.log.records import (HeaderRun, PlainRun, RecordSpans, batch_records, batch_spans, kafka_legacy_lines,
                               kafka_reads_records, plain_run, v2_header_run,
                               v2_record_run)
from kseg.log.segment import Segment, base_offset_of, companion_path, tiered_segment_id
from kseg.log.checks import offsets_error
from kseg.log.span_columns import ColumnBudget, ColumnRun, OffsetDamage, runs_and_batches
from kseg.model import Batch, Record
from kseg.ops.companion_events import CompanionEvent
from kseg.ops.redact import Redactor

# Loaded on use: a companion file's reading, and the index lookups of a filtered read (a dump
# of .log files without --from-offset/--from-time loads neither, nor the companion readers).
DUMP_COMPANION = "kseg.ops.companion_dump:dump_companion"
OFFSET_INDEX_LOOKUP = "kseg.companions.read:offset_index_lookup"
TIME_INDEX_LOOKUP = "kseg.companions.read:time_index_lookup"


@dataclass(frozen=True)
class DumpOptions:
    records: bool = False
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    max_bytes: int | None = None
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    keep_going: bool = False
    strict_names: bool = False  # kafka-dump-log.sh ignores files with unknown suffixes
    decode: str | None = None  # offsets|transactions|metadata|auto: decode internal-topic records
    # A compressed legacy wrapper's first offset and count need its inner messages; kafka-dump-log.sh's
    # batch lines do without them, so --format kafka leaves batch-level wrappers compressed.
    wrapper_counts: bool = True
    # The consumer writes records from spans over the data (``BatchEvent.spans``), without a
    # Record object each; it gets them for unfiltered, undecoded data batches where the C reader runs.
    record_spans: bool = False
    # The consumer takes runs of uncompressed v0/v1 messages as one PlainRunEvent each (its writers
    # take them at once); given where the C reader runs, and no time filter or --decode needs them
    # one by one (an offset range keeps a slice of a run).
    plain_runs: bool = False
    # The consumer takes runs of v2 batches as one HeaderRunEvent each, with no filter or --redact:
    # their lines alone without --records (kseg.log.records.v2_header_run), with their records' spans
    # with --records where it takes spans too (v2_record_run) and nothing is decoded.
    header_runs: bool = False
    # The consumer takes runs of v2 batches (built-in codecs) as Arrow column buffers, one
    # ColumnRunEvent each (kseg.log.span_columns.v2_column_run), within the budget it sets; given
    # where the C reader runs, with records, no time filter and nothing decoded or redacted.
    column_runs: ColumnBudget | None = None
    # --redact: the records of ordinary topics shown with their fields redacted (kseg.ops.redact);
    # an undecodable batch shown by its header alone. Internal topics are decoded, not redacted.
    redactor: Redactor | None = None
    # Decoded secrets (kseg.decoders.secrets) shown as they are; else hidden, with the raw value
    # of a record that held one. --format kafka shows them, as kafka-dump-log.sh does.
    show_secrets: bool = False
    # --format kafka: a batch whose records fail is shown as kafka-dump-log.sh shows it before its
    # exception (its batch line, the records read before the bad one), then the error stops the dump
    # (BatchEvent.stops).
    kafka_stops: bool = False
    # kseg-dump-log: read on where kafka-dump-log.sh reads on (Segment.kafka_reads_on: an entry of a
    # magic above 2, or a v2 size below the header's, as a v2 batch; a v1 size below its header's).
    as_the_tool: bool = False


@dataclass(frozen=True)
class FileStart:
    path: Path
    kind: str
    base_offset: int | None


@dataclass(frozen=True)
class LogSlice:
    """A large log dumped in slices (``kseg.ops.dump_split``, ``-j``): this one's bytes
    [start, end) of it (end None: to the end of the file), the ``part``-th of ``parts``."""

    start: int
    end: int | None
    part: int
    parts: int


@dataclass(frozen=True)
class SliceStart:
    """Where a later slice of a log begins, instead of its FileStart: the file's header is the
    first slice's, and what a renderer carries from batch to batch (Kafka's offset-gap check)
    is joined at merge."""

    path: Path


@dataclass(frozen=True)
class ReadOn:
    """A slice met damage or a batch running past its end and read on to the end of the file,
    as a whole read does from there: merge leaves out the file's later slices."""

    path: Path


@dataclass(frozen=True)
class BatchEvent:
    """A batch, with the facts that need its records (legacy wrappers) and, if asked, the records.

    ``decoded`` (with ``DumpOptions.decode``, for files of an internal topic): one entry per
    record, a ``kseg.decoders.DecodedRecord`` or None where the family describes nothing
    (a transaction marker in ``__consumer_offsets``)."""

    path: Path
    batch: Batch
    base_offset: int
    last_offset: int
    count: int
    crc_valid: bool  # computed once here: the renderers and the exit code both need it
    records: list[Record] | None = None
    decoded: list | None = None
    spans: RecordSpans | None = None  # instead of records, with DumpOptions.record_spans
    stops: KsegError | None = None  # DumpOptions.kafka_stops: the error shown after the batch's lines
    # DumpOptions.as_the_tool: the record lines of a legacy message kseg refuses, as Kafka reads it
    kafka_lines: tuple[KafkaLegacyLine, ...] | None = None


@dataclass(frozen=True)
class PlainRunEvent:
    """Uncompressed v0/v1 messages in a row, each a batch of one record (``DumpOptions.plain_runs``):
    what a BatchEvent per message would say, for writers that take them at once. ``records``:
    whether their record lines are wanted; the CRC failures are in ``run.bad_crcs``."""

    path: Path
    run: PlainRun
    records: bool


@dataclass(frozen=True)
class HeaderRunEvent:
    """v2 batches in a row (``DumpOptions.header_runs``): what a BatchEvent per batch would say, for
    writers that take them at once; their records as spans over one buffer in ``run.spans`` when
    the dump shows them (None: their lines alone). The CRC failures are in ``run.bad`` (by index
    in ``batches``, with the CRC computed)."""

    path: Path
    batches: list[Batch]
    run: HeaderRun


@dataclass(frozen=True)
class ColumnRunEvent:
    """v2 batches in a row as columns (``DumpOptions.column_runs``): what their
    BatchEvents' records would be, every batch whole, CRC valid and decoded (the batches the
    offset range leaves out, and with ``controls`` skipped the control batches, passed over)."""

    path: Path
    run: ColumnRun


@dataclass(frozen=True)
class BadBatchEvent:
    """A batch that frames and CRC-checks as it may, but whose contents do not decode."""

    path: Path
    batch: Batch
    error: KsegError


@dataclass(frozen=True)
class TailEvent:
    path: Path
    tail: Tail
    reported: bool  # False when --max-bytes cut the read (kafka-dump-log.sh stays quiet then)
    head: bytes = b""  # its first bytes (Segment.tail_head)


@dataclass(frozen=True)
class SkippedEvent:
    path: Path
    reason: str


@dataclass(frozen=True)
class NoteEvent:
    """Something to tell beside the dump, not in it: the segment was renamed by retention,
    grew (a live broker) or changed while it was read (``Segment.notes``)."""

    path: Path
    text: str


Event = (FileStart | SliceStart | ReadOn | BatchEvent | PlainRunEvent | HeaderRunEvent | ColumnRunEvent | BadBatchEvent
         | TailEvent | CompanionEvent | SkippedEvent | NoteEvent)


def dump_paths(paths: list[Path], options: DumpOptions) -> Iterator[Event]:
    for path in paths:
        yield from dump_file(path, options)


def dump_file(path: Path, options: DumpOptions, piece: LogSlice | None = None) -> Iterator[Event]:
    """A file's events; ``piece``: of that slice of a log only (``sliceable`` options)."""
    if piece is not None and piece.part > 0:
        yield SliceStart(path)
        yield from _dump_log(path, options, None, piece)
        return
    kind = read_kind(path, strict=options.strict_names)
    # A tiered snapshot is named by its segment's start offset, not by the offset it was taken at.
    named = None if kind == "snapshot" and tiered_segment_id(path) else base_offset_of(path)
    yield FileStart(path, kind, named)
    note = replica_note(path.parent) if kind == "log" and named is not None else None
    if note:  # a segment of a replica the broker renamed (being deleted, moved in, stray)
        yield NoteEvent(path, note)
    if kind in ("log", "checkpoint"):
        yield from _dump_log(path, options, family_for(path, options.decode), piece)
    elif kind == "unknown":
        yield SkippedEvent(path, "unknown file type")
    else:
        yield load(DUMP_COMPANION)(path, kind, options.as_the_tool)


def sliceable(o: DumpOptions) -> bool:
    """Whether a log read in slices gives these options' events: no offset or time range (a
    seek by the indexes), no --max-bytes, nothing decoded or redacted."""
    return not _filters_records(o) and o.max_bytes is None and o.decode is None and o.redactor is None


def _wanted(batch: Batch, first: int, last: int, o: DumpOptions) -> bool:
    if o.from_offset is not None and last < o.from_offset:
        return False
    if o.to_offset is not None and first > o.to_offset:
        return False
    if o.from_time is not None and batch.timestamp < o.from_time:
        return False
    if o.to_time is not None and batch.magic >= 2 and not batch.has_delete_horizon:
        if batch.record_count and batch.base_timestamp is not None and batch.base_timestamp > o.to_time:
            return batch.timestamp <= o.to_time  # base is the first record, not the minimum
    return True


def _record_wanted(r: Record, o: DumpOptions) -> bool:
    if o.from_offset is not None and r.offset < o.from_offset:
        return False
    if o.to_offset is not None and r.offset > o.to_offset:
        return False
    if o.from_time is not None and r.timestamp < o.from_time:
        return False
    if o.to_time is not None and r.timestamp > o.to_time:
        return False
    return True


def _wholly_wanted(batch: Batch, o: DumpOptions) -> bool:
    """Whether an offset filter keeps every record of a v2 batch (its header says so)."""
    return (batch.magic >= 2 and o.from_time is None and o.to_time is None
            and (o.from_offset is None or batch.offset >= o.from_offset)
            and (o.to_offset is None or batch.last_offset <= o.to_offset))


def _filters_records(o: DumpOptions) -> bool:
    return any(v is not None for v in (o.from_offset, o.to_offset, o.from_time, o.to_time))


NO_OFFSET = -(1 << 63)  # a compressed legacy wrapper's first offset, before its records are read


def seek_start(path: Path, o: DumpOptions) -> tuple[int, int] | None:
    """Where a filtered read may start: (byte position, the indexed offset there), from the
    ``.timeindex`` (every record up to an entry's offset is older than it says) and the
    ``.index``; None to read from the start (no filter, no index, nothing to skip)."""
    base = base_offset_of(path)
    if base is None or (o.from_offset is None and o.from_time is None):
        return None
    target = o.from_offset
    if o.from_time is not None:
        older = load(TIME_INDEX_LOOKUP)(companion_path(path, TIME_INDEX_SUFFIX), base, o.from_time)
        if older is not None:
            target = older.offset + 1 if target is None else max(target, older.offset + 1)
    if target is None:
        return None
    entry = load(OFFSET_INDEX_LOOKUP)(companion_path(path, INDEX_SUFFIX), base, target)
    if entry is None or entry.position <= 0:
        return None
    return entry.position, entry.offset


def _batch_lists(seg: Segment, o: DumpOptions) -> Iterator[list[Batch]]:
    """The batches a dump reads, in the scanner's lists: from the index's seek point when a filter
    allows one and the batch found there is whole and plausible (CRC valid, offset not past the
    entry), else all."""
    start = seek_start(seg.path, o)
    if start is not None and (o.max_bytes is None or start[0] < o.max_bytes):
        it = seg.batch_lists(start=start[0], end=o.max_bytes)
        first = next(it, None)
        if first is not None and first[0].offset <= start[1] and first[0].crc_valid:
            yield first
            yield from it
            return
        it.close()
    yield from seg.batch_lists(end=o.max_bytes)


def _dump_log(path: Path, o: DumpOptions, family: str | None = None, piece: LogSlice | None = None) -> Iterator[Event]:
    seg = Segment(path)
    if piece is None:
        end = o.max_bytes
        yield from _events_of(path, _batch_lists(seg, o), o, family)
        while o.as_the_tool and (batch := seg.kafka_reads_on(end)) is not None:
            ev = _batch_event(path, batch, o, family)
            if isinstance(ev, BatchEvent) and batch.magic >= 2 and batch.size < RECORD_BATCH_OVERHEAD:
                ev = replace(ev, crc_valid=False)  # Kafka: a v2 batch's isValid needs a whole header
            if ev is not None:
                yield ev
            seg = Segment(path)
            yield from _events_of(path, seg.batch_lists(start=batch.position + batch.size, end=end), o, family)
    else:
        end = piece.end
        yield from _events_of(path, seg.batch_lists(start=piece.start, end=end), o, family)
        if end is not None and seg.tail is not None:
            # Not a batch before the slice's end (damage, or one running past it): a whole read
            # goes on from there to the end of the file; so does this slice.
            yield ReadOn(path)
            end = None
            yield from _events_of(path, seg.batch_lists(start=seg.tail.position), o, family)
    if seg.tail is not None:
        cut_by_max_bytes = end is not None and end < seg.size
        yield TailEvent(path, seg.tail, reported=not cut_by_max_bytes, head=seg.tail_head)
    if piece is None or end is None:  # (a slice before the last: the last one tells)
        for text in seg.notes():
            yield NoteEvent(path, text)


def _events_of(path: Path, lists: Iterator[list[Batch]], o: DumpOptions, family: str | None) -> Iterator[Event]:
    """The events of the batches ``lists`` holds: runs where the consumer takes them, else a
    batch at a time."""
    runs = o.plain_runs and family is None and o.from_time is None and o.to_time is None and not o.redactor
    headers = o.header_runs and family is None and not o.redactor and not _filters_records(o)
    with_records = o.records and o.record_spans
    budget = o.column_runs if (o.records and family is None and o.from_time is None and o.to_time is None
                               and not o.redactor) else None
    if budget is not None:
        yield from _column_events(path, lists, o, budget)
        return
    for entries in lists:
        i, n = 0, len(entries)
        while i < n:
            if runs:
                run = plain_run(entries, i)
                if run is not None:
                    i += len(run.batches)
                    yield from _run_events(path, run, o, family)
                    continue
            if headers and (with_records or not o.records):
                lines = (v2_record_run(entries, i, limit=o.max_decompressed_bytes) if o.records
                         else v2_header_run(entries, i))
                if lines.stop > i:
                    yield HeaderRunEvent(path, entries[i:lines.stop], lines.rebased(i))
                    i = lines.stop
                    continue
            ev = _batch_event(path, entries[i], o, family)
            i += 1
            if ev is not None:
                yield ev


def _column_events(path: Path, lists: Iterator[list[Batch]], o: DumpOptions, budget: ColumnBudget) -> Iterator[Event]:
    """The events of a dump that takes column runs (``DumpOptions.column_runs``): as many runs
    as ``runs_and_batches`` gives, each other batch as ``_batch_event`` says."""
    for item in runs_and_batches(lists, o.from_offset, o.to_offset, budget):
        if isinstance(item, ColumnRun):
            yield ColumnRunEvent(path, item)
        elif isinstance(item, OffsetDamage):
            error = offsets_error(item.batch, item.findings, str(path))
            if not o.keep_going:
                raise error
            yield BadBatchEvent(path, item.batch, error)
        else:
            ev = _batch_event(path, item, o, None)
            if ev is not None:
                yield ev


def _run_events(path: Path, run: PlainRun, o: DumpOptions, family: str | None) -> Iterator[Event]:
    """A run of plain messages as one event, cut to --from/--to-offset: the messages of a run are
    single records, so the offset range keeps a slice of it (or, where offsets are out of order,
    some of them, which then go one by one)."""
    if o.from_offset is None and o.to_offset is None:
        yield PlainRunEvent(path, run, o.records)
        return
    lo = NO_OFFSET if o.from_offset is None else o.from_offset
    hi = -NO_OFFSET if o.to_offset is None else o.to_offset
    kept = [k for k, b in enumerate(run.batches) if lo <= b.base_offset <= hi]
    if not kept:
        return
    if kept[-1] - kept[0] + 1 == len(kept):
        yield PlainRunEvent(path, run.part(kept[0], kept[-1] + 1), o.records)
        return
    for k in kept:
        ev = _batch_event(path, run.batches[k], o, family)
        if ev is not None:
            yield ev


def _batch_event(path: Path, batch: Batch, o: DumpOptions, family: str | None) -> Event | None:
    """What a dump says of one batch, or None when the filters leave nothing of it."""
    limit = o.max_decompressed_bytes
    record_filter = _filters_records(o)
    legacy_wrapper = batch.magic < 2 and batch.codec != 0
    if record_filter:
        # Skip on the header, before decompressing: a wrapper's first offset is not known yet.
        if batch.magic >= 2:
            first, last = batch.offset, batch.last_offset
        else:
            first, last = (NO_OFFSET if legacy_wrapper else batch.offset), batch.offset
        if not _wanted(batch, first, last, o):
            return None
    needs_records = o.records or (legacy_wrapper and (o.wrapper_counts or record_filter))
    records = spans = None
    if needs_records:
        try:
            if (o.record_spans and o.records and family is None and not batch.is_control and not o.redactor
                    and (not record_filter or _wholly_wanted(batch, o))):
                spans = batch_spans(batch, limit=limit)
            if spans is None:
                records = batch_records(batch, limit=limit)
        except KsegError as e:
            e.located(file=str(path))
            if o.as_the_tool and o.records and family is None and not o.redactor and batch.magic < 2 \
                    and not record_filter:
                # Kafka's lines come from what its reader takes: the dump stops or goes on where the tool does
                lines, stop = kafka_legacy_lines(batch, limit=limit)
                return BatchEvent(path, batch, lines[0].offset if lines else batch.offset, batch.offset,
                                  len(lines) or 1, batch.crc_valid, [], kafka_lines=tuple(lines),
                                  stops=None if stop is None else stop.located(file=str(path)))
            if o.kafka_stops and not o.keep_going and not record_filter:
                # the records kafka-dump-log.sh prints, and whether it throws after them
                read, throws = kafka_reads_records(batch, limit=limit) if batch.magic >= 2 else ([], True)
                if throws or not o.as_the_tool:
                    # (an internal topic's records are shown decoded: none of them, only the batch line)
                    before = read if o.records and family is None else []
                    if o.redactor and not (batch.magic >= 2 and batch.is_control):
                        before = [o.redactor.record(r) for r in before]
                    return BatchEvent(path, batch, batch.offset, batch.last_offset, batch.record_count or 1,
                                      batch.crc_valid, before if o.records else None, stops=e)
                records = read  # kseg-dump-log: Kafka reads what kseg refuses; the tool prints it and goes on
            elif not o.keep_going:
                raise
            else:
                hides = o.redactor is not None and (bool(o.redactor) or o.redactor.ids)
                return BadBatchEvent(path, o.redactor.header_only(batch) if hides else batch, e)
    if batch.magic >= 2:
        first, last, count = batch.offset, batch.last_offset, batch.record_count or 0
    elif records is not None and batch.codec != 0:
        first, last, count = records[0].offset, batch.offset, len(records)
    elif spans is not None:
        first, last, count = spans.first_offset, batch.offset, spans.count
    else:
        first, last, count = batch.offset, batch.offset, 1
    if record_filter and not _wanted(batch, first, last, o):
        return None
    if records is not None and record_filter:
        records = [r for r in records if _record_wanted(r, o)]
        if not records and batch.magic < 2:
            return None
    if o.redactor and records is not None and family is None and not (batch.magic >= 2 and batch.is_control):
        records = [o.redactor.record(r) for r in records]
    decoded = None
    if family is not None and records is not None and o.records:

        decoded = [decode_record(family, r, batch.is_control) for r in records]
        if not o.show_secrets and FAMILY[family].secrets:
            records, decoded = _hidden(records, decoded)
        if o.redactor is not None and o.redactor.ids and not batch.is_control:
            records, decoded = _ids_redacted(records, decoded, o.redactor)
    return BatchEvent(path, batch, first, last, count, batch.crc_valid, records if o.records else None, decoded,
                      spans)


def _ids_redacted(records: list[Record], decoded: list, r: Redactor) -> tuple[list[Record], list]:
    """Records of an internal topic with their identities redacted (kseg.decoders.identities):
    the decoded forms field by field, the raw key and value (which hold them in binary) as tokens."""
    return ([x._replace(key=r.token(x.key), value=r.token(x.value)) for x in records],
            [redact_ids(d, r.text) for d in decoded])


def _hidden(records: list[Record], decoded: list) -> tuple[list[Record], list]:
    """Records and their decoded forms with secrets hidden: a record that held one shows
    ``[hidden]`` as its raw value too."""
    shown = [hide_secrets(d) for d in decoded]
    if all(a is b for a, b in zip(shown, decoded)):
        return records, decoded
    return [r if a is b else r._replace(value=HIDDEN_BYTES) for r, a, b in zip(records, shown, decoded)], shown
