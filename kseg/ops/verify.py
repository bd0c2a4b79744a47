"""The ``verify`` operation: every check the bytes allow, every problem reported.

Returns a report (data); the CLI renders it. ``quick`` checks framing and CRCs
only (the broker's own check); the default also decompresses and checks
every record. Errors make the data bad (exit 1); notes are facts worth
knowing that Kafka accepts (offset holes after compaction, preallocated
index tails). A live broker's folder is read as it is: a file deleted during the
run, a batch still being written at the end of a partition's newest segment and
zeros preallocated after the last batch are notes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.companions.check import BatchRows, check_segment_companions, check_standalone, companion_paths
from kseg.errors import InputError, KsegError, TruncatedError
from kseg.facts.message_v0v1 import ATTRIBUTES_POSITION as LEGACY_ATTRIBUTES_POSITION
from kseg.facts.message_v0v1 import CRC_START as LEGACY_CRC_START
from kseg.facts.record_batch_v2 import ATTRIBUTES_POSITION as V2_ATTRIBUTES_POSITION
from kseg.findings import ERROR, NOTE, Finding
from kseg.formats.attributes import CODEC_MASK, CODEC_PLUGIN, CREATE_TIME, PLUGIN_ID_MASK, TIMESTAMP_TYPE_MASK
from kseg.lazy import load
from kseg.log.checks import V2_UNDEFINED_BITS, RecordCheck, header_errors, record_check, sound_v2_run
from kseg.log.control import control_info
from kseg.log import identity, listing
from kseg.log.listing import (
    COMPANION_SUFFIXES,
    INDEX_SUFFIXES,
    LOG_DIR_TEXT_FILES,
    LOG_SUFFIX,
    PARTITION_TEXT_FILES,
    TIERED_EPOCH_SUFFIXES,
    Group,
    list_inputs,
    replica_note,
)
from kseg.log.records import PlainRun, plain_run
from kseg.log.segment import (
    Segment,
    base_offset_of,
    companion_path,
    not_a_file,
    rsm_transform,
)
from kseg.log.tails import PREALLOCATED, live_tail
from kseg.model import Batch, Record
from kseg.ops.executors import Operation, execute, here_only, weight_of
from kseg.ops.cuts import cut_points, slice_share
from kseg.ops.sniff import KAFKA, KAFKA07, format_hint, input_format_of
from kseg.printable import printable
from kseg.storage import MANIFEST, VANISHED, ReadError, as_path, cannot_read, gone, read_failures, tree_sizes

MAX_NOTES_PER_KIND = 20
MAX_MANIFEST_BYTES = 64 << 20  # ~500,000 objects: a manifest's claims stay bounded in memory
LEGACY_UNDEFINED_BITS = ~(CODEC_MASK | TIMESTAMP_TYPE_MASK)
# The 0.7 reader, loaded for 0.7 files only.
READ_KAFKA07 = "kseg.kafka07.read:read_kafka07"
INNER_PAYLOADS = "kseg.kafka07.read:inner_payloads"


# The name verify has always given its findings.
Problem = Finding


@dataclass
class FileReport:
    """What verify found in one file, and how much of it it read."""

    path: str
    kind: str = "log"
    batches: int = 0
    records: int = 0
    bytes: int = 0
    problems: list[Finding] = field(default_factory=list)
    suppressed_notes: int = 0

    @property
    def errors(self) -> list[Finding]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass
class VerifyReport:
    """Every file's report, in the order the inputs named them."""

    files: list[FileReport] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(f.ok for f in self.files)

    @property
    def error_count(self) -> int:
        return sum(len(f.errors) for f in self.files)

    @property
    def unreadable(self) -> list[Problem]:
        """Files that could not be read at all (permissions, not a regular file): exit 2."""
        return [p for f in self.files for p in f.errors if p.check == "unreadable"]


class _Collector:
    def __init__(self, report: FileReport):
        self.report = report
        self._note_counts: dict[str, int] = {}
        self.last_shown: dict[str, int] = {}  # kind -> index in problems of its last note shown (the cap's)

    def count(self, check: str) -> int:
        """Notes of this kind so far, shown or suppressed."""
        return self._note_counts.get(check, 0)

    def error(self, check: str, position: int | None, message: str, **kw: Any) -> None:
        self.report.problems.append(Finding(ERROR, check, self.report.path, position, message, **kw))

    def note(self, check: str, position: int | None, message: str, **kw: Any) -> None:
        self.keep_note(Finding(NOTE, check, self.report.path, position, message, **kw))

    def keep_note(self, note: Finding) -> None:
        """A note, shown unless its kind has had its ``MAX_NOTES_PER_KIND`` in this file."""
        n = self._note_counts.get(note.check, 0) + 1
        self._note_counts[note.check] = n
        if n > MAX_NOTES_PER_KIND:
            self.report.suppressed_notes += 1
            return
        if n == MAX_NOTES_PER_KIND:
            self.last_shown[note.check] = len(self.report.problems)
        self.report.problems.append(note)

    def extend(self, errors: list[Finding]) -> None:
        """Errors found by the shared batch checks (``kseg.log.checks``), already about this file."""
        self.report.problems.extend(errors)

    def from_error(self, check: str, e: KsegError) -> None:
        self.error(check, e.position, e.message, expected=e.expected, found=e.found, where=e.where)


@dataclass(frozen=True)
class VerifyOptions:
    """What to check (``quick``: framing and CRCs only; the companion indexes) and how (the
    decompression limit, the input's format, the workers)."""

    quick: bool = False
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    check_indexes: bool = True
    input_format: str | None = None  # kafka|kafka07; None: by name, then by content
    # The workers the run is spread over: a log heavier than a share of the work is cut into
    # slices checked apart (``plan``); the report is the same for any number.
    workers: int = 1


def verify_paths(
    paths: Iterable[str | Path],
    options: VerifyOptions = VerifyOptions(),
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
) -> VerifyReport:
    """Verify files, partition folders and log directories; offsets are checked across
    the segments of one partition. ``jobs``: worker processes (``kseg.ops.executors``);
    the report is the same for any number."""
    def shown(u: VerifyUnit) -> None:
        if progress and u.kind != MANIFEST_UNIT and u.part == 0:
            progress(u.path)

    return execute(OPERATION, list(paths), options, jobs, shown if progress else None)


# --------------------------------------------------------------------------- plan / run / merge
#
# Units are files: a root's manifest, then each group's files in order (a partition's
# segments, whose offsets run on from one to the next, then the files checked beside them).
# A segment is read on its own, as if first in its partition; what only its predecessor can
# tell (is its first offset the one after the previous segment's last?) is left open in its
# partial (``Opening``) and decided by ``merge``, which walks the partials in order. A log
# heavier than a share of the work (``VerifyOptions.workers``) is cut into slices at checked batch
# boundaries (``kseg.ops.cuts``: named by its offset index, else found by its entries' lengths); merge joins their partials into the file's (``_joined``).

MANIFEST_UNIT, COMPANION_UNIT, LOG_UNIT = "manifest", "companion", "log"


@dataclass(frozen=True)
class VerifyUnit:
    """One file to check: ``path`` as given (``kseg.storage.as_path`` reads it back), its
    ``kind``, the ``group`` it belongs to (offsets run on inside one), ``newest``: the partition's
    newest segment (a partial last batch is a note)."""

    path: str
    kind: str
    group: int
    newest: bool = False
    weight: int = 0  # bytes to read
    local: bool = False  # only this process reads it (``executors.here_only``)
    # A slice of a log: bytes [start, end) (end None: to the end), part ``part`` of ``parts``.
    start: int = 0
    end: int | None = None
    part: int = 0
    parts: int = 1

    def __str__(self) -> str:
        return self.path


@dataclass(frozen=True)
class Opening:
    """A log's first batch as the offset check across segments needs it: its first and last
    offsets, whether its first offset is unread (a compressed legacy wrapper in quick mode),
    its position, where its note would go in the report, and the "offsets" notes counted
    before it and in all (the per-kind cap), with the index of the last one shown."""

    first: int
    last: int
    unread: bool
    position: int
    at: int
    notes_before: int
    notes: int
    last_shown: int | None


@dataclass
class Piece:
    """What a slice's partial carries for ``_joined`` beyond its report: the batch summaries and
    control batches the index checks need (None: not wanted), the file's size (last slice),
    and how the read ended: ``CLEAN`` at the slice's end, ``TAIL`` at bytes that are not a
    batch (said in the report), ``FAILED`` at an error that stopped it."""

    summaries: BatchRows | None
    controls: list[tuple] | None
    size: int
    ended: str


CLEAN, TAIL, FAILED = "clean", "tail", "failed"


@dataclass
class VerifyPartial:
    """One unit's result as ``merge`` needs it: its report, and the facts the checks across files
    and slices need (the last offset read, the file's opening, a slice's piece)."""

    unit: VerifyUnit
    report: FileReport | None  # None: a root without a manifest
    last: int | None = None  # the highest last offset of the file's batches (None: none read)
    opening: Opening | None = None
    piece: Piece | None = None  # a slice's (``VerifyUnit.parts`` > 1)


def plan(paths: Iterable[str | Path], options: VerifyOptions) -> list[VerifyUnit]:
    """The files to check, in report order (``InputError`` for an unusable input, before any work)."""
    paths = list(paths)
    units = [VerifyUnit(str(root), MANIFEST_UNIT, -1, local=here_only(as_path(root))) for root in paths]
    for gi, (group, newest) in enumerate(groups_with_newest(paths)):
        for path in group:
            kind = COMPANION_UNIT if is_companion(path) else LOG_UNIT
            units.append(VerifyUnit(str(path), kind, gi, newest=path == newest, weight=weight_of([path]),
                                    local=here_only(path)))
    share = slice_share(sum(u.weight for u in units), options.workers)
    if not share:
        return units
    return [s for u in units for s in _sliced(u, share, options)]


def _sliced(u: VerifyUnit, share: int, options: VerifyOptions) -> list[VerifyUnit]:
    """A log unit as slices of about ``share`` bytes (itself when it is small, not a local Kafka
    segment, or no checked boundary was found: ``kseg.ops.cuts.cut_points``)."""
    if u.kind != LOG_UNIT or u.local or u.weight <= share * 3 // 2 or not u.path.endswith(LOG_SUFFIX):
        return [u]
    path = Path(u.path)
    cuts = cut_points(u.path, u.weight, share)
    if not cuts or rsm_transform(path) or _format_of(path, options) != KAFKA:
        return [u]
    starts = [0, *cuts]
    ends: list[int | None] = [*cuts, None]
    return [replace(u, start=a, end=b, weight=(u.weight if b is None else b) - a, part=i, parts=len(starts))
            for i, (a, b) in enumerate(zip(starts, ends))]


def run(unit: VerifyUnit, options: VerifyOptions) -> VerifyPartial:
    """Check one file, a log as if it were first in its partition."""
    if unit.kind == MANIFEST_UNIT:
        return VerifyPartial(unit, verify_manifest(unit.path))
    path = as_path(unit.path)
    if unit.kind == COMPANION_UNIT:
        return VerifyPartial(unit, verify_companion_file(path))
    if unit.parts > 1:
        read = _verify_log(path, options, None, unit.newest, span=(unit.start, unit.end))
        return VerifyPartial(unit, read.report, read.last, read.opening, read.piece)
    fr, last, opening = _verify_file(path, options, None, newest=unit.newest)
    return VerifyPartial(unit, fr, last, opening)


def merge(partials: Iterable[VerifyPartial], options: VerifyOptions) -> VerifyReport:
    """The report, partials taken in plan order: each log's offsets checked against the
    previous segment's, each log's index files listed after it."""
    report = VerifyReport()
    group, prev = None, None
    pieces: list[VerifyPartial] = []
    for p in partials:
        if p.unit.parts > 1:
            pieces.append(p)
            if p.unit.part < p.unit.parts - 1:
                continue
            p, pieces = _joined(pieces, options), []
        u, fr = p.unit, p.report
        if fr is None:
            continue
        if u.kind == LOG_UNIT:
            first = u.group != group
            if first:
                group, prev = u.group, None
            fr, prev = continue_after(p, prev, options)
            note = replica_note(Path(fr.path).parent) if first else None
            if note:  # a replica the broker renamed: said once, on its first segment
                fr.problems.append(Problem(NOTE, "replica", fr.path, None, note))
        report.files.append(fr)
        if u.kind == LOG_UNIT and options.check_indexes and Path(fr.path).suffix == LOG_SUFFIX:
            report.files.extend(index_file_reports(fr))
    return report


def continue_after(p: VerifyPartial, prev: int | None, options: VerifyOptions) -> tuple[FileReport, int | None]:
    """A log's report and last offset as reading it after a segment ending at ``prev`` gives.

    Only the first batch meets ``prev``: a gap is a note at its place (within the cap). A
    first batch at or below ``prev`` (offsets going back, data in trouble) makes every
    later batch meet ``prev`` too: that file is read again with it."""
    fr, o = p.report, p.opening
    assert fr is not None
    if prev is None or o is None:
        return fr, prev if p.last is None else p.last
    if o.first <= prev or o.last <= prev:
        fr, last, _ = _verify_file(as_path(p.unit.path), options, prev, newest=p.unit.newest)
        return fr, last
    if o.first != prev + 1 and not o.unread:
        note = Finding(NOTE, "offsets", fr.path, o.position, "non-consecutive offsets", expected=prev + 1,
                       found=o.first)
        if o.notes_before >= MAX_NOTES_PER_KIND:
            fr.suppressed_notes += 1
        else:
            fr.problems.insert(o.at, note)
            if o.notes >= MAX_NOTES_PER_KIND:  # the one it pushes past the cap
                assert o.last_shown is not None
                del fr.problems[o.last_shown + 1]
                fr.suppressed_notes += 1
    assert p.last is not None  # a first batch was read
    return fr, max(prev, p.last)


def verify_manifest(root: str | Path) -> FileReport | None:
    """The output's manifest (``.kseg-manifest.json``, written last when kseg published it to
    an object store) against what is there: an object missing, one not listed, a size that
    differs are errors naming the key. None: no manifest (not a kseg output, or still
    being published)."""
    import json

    root = as_path(root)
    manifest = root / MANIFEST
    try:
        if not root.is_dir() or not manifest.is_file():
            return None
    except (OSError, KsegError):
        return None  # the folder's own listing reports what is wrong with it
    fr = FileReport(str(manifest), kind="manifest")
    c = _Collector(fr)
    try:
        if manifest.stat().st_size > MAX_MANIFEST_BYTES:
            c.error("manifest", None, "the manifest is too large", expected=f"at most {MAX_MANIFEST_BYTES} bytes",
                    found=f"{manifest.stat().st_size} bytes")
            return fr
        listed = {str(o["key"]): int(o["size"]) for o in json.loads(manifest.read_bytes())["objects"]}
        there = tree_sizes(root)
    except read_failures() as e:
        c.error("unreadable", None, cannot_read(manifest, e).message)
        return fr
    except (ValueError, KeyError, TypeError) as e:
        c.error("manifest", None, f"not a kseg manifest ({printable(str(e))[:80]})")
        return fr
    there.pop(MANIFEST, None)
    for key in sorted(listed.keys() - there.keys()):
        c.error("manifest", None, f"{printable(key)}: listed in the manifest, missing")
    for key in sorted(there.keys() - listed.keys()):
        c.error("manifest", None, f"{printable(key)}: not listed in the manifest")
    for key in sorted(listed.keys() & there.keys()):
        if listed[key] != there[key]:
            c.error("manifest", None, f"{printable(key)}: size differs from the manifest",
                    expected=f"{listed[key]} bytes", found=f"{there[key]} bytes")
    fr.bytes = sum(there.values())
    return fr


def groups_with_newest(paths: Iterable[str | Path]) -> list[tuple[list[Path], Path | None]]:
    """``input_groups`` of each input, with the segment that may still be being written:
    the newest ``.log`` of a partition folder (named files and streams are taken as they are).
    Every input is checked usable before any work."""
    return [(_verify_group(g), g.newest) for listing in list_inputs(paths) for g in listing.groups]


def verify_file(path: Path, options: VerifyOptions, prev_last: int | None = None,
                newest: bool = False) -> tuple[FileReport, int | None]:
    """A log-like file in the format its name (else its first bytes) says; a file that fails
    and looks like the other format gets a note naming the option that reads it."""
    fr, last, _ = _verify_file(path, options, prev_last, newest)
    return fr, last


def _verify_file(path: Path, options: VerifyOptions, prev_last: int | None,
                 newest: bool) -> tuple[FileReport, int | None, Opening | None]:
    opening = None
    fmt = _format_of(path, options)
    if fmt == KAFKA07:
        fr = verify_kafka07_file(path, quick=options.quick, max_decompressed_bytes=options.max_decompressed_bytes)
        last = prev_last
    else:
        read = _verify_log(path, options, prev_last, newest)
        fr, last, opening = read.report, read.last, read.opening
    _hint(fr, path, fmt)
    return fr, last, opening


def _format_of(path: Path, options: VerifyOptions) -> str:
    """The format a log-like file is checked in: the option's, else by name, else by content."""
    try:
        return input_format_of(path, options.input_format)
    except InputError as e:
        if isinstance(e, ReadError) or gone(path) or (isinstance(path, Path) and not_a_file(path)):
            return KAFKA  # not readable as a file: the log check says why, in its report
        raise


def _hint(fr: FileReport, path: Path, fmt: str) -> None:
    """A file that fails and looks like the other format: a note naming the option that reads it."""
    if fr.ok:
        return
    try:
        hint = format_hint(path, fmt)
    except InputError:
        hint = None  # not readable: already said in the report
    if hint:
        fr.problems.append(Problem(NOTE, "format", str(path), None, hint))


def input_groups(paths: Iterable[str | Path]) -> list[list[Path]]:
    """The inputs as groups checked together (a partition folder's segments, whose offsets
    run on from one to the next, then the files checked beside them; a file alone), by the
    one listing rule every command uses (``kseg.log.listing``); InputError if unusable."""
    return [_verify_group(g) for listing in list_inputs(paths) for g in listing.groups]


def _verify_group(g: Group) -> list[Path]:
    return list(g.files) + list(g.side)


# How deep a folder of log directories (one per broker or disk) is searched for them.
LOG_DIR_SEARCH_DEPTH = listing.LOG_DIR_SEARCH_DEPTH


def folder_groups(folder: Path, depth: int = 0) -> list[list[Path]]:
    """What a folder holds, as verify groups (``kseg.log.listing.folder_listing``): a
    partition folder; a log directory (its own files, then its partitions); a folder of
    ``.log`` files not named by offset (each on its own); or a folder holding log directories."""
    return [_verify_group(g) for g in listing.folder_listing(folder, depth=depth)[1]]


def partition_groups(folder: Path) -> list[list[Path]]:
    """A partition folder: its segments in offset order with their snapshots and text files;
    KRaft snapshots, ``.log`` files not named by offset and transient segments
    (``.log.deleted``, ``.log.cleaned``, ``.log.swap``) are each checked on their own."""
    return [_verify_group(g) for g in listing.partition_listing(folder, folder)]


def _partition_files(folder: Path) -> list[Path]:
    """The files of a partition folder verified besides its segments (their .index,
    .timeindex and .txnindex are checked with their log)."""
    return [f for g in listing.partition_listing(folder, folder) if g.kind == listing.RUN for f in g.side]


def is_companion(path: Path) -> bool:
    """A file verified by itself (not as a log): index files, snapshots, the text files of
    partition folders and log directories."""
    return (path.suffix in COMPANION_SUFFIXES + TIERED_EPOCH_SUFFIXES or path.name in PARTITION_TEXT_FILES
            or path.name in LOG_DIR_TEXT_FILES)


def file_errors(path: Path) -> list[Finding]:
    """verify's errors about one file by itself, whatever it is (a companion or text file, a
    KRaft snapshot, the bootstrap): what a file carried over beside the segments is held to. It
    is checked on the copy a writer made, which is not one of its inputs (``identity``)."""
    with identity.unwatched():
        findings = check_standalone(path) if is_companion(path) else verify_file(path, VerifyOptions())[0].problems
    return [f for f in findings if f.severity == ERROR]


def index_file_reports(fr: FileReport) -> list[FileReport]:
    """A segment's index files as reports of their own (listed and counted like every file
    checked), their findings moved out of the segment's report."""
    log = Path(fr.path)
    out = []
    for suffix, cp in companion_paths(log).items():
        if not cp.is_file():
            continue
        mine = [p for p in fr.problems if p.file == str(cp)]
        fr.problems = [p for p in fr.problems if p.file != str(cp)]
        out.append(FileReport(str(cp), kind=suffix.lstrip("."), problems=mine))
    return out


def verify_kafka07_file(path: Path, *, quick: bool, max_decompressed_bytes: int) -> FileReport:
    """One pre-0.8 (Kafka 0.7) file: framing, CRCs and (unless quick) the compressed payloads."""
    fr = FileReport(str(path), kind="kafka07")
    messages, err = load(READ_KAFKA07)(path)
    for m in messages:
        fr.batches += 1
        fr.bytes += m.size
        if not m.crc_valid:
            fr.problems.append(Problem(ERROR, "crc", str(path), m.position, "crc mismatch",
                                       expected=f"{m.crc:#010x} (stored)",
                                       found=f"{zlib.crc32(m.payload):#010x} (computed)"))
        if not quick:
            try:
                fr.records += len(load(INNER_PAYLOADS)(m, max_decompressed_bytes))
            except KsegError as e:
                fr.problems.append(Problem(ERROR, "records", str(path), e.position, e.message,
                                           e.expected, e.found, e.where))
    if err is not None:
        fr.problems.append(Problem(ERROR, "truncated" if isinstance(err, TruncatedError) else "framing",
                                   str(path), err.position, err.message, err.expected, err.found))
    return fr


def verify_kafka07(paths: Iterable[Path], *, quick: bool, max_decompressed_bytes: int) -> VerifyReport:
    """Pre-0.8 (Kafka 0.7) files, each checked as ``verify_kafka07_file`` does (``--input-format kafka07``)."""
    report = VerifyReport()
    for path in paths:
        report.files.append(verify_kafka07_file(Path(path), quick=quick,
                                                max_decompressed_bytes=max_decompressed_bytes))
    return report


def verify_companion_file(path: Path) -> FileReport:
    fr = FileReport(str(path), kind=path.suffix.lstrip(".") or path.name)
    try:
        findings = check_standalone(path)
    except (FileNotFoundError, ReadError) as e:  # deleted since listed, or failing to read
        if isinstance(e, FileNotFoundError) and gone(path):
            fr.problems.append(Problem(NOTE, "vanished", str(path), None, VANISHED))
        else:
            fr.problems.append(Problem(ERROR, "unreadable", str(path), None, cannot_read(path, e).message))
        return fr
    if gone(path):
        fr.problems.append(Problem(NOTE, "vanished", str(path), None, VANISHED))
        return fr
    fr.problems.extend(findings)
    return fr


def verify_log(path: Path, options: VerifyOptions, prev_last: int | None = None, *,
               newest: bool = False) -> tuple[FileReport, int | None]:
    """Check one .log file; ``prev_last`` is the last offset of the partition's previous segment;
    ``newest``: the partition's newest segment, whose last batch may still be being written."""
    read = _verify_log(path, options, prev_last, newest)
    return read.report, read.last


@dataclass
class _LogRead:
    """A log file read by ``_verify_log``: its report and what the checks across segments need."""

    report: FileReport
    last: int | None
    opening: Opening | None
    piece: Piece | None = None


def _verify_log(path: Path, options: VerifyOptions, prev_last: int | None,
                newest: bool, span: tuple[int, int | None] | None = None) -> _LogRead:
    """``verify_log``, with the file's first batch as the check across segments needs it.
    ``span``: only bytes [start, end) (a slice, ``plan``); its index checks are left to
    ``_joined``, which gets what they need in the ``Piece``."""
    fr = FileReport(str(path))
    c = _Collector(fr)
    seg = Segment(path)
    name_base = base_offset_of(path) if path.suffix == LOG_SUFFIX else None
    summaries = BatchRows()
    controls: list[tuple[int, int | None]] = []
    last = prev_last
    quick = options.quick
    # Index summaries are needed only when the segment has an index to check against.
    want_summaries = options.check_indexes and path.suffix == LOG_SUFFIX and _has_indexes(path)
    transformed = rsm_transform(path)
    if transformed:
        fr.problems.append(Problem(ERROR, "input", str(path), None,
                                   f"not read: the remote storage manager stored this segment {transformed} "
                                   "in chunks (see its .rsm-manifest); kseg reads untransformed segment objects"))
        return _LogRead(fr, prev_last, None)
    opened: list[tuple[int, int, bool, int, int, int]] = []  # the first batch (see Opening)
    start, end = span or (0, None)

    def one(batch: Batch) -> None:
        nonlocal last
        fr.batches += 1
        fr.bytes += batch.size
        magic = batch.magic
        if magic >= 2:
            _check_header(c, batch)
            lod = batch.last_offset_delta
            assert lod is not None  # set on every v2 batch
            batch_last = batch.base_offset + lod
        else:  # the hot loop of legacy segments: one entry per message
            if zlib.crc32(batch.raw[LEGACY_CRC_START:]) != batch.crc or batch.attributes & LEGACY_UNDEFINED_BITS:
                _check_header(c, batch)
            batch_last = batch.base_offset
        first = batch.base_offset
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
        if first < 0 or batch_last < 0:
            c.error("offsets", batch.position, "negative offset", expected=">= 0",
                    found=first if first < 0 else batch_last)
        elif name_base is not None and first < name_base and not wrapper_unread:
            c.error("offsets", batch.position, "offset below the segment's base offset (from its name)",
                    expected=f">= {name_base}", found=first)
        if not opened:
            opened.append((first, batch_last, wrapper_unread, batch.position, len(fr.problems), c.count("offsets")))
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
                              batch.max_timestamp, batch.size))

    def clean_run(run: PlainRun) -> bool:
        """Take a run of plain messages at once when the per-message checks would find nothing
        in it (CRCs, attribute bits, offsets one after another from ``last``): the common case."""
        nonlocal last
        batches = run.batches
        first, n = batches[0].base_offset, len(batches)
        if (run.bad_crcs or first < 0 or (name_base is not None and first < name_base)
                or (last is not None and first != last + 1)
                or any(b.attributes & LEGACY_UNDEFINED_BITS for b in batches)
                or [b.base_offset for b in batches] != list(range(first, first + n))):
            return False
        if not opened:
            opened.append((first, first, False, batches[0].position, len(fr.problems), c.count("offsets")))
        fr.batches += n
        fr.records += n
        fr.bytes += sum(b.size for b in batches)
        last = first + n - 1
        if want_summaries:
            summaries.extend((b.position, b.base_offset, b.base_offset, b.max_timestamp, b.size) for b in batches)
        return True

    def sound_run(entries: list[Batch], start: int) -> int:
        """Take the v2 batches from ``entries[start]`` in which ``one`` would find nothing at once
        (``sound_v2_run``: decompressed and walked in C): where the run stops."""
        nonlocal last
        run = sound_v2_run(entries, start, last, name_base, options.max_decompressed_bytes, fr.path, quick,
                           summaries.data if want_summaries else None)
        if run.stop == start:
            return start
        if not opened:
            b = entries[start]
            opened.append((b.base_offset, b.last_offset, False, b.position, len(fr.problems), c.count("offsets")))
        fr.batches += run.stop - start
        fr.records += run.records
        fr.bytes += run.bytes
        last = run.last
        return run.stop

    try:
        for entries in seg.batch_lists(start=start, end=end):
            i = 0
            while i < len(entries):
                if entries[i].magic >= 2:
                    stop = sound_run(entries, i)
                    if stop == i:
                        one(entries[i])
                        stop += 1
                    i = stop
                    continue
                run = plain_run(entries, i)
                if run is None:
                    one(entries[i])
                    i += 1
                    continue
                i += len(run.batches)
                if not clean_run(run):
                    for batch in run.batches:
                        one(batch)
    except KsegError as e:  # unreadable file
        if gone(path):
            c.note("vanished", None, VANISHED)
        else:
            c.from_error("unreadable" if isinstance(e, InputError) else "read", e)
        piece = Piece(None, None, 0, FAILED) if span else None
        return _LogRead(fr, last, _opening(opened, c), piece)
    if seg.tail is not None:
        t = seg.tail
        live = live_tail(path, t, newest)
        if live is not None and live.kind == PREALLOCATED:
            c.note("preallocated", t.position, live.text)
        elif live is not None:
            c.note("truncated", t.position, live.text, expected=t.error.expected, found=t.error.found)
        elif isinstance(t.error, TruncatedError):
            c.error("truncated", t.position, f"{t.length} bytes at the end do not form a complete batch "
                    f"({t.error.message})", expected=t.error.expected, found=t.error.found)
        else:
            c.error("framing", t.error.position, t.error.message + f"; {t.length} bytes from byte {t.position} unread",
                    expected=t.error.expected, found=t.error.found)
    if span:
        try:
            size = seg.size if end is None else 0
        except OSError:  # renamed or deleted since it was read: the whole read says what it says
            return _LogRead(fr, last, _opening(opened, c), Piece(None, None, 0, FAILED))
        piece = Piece(summaries if want_summaries else None, None if quick else controls,
                      size, CLEAN if seg.tail is None else TAIL)
        return _LogRead(fr, last, _opening(opened, c), piece)
    if options.check_indexes and path.suffix == LOG_SUFFIX:
        # --quick reads no records, so it knows no control batch: the .txnindex is checked alone
        _companions_checked(c, path, summaries, None if quick else controls, lambda: seg.size)
    return _LogRead(fr, last, _opening(opened, c))


def _companions_checked(c: _Collector, path: Path, summaries: BatchRows, controls: list[tuple] | None,
                        size: Callable[[], int]) -> None:
    """The segment's index files checked against its batches, findings in ``c`` (``size``: the
    log's, asked inside, where a file renamed or deleted since it was read is a finding)."""
    try:
        c.report.problems.extend(check_segment_companions(path, summaries, controls, size()))
    except (FileNotFoundError, ReadError) as e:  # a companion deleted, or failing to read
        where = e.filename if isinstance(e, FileNotFoundError) else e.file
        if isinstance(e, FileNotFoundError) and gone(where or path):
            c.note("vanished", None, VANISHED)
        else:
            c.report.problems.append(Problem(ERROR, "unreadable", str(where or path), None,
                                             cannot_read(where or path, e).message))


def _joined(pieces: list[VerifyPartial], options: VerifyOptions) -> VerifyPartial:
    """A sliced log's partial from its slices', in order: what checking it whole gives.

    Each slice was read as if first in its file; where one meets the one before is decided as
    ``continue_after`` decides it across segments (a gap is a note at its place), and the
    notes are capped per kind over the whole file again (a slice's first notes of a kind hold
    the file's first ones). A slice that did not end cleanly where the next begins, a read that
    failed, or offsets going back at a cut: the file is read again whole (rare, damaged data)."""
    u = pieces[0].unit
    whole = replace(u, start=0, end=None, part=0, parts=1, weight=sum(p.unit.weight for p in pieces))
    path = as_path(u.path)

    def again() -> VerifyPartial:
        fr, last, opening = _verify_file(path, options, None, u.newest)
        return VerifyPartial(whole, fr, last, opening)

    ends = [p.piece.ended if p.piece else FAILED for p in pieces]
    if any(e != CLEAN for e in ends[:-1]) or ends[-1] == FAILED or any(p.opening is None for p in pieces):
        return again()
    first = pieces[0]
    assert first.report is not None and first.opening is not None and first.last is not None
    found = list(first.report.problems)
    prev, offsets_notes = first.last, first.opening.notes
    for p in pieces[1:]:
        o, own = p.opening, list(p.report.problems) if p.report else []
        assert o is not None and p.last is not None
        if o.first <= prev or o.last <= prev:
            return again()
        offsets_notes += o.notes
        if o.first != prev + 1 and not o.unread:
            own.insert(o.at, Finding(NOTE, "offsets", str(path), o.position, "non-consecutive offsets",
                                     expected=prev + 1, found=o.first))
            offsets_notes += 1
        found += own
        prev = max(prev, p.last)
    fr = FileReport(str(path), batches=sum(p.report.batches for p in pieces if p.report),
                    records=sum(p.report.records for p in pieces if p.report),
                    bytes=sum(p.report.bytes for p in pieces if p.report),
                    suppressed_notes=sum(p.report.suppressed_notes for p in pieces if p.report))
    c = _Collector(fr)
    for problem in found:  # the per-kind cap over the whole file
        if problem.severity == NOTE:
            c.keep_note(problem)
        else:
            fr.problems.append(problem)
    if options.check_indexes and path.suffix == LOG_SUFFIX:
        summaries = (BatchRows.joined(p.piece.summaries for p in pieces if p.piece.summaries is not None)
                     if first.piece.summaries is not None else BatchRows())
        controls = None if options.quick else [x for p in pieces for x in (p.piece.controls or ())]
        size = pieces[-1].piece.size
        _companions_checked(c, path, summaries, controls, lambda: size)
    opening = replace(first.opening, notes=offsets_notes, last_shown=c.last_shown.get("offsets"))
    _hint(fr, path, KAFKA)
    return VerifyPartial(whole, fr, prev, opening)


def _opening(opened: list[tuple[int, int, bool, int, int, int]], c: _Collector) -> Opening | None:
    if not opened:
        return None
    return Opening(*opened[0], notes=c.count("offsets"), last_shown=c.last_shown.get("offsets"))


def _has_indexes(log: Path) -> bool:
    return any(companion_path(log, s).exists() for s in INDEX_SUFFIXES)


def _check_header(c: _Collector, b: Batch) -> None:
    c.extend(header_errors(b, c.report.path))
    if b.magic >= 2:
        undefined = b.attributes & V2_UNDEFINED_BITS
        if undefined:
            c.note("attributes", b.position + V2_ATTRIBUTES_POSITION, "undefined attribute bits set", found=f"{undefined:#06x}")
        if b.codec != CODEC_PLUGIN and b.attributes & PLUGIN_ID_MASK:
            c.note("attributes", b.position + V2_ATTRIBUTES_POSITION, "plugin id bits set on a non-plugin codec",
                   found=f"{b.attributes:#06x}")
    elif b.attributes & LEGACY_UNDEFINED_BITS:
        c.note("attributes", b.position + LEGACY_ATTRIBUTES_POSITION, "undefined attribute bits set", found=f"{b.attributes:#04x}")


def _check_records(c: _Collector, b: Batch, options: VerifyOptions) -> list[Record] | int | None:
    """Decode and check a batch's records (``kseg.log.checks``, the writers' checks too), with
    verify's notes: the records (legacy, control) or just their count."""
    rc = record_check(b, c.report.path, options.max_decompressed_bytes)
    if b.magic < 2 and b.attributes & CODEC_MASK and isinstance(rc.records, list):
        _check_wrapper(c, b, rc)
    else:
        c.extend(rc.errors)
    return rc.records


def _check_wrapper(c: _Collector, b: Batch, rc: RecordCheck) -> None:
    """A legacy wrapper's errors (inner CRCs, inner offsets) among its notes, in their order."""
    records = rc.records
    assert isinstance(records, list)
    n_crc = len(rc.bad_crcs)
    c.extend(rc.errors[:n_crc])
    for i, r in enumerate(records):
        if r.magic != b.magic:
            c.note("records", b.position, "inner message magic differs from the wrapper's",
                   expected=b.magic, found=r.magic, where=f"inner message {i}")
    offsets = [r.offset for r in records]
    if rc.errors[n_crc:]:
        c.extend(rc.errors[n_crc:])
    elif offsets[-1] - offsets[0] + 1 != len(offsets):
        c.note("offsets", b.position, "holes in the inner offsets (normal after compaction)",
               found=f"{len(offsets)} messages over offsets {offsets[0]}..{offsets[-1]}")
    if b.magic == 1 and b.timestamp_type == CREATE_TIME:
        mx = max(r.stored_timestamp for r in records)
        if mx != b.max_timestamp:
            c.note("timestamps", b.position, "wrapper timestamp is not the max inner timestamp "
                   "(librdkafka writes the first)", expected=mx, found=b.max_timestamp)


OPERATION = Operation("verify", plan, run, merge)
