"""Text for the export report: each partition's file and record count, what damage left out, a summary.

Takes the operation's report (data) and a stream; nothing here reads files.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from kseg.printable import printable

__all__ = ["write_export"]


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}{'es' if what.endswith('ch') else 's'}"


def write_export(report: Any, out: TextIO) -> None:
    """One line per partition (its file, or its first and last), one per batch left out for
    damage (``--on-damage skip``), a summary."""
    for p in report.partitions:
        files = p.files
        to = printable(files[0]) if len(files) == 1 else \
            f"{printable(files[0])} .. {printable(os.path.basename(files[-1]))} ({len(files)} files)"
        out.write(f"{printable(p.source)} -> {to}: {_count(p.records, 'record')} from "
                  f"{_count(p.segments, 'segment')}\n")
        for what in p.damaged:
            out.write(f"  left out: {printable(what)}\n")
        if p.left_out:
            out.write(f"  note: {p.left_out.line()}\n")
    left = sum(len(p.damaged) for p in report.partitions)
    codec = "uncompressed" if report.compression == "none" else report.compression
    tail = f"; {_count(left, 'damaged batch')} left out" if left else ""
    out.write(f"exported {_count(report.records, 'record')} of {_count(len(report.partitions), 'partition')} "
              f"to {printable(report.output)} ({report.format}, {codec}){tail}\n")
