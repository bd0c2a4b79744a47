"""The decoder tables generated from Kafka's own message definitions (``kseg.decoders.derive``).

- regenerating them from the release jars gives the committed bytes (skipped, with one line,
  when the jars are neither cached nor fetchable);
- every record type at every version of every family round-trips: ``decode`` reads what
  ``encode`` writes, for null and non-null nullable fields, tagged fields set and unset,
  empty, null and full optional structs;
- the records whose hand-written schemas had drifted from Kafka decode with Kafka's field
  names: UserScramCredentialRecord (3.5+ layout), VotersRecord (``voterDirectoryId``), and a
  ConsumerGroupMemberMetadataValue whose ``classicMemberMetadata`` is null (one marker byte).
"""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kseg.decoders import KAFKA_VERSIONS, decode_record, derive
from kseg.decoders import generated
from kseg.decoders.generated import kafka_2_8_2, kafka_3_6_2, kafka_3_9_2, kafka_4_3_1, kafka_4_4_0
from kseg.decoders.metadata import RECORDS, control_kafka_text, decode_control
from kseg.decoders.offsets import RECORD_TYPES
from kseg.decoders.schema import (
    EMPTY_STRUCT,
    Field,
    Message,
    decode,
    empty_struct,
    encode,
    field_default,
    kafka_json,
    uuid_str,
)
from kseg.kafka_releases import kafka_release
from kseg.log.encode import build_v2_batch
from kseg.model import Record, make_record

MODULES = generated.MODULES


# --------------------------------------------------------------------------- regenerating


def test_generated_tables_are_what_the_jars_say(tmp_path) -> None:
    """``make schemas`` run again writes the committed modules byte for byte."""
    rc = derive.main(["--out", str(tmp_path)])  # cached jars as they are; mvn only on first use
    if rc == 2:
        pytest.skip("Kafka's jars are neither in .cache/schemas nor fetchable (java, mvn, network)")
    assert rc == 0
    for name in (f"{derive.module_name(r)}.py" for r in derive.RELEASES):
        assert (tmp_path / name).read_bytes() == (derive.OUT / name).read_bytes(), name
    assert derive.main(["--check"]) == 0


def test_the_decoders_read_the_newest_release() -> None:
    """Each release derive fetches has its module; the decoders' tables are the newest one's, and each
    older 4.x line's tool (its release row) reads by its own release's definitions."""
    releases = sorted(derive.RELEASES, key=lambda r: tuple(map(int, r.split("."))))
    assert [m.RELEASE for m in generated.MODULES] == releases
    assert generated.NEWEST.RELEASE == releases[-1]
    assert [m.RELEASE for m in generated.OLDER_4X] == [r for r in releases[:-1] if r.startswith("4.")]
    for name, module in generated.DEFINITIONS_TEXTS.items():
        row = kafka_release(module.RELEASE.rsplit(".", 1)[0])
        assert name in row.decoder_texts, row.line
    from kseg.decoders import metadata, offsets, remote_log, share_state, transactions
    assert metadata.RECORDS is generated.NEWEST.METADATA and offsets.RECORD_TYPES is generated.NEWEST.OFFSETS
    assert transactions.RECORD_TYPES is generated.NEWEST.TRANSACTIONS
    assert share_state.RECORD_TYPES is generated.NEWEST.SHARE_STATE
    assert remote_log.RECORDS is generated.NEWEST.REMOTE_LOG


def test_comments_are_stripped_outside_strings_only() -> None:
    text = '// licence\n{ "a": "x//y", // trailing\n  "b": /* block */ 1 }\n'
    assert json.loads(derive.strip_comments(text)) == {"a": "x//y", "b": 1}


def test_every_family_has_a_table_per_release() -> None:
    for m in MODULES:
        assert m.OFFSETS and m.TRANSACTIONS and m.METADATA and m.CONTROL
        assert getattr(m, "REMOTE_LOG", None) or m is kafka_2_8_2  # tiered storage's records came in 3.0
        assert set(m.CONSUMER_PROTOCOL) == {"ConsumerProtocolSubscription", "ConsumerProtocolAssignment"}
    assert kafka_4_4_0.SHARE_STATE and kafka_4_3_1.SHARE_STATE and not hasattr(kafka_3_9_2, "SHARE_STATE")  # no share coordinator in 3.9
    # Before 3.9 the broker's own jar defined the transaction log's records, before 3.5 __consumer_offsets' too
    assert set(kafka_2_8_2.OFFSETS) == {0, 1, 2} and set(kafka_3_6_2.OFFSETS) == set(range(9))
    assert set(kafka_2_8_2.CONTROL) == {"LeaderChangeMessage"}  # 2.8's KRaft preview: no snapshots yet
    # The 3.9 difference kept as data: its keys were read at the record type as their version.
    assert str(kafka_3_9_2.OFFSETS[3][0].valid) == "3" and str(kafka_4_3_1.OFFSETS[3][0].valid) == "0"


# --------------------------------------------------------------------------- round trip


def _messages() -> Iterator[tuple[str, Message]]:
    for m in MODULES:
        tag = m.RELEASE
        for family in ("OFFSETS", "TRANSACTIONS", "SHARE_STATE"):
            for t, (k, v) in getattr(m, family, {}).items():
                yield f"{tag}-{family}-{t}-key", k
                yield f"{tag}-{family}-{t}-value", v
        for family in ("METADATA", "REMOTE_LOG", "CONTROL", "CONSUMER_PROTOCOL"):
            for t, msg in getattr(m, family, {}).items():
                yield f"{tag}-{family}-{t}", msg


def _versions(m: Message) -> range:
    assert m.valid.hi is not None
    return range(m.valid.lo, m.valid.hi + 1)


CASES = [(f"{name}-v{v}-{variant}", msg, v, variant)
         for name, msg in _messages() for v in _versions(msg) for variant in range(4)]

_INTS = {"int8": (-1, 7, -128, 127), "int16": (-1, 300, -32768, 32767),
         "int32": (-1, 70000, -2**31, 2**31 - 1), "int64": (-1, 2**40, -2**63, 2**63 - 1),
         "uint16": (1, 65535, 8080, 0), "uint32": (1, 2**32 - 1, 5, 0)}


def _primitive(type_: str, variant: int, salt: int) -> Any:
    if type_ in _INTS:
        return _INTS[type_][(variant + salt) % 4]
    if type_ == "float64":
        return (1.5, -2.25e10, 0.001, 7.0)[(variant + salt) % 4]
    if type_ == "bool":
        return (variant + salt) % 2 == 0
    if type_ == "uuid":
        return uuid_str(bytes((salt * 7 + variant + i) % 256 for i in range(16)))
    if type_ == "string":
        return ("", "h\u00e9llo\x1f", "x" * 130, "topic-" + str(salt))[(variant + salt) % 4]
    assert type_ == "bytes"
    return base64.b64encode((b"", b"\x00\xff", b"abc" * 50, b"k")[(variant + salt) % 4]).decode()


def _value(f: Field, type_: str, version: int, variant: int, salt: int) -> Any:
    nullable = version in f.nullable and type_ == f.type
    if nullable and variant == 1:
        return None
    if type_.startswith("[]"):
        elem = type_[2:]
        n = (0, 1, 2, 3)[variant]
        return [_value(f, elem, version, (variant + i) % 4, salt + i) for i in range(n)]
    if f.fields is not None:
        if variant == 2 and type_ == f.type:  # an empty struct: every field at its default
            return empty_struct(f.fields, version)
        return _struct(f.fields, version, variant, salt + 1)
    return _primitive(type_, variant, salt)


def _struct(fields: tuple[Field, ...], version: int, variant: int, salt: int) -> dict:
    """A struct's decoded form: every field present at ``version``, tagged ones only when they
    differ from their default (left unset in variant 0)."""
    out: dict[str, Any] = {}
    for i, f in enumerate(fields):
        tagged = f.tag is not None and version in f.tagged
        if version not in f.versions and not tagged:
            continue
        if tagged and variant == 0:
            continue
        value = _value(f, f.type, version, variant, salt + i)
        if tagged and value == field_default(f, version):
            continue
        out[f.json_name] = value
    return out


@pytest.mark.parametrize("name, message, version, variant", CASES, ids=[c[0] for c in CASES])
def test_every_type_and_version_round_trips(name: str, message: Message, version: int, variant: int) -> None:
    flexible = version in message.flexible
    fields = message.fields if flexible else tuple(f for f in message.fields
                                                    if f.tag is None or version not in f.tagged)
    data = _struct(fields, version, variant, len(name))
    raw = encode(message, data, version)
    d = decode(message, raw, version)
    assert d.data == data
    assert list(d.data) == list(data)  # Kafka's field order
    assert not d.notes
    assert encode(message, d.data, version) == raw


def test_the_round_trip_covers_the_hard_cases() -> None:
    """The sample has nullable structs, tagged structs and tagged nullable arrays to exercise."""
    def walk(fields: tuple[Field, ...]) -> Iterator[Field]:
        for f in fields:
            yield f
            yield from walk(f.fields or ())
    fields = [f for _, m in _messages() for f in walk(m.fields)]
    assert any(f.fields and not f.type.startswith("[]") and str(f.nullable) != "none" and f.tag is None
               for f in fields)
    assert any(f.default is EMPTY_STRUCT and f.tag is not None for f in fields)
    assert any(f.type.startswith("[]") and f.tag is not None and f.default == [] for f in fields)
    assert len(CASES) > 400


# --------------------------------------------------------------------------- the drifts, fixed


def _record(key: bytes | None, value: bytes | None, offset: int = 5) -> Record:
    return Record(offset, 0, key, value, (), 0, 0, 2, None)


def test_scram_credential_record_has_kafkas_fields() -> None:
    m = RECORDS[11]
    data = {"name": "alice", "mechanism": 1, "salt": base64.b64encode(b"salt").decode(),
            "storedKey": base64.b64encode(b"stored").decode(), "serverKey": base64.b64encode(b"server").decode(),
            "iterations": 8192}
    d = decode_record("metadata", _record(None, bytes([1, 11, 0]) + encode(m, data, 0)))
    assert d is not None and d.value is not None
    assert d.value.schema == "UserScramCredentialRecord"
    assert list(d.value.data) == ["name", "mechanism", "salt", "storedKey", "serverKey", "iterations"]
    assert d.kafka_payload == ('{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"alice",'
                               '"mechanism":1,"salt":"c2FsdA==","storedKey":"c3RvcmVk","serverKey":"c2VydmVy",'
                               '"iterations":8192}}')


def test_voters_record_names_the_directory_id() -> None:
    m = kafka_4_3_1.CONTROL["VotersRecord"]
    dir_id = uuid_str(bytes(range(16)))
    data = {"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": dir_id,
                                      "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}],
                                      "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
    rec = _record(struct.pack(">hh", 0, 6), encode(m, data, 0))
    part = decode_control(rec)
    assert part is not None and part.data == data
    assert control_kafka_text(rec) == "KRaftVoters " + kafka_json(data)
    assert '"voterDirectoryId":"AAECAwQFBgcICQoLDA0ODw"' in control_kafka_text(rec)


def _member_value(tagged: bytes) -> bytes:
    """A ConsumerGroupMemberMetadataValue v0 written by hand: null instance and rack ids,
    client "c", host "h", no topics, no regex, rebalance timeout 100, no assignor."""
    body = b"\x00\x00\x02c\x02h\x01\x00" + struct.pack(">i", 100) + b"\x00"
    return struct.pack(">h", 0) + body + tagged


MEMBER_KEY = struct.pack(">h", 5) + b"\x00\x01g" + b"\x00\x01m"
MEMBER_CASES = {
    # Kafka writes a null classicMemberMetadata as tag 0, size 1, presence varint 0
    "null": (b"\x01\x00\x01\x00", {"classicMemberMetadata": None}, ',"classicMemberMetadata":null'),
    "absent": (b"\x00", {}, ""),
    "present": (b"\x01\x00\x0c\x01" + struct.pack(">i", 45000) + b"\x02\x02r\x02\x00" + b"\x00\x00",
                {"classicMemberMetadata": {"sessionTimeoutMs": 45000,
                                           "supportedProtocols": [{"name": "r", "metadata": "AA=="}]}},
                ',"classicMemberMetadata":{"sessionTimeoutMs":45000,'
                '"supportedProtocols":[{"name":"r","metadata":"AA=="}]}'),
}


@pytest.mark.parametrize("case", sorted(MEMBER_CASES))
def test_consumer_group_member_classic_metadata(case: str) -> None:
    tagged, extra, text = MEMBER_CASES[case]
    value = _member_value(tagged)
    d = decode_record("offsets", _record(MEMBER_KEY, value))
    assert d is not None and d.value is not None and d.value.data is not None, d
    base = {"instanceId": None, "rackId": None, "clientId": "c", "clientHost": "h", "subscribedTopicNames": [],
            "subscribedTopicRegex": None, "rebalanceTimeoutMs": 100, "serverAssignor": None}
    assert d.value.data == {**base, **extra}
    assert not d.value.notes
    assert d.kafka_key == '{"type":"5","data":{"groupId":"g","memberId":"m"}}'
    assert d.kafka_payload == ('{"version":"0","data":{"instanceId":null,"rackId":null,"clientId":"c",'
                               '"clientHost":"h","subscribedTopicNames":[],"subscribedTopicRegex":null,'
                               '"rebalanceTimeoutMs":100,"serverAssignor":null' + text + "}}")
    assert d.kafka_text("3.9") == (d.kafka_key, d.kafka_payload)  # Kafka 3.9 prints it alike
    # encode builds the same bytes from the decoded form
    schema = RECORD_TYPES[5][1]
    assert struct.pack(">h", 0) + encode(schema, d.value.data, 0) == value


def test_null_tagged_array_is_printed_as_null() -> None:
    """A tagged nullable array whose default is empty (JSON ``"default": null`` is no default):
    null differs from it and is printed, an empty one is not."""
    schema = RECORD_TYPES[8][1]
    tp = {"topicId": uuid_str(bytes(16)), "partitions": [0]}
    for epochs, shown in ((None, True), ([], False), ([3], True)):
        data = {"memberEpoch": 1, "previousMemberEpoch": 0, "state": 0,
                "assignedPartitions": [{**tp, "assignmentEpochs": epochs} if shown else tp],
                "partitionsPendingRevocation": []}
        raw = encode(schema, data, 0)
        assert decode(schema, raw, 0).data == data


def test_json_unicode_escapes_are_upper_case_as_jacksons() -> None:
    assert kafka_json({"k\x1f": "a\x01\\u00ab"}) == '{"k\\u001F":"a\\u0001\\\\u00ab"}'


# --------------------------------------------------------------------------- end to end

KSEG = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]


def test_dump_prints_the_drifted_records_as_kafka_does(tmp_path: Path) -> None:
    """``kseg dump --format kafka --decode auto`` (a real process) on a ``__consumer_offsets``
    segment holding the three member records and a ``__cluster_metadata`` one holding a
    SCRAM credential: exit 0, Kafka's names, nothing on stderr."""
    offsets_dir = tmp_path / "__consumer_offsets-0"
    offsets_dir.mkdir()
    recs = [make_record(i, 1700000000000, MEMBER_KEY, _member_value(MEMBER_CASES[c][0]))
            for i, c in enumerate(sorted(MEMBER_CASES))]
    (offsets_dir / "00000000000000000000.log").write_bytes(build_v2_batch(recs))
    meta_dir = tmp_path / "__cluster_metadata-0"
    meta_dir.mkdir()
    scram = bytes([1, 11, 0]) + encode(RECORDS[11], {"name": "bob", "mechanism": 2, "iterations": 4096}, 0)
    (meta_dir / "00000000000000000000.log").write_bytes(build_v2_batch([make_record(0, 1700000000000, None, scram)]))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    r = subprocess.run([*KSEG, "dump", "--format", "kafka", "--decode", "auto",
                        str(offsets_dir / "00000000000000000000.log"), str(meta_dir / "00000000000000000000.log")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    payloads = [line.split(" payload: ", 1)[1] for line in r.stdout.splitlines() if " payload: " in line]
    assert len(payloads) == 4
    assert [p.count('"classicMemberMetadata"') for p in payloads[:3]] == [0, 1, 1]
    assert '"classicMemberMetadata":null}}' in payloads[1]
    assert payloads[3] == ('{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"bob","mechanism":2,'
                           '"salt":"","storedKey":"","serverKey":"","iterations":4096}}')
