"""Coordinator records: what the group, share and transaction coordinators write to
``__consumer_offsets``, ``__share_group_state`` and ``__transaction_state`` (Kafka 4's
``CoordinatorRecordSerde``).

    key:   int16 record type | the key message of that type (non-flexible)
    value: int16 version | the value message of that type at that version;
           a null value is a tombstone

Kafka 4's kafka-dump-log.sh prints one of these as
``key: {"type":"<type>","data":{...}} payload: {"version":"<v>","data":{...}}``
(``<DELETE>`` for a tombstone), or its error texts when the record does not read.

Rules: no I/O, never raises; a record that does not decode keeps its bytes with a note.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Callable

from kseg.decoders.generated import DEFINITIONS_TEXTS
from kseg.decoders.parts import DecodedRecord, Part, raw_part, skipping_line
from kseg.decoders.schema import Message, SchemaError, Versions, decode, kafka_json, read_int16_version
from kseg.model import Record

__all__ = ["RecordTypes", "decode_coordinator_record", "kafka_key_json", "kafka_value_json", "with_older_parts",
           "with_older_texts"]

# Record type (the key's int16) -> (key schema, value schema).
RecordTypes = dict[int, tuple[Message, Message]]
# Called with the decoded value's data (changed in place) and the notes list.
ValueHook = Callable[[Message, dict, list[str]], None]


def kafka_key_json(rtype: int, data: dict) -> str:
    return '{"type":' + kafka_json(str(rtype)) + ',"data":' + kafka_json(data) + "}"


def kafka_value_json(version: int, data: dict) -> str:
    return '{"version":' + kafka_json(str(version)) + ',"data":' + kafka_json(data) + "}"


def missing_key_line(offset: int) -> str:
    """Kafka 4 stops the dump with this (an exception); kseg prints it and goes on."""
    return (f"Failed to decode message at offset {offset} using the specified decoder "
            "(message had a missing key)")


def decode_coordinator_record(record: Record, types: RecordTypes, hook: ValueHook | None = None, *,
                              check_version: bool = True) -> DecodedRecord:
    """Decode one coordinator record by its key's record type. ``check_version=False``: read
    a value of a version newer than its schema, or below it, as Kafka 3.x did, field by field."""
    offset, key, value = record.offset, record.key, record.value
    not_decoded = "not decoded: the key could not be"
    if key is None:
        return DecodedRecord(raw_part(None, "the record has no key"),
                             None if value is None else raw_part(value, not_decoded),
                             skipping_line(offset, missing_key_line(offset)), None)
    try:
        rtype = read_int16_version(key, "key")
    except SchemaError as e:
        return DecodedRecord(raw_part(key, str(e)), None if value is None else raw_part(value, not_decoded),
                             skipping_line(offset, "Could not read version from key's buffer."), None)
    schemas = types.get(rtype)
    if schemas is None:
        note = f"unknown record type {rtype}"
        return DecodedRecord(raw_part(key, note, version=rtype),
                             None if value is None else raw_part(value, note),
                             f"Unknown record type {rtype} at offset {offset}, skipping.", None)
    key_schema, value_schema = schemas
    try:
        # Kafka 3.x's keys were read at the record type as their version (OffsetCommitKey 0-1,
        # GroupMetadataKey 2, ...); Kafka 4's at version 0.
        k = decode(key_schema, key, rtype if rtype in key_schema.valid else 0, start=2)
    except SchemaError as e:
        return DecodedRecord(raw_part(key, str(e), key_schema.name, rtype),
                             None if value is None else raw_part(value, not_decoded, value_schema.name),
                             skipping_line(offset, _read_failed(rtype, "key", e)), None)
    key_part = Part(key_schema.name, rtype, k.data, notes=tuple(k.notes))
    kafka_key = kafka_key_json(rtype, k.data)
    if value is None:
        return DecodedRecord(key_part, None, kafka_key, "<DELETE>")
    if len(value) < 2:
        return DecodedRecord(key_part, raw_part(value, "value shorter than its int16 version", value_schema.name),
                             skipping_line(offset, "Could not read version from value's buffer."), None)
    version = read_int16_version(value, "value")
    read_at = version
    if not check_version and version > value_schema.highest:
        value_schema = replace(value_schema, valid=Versions(value_schema.valid.lo, None))
    if not check_version and version < value_schema.valid.lo:
        # Java's generated reader tests only "at least" and "at most": below the lowest, as the lowest
        read_at = value_schema.valid.lo
    if read_at not in value_schema.valid:
        note = f"{value_schema.name} version {version} is not one kseg knows (expected {value_schema.valid})"
        return DecodedRecord(key_part, raw_part(value, note, value_schema.name, version),
                             skipping_line(offset, f"Found an unknown record version {version} for {rtype} type"),
                             None)
    try:
        v = decode(value_schema, value, read_at, start=2, exact=False)
    except SchemaError as e:
        return DecodedRecord(key_part, raw_part(value, str(e), value_schema.name, version),
                             skipping_line(offset, _read_failed(version, "value", e)), None)
    notes = list(v.notes)
    if v.end != len(value):  # Kafka reads the message and ignores what follows
        notes.append(f"{len(value) - v.end} bytes after the end of {value_schema.name} ignored")
    data = v.data
    if hook is not None:
        hook(value_schema, data, notes)
    value_part = Part(value_schema.name, version, data, notes=tuple(notes))
    return DecodedRecord(key_part, value_part, kafka_key, kafka_value_json(version, data))


def with_older_texts(d: DecodedRecord, record: Record, newest: RecordTypes, family: str,
                     hook: ValueHook | None = None) -> DecodedRecord:
    """``d`` with the texts of the older 4.x tools (``generated.DEFINITIONS_TEXTS``), each read by its
    own release's ``family`` table, where the record's type is one whose schemas have changed since."""
    rtype = None if d.key is None else d.key.version
    if rtype is None:
        return d
    for name, table, changed in _changed(newest, family):
        if rtype in changed:
            d = d.with_deferred(name, partial(_texts, record, table, hook))
    return d


def _texts(record: Record, table: RecordTypes, hook: ValueHook | None) -> tuple[str | None, str | None]:
    old = decode_coordinator_record(record, table, hook)
    return old.kafka_key, old.kafka_payload


def with_older_parts(d: DecodedRecord, record: Record, family: str, hook: ValueHook | None = None) -> DecodedRecord:
    """``d`` with its key and value as the newest older 4.x release's ``family`` table reads them whole (every
    byte, nothing skipped), where the newest release's does not: a record type a later release dropped or a version it redefined, as an
    early-access feature's records are (Kafka 4.0's share groups wrote ShareGroupPartitionMetadata, type 9,
    and a ShareGroupMetadataValue version 0 without the MetadataHash 4.1 put in it). The parts name the
    definitions they were read by (``"definitions": "<release>"``); the kafka lines stay each tool's own
    (the newest tool cannot read the record either)."""
    if d.key is None or not d.fallbacks:
        return d
    for module in reversed(tuple(DEFINITIONS_TEXTS.values())):
        table = getattr(module, family, None)
        if not table:
            continue
        old = decode_coordinator_record(record, table, hook)
        if old.key is not None and not old.fallbacks and not any(p.notes for p in (old.key, old.value) if p):
            return replace(d, key=_read_by(old.key, module.RELEASE),
                           value=None if old.value is None else _read_by(old.value, module.RELEASE))
    return d


def _read_by(part: Part, release: str) -> Part:
    return replace(part, extra={**part.extra, "definitions": release})


_CHANGES: dict[str, list[tuple[str, RecordTypes, frozenset[int]]]] = {}


def _changed(newest: RecordTypes, family: str) -> list[tuple[str, RecordTypes, frozenset[int]]]:
    """(decoder text, the older release's table, the record types whose schemas differ from the
    newest's) per older 4.x release: worked out once per family."""
    if family not in _CHANGES:
        rows = []
        for name, module in DEFINITIONS_TEXTS.items():
            table = getattr(module, family, {})
            rows.append((name, table, frozenset(t for t in {*newest, *table} if newest.get(t) != table.get(t))))
        _CHANGES[family] = rows
    return _CHANGES[family]


# kseg's messages for bytes that end too soon: Java's reader throws a BufferUnderflowException there,
# whose message is null.
_UNDERFLOW = ("runs past the end of the data", "cut short")


def _read_failed(version: int, what: str, e: SchemaError) -> str:
    # Kafka's wrapper text around the reader's message (Java's "null" for an underflow, else kseg's).
    reason = "null" if any(u in e.message for u in _UNDERFLOW) else e.message
    return f"Could not read record with version {version} from {what}'s buffer due to: {reason}."
