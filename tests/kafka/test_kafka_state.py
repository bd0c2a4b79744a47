"""Live tier: ``kseg state`` and ``kseg txn`` against what a running broker reports.

One short broker run per release (3.9 with ZooKeeper, 4.x KRaft): two consumer groups commit offsets,
and a transactional producer in a child process begins a transaction, sends records
and is killed with SIGKILL. While the broker runs, the admin API gives each group's
committed offsets; then the broker stops (long before the transaction's timeout
could abort it) and kseg reads its log directory:

* ``kseg state --format json`` of ``__consumer_offsets`` holds exactly the offsets
  the broker reported, group by group;
* ``kseg txn --now-ms`` (later than the transaction's start plus the maximum timeout)
  flags the killed producer's transaction as hanging, with its producer id and first
  offset, and exits 1;
* ``kseg state`` of ``__transaction_state`` shows its transactional id Ongoing;
* the log directory packed into a ``.tgz`` reads the same (``kseg txn``).

Needs ``java`` and ``mvn``; skipped otherwise.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable(*brokers.LIVE_DEFAULT)
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.structs import OffsetAndMetadata  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TXN_ID = "killed-producer"
MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms, the broker's default and kseg's

# The child: one transaction begun, records sent and acknowledged, then it waits to be killed.
PRODUCER = """
import json, sys, time
from kafka import KafkaProducer
p = KafkaProducer(bootstrap_servers=sys.argv[1], transactional_id=sys.argv[2],
                  transaction_timeout_ms=600000, linger_ms=5)
p.init_transactions()
start = int(time.time() * 1000)
p.begin_transaction()
for i in range(7):
    p.send("hang", key=b"k%d" % i, value=b"in flight %d" % i)
p.flush()
pid = p._transaction_manager.producer_id_and_epoch.producer_id
print(json.dumps({"producer_id": pid, "start_ms": start}), flush=True)
time.sleep(600)
"""


def _offset(offset: int, metadata: str) -> OffsetAndMetadata:
    try:
        return OffsetAndMetadata(offset, metadata, -1)
    except TypeError:  # older kafka-python: no leader epoch
        return OffsetAndMetadata(offset, metadata)


class Run:
    def __init__(self, release: str, workdir: Path):
        broker = brokers.Broker(release, workdir)
        child = None
        try:
            broker.start()
            bootstrap = broker.bootstrap
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            admin.create_topics([NewTopic("orders", 2, 1), NewTopic("hang", 1, 1)])

            p = KafkaProducer(bootstrap_servers=bootstrap)
            for i in range(40):
                p.send("orders", key=b"o%d" % i, value=b"order %d" % i, partition=i % 2)
            for i in range(5):  # plain records first: the transaction starts at offset 5
                p.send("hang", value=b"before %d" % i)
            p.flush()
            p.close()

            # group-a reads everything and commits as it goes; group-b commits chosen offsets with metadata
            c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="group-a", auto_offset_reset="earliest",
                              enable_auto_commit=False, consumer_timeout_ms=3000)
            c.subscribe(["orders"])
            for n, _ in enumerate(c, 1):
                if n % 15 == 0:
                    c.commit()
            c.commit()
            c.close()
            c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="group-b", enable_auto_commit=False)
            c.assign([TopicPartition("orders", 0), TopicPartition("orders", 1)])
            c.commit({TopicPartition("orders", 0): _offset(3, "first"),
                      TopicPartition("orders", 1): _offset(11, "second")})
            c.commit({TopicPartition("orders", 1): _offset(12, "again")})
            c.close()

            # kafka-python 3 names it list_group_offsets; 2.x list_consumer_group_offsets
            if hasattr(admin, "list_group_offsets"):
                self.reported = {g: admin.list_group_offsets({g: None})[g] for g in ("group-a", "group-b")}
            else:
                self.reported = {g: admin.list_consumer_group_offsets(g) for g in ("group-a", "group-b")}

            child = subprocess.Popen([sys.executable, "-c", PRODUCER, bootstrap, TXN_ID],
                                     stdout=subprocess.PIPE, text=True)
            line = child.stdout.readline()
            if not line:
                raise RuntimeError("the transactional producer did not get its records acknowledged")
            self.txn = json.loads(line)
            child.send_signal(signal.SIGKILL)
            child.wait()
            admin.close()
        except BaseException:
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()
            broker.stop()
            print(f"Kafka run failed; its files are in {workdir}\n{broker.logs()}", file=sys.stderr)
            raise
        broker.stop()
        self.logdir = broker.log_dir


@pytest.fixture(scope="module", params=list(brokers.LIVE_DEFAULT), ids=lambda r: f"kafka-{r}")
def run(request, tmp_path_factory) -> Run:
    return Run(request.param, tmp_path_factory.mktemp(f"kafka-state-{request.param}"))


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def kseg(*args: object) -> Result:
    from click.testing import CliRunner

    from kseg.cli.main import main

    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return Result(r.exit_code, r.stdout, r.stderr if r.stderr_bytes is not None else "")


def test_state_offsets_equal_what_the_broker_reports(run: Run) -> None:
    parts = sorted(run.logdir.glob("__consumer_offsets-*"))
    r = kseg("state", "--format", "json", *parts)
    assert r.returncode == 0, r.stderr
    groups: dict = {}
    for part in json.loads(r.stdout)["partitions"]:
        groups.update(part.get("groups", {}))
    for group, reported in run.reported.items():
        assert reported, group
        seen = {(topic, int(p)): (o["offset"], o["metadata"])
                for topic, by_part in groups[group]["offsets"].items() for p, o in by_part.items()}
        assert seen == {(tp.topic, tp.partition): (om.offset, om.metadata) for tp, om in reported.items()}, group
    assert run.reported["group-a"][TopicPartition("orders", 0)].offset == 20
    assert run.reported["group-b"][TopicPartition("orders", 1)].offset == 12


def test_killed_producer_leaves_a_hanging_transaction(run: Run) -> None:
    now = run.txn["start_ms"] + MAX_TIMEOUT_MS + 60_000
    r = kseg("txn", "--format", "json", "--now-ms", now, run.logdir / "hang-0")
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads(r.stdout)
    hanging = [h for p in report["partitions"] for h in p["hanging"]]
    assert [(h["producer_id"], h["first_offset"]) for h in hanging] == [(run.txn["producer_id"], 5)]

    # Over the whole log directory, __transaction_state names the transactional id too; and
    # the same directory packed as a bug report would send it reads the same.
    whole = kseg("txn", "--format", "json", "--now-ms", now, run.logdir)
    assert whole.returncode == 1
    hanging = [h for p in json.loads(whole.stdout)["partitions"] for h in p["hanging"]]
    assert [(h["transactional_id"], h["first_offset"]) for h in hanging] == [(TXN_ID, 5)]
    archive = run.logdir.parent / "logs.tgz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(run.logdir, arcname="kafka-logs")
    packed = kseg("txn", "--format", "json", "--now-ms", now, archive)
    assert packed.returncode == 1
    assert packed.stdout.replace(f"{archive}/kafka-logs", str(run.logdir)) == whole.stdout

    # Not hanging yet a minute after it began.
    r = kseg("txn", "--format", "json", "--now-ms", run.txn["start_ms"] + 60_000, run.logdir / "hang-0")
    assert r.returncode == 0, r.stdout + r.stderr

    r = kseg("state", "--format", "json", *sorted(run.logdir.glob("__transaction_state-*")))
    assert r.returncode == 0, r.stderr
    ids: dict = {}
    for part in json.loads(r.stdout)["partitions"]:
        ids.update(part.get("transactional_ids", part.get("transactions", {})))
    assert ids[TXN_ID]["state"] == "Ongoing", ids[TXN_ID]
    assert ids[TXN_ID]["producerId"] == run.txn["producer_id"]
