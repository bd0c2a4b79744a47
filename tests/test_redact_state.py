"""``--redact`` beyond record data: ``kseg state --redact ids`` (kseg.decoders.identities) holds no
group, member, client or transactional id, host, commit metadata or user name of the input, in
text and JSON, and an id redacts alike wherever it appears and in whichever command (one keyed
hash, ``kseg.ops.redact``); ``--redact secrets`` hides what ``--format kafka`` would show; each
command takes the names that apply to it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import build_v2_batch, make_record, metadata_log
from conftest import REPO
from kseg.cli.main import main
from kseg.decoders.identities import ID_FIELDS, ID_FIELDS_OF
from kseg.ops.redact import REDACTABLE, Redactor

INTERNAL = REPO / "fixtures" / "internal"
KAFKA4 = REPO / "fixtures" / "kafka-4" / "logdir"
KEY = "case-1234"
# What fixtures/internal/build.py wrote that names applications, people or machines.
INTERNAL_IDS = ["orders-app", "streams-app", "cg", "sg", "consumer-1-5a5f7a3b", "consumer-1", "streams-1", "share-1",
                "/10.0.0.7", "/10.0.0.9", "/10.0.0.10", "app-1", "i-1", "p-1", "m-1", "s-1", "st-1", "fenced", "zone"]
# And what the metadata log below holds.
META_IDS = ["alice", "User:bob", "User:carol", "User:dave", "10.1.2.3", "quota-user", "billing-group"]


@pytest.fixture()
def meta(tmp_path: Path) -> Path:
    return metadata_log(tmp_path / "__cluster_metadata-0", [
        ({"name": "alice", "mechanism": 1, "salt": "c2FsdA==", "storedKey": "a2V5", "serverKey": "a2V5",
          "iterations": 8192}, 11),
        ({"owner": "User:bob", "requester": "User:carol", "renewers": ["User:dave"], "issueTimestamp": 1,
          "maxTimestamp": 2, "expirationTimestamp": 3, "tokenId": "tok"}, 10),
        ({"id": "AAAAAAAAAAAAAAAAAAAAAQ", "resourceType": 2, "resourceName": "orders", "patternType": 3,
          "principal": "User:bob", "host": "10.1.2.3", "operation": 3, "permissionType": 3}, 18),
        ({"entity": [{"entityType": "user", "entityName": "quota-user"}], "key": "producer_byte_rate",
          "value": 1024.0, "remove": False}, 14),
        ({"resourceType": 32, "resourceName": "billing-group", "name": "consumer.session.timeout.ms",
          "value": "45000"}, 4),
        ({"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "86400000"}, 4),
    ])


def run(*args: object, code: int = 0, env: dict | None = None) -> str:
    res = CliRunner(env=env).invoke(main, [str(a) for a in args])
    assert res.exit_code == code, res.output
    return res.output


def _present(ids: list[str], text: str) -> list[str]:
    """The ids found whole in ``text`` (not as part of a longer name, e.g. a topic named after an app)."""
    return [i for i in ids if re.search(rf"(?<![\w.:/-]){re.escape(i)}(?![\w.:/-])", text)]


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize(("which", "ids"), [("internal", INTERNAL_IDS), ("meta", META_IDS)])
def test_state_redact_ids_shows_none_of_them(which: str, ids: list[str], fmt: str, meta: Path) -> None:
    src = INTERNAL if which == "internal" else meta
    plain = run("state", "--format", fmt, src)
    # The search finds them unredacted (every one in JSON; the text shows fewer fields).
    assert _present(ids, plain) == ids if fmt == "json" else _present(ids, plain) or which == "meta"
    redacted = run("state", "--format", fmt, "--redact", "ids", "--redact-key", KEY, src)
    assert _present(ids, redacted) == []
    assert "redacted:" in redacted
    # Topic names, configuration names and numbers stay: they are how the state is read.
    for kept in ("orders", "retention.ms" if which == "meta" else "payments"):
        assert kept in redacted


@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
@pytest.mark.parametrize(("which", "ids"), [("internal", INTERNAL_IDS), ("meta", META_IDS)])
def test_dump_decode_redact_ids_shows_none_of_them(which: str, ids: list[str], fmt: str, meta: Path) -> None:
    """``dump --decode --redact ids``: the decoded records field by field, their raw keys and values
    (which hold the ids in binary) as tokens; the same token for an id as ``state --redact ids``."""
    src = INTERNAL if which == "internal" else meta
    args = ["dump", "--decode", "auto", "--format", fmt, "--payload", "utf8"]
    plain = run(*args, src)
    assert _present(ids, plain)
    redacted = run(*args, "--redact", "ids", "--redact-key", KEY, src)
    assert _present(ids, redacted) == []
    assert len(redacted.splitlines()) == len(plain.splitlines())
    if which == "internal" and fmt != "kafka":
        token = Redactor.make(frozenset({"ids"}), KEY.encode()).text("orders-app")
        assert token in redacted and token in run("state", "--redact", "ids", "--redact-key", KEY, src)


def test_state_redact_keeps_the_shape_and_equal_ids_equal() -> None:
    plain = json.loads(run("state", "--format", "json", INTERNAL))
    red = json.loads(run("state", "--format", "json", "--redact", "ids", "--redact-key", KEY, INTERNAL))
    r = Redactor.make(frozenset({"ids"}), KEY.encode())
    for p, q in zip(plain["partitions"], red["partitions"]):
        assert (p["records_applied"], p["records_not_applied"], p["last_offset"]) == (
            q["records_applied"], q["records_not_applied"], q["last_offset"])
        if "groups" in p:
            assert sorted(q["groups"]) == sorted(r.text(g) for g in p["groups"])
            g = q["groups"][r.text("orders-app")]
            # the leader is a member id: the same member, the same token
            assert g["metadata"]["leader"] == g["metadata"]["members"][0]["memberId"] == r.text("consumer-1-5a5f7a3b")
            assert g["offsets"] == {t: {n: {**v, "metadata": r.text(v["metadata"]) if v["metadata"] else ""}
                                        for n, v in parts.items()}
                                    for t, parts in p["groups"]["orders-app"]["offsets"].items()}
        if "transactional_ids" in p:
            assert sorted(q["transactional_ids"]) == sorted(r.text(t) for t in p["transactional_ids"])


def test_an_id_redacts_alike_in_dump_and_state(tmp_path: Path) -> None:
    """A record key that is a group id: ``dump --redact keys`` and ``state --redact ids`` with one key
    give one token."""
    folder = tmp_path / "orders-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(
        build_v2_batch([make_record(0, 1_700_000_000_000, b"orders-app", b"v")]))
    lines = [json.loads(x) for x in run("dump", "-r", "--format", "jsonl", "--redact", "keys", folder,
                                        env={"KSEG_REDACT_KEY": KEY}).splitlines()]
    token = next(x["key"] for x in lines if x["type"] == "record")
    groups = json.loads(run("state", "--format", "json", "--redact", "ids", INTERNAL / "__consumer_offsets-0",
                            env={"KSEG_REDACT_KEY": KEY}))["partitions"][0]["groups"]
    assert token.startswith("redacted:10:") and token in groups


def test_state_redact_ids_over_a_real_broker_corpus() -> None:
    """Kafka 4's own internal topics: no group or transactional id, member or client id left."""
    plain = json.loads(run("state", "--format", "json", KAFKA4))
    ids = sorted({i for p in plain["partitions"] for key in ("groups", "transactional_ids") for i in p.get(key, {})})
    found: set[str] = set()

    def walk(v: object, name: str = "") -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, name)
        elif isinstance(v, str) and name in ID_FIELDS and v:
            found.add(v)

    walk(plain)
    ids += sorted(found)
    assert ids  # the corpus has groups and transactional ids
    redacted = run("state", "--format", "json", "--redact", "ids", KAFKA4)
    assert [i for i in ids if json.dumps(i) in redacted] == []
    assert _present(ids, run("state", "--redact", "ids", KAFKA4)) == []


def test_the_table_names_real_fields() -> None:
    """Every message named in the identity table exists in Kafka's schemas kseg decodes."""
    from kseg.decoders.metadata import RECORDS as META
    known = {m.name for m in META.values()} | {"OffsetCommitValue", "GroupMetadataValue"}
    assert set(ID_FIELDS_OF) <= known
    assert "ids" in REDACTABLE and "secrets" in REDACTABLE


# --------------------------------------------------------------------------- --redact secrets and the grammar


def test_redact_secrets_hides_them_in_kafka_lines(meta: Path) -> None:
    shown = run("dump", "--decode", "auto", "--format", "kafka", meta)
    hidden = run("dump", "--decode", "auto", "--format", "kafka", "--redact", "secrets", meta)
    assert "c2FsdA==" in shown and "tok" in shown
    assert "c2FsdA==" not in hidden and '"tok"' not in hidden
    # the lines are the same in number: each record still has its line
    assert len(hidden.splitlines()) == len(shown.splitlines())


@pytest.mark.parametrize(("args", "phrase"), [
    (["state", "--redact", "keys", INTERNAL], "'keys': give ids, secrets"),
    (["state", "--redact-key", "k", INTERNAL], "--redact-key is the key of --redact's hash"),
    (["state", "--redact", "secrets", "--show-secrets", INTERNAL], "--redact secrets hides what --show-secrets shows"),
    (["dump", "--redact", "ids", INTERNAL], "--redact ids applies to the internal topics' records --decode decodes"),
    (["dump", "--redact", "names", INTERNAL], "'names': give keys, values, headers, ids, secrets"),
    (["bundle", INTERNAL, "-o", "/nonexistent/b.tgz", "--redact", "ids"], "'ids': give keys, values, headers, secrets"),
    (["dump", "--decode", "auto", "--redact", "secrets", "--show-secrets", INTERNAL],
     "--redact secrets hides what --show-secrets shows"),
    (["state", "--coordinator-of", "g", "--redact", "ids"], "--redact limits a replay"),
])
def test_redact_usage(args: list, phrase: str) -> None:
    assert phrase in run(*args, code=2)


def test_a_key_in_the_environment_alone_is_no_error() -> None:
    run("state", INTERNAL, env={"KSEG_REDACT_KEY": KEY})
    run("dump", INTERNAL / "__consumer_offsets-0", env={"KSEG_REDACT_KEY": KEY})
