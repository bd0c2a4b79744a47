"""Text and JSON for a bundle: the files taken, what was redacted, where the bundle went.

Takes the operation's report (data) and a stream; nothing here reads files.
"""

from __future__ import annotations

from typing import Any, TextIO

from kseg.printable import printable
from kseg.render.human import size
from kseg.render.jsonout import dumps

__all__ = ["write_bundle"]


def write_bundle(report: Any, out: TextIO, fmt: str) -> None:
    """One line per file taken (its size, and whether it was redacted), then a summary."""
    doc = report.as_json()
    if fmt == "json":
        out.write(dumps(doc, indent=2) + "\n")
        return
    for m in report.members:
        mark = " (redacted)" if m.redacted else ""
        out.write(f"{printable(m.name)}: {size(m.size)}{mark}\n")
    for note in report.notes:
        out.write(f"note: {printable(note)}\n")
    redacted = sum(m.redacted for m in report.members)
    what = [f"{', '.join(report.redaction['fields'])} redacted"] if report.redaction else []
    if report.secrets.startswith("hidden"):
        what.append("metadata log secrets hidden")
    how = f"; {' and '.join(what)}: {redacted} file(s) rewritten" if what else ""
    out.write(f"{len(report.members)} file(s), {size(sum(m.source_size for m in report.members))} taken{how}; "
              f"bundle {printable(report.output)} ({size(report.size)})\n")
