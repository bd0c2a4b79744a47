"""``kseg state``: replay the broker's own topics up to a point and return what they add up to.

- ``__consumer_offsets``: per group, the committed offset of each topic-partition
  (with metadata, leader epoch and commit time), the classic group's metadata and
  members, and the KIP-848 consumer-group records, latest per key; transactional
  offset commits count once their COMMIT marker is read (aborted ones never).
- ``__transaction_state``: per transactional id, its latest TransactionLogValue.
- ``__share_group_state``: per share group and topic-partition, the share-partition's
  state as the share coordinator replays it: a ShareSnapshot replaces it, a
  ShareUpdate is merged in (start offset and leader epoch when set, the state
  batches combined: per offset the higher delivery count, then state, wins;
  offsets before the start offset dropped; equal neighbours joined);
- ``__remote_log_metadata``: per topic-partition, every remote segment with its
  offsets, size, leader epochs and latest state (COPY_SEGMENT_STARTED ...
  DELETE_SEGMENT_FINISHED), and the partition's delete state if any;
- the KRaft metadata log (and its snapshots): the metadata image — topics with
  ids, partitions (``PartitionChangeRecord`` merged as the controller merges it:
  a leader change bumps the leader epoch, every change the partition epoch),
  configs, brokers, controllers, features, ACLs, quotas, producer ids; records
  inside an aborted metadata transaction are dropped. The bootstrap (the log directory's
  ``bootstrap.checkpoint``, and the ``00000000000000000000-0000000000.checkpoint`` the format
  command writes into ``__cluster_metadata-0``) is applied once: its quorum records (KRaft
  version, voters) before the log, and its metadata records only when neither a snapshot nor
  the log holds them (the controller writes them into the log when it first becomes active,
  so a log that has any metadata record has them already).

A compacted topic keeps the latest record per key, and so does the replay: the
state is the same whatever the cleaner removed, as the coordinator's own load is.
Replay stops after ``at_offset`` (inclusive, per partition) or at the first record
whose timestamp is past ``at_time``.
"""

from __future__ import annotations

import copy
import heapq
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from kseg.decoders import FAMILY, decode_record, family_for
from kseg.decoders.identities import redact_ids
from kseg.decoders.metadata import PREVIEW_DEFINITIONS, preview_fields_fit
from kseg.decoders.secrets import hide_data
from kseg.decoders.remote_log import PARTITION_DELETE_STATES, SEGMENT_STATES
from kseg.decoders.share_state import DELIVERY_STATES
from kseg.defaults import DEFAULT_COORDINATOR_PARTITIONS
from kseg.errors import InputError, KsegError
from kseg.formats.attributes import CONTROL_ABORT, CONTROL_COMMIT
from kseg.log.checks import batch_damage, header_errors
from kseg.log.control import control_info
from kseg.log.listing import BOOTSTRAP_FILE, BOOTSTRAP_SNAPSHOT, parse_partition_dir, reading_groups
from kseg.log.records import batch_records
from kseg.log.segment import Segment, base_offset_of
from kseg.log.tails import live_tail
from kseg.model import Batch, Record

__all__ = ["APPLIERS", "Limit", "PartitionState", "StateBatch", "StateReport", "combine_state_batches", "coordinator_partition",
           "java_string_hash", "replay"]

NO_LEADER_CHANGE = -2  # PartitionChangeRecord.leader when the leader stays
# Where a __consumer_offsets key names its group: the classic records' ``group`` and the
# KIP-848 consumer, share and streams group records' ``groupId``.
GROUP_ID_FIELDS = ("group", "groupId", "GroupId")
CONFIG_RESOURCE_TYPES = {0: "unknown", 2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics",
                         32: "group"}
DEFAULT_ENTITY = "<default>"  # how the image names a default quota entity (ClientQuotaRecord's null name)
# UserScramCredentialRecord.mechanism: Kafka's ScramMechanism type ids, by the names its tools print
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


@dataclass(frozen=True)
class Limit:
    """Where the replay stops: after ``at_offset`` (inclusive), before a record newer than ``at_time``."""

    at_offset: int | None = None
    at_time: int | None = None

    def passed(self, record: Record) -> bool:
        return ((self.at_offset is not None and record.offset > self.at_offset)
                or (self.at_time is not None and record.timestamp > self.at_time))


@dataclass
class PartitionState:
    """What one partition of an internal topic adds up to."""

    path: str
    family: str
    state: dict[str, Any] = field(default_factory=dict)
    records: int = 0
    last_offset: int | None = None
    last_timestamp: int | None = None
    snapshot: str | None = None  # the KRaft snapshot the replay started from
    bootstrap: dict[str, Any] | None = None  # the bootstrap files found, and whether their records were applied
    notes: list[str] = field(default_factory=list)
    # damage met on the way: batches that fail their checks and bytes that form no batch (their
    # records are not applied, so the state may lack them; exit 1)
    problems: list[str] = field(default_factory=list)
    not_applied: int = 0  # records read but not applied (each with a note)
    show_secrets: bool = False  # decoded secrets applied as they are, else hidden (kseg.decoders.secrets)
    # Identities (group, member, client, transactional ids ...) passed through this before they are
    # applied (kseg.decoders.identities), so that the state, its keys and its notes hold none of them.
    hide_id: Callable[[str], str] | None = None
    # the metadata image's delegation tokens by id (the ids are secret; removals name them)
    token_ids: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def skip(self, offset: int, why: str) -> None:
        """A record that could not be applied: counted, and a note says which and why."""
        self.not_applied += 1
        self.notes.append(f"offset {offset}: {why}")

    def as_json(self) -> dict[str, Any]:
        named = parse_partition_dir(Path(self.path).name)
        return {"path": self.path, "topic": FAMILY[self.family].topic, "partition": named[1] if named else None,
                "records_applied": self.records,
                "records_not_applied": self.not_applied,
                "last_offset": self.last_offset, "last_timestamp": self.last_timestamp,
                **({"snapshot": self.snapshot} if self.snapshot else {}),
                **({"bootstrap": self.bootstrap} if self.bootstrap else {}), "notes": self.notes,
                "problems": self.problems, **self.state}


@dataclass
class StateReport:
    limit: Limit
    partitions: list[PartitionState] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No damage met: every record up to the limit was read."""
        return not any(p.problems for p in self.partitions)

    def as_json(self) -> dict[str, Any]:
        return {"at_offset": self.limit.at_offset, "at_time": self.limit.at_time,
                "partitions": [p.as_json() for p in self.partitions]}


# --------------------------------------------------------------------------- coordinators


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int = DEFAULT_COORDINATOR_PARTITIONS) -> int:
    """The ``__consumer_offsets`` / ``__transaction_state`` partition a group id or
    transactional id lives in: ``Utils.abs(key.hashCode()) % partitions`` (``Utils.abs``
    maps Integer.MIN_VALUE to 0)."""
    if partitions < 1:
        raise InputError(f"--partitions must be at least 1, not {partitions}")
    h = java_string_hash(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


# --------------------------------------------------------------------------- inputs


def _partitions(paths: list[Path]) -> dict[Path, tuple[str, list[Path], set[Path]]]:
    """Internal-topic partition folders (or loose files) -> (family, log files in order, those a
    broker may still be writing: ``Group.newest``)."""
    out: dict[Path, tuple[str, list[Path], set[Path]]] = {}
    for g in reading_groups(paths):
        for log in g.files:
            family = family_for(log, "auto")
            if family is None:  # user data
                continue
            entry = out.setdefault(log.parent, (family, [], set()))
            if log.name != BOOTSTRAP_SNAPSHOT:  # (a freshly formatted metadata log: its bootstrap, no log yet)
                entry[1].append(log)
                if log == g.newest:
                    entry[2].add(log)
    if not out:
        raise InputError("no __consumer_offsets, __transaction_state, __cluster_metadata, __share_group_state or "
                         "__remote_log_metadata partition found", file=", ".join(str(p) for p in paths))
    return out


def _snapshots(folder: Path) -> list[tuple[int, Path]]:
    """KRaft snapshots ``<end offset>-<epoch>.checkpoint`` of a folder, by end offset."""
    found = []
    for p in folder.glob("*.checkpoint"):
        head = p.name.split("-", 1)[0]
        if head.isdigit() and "-" in p.name and p.name != BOOTSTRAP_SNAPSHOT:  # the bootstrap precedes the log
            found.append((int(head), p))
    return sorted(found)


def _records(ps: PartitionState, files: list[Path], family: str, start: int = 0, newest: Path | None = None
             ) -> Iterator[tuple[Batch, Record, Any]]:
    """Each record from ``start`` on, decoded, secrets and all: the metadata image keys delegation
    tokens by their ids and hides secrets as it applies them (unless ``ps.show_secrets``). A batch
    that fails its checks, and bytes after a segment's last batch that are damage, are problems of
    ``ps`` (their records not applied); ``newest``: the segment that may still be being written
    (``kseg.log.tails``)."""
    for path in files:
        seg = Segment(path)
        for batch in seg.batches():
            if batch.last_offset < start:
                continue
            damage = header_errors(batch, str(path))
            try:
                records = [] if damage else batch_records(batch)
            except KsegError as e:
                damage = [e.located(file=str(path), position=batch.position)]
            if damage:
                ps.problems.append(f"{damage[0]}: the batch at offset {batch.offset} is not applied")
                continue
            for record in records:
                if record.offset >= start:
                    decoded = decode_record(family, record, batch.is_control)
                    if ps.hide_id is not None:
                        decoded = redact_ids(decoded, ps.hide_id)
                    yield batch, record, decoded
        t = seg.tail
        if t is not None:
            live = live_tail(path, t, path == newest)
            if live is not None:
                ps.notes.append(f"{path}: at byte {t.position}: {live.text}")
            else:
                ps.problems.append(f"{path}: at byte {t.position}: {t.error.message}: {t.length} bytes that form no "
                                   f"batch are not applied")


# --------------------------------------------------------------------------- replay


def replay(paths: list[Path], limit: Limit = Limit(), *, show_secrets: bool = False,
           hide_id: Callable[[str], str] | None = None) -> StateReport:
    """Replay every internal-topic partition under ``paths`` up to ``limit``; secrets in the
    records (SCRAM keys, delegation token ids, sensitive configuration values) are applied
    as ``[hidden]`` unless ``show_secrets``; identities as ``hide_id`` gives them, if given."""
    report = StateReport(limit)
    for folder, (family, files, live) in sorted(_partitions(paths).items()):
        ps = PartitionState(str(folder), family, show_secrets=show_secrets, hide_id=hide_id)
        start = 0
        if family == "metadata":
            start = _start_from_snapshot(ps, folder, files, limit)
            _apply_bootstrap(ps, folder, files)
        applier = APPLIERS[family](ps)
        newest = files[-1] if files and files[-1] in live else None  # a broker may still be writing it
        for batch, record, decoded in _records(ps, files, family, start, newest):
            if limit.passed(record):
                break
            skipped = ps.not_applied
            applier.apply(batch, record, decoded)
            ps.records += ps.not_applied == skipped
            ps.last_offset, ps.last_timestamp = record.offset, record.timestamp
        applier.finish()
        report.partitions.append(ps)
    _name_share_topics(report)
    return report


def _name_share_topics(report: StateReport) -> None:
    """Share-partitions name topics by id only; the metadata image among the inputs names them."""
    names = {t["topicId"]: name for ps in report.partitions if ps.family == "metadata"
             for name, t in ps.state["image"]["topics"].items()}
    if not names:
        return
    for ps in report.partitions:
        for parts in ps.state.get("share_groups", {}).values():
            for sp in parts:
                if sp["topicId"] in names:
                    sp["topic"] = names[sp["topicId"]]


def _start_from_snapshot(ps: PartitionState, folder: Path, files: list[Path], limit: Limit) -> int:
    """Load the newest usable snapshot into ``ps``; the offset the log replay starts at.

    A snapshot is used only when it reads whole and is what the controller writes (see
    ``snapshot_problem``); one that is not is a note, and the next older one is tried, then
    the log from its start."""
    first = base_offset_of(files[0]) if files else None
    snaps = [(end, p) for end, p in _snapshots(folder)
             if limit.at_offset is None or end <= limit.at_offset + 1]
    if not snaps or (first == 0 and limit.at_time is not None):
        return 0  # the log from its start says it all (and snapshots carry no usable time)
    for end, snap in reversed(snaps):
        problem = snapshot_problem(snap, end)
        if problem is not None:
            ps.notes.append(f"snapshot {snap} not used: {problem}")
            continue
        image = _MetadataImage(ps)
        for batch, record, decoded in _records(ps, [snap], "metadata"):
            image.apply(batch, record, decoded)
        image.finish()
        ps.snapshot = str(snap)
        return end
    if first:
        ps.notes.append(f"no usable snapshot, and the log starts at offset {first}: the image holds only what "
                        "the log says from there (the records before it are gone)")
    return 0


def _bootstrap_files(folder: Path) -> list[Path]:
    """The bootstrap files of a ``__cluster_metadata`` partition folder, the newer kind first."""
    parsed = parse_partition_dir(folder.name)
    if parsed is None or parsed[0] != FAMILY["metadata"].topic:
        return []
    return [p for p in (folder / BOOTSTRAP_SNAPSHOT, folder.parent / BOOTSTRAP_FILE) if p.is_file()]


def _apply_bootstrap(ps: PartitionState, folder: Path, files: list[Path]) -> None:
    """Apply the bootstrap once (see the module comment); ``ps.bootstrap`` says what was done."""
    found = _bootstrap_files(folder)
    if not found:
        return
    image = _MetadataImage(ps)
    entries: dict[Path, list[tuple[Batch, Record, Any]]] = {}
    for path in found:
        try:
            entries[path] = list(_records(ps, [path], "metadata"))
        except KsegError as e:
            ps.notes.append(f"bootstrap {path} not used: {e.message}")
    if ps.snapshot is None and folder / BOOTSTRAP_SNAPSHOT in entries:
        for batch, record, decoded in entries[folder / BOOTSTRAP_SNAPSHOT]:
            if batch.is_control:  # KRaftVersionRecord, VotersRecord: the quorum the log starts with
                image.apply(batch, record, decoded)
    source = next((p for p, es in entries.items() if any(not b.is_control for b, _, _ in es)), None)
    ps.bootstrap = {"files": [str(p) for p in found], "records_from": str(source) if source else None,
                    "applied": False}
    if source is None:
        ps.bootstrap["why"] = "no metadata record in them"
    elif ps.snapshot is not None:
        ps.bootstrap["why"] = f"the snapshot {ps.snapshot} holds them"
    elif files and (base_offset_of(files[0]) or 0) > 0:
        ps.bootstrap["why"] = f"the log starts at offset {base_offset_of(files[0])}, past where they were"
    else:
        held = _first_metadata_record(files)
        if held is not None:
            ps.bootstrap["why"] = (f"the log holds them (the controller wrote them when it first became active; "
                                   f"its first metadata record is at offset {held})")
        else:
            for batch, record, decoded in entries[source]:
                if not batch.is_control:
                    image.apply(batch, record, decoded)
            ps.bootstrap["applied"] = True
            ps.bootstrap["why"] = "the log holds no metadata record yet"
            ps.notes.append(f"the log holds no metadata record yet: the image starts from the bootstrap records "
                            f"of {source} (the controller writes them into the log when it first becomes active)")
    image.finish()


def _first_metadata_record(files: list[Path]) -> int | None:
    """The offset of the log's first record that is not a control record, if any."""
    for path in files:
        for batch in Segment(path).batches():
            if not batch.is_control and (batch.record_count is None or batch.record_count > 0):
                return batch.offset
    return None


def snapshot_problem(snap: Path, end_offset: int) -> str | None:
    """Why a KRaft snapshot cannot be trusted, or None: it must read to its end with every
    batch's CRC right, start with a SnapshotHeaderRecord and end with a SnapshotFooterRecord
    (control batches), and hold only offsets below the end offset its name gives."""
    seg = Segment(snap)
    first = last = None
    count = 0
    try:
        for batch in seg.batches():
            damage = batch_damage(batch, str(snap))
            if damage:
                return f"a damaged batch at byte {batch.position}: {damage[0].message}"
            if batch.last_offset >= end_offset:
                return f"offset {batch.last_offset} is not below the snapshot's end offset {end_offset}"
            if first is None:
                first = batch
            last = batch
            count += 1
    except KsegError as e:
        return f"cannot be read: {e.message}"
    if seg.tail is not None:
        return f"{seg.tail.length} bytes at its end do not form a batch ({seg.tail.error.message})"
    if first is None or last is None:
        return "it holds no batch"
    for which, batch, schema in (("first", first, "SnapshotHeaderRecord"), ("last", last, "SnapshotFooterRecord")):
        found = _control_schema(batch)
        if found != schema:
            return f"its {which} batch is not a {schema} (found {found or 'a data batch'})"
    return None


def _control_schema(batch: Batch) -> str | None:
    if not batch.is_control:
        return None
    try:
        records = batch_records(batch)
    except KsegError:
        return "an unreadable control batch"
    decoded = decode_record("metadata", records[0], True) if records else None
    return None if decoded is None or decoded.value is None else decoded.value.schema


class _Applier:
    def __init__(self, ps: PartitionState) -> None:
        self.ps = ps

    def apply(self, batch: Batch, record: Record, decoded: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self) -> None:
        pass


class _OffsetsState(_Applier):
    """Group coordinator state, keyed as the coordinator keys it."""

    def __init__(self, ps: PartitionState) -> None:
        super().__init__(ps)
        self.groups: dict[str, dict[str, Any]] = ps.state.setdefault("groups", {})
        self.pending: dict[int, list[tuple[Record, Any]]] = {}  # producer id -> transactional commits

    def apply(self, batch: Batch, record: Record, decoded: Any) -> None:
        if batch.is_control:
            try:
                info = control_info(record)
            except KsegError as e:
                self.ps.skip(record.offset, f"control record not readable: {e}")
                info = None
            held = self.pending.pop(batch.producer_id, [])
            if info is not None and info.type_id == CONTROL_COMMIT:
                for r, d in held:
                    self._apply(r, d)
            elif info is not None and info.type_id == CONTROL_ABORT and held:
                self.ps.notes.append(f"{len(held)} transactional offset commit(s) of producer "
                                     f"{batch.producer_id} aborted at offset {record.offset}")
            return
        if batch.is_transactional:
            self.pending.setdefault(batch.producer_id, []).append((record, decoded))
            return
        self._apply(record, decoded)

    def _apply(self, record: Record, decoded: Any) -> None:
        if decoded is None or decoded.key is None or decoded.key.data is None:
            if decoded is not None and decoded.key is not None:
                self.ps.skip(record.offset, f"key not decoded ({decoded.key.note})")
            return
        key = decoded.key
        data = key.data
        group = next((data[f] for f in GROUP_ID_FIELDS if f in data), None)
        if group is None:
            self.ps.skip(record.offset, f"not applied: a {key.schema} names no group")
            return
        value = None if decoded.value is None or decoded.value.data is None else decoded.value.data
        if decoded.value is not None and decoded.value.data is None:
            self.ps.skip(record.offset, f"value not decoded ({decoded.value.note})")
            return
        g = self.groups.setdefault(group, {})
        if key.schema == "OffsetCommitKey":
            topics = g.setdefault("offsets", {})
            parts = topics.setdefault(data["topic"], {})
            if value is None:
                parts.pop(str(data["partition"]), None)
                if not parts:
                    topics.pop(data["topic"], None)
            else:
                parts[str(data["partition"])] = {**value, "record_offset": record.offset}
        elif key.schema == "GroupMetadataKey":
            if value is None:
                g.pop("metadata", None)
            else:
                g["metadata"] = {**value, "record_offset": record.offset}
        else:
            records = g.setdefault("records", {})
            rest = {k: v for k, v in data.items() if k not in GROUP_ID_FIELDS}
            slot = key.schema + ("" if not rest else " " + " ".join(f"{k}={v}" for k, v in rest.items()))
            if value is None:
                records.pop(slot, None)
            else:
                records[slot] = {**value, "record_offset": record.offset}
        if not any(g.get(k) for k in ("offsets", "metadata", "records")):
            self.groups.pop(group, None)

    def finish(self) -> None:
        for pid, held in self.pending.items():
            self.ps.notes.append(f"{len(held)} transactional offset commit(s) of producer {pid} are not "
                                 "committed yet (no marker): not counted")
        self.ps.state["groups"] = dict(sorted(self.groups.items()))


class _TransactionsState(_Applier):
    def __init__(self, ps: PartitionState) -> None:
        super().__init__(ps)
        self.ids: dict[str, Any] = ps.state.setdefault("transactional_ids", {})

    def apply(self, batch: Batch, record: Record, decoded: Any) -> None:
        if batch.is_control:
            return
        if decoded is None or decoded.key is None or decoded.key.data is None:
            why = decoded.key.note if decoded is not None and decoded.key is not None else "no key"
            self.ps.skip(record.offset, f"not applied: key not decoded ({why})")
            return
        tid = decoded.key.data.get("transactionalId")
        if tid is None:
            self.ps.skip(record.offset, f"not applied: a {decoded.key.schema} names no "
                                 "transactional id")
            return
        if decoded.value is None:
            self.ids.pop(tid, None)
        elif decoded.value.data is None:
            # The latest value of this id cannot be read: its state is unknown, not the older one.
            self.ps.skip(record.offset, f"transactional id {tid!r}: value not decoded "
                                 f"({decoded.value.note}); its state is unknown")
            self.ids[tid] = {"unreadable": decoded.value.note, "record_offset": record.offset}
        else:
            extra = decoded.value.extra
            if "state" in extra and str(extra["state"]).isdigit():
                self.ps.notes.append(f"offset {record.offset}: transactional id {tid!r}: unknown transaction "
                                     f"status {extra['state']}")
            self.ids[tid] = {**decoded.value.data, **({"state": extra["state"]} if "state" in extra else {}),
                             "record_offset": record.offset}

    def finish(self) -> None:
        self.ps.state["transactional_ids"] = dict(sorted(self.ids.items()))


class _MetadataImage(_Applier):
    """The KRaft metadata image, as the controller and brokers build it from the records."""

    def __init__(self, ps: PartitionState) -> None:
        super().__init__(ps)
        image = ps.state.setdefault("image", {})
        for key in ("topics", "configs", "brokers", "controllers", "features", "acls", "client_quotas",
                    "scram_users", "producer_ids", "quorum", "other"):
            image.setdefault(key, {})
        image.setdefault("delegation_tokens", [])
        self.image = image
        self.tokens = ps.token_ids
        self.topic_names: dict[str, str] = {t["topicId"]: name for name, t in image["topics"].items()}
        self.txn: list[tuple[str, dict]] | None = None  # records of an open metadata transaction

    def apply(self, batch: Batch, record: Record, decoded: Any) -> None:
        if decoded is None or decoded.value is None or decoded.value.data is None:
            return
        part = decoded.value
        if batch.is_control:
            self._control(part.schema, part.data)
            return
        if part.extra.get("definitions") == PREVIEW_DEFINITIONS and not preview_fields_fit(part):
            self.ps.skip(record.offset, f"not applied: a {part.schema} of Kafka {PREVIEW_DEFINITIONS}'s KRaft "
                                        "preview, whose fields no later release's record of that type has")
            return
        kind = part.extra.get("type")
        if kind == "BEGIN_TRANSACTION_RECORD":
            self.txn = []
        elif kind == "END_TRANSACTION_RECORD":
            for k, d in self.txn or []:
                self._record(k, d)
            self.txn = None
        elif kind == "ABORT_TRANSACTION_RECORD":
            self.ps.notes.append(f"metadata transaction aborted at offset {record.offset}: "
                                 f"{len(self.txn or [])} record(s) dropped")
            self.txn = None
        elif self.txn is not None:
            self.txn.append((kind, part.data))
        else:
            self._record(kind, part.data)

    def _shown(self, schema: str, d: dict) -> dict:
        """A record's data as the image keeps it: secrets hidden unless asked for (the records that hold
        any, kseg.decoders.secrets.SECRET_FIELDS and configurations, each have their own model here)."""
        return d if self.ps.show_secrets else hide_data(schema, d)

    def _control(self, schema: str | None, data: dict) -> None:
        quorum = self.image["quorum"]
        if schema == "LeaderChangeMessage":
            quorum["leader_id"] = data.get("leaderId")
            quorum["voters"] = [v.get("voterId") for v in data.get("voters", [])]
        elif schema == "VotersRecord":
            quorum["voters"] = data.get("voters")
        elif schema == "KRaftVersionRecord":
            quorum["kraft_version"] = data.get("kRaftVersion")

    def _record(self, kind: str, d: dict) -> None:
        img = self.image
        if kind == "TOPIC_RECORD":
            img["topics"][d["name"]] = {"topicId": d["topicId"], "partitions": {}}
            self.topic_names[d["topicId"]] = d["name"]
        elif kind == "REMOVE_TOPIC_RECORD":
            name = self.topic_names.pop(d["topicId"], None)
            if name is not None:
                img["topics"].pop(name, None)
                img["configs"].get("topic", {}).pop(name, None)
        elif kind == "PARTITION_RECORD":
            topic = self._topic(d["topicId"])
            if topic is not None:
                topic["partitions"][str(d["partitionId"])] = {
                    k: v for k, v in d.items() if k not in ("topicId", "partitionId")}
        elif kind == "PARTITION_CHANGE_RECORD":
            self._partition_change(d)
        elif kind == "CONFIG_RECORD":
            d = self._shown("ConfigRecord", d)
            rtype = CONFIG_RESOURCE_TYPES.get(d["resourceType"], str(d["resourceType"]))
            configs = img["configs"].setdefault(rtype, {}).setdefault(d["resourceName"], {})
            if d.get("value") is None:
                configs.pop(d["name"], None)
            else:
                configs[d["name"]] = d["value"]
        elif kind == "REGISTER_BROKER_RECORD":
            img["brokers"][str(d["brokerId"])] = {**{k: v for k, v in d.items() if k != "brokerId"},
                                                  "fenced": d.get("fenced", True)}
        elif kind == "UNREGISTER_BROKER_RECORD":
            img["brokers"].pop(str(d["brokerId"]), None)
        elif kind in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            broker = img["brokers"].get(str(d["id"]))
            if broker is not None:
                broker["fenced"] = kind == "FENCE_BROKER_RECORD"
                broker["brokerEpoch"] = d.get("epoch", broker.get("brokerEpoch"))
        elif kind == "BROKER_REGISTRATION_CHANGE_RECORD":
            broker = img["brokers"].get(str(d["brokerId"]))
            if broker is not None:
                broker["brokerEpoch"] = d.get("brokerEpoch", broker.get("brokerEpoch"))
                if d.get("fenced", 0) != 0:
                    broker["fenced"] = d["fenced"] == 1
                if d.get("inControlledShutdown", 0) != 0:
                    broker["inControlledShutdown"] = d["inControlledShutdown"] == 1
                if "logDirs" in d:
                    broker["logDirs"] = d["logDirs"]
        elif kind == "REGISTER_CONTROLLER_RECORD":
            img["controllers"][str(d["controllerId"])] = {k: v for k, v in d.items() if k != "controllerId"}
        elif kind == "UNREGISTER_CONTROLLER_RECORD":  # Kafka 4.4: a controller removed from the quorum
            img["controllers"].pop(str(d["controllerId"]), None)
        elif kind == "FEATURE_LEVEL_RECORD":
            if d.get("featureLevel", 0) == 0:
                img["features"].pop(d["name"], None)
            else:
                img["features"][d["name"]] = d["featureLevel"]
        elif kind == "ACCESS_CONTROL_ENTRY_RECORD":
            img["acls"][d["id"]] = {k: v for k, v in d.items() if k != "id"}
        elif kind == "REMOVE_ACCESS_CONTROL_ENTRY_RECORD":
            img["acls"].pop(d["id"], None)
        elif kind == "PRODUCER_IDS_RECORD":
            img["producer_ids"] = d
        elif kind == "CLIENT_QUOTA_RECORD":
            # a null entity name is the entity type's default (kafka-configs.sh --entity-default)
            entity = ",".join(f"{e.get('entityType')}={DEFAULT_ENTITY if e.get('entityName') is None else e['entityName']}"
                              for e in d.get("entity", []))
            quotas = img["client_quotas"].setdefault(entity, {})
            if d.get("remove"):
                quotas.pop(d["key"], None)
            else:
                quotas[d["key"]] = d["value"]
        elif kind == "USER_SCRAM_CREDENTIAL_RECORD":
            shown = self._shown("UserScramCredentialRecord", d)
            mechanism = SCRAM_MECHANISMS.get(d["mechanism"], str(d["mechanism"]))
            img["scram_users"].setdefault(d["name"], {})[mechanism] = {
                k: v for k, v in shown.items() if k not in ("name", "mechanism")}
            img["scram_users"][d["name"]] = dict(sorted(img["scram_users"][d["name"]].items()))
        elif kind == "REMOVE_USER_SCRAM_CREDENTIAL_RECORD":
            user = img["scram_users"].get(d["name"], {})
            user.pop(SCRAM_MECHANISMS.get(d["mechanism"], str(d["mechanism"])), None)
            if not user:
                img["scram_users"].pop(d["name"], None)
        elif kind == "DELEGATION_TOKEN_RECORD":
            self.tokens[d["tokenId"]] = self._shown("DelegationTokenRecord", d)
        elif kind == "REMOVE_DELEGATION_TOKEN_RECORD":
            self.tokens.pop(d["tokenId"], None)
        elif kind in ("NO_OP_RECORD",):
            pass
        else:
            img["other"][kind] = d  # the latest of each kind kseg keeps no model of

    def _topic(self, topic_id: str) -> dict | None:
        name = self.topic_names.get(topic_id)
        if name is None:
            self.ps.notes.append(f"a partition record for unknown topic id {topic_id}")
            return None
        return self.image["topics"][name]

    def _partition_change(self, d: dict) -> None:
        topic = self._topic(d["topicId"])
        if topic is None:
            return
        part = topic["partitions"].get(str(d["partitionId"]))
        if part is None:
            self.ps.notes.append(f"a partition change for unknown partition {d['topicId']}-{d['partitionId']}")
            return
        for name in ("replicas", "isr", "removingReplicas", "addingReplicas", "eligibleLeaderReplicas",
                     "lastKnownElr", "directories"):
            if d.get(name) is not None:
                part[name] = d[name]
        if d.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
            part["leader"] = d["leader"]
            part["leaderEpoch"] = part.get("leaderEpoch", 0) + 1
        if d.get("leaderRecoveryState", -1) != -1:
            part["leaderRecoveryState"] = d["leaderRecoveryState"]
        part["partitionEpoch"] = part.get("partitionEpoch", 0) + 1

    def finish(self) -> None:
        if self.txn is not None:
            self.ps.notes.append(f"a metadata transaction is still open ({len(self.txn)} record(s) not applied)")
        self.image["topics"] = dict(sorted(self.image["topics"].items()))
        self.image["scram_users"] = dict(sorted(self.image["scram_users"].items()))
        self.image["delegation_tokens"] = sorted(self.tokens.values(), key=lambda t: (t["issueTimestamp"],
                                                                                     t["owner"]))
        self.ps.state["image"] = copy.deepcopy(self.image)


# --------------------------------------------------------------------------- share groups


@dataclass(frozen=True)
class StateBatch:
    """Offsets ``first``..``last`` of a share-partition in one delivery state."""

    first: int
    last: int
    state: int
    count: int

    @classmethod
    def of(cls, d: dict[str, Any]) -> "StateBatch":
        return cls(d["firstOffset"], d["lastOffset"], d["deliveryState"], d["deliveryCount"])

    def as_json(self) -> dict[str, Any]:
        return {"firstOffset": self.first, "lastOffset": self.last, "deliveryState": self.state,
                "deliveryStateName": DELIVERY_STATES.get(self.state, str(self.state)), "deliveryCount": self.count}


def combine_state_batches(batches: list[StateBatch], start_offset: int) -> list[StateBatch]:
    """The share coordinator's combination of state batches (its ``PersisterStateBatchCombiner``),
    by its outcome: per offset at or after ``start_offset`` the batch with the higher delivery
    count, then the higher delivery state, wins; neighbours with equal state and count are joined.

    One sweep over the batches' bounds with a heap of the batches that have started (those
    that have ended are dropped when they reach the top): n log n, where comparing every
    batch with every bound took seconds for a few thousand."""
    bounds = sorted({b.first for b in batches} | {b.last + 1 for b in batches})
    by_first = sorted(batches, key=lambda b: b.first)
    started: list[tuple[int, int, int, int]] = []  # (-count, -state, order, last)
    out: list[StateBatch] = []
    i = 0
    for lo, hi in zip(bounds, bounds[1:]):
        while i < len(by_first) and by_first[i].first <= lo:
            b = by_first[i]
            heapq.heappush(started, (-b.count, -b.state, i, b.last))
            i += 1
        while started and started[0][3] < lo:
            heapq.heappop(started)
        lo = max(lo, start_offset)
        if hi <= lo or not started:
            continue
        count, state = -started[0][0], -started[0][1]
        prev = out[-1] if out else None
        if prev is not None and prev.last == lo - 1 and (prev.state, prev.count) == (state, count):
            out[-1] = StateBatch(prev.first, hi - 1, state, count)
        else:
            out.append(StateBatch(lo, hi - 1, state, count))
    return out


class _ShareState(_Applier):
    """Share-partitions as the share coordinator holds them (``ShareCoordinatorShard.replay``)."""

    def __init__(self, ps: PartitionState) -> None:
        super().__init__(ps)
        self.parts: dict[tuple[str, str, int], dict[str, Any]] = {}

    def apply(self, batch: Batch, record: Record, decoded: Any) -> None:
        if batch.is_control or decoded is None or decoded.key is None or decoded.key.data is None:
            return
        key = decoded.key.data
        slot = (key["groupId"], key["topicId"], key["partition"])
        if decoded.value is not None and decoded.value.data is None:
            self.ps.skip(record.offset, f"value not decoded ({decoded.value.note})")
            return
        value = None if decoded.value is None else decoded.value.data
        if decoded.key.schema == "ShareSnapshotKey":
            if value is None:
                self.parts.pop(slot, None)
                return
            self.parts[slot] = {
                "snapshotEpoch": value["snapshotEpoch"], "stateEpoch": value["stateEpoch"],
                "leaderEpoch": value["leaderEpoch"], "startOffset": value["startOffset"],
                "deliveryCompleteCount": value.get("deliveryCompleteCount", -1),
                # not in Kafka 4.0's snapshots (early-access share groups; 4.1 added them)
                **{k: value[k] for k in ("createTimestamp", "writeTimestamp") if k in value},
                "stateBatches": [StateBatch.of(b) for b in value["stateBatches"]], "record_offset": record.offset}
            return
        if value is None:
            self.ps.skip(record.offset, "a ShareUpdate tombstone (the coordinator writes none)")
            return
        new = [StateBatch.of(b) for b in value["stateBatches"]]
        old = self.parts.get(slot)
        if old is None:  # no snapshot before it: the update is the state (state epoch and times 0, as Kafka)
            self.parts[slot] = {
                "snapshotEpoch": value["snapshotEpoch"], "stateEpoch": 0, "leaderEpoch": value["leaderEpoch"],
                "startOffset": value["startOffset"], "deliveryCompleteCount": value.get("deliveryCompleteCount", -1),
                "createTimestamp": 0, "writeTimestamp": 0, "stateBatches": new, "record_offset": record.offset}
            return
        start = old["startOffset"] if value["startOffset"] == -1 else value["startOffset"]
        old.update(startOffset=start, leaderEpoch=old["leaderEpoch"] if value["leaderEpoch"] == -1
                   else value["leaderEpoch"], deliveryCompleteCount=value.get("deliveryCompleteCount", -1),
                   stateBatches=combine_state_batches(old["stateBatches"] + new, start), record_offset=record.offset)

    def finish(self) -> None:
        groups: dict[str, list[dict[str, Any]]] = {}
        for (group, topic_id, partition), sp in sorted(self.parts.items()):
            groups.setdefault(group, []).append({
                "topicId": topic_id, "partition": partition,
                **{k: v for k, v in sp.items() if k != "stateBatches"},
                "stateBatches": [b.as_json() for b in sp["stateBatches"]]})
        self.ps.state["share_groups"] = groups


# --------------------------------------------------------------------------- tiered storage


class _RemoteLogState(_Applier):
    """Remote segments per topic-partition, as the topic-based metadata manager's cache holds them
    (except that a DELETE_SEGMENT_FINISHED segment stays listed, with that state)."""

    def __init__(self, ps: PartitionState) -> None:
        super().__init__(ps)
        self.partitions: dict[str, dict[str, Any]] = {}

    def _partition(self, tip: dict[str, Any]) -> dict[str, Any]:
        name = f"{tip['name']}-{tip['partition']}"
        return self.partitions.setdefault(name, {"topic": tip["name"], "partition": tip["partition"],
                                                 "topicId": tip["id"], "segments": {}})

    def apply(self, batch: Batch, record: Record, decoded: Any) -> None:
        if batch.is_control or decoded is None or decoded.value is None:
            return
        part = decoded.value
        if part.data is None:
            self.ps.skip(record.offset, f"not decoded ({part.note})")
            return
        d = part.data
        if part.schema == "RemoteLogSegmentMetadataRecord":
            rid = d["remoteLogSegmentId"]
            segments = self._partition(rid["topicIdPartition"])["segments"]
            segments[rid["id"]] = {
                "startOffset": d["startOffset"], "endOffset": d["endOffset"],
                "segmentSizeInBytes": d["segmentSizeInBytes"],
                "state": SEGMENT_STATES.get(d["remoteLogSegmentState"], str(d["remoteLogSegmentState"])),
                "brokerId": d["brokerId"], "maxTimestampMs": d["maxTimestampMs"],
                "eventTimestampMs": d["eventTimestampMs"],
                "segmentLeaderEpochs": {str(e["leaderEpoch"]): e["offset"] for e in d["segmentLeaderEpochs"]},
                "txnIndexEmpty": d.get("txnIndexEmpty", False), "customMetadata": d.get("customMetadata"),
                "record_offset": record.offset}
        elif part.schema == "RemoteLogSegmentMetadataUpdateRecord":
            rid = d["remoteLogSegmentId"]
            seg = self._partition(rid["topicIdPartition"])["segments"].get(rid["id"])
            if seg is None:
                self.ps.skip(record.offset, f"an update of segment {rid['id']}, "
                                     "which no earlier record adds")
                return
            seg.update(state=SEGMENT_STATES.get(d["remoteLogSegmentState"], str(d["remoteLogSegmentState"])),
                       brokerId=d["brokerId"], eventTimestampMs=d["eventTimestampMs"], record_offset=record.offset)
            if d.get("customMetadata") is not None:
                seg["customMetadata"] = d["customMetadata"]
        elif part.schema == "RemotePartitionDeleteMetadataRecord":
            p = self._partition(d["topicIdPartition"])
            p["deleteState"] = PARTITION_DELETE_STATES.get(d["remotePartitionDeleteState"],
                                                           str(d["remotePartitionDeleteState"]))

    def finish(self) -> None:
        for p in self.partitions.values():
            p["segments"] = dict(sorted(p["segments"].items(), key=lambda kv: kv[1]["startOffset"]))
        self.ps.state["remote_partitions"] = dict(sorted(self.partitions.items()))


# family -> what replays it: one row per family of kseg.decoders.FAMILY_TABLE (tests/test_families.py).
APPLIERS: dict[str, type[_Applier]] = {
    "offsets": _OffsetsState, "transactions": _TransactionsState, "metadata": _MetadataImage,
    "share-group-state": _ShareState, "remote-log-metadata": _RemoteLogState,
}
