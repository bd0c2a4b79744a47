"""The KRaft metadata log (``__cluster_metadata``), its snapshots (``*.checkpoint``) and
``bootstrap.checkpoint`` (spec §6.1 ``--cluster-metadata-decoder``).

    record value: uvarint frame version (1) | uvarint record type (apiKey) |
                  uvarint record version | the record at that version (all flexible)
    record key:   none

The KRaft control records (a control batch's single record; key: int16 version, int16
type) carry a message read at version 0: LeaderChangeMessage (2), SnapshotHeaderRecord (3),
SnapshotFooterRecord (4), KRaftVersionRecord (5), VotersRecord (6).

Schemas from Kafka's ``metadata/src/main/resources/common/metadata/*.json`` and
``clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,
SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json``. Record types or versions
newer than these tables are shown raw with a note.
"""

from __future__ import annotations

from kseg.decoders.parts import DecodedRecord, Part, raw_part
from kseg.decoders.schema import (
    F,
    M,
    Message,
    SchemaError,
    decode,
    kafka_json,
    read_uvarint,
    to_snake_upper,
)
from kseg.errors import KsegError
from kseg.log.control import control_info
from kseg.model import Record

FRAME_VERSION = 1

_ENDPOINT = (F("Name", "string"), F("Host", "string"), F("Port", "uint16"), F("SecurityProtocol", "int16"))
_FEATURE = (F("Name", "string"), F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16"))


def _r(api_key: int, name: str, valid: str, *fields) -> Message:
    # Every released metadata record is flexible from version 0.
    return M(name, valid, "0+", *fields, api_key=api_key)


RECORDS: dict[int, Message] = {m.api_key: m for m in (  # type: ignore[misc]
    _r(0, "RegisterBrokerRecord", "0-4",
       F("BrokerId", "int32"),
       F("IsMigratingZkBroker", "bool", "2+"),
       F("IncarnationId", "uuid"),
       F("BrokerEpoch", "int64"),
       F("EndPoints", "[]BrokerEndpoint", fields=_ENDPOINT),
       F("Features", "[]BrokerFeature", fields=_FEATURE),
       F("Rack", "string", nullable="0+"),
       F("Fenced", "bool", default="true"),
       F("InControlledShutdown", "bool", "1+"),
       F("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
       F("CordonedLogDirs", "[]uuid", "4+", tagged="4+", tag=1, nullable="4+", default="null")),
    _r(1, "UnregisterBrokerRecord", "0", F("BrokerId", "int32"), F("BrokerEpoch", "int64")),
    _r(2, "TopicRecord", "0", F("Name", "string"), F("TopicId", "uuid")),
    _r(3, "PartitionRecord", "0-2",
       F("PartitionId", "int32", default=-1),
       F("TopicId", "uuid"),
       F("Replicas", "[]int32"),
       F("Isr", "[]int32"),
       F("RemovingReplicas", "[]int32"),
       F("AddingReplicas", "[]int32"),
       F("Leader", "int32", default=-1),
       F("LeaderRecoveryState", "int8", tagged="0+", tag=0, default=0),
       F("LeaderEpoch", "int32", default=-1),
       F("PartitionEpoch", "int32", default=-1),
       F("Directories", "[]uuid", "1+"),
       F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=1, default="null"),
       F("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=2, default="null")),
    _r(4, "ConfigRecord", "0",
       F("ResourceType", "int8"), F("ResourceName", "string"), F("Name", "string"),
       F("Value", "string", nullable="0+")),
    _r(5, "PartitionChangeRecord", "0-2",
       F("PartitionId", "int32", default=-1),
       F("TopicId", "uuid"),
       F("Isr", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
       F("Leader", "int32", tagged="0+", tag=1, default=-2),
       F("Replicas", "[]int32", nullable="0+", tagged="0+", tag=2, default="null"),
       F("RemovingReplicas", "[]int32", nullable="0+", tagged="0+", tag=3, default="null"),
       F("AddingReplicas", "[]int32", nullable="0+", tagged="0+", tag=4, default="null"),
       F("LeaderRecoveryState", "int8", tagged="0+", tag=5, default=-1),
       F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=6, default="null"),
       F("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=7, default="null"),
       F("Directories", "[]uuid", "1+", nullable="1+", tagged="1+", tag=8, default="null")),
    _r(7, "FenceBrokerRecord", "0", F("Id", "int32"), F("Epoch", "int64")),
    _r(8, "UnfenceBrokerRecord", "0", F("Id", "int32"), F("Epoch", "int64")),
    _r(9, "RemoveTopicRecord", "0", F("TopicId", "uuid")),
    _r(10, "DelegationTokenRecord", "0",
       F("Owner", "string"), F("Requester", "string"), F("Renewers", "[]string"),
       F("IssueTimestamp", "int64"), F("MaxTimestamp", "int64"), F("ExpirationTimestamp", "int64"),
       F("TokenId", "string")),
    _r(11, "UserScramCredentialRecord", "0",
       F("Name", "string"),
       F("CredentialInfos", "[]CredentialInfo", fields=(
           F("Mechanism", "int8"), F("Salt", "bytes"), F("SaltedPassword", "bytes"), F("Iterations", "int32")))),
    _r(12, "FeatureLevelRecord", "0", F("Name", "string"), F("FeatureLevel", "int16")),
    _r(14, "ClientQuotaRecord", "0",
       F("Entity", "[]EntityData", fields=(F("EntityType", "string"), F("EntityName", "string", nullable="0+"))),
       F("Key", "string"), F("Value", "float64"), F("Remove", "bool")),
    _r(15, "ProducerIdsRecord", "0",
       F("BrokerId", "int32"), F("BrokerEpoch", "int64", default=-1), F("NextProducerId", "int64")),
    _r(17, "BrokerRegistrationChangeRecord", "0-3",
       F("BrokerId", "int32"),
       F("BrokerEpoch", "int64"),
       F("Fenced", "int8", tagged="0+", tag=0),
       F("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
       F("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
       F("CordonedLogDirs", "[]uuid", "3+", tagged="3+", tag=3, nullable="3+", default="null")),
    _r(18, "AccessControlEntryRecord", "0",
       F("Id", "uuid"), F("ResourceType", "int8"), F("ResourceName", "string"), F("PatternType", "int8"),
       F("Principal", "string"), F("Host", "string"), F("Operation", "int8"), F("PermissionType", "int8")),
    _r(19, "RemoveAccessControlEntryRecord", "0", F("Id", "uuid")),
    _r(20, "NoOpRecord", "0"),
    _r(21, "ZkMigrationStateRecord", "0", F("ZkMigrationState", "int8")),
    _r(22, "RemoveUserScramCredentialRecord", "0", F("Name", "string"), F("Mechanism", "int8")),
    _r(23, "BeginTransactionRecord", "0",
       F("Name", "string", nullable="0+", tagged="0+", tag=0, default="null")),
    _r(24, "EndTransactionRecord", "0"),
    _r(25, "AbortTransactionRecord", "0",
       F("Reason", "string", nullable="0+", tagged="0+", tag=0, default="null")),
    _r(26, "RemoveDelegationTokenRecord", "0", F("TokenId", "string")),
    _r(27, "RegisterControllerRecord", "0",
       F("ControllerId", "int32"),
       F("IncarnationId", "uuid"),
       F("ZkMigrationReady", "bool"),
       F("EndPoints", "[]ControllerEndpoint", fields=_ENDPOINT),
       F("Features", "[]ControllerFeature", fields=_FEATURE)),
    _r(28, "ClearElrRecord", "0", F("TopicName", "string")),
    _r(29, "UnregisterControllerRecord", "0", F("ControllerId", "int32")),
)}

# --------------------------------------------------------------------------- raft control records

_VOTER = (F("VoterId", "int32"),)
CONTROL_RECORDS: dict[int, tuple[Message, str | None]] = {  # control type -> (schema, kafka line label)
    2: (M("LeaderChangeMessage", "0", "0+",
          F("Version", "int16"), F("LeaderId", "int32"),
          F("Voters", "[]Voter", fields=_VOTER), F("GrantingVoters", "[]Voter", fields=_VOTER)), None),
    3: (M("SnapshotHeaderRecord", "0", "0+",
          F("Version", "int16"), F("LastContainedLogTimestamp", "int64")), "SnapshotHeader"),
    4: (M("SnapshotFooterRecord", "0", "0+", F("Version", "int16")), "SnapshotFooter"),
    5: (M("KRaftVersionRecord", "0", "0+", F("Version", "int16"), F("KRaftVersion", "int16")), "KRaftVersion"),
    6: (M("VotersRecord", "0", "0+",
          F("Version", "int16"),
          F("Voters", "[]Voter", fields=(
              F("VoterId", "int32"),
              F("VoterUuid", "uuid"),
              F("Endpoints", "[]Endpoint", fields=(F("Name", "string"), F("Host", "string"), F("Port", "uint16"))),
              F("KRaftVersionFeature", "KRaftVersionFeature", fields=(
                  F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16")))))), "KRaftVoters"),
}


LEADER_CHANGE = 2


def decode_control(record: Record) -> Part | None:
    """The message a KRaft control record carries; None for other control types (markers)."""
    try:
        type_id = control_info(record).type_id
    except KsegError:
        return None
    entry = CONTROL_RECORDS.get(type_id)
    if entry is None:
        return None
    schema = entry[0]
    if record.value is None:
        return raw_part(None, "the control record has no value", schema.name, 0)
    try:
        d = decode(schema, record.value, 0)
    except SchemaError as e:
        return raw_part(record.value, str(e), schema.name, 0)
    return Part(schema.name, 0, d.data, notes=tuple(d.notes))


def control_kafka_text(record: Record, kafka_version: str = "4") -> str | None:
    """kafka-dump-log.sh's text for a KRaft control record, e.g. ``SnapshotHeader {"version":0,...}``;
    None for the types it prints as ``controlType: ...`` or that do not decode. Kafka 4
    prints a LeaderChange as ``LeaderChange: {...}``, Kafka 3.x as ``controlType: LEADER_CHANGE(2)``."""
    try:
        type_id = control_info(record).type_id
    except KsegError:
        return None
    entry = CONTROL_RECORDS.get(type_id)
    if entry is None:
        return None
    label = entry[1]
    if label is None:
        if type_id != LEADER_CHANGE or kafka_version == "3.9":
            return None
        label = "LeaderChange:"
    part = decode_control(record)
    if part is None or part.data is None:
        return None
    return f"{label} {kafka_json(part.data)}"


# --------------------------------------------------------------------------- records


def decode_metadata_value(value: bytes, records: dict[int, Message] = RECORDS) -> Part:
    """Decode a metadata record's value (frame, type, version, record) by ``records`` (the
    metadata log's by default); raw with a note if it cannot."""
    frame = type_id = version = None
    schema = None
    try:
        frame, pos = read_uvarint(value, 0, what="frame version")
        if frame != FRAME_VERSION:
            raise SchemaError(f"unknown metadata frame version {frame}", position=0,
                              expected=FRAME_VERSION, found=frame)
        type_id, pos = read_uvarint(value, pos, what="record type")
        version, pos = read_uvarint(value, pos, what="record version")
        schema = records.get(type_id)
        if schema is None:
            raise SchemaError(f"unknown metadata record type {type_id}", found=type_id)
        d = decode(schema, value, version, start=pos)
    except SchemaError as e:
        extra: dict[str, int | str] = {} if type_id is None else {"type_id": type_id}
        if schema is not None:
            extra["type"] = to_snake_upper(schema.name)
        return raw_part(value, str(e), None if schema is None else schema.name, version, **extra)
    return Part(schema.name, version, d.data, {"type": to_snake_upper(schema.name), "type_id": type_id},
                tuple(d.notes))


def decode_metadata_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one metadata-log record: the value of a data record, the message of a KRaft
    control record. Kafka prints no key for these."""
    if is_control:
        part = decode_control(record)
        return None if part is None else DecodedRecord(None, part, None, None)
    if record.value is None:
        note = "the record has no value"
        return DecodedRecord(None, raw_part(None, note), None, f"Error at {record.offset}, skipping. {note}")
    part = decode_metadata_value(record.value)
    if part.data is None:
        return DecodedRecord(None, part, None, f"Error at {record.offset}, skipping. {part.note}")
    payload = ('{"type":' + kafka_json(part.extra["type"]) + ',"version":' + str(part.version)
               + ',"data":' + kafka_json(part.data) + "}")
    return DecodedRecord(None, part, None, payload)
