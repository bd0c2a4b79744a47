"""``__consumer_offsets``: the group coordinator's records (spec §6.1 ``--offsets-decoder``).

    key:   int16 record type | key struct (non-flexible)
    value: int16 version | value struct at that version; a null value is a tombstone

Record types, as Kafka 4.4's group coordinator numbers them (``CoordinatorRecordType``):
0 LegacyOffsetCommit, 1 OffsetCommit, 2 GroupMetadata (classic groups); 3-8 consumer
groups (KIP-848), 16 their regular expressions; 10-15 share groups (KIP-932); 17, 19-23
streams groups (KIP-1071). 9 and 18 were dropped before release and are unknown to Kafka 4.

Schemas from Kafka 4.4's ``group-coordinator`` jar (``common/message/*.json``) and,
for the classic consumer protocol a GroupMetadataValue member carries, ``clients``'
``ConsumerProtocolSubscription.json`` and ``ConsumerProtocolAssignment.json``; the
tables restate their fields, versions, tags and defaults, nothing else.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import replace

from kseg.decoders.coordinator import RecordTypes, decode_coordinator_record
from kseg.decoders.parts import DecodedRecord
from kseg.decoders.schema import F, Field, M, Message, SchemaError, decode
from kseg.model import Record

_I16 = struct.Struct(">h")

# --------------------------------------------------------------------------- classic groups

LEGACY_OFFSET_COMMIT_KEY = M("LegacyOffsetCommitKey", "0", "none",
    F("group", "string", "0"),
    F("topic", "string", "0"),
    F("partition", "int32", "0"),
)

LEGACY_OFFSET_COMMIT_VALUE = M("LegacyOffsetCommitValue", "0", "none",
    F("offset", "int64", "0"),
    F("metadata", "string", "0"),
    F("commitTimestamp", "int64", "0"),
)

OFFSET_COMMIT_KEY = M("OffsetCommitKey", "0", "none",
    F("group", "string", "0"),
    F("topic", "string", "0"),
    F("partition", "int32", "0"),
)

OFFSET_COMMIT_VALUE = M("OffsetCommitValue", "0-4", "4+",
    F("offset", "int64"),
    F("leaderEpoch", "int32", "3+", default=-1),
    F("metadata", "string"),
    F("commitTimestamp", "int64"),
    F("expireTimestamp", "int64", "1", default=-1),
    F("topicId", "uuid", tagged="4+", tag=0),
)

GROUP_METADATA_KEY = M("GroupMetadataKey", "0", "none",
    F("group", "string", "0"),
)

GROUP_METADATA_VALUE = M("GroupMetadataValue", "0-4", "4+",
    F("protocolType", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("currentStateTimestamp", "int64", "2+", default=-1),
    F("members", "[]MemberMetadata", fields=(
        F("memberId", "string"),
        F("groupInstanceId", "string", "3+", nullable="3+", default="null"),
        F("clientId", "string"),
        F("clientHost", "string"),
        F("rebalanceTimeout", "int32", "1+", default=-1),
        F("sessionTimeout", "int32"),
        F("subscription", "bytes"),
        F("assignment", "bytes"),
    )),
)

# --------------------------------------------------------------------------- consumer, share and streams groups

CONSUMER_GROUP_METADATA_KEY = M("ConsumerGroupMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

CONSUMER_GROUP_METADATA_VALUE = M("ConsumerGroupMetadataValue", "0", "0+",
    F("Epoch", "int32"),
    F("MetadataHash", "int64", tagged="0+", tag=0, default=0),
)

CONSUMER_GROUP_PARTITION_METADATA_KEY = M("ConsumerGroupPartitionMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = M("ConsumerGroupPartitionMetadataValue", "0", "0+",
    F("Topics", "[]TopicMetadata", fields=(
        F("TopicId", "uuid"),
        F("TopicName", "string"),
        F("NumPartitions", "int32"),
        F("PartitionMetadata", "[]PartitionMetadata", fields=(
            F("Partition", "int32"),
            F("Racks", "[]string"),
        )),
    )),
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = M("ConsumerGroupMemberMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = M("ConsumerGroupMemberMetadataValue", "0", "0+",
    F("InstanceId", "string", nullable="0+"),
    F("RackId", "string", nullable="0+"),
    F("ClientId", "string"),
    F("ClientHost", "string"),
    F("SubscribedTopicNames", "[]string"),
    F("SubscribedTopicRegex", "string", nullable="0+"),
    F("RebalanceTimeoutMs", "int32", default=-1),
    F("ServerAssignor", "string", nullable="0+"),
    F("ClassicMemberMetadata", "ClassicMemberMetadata", nullable="0+", tagged="0+", tag=0, default="null", fields=(
        F("SessionTimeoutMs", "int32"),
        F("SupportedProtocols", "[]ClassicProtocol", fields=(
            F("Name", "string"),
            F("Metadata", "bytes"),
        )),
    )),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M("ConsumerGroupTargetAssignmentMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M("ConsumerGroupTargetAssignmentMetadataValue", "0", "0+",
    F("AssignmentEpoch", "int32"),
    F("AssignmentTimestamp", "int64", tagged="0+", tag=0, default=0),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M("ConsumerGroupTargetAssignmentMemberKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M("ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
    F("TopicPartitions", "[]TopicPartition", fields=(
        F("TopicId", "uuid"),
        F("Partitions", "[]int32"),
    )),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M("ConsumerGroupCurrentMemberAssignmentKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
    F("MemberEpoch", "int32"),
    F("PreviousMemberEpoch", "int32"),
    F("State", "int8"),
    F("AssignedPartitions", "[]TopicPartitions", fields=(
        F("TopicId", "uuid"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    F("PartitionsPendingRevocation", "[]TopicPartitions", fields=(
        F("TopicId", "uuid"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
)

SHARE_GROUP_MEMBER_METADATA_KEY = M("ShareGroupMemberMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

SHARE_GROUP_MEMBER_METADATA_VALUE = M("ShareGroupMemberMetadataValue", "0", "0+",
    F("RackId", "string", nullable="0+"),
    F("ClientId", "string"),
    F("ClientHost", "string"),
    F("SubscribedTopicNames", "[]string"),
)

SHARE_GROUP_METADATA_KEY = M("ShareGroupMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

SHARE_GROUP_METADATA_VALUE = M("ShareGroupMetadataValue", "0", "0+",
    F("Epoch", "int32"),
    F("MetadataHash", "int64"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M("ShareGroupTargetAssignmentMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M("ShareGroupTargetAssignmentMetadataValue", "0", "0+",
    F("AssignmentEpoch", "int32"),
    F("AssignmentTimestamp", "int64", tagged="0+", tag=0, default=0),
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M("ShareGroupTargetAssignmentMemberKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M("ShareGroupTargetAssignmentMemberValue", "0", "0+",
    F("TopicPartitions", "[]TopicPartition", fields=(
        F("TopicId", "uuid"),
        F("Partitions", "[]int32"),
    )),
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M("ShareGroupCurrentMemberAssignmentKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M("ShareGroupCurrentMemberAssignmentValue", "0", "0+",
    F("MemberEpoch", "int32"),
    F("PreviousMemberEpoch", "int32"),
    F("State", "int8"),
    F("AssignedPartitions", "[]TopicPartitions", fields=(
        F("TopicId", "uuid"),
        F("Partitions", "[]int32"),
    )),
)

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = M("ShareGroupStatePartitionMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = M("ShareGroupStatePartitionMetadataValue", "0", "0+",
    F("InitializingTopics", "[]TopicPartitionsInfo", fields=(
        F("TopicId", "uuid"),
        F("TopicName", "string"),
        F("Partitions", "[]int32"),
    )),
    F("InitializedTopics", "[]TopicPartitionsInfo", fields=(
        F("TopicId", "uuid"),
        F("TopicName", "string"),
        F("Partitions", "[]int32"),
    )),
    F("DeletingTopics", "[]TopicInfo", fields=(
        F("TopicId", "uuid"),
        F("TopicName", "string"),
    )),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = M("ConsumerGroupRegularExpressionKey", "0", "none",
    F("GroupId", "string", "0"),
    F("RegularExpression", "string", "0"),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = M("ConsumerGroupRegularExpressionValue", "0", "0+",
    F("Topics", "[]string"),
    F("Version", "int64"),
    F("Timestamp", "int64"),
)

STREAMS_GROUP_METADATA_KEY = M("StreamsGroupMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

STREAMS_GROUP_METADATA_VALUE = M("StreamsGroupMetadataValue", "0", "0+",
    F("Epoch", "int32"),
    F("MetadataHash", "int64"),
    F("ValidatedTopologyEpoch", "int32", tagged="0+", tag=0, default=-1),
    F("LastAssignmentConfigs", "[]LastAssignmentConfig", nullable="0+", tagged="0+", tag=1, default="null", fields=(
        F("Key", "string"),
        F("Value", "string"),
    )),
    F("StoredDescriptionTopologyEpoch", "int32", tagged="0+", tag=2, default=-1),
    F("FailedDescriptionTopologyEpoch", "int32", tagged="0+", tag=3, default=-1),
)

STREAMS_GROUP_TOPOLOGY_KEY = M("StreamsGroupTopologyKey", "0", "none",
    F("GroupId", "string", "0"),
)

STREAMS_GROUP_TOPOLOGY_VALUE = M("StreamsGroupTopologyValue", "0", "0+",
    F("Epoch", "int32"),
    F("Subtopologies", "[]Subtopology", fields=(
        F("SubtopologyId", "string"),
        F("SourceTopics", "[]string"),
        F("SourceTopicRegex", "[]string"),
        F("StateChangelogTopics", "[]TopicInfo", fields=(
            F("Name", "string"),
            F("Partitions", "int32"),
            F("ReplicationFactor", "int16"),
            F("TopicConfigs", "[]TopicConfig", fields=(
                F("key", "string"),
                F("value", "string"),
            )),
        )),
        F("RepartitionSinkTopics", "[]string"),
        F("RepartitionSourceTopics", "[]TopicInfo", fields=(
            F("Name", "string"),
            F("Partitions", "int32"),
            F("ReplicationFactor", "int16"),
            F("TopicConfigs", "[]TopicConfig", fields=(
                F("key", "string"),
                F("value", "string"),
            )),
        )),
        F("CopartitionGroups", "[]CopartitionGroup", fields=(
            F("SourceTopics", "[]int16"),
            F("SourceTopicRegex", "[]int16"),
            F("RepartitionSourceTopics", "[]int16"),
        )),
    )),
)

STREAMS_GROUP_MEMBER_METADATA_KEY = M("StreamsGroupMemberMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

STREAMS_GROUP_MEMBER_METADATA_VALUE = M("StreamsGroupMemberMetadataValue", "0", "0+",
    F("InstanceId", "string", nullable="0+"),
    F("RackId", "string", nullable="0+"),
    F("ClientId", "string"),
    F("ClientHost", "string"),
    F("RebalanceTimeoutMs", "int32", default=-1),
    F("TopologyEpoch", "int32"),
    F("ProcessId", "string"),
    F("UserEndpoint", "Endpoint", nullable="0+", default="null", fields=(
        F("Host", "string"),
        F("Port", "uint16"),
    )),
    F("ClientTags", "[]KeyValue", fields=(
        F("Key", "string"),
        F("Value", "string"),
    )),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = M("StreamsGroupTargetAssignmentMetadataKey", "0", "none",
    F("GroupId", "string", "0"),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = M("StreamsGroupTargetAssignmentMetadataValue", "0", "0+",
    F("AssignmentEpoch", "int32"),
    F("AssignmentTimestamp", "int64", tagged="0+", tag=0, default=0),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = M("StreamsGroupTargetAssignmentMemberKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = M("StreamsGroupTargetAssignmentMemberValue", "0", "0+",
    F("ActiveTasks", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
    )),
    F("StandbyTasks", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
    )),
    F("WarmupTasks", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
    )),
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = M("StreamsGroupCurrentMemberAssignmentKey", "0", "none",
    F("GroupId", "string", "0"),
    F("MemberId", "string", "0"),
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = M("StreamsGroupCurrentMemberAssignmentValue", "0", "0+",
    F("MemberEpoch", "int32"),
    F("PreviousMemberEpoch", "int32"),
    F("State", "int8"),
    F("ActiveTasks", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    F("StandbyTasks", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    F("WarmupTasks", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    F("ActiveTasksPendingRevocation", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    F("StandbyTasksPendingRevocation", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
    F("WarmupTasksPendingRevocation", "[]TaskIds", fields=(
        F("SubtopologyId", "string"),
        F("Partitions", "[]int32"),
        F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
    )),
)

# Record type (the key's int16) -> (key schema, value schema), Kafka 4.4.
RECORD_TYPES: RecordTypes = {
    0: (LEGACY_OFFSET_COMMIT_KEY, LEGACY_OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    10: (SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: (SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    12: (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: (SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: (SHARE_GROUP_STATE_PARTITION_METADATA_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
    16: (CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
    17: (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE),
    19: (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE),
    20: (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    21: (STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    22: (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    23: (STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE),
}



def _without(m: Message, *names: str) -> Message:
    """``m`` without the (tagged) fields ``names``, at any depth: an older release's schema."""
    def strip(fields: tuple[Field, ...]) -> tuple[Field, ...]:
        return tuple(replace(f, fields=None if f.fields is None else strip(f.fields))
                     for f in fields if f.name not in names)
    return replace(m, fields=strip(m.fields))


# Kafka 3.9 read both offset-commit key versions (0 and 1) with OffsetCommitKey/Value, knew
# only the classic and consumer-group records (0-8), without the tagged fields 4.x added,
# and read a value of any version.
_VALUES_3X = {
    1: _without(OFFSET_COMMIT_VALUE, "topicId"),
    3: _without(CONSUMER_GROUP_METADATA_VALUE, "MetadataHash"),
    6: _without(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, "AssignmentTimestamp"),
    8: _without(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, "AssignmentEpochs"),
}
RECORD_TYPES_3X: RecordTypes = {t: (RECORD_TYPES[t][0], _VALUES_3X.get(t, RECORD_TYPES[t][1])) for t in range(1, 9)}
RECORD_TYPES_3X[0] = RECORD_TYPES_3X[1]

# --------------------------------------------------------------------------- the consumer protocol

CONSUMER_PROTOCOL_SUBSCRIPTION = M("ConsumerProtocolSubscription", "0-3", "none",
    F("Topics", "[]string"),
    F("UserData", "bytes", nullable="0+", default="null"),
    F("OwnedPartitions", "[]TopicPartition", "1+", fields=(
        F("Topic", "string", "1+"),
        F("Partitions", "[]int32", "1+"),
    )),
    F("GenerationId", "int32", "2+", default="-1"),
    F("RackId", "string", "3+", nullable="3+", default="null"),
)

CONSUMER_PROTOCOL_ASSIGNMENT = M("ConsumerProtocolAssignment", "0-3", "none",
    F("AssignedPartitions", "[]TopicPartition", fields=(
        F("Topic", "string"),
        F("Partitions", "[]int32"),
    )),
    F("UserData", "bytes", nullable="0+", default="null"),
)


CONSUMER_PROTOCOL_TYPE = "consumer"


def _expand_protocol(schema: Message, data: dict, notes: list[str]) -> None:
    """Replace each member's subscription and assignment bytes by their decoded form, as
    DumpLogSegments does for groups of protocol type "consumer". Bytes that do not decode
    (an empty assignment before the first sync) stay base64, as in Kafka."""
    if schema is not GROUP_METADATA_VALUE or data.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
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
    """Decode one ``__consumer_offsets`` record (None for control records: transaction markers).
    The kafka lines are Kafka 4's; ``kafka_legacy`` holds Kafka 3.x's where they differ."""
    if is_control:
        return None
    d = decode_coordinator_record(record, RECORD_TYPES, _expand_protocol)
    if record.key is None:
        legacy = (f"Error at offset {record.offset}, skipping. Failed to decode message at offset "
                  f"{record.offset} using offset topic decoder (message had a missing key)", None)
        return d.with_legacy(legacy)
    old = decode_coordinator_record(record, RECORD_TYPES_3X, _expand_protocol, check_version=False)
    return d.with_legacy((old.kafka_key, old.kafka_payload))
