"""The ``export`` operation: the records of a segment file, a partition folder or a log
directory into Parquet or Arrow IPC (Feather v2) files, one file per partition.

Rules: the rows are the Python API's (``kseg.ops.read.arrow_batches``: the records ``kseg dump``
shows, with its filters, in the Spark data source's record schema), streamed into the file one
Arrow RecordBatch at a time, so memory stays bounded by one of them and one Kafka batch, and
by the footer of a Parquet file, which its writer keeps until the file closes (about a byte a
record): ``max_file_rows`` rolls a partition into files of at most that many records. Each
file is written under a temporary name and published when complete (``kseg.log.atomic``); a
folder of files is built whole under a temporary name and published at the end, so damage that
stops the run (``on_damage="stop"``) or an input that changes under it publishes nothing. An
existing output is replaced only with ``force``, and only when it is kseg's own export: a file
whose schema carries ``EXPORT_KEY``, or a folder that holds such files and nothing else.
Under ``on_damage="skip"`` every batch left out is listed in the report. Nothing here prints.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kseg.errors import InputError, KsegError, OutputError
from kseg.log import identity
from kseg.log.atomic import AtomicDir, AtomicFile, check_output, write_failed
from kseg.log.segment import LeftOut, log_dir_partitions, partition_of, partition_segments
from kseg.ops.ahead import ahead
from kseg.ops.columns import check_columns
from kseg.ops.executors import Operation, execute, here_only, weight_of
from kseg.ops.read import DEFAULT_BATCH_ROWS, ReadFilter, arrow_batches, record_schema
from kseg.storage import as_path

PARQUET, ARROW = "parquet", "arrow"
FORMATS = (PARQUET, ARROW)
# The name an output file gets in a folder, and the names -o may give a single file.
SUFFIX = {PARQUET: ".parquet", ARROW: ".arrow"}
FILE_SUFFIXES = {PARQUET: (".parquet", ".pq"), ARROW: (".arrow", ".feather", ".ipc")}
# Codecs each format's writer takes (pyarrow's names); the first is the default.
COMPRESSIONS = {PARQUET: ("zstd", "snappy", "gzip", "brotli", "lz4", "none"), ARROW: ("none", "lz4", "zstd")}
# Parquet: dictionary pages only for the columns that repeat (the same for a whole Kafka batch or
# file), and no min/max statistics for the payloads (nothing prunes on them): together they halve
# the writer's time on 100-byte values (benchmarks/bench_export.py).
DICTIONARY_COLUMNS = frozenset({"topic", "partition", "segment", "timestamp_type", "magic", "codec",
                                "partition_leader_epoch", "producer_id", "producer_epoch", "is_transactional",
                                "is_control"})
NO_STATISTICS = frozenset({"key", "value", "headers"})
# Columns that grow by small steps: delta-encoded (a tenth smaller files, no slower to write).
DELTA_COLUMNS = frozenset({"offset", "timestamp"})
READ_AHEAD_BATCHES = 1  # Arrow batches read ahead of the writer (a second held 3-6 MB more and was no faster)
EXPORT_KEY = b"kseg.export"  # schema metadata: where the rows came from (what marks a file as kseg's)
EXTRA_HINT = "pip install 'kseg[arrow]'"


@dataclass(frozen=True)
class ExportOptions:
    fmt: str = PARQUET
    columns: tuple[str, ...] | None = None  # a subset of the record schema (kept in its order)
    read: ReadFilter = ReadFilter()
    compression: str | None = None  # None: the format's default (COMPRESSIONS)
    force: bool = False
    batch_rows: int = DEFAULT_BATCH_ROWS
    jobs: int = 1  # partitions written at once (worker processes); a lone partition reads ahead of its writer
    read_ahead: bool = False  # set by ``export``: read on a thread of its own while the writer encodes
    max_file_rows: int | None = None  # a partition in files of at most this many records (``part_path``)

    @property
    def codec(self) -> str:
        return self.compression or COMPRESSIONS[self.fmt][0]


@dataclass(frozen=True)
class ExportUnit:
    """One output file's worth of input: a partition's segments (or one segment file)."""

    name: str  # the output file's stem: <topic>-<partition>, else the folder's or file's own name
    source: Path
    topic: str | None
    partition: int | None
    segments: list[Path]


@dataclass
class PartitionExport:
    source: str
    topic: str | None
    partition: int | None
    segments: int
    records: int = 0
    files: list[str] = field(default_factory=list)  # every file written, in offset order
    damaged: list[str] = field(default_factory=list)  # each batch left out (skip), as stop would have said it
    left_out: LeftOut = field(default_factory=LeftOut)  # zeros preallocated after the segments' last batches

    @property
    def output(self) -> str:
        """Its (first) file."""
        return self.files[0]


@dataclass
class ExportReport:
    input: str
    output: str
    format: str
    compression: str
    partitions: list[PartitionExport] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def ok(self) -> bool:
        """Nothing was left out for damage."""
        return not any(p.damaged for p in self.partitions)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "records": self.records, "ok": self.ok}


def pyarrow_modules() -> tuple[Any, Any]:
    """pyarrow and pyarrow.parquet, or an InputError naming the extra that brings them."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"kseg export needs pyarrow: {EXTRA_HINT}") from None
    return pa, pq


# --------------------------------------------------------------------------- planning


def _unit(folder: Path, segments: list[Path], fallback: str) -> ExportUnit:
    parsed = partition_of(folder)
    topic, partition = parsed if parsed else (None, None)
    name = f"{topic}-{partition}" if parsed else fallback
    return ExportUnit(name, folder, topic, partition, segments)


def plan_export(src: Any) -> tuple[list[ExportUnit], bool]:
    """The files to write for an input, and whether the input is one partition (a segment file
    or a partition folder: ``-o`` may name the file) rather than a log directory."""
    if src.is_file():
        return [_unit(src.parent, [src], src.name.split(".")[0])], True
    if not src.is_dir():
        raise InputError("no such file or directory", file=str(src))
    segs = partition_segments(src)
    if segs:
        return [_unit(src, segs, src.name)], True
    units: list[ExportUnit] = []
    taken: set[str] = set()
    for p in log_dir_partitions(src):
        u = _unit(p.path, p.segment_paths, p.path.name)
        if u.name in taken:  # a second replica of the same partition (future, stray): its folder's name
            u = ExportUnit(p.path.name, u.source, u.topic, u.partition, u.segments)
        taken.add(u.name)
        units.append(u)
    return units, False


def _kseg_file(path: Path, pa: Any, pq: Any) -> bool:
    """Whether ``path`` is a Parquet or Arrow file kseg exported (its schema says so)."""
    try:
        if path.suffix in FILE_SUFFIXES[PARQUET]:
            schema = pq.read_schema(path)
        else:
            with pa.memory_map(str(path)) as f:
                schema = pa.ipc.open_file(f).schema
    except (OSError, pa.ArrowException, ValueError):
        return False
    return EXPORT_KEY in (schema.metadata or {})


def _check_replaceable(output: Path, pa: Any, pq: Any) -> None:
    """With --force: what is at the output is replaced only if kseg made it."""
    if not os.path.lexists(output):
        return
    if output.is_symlink():
        ok = False
    elif output.is_dir():
        entries = list(output.iterdir())
        ok = bool(entries) and all(e.is_file() and not e.is_symlink() and _kseg_file(e, pa, pq) for e in entries)
    else:
        ok = output.is_file() and _kseg_file(output, pa, pq)
    if not ok:
        raise OutputError("the output exists and is not a kseg export: --force replaces only kseg's own exports; "
                          "nothing was replaced", file=str(output))


# --------------------------------------------------------------------------- running


def _write_failed(e: OSError, dst: Path) -> OutputError:
    """pyarrow's write error as kseg's one line (its text repeats the errno's)."""
    return write_failed(OSError(e.errno, os.strerror(e.errno)) if e.errno else e, dst)


def _metadata(unit: ExportUnit, o: ExportOptions) -> dict[bytes, bytes]:
    f = o.read
    doc = {"source": str(unit.source), "topic": unit.topic, "partition": unit.partition,
           "segments": [p.name for p in unit.segments], "filters": {
               "from_offset": f.from_offset, "to_offset": f.to_offset, "from_time": f.from_time,
               "to_time": f.to_time, "include_control": f.include_control, "on_damage": f.on_damage}}
    return {EXPORT_KEY: json.dumps(doc, ensure_ascii=False).encode()}


class _FileWriter:
    """pyarrow's writer for one output file, on a temporary published by ``close`` (``AtomicFile``)."""

    def __init__(self, dst: Path, schema: Any, o: ExportOptions, pa: Any, pq: Any):
        self.dst = dst
        self.out = AtomicFile(dst)
        self.sink = self.writer = None
        try:
            # pyarrow writes the temporary itself: a Python file object would take the GIL for every
            # page, and the reading (read ahead on another thread) could not run meanwhile.
            self.sink = pa.OSFile(str(self.out.tmp), "wb")
            codec = None if o.codec == "none" else o.codec
            if o.fmt == PARQUET:
                names = schema.names
                self.writer = pq.ParquetWriter(
                    self.sink, schema, compression=codec or "none",
                    use_dictionary=[c for c in names if c in DICTIONARY_COLUMNS],
                    write_statistics=[c for c in names if c not in NO_STATISTICS],
                    column_encoding={c: "DELTA_BINARY_PACKED" for c in names if c in DELTA_COLUMNS})
            else:
                self.writer = pa.ipc.new_file(self.sink, schema, options=pa.ipc.IpcWriteOptions(compression=codec))
        except BaseException:
            self.abort()
            raise

    def write(self, rb: Any) -> None:
        try:
            self.writer.write_batch(rb)
        except OSError as e:
            raise _write_failed(e, self.dst) from None

    def close(self, inputs: list[Path]) -> None:
        """Finish the file and publish it, if ``inputs`` are still what was read."""
        w, self.writer = self.writer, None
        try:
            w.close()
            self.sink.close()
        except OSError as e:
            raise _write_failed(e, self.dst) from None
        identity.require_unchanged(inputs)  # what was written is the input as it still is
        self.out.commit()

    def abort(self) -> None:
        for done in (self.writer, self.sink):
            if done is not None:
                try:
                    done.close()  # into the temporary, about to go: only so pyarrow lets go of it
                except Exception:  # noqa: BLE001 - the first error is the one to report
                    pass
        self.out.abort()


def part_path(dst: Path, index: int) -> Path:
    """The ``index``-th file of a partition written in parts: ``<stem>.00000.parquet`` and on
    (names that sort in offset order)."""
    return dst.with_name(f"{dst.stem}.{index:05d}{dst.suffix}")


def export_unit(unit: ExportUnit, dst: Path, o: ExportOptions) -> PartitionExport:
    """Write one unit's records into ``dst`` (published when complete; nothing on an error), or
    with ``max_file_rows`` into files of at most that many records beside it (``part_path``)."""
    pa, pq = pyarrow_modules()
    columns = list(o.columns) if o.columns is not None else None
    schema = record_schema(columns).with_metadata(_metadata(unit, o))
    result = PartitionExport(str(unit.source), unit.topic, unit.partition, len(unit.segments))
    damaged: list[KsegError] = []
    limit = o.max_file_rows
    files: list[str] = []
    current: _FileWriter | None = None
    in_file = 0

    def start() -> _FileWriter:
        nonlocal in_file
        in_file = 0
        return _FileWriter(part_path(dst, len(files)) if limit else dst, schema, o, pa, pq)

    try:
        batches = arrow_batches(unit.segments, o.read, columns, o.batch_rows, damaged, result.left_out,
                                check_offsets=True)
        for rb in ahead(batches, READ_AHEAD_BATCHES) if o.read_ahead else batches:
            at = 0
            while at < rb.num_rows:  # the batch cut where a file reaches its limit
                current = current or start()
                take = min(limit - in_file, rb.num_rows - at) if limit else rb.num_rows
                current.write(rb if take == rb.num_rows else rb.slice(at, take))
                at += take
                in_file += take
                result.records += take
                if in_file == limit:
                    current.close(unit.segments)  # aborted below if that fails
                    files.append(str(current.dst))
                    current = None
        if current is None and not (limit and files):  # no records: one file of none
            current = start()
        if current is not None:
            current.close(unit.segments)
            files.append(str(current.dst))
            current = None
    except BaseException:
        if current is not None:
            current.abort()
        raise
    result.files = files
    result.damaged = [str(e) for e in damaged]
    return result


def export(input_path: Any, output: Path, o: ExportOptions) -> ExportReport:
    """Export a segment file, a partition folder or a log directory into ``output``: a file when
    the input is one partition and ``output`` ends in the format's suffix, else a folder with
    one ``<topic>-<partition>`` file per partition (or, with ``max_file_rows``, its parts
    ``<topic>-<partition>.00000`` and on). An input that changes during the run
    publishes nothing (``kseg.log.identity``)."""
    if o.fmt not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, not {o.fmt!r}")
    if o.codec not in COMPRESSIONS[o.fmt]:
        raise InputError(f"--compression {o.codec}: {o.fmt} files take {', '.join(COMPRESSIONS[o.fmt])}")
    check_columns("records", list(o.columns) if o.columns is not None else None)
    pa, pq = pyarrow_modules()
    src = as_path(input_path)
    with identity.watching():
        units, single = plan_export(src)
        as_file = output.suffix.lower() in FILE_SUFFIXES[o.fmt]
        if as_file and not single:
            raise InputError(f"-o {output.name} names one file, but the input is a log directory of "
                             f"{len(units)} partitions: give a folder (one file per partition)")
        if as_file and o.max_file_rows:
            raise InputError(f"-o {output.name} names one file, but --max-file-rows writes a partition into "
                             f"several: give a folder")
        check_output([src], output, force=o.force)
        if o.force:
            _check_replaceable(output, pa, pq)
        report = ExportReport(str(src), str(output), o.fmt, o.codec)
        if len(units) == 1 and o.jobs > 1:
            o = replace(o, read_ahead=True)
        if as_file:
            report.partitions.append(export_unit(units[0], output, o))
            return report
        with AtomicDir(output) as root:
            for r in execute(OPERATION, (units, root.tmp), o, o.jobs):
                r.files = [str(output / Path(f).name) for f in r.files]
                report.partitions.append(r)
            identity.require_unchanged()
        return report


# --------------------------------------------------------------------------- as an operation


@dataclass(frozen=True)
class ExportTask:
    """One partition's file to write into the output folder's temporary (a unit of ``OPERATION``)."""

    unit: ExportUnit
    dst: Path
    weight: int = 0
    local: bool = False  # objects and archive members: read by this process only


def plan_tasks(inputs: tuple[list[ExportUnit], Path], o: ExportOptions) -> list[ExportTask]:
    units, folder = inputs
    return [ExportTask(u, folder / (u.name + SUFFIX[o.fmt]), weight_of(u.segments),
                       any(here_only(p) for p in u.segments)) for u in units]


def run_task(task: ExportTask, o: ExportOptions) -> PartitionExport:
    return export_unit(task.unit, task.dst, o)


def merge_tasks(partials: Any, o: ExportOptions) -> list[PartitionExport]:
    return list(partials)


OPERATION = Operation("export", plan_tasks, run_task, merge_tasks)


__all__ = ["ARROW", "COMPRESSIONS", "EXPORT_KEY", "OPERATION", "ExportOptions", "ExportReport", "ExportUnit", "FORMATS",
           "PARQUET", "PartitionExport", "export", "export_unit", "plan_export"]
