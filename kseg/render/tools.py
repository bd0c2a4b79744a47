"""Text and JSON for the operator tools: repair, diff, find and stats reports.

Each writer takes the operation's report (data) and a stream; nothing here reads files.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

__all__ = ["write_repair"]


def _offsets(first: int | None, last: int | None) -> str:
    if first is None:
        return "no offsets readable"
    if last is None or last == first:
        return f"offset {first}"
    return f"offsets {first}..{last}"


def write_repair(report: Any, out: TextIO, fmt: str) -> None:
    """A repair report: one line per segment, the cut in detail, a summary."""
    doc = report.as_json()
    if fmt == "json":
        out.write(json.dumps(doc, indent=2) + "\n")
        return
    for p in report.partitions:
        for s in p.segments:
            kept = (f"{s.kept_batches} batches, {s.kept_records} records, {s.kept_bytes} bytes "
                    f"({_offsets(s.first_offset, s.last_offset)})")
            if s.cut is None:
                out.write(f"{s.file}: kept whole: {kept}\n")
                continue
            c = s.cut
            approx = "" if c.exact else "at least "
            lost = (f"{c.bytes_lost} bytes, {approx}{c.records_lost} records in {c.batches_lost} batches "
                    f"({_offsets(c.first_offset_lost, c.last_offset_lost)})")
            if s.action == "deleted":
                out.write(f"{s.file}: deleted: {lost}\n  why: {c.message}\n")
            else:
                out.write(f"{s.file}: truncated at byte {c.position} ({c.reason}): kept {kept}; lost {lost}\n"
                          f"  why: {c.message}\n")
        if p.epochs_dropped:
            out.write(f"{p.path}: leader-epoch-checkpoint entries dropped (start at or past the new log end "
                      f"{p.log_end_offset}): {', '.join(f'epoch {e} at {o}' for e, o in p.epochs_dropped)}\n")
        for snap in p.snapshots_dropped:
            out.write(f"{snap}: producer snapshot past the new log end {p.log_end_offset}: dropped\n")
    where = "dry run, nothing written" if report.dry_run else f"written to {report.output}"
    out.write(f"{doc['segments_truncated']} segment(s) truncated, {doc['segments_deleted']} deleted, "
              f"{doc['bytes_lost']} bytes and {doc['records_lost']} records lost ({where})\n")
