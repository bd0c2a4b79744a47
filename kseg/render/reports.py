"""Summaries of the commands that check or write: verify reports, job and compaction lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

from kseg.findings import ERROR
from kseg.printable import printable
from kseg.render.ci_reports import write_ci_report
from kseg.render.jsonout import dumps

# kseg verify --format: text and json here, the CI formats in kseg.render.ci_reports.
VERIFY_FORMATS = ("text", "json", "junit", "sarif", "github")

__all__ = ["VERIFY_FORMATS", "compact_json", "compact_line", "job_line", "verify_json", "write_verify"]


def verify_json(report: Any) -> dict[str, Any]:
    """The JSON document of ``kseg verify --format json`` (and the Spark report's header)."""
    return {
        "ok": report.ok,
        "errors": report.error_count,
        "files": [
            {"file": f.path, "kind": f.kind, "ok": f.ok, "batches": f.batches, "records": f.records,
             "bytes": f.bytes, "problems": [p.as_json() for p in f.problems],
             "suppressed_notes": f.suppressed_notes}
            for f in report.files
        ],
    }


def write_verify(report: Any, out: TextIO, fmt: str, verbose: bool = True, errors_only: bool = False,
                 notes: bool = True) -> None:
    """A verify report as text (files with findings, or every file when verbose, then a summary), JSON,
    or a CI format (JUnit XML, SARIF, GitHub Actions annotations). ``errors_only``: only the files
    with errors and their errors; ``notes=False``: no notes. The summary line is always written."""
    if fmt == "json":
        out.write(dumps(verify_json(report), indent=2) + "\n")
        return
    if fmt != "text":
        write_ci_report(report, out, fmt)
        return
    notes = notes and not errors_only
    for f in report.files:
        shown = [p for p in f.problems if notes or p.severity == ERROR]
        hidden_notes = f.suppressed_notes if notes else 0
        if errors_only and f.ok:
            continue
        if not verbose and not shown and not hidden_notes:
            continue
        status = "ok" if f.ok else f"{len(f.errors)} error(s)"
        detail = f"{f.batches} batches, {f.records} records, {f.bytes} bytes" if f.kind == "log" else f.kind
        out.write(f"{printable(f.path)}: {status} ({detail})\n")
        for p in shown:
            out.write(f"  {p.severity}: {printable(p.line(under=f.path))}\n")  # the path is the header's
        if hidden_notes:
            out.write(f"  note: {hidden_notes} more notes not shown\n")
    total = len(report.files)
    bad = sum(1 for f in report.files if not f.ok)
    batches = sum(f.batches for f in report.files)
    records = sum(f.records for f in report.files)
    out.write(f"{total} file(s) checked, {bad} with errors, {report.error_count} error(s) in all "
              f"({batches} batches, {records} records)\n")


def job_line(result: Any, output: Path) -> str:
    """What a writing command did, in one line."""
    line = result.line() if hasattr(result, "line") else result.summary.line()
    return f"kseg: wrote {len(result.segments)} segment(s) under {output}: {line}"


def compact_line(result: Any, dry_run: bool, output: Path | None) -> str:
    where = "dry run" if dry_run else f"wrote {len(result.segments)} segment(s) under {output}"
    copied = getattr(result, "copied_partitions", 0)
    others = f", {copied} copied as they are (other topics, a KRaft log)" if copied else ""
    line = f"kseg: compact ({where}, {result.partitions} partition(s){others}): {result.stats.line()}"
    copied_damage = getattr(result, "copied_damage", None)
    if copied_damage:
        line += f"; in the partitions copied as they are: {copied_damage.line()}"
    files = getattr(result, "damaged_files", None)
    if files:
        line += f"; {files.line()}"
    return line


def compact_json(result: Any, now_ms: int) -> str:
    copied_damage = getattr(result, "copied_damage", None)
    extra = {"copied_damaged": copied_damage.as_json()} if copied_damage else {}
    files = getattr(result, "damaged_files", None)
    if files:
        extra["damaged_files"] = files.as_json()
    return dumps({"partitions": result.partitions, "copied_partitions": getattr(result, "copied_partitions", 0),
                       "now_ms": now_ms, **result.stats.as_json(), **extra})
