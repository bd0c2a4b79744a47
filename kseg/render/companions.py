"""kafka-dump-log.sh's lines for the companion files (spec §6.4).

The partition's text files (leader-epoch-checkpoint, partition.metadata, and
quorum-state, the KRaft quorum's JSON) are not read by kafka-dump-log.sh; their
lines are kseg's, in the same ``name: value`` style.
"""

from __future__ import annotations

from itertools import islice
from typing import Iterable, Iterator

from kseg.companions.check import DumpIndexFindings, companion_log_path, dump_index_findings, index_sanity_problem
from kseg.companions.kafka_snapshot import kafka_snapshot_problem
from kseg.companions.read import IndexSlots, TxnSlots
from kseg.decoders.jvm import PATH_MAP_ORDERS
from kseg.defaults import KAFKA_MAX_MESSAGE_SIZE
from kseg.errors import DataError
from kseg.kafka_releases import DEFAULT, DumpLogRelease, as_release
from kseg.ops.companion_events import CompanionEvent, IndexEntries
from kseg.printable import printable
from kseg.render.jsonout import encoder

__all__ = ["INDEX_CHUNK", "INDEX_LINES", "index_findings_lines", "index_findings_of", "index_text", "kafka_lines"]

INDEX_CHUNK = 1 << 16  # entries per piece of text: memory stays flat whatever the file's size

# kafka-dump-log.sh's line per entry, as a %-template of the entry's two fields (IndexSlots.rows)
INDEX_LINES = {"index": "offset: %d position: %d\n", "timeindex": "timestamp: %d offset: %d\n"}


def index_text(slots: IndexSlots, line: str, limit: int | None = None) -> Iterator[str]:
    """An index file's entries (the first ``limit``), ``line`` (a %-template of the entry's two fields)
    each, in pieces of INDEX_CHUNK entries (the file read once, front to back)."""
    rows = slots.rows() if limit is None else islice(slots.rows(), limit)
    while True:
        text = "".join(map(line.__mod__, islice(rows, INDEX_CHUNK)))
        if not text:
            return
        yield text


def _optional_long(v: int) -> str:
    return "OptionalLong.empty" if v < 0 else f"OptionalLong[{v}]"


def _scala_option(v: int) -> str:
    return "None" if v < 0 else f"Some({v})"


def snapshot_stop(ev: CompanionEvent, release: DumpLogRelease) -> str | None:
    """What the release's tool says on stderr, instead of a producer snapshot's entries, where its
    reader throws (``kseg.companions.kafka_snapshot``: the tool prints the message and goes on, exit
    0); None for another event, or a snapshot it reads."""
    if ev.kind != "snapshot" or ev.raw is None:
        return None
    return kafka_snapshot_problem(ev.raw, release.snapshot_generated_reader)


def kafka_lines(ev: CompanionEvent, *, index_sanity: bool = False, verify_index: bool = False,
                release: "str | DumpLogRelease" = DEFAULT) -> Iterable[str]:
    """The lines kafka-dump-log.sh prints for a companion file's entries (a .txnindex's as they are
    read, in flat memory). A producer snapshot's entry without batch metadata (a transactions v2
    producer after its epoch bump) ends after lastTimestamp in Kafka 4, with a space in 3.9. For index files,
    ``index_sanity`` plays --index-sanity-check (the verdict instead of the entries; a failing
    check raises DataError) and ``verify_index`` --verify-index-only (no entries)."""
    p = ev.parsed
    release = as_release(release)
    if ev.kind in ("index", "timeindex"):
        if ev.kind == "index" and not p.slots:
            return [f"{ev.path} is empty."]  # the time index has no such line
        if index_sanity:
            problem = index_sanity_problem(p, ev.kind)
            if problem:
                raise DataError(f"corrupt index: {problem}", file=str(ev.path))
            return [f"{ev.path} passed sanity check."]
        if verify_index:
            return []
        if isinstance(ev.entries, IndexEntries):
            return (line for text in index_text(ev.entries.slots, INDEX_LINES[ev.kind])
                    for line in text.splitlines())
        return [" ".join(f"{name}: {value}" for name, value in e.items()) for e in ev.entries]
    if ev.kind == "txnindex":
        # the version as Kafka reads it: the field's first byte, signed (a reader of kseg's own stops where it is not 0)
        return (f"version: {e.version >> 8} producerId: {e.producer_id} firstOffset: {e.first_offset} "
                f"lastOffset: {e.last_offset} lastStableOffset: {e.last_stable_offset}"
                for e in (p.rows() if isinstance(p, TxnSlots) else p.entries))
    if ev.kind == "leader_epoch":
        return [f"epoch: {e.epoch} startOffset: {e.start_offset}" for e in p.entries]
    if ev.kind == "partition_metadata":
        return [f"version: {p.version} topicId: {p.topic_id}"]
    if ev.kind == "offset_checkpoint":
        return [f"topic: {t} partition: {n} offset: {o}" for t, n, o in p.entries]
    if ev.kind == "meta_properties":
        return [" ".join(f"{printable(k)}: {printable(v)}" for k, v in p.items())]  # the file's text, escaped
    if ev.kind == "quorum_state":
        compact = encoder(separators=(",", ":"))  # ASCII: the file's strings escaped, as JSON does
        return [" ".join(f"{k}: {compact(v)}" for k, v in p.items())]
    lines = []
    for e in p.entries:
        first = e.current_txn_first_offset
        line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {_scala_option(first) if release.snapshot_scala_option else _optional_long(first)}")
        if release.snapshot_last_timestamp:
            line += f" lastTimestamp: {e.timestamp}"
        if e.has_batch_metadata or release.snapshot_space_without_batch:
            line += " "
        if e.has_batch_metadata:
            line += (f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                     f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        lines.append(line)
    return lines


def index_findings_of(ev: CompanionEvent, max_message_size: int = KAFKA_MAX_MESSAGE_SIZE) -> DumpIndexFindings | None:
    """Kafka's findings for an .index/.timeindex event against its .log, which the dump reports
    at its end; None for another file, one without its .log, or an empty .index (the tool skips
    it with "is empty.")."""
    slots = ev.parsed
    if not isinstance(slots, IndexSlots) or (slots.kind == "index" and not slots.slots):
        return None
    log = companion_log_path(ev.path)
    return None if log is None else dump_index_findings(slots, log, max_message_size)


def index_findings_lines(found: dict[str, DumpIndexFindings],
                         release: "str | DumpLogRelease" = DEFAULT) -> list[str]:
    """kafka-dump-log.sh's stderr report of its index walks (``dump_index_findings`` per absolute
    path), after every file and before the offset gaps: the .index mismatches, then the .timeindex
    timestamp mismatches, out-of-order timestamps and offsets not found, each a map of paths in the
    order of the release's hash map. Kafka 3.x prepends the .index pairs to a list (reverse order)
    and says "not found in the log."; Kafka 4 keeps the pairs in a map by offset, highest first,
    and names the file."""
    release = as_release(release)
    order = PATH_MAP_ORDERS[release.path_map_order]
    lines: list[str] = []

    def report(field: str, head: str, line: str) -> None:
        paths = [p for p, f in found.items() if getattr(f, field)]
        for path in order(paths):
            pairs = getattr(found[path], field)
            if field == "index_mismatches":
                pairs = (sorted(dict(pairs).items(), reverse=True) if release.index_mismatches_by_offset
                         else list(reversed(pairs)))
            lines.append(head.replace("%s", path))
            lines.extend(line % pair for pair in pairs)

    report("index_mismatches", "Mismatches in :%s", "  Index offset: %d, log offset: %d")
    report("timestamp_mismatches", "Found timestamp mismatch in :%s", "  Index timestamp: %d, log timestamp: %d")
    report("out_of_order", "Found out of order timestamp in :%s",
           "  Index timestamp: %d, Previously indexed timestamp: %d")
    report("not_found", "The following indexed offsets are not found in :%s" if release.not_found_names_file
           else "The following indexed offsets are not found in the log.", "Indexed offset: %d, found log offset: %d")
    return lines
