"""``__share_group_state``: the share coordinator's records (KIP-932; kafka-dump-log.sh
``--share-group-state-decoder``).

    key:   int16 record type | key struct (non-flexible)
           0 ShareSnapshotKey, 1 ShareUpdateKey: GroupId, TopicId, Partition
    value: int16 version | value struct (flexible); a null value is a tombstone

A ShareSnapshot is the whole state of one share-partition (its start offset and the
delivery state of the in-flight batches); a ShareUpdate is a delta on the last snapshot.
DeliveryState: 0 Available, 2 Acknowledged, 4 Archived.

Schemas generated (``make schemas``) from the newest release's ``share-coordinator`` jar (``common/message/Share{Snapshot,Update}
{Key,Value}.json``); the kafka lines are those of every coordinator record
(``coordinator.py``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Callable

from kseg.decoders.coordinator import RecordTypes, decode_coordinator_record, with_older_parts, with_older_texts
from kseg.decoders.parts import DecodedRecord
from kseg.decoders.generated import NEWEST as K4
from kseg.model import Record

# Generated from the newest release's share-coordinator jar (Kafka 3.9 had no share coordinator).
RECORD_TYPES: RecordTypes = K4.SHARE_STATE
SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE = RECORD_TYPES[0]
SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE = RECORD_TYPES[1]

DELIVERY_STATES = {0: "Available", 2: "Acknowledged", 4: "Archived"}


def decode_share_state_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one ``__share_group_state`` record (None for control records)."""
    if is_control:
        return None
    d = with_older_texts(decode_coordinator_record(record, RECORD_TYPES), record, RECORD_TYPES, "SHARE_STATE")
    d = with_older_parts(d, record, "SHARE_STATE")
    deferred = tuple((name, partial(_type_labelled, texts) if name == EARLY_ACCESS_TEXT else texts)
                     for name, texts in d.kafka_deferred)
    return replace(d, kafka_deferred=deferred)


def _type_labelled(texts: Callable[[], tuple[str | None, str | None]]) -> tuple[str | None, str | None]:
    """Kafka 4.0's formatter labelled the value's version "type"."""
    key, payload = texts()
    if payload is not None and payload.startswith(_VERSION_LABEL):
        payload = _TYPE_LABEL + payload[len(_VERSION_LABEL):]
    return key, payload


#: the decoder text of Kafka 4.0's tool, whose share-group state records (early access) were read by
#: 4.0's definitions and printed with the value's version as ``{"type":"V",...}``
EARLY_ACCESS_TEXT = "definitions-4.0"
_VERSION_LABEL, _TYPE_LABEL = '{"version":', '{"type":'
