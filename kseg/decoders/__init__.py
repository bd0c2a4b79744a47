"""Decoders for what the broker writes about itself (spec §6.1): ``__consumer_offsets``
(``offsets``), ``__transaction_state`` (``transactions``), the KRaft metadata log and
its snapshots (``metadata``), ``__share_group_state`` (``share-group-state``, KIP-932) and
``__remote_log_metadata`` (``remote-log-metadata``, tiered storage, KIP-405).

A family turns one record into a ``DecodedRecord``: a ``Part`` for the key and one for
the value (each the record's schema name, version and fields, as Kafka's JSON converters
write them), plus the text kafka-dump-log.sh prints after ``key:`` and ``payload:`` with
its ``--offsets-decoder``, ``--transaction-log-decoder``, ``--cluster-metadata-decoder``,
``--share-group-state-decoder`` and ``--remote-log-metadata-decoder``: Kafka 4's text, and
Kafka 3.x's where it differs (``KAFKA_VERSIONS``).

Rules: decoding never raises. A key or value kseg cannot decode (an unknown record type
or version, bytes that do not fit the schema) becomes a raw ``Part`` with a note, and
Kafka's own error text in the kafka lines.
"""

from __future__ import annotations

from pathlib import Path

from kseg.decoders.parts import HIDDEN_BYTES, KAFKA_VERSIONS, DecodedRecord, Part
from kseg.errors import KsegError
from kseg.kafka_releases import DEFAULT, DumpLogRelease
from kseg.lazy import load
from kseg.log.control import control_info
from kseg.log.listing import parse_partition_dir
from kseg.log.segment import TRANSIENT_SUFFIXES
from kseg.model import Record

__all__ = ["DECODE_CHOICES", "FAMILIES", "HIDDEN_BYTES", "KAFKA_VERSIONS", "DecodedRecord", "Part",
           "control_kafka_text", "decode_record", "family_for", "hide_metadata_value", "hide_secrets"]

FAMILIES = ("offsets", "transactions", "metadata", "share-group-state", "remote-log-metadata")
DECODE_CHOICES = ("none", *FAMILIES, "auto")

# Topic folder name (without the partition number) -> family, for --decode auto.
AUTO_TOPICS = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transactions",
    "__cluster_metadata": "metadata",
    "__share_group_state": "share-group-state",
    "__remote_log_metadata": "remote-log-metadata",
}


def family_for(path: str | Path, choice: str | None) -> str | None:
    """The family to decode ``path`` with: ``choice`` itself, or for ``auto`` the one its topic
    folder (``__consumer_offsets-*``, ``__transaction_state-*``, ``__cluster_metadata-*``,
    ``__share_group_state-*``, ``__remote_log_metadata-*``) or its name (``*.checkpoint``:
    a KRaft snapshot) says; None for user data."""
    if choice in (None, "none"):
        return None
    if choice != "auto":
        return choice
    p = Path(path)
    name = p.name
    for t in TRANSIENT_SUFFIXES:
        if name.endswith(t):
            name = name[: -len(t)]
    if name.endswith(".checkpoint"):
        return "metadata"
    parsed = parse_partition_dir(p.parent.name)  # a replica the broker renamed too (``...-future``)
    return AUTO_TOPICS.get(parsed[0]) if parsed else None


# family -> "module:function", imported when the first record of the family is decoded: a dump
# of user data never loads the schemas (tests/test_layers.py checks the table as it checks imports).
DECODERS = {
    "offsets": "kseg.decoders.offsets:decode_offsets_record",
    "transactions": "kseg.decoders.transactions:decode_transaction_record",
    "metadata": "kseg.decoders.metadata:decode_metadata_record",
    "share-group-state": "kseg.decoders.share_state:decode_share_state_record",
    "remote-log-metadata": "kseg.decoders.remote_log:decode_remote_log_record",
}


def decode_record(family: str, record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one record of a ``family`` topic; None for records the family does not describe
    (transaction markers in ``__consumer_offsets``, for instance)."""
    return load(DECODERS[family])(record, is_control)


# Where control_kafka_text lives; only a control record that is not a transaction marker loads it.
CONTROL_TEXT = "kseg.decoders.metadata:control_kafka_text"


def control_kafka_text(record: Record, release: "str | DumpLogRelease" = DEFAULT) -> str | None:
    """kafka-dump-log.sh's text for a KRaft control record (``decoders.metadata.control_kafka_text``);
    None for transaction markers and records that do not decode."""
    try:
        if control_info(record).is_txn_marker:
            return None
    except KsegError:
        return None
    return load(CONTROL_TEXT)(record, release)


# The secrets' table (kseg.decoders.secrets) loads the metadata schemas: named here, loaded when
# a decoded record or a metadata value is first looked at, so that a plain dump never loads it.
HIDE_SECRETS = "kseg.decoders.secrets:hide_secrets"
HIDE_METADATA_VALUE = "kseg.decoders.secrets:hide_metadata_value"


def hide_secrets(d: DecodedRecord | None) -> DecodedRecord | None:
    """``decoders.secrets.hide_secrets``: a decoded record with its secrets hidden."""
    return load(HIDE_SECRETS)(d)


def hide_metadata_value(value: bytes) -> bytes | None:
    """``decoders.secrets.hide_metadata_value``: a metadata record's value with its secrets hidden
    (None when it holds none)."""
    return load(HIDE_METADATA_VALUE)(value)
