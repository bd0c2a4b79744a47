"""The records a fixture must hold, as text: a fixture's files checked against JSON lines in
dump's contract (``kseg dump -r --format jsonl``), so that what a fixture means is reviewed
as text beside its bytes.

Rules: only what the expectation says is compared. A record line compares its offset and,
when it gives them, its timestamp, key, value and headers; a batch line compares the batch
fields it gives (``base_offset``, ``last_offset``, ``count``, ``magic``, ``codec``,
``timestamp_type``, the producer fields and flags). Positions, sizes and CRCs are left to
``verify``. Each difference is a finding with the expectation's line number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from kseg.errors import KsegError
from kseg.findings import ERROR, Finding
from kseg.log.records import batch_records
from kseg.log.segment import Segment, partition_segments
from kseg.model import Batch, Record
from kseg.ops.build import BatchLine, parse_lines
from kseg.ops.verify import FileReport

CHECK = "expect"
_BATCH_FIELDS = ("base_offset", "last_offset", "count", "magic", "codec", "timestamp_type", "producer_id",
                 "producer_epoch", "base_sequence", "partition_leader_epoch", "is_transactional", "is_control")


def _actual(paths: Iterable[Path], limit: int) -> Iterator[tuple[str, Batch, list[Record] | KsegError]]:
    for path in paths:
        segs = partition_segments(path) if path.is_dir() else [path]
        for seg in segs:
            for b in Segment(seg).batches():
                try:
                    yield str(seg), b, batch_records(b, limit=limit)
                except KsegError as e:
                    yield str(seg), b, e


def _batch_fields(b: Batch, records: list[Record]) -> dict[str, Any]:
    legacy_wrapper = b.magic < 2 and b.is_compressed
    out = {"base_offset": records[0].offset if legacy_wrapper and records else b.base_offset,
           "last_offset": b.last_offset, "count": len(records), "magic": b.magic, "codec": b.codec_name,
           "timestamp_type": b.timestamp_type_name}
    if b.magic >= 2:
        out.update(producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
                   partition_leader_epoch=b.partition_leader_epoch, is_transactional=b.is_transactional,
                   is_control=b.is_control)
    return out


def _record_diff(want: Record, fields: dict, got: Record) -> list[tuple[str, Any, Any]]:
    out = []
    if want.offset != got.offset:
        out.append(("offset", want.offset, got.offset))
    if "timestamp" in fields and want.timestamp != got.timestamp:
        out.append(("timestamp", want.timestamp, got.timestamp))
    for name in ("key", "value"):
        if (name in fields or name + "_b64" in fields) and getattr(want, name) != getattr(got, name):
            out.append((name, getattr(want, name), getattr(got, name)))
    if "headers" in fields and tuple(want.headers) != tuple(got.headers):
        out.append(("headers", [tuple(h) for h in want.headers], [tuple(h) for h in got.headers]))
    return out


def expect_findings(paths: Iterable[Path], lines: Iterable[str | bytes | dict], *, payload: str = "utf8",
                    source: str = "expected", limit: int = 256 << 20) -> list[Finding]:
    """What differs between the records of ``paths`` (segments or partition folders, in order)
    and the expectation's lines; an empty list when the files hold what the lines say."""
    findings: list[Finding] = []

    def differ(file: str, pos: int | None, line: int, what: str, want: Any, got: Any) -> None:
        findings.append(Finding(ERROR, CHECK, file, pos, f"{what} is not what {source} says",
                                expected=_show(want), found=_show(got), where=f"{source} line {line}"))

    wanted: list[tuple[int, Record, dict]] = []
    batch_lines: list[BatchLine] = []
    for bl in parse_lines(lines, payload, source):
        if bl.fields.get("type") == "batch":
            batch_lines.append(bl)
        wanted += list(zip(bl.record_lines, bl.records, bl.record_fields))
    got: list[tuple[str, Batch, Record]] = []
    batches = []
    for file, b, recs in _actual([Path(p) for p in paths], limit):
        if isinstance(recs, KsegError):
            findings.append(Finding(ERROR, CHECK, file, b.position, f"cannot read the records to compare: {recs}"))
            continue
        batches.append((file, b, recs))
        got += [(file, b, r) for r in recs]
    for bl, (file, b, recs) in zip(batch_lines, batches):
        actual = _batch_fields(b, recs)
        for name in _BATCH_FIELDS:
            if name in bl.fields and bl.fields[name] != actual.get(name):
                differ(file, b.position, bl.line, f"batch {name}", bl.fields[name], actual.get(name))
    if len(batch_lines) > len(batches):
        differ(str(next(iter(paths), "")), None, batch_lines[len(batches)].line, "the number of batches",
               len(batch_lines), len(batches))
    for (line, want, fields), (file, b, r) in zip(wanted, got):
        for what, w, g in _record_diff(want, fields, r):
            differ(file, b.position, line, f"record {want.offset}: {what}", w, g)
    if len(wanted) != len(got):
        more = wanted[len(got)][0] if len(wanted) > len(got) else (wanted[-1][0] + 1 if wanted else 1)
        file = got[len(wanted)][0] if len(got) > len(wanted) else (got[-1][0] if got else "")
        differ(file, None, more, "the number of records", len(wanted), len(got))
    return findings


def expected_report(paths: list[Path], expectation: Path) -> FileReport:
    """``kseg verify --expect``: the comparison as one more file of verify's report (the
    expectation's), its differences as errors; an unreadable expectation is a usage error."""
    try:
        lines = expectation.read_bytes().splitlines()
    except OSError as e:
        raise KsegError(f"{expectation}: cannot read the expectation: {e.strerror or e}") from None
    return FileReport(str(expectation), kind=CHECK,
                      problems=expect_findings(paths, lines, source=expectation.name))


def _show(v: Any) -> str:
    if isinstance(v, bytes):
        try:
            return '"' + v.decode("utf-8") + '"'
        except UnicodeDecodeError:
            return v.hex()
    return "null" if v is None else str(v)


__all__ = ["CHECK", "expect_findings", "expected_report"]
