"""Identities in decoded internal-topic records, redacted on request (``--redact ids``).

One table of what names a customer's applications, people or machines, by Kafka's JSON field
name (the same in every message that has it) and, where a name means something else in other
messages, by message name. Topic names, broker ids and hosts, configuration names and every
number stay: they are how an operator reads a case. Why each is redacted:

- group ids (``group``, ``groupId``) and transactional ids name the customer's applications;
- member, instance and process ids are built from client ids and host names;
- client ids name applications, client hosts and a Streams member's endpoint are the customer's
  machines, its client tags are free text;
- an offset commit's ``metadata`` is free text the application wrote;
- SCRAM user names, ACL principals and hosts, delegation token owners, requesters and renewers,
  and client quota entity names (users, client ids, IPs) are people and machines;
- a ``GroupMetadataValue``'s ``leader`` is a member id; a group's configuration is keyed by its id.

Redaction replaces each string (or each string inside a struct or list) by what ``hide`` gives,
the keyed hash of ``kseg.ops.redact`` in practice, so an id redacts alike wherever it appears.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from kseg.decoders.parts import DecodedRecord, Part

# Field names that hold an identity in every Kafka message that has them.
ID_FIELDS = frozenset({"group", "groupId", "GroupId", "memberId", "groupInstanceId", "instanceId", "processId",
                       "clientId", "clientHost", "transactionalId", "entityName", "userEndpoint", "clientTags"})
# Message name -> further fields that are identities in that message only.
ID_FIELDS_OF: dict[str, frozenset[str]] = {
    "OffsetCommitValue": frozenset({"metadata"}),
    "GroupMetadataValue": frozenset({"leader"}),
    "UserScramCredentialRecord": frozenset({"name"}),
    "RemoveUserScramCredentialRecord": frozenset({"name"}),
    "AccessControlEntryRecord": frozenset({"principal", "host"}),
    "DelegationTokenRecord": frozenset({"owner", "requester", "renewers"}),
}
CONFIG_SCHEMA = "ConfigRecord"
GROUP_RESOURCE_TYPE = 32  # ConfigResource.Type.GROUP: its resource name is a group id


def _all_strings(value: Any, hide: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return hide(value)
    if isinstance(value, list):
        return [_all_strings(v, hide) for v in value]
    if isinstance(value, dict):
        return {k: _all_strings(v, hide) for k, v in value.items()}
    return value


def _walk(value: Any, fields: frozenset[str], hide: Callable[[str], str]) -> Any:
    if isinstance(value, list):
        return [_walk(v, fields, hide) for v in value]
    if not isinstance(value, dict):
        return value
    return {k: _all_strings(v, hide) if k in fields else _walk(v, fields, hide) for k, v in value.items()}


def redact_data(schema: str | None, data: dict | None, hide: Callable[[str], str]) -> dict | None:
    """``data`` (a decoded message of ``schema``) with its identities passed through ``hide``."""
    if data is None:
        return None
    fields = ID_FIELDS | ID_FIELDS_OF.get(schema or "", frozenset())
    if schema == CONFIG_SCHEMA and data.get("resourceType") == GROUP_RESOURCE_TYPE:
        fields = fields | {"resourceName"}
    return _walk(data, fields, hide)


def _redact_part(part: Part | None, hide: Callable[[str], str]) -> Part | None:
    if part is None:
        return None
    if part.data is None:  # not decoded: its raw bytes may hold anything
        return part if part.raw is None else replace(part, raw=None, note=f"{part.note}; its bytes not shown (ids "
                                                                          "redacted)")
    return replace(part, data=redact_data(part.schema, part.data, hide))


def redact_ids(d: DecodedRecord | None, hide: Callable[[str], str]) -> DecodedRecord | None:
    """A decoded record with its identities redacted; its kafka-dump-log.sh texts are dropped,
    since they would show them."""
    if d is None:
        return None
    return DecodedRecord(_redact_part(d.key, hide), _redact_part(d.value, hide), None, None)


__all__ = ["ID_FIELDS", "ID_FIELDS_OF", "redact_data", "redact_ids"]
