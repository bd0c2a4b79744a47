"""What a KRaft cluster's operators leave in the metadata log, as kseg checks and applies it.

Found on a real Kafka 4.3.1 broker (``fixtures/kafka-admin/4.3``, ``tests/kafka/admin.py``):

* a dynamic quorum (``kraft.version`` 1) writes the kraft.version and the voters into one control
  batch, and every snapshot opens with a control batch of its header, kraft.version and voters:
  a control batch of several KRaft control records is sound; only a transaction marker's batch
  holds exactly one record;
* ``kseg state`` keeps SCRAM users by name and mechanism (added, altered, removed one mechanism at
  a time, as ``kafka-configs.sh --alter --add-config/--delete-config`` does), delegation tokens
  (created, renewed, expired: the removal names the secret token id), and names a default quota
  entity ``<default>`` (``kafka-configs.sh --entity-default``).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kseg.decoders.generated import kafka_4_3_1 as K4
from kseg.decoders.metadata import RECORDS
from kseg.decoders.schema import encode
from kseg.decoders.secrets import HIDDEN
from kseg.log.checks import batch_damage
from kseg.log.encode import build_v2_batch
from kseg.log.segment import Segment
from kseg.model import make_record
from kseg.ops.state import DEFAULT_ENTITY, replay

T0 = 1_700_000_000_000


def _control(type_id: int, value: bytes) -> tuple[bytes, bytes]:
    return struct.pack(">hh", 0, type_id), value


def _kraft(type_id: int, name: str, data: dict) -> tuple[bytes, bytes]:
    return _control(type_id, struct.pack(">h", 0) + encode(K4.CONTROL[name], data, 0))


VOTERS = {"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ",
                                    "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}],
                                    "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}
COMMIT = _control(1, struct.pack(">hi", 0, 7))
CONTROL_BATCHES = {
    # (records, transactional, the error verify reports or None)
    "snapshot header, kraft.version, voters": (
        [_kraft(3, "SnapshotHeaderRecord", {"version": 0, "lastContainedLogTimestamp": T0}),
         _kraft(5, "KRaftVersionRecord", {"version": 0, "kRaftVersion": 1}),
         _kraft(6, "VotersRecord", VOTERS)], False, None),
    "kraft.version and voters": (
        [_kraft(5, "KRaftVersionRecord", {"version": 0, "kRaftVersion": 1}), _kraft(6, "VotersRecord", VOTERS)],
        False, None),
    "one commit marker": ([COMMIT], True, None),
    "two commit markers": ([COMMIT, COMMIT], True, "a transaction marker's control batch must hold exactly one record"),
    "a marker beside a kraft record": ([_kraft(5, "KRaftVersionRecord", {"version": 0, "kRaftVersion": 1}), COMMIT],
                                       True, "a transaction marker's control batch must hold exactly one record"),
    "a marker outside a transaction": ([COMMIT], False, "transaction marker in a non-transactional batch"),
}


@pytest.mark.parametrize("case", sorted(CONTROL_BATCHES))
def test_control_batches(tmp_path: Path, case: str) -> None:
    records, transactional, error = CONTROL_BATCHES[case]
    raw = build_v2_batch([make_record(i, T0, k, v) for i, (k, v) in enumerate(records)], control=True,
                         transactional=transactional, producer_id=5 if transactional else -1,
                         producer_epoch=0 if transactional else -1)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw)
    (batch,) = Segment(path).batches()
    messages = [f.message for f in batch_damage(batch, str(path))]
    assert messages == ([] if error is None else [error])


def _metadata(name: str, data: dict) -> bytes:
    message = next(m for m in RECORDS.values() if m.name == name)
    return bytes([1, message.api_key, 0]) + encode(message, data, 0)


def _scram(name: str, mechanism: int, iterations: int) -> bytes:
    return _metadata("UserScramCredentialRecord", {"name": name, "mechanism": mechanism, "salt": "c2FsdA==",
                                                   "storedKey": "a2V5", "serverKey": "a2V5", "iterations": iterations})


def _token(token_id: str, expiration: int) -> bytes:
    return _metadata("DelegationTokenRecord", {"owner": "User:admin", "requester": "User:admin",
                                               "renewers": ["User:bob"], "issueTimestamp": T0,
                                               "maxTimestamp": T0 + 10, "expirationTimestamp": expiration,
                                               "tokenId": token_id})


OPERATOR_LOG = [
    _scram("alice", 1, 8192), _scram("alice", 2, 4096), _scram("carol", 1, 4096),
    _scram("alice", 1, 10000),  # altered
    _metadata("RemoveUserScramCredentialRecord", {"name": "carol", "mechanism": 1}),  # carol's only credential
    _token("kept-token", T0 + 1), _token("kept-token", T0 + 2),  # renewed
    _token("gone-token", T0 + 3), _metadata("RemoveDelegationTokenRecord", {"tokenId": "gone-token"}),
    _metadata("ClientQuotaRecord", {"entity": [{"entityType": "user", "entityName": None}],
                                    "key": "consumer_byte_rate", "value": 4194304.0, "remove": False}),
]


@pytest.fixture()
def operator_log(tmp_path: Path) -> Path:
    folder = tmp_path / "__cluster_metadata-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(
        build_v2_batch([make_record(i, T0, None, v) for i, v in enumerate(OPERATOR_LOG)]))
    return folder


@pytest.mark.parametrize("show_secrets", [False, True])
def test_scram_users_tokens_and_default_quotas(operator_log: Path, show_secrets: bool) -> None:
    (ps,) = replay([operator_log], show_secrets=show_secrets).partitions
    image = ps.state["image"]
    assert {u: {m: c["iterations"] for m, c in ms.items()} for u, ms in image["scram_users"].items()} == \
        {"alice": {"SCRAM-SHA-256": 10000, "SCRAM-SHA-512": 4096}}
    salts = {c["salt"] for ms in image["scram_users"].values() for c in ms.values()}
    assert salts == ({"c2FsdA=="} if show_secrets else {HIDDEN})
    (token,) = image["delegation_tokens"]
    assert token["expirationTimestamp"] == T0 + 2
    assert token["tokenId"] == ("kept-token" if show_secrets else HIDDEN)
    assert image["client_quotas"] == {f"user={DEFAULT_ENTITY}": {"consumer_byte_rate": 4194304.0}}
    assert "USER_SCRAM_CREDENTIAL_RECORD" not in image["other"] and not ps.notes


def test_state_text_lists_users_tokens_and_quotas(operator_log: Path) -> None:
    from click.testing import CliRunner

    from kseg.cli.main import main

    res = CliRunner().invoke(main, ["state", str(operator_log)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert "  SCRAM user alice: SCRAM-SHA-256 iterations 10000, SCRAM-SHA-512 iterations 4096" in lines
    assert "  delegation token of User:admin: renewers User:bob, expires 2023-11-14T22:13:20.002Z" in lines
    assert "  quota user=<default>: consumer_byte_rate=4194304.0" in lines
    assert not any("carol" in line or "kept-token" in line for line in lines)
