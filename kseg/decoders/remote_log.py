"""``__remote_log_metadata``: tiered storage's segment metadata (KIP-405, KIP-1057;
kafka-dump-log.sh ``--remote-log-metadata-decoder``), as the topic-based
RemoteLogMetadataManager writes it.

    record key:   none
    record value: uvarint frame version (1) | uvarint record type | uvarint version |
                  the record at that version (flexible), as in the KRaft metadata log
                  0 RemoteLogSegmentMetadataRecord   1 RemoteLogSegmentMetadataUpdateRecord
                  2 RemotePartitionDeleteMetadataRecord
                  3 RemoteLogSegmentMetadataSnapshotRecord (in the manager's snapshot files)

kafka-dump-log.sh prints each record as the ``toString`` of the object Kafka builds from it
(``RemoteLogSegmentMetadata{...}`` and so on), which ``kafka_text`` rebuilds, with the
errors that object's checks raise.

Schemas generated (``make schemas``) from the newest release's ``storage`` jar (``message/Remote*.json``).
"""

from __future__ import annotations

import base64

from kseg.decoders.metadata import decode_metadata_value
from kseg.decoders.parts import DecodedRecord, Part, raw_part
from kseg.decoders.generated import NEWEST as K4
from kseg.decoders.schema import Message
from kseg.kafka_releases import DEFAULT, WITHOUT_TXN_INDEX_EMPTY, DumpLogRelease, as_release, kafka_release
from kseg.model import Record

# Generated from the newest release's storage jar (``make schemas``).
RECORDS: dict[int, Message] = K4.REMOTE_LOG

SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED",
                  3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                           2: "DELETE_PARTITION_FINISHED"}


class _Invalid(Exception):
    """A record Kafka reads but whose object refuses it (its text is Kafka's message)."""


def _tip(t: dict) -> str:
    # TopicIdPartition.toString: "<topic id>:<topic>-<partition>"
    return f"{t['id']}:{t['name']}-{t['partition']}"


def _segment_id(s: dict) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_tip(s['topicIdPartition'])}, id={s['id']}}}"


def _custom(b64: str | None) -> str:
    if b64 is None:
        return "Optional.empty"
    return f"Optional[CustomMetadata{{{len(base64.b64decode(b64))} bytes}}]"


def _epochs(entries: list[dict]) -> str:
    # A HashMap (the last entry of a repeated epoch wins) copied into a TreeMap.
    m: dict[int, int] = {}
    for e in entries:
        m[e["leaderEpoch"]] = e["offset"]
    if not m:
        raise _Invalid("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={m[k]}" for k in sorted(m)) + "}"


def _state(states: dict[int, str], state_id: int, message: str) -> str:
    name = states.get(state_id)
    if name is None:
        raise _Invalid(message)
    return name


def _txn(d: dict, release: DumpLogRelease) -> str:
    if not release.remote_txn_index_empty:  # Kafka 3.9's objects have no txnIdxEmpty
        return ""
    return ", txnIdxEmpty=" + ("true" if d.get("txnIndexEmpty", False) else "false")


def kafka_text(type_id: int, d: dict, release: "str | DumpLogRelease" = DEFAULT) -> str:
    """The ``toString`` kafka-dump-log.sh prints for a decoded record; raises ``_Invalid``
    with Kafka's message for records its objects refuse."""
    release = as_release(release)
    if type_id == 0:
        start, end = d["startOffset"], d["endOffset"]
        if start < 0:
            raise _Invalid(f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative")
        if end < start:
            raise _Invalid(f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than "
                           f"startOffset = {start}")
        epochs = _epochs(d["segmentLeaderEpochs"])
        state = _state(SEGMENT_STATES, d["remoteLogSegmentState"], "state can not be null")
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, "
                f"startOffset={start}, endOffset={end}, brokerId={d['brokerId']}, "
                f"maxTimestampMs={d['maxTimestampMs']}, eventTimestampMs={d['eventTimestampMs']}, "
                f"segmentLeaderEpochs={epochs}, segmentSizeInBytes={d['segmentSizeInBytes']}, "
                f"customMetadata={_custom(d.get('customMetadata'))}, state={state}{_txn(d, release)}}}")
    if type_id == 1:
        state = _state(SEGMENT_STATES, d["remoteLogSegmentState"], "state can not be null")
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, "
                f"customMetadata={_custom(d.get('customMetadata'))}, state={state}, "
                f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}")
    if type_id == 2:
        state = _state(PARTITION_DELETE_STATES, d["remotePartitionDeleteState"], "null")
        return (f"RemotePartitionDeleteMetadata{{topicPartition={_tip(d['topicIdPartition'])}, state={state}, "
                f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}")
    state = _state(SEGMENT_STATES, d["remoteLogSegmentState"], "state can not be null")
    epochs = _epochs(d["segmentLeaderEpochs"])
    return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={d['segmentId']}, startOffset={d['startOffset']}, "
            f"endOffset={d['endOffset']}, maxTimestampMs={d['maxTimestampMs']}, segmentLeaderEpochs={epochs}, "
            f"segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata={_custom(d.get('customMetadata'))}, "
            f"state={state}{_txn(d, release)}}}")


def decode_remote_log_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one ``__remote_log_metadata`` record (None for control records). Kafka prints
    no key for these."""
    if is_control:
        return None
    offset = record.offset
    if record.value is None:
        note = "the record has no value"
        return DecodedRecord(None, raw_part(None, note), None, f"Error at offset {offset}, skipping. null")
    part = decode_metadata_value(record.value, RECORDS)
    if part.data is None:
        return DecodedRecord(None, part, None, f"Error at offset {offset}, skipping. {part.note}")
    type_id = part.extra["type_id"]
    try:
        text = kafka_text(type_id, part.data)
    except _Invalid as e:
        note = f"Kafka refuses this record: {e}"
        return DecodedRecord(None, Part(part.schema, part.version, part.data, part.extra, (*part.notes, note)),
                             None, f"Error at offset {offset}, skipping. {e}")
    extra = dict(part.extra)
    states = PARTITION_DELETE_STATES if type_id == 2 else SEGMENT_STATES
    state_id = part.data.get("remotePartitionDeleteState" if type_id == 2 else "remoteLogSegmentState")
    extra["state"] = states.get(state_id) if isinstance(state_id, int) else None
    d = DecodedRecord(None, Part(part.schema, part.version, part.data, extra, part.notes), None, text)
    return d.with_variant(WITHOUT_TXN_INDEX_EMPTY, (None, kafka_text(type_id, part.data, kafka_release("3.9"))))
