"""``__consumer_offsets``: the group coordinator's records (spec §6.1 ``--offsets-decoder``).

    key:   int16 record type | key struct (non-flexible)
           0, 1 OffsetCommitKey   2 GroupMetadataKey   3..8 the consumer-group (KIP-848) records
    value: int16 version | value struct at that version; a null value is a tombstone

Schemas from Kafka's ``group-coordinator/src/main/resources/common/message/*.json`` and,
for the classic consumer protocol a GroupMetadataValue member carries,
``clients/.../ConsumerProtocolSubscription.json`` and ``ConsumerProtocolAssignment.json``.
Record types kseg has no table for (share and streams groups, 9+) are shown raw.
"""

from __future__ import annotations

import base64
import struct

from kseg.decoders.parts import DecodedRecord, Part, raw_part, skipping_line
from kseg.decoders.schema import F, M, Message, SchemaError, decode, kafka_json, read_int16_version
from kseg.model import Record

_I16 = struct.Struct(">h")

# --------------------------------------------------------------------------- keys

OFFSET_COMMIT_KEY = M("OffsetCommitKey", "0", "none",
                      F("group", "string"), F("topic", "string"), F("partition", "int32"))
GROUP_METADATA_KEY = M("GroupMetadataKey", "0", "none", F("group", "string"))


def _group_key(name: str, *extra: str) -> Message:
    return M(name, "0", "none", F("GroupId", "string"), *(F(x, "string") for x in extra))


# --------------------------------------------------------------------------- values

OFFSET_COMMIT_VALUE = M(
    "OffsetCommitValue", "0-4", "4+",
    F("offset", "int64"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commitTimestamp", "int64"),
    F("expireTimestamp", "int64", "1", default=-1),
)

MEMBER_METADATA = (
    F("memberId", "string"),
    F("groupInstanceId", "string", "3+", nullable="3+", default="null"),
    F("clientId", "string"),
    F("clientHost", "string"),
    F("rebalanceTimeout", "int32", "1+"),
    F("sessionTimeout", "int32"),
    F("subscription", "bytes"),
    F("assignment", "bytes"),
)

GROUP_METADATA_VALUE = M(
    "GroupMetadataValue", "0-4", "4+",
    F("protocolType", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", "[]MemberMetadata", fields=MEMBER_METADATA),
)

CONSUMER_GROUP_METADATA_VALUE = M(
    "ConsumerGroupMetadataValue", "0", "0+",
    F("Epoch", "int32"),
    F("MetadataHash", "int64", tagged="0+", tag=0, default=0),
    F("CreationTimeMs", "int64", tagged="0+", tag=1, default=-1),
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = M(
    "ConsumerGroupPartitionMetadataValue", "0", "0+",
    F("Epoch", "int32"),
    F("Topics", "[]TopicMetadata", fields=(
        F("TopicId", "uuid"),
        F("TopicName", "string"),
        F("NumPartitions", "int32"),
        F("PartitionRacks", "[]PartitionMetadata", fields=(
            F("Partition", "int32"),
            F("Racks", "[]string"),
        )),
    )),
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = M(
    "ConsumerGroupMemberMetadataValue", "0", "0+",
    F("InstanceId", "string", nullable="0+"),
    F("RackId", "string", nullable="0+"),
    F("ClientId", "string"),
    F("ClientHost", "string"),
    F("SubscribedTopicNames", "[]string"),
    F("SubscribedTopicRegex", "string", nullable="0+"),
    F("RebalanceTimeoutMs", "int32", default=-1),
    F("ServerAssignor", "string", nullable="0+"),
    F("ClassicMemberMetadata", "ClassicMemberMetadata", nullable="0+", tagged="0+", tag=0, default="null",
      fields=(F("SupportedProtocols", "[]ClassicProtocol", fields=(
          F("Name", "string"),
          F("Metadata", "bytes"),
      )),)),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
    F("AssignmentEpoch", "int32"),
    F("AssignmentTimestamp", "int64", tagged="0+", tag=0, default=0),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
    F("TopicPartitions", "[]TopicPartition", fields=(F("TopicId", "uuid"), F("Partitions", "[]int32"))),
)

_TOPIC_PARTITIONS = (
    F("TopicId", "uuid"),
    F("Partitions", "[]int32"),
    F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    F("MemberEpoch", "int32"),
    F("PreviousMemberEpoch", "int32"),
    F("State", "int8"),
    F("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
    F("PartitionsPendingRevocation", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
)

# Record type (the key's int16) -> (key schema, value schema).
RECORD_TYPES: dict[int, tuple[Message, Message]] = {
    0: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (_group_key("ConsumerGroupMetadataKey"), CONSUMER_GROUP_METADATA_VALUE),
    4: (_group_key("ConsumerGroupPartitionMetadataKey"), CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (_group_key("ConsumerGroupMemberMetadataKey", "MemberId"), CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (_group_key("ConsumerGroupTargetAssignmentMetadataKey"), CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (_group_key("ConsumerGroupTargetAssignmentMemberKey", "MemberId"),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (_group_key("ConsumerGroupCurrentMemberAssignmentKey", "MemberId"),
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
}

# --------------------------------------------------------------------------- the consumer protocol

CONSUMER_PROTOCOL_SUBSCRIPTION = M(
    "ConsumerProtocolSubscription", "0-2", "none",
    F("Topics", "[]string"),
    F("UserData", "bytes", nullable="0+", default="null"),
    F("OwnedPartitions", "[]TopicPartition", "1+", fields=(F("Topic", "string"), F("Partitions", "[]int32"))),
    F("GenerationId", "int32", "2+", default=-1),
)

CONSUMER_PROTOCOL_ASSIGNMENT = M(
    "ConsumerProtocolAssignment", "0-2", "none",
    F("AssignedPartitions", "[]TopicPartition", fields=(F("Topic", "string"), F("Partitions", "[]int32"))),
    F("UserData", "bytes", nullable="0+", default="null"),
)

CONSUMER_PROTOCOL_TYPE = "consumer"


def _expand_protocol(data: dict, notes: list[str]) -> None:
    """Replace each member's subscription and assignment bytes by their decoded form, as
    DumpLogSegments does for groups of protocol type "consumer". Bytes that do not decode
    (an empty assignment before the first sync) stay base64, as in Kafka."""
    if data.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return
    for member in data.get("members") or ():
        for name, schema in (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                             ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
            text = member.get(name)
            if not isinstance(text, str):
                continue
            raw = base64.b64decode(text)
            if len(raw) < 2:
                continue
            version = _I16.unpack_from(raw)[0]
            if version < 0:
                notes.append(f"member {member.get('memberId')} {name}: negative version {version}, kept as bytes")
                continue
            # Newer versions only add fields at the end: read them as the highest known one.
            try:
                member[name] = decode(schema, raw, min(version, schema.highest), start=2, exact=False).data
            except SchemaError as e:
                notes.append(f"member {member.get('memberId')} {name} kept as bytes: {e}")


# --------------------------------------------------------------------------- records


def decode_offsets_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one ``__consumer_offsets`` record (None for control records: transaction markers)."""
    if is_control:
        return None
    offset, key, value = record.offset, record.key, record.value
    not_decoded = "not decoded: the key could not be"
    if key is None:
        msg = "the record has no key"
        return DecodedRecord(
            raw_part(None, msg), None if value is None else raw_part(value, not_decoded),
            skipping_line(offset, f"Failed to decode message at offset {offset} using offset topic decoder "
                                  "(message had a missing key)"), None)
    try:
        rtype = read_int16_version(key, "key")
    except SchemaError as e:
        return DecodedRecord(raw_part(key, str(e)), None if value is None else raw_part(value, not_decoded),
                             skipping_line(offset, e.message), None)
    schemas = RECORD_TYPES.get(rtype)
    if schemas is None:
        note = f"unknown record type {rtype}"
        return DecodedRecord(raw_part(key, note, version=rtype),
                             None if value is None else raw_part(value, note),
                             f"Unknown record type {rtype} at offset {offset}, skipping.", None)
    key_schema, value_schema = schemas
    try:
        k = decode(key_schema, key, 0, start=2)
    except SchemaError as e:
        return DecodedRecord(raw_part(key, str(e), key_schema.name, rtype),
                             None if value is None else raw_part(value, not_decoded, value_schema.name),
                             skipping_line(offset, e.message), None)
    key_part = Part(key_schema.name, rtype, k.data, notes=tuple(k.notes))
    kafka_key = '{"type":' + kafka_json(str(rtype)) + ',"data":' + kafka_json(k.data) + "}"
    if value is None:
        return DecodedRecord(key_part, None, kafka_key, "<DELETE>")
    version = None
    try:
        version = read_int16_version(value, "value")
        v = decode(value_schema, value, version, start=2)
    except SchemaError as e:
        return DecodedRecord(key_part, raw_part(value, str(e), value_schema.name, version),
                             skipping_line(offset, e.message), None)
    notes = list(v.notes)
    data = v.data
    if value_schema is GROUP_METADATA_VALUE:
        _expand_protocol(data, notes)
    value_part = Part(value_schema.name, version, data, notes=tuple(notes))
    payload = '{"version":' + kafka_json(str(version)) + ',"data":' + kafka_json(data) + "}"
    return DecodedRecord(key_part, value_part, kafka_key, payload)
