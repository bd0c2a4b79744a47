"""``kseg state`` and ``kseg txn`` for people: readable summaries (``--format json`` is the data itself)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable, TextIO

from kseg.ops.state import StateReport
from kseg.ops.txn import TxnReport
from kseg.printable import printable
from kseg.render.human import duration, value
from kseg.render.jsonout import dumps

__all__ = ["STATE_WRITERS", "iso_ms", "write_state", "write_txn"]


def iso_ms(ms: int | None) -> str:
    """Milliseconds since the epoch as ISO-8601 UTC (``-`` for none)."""
    if ms is None or ms < 0:
        return "-"
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def write_state(report: StateReport, out: TextIO, fmt: str) -> None:
    if fmt == "json":
        out.write(dumps(report.as_json(), indent=2, sort_keys=False) + "\n")
        return
    for p in report.partitions:
        at = f", last offset {p.last_offset} at {iso_ms(p.last_timestamp)}" if p.last_offset is not None else ""
        start = f", from snapshot {p.snapshot}" if p.snapshot else ""
        out.write(f"{printable(p.path)}: {p.records} records applied{at}{printable(start)}\n")
        STATE_WRITERS[p.family](p.state, out)
        for note in p.notes:
            out.write(f"  note: {printable(note)}\n")
        for problem in p.problems:
            out.write(f"  problem: {printable(problem)}\n")


def _groups(state: dict[str, Any], out: TextIO) -> None:
    for name, g in state["groups"].items():
        meta = g.get("metadata")
        head = (f" ({value(meta.get('protocolType'))}, generation {value(meta.get('generation'))}, protocol "
                f"{value(meta.get('protocol'))}, {len(meta.get('members') or [])} member(s))") if meta else ""
        out.write(f"  group {printable(name)}{head}\n")
        for topic, parts in sorted(g.get("offsets", {}).items()):
            for n, v in sorted(parts.items(), key=lambda kv: int(kv[0])):
                out.write(f"    {printable(topic)}-{n}: offset {v['offset']} leader epoch {v.get('leaderEpoch', -1)} "
                          f"committed {iso_ms(v.get('commitTimestamp'))}"
                          + (f" metadata {printable(dumps(v['metadata'], ensure_ascii=False))}" if v.get("metadata") else "") + "\n")
        for slot in g.get("records", {}):
            out.write(f"    {printable(slot)}\n")


def _transactional_ids(state: dict[str, Any], out: TextIO) -> None:
    for tid, v in state["transactional_ids"].items():
        parts = printable(",".join(f"{t['topic']}-{n}" for t in v.get("transactionPartitions") or []
                                   for n in t.get("partitionIds", [])))
        out.write(f"  {printable(tid)}: producer {value(v.get('producerId'))} epoch {value(v.get('producerEpoch'))} "
                  f"{value(v.get('state'))} timeout {duration(v.get('transactionTimeoutMs'))} "
                  f"partitions [{parts}] updated {iso_ms(v.get('transactionLastUpdateTimestampMs'))}\n")


def _share_groups(state: dict[str, Any], out: TextIO) -> None:
    for name, parts in state["share_groups"].items():
        out.write(f"  share group {printable(name)}\n")
        for sp in parts:
            topic = sp.get("topic") or sp["topicId"]
            batches = ", ".join(f"{b['firstOffset']}..{b['lastOffset']} {b['deliveryStateName']} "
                                f"x{b['deliveryCount']}" for b in sp["stateBatches"])
            out.write(f"    {printable(topic)}-{sp['partition']}: start offset {sp['startOffset']} state epoch "
                      f"{sp['stateEpoch']} leader epoch {sp['leaderEpoch']} snapshot epoch {sp['snapshotEpoch']}"
                      + (f" batches [{batches}]" if batches else "") + "\n")


def _remote_partitions(state: dict[str, Any], out: TextIO) -> None:
    for name, p in state["remote_partitions"].items():
        deleted = f", partition {p['deleteState']}" if p.get("deleteState") else ""
        out.write(printable(f"  {name} ({p['topicId']}): {len(p['segments'])} remote segment(s){deleted}") + "\n")
        for sid, seg in p["segments"].items():
            out.write(f"    {printable(sid)}: offsets {seg['startOffset']}..{seg['endOffset']} "
                      f"{seg['segmentSizeInBytes']} bytes {value(seg['state'])}\n")


def _image(state: dict[str, Any], out: TextIO) -> None:
    img = state["image"]
    for name, t in img["topics"].items():
        out.write(printable(f"  topic {name} ({t['topicId']}): {len(t['partitions'])} partition(s)") + "\n")
        for n, p in sorted(t["partitions"].items(), key=lambda kv: int(kv[0])):
            out.write(f"    {n}: leader {value(p.get('leader'))} epoch {value(p.get('leaderEpoch'))} replicas "
                      f"{_ints(p.get('replicas'))} isr {_ints(p.get('isr'))} partition epoch "
                      f"{value(p.get('partitionEpoch'))}\n")
    for bid, b in sorted(img["brokers"].items(), key=lambda kv: int(kv[0])):
        ends = printable(", ".join(f"{e.get('name')}://{e.get('host')}:{e.get('port')}" for e in b.get("endPoints", [])))
        out.write(f"  broker {bid}: epoch {value(b.get('brokerEpoch'))} {'fenced' if b.get('fenced') else 'unfenced'} "
                  f"{ends}\n")
    for name, level in sorted(img["features"].items()):
        out.write(printable(f"  feature {name}={level}") + "\n")
    for rtype, resources in sorted(img["configs"].items()):
        for resource, values in sorted(resources.items()):
            if values:
                out.write(printable(f"  config {rtype} {resource or '<default>'}: "
                                    + ", ".join(f"{k}={v}" for k, v in sorted(values.items()))) + "\n")
    if img["acls"]:
        out.write(f"  {len(img['acls'])} ACL(s)\n")
    for entity, quotas in sorted(img.get("client_quotas", {}).items()):
        if quotas:
            out.write(printable(f"  quota {entity}: " + ", ".join(f"{k}={v}" for k, v in sorted(quotas.items()))) + "\n")
    for user, mechanisms in img.get("scram_users", {}).items():
        out.write(printable(f"  SCRAM user {user}: " + ", ".join(f"{m} iterations {value(c.get('iterations'))}"
                                                            for m, c in mechanisms.items())) + "\n")
    for token in img.get("delegation_tokens", []):
        renewers = ", ".join(token.get("renewers") or []) or "-"
        out.write(printable(f"  delegation token of {token.get('owner')}: renewers {renewers}, expires "
                            f"{iso_ms(token.get('expirationTimestamp'))}") + "\n")


# family -> the lines of one partition's replayed state: one row per family of
# kseg.decoders.FAMILY_TABLE (tests/test_families.py).
STATE_WRITERS: dict[str, Callable[[dict[str, Any], TextIO], None]] = {
    "offsets": _groups, "transactions": _transactional_ids, "metadata": _image,
    "share-group-state": _share_groups, "remote-log-metadata": _remote_partitions,
}


def _ints(xs: Any) -> str:
    return "null" if xs is None else "[" + ", ".join(str(x) for x in xs) + "]"


def write_txn(report: TxnReport, out: TextIO, fmt: str) -> None:
    if fmt == "json":
        out.write(dumps(report.as_json(), indent=2) + "\n")
        return
    for p in report.partitions:
        counts = {s: sum(1 for t in p.transactions if t.state == s) for s in ("committed", "aborted", "open")}
        out.write(f"{printable(p.path)}: {counts['committed']} committed, {counts['aborted']} aborted, {counts['open']} "
                  f"open; last stable offset {p.last_stable_offset}, log end {p.log_end_offset}\n")
        for t in p.transactions:
            tid = f" ({printable(t.transactional_id)})" if t.transactional_id else ""
            span = f"{t.first_offset}..{t.marker_offset if t.marker_offset is not None else t.last_offset}"
            took = f", took {duration(t.duration_ms)}" if t.duration_ms is not None else ""
            out.write(f"  producer {t.producer_id}{tid} epoch {t.producer_epoch}: {t.state} offsets {span}, "
                      f"{t.records} record(s), started {iso_ms(t.start_ms)}{took}\n")
        for t in p.hanging:
            age = report.now_ms - t.start_ms
            out.write(f"  hanging: producer {t.producer_id} open since offset {t.first_offset} for {duration(age)} "
                      f"(> {duration(report.max_timeout_ms)}); end it with: {printable(p.abort_command(t))}\n")
        for f in p.findings:
            out.write(f"  {f.severity}: {printable(f)}\n")
    hanging = sum(len(p.hanging) for p in report.partitions)
    errors = sum(1 for p in report.partitions for f in p.findings if f.severity == "error")
    out.write(f"{len(report.partitions)} partition(s) with transactions, {hanging} hanging, {errors} problem(s)\n")
