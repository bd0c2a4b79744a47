"""What a check reports without raising: one ``Finding`` for every check.

``kseg verify`` (logs, companions, snapshots, partition files), the companion
checks in ``kseg.companions.check`` and ``kseg index --check`` all report
``Finding``s, printed the way errors are (``FILE: at byte N (where): what:
expected X, found Y``) and written to JSON reports with ``as_json``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from kseg.errors import expected_found

ERROR = "error"  # the data is wrong: verify exits 1
NOTE = "note"  # a fact Kafka accepts, worth knowing

__all__ = ["ERROR", "NOTE", "Finding"]


@dataclass(frozen=True)
class Finding:
    """One thing a check found, with what an operator needs to find it again: the file, the byte
    position, what was expected and what was there (``line`` writes it as one line)."""

    severity: str  # ERROR or NOTE
    check: str  # what was checked: "crc", "batch", "records", "index", ...
    file: str
    position: int | None  # byte position in ``file``, when there is one
    message: str
    expected: Any = None
    found: Any = None
    where: str | None = None  # batch or record context

    def __str__(self) -> str:
        return self.line()

    def line(self, under: str | None = None) -> str:
        """The finding in one line, its file named first; ``under``: the file a report names once
        above its findings, left out of the line when it is this finding's."""
        parts = [] if under == self.file else [self.file]
        if self.position is not None:
            parts.append(f"at byte {self.position}")
        head = ": ".join(parts)
        if self.where:
            head = f"{head} ({self.where})" if head else f"({self.where})"
        return f"{head}: {self.message}{expected_found(self.expected, self.found)}" if head else \
            f"{self.message}{expected_found(self.expected, self.found)}"

    def as_json(self) -> dict:
        return asdict(self)
