"""Secrets in decoded internal-topic records, hidden unless asked for (``--show-secrets``).

One table of what is secret, by Kafka's message name: the SCRAM salt and keys of a
``UserScramCredentialRecord`` (enough to attempt a password offline), the token id of a
``DelegationTokenRecord`` (with the cluster's secret key it gives the token's HMAC), and the
value of a ``ConfigRecord`` whose name looks sensitive (passwords, secrets, JAAS
configurations, private keys, credentials: the broker's PASSWORD-type configurations).
A hidden field reads ``[hidden]``; the names, mechanisms, timestamps and which configuration
was set stay, as they are what a case is about.

kseg's own formats and ``kseg state`` hide them by default; ``--format kafka`` shows what
kafka-dump-log.sh shows, which is everything (its lines are a drop-in for the broker's tool).
"""

from __future__ import annotations

import base64
import re
from dataclasses import replace

from kseg.decoders.metadata import RECORDS, decode_metadata_value
from kseg.decoders.parts import HIDDEN, HIDDEN_BYTES, DecodedRecord, Part
from kseg.decoders.schema import Message, encode, read_uvarint

# Kafka message name -> the data fields that are secret whatever their content.
SECRET_FIELDS: dict[str, tuple[str, ...]] = {
    "UserScramCredentialRecord": ("salt", "storedKey", "serverKey"),
    "DelegationTokenRecord": ("tokenId",),
}
# Configuration names whose values are secret (Kafka's PASSWORD-type configurations and kin):
# ssl.key.password, ssl.keystore.password, ssl.keystore.key, sasl.jaas.config (and its
# listener.name.*. forms), sasl.oauthbearer client secrets, delegation.token.secret.key,
# password.encoder.secret, *.credentials.
SENSITIVE_CONFIG = re.compile(r"password|secret|jaas|credential|ssl\.key(\.|$)|keystore\.key|private\.key|"
                              r"token\.(master|secret)\.key", re.IGNORECASE)
CONFIG_SCHEMA = "ConfigRecord"


def hide_data(schema: str | None, data: dict | None) -> dict | None:
    """``data`` with its secret fields hidden (the same object when it holds none)."""
    if data is None or schema is None:
        return data
    fields = SECRET_FIELDS.get(schema, ())
    if schema == CONFIG_SCHEMA and data.get("value") is not None and SENSITIVE_CONFIG.search(str(data.get("name"))):
        fields = ("value",)
    hidden = [f for f in fields if data.get(f) not in (None, "", HIDDEN)]
    if not hidden:
        return data
    return {k: (HIDDEN if k in hidden else v) for k, v in data.items()}


def _hide_part(part: Part | None) -> Part | None:
    if part is None:
        return None
    data = hide_data(part.schema, part.data)
    return part if data is part.data else replace(part, data=data)


def hide_secrets(d: DecodedRecord | None) -> DecodedRecord | None:
    """A decoded record with its secrets hidden (the same object when it holds none); its
    kafka-dump-log.sh texts are dropped, since they would show them."""
    if d is None:
        return None
    key, value = _hide_part(d.key), _hide_part(d.value)
    if key is d.key and value is d.value:
        return d
    return DecodedRecord(key, value, None, None)


def hide_metadata_value(value: bytes, records: dict[int, Message] = RECORDS) -> bytes | None:
    """A metadata record's value (frame, type, version, record) written again with its secrets
    hidden: ``[hidden]`` in a string field, its bytes in a bytes field. None when it holds no
    secret, or when it does not decode whole (it is then left as it is)."""
    part = decode_metadata_value(value, records)
    hidden = hide_data(part.schema, part.data)
    if part.data is None or hidden is part.data or part.notes or part.version is None:
        return None
    schema = records[part.extra["type_id"]]
    types = {f.json_name: f.type for f in schema.fields}
    typed = {k: (base64.b64encode(HIDDEN_BYTES).decode() if v == HIDDEN and types.get(k) == "bytes" else v)
             for k, v in hidden.items()}
    pos = 0
    for what in ("frame version", "record type", "record version"):
        _, pos = read_uvarint(value, pos, what=what)
    try:
        return bytes(value[:pos]) + encode(schema, typed, part.version)
    except ValueError:
        return None


__all__ = ["HIDDEN", "HIDDEN_BYTES", "SECRET_FIELDS", "SENSITIVE_CONFIG", "hide_data", "hide_metadata_value", "hide_secrets"]
