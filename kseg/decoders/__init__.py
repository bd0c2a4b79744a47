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

from dataclasses import dataclass
from pathlib import Path

from kseg.decoders.parts import HIDDEN_BYTES, KAFKA_VERSIONS, DecodedRecord, Part
from kseg.errors import KsegError
from kseg.kafka_releases import DEFAULT, DumpLogRelease
from kseg.lazy import load
from kseg.log.control import control_info
from kseg.log.listing import CHECKPOINT_SUFFIX, bare_name, parse_partition_dir
from kseg.model import Record

__all__ = ["DECODE_CHOICES", "FAMILIES", "FAMILY", "FAMILY_TABLE", "HIDDEN_BYTES", "KAFKA_VERSIONS", "RAFT_TOPICS",
           "DecodedRecord", "Family", "Part", "control_kafka_text", "decode_record", "family_for", "hide_metadata_value",
           "hide_secrets"]


@dataclass(frozen=True)
class Family:
    """One internal topic as the decoders know it. What the layers above add per family (the
    state replay's applier in ``kseg.ops.state``, its summary in ``kseg.render.answers``) lives
    in tables of their own keyed by ``name``: a row here naming them, even as a string loaded on
    use, would point up the layers (tests/test_layers.py). tests/test_families.py holds every
    such table to exactly these names, so a family without its applier or writer fails there."""

    name: str  # the --decode choice
    topic: str  # its partition folders are ``<topic>-<n>``
    decoder: str  # "module:function" decoding one record, loaded with the family's first record
    secrets: bool = False  # its records can hold secrets (kseg.decoders.secrets hides them)
    raft: bool = False  # a KRaft log: the raft layer's (its snapshots and quorum-state name its offsets)


# Every family, in --decode's order. The decoders are named, not imported: a dump of user data
# never loads the schemas (tests/test_layers.py checks the names as it checks imports).
FAMILY_TABLE: tuple[Family, ...] = (
    Family("offsets", "__consumer_offsets", "kseg.decoders.offsets:decode_offsets_record"),
    Family("transactions", "__transaction_state", "kseg.decoders.transactions:decode_transaction_record"),
    Family("metadata", "__cluster_metadata", "kseg.decoders.metadata:decode_metadata_record", secrets=True,
           raft=True),
    Family("share-group-state", "__share_group_state", "kseg.decoders.share_state:decode_share_state_record"),
    Family("remote-log-metadata", "__remote_log_metadata", "kseg.decoders.remote_log:decode_remote_log_record"),
)
FAMILY = {f.name: f for f in FAMILY_TABLE}
FAMILIES = tuple(FAMILY)
# The topics of KRaft logs: never in the LogManager's checkpoints, never cleaned by the log
# cleaner nor converted by a broker (kseg's writers copy them as they are).
RAFT_TOPICS = tuple(f.topic for f in FAMILY_TABLE if f.raft)
DECODE_CHOICES = ("none", *FAMILIES, "auto")
_BY_TOPIC = {f.topic: f.name for f in FAMILY_TABLE}  # for --decode auto


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
    if bare_name(p.name).endswith(CHECKPOINT_SUFFIX):
        return "metadata"
    parsed = parse_partition_dir(p.parent.name)  # a replica the broker renamed too (``...-future``)
    return _BY_TOPIC.get(parsed[0]) if parsed else None


def decode_record(family: str, record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one record of a ``family`` topic; None for records the family does not describe
    (transaction markers in ``__consumer_offsets``, for instance)."""
    return load(FAMILY[family].decoder)(record, is_control)


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
