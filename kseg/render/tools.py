"""Text and JSON for the operator tools: repair, diff, find and stats reports.

Each writer takes the operation's report (data) and a stream; nothing here reads files.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone
from typing import Any, TextIO

from kseg.log.listing import LIVE, REPLICA_KINDS
from kseg.printable import printable
from kseg.render.jsonout import dumps
from kseg.render.lines import text_escape
from kseg.render.human import duration, rate, size
from kseg.render.payload import Decoder
from kseg.render.tables import tabulate
from kseg.render.values import header_json, header_key_bytes, payload_text, put_payload

__all__ = ["FindWriter", "find_summary", "record_text", "record_view", "stats_json", "write_diff", "write_repair", "write_stats"]


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
        out.write(dumps(doc, indent=2) + "\n")
        return
    for p in report.partitions:
        for s in p.segments:
            kept = (f"{s.kept_batches} batches, {s.kept_records} records, {s.kept_bytes} bytes "
                    f"({_offsets(s.first_offset, s.last_offset)})")
            if s.cut is None:
                out.write(f"{printable(s.file)}: kept whole: {kept}\n")
                continue
            c = s.cut
            approx = "" if c.exact else "at least "
            lost = (f"{c.bytes_lost} bytes, {approx}{c.records_lost} records in {c.batches_lost} batches "
                    f"({_offsets(c.first_offset_lost, c.last_offset_lost)})")
            if s.action == "deleted":
                out.write(f"{printable(s.file)}: deleted: {lost}\n  why: {printable(c.message)}\n")
            else:
                out.write(f"{printable(s.file)}: truncated at byte {c.position} ({c.reason}): kept {kept}; lost {lost}\n"
                          f"  why: {printable(c.message)}\n")
        if p.epochs_dropped:
            out.write(f"{printable(p.path)}: leader-epoch-checkpoint entries dropped (start at or past the new log end "
                      f"{p.log_end_offset}): {', '.join(f'epoch {e} at {o}' for e, o in p.epochs_dropped)}\n")
        if p.epochs_added:
            out.write(f"{printable(p.path)}: leader-epoch-checkpoint entries added from the batches kept, as recovery "
                      f"assigns them: {', '.join(f'epoch {e} at {o}' for e, o in p.epochs_added)}\n")
        if p.epochs_created:
            out.write(f"{printable(p.path)}: no leader-epoch-checkpoint: written from the batches kept, as recovery "
                      f"does: {', '.join(f'epoch {e} at {o}' for e, o in p.epochs_created)}\n")
        for snap in p.snapshots_dropped:
            out.write(f"{printable(snap)}: producer snapshot past the new log end {p.log_end_offset}: dropped\n")
        for snap, why in p.snapshots_corrupt:
            out.write(f"{printable(snap)}: producer snapshot the broker cannot read ({printable(why)}): dropped, as the "
                      "broker deletes it and rebuilds producer state from the log\n")
        if p.epochs_rebuilt is not None:
            epochs = ", ".join(f"epoch {e} from offset {o}" for e, o in p.epochs) or "no epoch (no v2 batch kept)"
            out.write(f"{printable(p.path)}: leader-epoch-checkpoint the broker cannot read ({printable(p.epochs_rebuilt)}): "
                      f"written anew from the batches kept ({epochs})\n")
        if p.damaged_files:
            out.write(f"{printable(p.path)}: {p.damaged_files.line()}\n")
    if report.damaged_files:
        out.write(f"{printable(report.input)}: {report.damaged_files.line()}\n")
    where = "dry run, nothing written" if report.dry_run else f"written to {printable(report.output)}"
    out.write(f"{doc['segments_truncated']} segment(s) truncated, {doc['segments_deleted']} deleted, "
              f"{doc['bytes_lost']} bytes and {doc['records_lost']} records lost ({where})\n")


def record_view(r: Any, key_decoder: Decoder, value_decoder: Decoder) -> dict[str, Any]:
    """A record as JSON: offset, timestamp, key, value, headers, encoded as dump's jsonl does
    (``key_b64``/``value_b64`` for bytes that are not UTF-8; ``*_error`` for what a decoder could not decode)."""
    out: dict[str, Any] = {"offset": r.offset, "timestamp": r.timestamp}
    put_payload(out, "key", r.key, key_decoder)
    put_payload(out, "value", r.value, value_decoder)
    out["headers"] = [header_json(h.key, h.value, value_decoder) for h in r.headers]
    return out


def record_text(r: Any, key_decoder: Decoder, value_decoder: Decoder) -> str:
    """A record as text, keys and values whole and escaped as dump's text format escapes them."""
    if r is None:
        return "(absent)"
    hdrs = ", ".join(f"{text_escape(header_key_bytes(h.key))}={payload_text(h.value, value_decoder, None)}"
                     for h in r.headers)
    return (f"timestamp {r.timestamp} key {payload_text(r.key, key_decoder, None)} "
            f"value {payload_text(r.value, value_decoder, None)}" + (f" headers [{hdrs}]" if hdrs else ""))


def _dash(v: Any) -> str:
    return "-" if v is None else str(v)


def _ranges(side: Any) -> str:
    if not side.only:
        return "nothing"
    return "; ".join(f"offsets {r.first}..{r.last} ({r.records} records in {r.batches} batches)" for r in side.only)


def diff_json(report: Any, key_decoder: Decoder, value_decoder: Decoder) -> dict[str, Any]:
    parts = []
    for p in report.partitions:
        d = p.as_json()
        if p.records:
            d["records"] = [{"offset": r.offset,
                             "a": record_view(r.a, key_decoder, value_decoder) if r.a else None,
                             "b": record_view(r.b, key_decoder, value_decoder) if r.b else None}
                            for r in p.records]
        parts.append(d)
    return {"a": report.a, "b": report.b, "identical": report.identical,
            "different": sum(1 for p in report.partitions if not p.identical), "partitions": parts}


def write_diff(report: Any, out: TextIO, fmt: str, key_decoder: Decoder, value_decoder: Decoder) -> None:
    """A diff report: per partition, identical or where and how the copies differ."""
    if fmt == "json":
        out.write(dumps(diff_json(report, key_decoder, value_decoder), indent=2) + "\n")
        return
    for p in report.partitions:
        compared = f"{p.equal_batches} equal batches, {p.equal_records} equal records"
        if p.identical:
            out.write(f"{printable(p.name)}: identical ({compared})\n")
        else:
            at = f" at offset {p.diverge_offset}" if p.diverge_offset is not None else ""
            out.write(f"{printable(p.name)}: {p.kind}{at} ({compared})\n")
            for label, side in (("A", p.a), ("B", p.b)):
                if not side.path:
                    out.write(f"  {label}: absent\n")
                    continue
                span = (f"offsets {side.first_offset}..{side.next_offset - 1}" if side.first_offset is not None
                        else "empty")
                epochs = ""
                if p.diverge_offset is not None:
                    epochs = (f", leader epoch at {p.diverge_offset}: batch {_dash(side.epoch_at_divergence)}, "
                              f"checkpoint {_dash(side.checkpoint_epoch_at_divergence)}")
                only = "from there on" if p.kind == "diverged" else "only here"
                out.write(f"  {label}: {printable(side.path)}: {span}, {side.records} records{epochs}; {only}: "
                          f"{_ranges(side)}\n")
            out.write(f"  why: {printable(p.explanation())}\n")
        for side_label, side in (("A", p.a), ("B", p.b)):
            for note in side.notes:
                out.write(f"  {side_label} note: {printable(note)}\n")
            for prob in side.problems:
                out.write(f"  {side_label} problem: {printable(prob)}\n")
        for r in p.records:
            out.write(f"  offset {r.offset}: A {record_text(r.a, key_decoder, value_decoder)} | "
                      f"B {record_text(r.b, key_decoder, value_decoder)}\n")
        if p.records_differing > len(p.records):
            out.write(f"  ... {p.records_differing - len(p.records)} more differing records\n")
    n = len(report.partitions)
    diff = sum(1 for p in report.partitions if not p.identical)
    out.write(f"{n} partition(s) compared: {n - diff} identical, {diff} different\n")


class FindWriter:
    """Matches of ``kseg find`` as text lines or JSON lines, written as they come. A text line
    names the record's partition as ``topic-n``; with ``folders`` (several paths searched: two
    log directories may hold the same partition) by its folder's path. JSON names the file."""

    def __init__(self, out: TextIO, fmt: str, key_decoder: Decoder, value_decoder: Decoder, *,
                 folders: bool = False):
        self.out, self.fmt, self.kd, self.vd, self.folders = out, fmt, key_decoder, value_decoder, folders

    def __call__(self, m: Any) -> None:
        b = m.batch
        if self.fmt == "json":
            doc = {"topic": m.topic, "partition": m.partition, **record_view(m.record, self.kd, self.vd),
                   "timestamp_type": b.timestamp_type_name, "file": m.file, "batch_position": b.position}
            if b.magic >= 2:
                doc.update(producer_id=b.producer_id, is_transactional=b.is_transactional)
            self.out.write(dumps(doc) + "\n")
            return
        if m.topic is None:
            where = m.file
        else:
            where = m.file.rsplit("/", 1)[0] if self.folders else f"{m.topic}-{m.partition}"
        where = printable(where)
        self.out.write(f"{where} offset {m.record.offset} {record_text(m.record, self.kd, self.vd)}\n")


def find_summary(st: Any) -> str:
    """One stderr line: matches, and how much the filters and indexes spared (after a
    ``kseg: note:`` line for each segment renamed, deleted or changed during the run)."""
    notes = "".join(f"kseg: note: {printable(n)}\n" for n in getattr(st, "notes", ()))
    line = notes + (f"kseg: {st.matches} match(es) in {len(st.partitions)} partition(s); {st.records} records decoded; "
            f"{st.batches_skipped} of {st.batches} batches ruled out before decoding; "
            f"{st.segments_skipped} of {st.segments} segments skipped and {st.seeks} entered by index")
    if st.problems:
        line += f"; {len(st.problems)} problem(s): " + "; ".join(printable(x) for x in st.problems[:5])
    return line


def stats_json(report: Any, segments: bool = True) -> dict[str, Any]:
    """The document of ``kseg stats --format json``: the total, then per topic, partition and segment."""
    def part(p: Any) -> dict[str, Any]:
        d = {"path": p.path, "topic": p.topic, "partition": p.partition,
             **_replica_key(p), **p.acc.as_json(),
             "first_dirty_offset": p.first_dirty_offset, "dirty_ratio": p.dirty_ratio, "notes": list(p.notes)}
        if segments:
            d["segments"] = [{"file": s.file, "base_offset": s.base_offset, "first_offset": s.first_offset,
                              "last_offset": s.last_offset,
                              **{k: v for k, v in s.acc.as_json().items() if k != "timeline"}}
                             for s in p.segments]
        return d

    return {"ok": report.ok, **report.acc.as_json(),
            "topics": [{"topic": t.topic, **_replica_key(t), "partitions_count": len(t.partitions), **t.acc.as_json(),
                        "partitions": [part(p) for p in t.partitions]} for t in report.topics]}


def _replica_key(row: Any) -> dict[str, str]:
    """``{"replica": kind}`` for a renamed replica's partition or topic row, nothing for a live one."""
    return {"replica": row.replica} if row.replica != LIVE else {}


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def _mix(d: dict[Any, int], total: int) -> str:
    return ", ".join(f"{k} {v * 100 / total:.0f}%" for k, v in sorted(d.items(), key=lambda kv: -kv[1])) or "-"


STATS_COLUMNS = ("partition", "records", "batches", "size", "codecs", "magic", "ratio", "first", "last", "span",
                 "records/s", "keys", "tombstones", "producers", "txn c/a/o", "removable", "dirty")


def _stats_row(name: str, a: Any, dirty: float | None = None) -> list[str]:
    """One row of the stats table: the exact counts, readable sizes, times and rates."""
    span_ms = (a.max_timestamp - a.min_timestamp) if a.min_timestamp is not None and a.max_timestamp else None
    per_s = rate(a.records * 1000 / span_ms) if span_ms else "-"
    comp = a.compactable()
    return [name, str(a.records), str(a.batches), size(a.bytes), _mix(a.bytes_by_codec, a.bytes or 1),
            _mix(a.bytes_by_magic, a.bytes or 1), f"{a.compression_ratio:.2f}x" if a.compression_ratio else "-",
            _time(a.min_timestamp), _time(a.max_timestamp), duration(span_ms) if span_ms is not None else "-", per_s,
            f"~{min(a.keys.count(), a.keyed)}", str(a.tombstones), str(len(a.producers)),
            f"{a.committed}/{a.aborted}/{a.open_transactions}",
            f"~{comp['records_removable_estimate']} ({comp['fraction_removable_estimate'] * 100:.0f}%)",
            f"{dirty:.2f}" if dirty is not None else "-"]


def write_stats(report: Any, out: TextIO, fmt: str, segments: bool = False) -> None:
    """Stats as a text table (a row per partition, then the total; with ``segments`` a second
    table of segments), each partition's notes and problems below it, or as JSON."""
    if fmt == "json":
        out.write(dumps(stats_json(report), indent=2) + "\n")
        return
    live = [p for t in report.topics if t.replica == LIVE for p in t.partitions]
    replicas = [p for t in report.replicas for p in t.partitions]  # after the total, which leaves them out
    parts = live + replicas
    rows = [_stats_row(partition_name(p), p.acc, p.dirty_ratio) for p in live]
    rows.append(_stats_row(f"total ({len(live)} partitions)", report.acc))
    rows += [_stats_row(partition_name(p), p.acc, p.dirty_ratio) for p in replicas]
    out.write(tabulate(rows, headers=STATS_COLUMNS, tablefmt="simple", disable_numparse=True) + "\n")
    if segments:
        seg_rows = [[partition_name(p), s.file.rsplit("/", 1)[-1], f"{s.first_offset}..{s.last_offset}",
                     str(s.acc.records), str(s.acc.batches), size(s.acc.bytes)] for p in parts for s in p.segments]
        out.write("\n" + tabulate(seg_rows, headers=("partition", "segment", "offsets", "records", "batches", "size"),
                                  tablefmt="simple", disable_numparse=True) + "\n")
    for p in parts:
        lines = [f"note: {printable(n)}" for n in p.notes]  # renamed, deleted or changed during the run
        lines += [f"problem: {printable(x)}" for x in p.acc.problems]
        if p.acc.problem_count > len(p.acc.problems):
            lines.append(f"... {p.acc.problem_count - len(p.acc.problems)} more problems")
        if lines:
            out.write(f"{printable(p.path)}:\n" + "".join(f"  {x}\n" for x in lines))
    problems = report.acc.problem_count + sum(t.acc.problem_count for t in report.replicas)
    counts = Counter(p.replica for p in replicas)
    aside = "".join(f", {counts[kind]} {kind}" for kind in REPLICA_KINDS if counts[kind])
    out.write(f"{len(live)} partition(s), {report.acc.records} records, {size(report.acc.bytes)}"
              f"{f' (renamed replicas not counted: {aside[2:]})' if aside else ''}; {problems} problem(s)\n")


def partition_name(p: Any) -> str:
    """``topic-n``, with a renamed replica's kind (``topic-n (delete)``), else the path."""
    if p.topic is not None and p.partition is not None:
        return f"{p.topic}-{p.partition}" + (f" ({p.replica})" if p.replica != LIVE else "")
    return p.path
