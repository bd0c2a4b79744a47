#!/usr/bin/env python3
"""A Kafka 3.9 or 4.x broker doing what operators do, with Kafka's own tools, and what kseg must say of it.

:func:`run` starts one KRaft combined node (:class:`brokers.Broker`) of the release chosen
(``--release``, a name of :data:`RELEASES`: 3.9, 4.0, 4.1, 4.2, ``4`` = 4.3.1 by default, 4.4) formatted
``--standalone`` (``kraft.version`` 1, a dynamic quorum) with a bootstrap SCRAM user
(``kafka-storage format --add-scram``), the ``StandardAuthorizer``, a SASL/SCRAM
listener beside the plaintext one and a delegation-token secret, then, each step with
the release's own tool (its main class run as ``kafka-run-class.sh`` runs it) or the
Java client (``oracle/java/OperatorClients.java``):

* SCRAM-SHA-256 and -512 users added (``kafka-configs.sh --alter --add-config``), one
  altered, one deleted;
* ACLs added (literal and prefixed, allow and deny), one removed (``kafka-acls.sh``);
* client quotas for a user, a client id, a user and client id, the default user and an
  IP, one removed (``kafka-configs.sh``);
* delegation tokens over the SCRAM listener: one created and renewed, one created and
  expired (``kafka-delegation-tokens.sh``);
* a second controller started, added to the quorum and removed again
  (``kafka-metadata-quorum.sh add-controller/remove-controller``);
* where a release leaves them at level 0, the feature levels its share and streams groups need
  raised (``kafka-features.sh upgrade``: 4.1);
* a KIP-848 consumer group (two Java consumers, ``group.protocol=consumer``: one joins
  and commits, the other joins, the first leaves, the second commits);
* a share group (``ConsoleShareConsumer``) and a streams group (a Kafka Streams
  application, ``group.protocol=streams``), enabled as the release enables them;
* transactions v2 (v1 on 3.9) with the Java transactional producer: committed, aborted, and
  committed with a transactional offset commit.

Then the tools are asked what the cluster holds (:func:`answer_commands`: users and quotas,
ACLs, tokens, the quorum, each group, the transactions), the broker is stopped cleanly and the
partitions :func:`kept` names are copied.

What each release can do of this differs: :data:`RELEASES` holds it as data, one row per release
(the tools' main classes and options, how share and streams groups are enabled, the steps the
release lacks and why). A step a release lacks is left out of its run, of its answers and of its
corpus, and named in the corpus's ``manifest.json`` (``"skipped": {step: why}``), which is what
the checks read.

:func:`write` keeps a run as ``fixtures/kafka-admin/<line>/`` (``3.9``, ``4.0`` ... ``4.4``; the 4.3.1
run's is ``4.3``): ``logdir/``, ``answers/<name>.txt`` (each tool's stdout, argv in
``manifest.json``) and ``golden/`` (DumpLogSegments per file and flags, as ``tests/kafka/clients.py``
writes them).

    python tests/kafka/admin.py --write fixtures/kafka-admin/4.3                 # 4.3.1, the default
    python tests/kafka/admin.py --release 4.1 --write fixtures/kafka-admin/4.1   # another release's
    python tests/kafka/admin.py --check fixtures/kafka-admin/4.1   # DumpLogSegments still prints it

(``make kafka-admin-corpus`` writes every release's, one broker at a time.)
``tests/test_kafka_admin_corpus.py`` holds kseg to the corpora without Java;
``tests/kafka/test_kafka_admin_live.py`` runs the same checks on a fresh 4.3.1 run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402
import checks  # noqa: E402
import clients  # noqa: E402

#: the release the scenario runs unless ``--release`` names another (4.3.1), and the live test's
RELEASE = "4"
FIXTURES = brokers.REPO / "fixtures" / "kafka-admin"
JAVA = brokers.ORACLE / "java" / "OperatorClients.java"
SASL = "SASL_PLAINTEXT"
ADMIN_USER, ADMIN_PASSWORD = "admin", "admin-secret"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"

#: the broker configs of every release's run (a release's row adds its own, :attr:`AdminRelease.broker_config`)
BROKER_CONFIG: dict[str, object] = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # the plaintext listeners' principal (the broker, the controller, the tools) and the SCRAM admin
    "super.users": f"User:ANONYMOUS;User:{ADMIN_USER}",
    "allow.everyone.if.no.acl.found": "true",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
    "delegation.token.secret.key": "kseg-corpus-delegation-token-secret",
    "delegation.token.expiry.time.ms": 3_600_000,
    "delegation.token.max.lifetime.ms": 86_400_000,
    "share.coordinator.state.topic.num.partitions": 1,
    # a small corpus: fewer no-op records (one per 500 ms by default) and a snapshot or two, not dozens
    "metadata.max.idle.interval.ms": 5000,
    "metadata.log.max.record.bytes.between.snapshots": 6144,
}
FORMAT_ARGS = ["--add-scram", f"SCRAM-SHA-256=[name={ADMIN_USER},password={ADMIN_PASSWORD}]"]

# --------------------------------------------------------------------------- what each release can do

#: the scenario's steps, in the order they run
STEPS = ("topics", "scram", "acls", "quotas", "tokens", "quorum", "features", "consumers", "share", "streams",
         "transactions")


@dataclass(frozen=True)
class AdminRelease:
    """What one release's broker and tools can do of the scenario: what differs between releases, as read
    from each release's jars (``unzip -l``, ``javap``, each tool's ``--help``, ``kafka-storage version-mapping``)."""

    #: kafka-configs.sh's main class: a Scala object in the core jar up to 4.3, Java in kafka-tools since 4.4
    configs: str
    #: broker configs beyond :data:`BROKER_CONFIG`: the rebalance protocols enabled
    #: (``group.coordinator.rebalance.protocols``) and what an early-access feature needs
    broker_config: dict[str, object]
    #: ``kafka-storage format`` writes the bootstrap records (the SCRAM admin, the feature levels) to
    #: ``bootstrap.checkpoint`` in the metadata log dir, kept in the corpus; 4.4 writes them to the metadata
    #: log's first snapshot (``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``) instead
    bootstrap_file: bool = True
    #: ``kafka-storage format`` arguments beyond :data:`FORMAT_ARGS`
    format_args: tuple[str, ...] = ()
    #: feature levels raised with ``kafka-features.sh upgrade --feature`` once the broker runs (a preview or
    #: early-access group type that a newly formatted cluster of the release leaves at level 0)
    feature_upgrades: tuple[str, ...] = ()
    #: ``kafka-share-groups.sh --describe`` takes ``--verbose`` (4.1+), which adds the group's epochs to
    #: ``--state`` and the leader epoch and lag to ``--offsets``
    share_verbose: bool = True
    #: ``kafka-share-groups.sh --describe --offsets`` lists the partitions of a share group without members
    #: (4.1+: the share coordinator's; 4.0's tool asks for its members' assigned partitions only, so prints
    #: nothing once they left)
    share_offsets_without_members: bool = True
    #: the transaction protocol of the Java producer with this broker (KIP-890 v2: ``transaction.version``
    #: 2, what a cluster newly formatted by any 4.x release finalizes; 1 on 3.9, whose TransactionLogValue
    #: has no clientTransactionVersion field yet)
    transactions: int = 2
    #: ``kafka-consumer-groups.sh --describe --state --verbose`` prints a KIP-848 group's epochs (GROUP-EPOCH,
    #: TARGET-ASSIGNMENT-EPOCH: 4.0+; 3.9's prints the coordinator, strategy, state and member count only)
    consumer_state_epochs: bool = True
    #: step (of :data:`STEPS`) -> why the release cannot run it (Kafka's reason: a feature missing, a tool crash)
    lacks: dict[str, str] = field(default_factory=dict)
    #: kafka-acls.sh's main class: a Scala object in the core jar up to 3.9, Java in kafka-tools since 4.0
    acl_command: str = "org.apache.kafka.tools.AclCommand"


#: group.coordinator.rebalance.protocols of the releases with every group type (deprecated since 4.3 for the
#: feature levels, which a new 4.2+ cluster already finalizes; still honoured)
_ALL_PROTOCOLS = {"group.coordinator.rebalance.protocols": "classic,consumer,share,streams"}
_CONFIG_COMMAND = "kafka.admin.ConfigCommand"
#: release (a name of brokers.RELEASES) -> what it can do; the releases a corpus can be written for (each has
#: one in fixtures/kafka-admin/<its line>). All run KRaft (3.9 too, whose other runs use ZooKeeper): the
#: dynamic quorum (``--standalone``, ``add-controller``/``remove-controller``, KIP-853) is in every one (3.9+),
#: KIP-848 consumer groups are GA in every 4.x (4.0+), a preview in 3.9.
RELEASES: dict[str, AdminRelease] = {
    # a KRaft combined node (the other 3.9 runs use ZooKeeper): the dynamic quorum is new in 3.9 (KIP-853),
    # KIP-848 consumer groups a preview (the "consumer" rebalance protocol enabled on the broker); no share
    # or streams groups, and transactions v1 (no transaction.version feature before 4.0)
    "3.9": AdminRelease(
        _CONFIG_COMMAND, {"group.coordinator.rebalance.protocols": "classic,consumer"}, transactions=1,
        consumer_state_epochs=False, acl_command="kafka.admin.AclCommand",
        lacks={"share": "Kafka 3.9.2 has no share groups (KIP-932's early access came in 4.0): no "
                        "kafka-share-groups.sh, no ConsoleShareConsumer",
               "streams": "Kafka 3.9.2 has no streams groups (KIP-1071 came in 4.1)"}),
    # share groups are early access (KIP-932): the "share" rebalance protocol and the unstable RPCs
    # (ShareGroupHeartbeat, ShareFetch ...) enabled on the broker; there is no share.version feature yet
    "4.0": AdminRelease(
        _CONFIG_COMMAND,
        {"group.coordinator.rebalance.protocols": "classic,consumer,share", "unstable.api.versions.enable": "true"},
        share_verbose=False, share_offsets_without_members=False,
        lacks={"streams": "Kafka 4.0.2 has no streams groups (KIP-1071 came in 4.1): no streams.version feature, "
                          "no kafka-streams-groups.sh (org.apache.kafka.tools.streams.StreamsGroupCommand), no "
                          "group.protocol in its Kafka Streams"}),
    # share groups are a preview, enabled by share.version 1 (a production level: kafka-features.sh upgrade);
    # streams groups early access: streams.version 1 is an unstable level of 4.1 (not production until 4.2)
    # and StreamsGroupHeartbeat an unstable API (without it the Streams client gets "The node does not
    # support STREAMS_GROUP_HEARTBEAT" and stops). With unstable feature levels enabled kafka-storage format
    # would take the newest metadata.version, the unstable 4.2-IV1, which the second controller (a 4.1 node
    # without them) cannot replay: formatted at 4.1's own, as without them
    "4.1": AdminRelease(
        _CONFIG_COMMAND,
        {**_ALL_PROTOCOLS, "unstable.feature.versions.enable": "true", "unstable.api.versions.enable": "true"},
        format_args=("--release-version", "4.1-IV1"), feature_upgrades=("share.version=1", "streams.version=1")),
    "4.2": AdminRelease(_CONFIG_COMMAND, _ALL_PROTOCOLS),
    "4": AdminRelease(_CONFIG_COMMAND, _ALL_PROTOCOLS),
    "4.4": AdminRelease("org.apache.kafka.tools.ConfigCommand", _ALL_PROTOCOLS, bootstrap_file=False),
}


def row(release: str) -> AdminRelease:
    return RELEASES[release]


def corpus_dir(release: str) -> Path:
    """``fixtures/kafka-admin/<line>``: the release's line (4.3.1, release ``4``, is ``4.3``)."""
    return FIXTURES / brokers.LINES[release]


def skipped(release: str) -> dict[str, str]:
    """The steps the release lacks, in :data:`STEPS` order: step -> why."""
    lacks = row(release).lacks
    return {step: lacks[step] for step in STEPS if step in lacks}


DATA_TOPIC = "orders"
TXN_TOPIC = "payments"
STREAMS_IN, STREAMS_OUT = "clicks", "clicks-upper"
TOPICS = (DATA_TOPIC, TXN_TOPIC, STREAMS_IN, STREAMS_OUT)
CONSUMER_GROUP = "billing"  # KIP-848
TXN_GROUP = "payments-reader"  # the transactional offset commit's group
TXN_ID = "payments-txn"
SHARE_GROUP = "audit"
STREAMS_APP = "clicks-app"
SHARE_RECORDS = 10

#: SCRAM users: name -> mechanisms added first (mechanism -> iterations, None: the tool's default)
SCRAM_USERS = {
    "alice": {"SCRAM-SHA-256": 8192, "SCRAM-SHA-512": None},
    "bob": {"SCRAM-SHA-512": 4096},
    "carol": {"SCRAM-SHA-256": None},
}
SCRAM_ALTERED = ("alice", "SCRAM-SHA-256", 10000)
SCRAM_DELETED = ("carol", "SCRAM-SHA-256")

#: kafka-acls.sh --add runs (each a list of flags); ACL_REMOVED is removed again
ACLS = [
    ["--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", DATA_TOPIC],
    ["--allow-principal", "User:bob", "--operation", "Write", "--topic", "pay", "--resource-pattern-type", "prefixed"],
    ["--allow-principal", "User:alice", "--operation", "Read", "--group", CONSUMER_GROUP],
    ["--deny-principal", "User:carol", "--deny-host", "10.0.0.7", "--operation", "All", "--topic", "*"],
    ["--allow-principal", "User:bob", "--operation", "Describe", "--cluster"],
]
ACL_REMOVED = ACLS[4]

#: client quotas: kafka-configs.sh entity flags -> the configs set
QUOTAS = [
    (["--entity-type", "users", "--entity-name", "alice"], "producer_byte_rate=1048576,consumer_byte_rate=2097152"),
    (["--entity-type", "clients", "--entity-name", "reporting"], "request_percentage=50"),
    (["--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients", "--entity-name", "etl"],
     "producer_byte_rate=65536"),
    (["--entity-type", "users", "--entity-default"], "consumer_byte_rate=4194304"),
    (["--entity-type", "ips", "--entity-name", "127.0.0.2"], "connection_creation_rate=10"),
]
QUOTA_REMOVED = (QUOTAS[0][0], "consumer_byte_rate")


def topics(release: str) -> tuple[str, ...]:
    """The topics the release's run creates (the streams application's only where it runs)."""
    return tuple(t for t in TOPICS if "streams" not in skipped(release) or t not in (STREAMS_IN, STREAMS_OUT))


def kept(release: str) -> tuple[str, ...]:
    """The partitions kept: the metadata log, the coordinators' partitions (the share coordinator's where
    share groups ran), the topics."""
    return ("__cluster_metadata-0", "__consumer_offsets-0", "__transaction_state-0",
            *(() if "share" in skipped(release) else ("__share_group_state-0",)),
            *(f"{t}-0" for t in topics(release)))


#: the metadata log dir's bootstrap records (the SCRAM admin of ``kafka-storage format --add-scram``), kept too
#: where the release writes them there (:attr:`AdminRelease.bootstrap_file`)
BOOTSTRAP = "bootstrap.checkpoint"


def kept_files(release: str) -> tuple[str, ...]:
    """What the corpus's ``logdir/`` holds: :func:`kept` and the bootstrap file where the release writes one."""
    return (*kept(release), *((BOOTSTRAP,) if row(release).bootstrap_file else ()))


# --------------------------------------------------------------------------- running the tools


def tool_command(release: str, main: str, *args: str) -> list[str]:
    return brokers._java(release, main, *args)


def tool(release: str, main: str, *args: str, timeout: float = 120.0) -> str:
    proc = subprocess.run(tool_command(release, main, *args), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def compile_clients(release: str) -> Path:
    """OperatorClients compiled against the release's jars (kept in the jar cache, by its source)."""
    out = brokers.CACHE / release / "operator-clients"
    source = JAVA.read_text()
    stamp = out / "source.java"
    if stamp.is_file() and stamp.read_text() == source and (out / "OperatorClients.class").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    lib = brokers.fetch(release)
    subprocess.run(["javac", "-nowarn", "-cp", f"{lib}/*", "-d", str(out), str(JAVA)], check=True)
    stamp.write_text(source)
    return out


def java_clients(release: str, *args: str, timeout: float = 180.0) -> dict[str, Any]:
    classes = compile_clients(release)
    lib = brokers.fetch(release)
    proc = subprocess.run(["java", *brokers.QUICK_START_OPTS,
                           f"-Dlog4j.configuration=file:{brokers.CACHE / release / 'tools-log4j.properties'}",
                           "-cp", f"{lib}/*:{classes}", "OperatorClients", *args],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"OperatorClients {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sasl_config(workdir: Path) -> Path:
    """The client properties of the SCRAM admin (``--command-config``)."""
    path = workdir / "sasl-admin.properties"
    path.write_text(f"security.protocol={SASL}\nsasl.mechanism=SCRAM-SHA-256\n"
                    f'sasl.jaas.config={SCRAM_LOGIN} required username="{ADMIN_USER}" password="{ADMIN_PASSWORD}";\n')
    return path


# --------------------------------------------------------------------------- operator actions

TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"
CONSOLE_SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


def create_topics(release: str, bootstrap: str) -> None:
    for topic in topics(release):
        tool(release, TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions",
             "1", "--replication-factor", "1", "--config", "retention.ms=-1")


def scram_users(release: str, bootstrap: str) -> None:
    configs = row(release).configs
    for user, mechanisms in SCRAM_USERS.items():
        for m, it in mechanisms.items():  # one request per credential: the broker refuses a user twice in one
            cred = f"{m}=[{'' if it is None else f'iterations={it},'}password={user}-secret]"
            tool(release, configs, "--bootstrap-server", bootstrap, "--alter", "--add-config", cred,
                 "--entity-type", "users", "--entity-name", user)
    user, mechanism, iterations = SCRAM_ALTERED
    tool(release, configs, "--bootstrap-server", bootstrap, "--alter", "--add-config",
         f"{mechanism}=[iterations={iterations},password={user}-new-secret]", "--entity-type", "users",
         "--entity-name", user)
    user, mechanism = SCRAM_DELETED
    tool(release, configs, "--bootstrap-server", bootstrap, "--alter", "--delete-config", mechanism,
         "--entity-type", "users", "--entity-name", user)


def acls(release: str, bootstrap: str) -> None:
    for flags in ACLS:
        tool(release, row(release).acl_command, "--bootstrap-server", bootstrap, "--add", *flags)
    tool(release, row(release).acl_command, "--bootstrap-server", bootstrap, "--remove", "--force", *ACL_REMOVED)


def quotas(release: str, bootstrap: str) -> None:
    configs = row(release).configs
    for entity, values in QUOTAS:
        tool(release, configs, "--bootstrap-server", bootstrap, "--alter", "--add-config", values, *entity)
    entity, name = QUOTA_REMOVED
    tool(release, configs, "--bootstrap-server", bootstrap, "--alter", "--delete-config", name, *entity)


def _hmac(out: str) -> str:
    """The HMAC column of kafka-delegation-tokens.sh's token table (no column holds a space before it)."""
    lines = [line for line in out.splitlines() if line.strip()]
    head = next(i for i, line in enumerate(lines) if line.startswith("TOKENID"))
    first = next(line for line in lines[head + 1:] if not set(line.strip()) <= set("-"))
    return first.split()[lines[head].split().index("HMAC")]


def delegation_tokens(release: str, sasl_bootstrap: str, config: Path) -> None:
    common = ["--bootstrap-server", sasl_bootstrap, "--command-config", str(config)]
    kept_token = tool(release, TOKENS, *common, "--create", "--max-life-time-period", "-1",
                      "--renewer-principal", "User:bob")
    tool(release, TOKENS, *common, "--renew", "--hmac", _hmac(kept_token), "--renew-time-period", "-1")
    gone = tool(release, TOKENS, *common, "--create", "--max-life-time-period", "-1")
    tool(release, TOKENS, *common, "--expire", "--hmac", _hmac(gone), "--expiry-time-period", "-1")


def feature_upgrades(release: str, bootstrap: str) -> None:
    """``kafka-features.sh upgrade`` to the levels the release's share and streams groups need."""
    levels = row(release).feature_upgrades
    if levels:
        tool(release, FEATURES, "--bootstrap-server", bootstrap, "upgrade",
             *(arg for level in levels for arg in ("--feature", level)))


def produce(bootstrap: str, topic: str, n: int, prefix: str) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i in range(n):
        p.send(topic, key=f"{prefix}-{i % 5}".encode(), value=f"{prefix} {i}".encode())
        if i % 4 == 3:
            p.flush()
    p.close()


def consumers(release: str, bootstrap: str) -> dict[str, Any]:
    produce(bootstrap, DATA_TOPIC, 30, "order")
    return java_clients(release, "consumers", bootstrap, DATA_TOPIC, CONSUMER_GROUP)


def share_group(release: str, bootstrap: str) -> None:
    tool(release, row(release).configs, "--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups",
         "--entity-name", SHARE_GROUP, "--add-config", "share.auto.offset.reset=earliest")
    tool(release, CONSOLE_SHARE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", DATA_TOPIC,
         "--group", SHARE_GROUP, "--max-messages", str(SHARE_RECORDS), "--timeout-ms", "30000")


def streams_group(release: str, bootstrap: str) -> dict[str, Any]:
    produce(bootstrap, STREAMS_IN, 20, "click")
    done = java_clients(release, "streams", bootstrap, STREAMS_APP, STREAMS_IN, STREAMS_OUT)
    if done["copied"] != done["expected"]:  # the application stopped (an ERROR state): no streams group to keep
        raise RuntimeError(f"the Kafka Streams application copied {done['copied']} of {done['expected']} records "
                           f"and ended {done['state']}")
    return done


def transactions(release: str, bootstrap: str) -> dict[str, Any]:
    return java_clients(release, "txn", bootstrap, TXN_TOPIC, TXN_ID, TXN_GROUP)


# --------------------------------------------------------------------------- the dynamic quorum


def second_controller(release: str, broker: brokers.Broker) -> dict[str, Any]:
    """A controller-only node 2 formatted ``--no-initial-controllers``, started as an observer, added as a
    voter and removed again (``kafka-metadata-quorum.sh``); its answers before the removal."""
    work = broker.workdir / "controller-2"
    work.mkdir()
    port = brokers.free_port()
    config = work / "controller.properties"
    config.write_text(brokers._properties({
        "process.roles": "controller", "node.id": 2, "log.dirs": work / "data",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{broker.controller_port}",
        "listeners": f"CONTROLLER://127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "authorizer.class.name": BROKER_CONFIG["authorizer.class.name"], "super.users": BROKER_CONFIG["super.users"],
        # its registration (kept after its removal from the voters) says which feature levels it supports: an
        # unstable level (4.1's streams.version 1) is upgraded to only if every registered controller has them
        **{k: v for k, v in row(release).broker_config.items() if k == "unstable.feature.versions.enable"},
    }))
    tool(release, "kafka.tools.StorageTool", "format", f"--cluster-id={broker.cluster_id}", f"--config={config}",
         "--no-initial-controllers")
    log4j = broker.workdir / "log4j.properties"
    proc = broker._spawn("controller-2", brokers._java(release, "kafka.Kafka", str(config), log4j=log4j))
    quorum = ["--bootstrap-controller", f"127.0.0.1:{broker.controller_port}"]
    try:
        deadline = time.monotonic() + 90
        while True:  # until node 2 has caught up as an observer
            status = tool(release, QUORUM, *quorum, "describe", "--replication")
            if re.search(r"^2\s+\S+\s+\d+\s+0\s", status, re.M) or time.monotonic() > deadline:
                break
            time.sleep(1)
        tool(release, QUORUM, *quorum, "--command-config", str(config), "add-controller")
        with_two = _wait_voters(release, quorum, 2)
        directory = re.search(r'"id": 2, "directoryId": "([^"]+)"', with_two)
        assert directory, with_two
        tool(release, QUORUM, *quorum, "remove-controller", "--controller-id", "2", "--controller-directory-id",
             directory.group(1))
        _wait_voters(release, quorum, 1)
    finally:
        proc.terminate()
        proc.wait(60)
    return {"with_two_voters": with_two}


def _wait_voters(release: str, quorum: list[str], n: int, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status = tool(release, QUORUM, *quorum, "describe", "--status")
        voters = re.search(r"^CurrentVoters:\s+(\[.*\])$", status, re.M)
        if voters and len(json.loads(voters.group(1))) == n:
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"not {n} voters after {timeout}s:\n{status}")
        time.sleep(1)


# --------------------------------------------------------------------------- what the tools answer

#: answer name -> the step whose outcome it shows (left out where the release lacks that step)
ANSWER_STEPS = {"share-group-offsets": "share", "share-group-state": "share",
                "streams-group-offsets": "streams", "streams-group-state": "streams"}


def answer_commands(release: str) -> dict[str, tuple[str, list[str]]]:
    """Answer name -> (tool main class, its arguments; {bootstrap}, {sasl}, {config}, {controller} filled in):
    what the release's tools are asked once the operators are done."""
    configs = row(release).configs
    verbose = ["--verbose"] if row(release).share_verbose else []
    commands: dict[str, tuple[str, list[str]]] = {
        "users": (configs, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "users"]),
        "users-default": (configs, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "users",
                                    "--entity-default"]),
        "clients": (configs, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "clients"]),
        "users-clients": (configs, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "users",
                                    "--entity-type", "clients"]),
        "ips": (configs, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "ips"]),
        "acls": (row(release).acl_command, ["--bootstrap-server", "{bootstrap}", "--list"]),
        # with its owner named: "--describe" alone ("for current user") lists no token on 4.3.1
        "tokens": (TOKENS, ["--bootstrap-server", "{sasl}", "--command-config", "{config}", "--describe",
                            "--owner-principal", f"User:{ADMIN_USER}"]),
        "quorum-status": (QUORUM, ["--bootstrap-controller", "{controller}", "describe", "--status"]),
        "features": (FEATURES, ["--bootstrap-server", "{bootstrap}", "describe"]),
        "consumer-group-offsets": (CONSUMER_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                                     CONSUMER_GROUP, "--offsets", "--verbose"]),
        "consumer-group-members": (CONSUMER_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                                     CONSUMER_GROUP, "--members", "--verbose"]),
        "consumer-group-state": (CONSUMER_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                                   CONSUMER_GROUP, "--state", "--verbose"]),
        "txn-group-offsets": (CONSUMER_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                                TXN_GROUP, "--offsets"]),
        # kafka-share-groups.sh takes --verbose since 4.1
        "share-group-offsets": (SHARE_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                               SHARE_GROUP, "--offsets", *verbose]),
        "share-group-state": (SHARE_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                             SHARE_GROUP, "--state", *verbose]),
        "streams-group-offsets": (STREAMS_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                                   STREAMS_APP, "--offsets", "--verbose"]),
        "streams-group-state": (STREAMS_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                                 STREAMS_APP, "--state", "--verbose"]),
        "transactions-list": (TRANSACTIONS, ["--bootstrap-server", "{bootstrap}", "list"]),
        "transactions-describe": (TRANSACTIONS, ["--bootstrap-server", "{bootstrap}", "describe",
                                                 "--transactional-id", TXN_ID]),
    }
    lacked = skipped(release)
    return {name: command for name, command in commands.items() if ANSWER_STEPS.get(name) not in lacked}


def answers(release: str, broker: brokers.Broker, config: Path) -> dict[str, dict[str, Any]]:
    """Each of :func:`answer_commands` run: name -> argv (as kafka-run-class.sh would be given it) and stdout."""
    fill = {"bootstrap": broker.bootstrap, "sasl": f"127.0.0.1:{broker.ports[SASL]}", "config": "sasl-admin.properties",
            "controller": f"127.0.0.1:{broker.controller_port}"}
    out = {}
    for name, (main, args) in answer_commands(release).items():
        argv = [a.format(**fill) for a in args]
        stdout = tool(release, main, *[str(config) if a == "sasl-admin.properties" else a for a in argv])
        out[name] = {"main": main, "args": [next((k.upper() for k, v in fill.items() if a == v), a) for a in argv],
                     "stdout": stdout}
    return out


# --------------------------------------------------------------------------- the run


def run(workdir: Path, release: str = RELEASE) -> tuple[Path, dict[str, Any]]:
    """The whole scenario on one broker of ``release`` in ``workdir``: its log dir (after a clean stop) and
    the manifest."""
    compile_clients(release)
    broker = brokers.Broker(release, workdir, extra={**BROKER_CONFIG, **row(release).broker_config},
                            more_listeners={SASL: SASL}, format_args=[*FORMAT_ARGS, *row(release).format_args],
                            dynamic_quorum=True, kraft=True)
    config = sasl_config(workdir)
    lacked = skipped(release)
    t0 = time.monotonic()
    steps: dict[str, float] = {}
    done: dict[str, Any] = {}
    quorum: dict[str, Any] = {}
    try:
        broker.start()
        bootstrap = broker.bootstrap
        actions = {
            "topics": lambda: create_topics(release, bootstrap),
            "scram": lambda: scram_users(release, bootstrap),
            "acls": lambda: acls(release, bootstrap),
            "quotas": lambda: quotas(release, bootstrap),
            "tokens": lambda: delegation_tokens(release, f"127.0.0.1:{broker.ports[SASL]}", config),
            "quorum": lambda: quorum.update(second_controller(release, broker)),
            "features": lambda: feature_upgrades(release, bootstrap),
            "consumers": lambda: done.update(consumers=consumers(release, bootstrap)),
            "share": lambda: share_group(release, bootstrap),
            "streams": lambda: done.update(streams=streams_group(release, bootstrap)),
            "transactions": lambda: done.update(transactions=transactions(release, bootstrap)),
        }
        assert tuple(actions) == STEPS
        for name, step in actions.items():
            if name in lacked or (name == "features" and not row(release).feature_upgrades):
                continue
            step()
            steps[name] = round(time.monotonic() - t0)
        told = answers(release, broker, config)
    except BaseException:
        broker.stop()
        print(f"Kafka {brokers.version(release)} operator run failed; its files are in {workdir}\n{broker.logs()}",
              file=sys.stderr)
        raise
    broker.stop()
    manifest = {"kafka_version": brokers.version(release), "cluster_id": broker.cluster_id, "clients": done,
                "quorum": quorum, "seconds": steps,
                "answers": {name: {k: v for k, v in a.items() if k != "stdout"} for name, a in told.items()}}
    # (the 4.3.1 corpus was written before the scenario ran other releases: its manifest has neither key; its
    # release is in golden/manifest.json, and it skipped nothing)
    manifest = {"release": release, **manifest, "skipped": lacked}
    manifest["_stdout"] = {name: a["stdout"] for name, a in told.items()}
    return broker.log_dir, manifest


def keep_logdir(src: Path, dst: Path, release: str = RELEASE) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for name in kept(release):
        shutil.copytree(src / name, dst / name)
    if row(release).bootstrap_file:
        shutil.copyfile(src / BOOTSTRAP, dst / BOOTSTRAP)


def written_by(release: str) -> str:
    return f"Kafka {brokers.version(release)} broker driven by its own admin tools and Java clients"


def dumps(logdir: Path, release: str = RELEASE) -> list[dict]:
    """DumpLogSegments on every kept file, with the flags :func:`checks.combos_for` gives it."""
    return checks.kafka_dumps(release, logdir)


def write(root: Path, workdir: Path, release: str = RELEASE) -> dict[str, Any]:
    assert release in RELEASES, f"the operators' scenario runs {', '.join(RELEASES)}, not {release}"
    logdir, manifest = run(workdir, release)
    keep_logdir(logdir, root / "logdir", release)
    stdouts = manifest.pop("_stdout")
    shutil.rmtree(root / "answers", ignore_errors=True)
    (root / "answers").mkdir(parents=True)
    for name, text in stdouts.items():
        (root / "answers" / f"{name}.txt").write_text(text)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    clients.write_goldens(root, release, dumps(root / "logdir", release), written_by(release))
    return manifest


def check_goldens(root: Path) -> list[str]:
    return clients.check_goldens(root, dumps)


if __name__ == "__main__":
    sys.exit(clients.main(write, check_goldens, __doc__ or "", "kseg-kafka-admin-", tuple(RELEASES), RELEASE))
