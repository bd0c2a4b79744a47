"""``__transaction_state``: the transaction coordinator's records (spec §6.1
``--transaction-log-decoder``).

    key:   int16 version (0; Kafka 4 calls it the coordinator record type, also 0) |
           TransactionLogKey (non-flexible)
    value: int16 version (0, or 1 = flexible, with tagged fields) | TransactionLogValue;
           a null value is a tombstone

Schemas from Kafka's ``transaction-coordinator/src/main/resources/common/message/
TransactionLogKey.json`` and ``TransactionLogValue.json``; the kafka line format from
``TransactionLog.formatRecordKeyAndValue`` (Kafka 3.x).
"""

from __future__ import annotations

from kseg.decoders.parts import DecodedRecord, Part, raw_part, skipping_line
from kseg.decoders.schema import F, M, SchemaError, decode, read_int16_version
from kseg.model import Record

TRANSACTION_LOG_KEY = M("TransactionLogKey", "0", "none", F("TransactionalId", "string"))

TRANSACTION_LOG_VALUE = M(
    "TransactionLogValue", "0-1", "1+",
    F("ProducerId", "int64"),
    F("PreviousProducerId", "int64", tagged="1+", tag=0, default=-1),
    F("NextProducerId", "int64", tagged="1+", tag=1, default=-1),
    F("ProducerEpoch", "int16"),
    F("TransactionTimeoutMs", "int32"),
    F("TransactionStatus", "int8"),
    F("TransactionPartitions", "[]PartitionsSchema", nullable="0+",
      fields=(F("Topic", "string"), F("PartitionIds", "[]int32"))),
    F("TransactionLastUpdateTimestampMs", "int64"),
    F("TransactionStartTimestampMs", "int64"),
    F("ClientTransactionVersion", "int16", tagged="1+", tag=2, default=0),
)

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


def kafka_value_line(data: dict) -> str:
    """``producerId:P,producerEpoch:E,state=S,partitions=[t-0,...],txnLastUpdateTimestamp=T,txnTimeoutMs=M``.

    As Kafka: the partitions of an Empty transaction are not listed. Kafka keeps them in
    a hash set, so its order may differ from the record's, which kseg keeps."""
    status = data["transactionStatus"]
    partitions: list[str] = []
    if status != EMPTY:
        for p in data.get("transactionPartitions") or ():
            partitions.extend(f"{p['topic']}-{i}" for i in p["partitionIds"])
    return (f"producerId:{data['producerId']},producerEpoch:{data['producerEpoch']},"
            f"state={STATES[status]},partitions=[{','.join(partitions)}],"
            f"txnLastUpdateTimestamp={data['transactionLastUpdateTimestampMs']},"
            f"txnTimeoutMs={data['transactionTimeoutMs']}")


def decode_transaction_record(record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one ``__transaction_state`` record (None for control records)."""
    if is_control:
        return None
    offset, key, value = record.offset, record.key, record.value
    not_decoded = "not decoded: the key could not be"
    try:
        if key is None:
            raise SchemaError("the record has no key")
        kver = read_int16_version(key, "key")
        if kver != 0:
            raise SchemaError(f"unknown transaction log key version {kver}", expected=0, found=kver)
        k = decode(TRANSACTION_LOG_KEY, key, 0, start=2)
    except SchemaError as e:
        return DecodedRecord(raw_part(key, str(e), TRANSACTION_LOG_KEY.name),
                             None if value is None else raw_part(value, not_decoded, TRANSACTION_LOG_VALUE.name),
                             skipping_line(offset, e.message), None)
    key_part = Part(TRANSACTION_LOG_KEY.name, kver, k.data, notes=tuple(k.notes))
    kafka_key = f"transaction_metadata::transactionalId={k.data['transactionalId']}"
    if value is None:
        return DecodedRecord(key_part, None, kafka_key, "<DELETE>")
    version = None
    try:
        version = read_int16_version(value, "value")
        v = decode(TRANSACTION_LOG_VALUE, value, version, start=2)
        status = v.data["transactionStatus"]
        if status not in STATES:
            raise SchemaError(f"unknown transaction state {status}", expected="0..7", found=status)
    except SchemaError as e:
        return DecodedRecord(key_part, raw_part(value, str(e), TRANSACTION_LOG_VALUE.name, version),
                             skipping_line(offset, e.message), None)
    value_part = Part(TRANSACTION_LOG_VALUE.name, version, v.data, {"state": STATES[status]}, tuple(v.notes))
    return DecodedRecord(key_part, value_part, kafka_key, kafka_value_line(v.data))
