"""Text and JSON for the salvage report: every region left out, with its byte and offset range.

Takes the operation's report (data) and a stream; nothing here reads files. Byte and offset
ranges in the text are inclusive at both ends (JSON: ``start`` inclusive, ``end`` exclusive).
"""

from __future__ import annotations

from typing import IO, Any, TextIO

from kseg.printable import printable
from kseg.render.dump import record_json
from kseg.render.jsonout import dumps
from kseg.render.payload import BUILTIN

__all__ = ["CRC_FAILED_MARK", "lost_offsets_text", "write_crc_failed", "write_salvage"]

# The field that marks every line of --keep-crc-failed's file: records no CRC vouches for.
CRC_FAILED_MARK = "crc_failed"


def write_crc_failed(report: Any, out: IO[bytes]) -> None:
    """The records of the CRC-failed batches salvage did not keep, one JSON object per line: dump's
    jsonl record line (utf8 payloads), marked, with the segment, the batch's byte position and
    both CRCs."""
    utf8 = BUILTIN["utf8"]
    for c in report.crc_failed or []:
        extra = {CRC_FAILED_MARK: True, "file": c.file, "crc_stored": c.crc_stored, "crc_computed": c.crc_computed}
        for r in c.records:
            out.write((dumps({**record_json(c.batch, r, utf8, utf8), **extra}, ensure_ascii=False) + "\n")
                      .encode("utf-8", "backslashreplace"))


def lost_offsets_text(r: Any) -> str:
    """What a lost range may have held, from the kept batches on either side."""
    first, last = r.first_offset, r.last_offset
    if first is None:
        return "offsets unknown"
    if last is None:
        return (f"offsets from {first} on lost (no batch after it; zeros here may also be preallocated space)"
                if r.reason == "zeros" else f"offsets from {first} on lost (no batch after it says where they end)")
    if last < first:
        return "no offsets lost (the batches on either side are consecutive)"
    if last == first:
        return f"offset {first} lost"
    return f"offsets {first}–{last} lost"


def _kept(s: Any) -> str:
    offsets = ("no offsets" if s.first_offset is None else
               f"offset {s.first_offset}" if s.first_offset == s.last_offset else
               f"offsets {s.first_offset}..{s.last_offset}")
    return f"{s.kept_batches} batches, {s.kept_records} records, {s.kept_bytes} of {s.size} bytes ({offsets})"


def write_salvage(report: Any, out: TextIO, fmt: str) -> None:
    """A salvage report: each segment's lost ranges in detail, what was kept, a summary."""
    doc = report.as_json()
    if fmt == "json":
        out.write(dumps(doc, indent=2) + "\n")
        return
    for p in report.partitions:
        for s in p.segments:
            name = printable(s.file)
            if not s.lost:
                out.write(f"{name}: kept whole: {_kept(s)}\n")
                continue
            for r in s.lost:
                claimed = (f"; its header claims offsets {r.claimed[0]}–{r.claimed[1]}"
                           if r.claimed and r.claimed[1] > r.claimed[0] else
                           f"; its header claims offset {r.claimed[0]}" if r.claimed else "")
                out.write(f"{name}: {lost_offsets_text(r)}, bytes {r.start}–{r.end - 1} ({r.bytes} bytes, "
                          f"{r.reason})\n  why: {printable(r.message)}{claimed}\n")
            out.write(f"{name}: kept {_kept(s)}\n")
        if p.leader_epochs is not None:
            epochs = ", ".join(f"epoch {e} from offset {o}" for e, o in p.leader_epochs) or "no epoch (no v2 batch kept)"
            snaps = ", ".join(f"{name} ({n} producer{'s' if n != 1 else ''})" for name, n in p.snapshots)
            out.write(f"{printable(p.path)}: rebuilt from the batches kept: leader-epoch-checkpoint ({epochs})"
                      + (f"; producer snapshots {snaps}" if snaps else "") + "\n")
        if p.damaged_files:
            out.write(f"{printable(p.path)}: {p.damaged_files.line()}\n")
    if report.damaged_files:
        out.write(f"{printable(report.input)}: {report.damaged_files.line()}\n")
    where = "dry run, nothing written" if report.dry_run else f"written to {printable(report.output)}"
    lost = (f"{doc['ranges_lost']} range(s) lost, {doc['bytes_lost']} bytes" if doc["ranges_lost"]
            else "nothing lost")
    if "crc_failed_batches" in doc:
        lost += (f" ({doc['crc_failed_batches']} batch(es) that fail their CRC but read, {doc['crc_failed_records']} "
                 "record(s), written apart, marked crc_failed, not kept)")
    out.write(f"{lost}; kept {doc['batches_kept']} batches, {doc['records_kept']} records ({where})\n")
