"""Partitions a writer cannot convert (``--skip-unconvertible``): the one decision every
writer (and its ``kseg spark`` form) takes when a partition of a log directory raises
``UnconvertibleError``: stop (the error, naming the option), or leave that partition out of
the output, record which and why, and go on (the command then exits 1).

Skipping is per partition of a log directory: a single segment or partition folder has
no other partition to write, so its error stops the command either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from kseg.errors import InputError, UnconvertibleError

SKIP_OPTION = "--skip-unconvertible"
SKIP_HINT = f"use {SKIP_OPTION} to write the other partitions without it"


@dataclass(frozen=True)
class Skipped:
    """A partition left out of the output, and why (the error's one line)."""

    partition: str  # its folder name, <topic>-<n>
    why: str

    def as_json(self) -> dict:
        return {"partition": self.partition, "why": self.why}


def skipped_or_raise(partition: str, error: UnconvertibleError, skip: bool) -> Skipped:
    """The partition's ``Skipped`` record when skipping, else ``error`` raised with the hint."""
    if skip:
        return Skipped(partition, str(error))
    if SKIP_OPTION not in error.message:
        error.message = f"{error.message}; {SKIP_HINT}"
        error.args = (error.message,)
    raise error


def refuse_for_one_partition(skip: bool, where: object) -> None:
    """``--skip-unconvertible`` chooses among a log directory's partitions: given one
    partition (a segment, a partition folder), it cannot apply (an honest option)."""
    if skip:
        raise InputError(f"{SKIP_OPTION} leaves out partitions of a log directory; this input is one partition: "
                         f"leave {SKIP_OPTION} out (or give the log directory)", file=str(where))


def skipped_line(skipped: list[Skipped]) -> str:
    """The summary's words for the partitions left out ("" when none were)."""
    if not skipped:
        return ""
    return (f"skipped {len(skipped)} partition(s) it cannot convert: "
            + "; ".join(f"{s.partition} ({s.why})" for s in skipped))


def skipped_json(skipped: list[Skipped]) -> list[dict]:
    return [s.as_json() for s in skipped]
