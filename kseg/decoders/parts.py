"""What a decoder returns: a decoded key or value (``Part``) and a decoded record."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from kseg.errors import OlderToolStopsError
from kseg.kafka_releases import DEFAULT, KAFKA_VERSIONS, DumpLogRelease, as_release

__all__ = ["HIDDEN", "HIDDEN_BYTES", "KAFKA_VERSIONS", "DecodedRecord", "Part", "raw_part", "skipping_line"]

# What a hidden secret shows instead of its value (kseg.decoders.secrets)
HIDDEN = "[hidden]"
HIDDEN_BYTES = HIDDEN.encode()


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


def _short(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value)


def describe(data: dict) -> str:
    """One line for people: ``name="orders" topicId="..." partitions=[0,1]``."""
    return " ".join(f"{k}={_short(v)}" for k, v in data.items())


def raw_part(data: bytes | None, note: str, schema: str | None = None, version: int | None = None,
             **extra: Any) -> Part:
    return Part(schema, version, None, dict(extra), (), None if data is None else bytes(data), note)


def skipping_line(offset: int, message: str) -> str:
    """What kafka-dump-log.sh prints for a record its decoder cannot read."""
    return f"Error at offset {offset}, skipping. {message}"


#: the decoder text (``kseg.kafka_releases`` decoder_texts) of Kafka 3.x's parsers: up to 4.0 for some families
LEGACY_TEXT = "3"


@dataclass(frozen=True)
class DecodedRecord:
    """One record decoded by a family. ``key``/``value`` None: no key (metadata records,
    control records) or a null value (a tombstone: ``<DELETE>`` in Kafka's lines)."""

    key: Part | None
    value: Part | None
    kafka_key: str | None  # what follows "key: " in kafka-dump-log.sh's line (None: not printed)
    kafka_payload: str | None  # what follows "payload: "
    # older tools' (key, payload) where they differ, by the name a release row's decoder_texts uses
    kafka_variants: tuple[tuple[str, tuple[str | None, str | None]], ...] = ()
    # (decoder text name, why): a tool whose release row lists that text stops at this record
    kafka_stops: tuple[tuple[str, str], ...] = ()
    # texts worked out only when a release row asks for one: (decoder text name, what gives its (key, payload))
    kafka_deferred: tuple[tuple[str, Callable[[], tuple[str | None, str | None]]], ...] = field(default=(),
                                                                                             compare=False)

    @property
    def kafka_legacy(self) -> tuple[str | None, str | None] | None:
        """Kafka 3.x's (key, payload) where they differ from Kafka 4's."""
        return dict(self.kafka_variants).get(LEGACY_TEXT)

    def kafka_text(self, release: "str | DumpLogRelease" = DEFAULT) -> tuple[str | None, str | None]:
        """(key, payload) as that release line of kafka-dump-log.sh prints them."""
        variants, stops = dict(self.kafka_variants), dict(self.kafka_stops)
        row = as_release(release)
        for name in row.texts:
            if name in stops:
                raise OlderToolStopsError(f"{stops[name]}: Kafka {row.line}'s tool stops here")
            if name in variants:
                return variants[name]
            for deferred_name, texts in self.kafka_deferred:
                if deferred_name == name:
                    return texts()
        return self.kafka_key, self.kafka_payload

    def with_variant(self, name: str, texts: tuple[str | None, str | None]) -> "DecodedRecord":
        """This record with an older tool's (key, payload), kept only where it differs."""
        if texts == (self.kafka_key, self.kafka_payload):
            return self
        return replace(self, kafka_variants=(*self.kafka_variants, (name, texts)))

    def with_deferred(self, name: str, texts: Callable[[], tuple[str | None, str | None]]) -> "DecodedRecord":
        """This record with a tool's (key, payload) that ``texts`` works out if that tool's lines are asked for
        (a second decoding by an older release's definitions: no cost to the other outputs)."""
        return replace(self, kafka_deferred=(*self.kafka_deferred, (name, texts)))

    def with_stop(self, name: str, why: str) -> "DecodedRecord":
        """This record with a tool (the releases whose ``decoder_texts`` list ``name``) that cannot
        decode it and stops: its kafka lines end at the record's metadata."""
        return replace(self, kafka_stops=(*self.kafka_stops, (name, why)))

    def with_legacy(self, legacy: tuple[str | None, str | None]) -> "DecodedRecord":
        """This record with Kafka 3.x's (key, payload)."""
        return self.with_variant(LEGACY_TEXT, legacy)

    @property
    def fallbacks(self) -> list[Part]:
        """The parts shown raw."""
        return [p for p in (self.key, self.value) if p is not None and p.is_raw]
