"""The ``verify`` operation: every check the bytes allow, every problem reported.

Returns a report (data); the CLI renders it. ``quick`` checks framing and CRCs
only (the broker's own check); the default also decompresses and checks
every record. Errors make the data bad (exit 1); notes are facts worth
knowing that Kafka accepts (offset holes after compaction, preallocated
index tails).
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from crc32c import crc32c

from .codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from .control import control_info
from .errors import InputError, KsegError, TruncatedError, expected_found
from .formats.attributes import CODEC_MASK, CODEC_PLUGIN, CREATE_TIME, PLUGIN_ID_MASK
from .formats.message_v0v1 import CRC_START as LEGACY_CRC_START
from .formats.record_batch_v2 import CRC_START as V2_CRC_START
from .model import Batch, Record
from .records import batch_records, check_v2_batch_records, wrapper_records
from .segment import Segment, base_offset_of, log_dir_partitions, partition_segments
from .storage import as_path

ERROR = "error"
NOTE = "note"
MAX_NOTES_PER_KIND = 20
# Attribute bits no format defines (v2: bit 7 and 12-15; bits 8-11 are kseg's plugin id).
V2_UNDEFINED_BITS = 0xF080


@dataclass(frozen=True)
class Problem:
    severity: str
    check: str
    file: str
    position: int | None
    message: str
    expected: Any = None
    found: Any = None
    where: str | None = None

    def __str__(self) -> str:
        head = f"{self.file}:"
        if self.position is not None:
            head += f" at byte {self.position}"
        if self.where:
            head += f" ({self.where})"
        return f"{head}: {self.message}{expected_found(self.expected, self.found)}"

    def as_json(self) -> dict:
        return {k: v for k, v in asdict(self).items()}


@dataclass
class FileReport:
    path: str
    kind: str = "log"
    batches: int = 0
    records: int = 0
    bytes: int = 0
    problems: list[Problem] = field(default_factory=list)
    suppressed_notes: int = 0

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class VerifyReport:
    files: list[FileReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    @property
    def error_count(self) -> int:
        return sum(len(f.errors) for f in self.files)


class _Collector:
    def __init__(self, report: FileReport):
        self.report = report
        self._note_counts: dict[str, int] = {}

    def error(self, check: str, position: int | None, message: str, **kw: Any) -> None:
        self.report.problems.append(Problem(ERROR, check, self.report.path, position, message, **kw))

    def note(self, check: str, position: int | None, message: str, **kw: Any) -> None:
        n = self._note_counts.get(check, 0) + 1
        self._note_counts[check] = n
        if n > MAX_NOTES_PER_KIND:
            self.report.suppressed_notes += 1
            return
        self.report.problems.append(Problem(NOTE, check, self.report.path, position, message, **kw))

    def from_error(self, check: str, e: KsegError) -> None:
        self.error(check, e.position, e.message, expected=e.expected, found=e.found, where=e.where)


@dataclass(frozen=True)
class VerifyOptions:
    quick: bool = False
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    check_indexes: bool = True


def verify_paths(
    paths: Iterable[str | Path],
    options: VerifyOptions = VerifyOptions(),
    progress: Callable[[str], None] | None = None,
) -> VerifyReport:
    """Verify files, partition folders and log directories; offsets are checked across
    the segments of one partition."""
    report = VerifyReport()
    for group in _groups(paths):
        last_offset: int | None = None
        for path in group:
            if progress:
                progress(str(path))
            if is_companion(path):
                fr = verify_companion_file(path)
            else:  # .log, .checkpoint, transient names (.deleted ...) and other names read as logs
                fr, last_offset = verify_log(path, options, last_offset)
            report.files.append(fr)
    return report


def _groups(paths: Iterable[str | Path]) -> list[list[Path]]:
    groups: list[list[Path]] = []
    for raw in paths:
        p = as_path(raw)
        if not p.exists():
            raise InputError("no such file or directory", file=str(p))
        if p.is_file():
            groups.append([p])
            continue
        segs = partition_segments(p)
        if segs:
            groups.append(segs + _partition_files(p))
            continue
        parts = log_dir_partitions(p)
        if not parts:
            raise InputError("no segment files found (expected .log files or <topic>-<n> folders)", file=str(p))
        groups.extend(part.segment_paths + _partition_files(part.path) for part in parts)
    return groups


def _partition_files(folder: Path) -> list[Path]:
    """The files of a partition folder verified besides its segments (their .index,
    .timeindex and .txnindex are checked with their log)."""
    snapshots = sorted(folder.glob("*.snapshot"))
    texts = [folder / n for n in PARTITION_TEXT_FILES if (folder / n).is_file()]
    return snapshots + texts


PARTITION_TEXT_FILES = ("leader-epoch-checkpoint", "partition.metadata")
COMPANION_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot")


def is_companion(path: Path) -> bool:
    """A file verified by itself (not as a log): index files, snapshots, partition text files."""
    return path.suffix in COMPANION_SUFFIXES or path.name in PARTITION_TEXT_FILES


def verify_companion_file(path: Path) -> FileReport:
    fr = FileReport(str(path), kind=path.suffix.lstrip(".") or path.name)
    from .index_check import check_standalone

    for f in check_standalone(path):
        fr.problems.append(Problem(f.severity, "index", f.file, f.position, f.message, f.expected, f.found))
    return fr


def verify_log(path: Path, options: VerifyOptions, prev_last: int | None = None) -> tuple[FileReport, int | None]:
    """Check one .log file; ``prev_last`` is the last offset of the partition's previous segment."""
    fr = FileReport(str(path))
    c = _Collector(fr)
    seg = Segment(path)
    name_base = base_offset_of(path) if path.suffix == ".log" else None
    summaries: list[tuple[int, int | None, int, int, int]] = []
    controls: list[tuple[int, int | None]] = []
    last = prev_last
    quick = options.quick
    # Index summaries are needed only when the segment has an index to check against.
    want_summaries = options.check_indexes and path.suffix == ".log" and _has_indexes(path)
    try:
        for batch in seg.batches():
            fr.batches += 1
            fr.bytes += batch.size
            magic = batch.magic
            if magic >= 2:
                _check_header(c, batch)
                lod = batch.last_offset_delta
                assert lod is not None  # set on every v2 batch
                batch_last = batch.offset + lod
            else:  # the hot loop of legacy segments: one entry per message
                if zlib.crc32(batch.raw[LEGACY_CRC_START:]) != batch.crc or batch.attributes & ~0x0F:
                    _check_header(c, batch)
                batch_last = batch.offset
            first = batch.offset
            wrapper_unread = False
            if quick:
                if magic >= 2:
                    assert batch.record_count is not None  # set on every v2 batch
                    fr.records += batch.record_count
                else:
                    fr.records += 1
                    wrapper_unread = bool(batch.attributes & CODEC_MASK)
            else:
                records = _check_records(c, batch, options)
                if isinstance(records, int):
                    fr.records += records
                elif records is not None:
                    fr.records += len(records)
                    if records and magic < 2:
                        first = records[0].offset
                    if magic >= 2 and batch.is_control and records:
                        try:
                            controls.append((batch_last, control_info(records[0]).type_id))
                        except KsegError:
                            controls.append((batch_last, None))
            if name_base is not None and first < name_base and not wrapper_unread:
                c.error("offsets", batch.position, "offset below the segment's base offset (from its name)",
                        expected=f">= {name_base}", found=first)
            if last is not None:
                if first <= last:
                    c.error("offsets", batch.position, "offsets do not increase",
                            expected=f"> {last}", found=first)
                elif first != last + 1 and not wrapper_unread:
                    c.note("offsets", batch.position, "non-consecutive offsets", expected=last + 1, found=first)
                if batch_last > last:
                    last = batch_last
            else:
                last = batch_last
            if want_summaries:
                # A wrapper's first offset is unknown without decompressing it (quick mode).
                summaries.append((batch.position, None if wrapper_unread else first, batch_last,
                                  batch.timestamp, batch.size))
    except KsegError as e:  # unreadable file
        c.from_error("read", e)
        return fr, last
    if seg.tail is not None:
        t = seg.tail
        if isinstance(t.error, TruncatedError):
            c.error("truncated", t.position, f"{t.length} bytes at the end do not form a complete batch "
                    f"({t.error.message})", expected=t.error.expected, found=t.error.found)
        else:
            c.error("framing", t.error.position, t.error.message + f"; {t.length} bytes from byte {t.position} unread",
                    expected=t.error.expected, found=t.error.found)
    if options.check_indexes and path.suffix == ".log":
        _check_companions(c, path, summaries, controls, seg)
    return fr, last


def _has_indexes(log: Path) -> bool:
    stem = log.name.split(".")[0]
    return any((log.parent / f"{stem}{s}").exists() for s in (".index", ".timeindex", ".txnindex"))


def _check_header(c: _Collector, b: Batch) -> None:
    raw = b.raw
    if b.magic >= 2:
        computed = crc32c(raw[V2_CRC_START:])
    else:
        computed = zlib.crc32(raw[LEGACY_CRC_START:])
    if computed != b.crc:
        c.error("crc", b.position, "crc mismatch", expected=f"{computed:#010x} (computed over the bytes)",
                found=f"{b.crc:#010x} (stored)")
    if b.magic >= 2:
        lod, count = b.last_offset_delta, b.record_count
        assert lod is not None and count is not None  # set on every v2 batch
        if lod < 0:
            c.error("batch", b.position, "negative lastOffsetDelta", found=lod)
        if count < 0 or count > lod + 1:
            c.error("batch", b.position, "record count does not fit the offset range",
                    expected=f"0..{lod + 1}", found=count)
        undefined = b.attributes & V2_UNDEFINED_BITS
        if undefined:
            c.note("attributes", b.position + 21, "undefined attribute bits set", found=f"{undefined:#06x}")
        if b.codec != CODEC_PLUGIN and b.attributes & PLUGIN_ID_MASK:
            c.note("attributes", b.position + 21, "plugin id bits set on a non-plugin codec",
                   found=f"{b.attributes:#06x}")
    elif b.attributes & ~0x0F:
        c.note("attributes", b.position + 17, "undefined attribute bits set", found=f"{b.attributes:#04x}")


def _check_records(c: _Collector, b: Batch, options: VerifyOptions) -> list[Record] | int | None:
    """Decode and check a batch's records: the records (legacy, control) or just their count."""
    try:
        if b.magic >= 2 and not b.is_control:
            summary = check_v2_batch_records(b, limit=options.max_decompressed_bytes)
            _check_v2_summary(c, b, summary)
            return b.record_count
        if b.magic < 2 and b.attributes & CODEC_MASK:
            records, bad_crcs = wrapper_records(b, limit=options.max_decompressed_bytes)
            _check_wrapper(c, b, records, bad_crcs)
            return records
        records = batch_records(b, limit=options.max_decompressed_bytes)
    except KsegError as e:
        c.from_error("records", e)
        return None
    if b.magic >= 2:
        _check_v2_summary(c, b, _summary(b, records))
        _check_control(c, b, records)
    return records


def _summary(b: Batch, records: list[Record]) -> tuple[int | None, bool, int, int]:
    if not records:
        return None, True, 0, 0
    deltas = [r.offset - b.offset for r in records]
    ordered = all(x < y for x, y in zip(deltas, deltas[1:]))
    return max(r.stored_timestamp for r in records), ordered, min(deltas), max(deltas)


def _check_v2_summary(c: _Collector, b: Batch, summary: tuple[int | None, bool, int, int]) -> None:
    max_ts, ordered, min_delta, max_delta = summary
    lod = b.last_offset_delta
    assert lod is not None  # a v2 batch
    if not ordered:
        c.error("records", b.position, "record offsets do not increase inside the batch")
    if b.record_count and (min_delta < 0 or max_delta > lod):
        c.error("records", b.position, "record offset deltas outside the batch's range",
                expected=f"0..{lod}", found=f"{min_delta}..{max_delta}")
    if b.record_count and b.timestamp_type == CREATE_TIME and max_ts != b.timestamp:
        c.error("timestamps", b.position, "maxTimestamp is not the largest record timestamp",
                expected=max_ts, found=b.timestamp)


def _check_control(c: _Collector, b: Batch, records: list[Record]) -> None:
    if b.is_control:
        if len(records) != 1:
            c.error("control", b.position, "control batch must hold exactly one record", found=len(records))
        elif records:
            try:
                info = control_info(records[0])
                if info.is_txn_marker and not b.is_transactional:
                    c.error("control", b.position, "transaction marker in a non-transactional batch")
            except KsegError as e:
                c.from_error("control", e.located(position=b.position))


def _check_wrapper(c: _Collector, b: Batch, records: list[Record], bad_crcs: list[tuple[int, int, int]]) -> None:
    for i, stored, computed in bad_crcs:
        c.error("crc", b.position, "inner message crc mismatch", where=f"inner message {i}",
                expected=f"{computed:#010x} (computed over the bytes)", found=f"{stored:#010x} (stored)")
    for i, r in enumerate(records):
        if r.magic != b.magic:
            c.note("records", b.position, "inner message magic differs from the wrapper's",
                   expected=b.magic, found=r.magic, where=f"inner message {i}")
    offsets = [r.offset for r in records]
    if any(x >= y for x, y in zip(offsets, offsets[1:])):
        c.error("records", b.position, "inner offsets do not increase", found=offsets[:10])
    elif offsets[-1] - offsets[0] + 1 != len(offsets):
        c.note("offsets", b.position, "holes in the inner offsets (normal after compaction)",
               found=f"{len(offsets)} messages over offsets {offsets[0]}..{offsets[-1]}")
    if b.magic == 1 and b.timestamp_type == CREATE_TIME:
        mx = max(r.stored_timestamp for r in records)
        if mx != b.timestamp:
            c.note("timestamps", b.position, "wrapper timestamp is not the max inner timestamp "
                   "(librdkafka writes the first)", expected=mx, found=b.timestamp)


def _check_companions(c, path: Path, summaries, controls, seg: Segment) -> None:
    try:
        from .index_check import check_segment_companions
    except ImportError:  # pragma: no cover
        return
    for f in check_segment_companions(path, summaries, controls, seg.size):
        c.report.problems.append(Problem(f.severity, "index", f.file, f.position, f.message, f.expected, f.found))
