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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..model import Record
from .schema import describe

__all__ = ["DECODE_CHOICES", "FAMILIES", "KAFKA_VERSIONS", "DecodedRecord", "Part", "decode_record", "family_for"]

FAMILIES = ("offsets", "transactions", "metadata", "share-group-state", "remote-log-metadata")
DECODE_CHOICES = ("none", *FAMILIES, "auto")
# The kafka-dump-log.sh releases whose lines --format kafka can print: the newest first.
KAFKA_VERSIONS = ("4", "3.9")

# Topic folder name (without the partition number) -> family, for --decode auto.
AUTO_TOPICS = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transactions",
    "__cluster_metadata": "metadata",
    "__share_group_state": "share-group-state",
    "__remote_log_metadata": "remote-log-metadata",
}
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")


@dataclass(frozen=True)
class Part:
    """A decoded key or value; ``data`` is None when it is shown raw (then ``note`` says why)."""

    schema: str | None  # Kafka's message name, e.g. "OffsetCommitValue"
    version: int | None
    data: dict | None = None
    extra: dict = field(default_factory=dict)  # e.g. {"type": "TOPIC_RECORD", "type_id": 2}
    notes: tuple[str, ...] = ()  # things skipped on the way (unknown tagged fields)
    raw: bytes | None = None
    note: str | None = None

    @property
    def is_raw(self) -> bool:
        return self.data is None

    def as_json(self) -> dict:
        out: dict[str, Any] = {"schema": self.schema, "version": self.version, **self.extra}
        if self.data is None:
            out["raw"] = None if self.raw is None else self.raw.hex()
            out["note"] = self.note
        else:
            out["data"] = self.data
            if self.notes:
                out["notes"] = list(self.notes)
        return out

    def describe(self) -> str:
        """One line for people: ``OffsetCommitValue v3 offset=12 metadata="" ...``."""
        head = f"{self.schema or 'unknown'}" + ("" if self.version is None else f" v{self.version}")
        if self.data is None:
            raw = "" if self.raw is None else self.raw[:32].hex() + ("..." if len(self.raw) > 32 else "")
            size = "" if self.raw is None else f" {len(self.raw)} bytes"
            return f"{head} <raw{size}: {raw}> ({self.note})"
        body = describe(self.data)
        extra = "".join(f" [{n}]" for n in self.notes)
        return f"{head} {body}{extra}" if body else f"{head}{extra}"


def raw_part(data: bytes | None, note: str, schema: str | None = None, version: int | None = None,
             **extra: Any) -> Part:
    return Part(schema, version, None, dict(extra), (), None if data is None else bytes(data), note)


def skipping_line(offset: int, message: str) -> str:
    """What kafka-dump-log.sh prints for a record its decoder cannot read."""
    return f"Error at offset {offset}, skipping. {message}"


@dataclass(frozen=True)
class DecodedRecord:
    """One record decoded by a family. ``key``/``value`` None: no key (metadata records,
    control records) or a null value (a tombstone: ``<DELETE>`` in Kafka's lines)."""

    key: Part | None
    value: Part | None
    kafka_key: str | None  # what follows "key: " in kafka-dump-log.sh's line (None: not printed)
    kafka_payload: str | None  # what follows "payload: "
    kafka_legacy: tuple[str | None, str | None] | None = None  # Kafka 3.x's (key, payload) if different

    def kafka_text(self, kafka_version: str = KAFKA_VERSIONS[0]) -> tuple[str | None, str | None]:
        """(key, payload) as that release of kafka-dump-log.sh prints them."""
        if kafka_version != KAFKA_VERSIONS[0] and self.kafka_legacy is not None:
            return self.kafka_legacy
        return self.kafka_key, self.kafka_payload

    def with_legacy(self, legacy: tuple[str | None, str | None]) -> "DecodedRecord":
        if legacy == (self.kafka_key, self.kafka_payload):
            return self
        return DecodedRecord(self.key, self.value, self.kafka_key, self.kafka_payload, legacy)

    @property
    def fallbacks(self) -> list[Part]:
        """The parts shown raw."""
        return [p for p in (self.key, self.value) if p is not None and p.is_raw]


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


def _decoders() -> dict[str, Callable[[Record, bool], DecodedRecord | None]]:
    from .metadata import decode_metadata_record
    from .offsets import decode_offsets_record
    from .remote_log import decode_remote_log_record
    from .share_state import decode_share_state_record
    from .transactions import decode_transaction_record

    return {"offsets": decode_offsets_record, "transactions": decode_transaction_record,
            "metadata": decode_metadata_record, "share-group-state": decode_share_state_record,
            "remote-log-metadata": decode_remote_log_record}


_DECODERS: dict[str, Callable[[Record, bool], DecodedRecord | None]] = {}


def decode_record(family: str, record: Record, is_control: bool = False) -> DecodedRecord | None:
    """Decode one record of a ``family`` topic; None for records the family does not describe
    (transaction markers in ``__consumer_offsets``, for instance)."""
    if not _DECODERS:
        _DECODERS.update(_decoders())
    return _DECODERS[family](record, is_control)
