#!/usr/bin/env python3
"""A Kafka 4.3.1 broker doing what operators do, with Kafka's own tools, and what kseg must say of it.

:func:`run` starts one KRaft combined node (:class:`brokers.Broker`) formatted
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
* a KIP-848 consumer group (two Java consumers, ``group.protocol=consumer``: one joins
  and commits, the other joins, the first leaves, the second commits);
* a share group (``ConsoleShareConsumer``) and a streams group (a Kafka Streams
  application, ``group.protocol=streams``);
* transactions v2 with the Java transactional producer: committed, aborted, and
  committed with a transactional offset commit.

Then the tools are asked what the cluster holds (:data:`ANSWERS`: users and quotas, ACLs,
tokens, the quorum, each group, the transactions), the broker is stopped cleanly and
:data:`KEPT` partitions are copied.

:func:`write_corpus` keeps a run as ``fixtures/kafka-admin/4.3/``: ``logdir/``,
``answers/<name>.txt`` (each tool's stdout, argv in ``manifest.json``) and ``golden/``
(DumpLogSegments per file and flags, as ``tests/kafka/clients.py`` writes them).
``python tests/kafka/admin.py --write DIR`` (``make kafka-admin-corpus``) writes a new one;
``--check DIR`` re-runs DumpLogSegments on it. ``tests/test_kafka_admin_corpus.py`` holds kseg
to it without Java; ``tests/kafka/test_kafka_admin_live.py`` runs the same checks on a fresh run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402
import checks  # noqa: E402
import clients  # noqa: E402

RELEASE = "4"
CORPUS = brokers.REPO / "fixtures" / "kafka-admin" / "4.3"
JAVA = brokers.ORACLE / "java" / "OperatorClients.java"
SASL = "SASL_PLAINTEXT"
ADMIN_USER, ADMIN_PASSWORD = "admin", "admin-secret"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"

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
    "group.coordinator.rebalance.protocols": "classic,consumer,share,streams",
    # a small corpus: fewer no-op records (one per 500 ms by default) and a snapshot or two, not dozens
    "metadata.max.idle.interval.ms": 5000,
    "metadata.log.max.record.bytes.between.snapshots": 6144,
}
FORMAT_ARGS = ["--add-scram", f"SCRAM-SHA-256=[name={ADMIN_USER},password={ADMIN_PASSWORD}]"]

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

#: the partitions kept (the metadata log, the coordinators' partitions, the topics)
KEPT = ("__cluster_metadata-0", "__consumer_offsets-0", "__transaction_state-0", "__share_group_state-0",
        *(f"{t}-0" for t in TOPICS))

#: the metadata log dir's bootstrap records (the SCRAM admin of ``kafka-storage format --add-scram``), kept too
BOOTSTRAP = "bootstrap.checkpoint"

# --------------------------------------------------------------------------- running the tools


def tool_command(main: str, *args: str) -> list[str]:
    return brokers._java(RELEASE, main, *args)


def tool(main: str, *args: str, timeout: float = 120.0) -> str:
    proc = subprocess.run(tool_command(main, *args), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def compile_clients() -> Path:
    """OperatorClients compiled against the release's jars (kept in the jar cache, by its source)."""
    out = brokers.CACHE / RELEASE / "operator-clients"
    source = JAVA.read_text()
    stamp = out / "source.java"
    if stamp.is_file() and stamp.read_text() == source and (out / "OperatorClients.class").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    lib = brokers.fetch(RELEASE)
    subprocess.run(["javac", "-nowarn", "-cp", f"{lib}/*", "-d", str(out), str(JAVA)], check=True)
    stamp.write_text(source)
    return out


def java_clients(*args: str, timeout: float = 180.0) -> dict[str, Any]:
    classes = compile_clients()
    lib = brokers.fetch(RELEASE)
    proc = subprocess.run(["java", *brokers.QUICK_START_OPTS,
                           f"-Dlog4j.configuration=file:{brokers.CACHE / RELEASE / 'tools-log4j.properties'}",
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

CONFIGS = "kafka.admin.ConfigCommand"
ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_GROUPS = "org.apache.kafka.tools.streams.StreamsGroupCommand"
TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand"
FEATURES = "org.apache.kafka.tools.FeatureCommand"


def create_topics(bootstrap: str) -> None:
    for topic in TOPICS:
        tool(TOPIC_COMMAND, "--bootstrap-server", bootstrap, "--create", "--topic", topic, "--partitions", "1",
             "--replication-factor", "1", "--config", "retention.ms=-1")


def scram_users(bootstrap: str) -> None:
    for user, mechanisms in SCRAM_USERS.items():
        for m, it in mechanisms.items():  # one request per credential: the broker refuses a user twice in one
            cred = f"{m}=[{'' if it is None else f'iterations={it},'}password={user}-secret]"
            tool(CONFIGS, "--bootstrap-server", bootstrap, "--alter", "--add-config", cred,
                 "--entity-type", "users", "--entity-name", user)
    user, mechanism, iterations = SCRAM_ALTERED
    tool(CONFIGS, "--bootstrap-server", bootstrap, "--alter", "--add-config",
         f"{mechanism}=[iterations={iterations},password={user}-new-secret]", "--entity-type", "users",
         "--entity-name", user)
    user, mechanism = SCRAM_DELETED
    tool(CONFIGS, "--bootstrap-server", bootstrap, "--alter", "--delete-config", mechanism,
         "--entity-type", "users", "--entity-name", user)


def acls(bootstrap: str) -> None:
    for flags in ACLS:
        tool(ACL_COMMAND, "--bootstrap-server", bootstrap, "--add", *flags)
    tool(ACL_COMMAND, "--bootstrap-server", bootstrap, "--remove", "--force", *ACL_REMOVED)


def quotas(bootstrap: str) -> None:
    for entity, configs in QUOTAS:
        tool(CONFIGS, "--bootstrap-server", bootstrap, "--alter", "--add-config", configs, *entity)
    entity, name = QUOTA_REMOVED
    tool(CONFIGS, "--bootstrap-server", bootstrap, "--alter", "--delete-config", name, *entity)


def _hmac(out: str) -> str:
    """The HMAC column of kafka-delegation-tokens.sh's token table (no column holds a space before it)."""
    lines = [line for line in out.splitlines() if line.strip()]
    head = next(i for i, line in enumerate(lines) if line.startswith("TOKENID"))
    row = next(line for line in lines[head + 1:] if not set(line.strip()) <= set("-"))
    return row.split()[lines[head].split().index("HMAC")]


def delegation_tokens(sasl_bootstrap: str, config: Path) -> None:
    common = ["--bootstrap-server", sasl_bootstrap, "--command-config", str(config)]
    kept = tool(TOKENS, *common, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
    tool(TOKENS, *common, "--renew", "--hmac", _hmac(kept), "--renew-time-period", "-1")
    gone = tool(TOKENS, *common, "--create", "--max-life-time-period", "-1")
    tool(TOKENS, *common, "--expire", "--hmac", _hmac(gone), "--expiry-time-period", "-1")


def produce(bootstrap: str, topic: str, n: int, prefix: str) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i in range(n):
        p.send(topic, key=f"{prefix}-{i % 5}".encode(), value=f"{prefix} {i}".encode())
        if i % 4 == 3:
            p.flush()
    p.close()


def groups(broker: brokers.Broker) -> dict[str, Any]:
    bootstrap = broker.bootstrap
    produce(bootstrap, DATA_TOPIC, 30, "order")
    consumed = java_clients("consumers", bootstrap, DATA_TOPIC, CONSUMER_GROUP)
    tool(CONFIGS, "--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups", "--entity-name", SHARE_GROUP,
         "--add-config", "share.auto.offset.reset=earliest")
    tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap, "--topic", DATA_TOPIC,
         "--group", SHARE_GROUP, "--max-messages", str(SHARE_RECORDS), "--timeout-ms", "30000")
    produce(bootstrap, STREAMS_IN, 20, "click")
    streamed = java_clients("streams", bootstrap, STREAMS_APP, STREAMS_IN, STREAMS_OUT)
    txn = java_clients("txn", bootstrap, TXN_TOPIC, TXN_ID, TXN_GROUP)
    return {"consumers": consumed, "streams": streamed, "transactions": txn}


# --------------------------------------------------------------------------- the dynamic quorum


def second_controller(broker: brokers.Broker) -> dict[str, Any]:
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
    }))
    tool("kafka.tools.StorageTool", "format", f"--cluster-id={broker.cluster_id}", f"--config={config}",
         "--no-initial-controllers")
    log4j = broker.workdir / "log4j.properties"
    proc = broker._spawn("controller-2", brokers._java(RELEASE, "kafka.Kafka", str(config), log4j=log4j))
    quorum = ["--bootstrap-controller", f"127.0.0.1:{broker.controller_port}"]
    try:
        deadline = time.monotonic() + 90
        while True:  # until node 2 has caught up as an observer
            status = tool(QUORUM, *quorum, "describe", "--replication")
            if re.search(r"^2\s+\S+\s+\d+\s+0\s", status, re.M) or time.monotonic() > deadline:
                break
            time.sleep(1)
        tool(QUORUM, *quorum, "--command-config", str(config), "add-controller")
        with_two = _wait_voters(quorum, 2)
        directory = re.search(r'"id": 2, "directoryId": "([^"]+)"', with_two)
        assert directory, with_two
        tool(QUORUM, *quorum, "remove-controller", "--controller-id", "2", "--controller-directory-id",
             directory.group(1))
        _wait_voters(quorum, 1)
    finally:
        proc.terminate()
        proc.wait(60)
    return {"with_two_voters": with_two}


def _wait_voters(quorum: list[str], n: int, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        status = tool(QUORUM, *quorum, "describe", "--status")
        voters = re.search(r"^CurrentVoters:\s+(\[.*\])$", status, re.M)
        if voters and len(json.loads(voters.group(1))) == n:
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"not {n} voters after {timeout}s:\n{status}")
        time.sleep(1)


# --------------------------------------------------------------------------- what the tools answer

#: answer name -> (tool main class, its arguments; {bootstrap}, {sasl}, {config}, {controller} filled in)
ANSWERS: dict[str, tuple[str, list[str]]] = {
    "users": (CONFIGS, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "users"]),
    "users-default": (CONFIGS, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "users",
                                "--entity-default"]),
    "clients": (CONFIGS, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "clients"]),
    "users-clients": (CONFIGS, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "users",
                                "--entity-type", "clients"]),
    "ips": (CONFIGS, ["--bootstrap-server", "{bootstrap}", "--describe", "--entity-type", "ips"]),
    "acls": (ACL_COMMAND, ["--bootstrap-server", "{bootstrap}", "--list"]),
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
    "share-group-offsets": (SHARE_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                           SHARE_GROUP, "--offsets", "--verbose"]),
    "share-group-state": (SHARE_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                         SHARE_GROUP, "--state", "--verbose"]),
    "streams-group-offsets": (STREAMS_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                               STREAMS_APP, "--offsets", "--verbose"]),
    "streams-group-state": (STREAMS_GROUPS, ["--bootstrap-server", "{bootstrap}", "--describe", "--group",
                                             STREAMS_APP, "--state", "--verbose"]),
    "transactions-list": (TRANSACTIONS, ["--bootstrap-server", "{bootstrap}", "list"]),
    "transactions-describe": (TRANSACTIONS, ["--bootstrap-server", "{bootstrap}", "describe",
                                             "--transactional-id", TXN_ID]),
}


def answers(broker: brokers.Broker, config: Path) -> dict[str, dict[str, Any]]:
    """Each of ANSWERS run: name -> argv (as kafka-run-class.sh would be given it) and stdout."""
    fill = {"bootstrap": broker.bootstrap, "sasl": f"127.0.0.1:{broker.ports[SASL]}", "config": "sasl-admin.properties",
            "controller": f"127.0.0.1:{broker.controller_port}"}
    out = {}
    for name, (main, args) in ANSWERS.items():
        argv = [a.format(**fill) for a in args]
        stdout = tool(main, *[str(config) if a == "sasl-admin.properties" else a for a in argv])
        out[name] = {"main": main, "args": [next((k.upper() for k, v in fill.items() if a == v), a) for a in argv],
                     "stdout": stdout}
    return out


# --------------------------------------------------------------------------- the run


def run(workdir: Path) -> tuple[Path, dict[str, Any]]:
    """The whole scenario on one broker in ``workdir``: its log dir (after a clean stop) and the manifest."""
    compile_clients()
    broker = brokers.Broker(RELEASE, workdir, extra=BROKER_CONFIG, more_listeners={SASL: SASL},
                            format_args=FORMAT_ARGS, dynamic_quorum=True)
    config = sasl_config(workdir)
    t0 = time.monotonic()
    steps: dict[str, float] = {}
    try:
        broker.start()
        for name, step in (("topics", lambda: create_topics(broker.bootstrap)),
                           ("scram", lambda: scram_users(broker.bootstrap)),
                           ("acls", lambda: acls(broker.bootstrap)),
                           ("quotas", lambda: quotas(broker.bootstrap)),
                           ("tokens", lambda: delegation_tokens(f"127.0.0.1:{broker.ports[SASL]}", config))):
            step()
            steps[name] = round(time.monotonic() - t0)
        quorum = second_controller(broker)
        steps["quorum"] = round(time.monotonic() - t0)
        done = groups(broker)
        steps["groups"] = round(time.monotonic() - t0)
        told = answers(broker, config)
    except BaseException:
        broker.stop()
        print(f"Kafka {brokers.version(RELEASE)} operator run failed; its files are in {workdir}\n{broker.logs()}",
              file=sys.stderr)
        raise
    broker.stop()
    manifest = {"kafka_version": brokers.version(RELEASE), "cluster_id": broker.cluster_id, "clients": done,
                "quorum": quorum, "seconds": steps,
                "answers": {name: {k: v for k, v in a.items() if k != "stdout"} for name, a in told.items()}}
    manifest["_stdout"] = {name: a["stdout"] for name, a in told.items()}
    return broker.log_dir, manifest


def keep_logdir(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for name in KEPT:
        shutil.copytree(src / name, dst / name)
    shutil.copyfile(src / BOOTSTRAP, dst / BOOTSTRAP)


WRITTEN_BY = f"Kafka {brokers.version(RELEASE)} broker driven by its own admin tools and Java clients"


def dumps(logdir: Path, release: str = RELEASE) -> list[dict]:
    """DumpLogSegments on every kept file, with the flags :func:`checks.combos_for` gives it."""
    return checks.kafka_dumps(release, logdir)


def write(root: Path, workdir: Path, release: str = RELEASE) -> dict[str, Any]:
    assert release == RELEASE, f"the operators' scenario runs {RELEASE} only"
    logdir, manifest = run(workdir)
    keep_logdir(logdir, root / "logdir")
    stdouts = manifest.pop("_stdout")
    shutil.rmtree(root / "answers", ignore_errors=True)
    (root / "answers").mkdir(parents=True)
    for name, text in stdouts.items():
        (root / "answers" / f"{name}.txt").write_text(text)
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    clients.write_goldens(root, RELEASE, dumps(root / "logdir"), WRITTEN_BY)
    return manifest


def check_goldens(root: Path) -> list[str]:
    return clients.check_goldens(root, dumps)


if __name__ == "__main__":
    sys.exit(clients.main(write, check_goldens, __doc__ or "", "kseg-kafka-admin-", (RELEASE,), RELEASE))
