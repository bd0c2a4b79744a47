"""Real client traffic for a :class:`brokers.Broker`, then the records consumers get back.

:func:`produce_all` creates the topics and writes, with kafka-python, every
codec the topic's message format allows (gzip, snappy, lz4, zstd), null keys
and values, tombstones, headers, explicit timestamps, an idempotent producer,
transactions that commit and abort (with offsets sent to the transaction),
old produce request versions on old-format topics (ZooKeeper releases), and consumer groups
committing offsets, so ``__consumer_offsets`` and ``__transaction_state`` fill.
Small segments make every data topic roll several segments, a small index
interval gives the ``.index``/``.timeindex`` files several entries. Uncompressed
batches whose largest timestamp is on their first record show where a release's
time index points; ``RUNNING_COPIES`` are copied while the broker runs, so their
active segments keep the preallocated, zero-filled index space.

:func:`consume_all` reads every data topic back from offset 0 (read_uncommitted,
so aborted records are included; consumers never see control records) as
plain JSON-able dicts: offset, timestamp, timestamp_type, key, value, headers
(bytes as latin-1 strings so they survive JSON exactly).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import brokers
from checks import DATA_INDEX_INTERVAL
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

BASE_TS = 1_700_000_000_000
SEGMENT_BYTES = 4096
INDEX_INTERVAL = DATA_INDEX_INTERVAL
#: segment.index.bytes of the partition copied while the broker runs (RUNNING_COPY): its active
#: segment's .index/.timeindex are preallocated to this size, zero-filled past the entries written
PREALLOCATED_INDEX_BYTES = 1024
RUNNING_COPIES = ("log-append-0", "preallocated-0")


_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett",
          "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "x")


def _b(s: bytes | None) -> str | None:
    return None if s is None else s.decode("latin-1")


def topics_for(release: str) -> dict[str, dict[str, str]]:
    """Topic name -> topic configs."""
    seg_key = brokers.segment_bytes_config(release)
    # retention.ms -1: the records' timestamps are in 2023, older than the default week (a 4.4 broker
    # deleted those segments soon after the writes)
    small = {seg_key: str(SEGMENT_BYTES), "index.interval.bytes": str(INDEX_INTERVAL), "retention.ms": "-1"}
    preallocated = {"segment.index.bytes": str(PREALLOCATED_INDEX_BYTES)}
    topics = {
        "v2": dict(small),
        "idempotent": dict(small),
        "txn": dict(small),
        # small preallocated indexes: the corpus keeps these partitions as the running broker left them
        "log-append": {**small, "message.timestamp.type": "LogAppendTime", **preallocated},
        "preallocated": {**small, **preallocated},  # one small batch: indexes with no entry yet
    }
    if brokers.uses_zookeeper(release):
        topics["v1"] = {**small, "message.format.version": "0.10.2"}
        topics["v0"] = {**small, "message.format.version": "0.9.0"}
    return topics


def sample_records(prefix: str, n: int, start_ts: int) -> list[dict[str, Any]]:
    """Deterministic records: some null keys, tombstones, empty values, headers."""
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else f"{prefix}-key-{i % 11}".encode()
        if i % 13 == 5 and key is not None:
            value = None  # tombstone
        elif i % 17 == 9:
            value = b""
        else:
            words = " ".join(_WORDS[(i * 7 + j * 3) % len(_WORDS)] for j in range(i % 23))
            value = f"{prefix} value {i}: {words}".encode()
        headers = [("h", f"{i}".encode()), ("empty-header", b"")] if i % 4 == 1 else []
        if i % 9 == 2:
            headers.append(("bin", bytes([0, 255, i % 256])))
        out.append({"key": key, "value": value, "headers": headers, "timestamp_ms": start_ts + i * 1000})
    return out


def send(producer: KafkaProducer, topic: str, records: list[dict[str, Any]], headers: bool = True) -> None:
    for r in records:
        producer.send(topic, key=r["key"], value=r["value"], timestamp_ms=r["timestamp_ms"],
                      headers=r["headers"] if headers else None, partition=0)
        if r["timestamp_ms"] // 1000 % 8 == 7:
            producer.flush()  # several batches per producer
    producer.flush()


def produce_all(bootstrap: str, release: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, 1, 1, topic_configs=cfg) for name, cfg in topics_for(release).items()])
    finally:
        admin.close()

    common = {"bootstrap_servers": bootstrap, "linger_ms": 20, "batch_size": 2048}
    ts = BASE_TS
    # v2: every codec, several batches each, headers, nulls, tombstones
    for codec in (None, "gzip", "snappy", "lz4", "zstd"):
        p = KafkaProducer(compression_type=codec, **common)
        send(p, "v2", sample_records(f"v2-{codec}", 60, ts))
        p.close()
        ts += 100_000
    # uncompressed batches whose first record holds the largest timestamp: Kafka 2.8-3.6 brokers index
    # such a record's offset (inside the batch) in the .timeindex, 3.9 the batch's last offset
    p = KafkaProducer(**common)
    for group in range(12):
        for j in range(8):
            stamp = ts + group * 10_000 + (7 - j) * 1000
            p.send("v2", key=f"desc-{group}".encode(), value=f"descending {group}.{j}".encode(),
                   timestamp_ms=stamp, partition=0)
        p.flush()
    p.close()
    ts += 200_000
    # one small batch: its segment's indexes stay preallocated and empty
    p = KafkaProducer(**common)
    send(p, "preallocated", sample_records("preallocated", 3, ts))
    p.close()
    ts += 100_000
    # old formats (ZooKeeper releases): old produce request versions (magic 0 and 1 messages), every legacy codec
    if brokers.uses_zookeeper(release):
        for topic, api in (("v0", (0, 9)), ("v1", (0, 10, 1))):
            for codec in (None, "gzip", "snappy", "lz4"):
                p = KafkaProducer(compression_type=codec, api_version=api, **common)
                send(p, topic, sample_records(f"{topic}-{codec}", 30, ts), headers=False)
                p.close()
                ts += 100_000
    # idempotent producer
    p = KafkaProducer(enable_idempotence=True, acks="all", compression_type="lz4", **common)
    send(p, "idempotent", sample_records("idem", 60, ts))
    p.close()
    ts += 100_000
    # broker-set timestamps
    p = KafkaProducer(compression_type="gzip", **common)
    send(p, "log-append", sample_records("append", 30, ts))
    p.close()
    ts += 100_000

    # consumer groups: commit offsets as they read
    for group in ("group-a", "group-b"):
        c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                          enable_auto_commit=False, consumer_timeout_ms=3000)
        c.subscribe(["v2", "idempotent"])
        n = 0
        for _ in c:
            n += 1
            if n % 50 == 0:
                c.commit()
        c.commit()
        c.close()

    # transactions: commit, abort, commit with offsets sent to the transaction
    p = KafkaProducer(transactional_id="txn-producer", compression_type="snappy", **common)
    p.init_transactions()
    for i, commit in enumerate((True, False, True, False, True)):
        p.begin_transaction()
        send(p, "txn", sample_records(f"txn{i}-{'commit' if commit else 'abort'}", 15, ts))
        if i == 4:
            p.send_offsets_to_transaction({TopicPartition("v2", 0): _offset_meta(10)}, "txn-group")
        if commit:
            p.commit_transaction()
        else:
            p.abort_transaction()
        ts += 100_000
    p.close()


def _offset_meta(offset: int):
    from kafka.structs import OffsetAndMetadata

    try:
        return OffsetAndMetadata(offset, "", -1)
    except TypeError:
        return OffsetAndMetadata(offset, "")


def consume_all(bootstrap: str, release: str) -> dict[str, list[dict[str, Any]]]:
    """Partition name (``topic-0``) -> the records a consumer receives, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for topic in topics_for(release):
        c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                          isolation_level="read_uncommitted", consumer_timeout_ms=4000)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        end = c.end_offsets([tp])[tp]
        records = []
        for m in c:
            records.append({
                # kafka-python says None where the Java consumer says -1 (RecordBatch.NO_TIMESTAMP, v0)
                "offset": m.offset, "timestamp": -1 if m.timestamp is None else m.timestamp,
                "timestamp_type": ("CreateTime", "LogAppendTime")[m.timestamp_type] if m.timestamp_type in (0, 1)
                else "NoTimestampType",
                "key": _b(m.key), "value": _b(m.value),
                "headers": [{"key": k, "value": _b(v)} for k, v in (m.headers or [])],
            })
            if m.offset >= end - 1:
                break
        c.close()
        out[f"{topic}-0"] = records
    return out


def running_copy_dir(workdir: Path) -> Path:
    """Where :func:`run_release` copies the RUNNING_COPIES partitions while the broker still runs."""
    return workdir / "running"


def run_release(release: str, workdir: Path) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """A broker of ``release`` in ``workdir``: start, produce, consume, clean stop.

    Returns the broker's log dir and the records received; :func:`running_copy_dir` holds the
    RUNNING_COPIES partitions as they were before the stop (active segments' indexes preallocated). On failure the tail
    of the broker's (and ZooKeeper's) output is printed and its files are left
    in ``workdir``.
    """
    broker = brokers.Broker(release, workdir)
    try:
        broker.start()
        produce_all(broker.bootstrap, release)
        received = consume_all(broker.bootstrap, release)
        # a clean stop trims the active segments' indexes: some partitions are kept as the running broker has them
        for name in RUNNING_COPIES:
            shutil.copytree(broker.log_dir / name, running_copy_dir(workdir) / name)
    except BaseException:
        broker.stop()
        print(f"Kafka {brokers.version(release)} run failed; its files are in {workdir}\n{broker.logs()}",
              file=sys.stderr)
        raise
    broker.stop()
    return broker.log_dir, received
