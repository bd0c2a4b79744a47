"""``__share_group_state``: the share coordinator's records (KIP-932; kafka-dump-log.sh
``--share-group-state-decoder``).

    key:   int16 record type | key struct (non-flexible)
           0 ShareSnapshotKey, 1 ShareUpdateKey: GroupId, TopicId, Partition
    value: int16 version | value struct (flexible); a null value is a tombstone

A ShareSnapshot is the whole state of one share-partition (its start offset and the
delivery state of the in-flight batches); a ShareUpdate is a delta on the last snapshot.
DeliveryState: 0 Available, 2 Acknowledged, 4 Archived.

Schemas from Kafka 4.4's ``share-coordinator`` jar (``common/message/Share{Snapshot,Update}
{Key,Value}.json``); the kafka lines are those of every coordinator record
(``coordinator.py``).
"""

from __future__ import annotations

from kseg.decoders.coordinator import RecordTypes, decode_coordinator_record
from kseg.decoders.parts import DecodedRecord
from kseg.decoders.schema import F, M
from kseg.model import Record

SHARE_SNAPSHOT_KEY = M("ShareSnapshotKey", "0", "none",
    F("GroupId", "string", "0"),
    F("TopicId", "uuid", "0"),
    F("Partition", "int32", "0"),
)

SHARE_SNAPSHOT_VALUE = M("ShareSnapshotValue", "0", "0+",
    F("SnapshotEpoch", "int32"),
    F("StateEpoch", "int32"),
    F("LeaderEpoch", "int32"),
    F("StartOffset", "int64"),
    F("DeliveryCompleteCount", "int32", tagged="0+", tag=0, default="-1"),
    F("CreateTimestamp", "int64"),
    F("WriteTimestamp", "int64"),
    F("StateBatches", "[]StateBatch", fields=(
        F("FirstOffset", "int64"),
        F("LastOffset", "int64"),
        F("DeliveryState", "int8"),
        F("DeliveryCount", "int16"),
    )),
)

SHARE_UPDATE_KEY = M("ShareUpdateKey", "0", "none",
    F("GroupId", "string", "0"),
    F("TopicId", "uuid", "0"),
    F("Partition", "int32", "0"),
)

SHARE_UPDATE_VALUE = M("ShareUpdateValue", "0", "0+",
    F("SnapshotEpoch", "int32"),
    F("LeaderEpoch", "int32"),
    F("StartOffset", "int64"),
    F("DeliveryCompleteCount", "int32", tagged="0+", tag=0, default="-1"),
    F("StateBatches", "[]StateBatch", fields=(
        F("FirstOffset", "int64"),
        F("LastOffset", "int64"),
        F("DeliveryState", "int8"),
        F("DeliveryCount", "int16"),
    )),
)

RECORD_TYPES: RecordTypes = {
    0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}

DELIVERY_STATES = {0: "Available", 2: "Acknowledged", 4: "Archived"}


def decode_share_state_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one ``__share_group_state`` record (None for control records)."""
    if is_control:
        return None
    return decode_coordinator_record(record, RECORD_TYPES)
