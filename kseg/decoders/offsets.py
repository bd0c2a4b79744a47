"""``__consumer_offsets``: the group coordinator's records (spec §6.1 ``--offsets-decoder``).

    key:   int16 record type | key struct (non-flexible)
    value: int16 version | value struct at that version; a null value is a tombstone

Record types, as Kafka 4's group coordinator numbers them (``CoordinatorRecordType``):
0 LegacyOffsetCommit, 1 OffsetCommit, 2 GroupMetadata (classic groups); 3-8 consumer
groups (KIP-848), 16 their regular expressions; 10-15 share groups (KIP-932); 17, 19-23
streams groups (KIP-1071). 9 (ShareGroupPartitionMetadata) is Kafka 4.0's early-access share
groups', dropped in 4.1: a record the newest definitions do not read is read by the newest older
4.x release's that do (``coordinator.with_older_parts``). 18 was dropped before any release.

Schemas generated (``kseg.decoders.derive``, ``make schemas``) from the ``group-coordinator``
jars of the newest release and of 3.9.2 (``common/message/*.json``) and, for the classic consumer
protocol a GroupMetadataValue member carries, ``kafka-clients``'
``ConsumerProtocolSubscription.json`` and ``ConsumerProtocolAssignment.json``.
"""

from __future__ import annotations

import base64
import struct

from kseg.decoders.coordinator import RecordTypes, decode_coordinator_record, with_older_parts, with_older_texts
from kseg.decoders.jvm import scala_hash_map_order
from kseg.decoders.generated import KAFKA_2 as K2
from kseg.decoders.generated import KAFKA_3 as K3
from kseg.decoders.generated import NEWEST as K4
from kseg.decoders.parts import DecodedRecord
from kseg.decoders.schema import Message, SchemaError, decode, kafka_json
from kseg.model import Record

_I16 = struct.Struct(">h")

# Record type (the key's int16) -> (key schema, value schema), generated from the newest release's jars.
RECORD_TYPES: RecordTypes = K4.OFFSETS

# Kafka 3.9 read both offset-commit key versions (0 and 1) with OffsetCommitKey/Value (its key's
# version was the record type), knew only the classic and consumer-group records (0-8), without
# the tagged fields 4.x added, and read a value of any version.
RECORD_TYPES_3X: RecordTypes = {t: K3.OFFSETS[t] for t in range(0, 9)}

LEGACY_OFFSET_COMMIT_KEY, LEGACY_OFFSET_COMMIT_VALUE = RECORD_TYPES[0]
OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE = RECORD_TYPES[1]
GROUP_METADATA_KEY, GROUP_METADATA_VALUE = RECORD_TYPES[2]
CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE = RECORD_TYPES[3]
CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE = RECORD_TYPES[5]

# --------------------------------------------------------------------------- the consumer protocol

CONSUMER_PROTOCOL_SUBSCRIPTION = K4.CONSUMER_PROTOCOL["ConsumerProtocolSubscription"]
CONSUMER_PROTOCOL_ASSIGNMENT = K4.CONSUMER_PROTOCOL["ConsumerProtocolAssignment"]


CONSUMER_PROTOCOL_TYPE = "consumer"


def _expand_protocol(schema: Message, data: dict, notes: list[str]) -> None:
    """Replace each member's subscription and assignment bytes by their decoded form, as
    DumpLogSegments does for groups of protocol type "consumer". Bytes that do not decode
    (an empty assignment before the first sync) stay base64, as in Kafka."""
    if schema.name != GROUP_METADATA_VALUE.name or data.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
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
    d = with_older_texts(d, record, RECORD_TYPES, "OFFSETS", _expand_protocol)
    d = with_older_parts(d, record, "OFFSETS", _expand_protocol)
    if record.key is None:
        legacy = (f"Error at offset {record.offset}, skipping. Failed to decode message at offset "
                  f"{record.offset} using offset topic decoder (message had a missing key)", None)
        return d.with_legacy(legacy)
    old = decode_coordinator_record(record, RECORD_TYPES_3X, _expand_protocol, check_version=False)
    d = d.with_legacy((old.kafka_key, old.kafka_payload))
    rtype, version = old.key.version, None if old.value is None else old.value.version
    if rtype is not None and rtype not in K2.OFFSETS:
        # 2.8's formatter: "Unknown group metadata message version: V" for a key of another version
        d = d.with_stop(CLASSIC_V3, f"key version {rtype}, which the offsets decoder of Kafka 2.8 does not know")
    if rtype in K2.OFFSETS and version is not None:  # the record types the classic formatters read
        # the formatters' IllegalStateException ("Unknown offset message version: V", "Unknown group
        # metadata message version: V") for a value version their definitions do not have
        what = "group metadata" if rtype == 2 else "offset-commit"
        for text, table, releases in ((CLASSIC_V3, K2.OFFSETS, "2.8"), (CLASSIC, RECORD_TYPES_3X, "2.8 to 3.6")):
            known = table[rtype][1].valid
            if version not in known:
                d = d.with_stop(text, f"{what} value version {version}, which the offsets decoder of Kafka "
                                      f"{releases} does not know (it knows {known})")
    classic = _classic_text(old)
    if classic is None:  # the formatter lets the reader's exception end the dump
        why = next((p.note for p in (old.key, old.value) if p is not None and p.is_raw), None)
        return d.with_stop(CLASSIC, f"a record the offsets decoder of Kafka 2.8 to 3.6 cannot read ({why})")
    d = d.with_variant(CLASSIC, classic)
    unread = _unread_assignment(old)
    if unread is not None:
        d = d.with_stop(CLASSIC, f"member {unread}'s assignment, which the offsets decoder of Kafka 2.8 to 3.6 "
                                 "reads by the consumer protocol and cannot")
    return d


#: the text (kseg.kafka_releases decoder_texts) of Kafka 2.8's offsets formatter: it stops (an exception) at a
#: value version its definitions do not have
CLASSIC_V3 = "offsets-v3"
#: the text of Kafka 2.8 to 3.6's group coordinator formatter
CLASSIC = "classic"


def _unread_assignment(old: DecodedRecord) -> str | None:
    """The member of a classic consumer group's record whose assignment the consumer protocol does not
    read (fewer than two bytes: one before the group's first sync; a negative version; bytes that do
    not parse), None if there is none. Kafka 2.8 to 3.6's formatter reads each such assignment with
    ConsumerProtocol.deserializeAssignment and stops at the exception (its subscriptions' failures
    are only logged)."""
    value = None if old.value is None else old.value.data
    if not value or old.key is None or old.key.version != 2 or value.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return None
    for member in value.get("members") or ():
        if isinstance(member.get("assignment"), str):
            return str(member.get("memberId"))
    return None


# --------------------------------------------------------------------------- Kafka 2.8 to 3.6's text


def _classic_text(old: DecodedRecord) -> tuple[str | None, str | None] | None:
    """The (key, payload) Kafka 2.8 to 3.6's group coordinator formatter printed for a classic group's
    record: ``offset_commit::group=G,partition=T-P`` => ``offset=N[,metadata=M]``,
    ``group_metadata::group=G`` => a JSON of the group and its members' assignments; None for a
    record it could not read (its reader's exception ended the dump)."""
    if old.key is None or old.key.version is None:
        return None
    rtype, key = old.key.version, old.key.data
    if rtype not in (0, 1, 2):  # read no further than the key's version: a value it need not read
        return f"unknown::version={rtype}", None
    if key is None:
        return None
    value = None if old.value is None else old.value.data
    if old.value is not None and value is None:
        return None
    if rtype in (0, 1):
        shown_key = f"offset_commit::group={key['group']},partition={key['topic']}-{key['partition']}"
        if value is None:
            return shown_key, "<DELETE>"
        metadata = value.get("metadata") or ""
        return shown_key, f"offset={value['offset']}" + (f",metadata={metadata}" if metadata else "")
    if rtype == 2:
        shown_key = f"group_metadata::group={key['group']}"
        if value is None:
            return shown_key, "<DELETE>"
        return shown_key, _classic_group_json(value)


def _classic_group_json(value: dict) -> str:
    protocol_type = value.get("protocolType") or ""
    members = {m["memberId"]: m for m in value.get("members") or ()}
    shown = []
    for member_id in scala_hash_map_order(list(members)):
        assignment = members[member_id].get("assignment")
        if protocol_type == CONSUMER_PROTOCOL_TYPE and isinstance(assignment, dict):
            partitions = ", ".join(f"{t['topic']}-{p}" for t in assignment.get("assignedPartitions") or ()
                                   for p in t.get("partitions") or ())
            user_data = assignment.get("userData")
            user_hex = _big_hex(base64.b64decode(user_data)) if user_data else ""
            shown.append(f"{member_id}=[{partitions}]" + (f":{user_hex}" if user_hex else ""))
        else:
            raw = base64.b64decode(assignment) if isinstance(assignment, str) else b""
            shown.append(f"{member_id}={_big_hex(raw)}")
    return ('{"protocolType":' + kafka_json(protocol_type) + ',"protocol":' + kafka_json(value.get("protocol"))
            + ',"generationId":' + kafka_json(value.get("generation")) + ',"assignment":'
            + kafka_json("{" + ",".join(shown) + "}") + "}")


def _big_hex(raw: bytes) -> str:
    """Bytes as Scala's ``"%X".format(BigInt(1, bytes))``: upper-case hex without leading zeros."""
    return f"{int.from_bytes(raw, 'big'):X}" if raw else ""
