"""Redaction: record keys, values and header values replaced by a keyed hash and a length.

The rule, written once for every command that redacts: a present field becomes
``redacted:<length>:<hmac>``, where ``<hmac>`` is the first 32 hex digits of
HMAC-SHA256(key, original bytes). Equal originals stay equal (joins and duplicates still
show), lengths stay known, and without the key the original cannot be tested for. A
null stays null (a tombstone stays a tombstone) and an empty field stays empty (it holds
nothing to hide). Header names are kept: they name fields, they do not hold data.

``redact_segment`` rebuilds each batch around the redacted records through the writers'
encoders (``kseg.log.encode``): every header field kept (offsets, timestamps, producer
fields, record count), compressed batches compressed again with their own codec, CRCs
computed. Control batches are kept byte for byte (their records are markers, not data). A
damaged batch is never redacted nor copied: the caller gets the error, and nothing of the
batch is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from kseg.decoders import hide_metadata_value
from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import CorruptBatchError
from kseg.facts.message_v0v1 import KEY_LENGTH_POSITION
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD
from kseg.log.checks import batch_damage
from kseg.log.encode import (
    assemble_v2,
    build_legacy_message,
    build_legacy_message_set,
    encode_v2_records,
    header_of,
    legacy_message_crc,
    wrap_legacy,
)
from kseg.log.records import batch_records, codec_for
from kseg.model import Batch, Header, Record

KEYS, VALUES, HEADERS, IDS, SECRETS = "keys", "values", "headers", "ids", "secrets"
# What ``--redact`` takes, the one table: each name and what it hides (the commands' help and
# docs/guides/conversions.md list them from here; each command takes the names that apply to it).
REDACTABLE: dict[str, str] = {
    KEYS: "record keys of ordinary topics",
    VALUES: "record values of ordinary topics",
    HEADERS: "record header values of ordinary topics (header names are kept)",
    IDS: "the identities in internal-topic records: group, member, instance, client and transactional ids, "
         "client hosts, commit metadata, user and principal names (the table: the internal topics guide)",
    SECRETS: "SCRAM salts and keys, delegation token ids and sensitive configuration values, hidden even where "
             "they would be shown (--format kafka); refuses --show-secrets",
}
FIELDS = (KEYS, VALUES, HEADERS)  # the record fields
HASH_DIGITS = 32
METHOD = f"HMAC-SHA256 of the original bytes, first {HASH_DIGITS} hex digits: redacted:<length>:<hmac>"


def parse_fields(given: Iterable[str], allowed: Iterable[str] = FIELDS) -> frozenset[str]:
    """``--redact keys --redact values,headers`` -> the names given (ValueError for one not in ``allowed``)."""
    allowed = tuple(allowed)
    out = set()
    for item in given:
        for name in (x.strip() for x in item.split(",")):
            if not name:
                continue
            if name not in allowed:
                raise ValueError(f"{name!r}: give {', '.join(allowed)} (repeated or as a comma list)")
            out.add(name)
    return frozenset(out)


@dataclass(frozen=True)
class Redactor:
    """The fields to redact and the key of the hash (random per run unless given)."""

    fields: frozenset[str]
    key: bytes

    @classmethod
    def make(cls, fields: frozenset[str], key: bytes | None = None) -> "Redactor":
        return cls(fields, key if key else os.urandom(32))

    def __bool__(self) -> bool:
        """Whether record data is redacted (keys, values or headers)."""
        return bool(self.fields & set(FIELDS))

    @property
    def record_fields(self) -> frozenset[str]:
        return self.fields & frozenset(FIELDS)

    @property
    def ids(self) -> bool:
        return IDS in self.fields

    @property
    def secrets(self) -> bool:
        return SECRETS in self.fields

    def token(self, data: bytes | None) -> bytes | None:
        """The redacted form of one field (None and empty stay as they are)."""
        if not data:
            return data
        import hashlib  # here: every command loads this module for its options, few redact
        import hmac

        mac = hmac.new(self.key, bytes(data), hashlib.sha256).hexdigest()[:HASH_DIGITS]
        return b"redacted:%d:%s" % (len(data), mac.encode())

    def text(self, value: str) -> str:
        """The redacted form of a string: the token of its UTF-8 bytes, so that an id redacts alike
        wherever it appears (a record key in ``dump --redact keys``, a group id in ``state --redact ids``)."""
        token = self.token(value.encode("utf-8", "surrogatepass"))
        return value if token is None else token.decode()

    def record(self, r: Record) -> Record:
        key = self.token(r.key) if KEYS in self.fields else r.key
        value = self.token(r.value) if VALUES in self.fields else r.value
        headers = (tuple(Header(h.key, self.token(h.value)) for h in r.headers) if HEADERS in self.fields
                   else r.headers)
        new = r._replace(key=key, value=value, headers=headers)
        if r.crc is not None and r.crc == legacy_message_crc(r):  # a legacy message's CRC, right as it was
            new = new._replace(crc=legacy_message_crc(new))
        return new

    def batch(self, batch: Batch, file: str, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
        """The batch's bytes with its records redacted (a control batch as it is)."""
        require_sound(batch, file, limit, "cannot redact a damaged batch")
        if batch.magic >= 2 and batch.is_control:
            return bytes(batch.raw)
        return rebuild_batch(batch, [self.record(r) for r in batch_records(batch, limit=limit)])

    def header_only(self, batch: Batch) -> Batch:
        """An undecodable batch as a redacted dump may show it: its header's bytes, none of its data."""
        keep = RECORD_BATCH_OVERHEAD if batch.magic >= 2 else KEY_LENGTH_POSITION.get(batch.magic, 0)
        return batch._replace(raw=batch.raw[:keep])

    def segment(self, batches: Iterable[Batch], file: str, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
        """A segment's bytes rebuilt batch by batch with the records redacted."""
        return b"".join(self.batch(b, file, limit) for b in batches)


def require_sound(batch: Batch, file: str, limit: int, what: str) -> None:
    """A CorruptBatchError (``what``: verify's first error) for a batch verify finds damaged:
    damaged bytes are never rewritten into valid-looking ones, nor copied past a redaction."""
    damage = batch_damage(batch, file, limit)
    if damage:
        d = damage[0]
        raise CorruptBatchError(f"{what}: {d.message}", file=file, position=d.position, where=d.where,
                                expected=d.expected, found=d.found)


def rebuild_batch(batch: Batch, records: list[Record]) -> bytes:
    """``batch`` written again around ``records`` (its own, changed in their keys, values or
    headers): every header field kept, compressed again with its own codec, CRCs computed."""
    if batch.magic >= 2:
        header = header_of(batch)
        payload = encode_v2_records(records, batch.base_offset, header.base_timestamp)
        if batch.codec:
            payload = codec_for(batch).compress(payload, magic=2)
        return assemble_v2(header, payload)
    if not batch.codec:
        (r,) = records
        return build_legacy_message(batch.base_offset, batch.magic, batch.attributes, batch.max_timestamp,
                                    r.key, r.value)
    # A wrapper: its inner messages as kseg.log.rebuild writes them, compressed again.
    relative_to = (0 if batch.base_offset == 0 else records[0].offset) if batch.magic == 1 else None
    inner = build_legacy_message_set(records, magic=records[0].magic, relative_to=relative_to)
    value = codec_for(batch).compress(inner, magic=batch.magic)
    return wrap_legacy(batch.base_offset, batch.magic, batch.codec, value,
                       timestamp_type=batch.timestamp_type, timestamp=batch.max_timestamp)


def hide_batch_secrets(batch: Batch, file: str, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes | None:
    """A metadata-log batch written again with the secrets of its records hidden
    (``kseg.decoders.secrets``); None when it holds none. A damaged batch is an error."""
    if batch.magic < 2 or batch.is_control:
        return None
    require_sound(batch, file, limit, "cannot hide the secrets of a damaged batch (--show-secrets takes it as it is)")
    records = batch_records(batch, limit=limit)
    values = [None if r.value is None else hide_metadata_value(r.value) for r in records]
    if all(v is None for v in values):
        return None
    return rebuild_batch(batch, [r if v is None else r._replace(value=v) for r, v in zip(records, values)])


__all__ = ["FIELDS", "HEADERS", "IDS", "KEYS", "METHOD", "REDACTABLE", "SECRETS", "VALUES", "Redactor", "hide_batch_secrets", "parse_fields", "rebuild_batch"]
