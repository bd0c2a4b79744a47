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
from typing import Callable

from kseg.decoders.metadata import decode_metadata_record
from kseg.decoders.offsets import decode_offsets_record
from kseg.decoders.parts import KAFKA_VERSIONS, DecodedRecord, Part
from kseg.decoders.remote_log import decode_remote_log_record
from kseg.decoders.share_state import decode_share_state_record
from kseg.decoders.transactions import decode_transaction_record
from kseg.log.segment import TRANSIENT_SUFFIXES
from kseg.model import Record

__all__ = ["DECODE_CHOICES", "FAMILIES", "KAFKA_VERSIONS", "DecodedRecord", "Part", "decode_record", "family_for"]

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
    topic, sep, part = p.parent.name.rpartition("-")
    if sep and part.isdigit():
        return AUTO_TOPICS.get(topic)
    return None


_DECODERS: dict[str, Callable[[Record, bool], DecodedRecord | None]] = {
    "offsets": decode_offsets_record,
    "transactions": decode_transaction_record,
    "metadata": decode_metadata_record,
    "share-group-state": decode_share_state_record,
    "remote-log-metadata": decode_remote_log_record,
}


def decode_record(family: str, record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one record of a ``family`` topic; None for records the family does not describe
    (transaction markers in ``__consumer_offsets``, for instance)."""
    return _DECODERS[family](record, is_control)
