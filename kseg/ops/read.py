"""Reading records for the Python API: the records ``kseg dump`` shows, as records or as Arrow.

Rules: the batches and records are the dump operation's own (its index seek, its offset and
time filters), so a program reading through the API sees what ``kseg dump --records`` prints.
Damage follows the writers' ``--on-damage`` names (``kseg.log.checks``): ``stop`` raises the
first batch whose CRC fails or whose records do not decode, and what ends a segment early (a
partial or corrupt tail), each a ``KsegError`` with the file and byte position; ``skip``
leaves such batches out and stops quietly at a tail. Arrow batches have the Spark data
source's record schema (``kseg.ops.columns``), built by the same code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Iterable, Iterator

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import CrcMismatchError, InputError, KsegError
from kseg.log.checks import SKIP, STOP, OffsetOrder, offsets_error
from kseg.log.segment import LeftOut, base_offset_of, partition_of, preallocated_zeros
from kseg.log.tails import live_tail
from kseg.log.records import RecordSpans
from kseg.log.span_columns import CONTROL_ROWS, CONTROL_SKIPPED, ColumnBudget, ColumnRun
from kseg.model import Batch, Record
from kseg.ops.columns import _RecordColumns, arrow_schema
from kseg.ops.dump import (
    BadBatchEvent,
    BatchEvent,
    ColumnRunEvent,
    DumpOptions,
    FileStart,
    TailEvent,
    dump_file,
)
from kseg.ops.slices import Slice

ON_DAMAGE = (STOP, SKIP)  # a reader has nothing to carry its bytes into
DEFAULT_BATCH_ROWS = 16384  # rows per Arrow batch (the data source's maxRecordsPerBatch)
BATCH_DATA_BYTES = 32 << 20  # ... or fewer: the Kafka batches' data an Arrow batch holds at most


@dataclass(frozen=True)
class ReadFilter:
    """Which records a read returns: dump's ``--from/--to-offset/-time`` (inclusive), control
    records or not, and what a damaged batch does (``on_damage``)."""

    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    include_control: bool = False
    on_damage: str = STOP
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES

    def __post_init__(self) -> None:
        if self.on_damage not in ON_DAMAGE:
            raise InputError(f"on_damage must be one of {', '.join(ON_DAMAGE)}, not {self.on_damage!r}")

    def dump_options(self, spans: bool = False, runs: ColumnBudget | None = None) -> DumpOptions:
        return DumpOptions(records=True, from_offset=self.from_offset, to_offset=self.to_offset,
                           from_time=self.from_time, to_time=self.to_time,
                           max_decompressed_bytes=self.max_decompressed_bytes,
                           keep_going=self.on_damage == SKIP, record_spans=spans, column_runs=runs)


def _crc_error(ev: BatchEvent) -> CrcMismatchError:
    b = ev.batch
    return CrcMismatchError("crc mismatch", file=str(ev.path), position=b.position,
                            where=f"batch offsets {ev.base_offset}..{ev.last_offset}",
                            found=f"{b.crc:#010x} (stored)")


def segment_batches(path: str | os.PathLike, f: ReadFilter, damaged: list[KsegError] | None = None,
                    newest: bool = False) -> Iterator[tuple[Batch, list[Record]]]:
    """Each batch of one segment file that the filter keeps, with its kept records. Under
    ``on_damage="skip"`` each batch left out (and a tail that ends the segment early) is
    appended to ``damaged`` as the error ``stop`` would have raised. ``newest``: as
    ``segment_parts``'."""
    for batch, records, _ in segment_parts(path, f, damaged, newest=newest):
        yield batch, records  # type: ignore[misc]


def segment_parts(path: str | os.PathLike, f: ReadFilter, damaged: list[KsegError] | None = None,
                  spans: bool = False, runs: ColumnBudget | None = None, left_out: LeftOut | None = None,
                  order: OffsetOrder | None = None, newest: bool = False
                  ) -> Iterator[tuple[Batch | None, list[Record] | None, RecordSpans | ColumnRun | None]]:
    """``segment_batches``, each batch with its records, or with ``spans`` its records as spans
    where the C reader gives them (a batch whose records the filters keep whole, not a control
    batch; the records otherwise). With ``runs`` (the budget the caller keeps up to date), runs
    of v2 batches come as one ``ColumnRun`` each, with no batch: ``(None, None, run)``. Zeros a
    broker preallocated after the last batch end the segment as its end would (told to ``left_out``).
    ``order`` (the partition's offsets so far): a batch whose offsets verify calls wrong is
    damaged too, as the writers' checks say (``kseg.log.checks.OffsetOrder``). ``newest``: the
    file is its partition's newest segment, listed from the partition folder, where a batch
    still being written ends the read as every reading command takes it (``kseg.log.tails``)."""
    file, name_base = str(path), base_offset_of(path)
    if runs is not None:
        runs.controls = CONTROL_ROWS if f.include_control else CONTROL_SKIPPED
        runs.order = None if order is None else (lambda batches, start, stop:
                                                 order.first_wrong(batches, start, stop, name_base, file))
    for ev in dump_file(Path(path), f.dump_options(spans, runs)):
        if isinstance(ev, ColumnRunEvent):
            yield None, None, ev.run
        elif isinstance(ev, BatchEvent):
            found = [] if order is None else order.errors(ev.batch, ev.base_offset, name_base, file)
            if found and ev.crc_valid:
                error = offsets_error(ev.batch, found, file)
                if f.on_damage == STOP:
                    raise error
                if damaged is not None:
                    damaged.append(error)
                continue
            if not ev.crc_valid:
                if f.on_damage == STOP:
                    raise _crc_error(ev)
                if damaged is not None:
                    damaged.append(_crc_error(ev))
                continue
            if ev.batch.is_control and not f.include_control:
                continue
            if ev.spans is not None:
                if ev.spans.count:
                    yield ev.batch, None, ev.spans
            elif ev.records:
                yield ev.batch, ev.records, None
        elif isinstance(ev, TailEvent):
            zeros = preallocated_zeros(path, ev.tail)
            if zeros is not None:
                if left_out is not None:
                    left_out.record(zeros)
                continue
            if newest and live_tail(path, ev.tail, newest) is not None:  # the partition's end, for now
                continue
            error = ev.tail.error.located(file=str(ev.path), position=ev.tail.position)
            if f.on_damage == STOP:
                raise error
            if damaged is not None:
                damaged.append(error)
        elif isinstance(ev, FileStart) and ev.kind not in ("log", "checkpoint"):
            raise InputError(f"not a log segment (a {ev.kind} file)", file=str(ev.path))
        elif isinstance(ev, BadBatchEvent):  # only with on_damage="skip": dump's --keep-going
            if damaged is not None:
                damaged.append(ev.error.located(file=str(ev.path), position=ev.batch.position))


def segment_records(path: str | os.PathLike, f: ReadFilter, newest: bool = False) -> Iterator[Record]:
    for _, records in segment_batches(path, f, newest=newest):
        yield from records


def source_of(path: str | os.PathLike) -> Slice:
    """A whole segment file with its topic and partition (from its folder's name, as the data
    source names them)."""
    p = Path(path)
    parsed = partition_of(p.parent)
    topic, partition = parsed if parsed else (None, None)
    return Slice(str(p), topic, partition)


def pyarrow() -> Any:
    """pyarrow, or an ImportError that says how to get it (it is optional)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise ImportError("kseg's Arrow and pandas output needs pyarrow: pip install pyarrow "
                          "(or kseg[spark])") from None
    return pa


def record_schema(columns: list[str] | None = None) -> Any:
    """The Arrow schema of the record rows (the Spark data source's), or some of its columns."""
    pyarrow()
    return arrow_schema("records", columns)


def arrow_batches(paths: Iterable[str | os.PathLike], f: ReadFilter, columns: list[str] | None = None,
                  batch_rows: int = DEFAULT_BATCH_ROWS, damaged: list[KsegError] | None = None,
                  left_out: LeftOut | None = None, check_offsets: bool = False,
                  newest: Collection[str | os.PathLike] = ()) -> Iterator[Any]:
    """The records of segment files, in order, as Arrow RecordBatches of at most about
    ``batch_rows`` rows (or ``BATCH_DATA_BYTES`` of record data) each: memory stays bounded by
    one of them and one Kafka batch. ``damaged`` as ``segment_batches``', ``left_out`` as
    ``segment_parts``'; ``check_offsets``: the files are one partition's segments in order, whose
    offsets are checked across them (``segment_parts``' ``order``); ``newest``: those of the files
    that are their partition's newest segment, listed from its folder."""
    live = {str(p) for p in newest}
    order = OffsetOrder() if check_offsets else None
    cols = _RecordColumns(record_schema(columns))
    budget = ColumnBudget(batch_rows, BATCH_DATA_BYTES, limit=f.max_decompressed_bytes)  # what the next run may add
    for path in paths:
        source = source_of(path)
        for batch, records, spans in segment_parts(path, f, damaged, spans=True, runs=budget,
                                                         left_out=left_out, order=order,
                                                         newest=str(path) in live):
            if isinstance(spans, ColumnRun):
                cols.add_run(source, spans)
            elif spans is not None:
                cols.add_spans(source, batch, spans)  # type: ignore[arg-type]
            else:
                cols.add(source, batch, records)  # type: ignore[arg-type]
            if cols.n >= batch_rows or cols.bytes >= BATCH_DATA_BYTES:
                yield cols.flush()
            budget.rows, budget.bytes = batch_rows - cols.n, BATCH_DATA_BYTES - cols.bytes
    if cols.n:
        yield cols.flush()
