"""Secrets in the metadata log (kseg.decoders.secrets): SCRAM salts and keys, delegation token ids
and sensitive configuration values are hidden in dump's own formats and in state unless
--show-secrets; --format kafka shows them as kafka-dump-log.sh does (the drop-in lines stay
Kafka's); what is not secret stays as it is."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from builders import metadata_log
from conftest import REPO
from kseg.cli.main import main
from kseg.decoders.secrets import HIDDEN, SENSITIVE_CONFIG, hide_data

SALT, STORED, SERVER, TOKEN, PASSWORD = b"s4lt-bytes", b"stored-key-bytes", b"server-key-bytes", "tok-123456", "hunter2!"
B64 = [base64.b64encode(x).decode() for x in (SALT, STORED, SERVER)]
SECRETS = [*B64, TOKEN, PASSWORD]


@pytest.fixture()
def meta(tmp_path: Path) -> Path:
    return metadata_log(tmp_path / "__cluster_metadata-0", [
        ({"name": "alice", "mechanism": 1, "salt": B64[0], "storedKey": B64[1], "serverKey": B64[2],
          "iterations": 8192}, 11),
        ({"owner": "User:bob", "requester": "User:bob", "renewers": [], "issueTimestamp": 1,
          "maxTimestamp": 2, "expirationTimestamp": 3, "tokenId": TOKEN}, 10),
        ({"resourceType": 4, "resourceName": "1", "name": "listener.name.sasl_ssl.ssl.key.password",
          "value": PASSWORD}, 4),
        ({"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "86400000"}, 4),
    ])


def run(*args: object) -> str:
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.output


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_dump_hides_secrets_unless_asked(meta: Path, fmt: str) -> None:
    hidden = run("dump", "--decode", "auto", "--format", fmt, meta)
    assert not [s for s in SECRETS if s in hidden]
    assert hidden.count(HIDDEN) >= 5 and "retention.ms" in hidden and "86400000" in hidden and "alice" in hidden
    shown = run("dump", "--decode", "auto", "--format", fmt, "--show-secrets", meta)
    assert all(s in shown for s in SECRETS) and HIDDEN not in shown
    if fmt == "jsonl":  # the raw value of a record that held a secret is hidden with it
        lines = [json.loads(x) for x in hidden.splitlines() if '"record"' in x]
        assert [x.get("value") == HIDDEN for x in lines] == [True, True, True, False]


def test_kafka_lines_show_what_kafka_shows(meta: Path) -> None:
    out = run("dump", "--decode", "auto", "--format", "kafka", meta)
    assert all(s in out for s in SECRETS) and HIDDEN not in out
    res = CliRunner().invoke(main, ["dump", "--decode", "auto", "--format", "kafka", "--show-secrets", str(meta)])
    assert res.exit_code == 2 and "--show-secrets" in res.output


def test_state_hides_secrets_unless_asked(meta: Path) -> None:
    img = json.loads(run("state", "--format", "json", meta))["partitions"][0]["image"]
    (user,) = img["scram_users"].values()
    assert [m["salt"] for m in user.values()] == [HIDDEN]
    assert [t["tokenId"] for t in img["delegation_tokens"]] == [HIDDEN]
    assert img["configs"]["broker"]["1"]["listener.name.sasl_ssl.ssl.key.password"] == HIDDEN
    assert img["configs"]["topic"]["orders"]["retention.ms"] == "86400000"
    text = run("state", meta)
    assert not [s for s in SECRETS if s in text]
    shown = run("state", "--format", "json", "--show-secrets", meta)
    assert all(s in shown for s in SECRETS)


@pytest.mark.parametrize(("name", "secret"), [
    ("sasl.jaas.config", True), ("listener.name.internal.scram-sha-256.sasl.jaas.config", True),
    ("ssl.key.password", True), ("ssl.keystore.password", True), ("ssl.truststore.password", True),
    ("ssl.keystore.key", True), ("password.encoder.secret", True), ("delegation.token.secret.key", True),
    ("sasl.oauthbearer.client.credentials.client.secret", True), ("delegation.token.master.key", True),
    ("retention.ms", False), ("cleanup.policy", False), ("ssl.keystore.location", False),
    ("sasl.enabled.mechanisms", False), ("ssl.keystore.type", False)])
def test_sensitive_configuration_names(name: str, secret: bool) -> None:
    assert bool(SENSITIVE_CONFIG.search(name)) == secret
    data = {"resourceType": 4, "resourceName": "1", "name": name, "value": "v"}
    assert (hide_data("ConfigRecord", data)["value"] == HIDDEN) == secret
    assert hide_data("ConfigRecord", {**data, "value": None})["value"] is None  # a removal shows as one


def test_a_corpus_without_secrets_is_unchanged() -> None:
    folder = REPO / "fixtures" / "kafka-4" / "logdir" / "__cluster_metadata-0"
    assert run("dump", "--decode", "auto", "--format", "jsonl", folder) == run(
        "dump", "--decode", "auto", "--format", "jsonl", "--show-secrets", folder)
