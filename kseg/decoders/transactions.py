"""``__transaction_state``: the transaction coordinator's records (spec §6.1
``--transaction-log-decoder``).

    key:   int16 version (0; Kafka 4 calls it the coordinator record type, also 0) |
           TransactionLogKey (non-flexible)
    value: int16 version (0, or 1 = flexible, with tagged fields) | TransactionLogValue;
           a null value is a tombstone

Schemas generated (``make schemas``) from the ``transaction-coordinator`` jars of the newest release
and 3.9.2 (``common/message/TransactionLogKey.json``, ``TransactionLogValue.json``). Kafka 4 prints these records as
every coordinator record (JSON, ``coordinator.py``); Kafka 3.x printed
``transaction_metadata::transactionalId=... producerId:...,state=...``
(``TransactionLog.formatRecordKeyAndValue``), kept as the legacy lines.
"""

from __future__ import annotations

from kseg.decoders.coordinator import RecordTypes, decode_coordinator_record, kafka_value_json
from kseg.decoders.jvm import scala_hash_set_order
from kseg.decoders.parts import LEGACY_TEXT, DecodedRecord, Part, raw_part, skipping_line
from kseg.decoders.generated import KAFKA_2 as K2
from kseg.decoders.generated import KAFKA_3 as K3
from kseg.decoders.generated import definitions_text
from kseg.decoders.generated import NEWEST as K4
from kseg.decoders.schema import SchemaError, decode, read_int16_version
from kseg.model import Record

# Generated from the transaction-coordinator jars (the newest release; 3.9.2 for Kafka 3.x's lines).
TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE = K4.TRANSACTIONS[0]
TRANSACTION_LOG_KEY_3X, TRANSACTION_LOG_VALUE_3X = K3.TRANSACTIONS[0]

# TransactionState ids -> the names Kafka prints (TransactionState.toString).
STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
EMPTY = 0
#: the decoder text (kseg.kafka_releases decoder_texts) of the JSON with the state's name for its number
STATE_NAMES_TEXT = "transaction-state-names"

RECORD_TYPES: RecordTypes = K4.TRANSACTIONS

#: the decoder text (kseg.kafka_releases decoder_texts) of Kafka 4.0's transaction-log text, which looks a
#: value's clientTransactionVersion up among the transaction.version levels it knows and stops at another
TRANSACTION_VERSION_LOOKUP, TRANSACTION_VERSION_LEVELS = "transaction-version-lookup", range(0, 3)


def kafka_value_line(data: dict) -> str:
    """``producerId:P,producerEpoch:E,state=S,partitions=[t-0,...],txnLastUpdateTimestamp=T,txnTimeoutMs=M``.

    As Kafka: the partitions of an Empty transaction are not listed, the others in the
    order of the Scala hash set Kafka 3.x collects them in."""
    status = data["transactionStatus"]
    partitions: list[str] = []
    if status != EMPTY:
        groups = [[(p["topic"], i) for i in p["partitionIds"]] for p in data.get("transactionPartitions") or ()]
        partitions = [f"{t}-{i}" for t, i in scala_hash_set_order(groups)]
    return (f"producerId:{data['producerId']},producerEpoch:{data['producerEpoch']},"
            f"state={STATES[status]},partitions=[{','.join(partitions)}],"
            f"txnLastUpdateTimestamp={data['transactionLastUpdateTimestampMs']},"
            f"txnTimeoutMs={data['transactionTimeoutMs']}")


#: the text (kseg.kafka_releases decoder_texts) of Kafka 2.8's tool, and the highest TransactionLogValue
#: version it reads: it stops (an exception) at a later one
K2_TEXT, K2_VALUE_VERSIONS = definitions_text(K2), K2.TRANSACTIONS[0][1].highest
#: the TransactionLogKey versions Kafka 2.8's tool reads: it stops at another
K2_KEY_VERSIONS = K2.TRANSACTIONS[0][0].valid


def decode_transaction_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one ``__transaction_state`` record (None for control records); the kafka
    lines are Kafka 4's JSON, ``kafka_legacy`` Kafka 3.x's text."""
    if is_control:
        return None
    old = _decode_3x(record)
    d = decode_coordinator_record(record, RECORD_TYPES)
    value = d.value
    if value is not None and value.data is not None:
        status = value.data["transactionStatus"]
        named = None
        if status in STATES:
            value = Part(value.schema, value.version, value.data, {"state": STATES[status]}, value.notes)
            named = {k: STATES[v] if k == "transactionStatus" else v for k, v in value.data.items()}
        else:
            value = raw_part(record.value, f"unknown transaction state {status}", value.schema, value.version)
        d = DecodedRecord(d.key, value, d.kafka_key, d.kafka_payload)
        if named is not None and value.version is not None:
            # Kafka 4.4's JSON names the state ("transactionStatus":"Ongoing")
            d = d.with_variant(STATE_NAMES_TEXT, (d.kafka_key, kafka_value_json(value.version, named)))
    d = d.with_legacy((old.kafka_key, old.kafka_payload))
    for name, why in old.kafka_stops:  # Kafka 3.x's parser lets the reader's exception end the dump
        d = d.with_stop(name, why)
    kver = None if old.key is None else old.key.version
    if kver is not None and kver not in K2_KEY_VERSIONS:
        d = d.with_stop(K2_TEXT, f"Unknown version {kver} from the transaction log message (Kafka 2.8 reads key "
                                 f"versions {K2_KEY_VERSIONS})")
    if old.value is not None and old.value.version is not None and old.value.version > K2_VALUE_VERSIONS:
        d = d.with_stop(K2_TEXT, f"Unknown version {old.value.version} from the transaction log message value "
                                 f"(Kafka 2.8 reads versions 0 to {K2_VALUE_VERSIONS})")
    level = None if value is None or value.data is None else value.data.get("clientTransactionVersion")
    if level is not None and level not in TRANSACTION_VERSION_LEVELS:
        d = d.with_stop(TRANSACTION_VERSION_LOOKUP, f"No feature:transaction.version with feature level {level}")
    return d


def _decode_3x(record: Record) -> DecodedRecord:
    """The record as Kafka 3.x read it, with its lines."""
    offset, key, value = record.offset, record.key, record.value
    not_decoded = "not decoded: the key could not be"
    try:
        if key is None:
            raise SchemaError("the record has no key")
        kver = read_int16_version(key, "key")
        if kver != 0:
            note = f"unknown transaction log key version {kver}"
            return DecodedRecord(raw_part(key, note, TRANSACTION_LOG_KEY.name, kver),
                                 None if value is None else raw_part(value, not_decoded, TRANSACTION_LOG_VALUE.name),
                                 f"unknown::version={kver}", None)
        k = decode(TRANSACTION_LOG_KEY_3X, key, 0, start=2, exact=False)
    except SchemaError as e:
        return DecodedRecord(raw_part(key, str(e), TRANSACTION_LOG_KEY.name),
                             None if value is None else raw_part(value, not_decoded, TRANSACTION_LOG_VALUE.name),
                             skipping_line(offset, e.message), None).with_stop(LEGACY_TEXT, e.message)
    key_part = Part(TRANSACTION_LOG_KEY.name, kver, k.data, notes=tuple(k.notes))
    kafka_key = f"transaction_metadata::transactionalId={k.data['transactionalId']}"
    if value is None:
        return DecodedRecord(key_part, None, kafka_key, "<DELETE>")
    version = None
    try:
        version = read_int16_version(value, "value")
        v = decode(TRANSACTION_LOG_VALUE_3X, value, version, start=2, exact=False)
        status = v.data["transactionStatus"]
        if status not in STATES:
            raise SchemaError(f"unknown transaction state {status}", expected="0..7", found=status)
    except SchemaError as e:
        return DecodedRecord(key_part, raw_part(value, str(e), TRANSACTION_LOG_VALUE.name, version),
                             skipping_line(offset, e.message), None).with_stop(LEGACY_TEXT, e.message)
    value_part = Part(TRANSACTION_LOG_VALUE.name, version, v.data, {"state": STATES[status]}, tuple(v.notes))
    return DecodedRecord(key_part, value_part, kafka_key, kafka_value_line(v.data))
