"""Reading ``kseg verify``'s text report in tests: it names each file once, in a header line
(``PATH: ok (...)``), with that file's findings indented under it (``  note: at byte ...``)."""

from __future__ import annotations

import re


def with_paths(report: str) -> str:
    """The report with each finding's file put back into its line (``  note: PATH: ...``)."""
    out, path = [], ""
    for line in report.splitlines():
        finding = re.match(r"  (note|error): (.*)", line)
        if finding and path:
            line = f"  {finding.group(1)}: {path}: {finding.group(2)}"
        elif not line.startswith(" "):
            path = line.rsplit(": ", 1)[0] if ": " in line else ""
        out.append(line)
    return "\n".join(out) + "\n"
