"""kseg on what Kafka 3.9 and 4.x brokers wrote while operators used Kafka's own tools (no Java needed).

``fixtures/kafka-admin/<line>/`` (written by ``tests/kafka/admin.py --release R --write``; one per release
of ``admin.RELEASES``: ``3.9`` (a KRaft node), ``4.0``, ``4.1``, ``4.2``, ``4.3`` (4.3.1), ``4.4``): the broker's
partitions after SCRAM users, ACLs, client quotas, delegation tokens, a dynamic quorum's voter added and removed, a
KIP-848 consumer group, a share group, a streams group and transactions v2 (committed, aborted,
committed with offsets), each where the release has it (``manifest.json`` names the steps it
skipped, and why); ``answers/`` (what ``kafka-configs.sh``, ``kafka-acls.sh``,
``kafka-delegation-tokens.sh``, ``kafka-metadata-quorum.sh``, ``kafka-features.sh``,
``kafka-consumer-groups.sh``, ``kafka-share-groups.sh``, ``kafka-streams-groups.sh`` and
``kafka-transactions.sh`` answered before the stop) and ``golden/`` (the release's DumpLogSegments
with the matching decoder on every file). Here kseg must

* verify every file (``kseg verify``, ``kseg index --check``);
* print byte for byte what DumpLogSegments printed (``kseg dump --format kafka --kafka-version <line>
  --decode ...``);
* decode every internal record (``kseg dump --format jsonl --decode auto``, no raw fallback);
* replay to what the tools answered (``kseg state``, ``kseg txn``).

The checks are functions of the corpus folder, so the live test (``tests/kafka/test_kafka_admin_live.py``)
runs the same ones on a fresh broker run.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import admin  # noqa: E402
import brokers  # noqa: E402
import checks  # noqa: E402
import test_kafka_clients_corpus as clients_corpus  # noqa: E402
import tiered  # noqa: E402

from kseg.decoders.secrets import HIDDEN  # noqa: E402
from kseg.ops.state import DEFAULT_ENTITY  # noqa: E402

CORPORA = sorted(p for p in admin.FIXTURES.glob("*") if (p / "manifest.json").is_file())
INTERNAL = ("__cluster_metadata-0", "__consumer_offsets-0", "__transaction_state-0", "__share_group_state-0")

# Kafka's enums as the metadata records hold them (AccessControlEntryRecord) and kafka-acls.sh prints them
RESOURCE_TYPES = {2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {3: "LITERAL", 4: "PREFIXED"}
OPERATIONS = {2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE",
              9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE",
              13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
PERMISSIONS = {2: "DENY", 3: "ALLOW"}
# kafka-configs.sh's names of quota entity types, as ClientQuotaRecord names them
QUOTA_ENTITIES = {"user-principal": "user", "client-id": "client-id", "ip": "ip"}


def answer(root: Path, name: str) -> str:
    return (root / "answers" / f"{name}.txt").read_text()


def manifest(root: Path) -> dict[str, Any]:
    return json.loads((root / "manifest.json").read_text())


def release_of(root: Path) -> str:
    """The release (a name of ``admin.RELEASES``) whose broker and tools wrote the corpus."""
    return json.loads((root / "golden" / "manifest.json").read_text())["release"]


def skipped(root: Path) -> dict[str, str]:
    """The steps the corpus's run left out (the release lacks them): step -> why. The 4.3.1 corpus, written
    before the scenario ran other releases, skipped nothing and says nothing."""
    return manifest(root).get("skipped", {})


def ran(root: Path, step: str) -> bool:
    return step not in skipped(root)


def kseg_state(root: Path, partition: str, *extra: str) -> dict[str, Any]:
    (ps,) = tiered.kseg_json(["state", *extra, f"logdir/{partition}"], cwd=root)["partitions"]
    assert not ps["notes"] and ps["records_not_applied"] == 0, ps["notes"]
    return ps


def image(root: Path) -> dict[str, Any]:
    return kseg_state(root, "__cluster_metadata-0")["image"]


def table(text: str) -> list[dict[str, str]]:
    """The rows of a tool's column table: a header line (column names, "COORDINATOR (ID)" the one with a space),
    then rows of values without spaces ("host:port (id)" the one with), or tab-separated cells; blank lines
    and messages skipped."""
    def words(line: str) -> list[str]:
        if "\t" in line:  # kafka-transactions.sh: tab-separated, each cell ended by a tab, some empty
            return [c.strip() for c in line.split("\t")][:-1]
        out: list[str] = []
        for w in line.split():
            if w.startswith("(") and w.endswith(")") and out:
                out[-1] += " " + w
            else:
                out.append(w)
        return out

    lines = [line for line in text.splitlines() if line.strip() and not line.startswith(("Error:", "Calling "))]
    if not lines:
        return []
    cols = words(lines[0])
    rows = [dict(zip(cols, words(line))) for line in lines[1:]]
    assert all(len(r) == len(cols) for r in rows), (cols, lines)
    return rows


# --------------------------------------------------------------------------- files: verify, dumps, decoding

def check_verify(root: Path) -> None:
    clients_corpus.check_verify(root)


def check_every_record_decodes(root: Path) -> None:
    """Every record of the internal partitions and the metadata snapshots decodes (no raw fallback), and the
    record types the operators' actions write are among them. A record the newest definitions do not read
    (4.0's early-access share-group records) is read by the definitions of the release that wrote it."""
    schemas: dict[str, set[str]] = {}
    older: set[str] = set()
    for partition in (p for p in INTERNAL if (root / "logdir" / p).is_dir()):
        records = tiered.decoded_records(root / "logdir" / partition)
        assert records and not tiered.undecoded(records), (partition, tiered.undecoded(records)[:5])
        decoded = [r[f"{part}_decoded"] for r in records for part in ("key", "value") if r.get(f"{part}_decoded")]
        schemas[partition] = {d["schema"] for d in decoded}
        older |= {d["definitions"] for d in decoded if "definitions" in d}
    assert older <= {manifest(root)["kafka_version"]}, older
    for snap in sorted((root / "logdir" / "__cluster_metadata-0").glob("*.checkpoint")):
        rc, out, err = checks.run_kseg(["dump", "--records", "--decode", "auto", "--format", "jsonl", str(snap)],
                                       cwd=root)
        assert rc == 0, err.decode()
        records = [o for o in map(json.loads, out.splitlines()) if o.get("type") == "record"]
        assert records and not tiered.undecoded(records), (snap.name, tiered.undecoded(records)[:5])
    assert {"UserScramCredentialRecord", "RemoveUserScramCredentialRecord", "AccessControlEntryRecord",
            "RemoveAccessControlEntryRecord", "ClientQuotaRecord", "DelegationTokenRecord",
            "RemoveDelegationTokenRecord", "VotersRecord", "KRaftVersionRecord", "FeatureLevelRecord",
            "RegisterControllerRecord"} <= schemas["__cluster_metadata-0"], schemas["__cluster_metadata-0"]
    assert {"ConsumerGroupMetadataKey", "ConsumerGroupMemberMetadataKey", "ConsumerGroupTargetAssignmentMemberKey",
            "ConsumerGroupCurrentMemberAssignmentKey", "OffsetCommitKey",
            *(["ShareGroupMetadataKey"] if ran(root, "share") else []),
            *(["StreamsGroupMetadataKey", "StreamsGroupTopologyKey", "StreamsGroupMemberMetadataKey"]
              if ran(root, "streams") else [])} \
        <= schemas["__consumer_offsets-0"], schemas["__consumer_offsets-0"]
    assert {"TransactionLogKey", "TransactionLogValue"} <= schemas["__transaction_state-0"]
    if ran(root, "share"):
        assert {"ShareSnapshotKey", "ShareSnapshotValue"} <= schemas["__share_group_state-0"]
    else:
        assert "__share_group_state-0" not in schemas


def dump_cases(root: Path) -> list[tuple[str, str, dict]]:
    return clients_corpus.dump_cases(root)


def check_dump(root: Path, tool: str, entry: dict) -> None:
    clients_corpus.check_dump(root, tool, entry)


# --------------------------------------------------------------------------- the metadata image vs the tools

def tool_scram_users(root: Path) -> dict[str, dict[str, int]]:
    """``kafka-configs.sh --describe --entity-type users``: user -> mechanism -> iterations."""
    out: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"^SCRAM credential configs for user-principal '([^']*)' are (.*)$", answer(root, "users"),
                         re.M):
        out[m.group(1)] = {mech: int(n) for mech, n in re.findall(r"(SCRAM-SHA-\d+)=iterations=(\d+)", m.group(2))}
    return out


def check_scram_users(root: Path) -> None:
    kseg = {user: {mech: cred["iterations"] for mech, cred in mechs.items()}
            for user, mechs in image(root)["scram_users"].items()}
    assert kseg == tool_scram_users(root)
    assert set(kseg) >= {admin.ADMIN_USER, "alice", "bob"} and admin.SCRAM_DELETED[0] not in kseg
    assert kseg["alice"][admin.SCRAM_ALTERED[1]] == admin.SCRAM_ALTERED[2]


def _quota_entity(described: str) -> str:
    """"user-principal 'bob', client-id 'etl'" or "the default user-principal" as the image's entity key."""
    parts = []
    for piece in described.split(", "):
        m = re.fullmatch(r"(?:the default ([\w-]+)|([\w-]+) '([^']*)')", piece)
        assert m, described
        kind = QUOTA_ENTITIES[m.group(1) or m.group(2)]
        parts.append(f"{kind}={DEFAULT_ENTITY if m.group(1) else m.group(3)}")
    return ",".join(sorted(parts))


def tool_quotas(root: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name in ("users", "users-default", "clients", "users-clients", "ips"):
        for m in re.finditer(r"^Quota configs for (.*) are (.*)$", answer(root, name), re.M):
            out[_quota_entity(m.group(1))] = {k: float(v) for k, v in
                                               (kv.split("=") for kv in m.group(2).split(","))}
    return out


def check_client_quotas(root: Path) -> None:
    kseg = {",".join(sorted(entity.split(","))): values for entity, values in image(root)["client_quotas"].items()
            if values}
    assert kseg == tool_quotas(root)
    assert admin.QUOTA_REMOVED[1] not in kseg["user=alice"]


def tool_acls(root: Path) -> set[tuple[str, ...]]:
    out = set()
    resource = None
    for line in answer(root, "acls").splitlines():
        m = re.match(r"Current ACLs for resource `ResourcePattern\(resourceType=(\w+), name=(.*), patternType=(\w+)\)`",
                     line)
        if m:
            resource = m.groups()
            continue
        m = re.match(r"\s+\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)", line)
        if m:
            assert resource is not None
            out.add((*resource, *m.groups()))
    return out


def check_acls(root: Path) -> None:
    kseg = {(RESOURCE_TYPES[a["resourceType"]], a["resourceName"], PATTERN_TYPES[a["patternType"]], a["principal"],
             a["host"], OPERATIONS[a["operation"]], PERMISSIONS[a["permissionType"]])
            for a in image(root)["acls"].values()}
    assert kseg == tool_acls(root)
    assert len(kseg) == sum(len([f for f in flags if f == "--operation"]) for flags in admin.ACLS) - 1


TOKEN_ROW = re.compile(r"^(?P<id>\S+) (?P<hmac>\S+) (?P<owner>\S+)\s+(?P<requester>\S+)\s+\[(?P<renewers>[^\]]*)\]\s+"
                       r"(?P<issued>\S+) (?P<expires>\S+) (?P<max>\S+)\s*$")


def _minute(ms: int) -> str:
    """A time as kafka-delegation-tokens.sh prints it (yyyy-MM-dd'T'HH:mm; the tool ran in UTC)."""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M")


def check_delegation_tokens(root: Path) -> None:
    """The tokens ``kafka-delegation-tokens.sh --describe`` lists are those of the image (id with
    ``--show-secrets``, owner, requester, renewers, dates); the expired one is gone."""
    rows = [m.groupdict() for m in map(TOKEN_ROW.match, answer(root, "tokens").splitlines()) if m]
    assert rows and f"Total number of tokens : {len(rows)}" in answer(root, "tokens")
    shown = tiered.kseg_json(["state", "--show-secrets", "logdir/__cluster_metadata-0"], cwd=root)
    tokens = shown["partitions"][0]["image"]["delegation_tokens"]
    assert [(r["id"], r["owner"], r["requester"], r["renewers"], r["issued"], r["expires"], r["max"]) for r in rows] == \
        [(t["tokenId"], t["owner"], t["requester"], ", ".join(t["renewers"]), _minute(t["issueTimestamp"]),
          _minute(t["expirationTimestamp"]), _minute(t["maxTimestamp"])) for t in tokens]
    assert all(t["tokenId"] == HIDDEN for t in image(root)["delegation_tokens"])


def check_quorum(root: Path) -> None:
    """``kafka-metadata-quorum.sh describe --status``: the voters (id, directory id, endpoints) and the
    leader; the second controller was added and removed, so kraft.version 1 and one voter remain."""
    status = answer(root, "quorum-status")
    voters = json.loads(re.search(r"^CurrentVoters:\s+(.*)$", status, re.M).group(1))
    quorum = image(root)["quorum"]
    assert quorum["kraft_version"] == 1
    assert [(v["voterId"], v["voterDirectoryId"], [f"{e['name']}://{e['host']}:{e['port']}" for e in v["endpoints"]])
            for v in quorum["voters"]] == [(v["id"], v["directoryId"], v["endpoints"]) for v in voters]
    if "leader_id" in quorum:  # a leader change after the snapshot the replay starts from
        assert quorum["leader_id"] == int(re.search(r"^LeaderId:\s+(\d+)$", status, re.M).group(1))
    added = json.loads((root / "manifest.json").read_text())["quorum"]["with_two_voters"]
    assert '"id": 2' in added


def check_features(root: Path) -> None:
    """``kafka-features.sh describe``'s finalized levels (metadata.version by name, which kseg keeps as its level)."""
    tool = dict(re.findall(r"^Feature: (\S+)\s.*FinalizedVersionLevel: (\S+)", answer(root, "features"), re.M))
    img = image(root)
    kseg = {**img["features"], "kraft.version": img["quorum"]["kraft_version"]}
    # a feature never finalized has no FeatureLevelRecord; the tool lists it at level 0 (4.0's
    # eligible.leader.replicas.version)
    assert set(kseg) <= set(tool) and all(tool[k] == "0" for k in set(tool) - set(kseg)), (kseg, tool)
    assert {k: v for k, v in kseg.items() if tool[k].isdigit()} == \
        {k: int(v) for k, v in tool.items() if v.isdigit() and k in kseg}


# --------------------------------------------------------------------------- groups and transactions vs the tools

def groups(root: Path) -> dict[str, Any]:
    return kseg_state(root, "__consumer_offsets-0")["groups"]


def _offsets(group: dict[str, Any]) -> dict[tuple[str, str], int]:
    return {(t, p): v["offset"] for t, parts in group.get("offsets", {}).items() for p, v in parts.items()}


def check_group_offsets(root: Path) -> None:
    """The committed offsets ``kafka-consumer-groups.sh --describe --offsets`` lists: the KIP-848 group's and
    the transactional offset commit's (committed with the transaction)."""
    kseg = groups(root)
    for name, group in (("consumer-group-offsets", admin.CONSUMER_GROUP), ("txn-group-offsets", admin.TXN_GROUP)):
        rows = table(answer(root, name))
        assert rows, name
        assert _offsets(kseg[group]) == {(r["TOPIC"], r["PARTITION"]): int(r["CURRENT-OFFSET"]) for r in rows}, name


def _group_state_row(root: Path, name: str) -> dict[str, str]:
    (row,) = table(answer(root, name))
    return row


def _members(group: dict[str, Any], key: str) -> int:
    return sum(1 for slot in group.get("records", {}) if slot.startswith(key + " "))


def check_group_states(root: Path) -> None:
    """Each group's epochs and member count per ``--describe --state``: the KIP-848 consumer group, the share
    group and the streams group where the release ran them (all Empty after their members left)."""
    kseg = groups(root)
    for step, name, group, kind, assignment in (
            ("consumers", "consumer-group-state", admin.CONSUMER_GROUP, "ConsumerGroup", "TARGET-ASSIGNMENT-EPOCH"),
            ("share", "share-group-state", admin.SHARE_GROUP, "ShareGroup", "ASSIGNMENT-EPOCH"),
            ("streams", "streams-group-state", admin.STREAMS_APP, "StreamsGroup", "TARGET-ASSIGNMENT-EPOCH")):
        if not ran(root, step):
            assert group not in kseg and not (root / "answers" / f"{name}.txt").exists(), name
            continue
        row = _group_state_row(root, name)
        records = kseg[group]["records"]
        # 4.0's share-group tool and 3.9's consumer-group tool print no epochs
        if (admin.row(release_of(root)).share_verbose if step == "share"
                else step != "consumers" or admin.row(release_of(root)).consumer_state_epochs):
            assert records[f"{kind}MetadataKey"]["epoch"] == int(row["GROUP-EPOCH"]), name
            assert records[f"{kind}TargetAssignmentMetadataKey"]["assignmentEpoch"] == int(row[assignment]), name
        else:
            assert "GROUP-EPOCH" not in row and records[f"{kind}MetadataKey"]["epoch"] >= 1, (name, row)
        assert _members(kseg[group], f"{kind}MemberMetadataKey") == int(row["#MEMBERS"]) == 0, name
        assert row["STATE"] == "Empty"


def check_share_group(root: Path) -> None:
    """``kafka-share-groups.sh --describe --offsets``: the share-partition's start offset and leader epoch (the
    latter with ``--verbose``); where the release's tool lists no partition of a group without members (4.0),
    its answer is empty and kseg's start offset is held to the records the share consumer acknowledged."""
    (sp,) = kseg_state(root, "__share_group_state-0")["share_groups"][admin.SHARE_GROUP]
    assert sp["startOffset"] == admin.SHARE_RECORDS
    rows = table(answer(root, "share-group-offsets"))
    if not admin.row(release_of(root)).share_offsets_without_members:
        assert rows == [], rows
        return
    (row,) = rows
    assert (sp["startOffset"], sp["partition"]) == (int(row["START-OFFSET"]), int(row["PARTITION"]))
    if admin.row(release_of(root)).share_verbose:
        assert sp["leaderEpoch"] == int(row["LEADER-EPOCH"])


def check_transactions(root: Path) -> None:
    """``kafka-transactions.sh list`` and ``describe``: the transactional id's producer, epoch, state, timeout and
    start time per ``kseg state`` of ``__transaction_state``; ``kseg txn`` of the topic counts the transactions."""
    ids = kseg_state(root, "__transaction_state-0")["transactional_ids"]
    (listed,) = table(answer(root, "transactions-list"))
    (described,) = table(answer(root, "transactions-describe"))
    t = ids[listed["TransactionalId"]]
    assert (t["producerId"], t["state"]) == (int(listed["ProducerId"]), listed["TransactionState"])
    assert (t["producerEpoch"], t["transactionTimeoutMs"], t["transactionStartTimestampMs"]) == \
        (int(described["ProducerEpoch"]), int(described["TransactionTimeoutMs"]),
         int(described["CurrentTransactionStartTimeMs"]))
    if admin.row(release_of(root)).transactions >= 2:  # v2 on every 4.x
        assert t["clientTransactionVersion"] == admin.row(release_of(root)).transactions
    else:  # 3.9's transaction log has no such field
        assert "clientTransactionVersion" not in t, t
    doc = clients_corpus.kseg_txn(root / "logdir" / f"{admin.TXN_TOPIC}-0")
    assert (doc["committed"], doc["aborted"], doc["open"]) == (2, 1, 0)


CHECKS = {name.removeprefix("check_"): fn for name, fn in dict(globals()).items()
          if name.startswith("check_") and name not in ("check_dump",)}
#: check -> the step whose outcome it holds kseg to (skipped on a corpus whose release lacks the step)
NEEDS = {"share_group": "share"}


def run_check(root: Path, name: str) -> None:
    """One of :data:`CHECKS` on a corpus folder; skipped where the corpus's release lacks its step."""
    step = NEEDS.get(name)
    if step is not None and not ran(root, step):
        pytest.skip(f"{root.name}: {skipped(root)[step]}")
    CHECKS[name](root)


# --------------------------------------------------------------------------- the corpus tests


def test_corpus_per_release() -> None:
    """Each corpus is of a release the scenario runs, in the folder of its line; every release the scenario
    runs has its corpus; each skipped the steps its release lacks (the table says why) and kept the answers
    the release's tools give (the commands :func:`admin.answer_commands` makes, and no others)."""
    assert CORPORA, "fixtures/kafka-admin holds no corpus"
    for root in CORPORA:
        release = release_of(root)
        assert release in admin.RELEASES and admin.corpus_dir(release) == root, root
        m = manifest(root)
        assert m["kafka_version"] == brokers.version(release) and m.get("release", release) == release, root
        assert skipped(root) == admin.skipped(release), root
        placeholders = {"{bootstrap}": "BOOTSTRAP", "{sasl}": "SASL", "{config}": "CONFIG",
                        "{controller}": "CONTROLLER"}
        assert m["answers"] == {name: {"main": main, "args": [placeholders.get(a, a) for a in args]}
                                for name, (main, args) in admin.answer_commands(release).items()}, root
        assert sorted(p.stem for p in (root / "answers").glob("*.txt")) == sorted(m["answers"]), root
        assert sorted(p.name for p in (root / "logdir").iterdir()) == sorted(admin.kept_files(release)), root
    missing = [r for r in admin.RELEASES if admin.corpus_dir(r) not in CORPORA]
    assert not missing, (f"no corpus for {missing} "
                         "(tests/kafka/admin.py --release R --write fixtures/kafka-admin/<line of R>)")


@pytest.mark.parametrize("root,name", [pytest.param(root, name, id=f"{root.name}:{name}")
                                       for root in CORPORA for name in sorted(CHECKS)])
def test_corpus(root: Path, name: str) -> None:
    run_check(root, name)


def _dump_cases() -> list:
    out = []
    for root in CORPORA:
        for tool, rel, entry in dump_cases(root):
            reason = checks.known_difference(tool, rel, entry["combo"])
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(root, tool, entry, marks=marks, id=f"{root.name}:{rel}:{entry['combo']}"))
    return out


@pytest.mark.parametrize("root,tool,entry", _dump_cases())
def test_dump_like_kafka(root: Path, tool: str, entry: dict) -> None:
    check_dump(root, tool, entry)


def test_early_access_records_read_by_their_release() -> None:
    """Kafka 4.0's early-access share groups wrote records the newest definitions do not read: a
    ShareGroupPartitionMetadata (record type 9, dropped in 4.1) and a ShareGroupMetadataValue version 0 without
    the MetadataHash 4.1 put in it. kseg reads them by 4.0.2's definitions and says so; each tool's text stays its
    own (4.0's decodes them, the newest's are its error lines, as 4.3.1's and 4.4.0's DumpLogSegments print on
    these files)."""
    from kseg.decoders.offsets import decode_offsets_record
    from kseg.log.records import batch_records
    from kseg.log.segment import Segment

    root = admin.corpus_dir("4.0")
    if root not in CORPORA:
        pytest.skip("fixtures/kafka-admin/4.0 missing")
    log = root / "logdir" / "__consumer_offsets-0" / "00000000000000000000.log"
    read = {}
    for batch in Segment(log).batches():
        for record in batch_records(batch):
            d = decode_offsets_record(record, batch.is_control)
            if d is not None and d.key is not None and "definitions" in d.key.extra:
                read.setdefault(d.key.schema, (record.offset, d))
    assert {"ShareGroupPartitionMetadataKey", "ShareGroupMetadataKey"} <= set(read), sorted(read)
    offset, d = read["ShareGroupPartitionMetadataKey"]
    assert (d.key.extra["definitions"], d.value.extra["definitions"]) == ("4.0.2", "4.0.2")
    assert d.value.data["topics"][0]["topicName"] == admin.DATA_TOPIC
    assert d.kafka_text("4.0")[0] == '{"type":"9","data":{"groupId":"audit"}}'
    assert d.kafka_text("4.4") == (f"Unknown record type 9 at offset {offset}, skipping.", None)
    offset, d = read["ShareGroupMetadataKey"]
    assert d.value.schema == "ShareGroupMetadataValue" and "metadataHash" not in d.value.data
    assert d.kafka_text("4.4")[0].startswith(f"Error at offset {offset}, skipping. Could not read record with")
