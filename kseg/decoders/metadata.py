"""The KRaft metadata log (``__cluster_metadata``), its snapshots (``*.checkpoint``) and
``bootstrap.checkpoint`` (spec §6.1 ``--cluster-metadata-decoder``).

    record value: uvarint frame version (1) | uvarint record type (apiKey) |
                  uvarint record version | the record at that version (all flexible)
    record key:   none

The KRaft control records (a control batch's single record; key: int16 version, int16
type) carry a message read at version 0: LeaderChangeMessage (2), SnapshotHeaderRecord (3),
SnapshotFooterRecord (4), KRaftVersionRecord (5), VotersRecord (6).

Schemas generated (``make schemas``) from the newest release's ``kafka-metadata`` jar
(``common/metadata/*.json``) and ``kafka-clients`` jar (``common/message/{LeaderChangeMessage,
SnapshotHeaderRecord,SnapshotFooterRecord,KRaftVersionRecord,VotersRecord}.json``). Record types or versions
newer than these tables are shown raw with a note.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from kseg.decoders.parts import DecodedRecord, Part, raw_part
from kseg.decoders.generated import NEWEST as K4
from kseg.decoders.generated import DEFINITIONS_TEXTS, definitions_text
from kseg.decoders.generated import KAFKA_2 as K2
from kseg.decoders.generated import KAFKA_3 as K3
from kseg.decoders.generated import KAFKA_3_6 as K36
from kseg.decoders.schema import (
    Message,
    SchemaError,
    decode,
    kafka_json,
    read_uvarint,
    to_snake_upper,
    written_at,
)
from kseg.errors import KsegError, OlderToolStopsError
from kseg.kafka_releases import DEFAULT, DumpLogRelease, as_release
from kseg.log.control import control_info
from kseg.model import Record

FRAME_VERSION = 1
#: the frame version of Kafka 2.8's KRaft preview, whose records (its own definitions: other record
#: types and layouts) no later release reads
PREVIEW_FRAME_VERSION = 0
#: the decoder text (kseg.kafka_releases decoder_texts) of Kafka 2.8's tool, which reads by its definitions
PREVIEW_TEXT = definitions_text(K2)

# metadata record type (apiKey) -> schema, generated from the newest release's kafka-metadata jar.
RECORDS: dict[int, Message] = K4.METADATA

# --------------------------------------------------------------------------- raft control records

# control type (ControlRecordType) -> (schema, kafka line label), from kafka-clients' definitions
CONTROL_RECORDS: dict[int, tuple[Message, str | None]] = {
    2: (K4.CONTROL["LeaderChangeMessage"], None),
    3: (K4.CONTROL["SnapshotHeaderRecord"], "SnapshotHeader"),
    4: (K4.CONTROL["SnapshotFooterRecord"], "SnapshotFooter"),
    5: (K4.CONTROL["KRaftVersionRecord"], "KRaftVersion"),
    6: (K4.CONTROL["VotersRecord"], "KRaftVoters"),
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
        if type_id == PREVIEW_LEADER_CHANGE:  # Kafka 2.8's preview: its LEADER_CHANGE was type 3
            preview = K2.CONTROL["LeaderChangeMessage"]
            try:
                d = decode(preview, record.value, 0)
            except SchemaError:
                return raw_part(record.value, str(e), schema.name, 0)
            return Part(preview.name, 0, d.data, notes=tuple(d.notes))
        return raw_part(record.value, str(e), schema.name, 0)
    return Part(schema.name, 0, d.data, notes=tuple(d.notes))


#: the control type of Kafka 2.8's LeaderChangeMessage (later releases' SnapshotHeaderRecord), read as that
#: where it does not read as a snapshot header
PREVIEW_LEADER_CHANGE = 3


def control_kafka_text(record: Record, release: "str | DumpLogRelease" = DEFAULT) -> str | None:
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
        if type_id != LEADER_CHANGE or not as_release(release).leader_change_text:
            return None
        label = "LeaderChange:"
    schema = entry[0]
    try:  # as Java's generated reader reads it: bytes after the message left unread
        if record.value is None:
            raise SchemaError("the control record has no value")
        data = decode(schema, record.value, 0, exact=False).data
    except SchemaError as e:
        # the tool deserializes the message to print it, and stops at the exception (a Kafka 2.8 leader
        # change, type 3, read as a snapshot header, for one)
        raise OlderToolStopsError(f"a {schema.name} control record that does not read ({e}): "
                                  f"Kafka {as_release(release).line}'s tool stops here") from None
    # Kafka prints the message at the version its own Version field holds, not the one read.
    shown = written_at(schema, data, data.get("version", 0))
    return f"{label} {kafka_json(shown)}"


# --------------------------------------------------------------------------- records


def decode_metadata_value(value: bytes, records: dict[int, Message] = RECORDS) -> Part:
    """Decode a metadata record's value (frame, type, version, record) by ``records`` (the
    metadata log's by default); raw with a note if it cannot."""
    return _decoded_value(value, records)[0]


def _decoded_value(value: bytes, records: dict[int, Message], above: bool = False,
                   frame_version: int = FRAME_VERSION) -> tuple[Part, str | None]:
    """``decode_metadata_value``, and what Kafka's reader (MetadataRecordSerde) says where it
    fails, which kafka-dump-log.sh prints after "skipping." (None: it reads the record).
    ``above``: a version above a record's highest read as Java reads it (``schema.decode``);
    ``frame_version``: the one frame version the reader takes (2.8's preview: 0)."""
    frame = type_id = version = None
    schema = None
    stage = "frame version"
    try:
        frame, pos = read_uvarint(value, 0, what="frame version")
        if frame != frame_version:
            raise SchemaError(f"unknown metadata frame version {frame}", position=0,
                              expected=frame_version, found=frame)
        stage = "type"
        type_id, pos = read_uvarint(value, pos, what="record type")
        stage = "version"
        version, pos = read_uvarint(value, pos, what="record version")
        stage = "record"
        schema = records.get(type_id)
        if schema is None:
            raise SchemaError(f"unknown metadata record type {type_id}", found=type_id)
        d = decode(schema, value, version, start=pos, exact=False, above=above)
        if d.end != len(value):
            stage = "garbage"
            raise SchemaError(f"{len(value) - d.end} bytes after the end of {schema.name}", position=d.end,
                              expected=f"{d.end - pos} bytes", found=f"{len(value) - pos} bytes")
    except SchemaError as e:
        extra: dict[str, int | str] = {} if type_id is None else {"type_id": type_id}
        if schema is not None:
            extra["type"] = to_snake_upper(schema.name)
        part = raw_part(value, str(e), None if schema is None else schema.name, version, **extra)
        garbage = len(value) - (d.end if stage == "garbage" else 0)
        return part, _kafka_parse_error(stage, frame, type_id, schema is not None, garbage, frame_version)
    return Part(schema.name, version, d.data, {"type": to_snake_upper(schema.name), "type_id": type_id},
                tuple(d.notes)), None


def _kafka_parse_error(stage: str, frame: int | None, type_id: int | None, known: bool, garbage: int,
                       frame_version: int = FRAME_VERSION) -> str:
    """MetadataRecordSerde's exception message for a record it cannot read (Kafka 3.x and 4.x; 2.8's
    where it says the same)."""
    if stage == "frame version" and frame is not None:
        if frame == PREVIEW_FRAME_VERSION and frame_version != PREVIEW_FRAME_VERSION:
            return ("Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                    "preview release of KRaft in 2.8 to newer versions are not supported.")
        return (f"Could not deserialize metadata record due to unknown frame version {frame}"
                f"(only frame version {frame_version} is supported)")
    if stage in ("frame version", "type", "version"):
        return f"Error while reading {stage}"
    if not known:
        return f"{UNKNOWN_METADATA_ID}{type_id}"
    if stage == "garbage":
        return f"Found {garbage} byte(s) of garbage after {type_id}"
    return f"Failed to deserialize record with type {type_id}"


def decode_metadata_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one metadata-log record: the value of a data record, the message of a KRaft
    control record. Kafka prints no key for these."""
    if is_control:
        part = decode_control(record)
        return None if part is None else DecodedRecord(None, part, None, None)
    if record.value is None:
        note = "the record has no value"
        return DecodedRecord(None, raw_part(None, note), None, f"Error at {record.offset}, skipping. {note}")
    part, kafka_error = _decoded_value(record.value, RECORDS)
    payload = _payload(record.offset, part, kafka_error)
    if kafka_error is not None:  # Kafka's tool reads a version above the highest as Java does (kseg refuses it)
        payload = _payload(record.offset, *_decoded_value(record.value, RECORDS, above=True))
    if part.data is None and record.value[:1] == bytes((PREVIEW_FRAME_VERSION,)):
        part = _preview_part(record.value, part)
    # Kafka 2.8's tool reads by its own definitions, frame version 0 only
    preview_text = partial(_older_payload, record, K2.METADATA, PREVIEW_FRAME_VERSION)
    d = DecodedRecord(None, part, None, payload, kafka_deferred=((PREVIEW_TEXT, preview_text),))
    type_id = part.extra.get("type_id")
    if type_id is None:
        return d
    for name, older, changed in _CHANGED:
        if type_id in changed:
            # a record type a later release added or changed, as the older release's tool prints it
            d = d.with_deferred(name, partial(_older_payload, record, older))
    return d


#: what a record decoded by Kafka 2.8's preview definitions says in its ``definitions``
PREVIEW_DEFINITIONS = K2.RELEASE


def _preview_part(value: bytes, part: Part) -> Part:
    """A record of Kafka 2.8's KRaft preview (frame version 0), which later tools cannot read, decoded by its
    own definitions and saying so (``definitions``); ``part``, the newest's reading, where those do not
    read it either."""
    preview, _ = _decoded_value(value, K2.METADATA, frame_version=PREVIEW_FRAME_VERSION)
    if preview.data is None:
        return part
    return replace(preview, extra={**preview.extra, "definitions": PREVIEW_DEFINITIONS})


def preview_fields_fit(part: Part) -> bool:
    """Whether a record of Kafka 2.8's KRaft preview has the fields of the newest release's record of its
    type (its layout aside: the preview's records were not flexible), so that what applies the one
    applies the other."""
    newest = RECORDS.get(part.extra.get("type_id", -1))
    return (newest is not None and newest.name == part.schema and part.data is not None
            and _fits(part.data, newest.fields, part.version or 0))


def _fits(data: dict, fields: tuple, version: int) -> bool:
    """Whether every field of ``data`` is one ``fields`` define at ``version`` (with its structs' fields):
    a record the newest definitions name the same (its layout aside)."""
    by_name = {f.json_name: f for f in fields if version in f.versions}
    for name, value in data.items():
        f = by_name.get(name)
        if f is None:
            return False
        items = value if isinstance(value, list) else [value]
        if f.fields is not None and not all(_fits(v, f.fields, version) for v in items if isinstance(v, dict)):
            return False
    return True


#: (decoder text, an older release's metadata table, the record types whose schemas differ from RECORDS'): each
#: older 4.x line's, and 3.9's and 3.6's (their tools read the metadata log by their own definitions too: a later
#: record version is "Failed to deserialize record with type N", a later type "Unknown metadata id N"; their
#: coordinator records go by the "3" texts)
_CHANGED = [(name, m.METADATA, frozenset(t for t in {*RECORDS, *m.METADATA} if RECORDS.get(t) != m.METADATA.get(t)))
            for name, m in {**DEFINITIONS_TEXTS, definitions_text(K3): K3, definitions_text(K36): K36}.items()]


def _older_payload(record: Record, older: dict[int, Message], frame_version: int = FRAME_VERSION) -> tuple[None, str]:
    """What an older release's tool prints for a record a later release added or changed: read by
    its own definitions, a later version of a record as Java reads it (``above``)."""
    assert record.value is not None
    return None, _payload(record.offset, *_decoded_value(record.value, older, above=True,
                                                         frame_version=frame_version))


#: Kafka's text (MetadataRecordSerde's exception) for a metadata record type it does not know
UNKNOWN_METADATA_ID = "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id "


def _payload(offset: int, part: Part, kafka_error: str | None = None) -> str:
    """What follows "payload: " for a metadata record's decoded value (``kafka_error``: what
    Kafka's reader says of one it cannot read)."""
    if part.data is None:
        return f"Error at {offset}, skipping. {kafka_error or part.note}"
    return ('{"type":' + kafka_json(part.extra["type"]) + ',"version":' + str(part.version)
            + ',"data":' + kafka_json(part.data) + "}")
