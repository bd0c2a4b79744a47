#!/usr/bin/env python3
"""Traffic of other clients than kafka-python on a Kafka broker: librdkafka and the Java client.

One broker of the release chosen (``--release``, ``4`` = 4.3.1 by default; a KRaft node or, for the
releases :data:`brokers.ZOOKEEPER_RELEASES` names, ZooKeeper and a broker, :class:`brokers.Broker`) receives

* from **librdkafka** (the ``confluent-kafka`` package): every codec (none, gzip, snappy,
  lz4, zstd) on ``rdkafka-codecs``, an idempotent producer (``rdkafka-idempotent``), a
  transactional producer committing, aborting and committing again (``rdkafka-txn``),
  binary keys, headers with a null value and an empty one, and a value of about 500 KB
  (``rdkafka-large``, zstd);
* from **the Java client**, the release's own tools (their classes and option names per release in
  :data:`JAVA_TOOLS`): ``ProducerPerformance`` once per codec (``java-perf``) and with
  ``--transactional-id`` (``java-txn``: transactions v2 on 4.x, whose new clusters enable them,
  v1 before), ``ConsoleProducer`` with ``parse.key`` and, where the release's line reader has
  them (3.2+), ``parse.headers`` and a ``null.marker`` (``java-console``: keys, headers with
  null values).

Then consumers read every topic back from offset 0 with librdkafka, once
``read_uncommitted`` (aborted records included) and once ``read_committed``.
After a clean stop the partitions of these topics and ``__transaction_state-0``
are kept.

    python tests/kafka/clients.py --write fixtures/kafka-clients/4                   # a new corpus
    python tests/kafka/clients.py --release 3.9 --write fixtures/kafka-clients/3.9   # another release's
    python tests/kafka/clients.py --check fixtures/kafka-clients/3.9   # DumpLogSegments still prints it

The corpus folder is named after the release (a name of :data:`brokers.RELEASES`); ``--check`` takes
the release from the corpus's ``golden/manifest.json``.

The corpus: ``logdir/`` (the partitions), ``records.json``
(``{"read_uncommitted": {partition: [record]}, "read_committed": {...}}``, records as
``traffic.consume_all`` writes them; values longer than :data:`LARGE` as
``{"length": N, "sha256": HEX}``), ``transactions.json`` (what the producers committed
and aborted, per partition) and ``golden/`` (DumpLogSegments per file and flags, with
``manifest.json`` as ``oracle/generate.py`` writes it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402
import checks  # noqa: E402

#: the release a corpus is written for unless ``--release`` names another
DEFAULT_RELEASE = "4"
BASE_TS = 1_710_000_000_000
SEGMENT_BYTES = 16384
#: values longer than this are kept in records.json as their length and SHA-256
LARGE = 4096
#: partitions whose --print-data-log outputs are not kept (the ~500 KB value would be printed whole)
NO_DATA_GOLDENS = ("rdkafka-large-0",)
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: partition -> (committed, aborted) transactions its producer made (None: as many as ProducerPerformance
#: commits in its run, one per --transaction-duration-ms)
TRANSACTIONS = {"rdkafka-txn-0": (2, 1), "java-txn-0": (None, 0)}
INTERNAL_KEPT = ("__transaction_state-0",)


@dataclass(frozen=True)
class JavaTools:
    """How one release's jars run the Java client's tools: what differs between releases, as read from
    each release's jar (its ``--help``)."""

    #: ConsoleProducer's main class (a Scala object in the core jar up to 3.9, in kafka-tools since 4.0)
    console_producer: str
    #: ConsoleProducer's option giving its line reader a property (``parse.key=true``): ``--property``,
    #: deprecated for ``--reader-property`` since 4.2
    reader_property: str
    #: ConsoleProducer's option giving the producer a config: ``--producer-property``, deprecated for
    #: ``--command-property`` since 4.2
    producer_property: str
    #: the line reader parses headers and a null marker (KIP-798, KIP-810: 3.2)
    headers: bool
    #: the transaction protocol the Java producer speaks with this release's broker (KIP-890: v2 on a
    #: KRaft cluster formatted by 4.0+, whose transaction.version feature is 2; v1 before)
    transactions: int


_SCALA_TOOLS = dict(console_producer="kafka.tools.ConsoleProducer", reader_property="--property",
                    producer_property="--producer-property")
#: 4.0 and 4.1: the Java ConsoleProducer with the Scala one's option names
_JAVA_TOOLS_40 = JavaTools("org.apache.kafka.tools.ConsoleProducer", "--property", "--producer-property",
                           headers=True, transactions=2)
_JAVA_TOOLS_4 = JavaTools("org.apache.kafka.tools.ConsoleProducer", "--reader-property", "--command-property",
                          headers=True, transactions=2)
#: release (a name of brokers.RELEASES) -> its tools; the releases a corpus can be written for (each has
#: one in fixtures/kafka-clients/<release>)
JAVA_TOOLS: dict[str, JavaTools] = {
    "2.8": JavaTools(**_SCALA_TOOLS, headers=False, transactions=1),
    "3.6": JavaTools(**_SCALA_TOOLS, headers=True, transactions=1),
    "3.9": JavaTools(**_SCALA_TOOLS, headers=True, transactions=1),
    "4.0": _JAVA_TOOLS_40,
    "4.1": _JAVA_TOOLS_40,
    "4.2": _JAVA_TOOLS_4,
    "4": _JAVA_TOOLS_4,
    "4.4": _JAVA_TOOLS_4,
}
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"

TOPICS = ("rdkafka-codecs", "rdkafka-idempotent", "rdkafka-txn", "rdkafka-large", "java-perf", "java-txn",
          "java-console")


def _b(s: bytes | None) -> str | dict | None:
    if s is None:
        return None
    if len(s) > LARGE:
        return {"length": len(s), "sha256": hashlib.sha256(s).hexdigest()}
    return s.decode("latin-1")


# --------------------------------------------------------------------------- librdkafka

def _rd_records(prefix: str, n: int, ts: int) -> list[dict[str, Any]]:
    """Binary keys (every byte value turns up), null keys, tombstones, empty values, headers with null
    and empty values and binary ones."""
    out = []
    for i in range(n):
        key = None if i % 9 == 4 else bytes([i % 256, 0, 255 - i % 256]) + prefix.encode() + bytes([0x80 | i % 128])
        if i % 11 == 6 and key is not None:
            value = None
        elif i % 13 == 7:
            value = b""
        else:
            value = f"{prefix} #{i} ".encode() + bytes(range(i % 40, i % 40 + 24)) + b" end" * (i % 5)
        headers: list[tuple[str, bytes | None]] = []
        if i % 3 == 1:
            headers = [("trace", f"t-{i}".encode()), ("nothing", None), ("empty", b"")]
        elif i % 5 == 2:
            headers = [("bin", bytes([0, 255, i % 256])), ("nothing", None)]
        out.append({"key": key, "value": value, "headers": headers, "timestamp": ts + i * 1000})
    return out


def _delivered(errors: list):
    def report(err, msg) -> None:
        if err is not None:
            errors.append(f"{msg.topic()}: {err}")
    return report


def _rd_send(producer, topic: str, records: list[dict[str, Any]], every: int = 8) -> None:
    errors: list[str] = []
    for i, r in enumerate(records):
        producer.produce(topic, key=r["key"], value=r["value"], headers=r["headers"] or None,
                         timestamp=r["timestamp"], partition=0, on_delivery=_delivered(errors))
        if i % every == every - 1:
            producer.flush(30)  # several batches per producer
    assert producer.flush(30) == 0, "librdkafka left messages undelivered"
    assert not errors, errors


def produce_rdkafka(bootstrap: str) -> None:
    from confluent_kafka import Producer

    common = {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 4096, "acks": "all"}
    ts = BASE_TS
    for codec in CODECS:
        p = Producer({**common, "compression.codec": codec, "enable.idempotence": False})
        _rd_send(p, "rdkafka-codecs", _rd_records(f"rd-{codec}", 40, ts))
        ts += 100_000
    p = Producer({**common, "enable.idempotence": True, "compression.codec": "lz4"})
    _rd_send(p, "rdkafka-idempotent", _rd_records("rd-idem", 60, ts))
    ts += 100_000
    p = Producer({**common, "transactional.id": "rdkafka-txn", "compression.codec": "zstd"})
    p.init_transactions(30)
    for i, commit in enumerate((True, False, True)):
        p.begin_transaction()
        _rd_send(p, "rdkafka-txn", _rd_records(f"rd-txn{i}-{'commit' if commit else 'abort'}", 20, ts))
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
        ts += 100_000
    # a ~500 KB value (compressible text: the zstd batch stays small) between small records
    # (batch.size as librdkafka's default: a message larger than batch.size is refused)
    p = Producer({**common, "compression.codec": "zstd", "message.max.bytes": 2_000_000, "batch.size": 1_000_000})
    words = b"".join(f"{w} {i * 7919 % 100_003:05d} ".encode()
                     for i, w in enumerate(("kafka", "segment", "batch", "record", "offset") * 9000))
    big = words[:500_000]
    _rd_send(p, "rdkafka-large", [{"key": b"large-%d" % i, "value": v, "headers": [], "timestamp": ts + i}
                                   for i, v in enumerate((b"before", big, b"after"))], every=1)


# --------------------------------------------------------------------------- the Java client

def _tool(release: str, main: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    cmd = brokers._java(release, main, *args)
    proc = subprocess.run(cmd, input=stdin, capture_output=True, timeout=180)
    if proc.returncode != 0:
        raise RuntimeError(f"{main} exited {proc.returncode}:\n{proc.stdout.decode()[-2000:]}"
                           f"{proc.stderr.decode()[-3000:]}")
    return proc


def console_lines(headers: bool) -> list[str]:
    """ConsoleProducer's input: ``headers<TAB>key<TAB>value`` with ``NULL`` for a null where the line
    reader parses headers and null markers, else ``key<TAB>value``."""
    lines = []
    for i in range(40):
        if headers:
            head = f"h{i % 3}:v{i},nul:NULL,e:" if i % 2 else f"only:{i}"
            key = "NULL" if i % 7 == 3 else f"console-key-{i % 5}"
            value = "NULL" if i % 11 == 5 else f"console value {i} \u00e9\u4e16"
            lines.append(f"{head}\t{key}\t{value}")
        else:
            lines.append(f"console-key-{i % 5}\tconsole value {i} \u00e9\u4e16")
    return lines


def produce_java(release: str, bootstrap: str) -> None:
    tools = JAVA_TOOLS[release]
    perf = PRODUCER_PERFORMANCE
    for codec in CODECS:
        _tool(release, perf, "--topic", "java-perf", "--num-records", "60", "--record-size", "120",
              "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
              f"compression.type={codec}", "linger.ms=5", "batch.size=2048")
    _tool(release, perf, "--topic", "java-txn", "--num-records", "200", "--record-size", "80", "--throughput", "400",
          "--transactional-id", "java-perf-txn", "--transaction-duration-ms", "100",
          "--producer-props", f"bootstrap.servers={bootstrap}", "compression.type=gzip", "linger.ms=5")
    reader = ["parse.key=true", *(["parse.headers=true", "null.marker=NULL"] if tools.headers else [])]
    _tool(release, tools.console_producer, "--bootstrap-server", bootstrap, "--topic", "java-console",
          *(arg for prop in reader for arg in (tools.reader_property, prop)),
          *(arg for prop in ("compression.type=zstd", "linger.ms=50") for arg in (tools.producer_property, prop)),
          stdin=("\n".join(console_lines(tools.headers)) + "\n").encode())


# --------------------------------------------------------------------------- topics, consumers

def create_topics(release: str, bootstrap: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    segment_bytes = brokers.segment_bytes_config(release)
    # retention.ms=-1: the producers' explicit timestamps are older than the default 7 days
    config = {"retention.ms": "-1", segment_bytes: str(SEGMENT_BYTES),
              "index.interval.bytes": str(checks.DATA_INDEX_INTERVAL)}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    # the large value's batch (zstd) is larger than the others' segments
    big = {"max.message.bytes": "2000000", segment_bytes: str(1 << 20)}
    futures = admin.create_topics([NewTopic(t, 1, 1, config={**config, **(big if t == "rdkafka-large" else {})})
                                   for t in TOPICS])
    for f in futures.values():
        f.result(60)


def consume(bootstrap: str, isolation: str) -> dict[str, list[dict[str, Any]]]:
    """Partition (``topic-0``) -> what a librdkafka consumer of ``isolation`` level receives from offset 0."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    types = {1: "CreateTime", 2: "LogAppendTime"}
    out: dict[str, list[dict[str, Any]]] = {}
    for topic in TOPICS:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"readback-{isolation}", "enable.auto.commit": False,
                      "isolation.level": isolation, "fetch.message.max.bytes": 4_000_000})
        tp = TopicPartition(topic, 0, OFFSET_BEGINNING)
        c.assign([tp])
        _, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        records = []
        deadline = time.monotonic() + 60
        idle = time.monotonic()
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                pos = c.position([TopicPartition(topic, 0)])[0].offset
                if pos >= high or time.monotonic() - idle > 4:
                    break
                continue
            if m.error():
                raise RuntimeError(f"{topic}: {m.error()}")
            idle = time.monotonic()
            ts_type, ts = m.timestamp()
            records.append({
                "offset": m.offset(), "timestamp": ts, "timestamp_type": types.get(ts_type, "NoTimestampType"),
                "key": _b(m.key()), "value": _b(m.value()),
                "headers": [{"key": k, "value": _b(v)} for k, v in (m.headers() or [])],
            })
        c.close()
        out[f"{topic}-0"] = records
    return out


def run(release: str, workdir: Path) -> tuple[Path, dict]:
    """Start the release's broker in ``workdir``, produce, consume, stop cleanly: its log dir and what was
    read."""
    broker = brokers.Broker(release, workdir)
    try:
        broker.start()
        create_topics(release, broker.bootstrap)
        produce_rdkafka(broker.bootstrap)
        produce_java(release, broker.bootstrap)
        received = {level: consume(broker.bootstrap, level) for level in ("read_uncommitted", "read_committed")}
    except BaseException:
        broker.stop()
        print(f"Kafka {brokers.version(release)} run failed; its files are in {workdir}\n{broker.logs()}",
              file=sys.stderr)
        raise
    broker.stop()
    return broker.log_dir, received


def keep_logdir(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for name in (*(f"{t}-0" for t in TOPICS), *INTERNAL_KEPT):
        shutil.copytree(src / name, dst / name)


def golden_suffix_ok(rel: str, combo: str) -> bool:
    return not (Path(rel).parent.name in NO_DATA_GOLDENS and combo in ("data", "deep-data"))


def dumps(logdir: Path, release: str) -> list[dict]:
    return [r for r in checks.kafka_dumps(release, logdir) if golden_suffix_ok(r["file"], r["combo"])]


def written_by(release: str) -> str:
    return (f"Kafka {brokers.version(release)} broker; librdkafka (confluent-kafka) and the Java client's tools "
            f"as producers (transactions v{JAVA_TOOLS[release].transactions})")


def write_goldens(root: Path, release: str, rows: list[dict] | None = None, by: str | None = None) -> None:
    """``golden/`` of a corpus: the release's DumpLogSegments' outputs (``rows``, :func:`dumps` of
    ``root/logdir`` if not given) and ``manifest.json`` naming each command."""
    golden = root / "golden"
    if golden.exists():
        shutil.rmtree(golden)
    entries = []
    for r in dumps(root / "logdir", release) if rows is None else rows:
        name = f"{r['file']}.{r['combo']}"
        for stream in ("stdout", "stderr"):
            path = golden / f"{name}.{stream}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(r[stream])
        entries.append({"file": r["file"], "combo": r["combo"], "command": r["command"], "exit": r["exit"],
                        "stdout": f"{name}.stdout", "stderr": f"{name}.stderr"})
    doc = {"release": release, "kafka_version": brokers.version(release), "main_class": brokers.RELEASES[release][1],
           "written_by": by or written_by(release),
           "cwd": "logdir", "note": f"absolute paths under the log dir are written as {checks.LOGDIR}/",
           "entries": entries}
    (golden / "manifest.json").write_text(json.dumps(doc, indent=1) + "\n")


def check_goldens(root: Path, dumps_of=dumps) -> list[str]:
    """What the corpus's release's DumpLogSegments prints now (``dumps_of(root/logdir, release)``) against
    ``golden/``."""
    doc = json.loads((root / "golden" / "manifest.json").read_text())
    expected = {(e["file"], e["combo"]): e for e in doc["entries"]}
    problems = []
    for r in dumps_of(root / "logdir", doc["release"]):
        e = expected.pop((r["file"], r["combo"]), None)
        if e is None:
            problems.append(f"{r['file']} {r['combo']}: not in the manifest")
            continue
        for stream in ("stdout", "stderr"):
            if (root / "golden" / e[stream]).read_bytes() != r[stream]:
                problems.append(f"{r['file']} {r['combo']}: {stream} differs")
        if e["exit"] != r["exit"]:
            problems.append(f"{r['file']} {r['combo']}: exit {r['exit']}, manifest says {e['exit']}")
    return problems + [f"{f} {c}: in the manifest, not dumped" for f, c in expected]


def write(root: Path, workdir: Path, release: str = DEFAULT_RELEASE) -> dict:
    logdir, received = run(release, workdir)
    keep_logdir(logdir, root / "logdir")
    (root / "records.json").write_text(json.dumps(received, indent=0, sort_keys=True) + "\n")
    write_goldens(root, release)
    return received


def main(write_run=write, check=check_goldens, doc: str = __doc__ or "", prefix: str = "kseg-kafka-clients-",
         releases: tuple[str, ...] = tuple(JAVA_TOOLS), default: str = DEFAULT_RELEASE) -> int:
    """``--write DIR`` (a new run of ``--release`` kept in DIR) or ``--check DIR`` (DumpLogSegments against
    its goldens): the command line of this scenario and of the others kept the same way (``admin.py``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, metavar="DIR", help="run the scenario, keep it in DIR")
    group.add_argument("--check", type=Path, metavar="DIR", help="re-run DumpLogSegments on DIR, compare")
    ap.add_argument("--release", choices=releases, default=default,
                    help=f"the Kafka release whose broker and tools --write runs (default {default})")
    args = ap.parse_args()
    t0 = time.monotonic()
    if args.check:
        problems = check(args.check)
        for p in problems:
            print(p, file=sys.stderr)
        print(f"{args.check}: {'FAIL' if problems else 'ok'} ({time.monotonic() - t0:.0f}s)")
        return 1 if problems else 0
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        write_run(args.write, Path(tmp), args.release)
    print(f"written to {args.write} ({time.monotonic() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
