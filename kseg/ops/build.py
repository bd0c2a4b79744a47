"""Building a partition from JSON lines (``kseg build``): the inverse of ``dump --format jsonl``.

Rules: the lines are dump's contract (docs/guides/jsonl.md): a ``batch`` line, then its
``record`` lines; ``error`` lines (``dump --keep-going``) are written back as their raw bytes.
Keys and values are read as the ``--payload`` they were written in (``key_b64``/``value_b64``
always base64). The bytes come from the writers' own encoders (``kseg.log.encode``); the
indexes, the ``.txnindex`` and the ``leader-epoch-checkpoint`` from the same code as every
writer's. Fields a batch's bytes determine (CRC, size, record count, last offset, max
timestamp) are computed; a line that gives one is checked against it, and a disagreement is
an error (``derived="check"``), written as the line says (``"given"``: deliberately damaged
fixtures), or noted and replaced by the computed value (``"computed"``: a dump edited by hand).

What a dump does not carry cannot come back: the timestamps records stored under a
LogAppendTime batch (they are shown with the batch's), and a partial batch at the end of a
segment (a ``trailing`` line holds no bytes). Everything else gives the same records, and the
same bytes wherever the codec writes what Kafka writes.

The lines are read in ``build_lines``, each batch encoded in ``build_batch``; this module
writes the partition (or log directory) and is the builder's public face.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from kseg.companions.build import build_txn_index
from kseg.companions.producer_state import TxnState
from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.errors import DataError, InputError, KsegError
from kseg.facts.log_entry import LOG_OVERHEAD, SIZE_POSITION
from kseg.log.atomic import AtomicDir, check_output, write_atomic
from kseg.log.listing import TXN_INDEX_SUFFIX
from kseg.log.segment import Segment, base_offset_of, companion_path, partition_of, segment_file_name
from kseg.model import Record
from kseg.ops.build_batch import Disagreement, encode_batch
from kseg.ops.build_lines import PAYLOADS, BatchLine, at_line, parse_lines
from kseg.ops.fixture_spec import input_items, spec_lines
from kseg.ops.jobs import SegmentSink, WriteOptions
from kseg.ops.logdir import finish_log_dir, finish_partition

COMMAND = "build"
DERIVED = ("check", "given", "computed")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class BuildOptions:
    """How lines become a partition."""

    payload: str = "utf8"  # how keys and values were written (dump --payload)
    derived: str = "check"  # check | given | computed (see the module comment)
    segment_bytes: int | None = None  # roll segments by size instead of as the lines' file names say
    index: bool = True
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    force: bool = False


@dataclass
class BuildResult:
    """What a build wrote, and what it found on the way."""

    output: Path
    partitions: int = 0
    segments: list[Path] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    bytes: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        kept = ""
        if self.disagreements:
            kept = f"; {len(self.disagreements)} derived field(s) written as the lines give them"
        where = f"{self.partitions} partitions, " if self.partitions > 1 else ""
        return (f"kseg: built {self.output}: {where}{len(self.segments)} segment(s), {self.batches} batch(es), "
                f"{self.records} record(s), {self.bytes} bytes{kept}")


# --------------------------------------------------------------------------- writing a partition


def _partition_name(file: str | None) -> str | None:
    """The partition folder a batch line's file sits in (``orders-0``), when it names one."""
    if not file:
        return None
    parent = Path(file).parent.name
    return parent if parent and partition_of(parent) is not None else None


class _PartitionWriter:
    """One output partition folder: segments rolled as the lines say (or by size), each with its
    indexes (``SegmentSink``), then the ``.txnindex`` files and the leader-epoch checkpoint."""

    def __init__(self, folder: Path, options: BuildOptions, result: BuildResult):
        self.folder, self.options, self.result = folder, options, result
        self.sink: SegmentSink | None = None
        self.file: str | None = None
        self.folder.mkdir(parents=True, exist_ok=True)
        self.logs: list[Path] = []

    def add(self, bl: BatchLine, raw: bytes) -> None:
        file = bl.file
        name = Path(file).name if file else None
        roll = self.sink is None
        if self.options.segment_bytes is not None:
            roll = roll or (self.sink is not None and self.sink.position > 0
                            and self.sink.position + len(raw) > self.options.segment_bytes)
        elif name is not None and name != self.file:  # another file: another segment
            roll = True
        if roll:
            base = None
            if self.options.segment_bytes is None and name is not None:
                base = base_offset_of(name)
            if base is None:
                base = _first_offset(bl, raw)
            self._close()
            log = self.folder / segment_file_name(base)
            if log in self.logs:
                raise InputError(f"segment {log.name} would be written twice (the lines' files are out of order)",
                                 where=at_line(bl.line))
            self.sink = SegmentSink(log, base, WriteOptions(index=self.options.index,
                                                            index_interval_bytes=self.options.index_interval_bytes))
            self.logs.append(log)
            self.file = name
        assert self.sink is not None
        if raw and len(raw) >= LOG_OVERHEAD and len(raw) == LOG_OVERHEAD + _I32.unpack_from(raw, SIZE_POSITION)[0]:
            self.sink.write(raw)
        else:  # a truncated or unframed entry: in the log, not in the indexes
            self.sink.file.write(raw)
            self.sink.position += len(raw)

    def _close(self) -> None:
        if self.sink is not None:
            self.sink.commit()
            self.sink = None

    def finish(self) -> None:
        self._close()
        _write_txn_indexes(self.logs)
        finish_partition(None, self.folder, COMMAND)
        self.result.partitions += 1

    def abort(self) -> None:
        if self.sink is not None:
            self.sink.abort()


def _first_offset(bl: BatchLine, raw: bytes) -> int:
    if bl.fields.get("base_offset") is not None and isinstance(bl.fields["base_offset"], int):
        return bl.fields["base_offset"]
    if bl.records:
        return bl.records[0].offset
    return struct.unpack_from(">q", raw)[0] if len(raw) >= 8 else 0


def _write_txn_indexes(logs: list[Path]) -> None:
    """A ``.txnindex`` beside each segment holding an aborted transaction's marker, as the
    broker's ProducerStateManager writes them (the repair command's reckoning)."""
    state = TxnState()
    for log in logs:
        entries = []
        for b in Segment(log).batches():
            if b.computed_crc() != b.crc:
                continue
            try:
                entry = state.on_batch(b, 1 << 62)
            except KsegError:
                continue
            if entry is not None:
                entries.append(entry)
        if entries:
            write_atomic(companion_path(log, TXN_INDEX_SUFFIX), build_txn_index(entries))


def build(lines: Iterable[str | bytes | dict | BatchLine], output: Path, options: BuildOptions = BuildOptions(), *,
          source: str | None = None) -> BuildResult:
    """Write the partition (or, when the lines name several partition folders, the log
    directory) the lines describe to ``output``, published whole or not at all."""
    if options.derived not in DERIVED:
        raise InputError(f"derived must be one of {', '.join(DERIVED)}, not {options.derived!r}")
    output = Path(output)
    check_output([], output, force=options.force)
    result = BuildResult(output)
    writers: dict[str | None, _PartitionWriter] = {}
    last_key: str | None = None
    with AtomicDir(output) as tmp:
        try:
            for bl in parse_lines(lines, options.payload, source):
                if bl.raw == b"" and bl.fields.get("type") == "trailing":
                    result.notes.append(f"{at_line(bl.line)}: a partial batch of {bl.fields.get('length')} bytes at the "
                                        "end of a segment: its bytes are not in the lines, it is not written")
                    continue
                found: list[Disagreement] = []
                raw = encode_batch(bl, source, found)
                if found and options.derived != "given":  # the computed values written
                    bl_fields = {k: v for k, v in bl.fields.items() if k not in {d.field for d in found}}
                    raw = encode_batch(BatchLine(bl.line, bl_fields, bl.records, bl.record_fields), source)
                    checked = [d for d in found if d.checked]
                    if options.derived == "computed":
                        result.notes.extend(f"{d} (the computed value written)" for d in checked)
                    else:
                        result.disagreements.extend(checked)
                else:
                    result.disagreements.extend(found)
                key = _partition_name(bl.file) or last_key  # a line without a file: with the one before
                w = writers.get(key)
                if w is None:
                    w = writers[key] = _PartitionWriter(tmp.tmp / key if key else tmp.tmp, options, result)
                last_key = key
                w.add(bl, raw)
                result.batches += 1
                result.records += len(bl.records)
                result.bytes += len(raw)
            if result.disagreements and options.derived == "check":
                first = result.disagreements[0]
                more = len(result.disagreements) - 1
                raise DataError(f"{first}{f' (and {more} more)' if more else ''}: the lines disagree with the "
                                "records they hold (--derived given writes them as given, --derived computed "
                                "writes the computed values)", file=source)
            if not writers:
                raise InputError("no batch or record lines", file=source)
            if len(writers) > 1 and None in writers:
                raise InputError("some lines name a partition folder and some do not", file=source)
            for w in writers.values():
                w.finish()
            if len(writers) == 1:  # one partition: the output is that partition's folder
                _move_into(tmp.tmp, next(iter(writers)))
            else:
                finish_log_dir(tmp.tmp, tmp.tmp, COMMAND)
        except BaseException:
            for w in writers.values():
                w.abort()
            raise
        result.segments = [output / log.relative_to(tmp.tmp) for log in sorted(tmp.tmp.rglob("*.log"))]
    return result


def _move_into(root: Path, name: str | None) -> None:
    """A single partition's files moved up from ``root/name`` to ``root``."""
    if not name:
        return
    sub = root / name
    for p in list(sub.iterdir()):
        p.rename(root / p.name)
    sub.rmdir()


def build_records(records: Iterable[Record], output: Path, *, batch_records: int = 1000, codec: str = "none",
                  force: bool = False) -> BuildResult:
    """A partition of v2 batches (``batch_records`` records each) from records: for tests'
    fixtures, with offsets and timestamps as the records give them."""
    def batches() -> Iterator[BatchLine]:
        batch: list[Record] = []
        for r in records:
            batch.append(r)
            if len(batch) >= batch_records:
                yield _records_batch(batch, codec)
                batch = []
        if batch:
            yield _records_batch(batch, codec)

    return build(batches(), output, BuildOptions(force=force))


def _records_batch(batch: list[Record], codec: str) -> BatchLine:
    return BatchLine(0, {"type": "batch", "magic": 2, "codec": codec, "base_offset": batch[0].offset}, batch,
                     [{} for _ in batch])


def build_partition(source: str | Path | Iterable[Any], output: str | Path, *, payload: str = "utf8",
                    derived: str = "check", segment_bytes: int | None = None, batch_records: int = 1000,
                    codec: str = "none", force: bool = False) -> BuildResult:
    """``kseg build`` as a function, for tests' fixtures: ``source`` is a JSON lines or fixture
    spec file, JSON lines (strings or parsed dicts), a fixture spec (a dict with ``batches``), or
    ``kseg.Record``s (v2 batches of ``batch_records``, ``codec``)."""
    options = BuildOptions(payload=payload, derived=derived, segment_bytes=segment_bytes, force=force)
    if isinstance(source, (str, Path)):
        with open(source, "rb") as f:
            return build(input_items(f, str(source)), Path(output), options, source=str(source))
    if isinstance(source, dict):
        return build(spec_lines(source), Path(output), options)
    items = list(source)
    if items and isinstance(items[0], Record):
        return build_records(items, Path(output), batch_records=batch_records, codec=codec, force=force)
    return build(items, Path(output), options)


__all__ = ["DERIVED", "PAYLOADS", "BuildOptions", "BuildResult", "Disagreement", "build", "build_partition",
           "build_records", "encode_batch", "parse_lines"]
