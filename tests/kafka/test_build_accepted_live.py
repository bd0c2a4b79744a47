"""Live tier: a Kafka 4.x broker serves what ``kseg build`` wrote, as it was written.

One Kafka 4.3.1 KRaft node creates the topics (one per codec, a transactional one, a compacted
one) and is stopped cleanly; each partition's segment files, producer snapshots and
``leader-epoch-checkpoint`` are replaced by what ``kseg build`` wrote (the codec topics from
JSON lines in ``kseg dump --format jsonl``'s contract, the others from fixture specs; the
broker's ``partition.metadata`` stays), and the broker is started again on them. Then:

* a kafka-python consumer reads every partition from offset 0 to its end and receives exactly
  the records built: offsets, keys, values, headers, timestamps and their type (the
  transactional topic ``read_committed``: its aborted transaction is left out through the
  ``.txnindex`` kseg wrote, since the broker has no producer snapshot to learn it from); the
  same partition rewritten by ``kseg recompress --codec zstd`` is served alike (the rewrite
  carries each segment's ``.txnindex``);
* the broker rebuilt, recovered or truncated nothing: its log names no corrupt index, no
  recovery and no truncation for these topics, and after a second clean stop every ``.log`` file
  and the rolled segments' ``.index``/``.timeindex``/``.txnindex`` are byte for byte kseg's;
  its ``leader-epoch-checkpoint`` keeps kseg's entries (the broker adds its own new epoch after
  them).

The leader epochs written are the broker's own (0, the epoch a new KRaft partition starts
with; the restarted broker leads at epoch 2 and appends that entry). A broker loading a log
after a clean shutdown takes its leader-epoch cache from the checkpoint file as it is; epochs
above its own are not what a fixture for a broker wants: Kafka 4.3.1, becoming leader at epoch
2 of a log built at epoch 7, logs "New epoch entry EpochEntry[epoch=2, startOffset=24] caused
truncation of conflicting entries [EpochEntry[epoch=7, startOffset=0]]" and empties the cache,
and a kafka-python consumer is then sent back to offset 0 again and again.

The records are stamped in 2023, so the topics keep them whatever their age (``retention.ms``
-1; the compacted topic has no time retention): the broker's retention check, run here at
start and every second, would otherwise delete them, and the log check below would say so.

Needs ``java`` and ``mvn``; skipped otherwise.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import brokers
import pytest

RELEASE = "4"
_why = brokers.unavailable(RELEASE)
if _why:
    pytest.skip(f"live Kafka build-acceptance tier skipped: {_why}", allow_module_level=True)

import checks  # noqa: E402

BASE_TS = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TXN_TOPIC, COMPACT_TOPIC, LAT_TOPIC = "built-txn", "built-compact", "built-lat"
#: the transactional partition rewritten by ``kseg recompress`` (its aborted transactions carried in
#: the .txnindex of each segment: the broker has nothing else to learn them from)
RECOMPRESSED_TXN_TOPIC = "built-txn-recompressed"
#: what the broker's log layer says when it recovers, rebuilds or truncates a log it loads
DISTRUST = re.compile(r"recover|corrupt|rebuild|truncat|inconsistent|invalid|deleting", re.IGNORECASE)
#: the loggers of that layer (the controller's lines name partitions with "leaderRecoveryState=RECOVERED")
LOG_LAYER = ("storage.internals.log", "kafka.log.", "kafka.cluster.Partition")

Expected = list[dict[str, Any]]


def _record(tag: str, i: int, ts: int) -> dict[str, Any]:
    """A spec record (and a JSON line's fields): null keys and values, binary bytes, headers."""
    rec: dict[str, Any] = {"timestamp": ts}
    if i % 7 == 3:
        rec["key"] = None
    elif i % 5 == 4:
        rec["key_hex"] = f"00ff{i:04x}"
    else:
        rec["key"] = f"{tag}-k{i % 6}"
    rec["value"] = None if i % 11 == 5 else f"{tag} value {i} " + "x" * (i * 13 % 97)
    rec["headers"] = ([{"key": "trace", "value": f"t{i}"}, {"key": "empty", "value": None}] if i % 3 == 0 else [])
    return rec


def _bytes(rec: dict[str, Any], name: str) -> bytes | None:
    if name + "_hex" in rec:
        return bytes.fromhex(rec[name + "_hex"])
    if name + "_b64" in rec:
        return base64.b64decode(rec[name + "_b64"])
    return None if rec.get(name) is None else rec[name].encode()


def _expected(rec: dict[str, Any], offset: int, ts: int | None = None, ts_type: int = 0) -> dict[str, Any]:
    return {"offset": offset, "key": _bytes(rec, "key"), "value": _bytes(rec, "value"),
            "headers": [(h["key"], None if h["value"] is None else h["value"].encode()) for h in rec["headers"]],
            "timestamp": rec["timestamp"] if ts is None else ts, "timestamp_type": ts_type}


def codec_lines(codec: str) -> tuple[list[str], Expected]:
    """dump's JSON lines of three segments of batches of ``codec`` (offsets from 0, epoch 0)."""
    lines, expected, offset, segment = [], [], 0, 0
    for b in range(9):
        if b % 3 == 0:
            segment = offset
        n = 1 + b * 5 % 7
        lines.append(json.dumps({"type": "batch", "file": f"{segment:020d}.log", "magic": 2, "base_offset": offset,
                                 "codec": codec, "timestamp_type": "CreateTime", "partition_leader_epoch": 0}))
        for _ in range(n):
            rec = _record(codec, offset, BASE_TS + offset * 1000 + (offset % 4) * 7)
            line = {"type": "record", "offset": offset, **rec}
            if "key_hex" in line:
                line["key_b64"] = base64.b64encode(bytes.fromhex(line.pop("key_hex"))).decode()
            lines.append(json.dumps(line))
            expected.append(_expected(rec, offset))
            offset += 1
    return lines, expected


def txn_spec() -> tuple[dict[str, Any], Expected, Expected]:
    """A spec with plain batches, two producers' transactions (committed and aborted, markers with
    coordinator epochs) across rolled segments; the records read_uncommitted and read_committed."""
    batches: list[dict[str, Any]] = []
    uncommitted: Expected = []
    committed: Expected = []
    offset = 0

    def data(recs: int, outcome: str | None = None, **fields: Any) -> None:
        nonlocal offset
        records = []
        for _ in range(recs):
            rec = _record("txn", offset, BASE_TS + offset * 10)
            records.append(rec)
            uncommitted.append(_expected(rec, offset))
            if outcome != "ABORT":
                committed.append(_expected(rec, offset))
            offset += 1
        batches.append({**fields, "records": records})

    def marker(kind: str, pid: int, **fields: Any) -> None:
        nonlocal offset
        batches.append({"control": kind, "producer_id": pid, "producer_epoch": 0, "coordinator_epoch": 2,
                        "timestamp": BASE_TS + offset * 10, **fields})
        offset += 1

    txn = {"transactional": True, "producer_epoch": 0}
    data(3)
    data(2, "COMMIT", producer_id=1000, codec="zstd", **txn)
    data(2, "ABORT", producer_id=1001, **txn)
    data(2, "COMMIT", producer_id=1000, codec="zstd", **txn)
    marker("COMMIT", 1000)
    data(2, "ABORT", producer_id=1001, codec="gzip", **txn)
    marker("ABORT", 1001)
    data(3, new_segment=True)
    data(3, "ABORT", producer_id=1000, codec="lz4", **txn)
    marker("ABORT", 1000)
    data(2, "COMMIT", producer_id=1001, **txn)
    marker("COMMIT", 1001, new_segment=True)
    data(2)
    data(2, "ABORT", producer_id=1000, **txn)
    marker("ABORT", 1000)
    data(1)
    spec = {"topic": TXN_TOPIC, "partition": 0, "magic": 2, "codec": "none", "partition_leader_epoch": 0,
            "batches": batches}
    return spec, uncommitted, committed


def compact_spec() -> tuple[dict[str, Any], Expected]:
    """Duplicate keys and tombstones in three segments (the cleaner is off: all of them served)."""
    batches, expected, offset = [], [], 0
    for b in range(8):
        records = []
        for _ in range(3):
            rec = {"key": f"user-{offset % 4}", "value": None if offset % 5 == 2 else f"state {offset}",
                   "timestamp": BASE_TS + offset, "headers": []}
            records.append(rec)
            expected.append(_expected(rec, offset))
            offset += 1
        batches.append({"new_segment": b in (3, 6), "codec": "gzip" if b % 2 else "none", "records": records})
    return {"topic": COMPACT_TOPIC, "partition": 0, "partition_leader_epoch": 0, "batches": batches}, expected


def lat_spec() -> tuple[dict[str, Any], Expected]:
    """LogAppendTime batches (a topic of that type): each record reads the batch's max timestamp."""
    batches, expected, offset = [], [], 0
    for b in range(4):
        stamp = BASE_TS + 500_000 + b * 1000
        records = [_record("lat", offset + i, BASE_TS + offset + i) for i in range(4)]
        expected += [_expected(r, offset + i, ts=stamp, ts_type=1) for i, r in enumerate(records)]
        batches.append({"new_segment": b == 2, "timestamp_type": "LogAppendTime", "max_timestamp": stamp,
                        "codec": "snappy" if b % 2 else "none", "records": records})
        offset += len(records)
    return {"topic": LAT_TOPIC, "partition": 0, "partition_leader_epoch": 0, "batches": batches}, expected


def _kseg(*args: str, cwd: Path) -> None:
    rc, out, err = checks.run_kseg(list(args), cwd=cwd)
    assert rc == 0, (out + err).decode(errors="replace")


def _consume(bootstrap: str, topic: str, isolation: str = "read_uncommitted") -> list[dict[str, Any]]:
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation,
                             auto_offset_reset="earliest", consumer_timeout_ms=500)
    try:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        consumer.seek(tp, 0)
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=500).values():
                got += [{"offset": m.offset, "key": m.key, "value": m.value,
                         "headers": [(k, v) for k, v in m.headers], "timestamp": m.timestamp,
                         "timestamp_type": m.timestamp_type} for m in msgs]
        return got
    finally:
        consumer.close()


def _files(partition: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(partition.iterdir()) if p.is_file()}


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    work = tmp_path_factory.mktemp("build-accepted")
    built = work / "built"
    built.mkdir()
    expected: dict[str, Expected] = {}
    for codec in CODECS:
        lines, expected[f"built-{codec}"] = codec_lines(codec)
        (built / f"built-{codec}.jsonl").write_text("\n".join(lines) + "\n")
        _kseg("build", str(built / f"built-{codec}.jsonl"), "-o", str(built / f"built-{codec}-0"), cwd=work)
    spec, uncommitted, committed = txn_spec()
    expected[TXN_TOPIC], expected["committed"] = uncommitted, committed
    specs = {TXN_TOPIC: spec}
    specs[COMPACT_TOPIC], expected[COMPACT_TOPIC] = compact_spec()
    specs[LAT_TOPIC], expected[LAT_TOPIC] = lat_spec()
    for topic, spec in specs.items():
        (built / f"{topic}.json").write_text(json.dumps(spec, indent=1))
        _kseg("build", str(built / f"{topic}.json"), "-o", str(built / f"{topic}-0"), cwd=work)
    _kseg("recompress", "--codec", "zstd", str(built / f"{TXN_TOPIC}-0"), "-o",
          str(built / f"{RECOMPRESSED_TXN_TOPIC}-0"), cwd=work)
    expected[RECOMPRESSED_TXN_TOPIC], expected["committed-recompressed"] = uncommitted, committed
    # no retention by time: the records' timestamps are years old, and the broker's first retention
    # check (30 s after it starts) would delete every segment of the other topics
    keep = {"retention.ms": "-1"}
    topics = {f"built-{c}": dict(keep) for c in CODECS} | {
        TXN_TOPIC: dict(keep), RECOMPRESSED_TXN_TOPIC: dict(keep), COMPACT_TOPIC: {"cleanup.policy": "compact"},
        LAT_TOPIC: {**keep, "message.timestamp.type": "LogAppendTime"}}

    # the retention check at once and every second (not 30 s after the start and hourly): what the
    # broker's time-based tasks would delete is deleted while the test runs, and its log says so
    broker = brokers.Broker(RELEASE, work / "broker", {"log.initial.task.delay.ms": 0,
                                                        "log.retention.check.interval.ms": 1000})
    logdir = broker.log_dir
    try:
        broker.start()
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([NewTopic(t, 1, 1, topic_configs=c) for t, c in topics.items()])
        finally:
            admin.close()
        deadline = time.monotonic() + 30
        while not all((logdir / f"{t}-0" / "partition.metadata").exists() for t in topics):
            assert time.monotonic() < deadline, broker.logs()
            time.sleep(0.2)
        broker.stop()
        first_run = (broker.workdir / "kafka.out").read_text(errors="replace")
        assert (logdir / ".kafka_cleanshutdown").exists() or "shut down completed" in first_run
        broker_epochs = {}
        for topic in topics:
            part = logdir / f"{topic}-0"
            broker_epochs[topic] = (part / "leader-epoch-checkpoint").read_text()
            for f in part.iterdir():
                if f.name != "partition.metadata":
                    f.unlink()
            for f in (built / f"{topic}-0").iterdir():
                if f.name != "partition.metadata":
                    shutil.copy2(f, part / f.name)
        written = {t: _files(built / f"{t}-0") for t in topics}
        broker.procs.clear()
        (broker.workdir / "kafka.out").rename(broker.workdir / "kafka-first.out")
        broker.start()
        received = {t: _consume(broker.bootstrap, t) for t in topics}
        received["committed"] = _consume(broker.bootstrap, TXN_TOPIC, "read_committed")
        received["committed-recompressed"] = _consume(broker.bootstrap, RECOMPRESSED_TXN_TOPIC, "read_committed")
        time.sleep(2)  # a retention check or two more
    except BaseException:
        print(f"Kafka run failed; files in {work}\n{broker.logs()}")
        raise
    finally:
        broker.stop()
    after = {t: _files(logdir / f"{t}-0") for t in topics}
    return {"work": work, "topics": topics, "expected": expected, "received": received, "written": written,
            "after": after, "broker_epochs": broker_epochs,
            "log": (broker.workdir / "kafka.out").read_text(errors="replace")}


def test_every_partition_serves_the_records_built(accepted: dict[str, Any]) -> None:
    wrong = []
    for name, expected in accepted["expected"].items():
        got = accepted["received"][name]
        if got != expected:
            first = next((i for i, (g, e) in enumerate(zip(got, expected)) if g != e), min(len(got), len(expected)))
            wrong.append(f"{name}: {len(got)} records received, {len(expected)} built; first difference at #{first}: "
                         f"received {got[first] if first < len(got) else None}, "
                         f"built {expected[first] if first < len(expected) else None}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("topic,committed", [(TXN_TOPIC, "committed"),
                                             (RECOMPRESSED_TXN_TOPIC, "committed-recompressed")])
def test_read_committed_leaves_out_exactly_the_aborted_transactions(accepted: dict[str, Any], topic: str,
                                                                    committed: str) -> None:
    kept = {r["offset"] for r in accepted["received"][committed]}
    everything = {r["offset"] for r in accepted["received"][topic]}
    assert kept < everything and len(everything - kept) == 9  # 2 + 2 + 3 + 2 aborted records


def test_the_broker_recovered_and_truncated_nothing(accepted: dict[str, Any]) -> None:
    log = accepted["log"]
    ours = [line for line in log.splitlines() if any(f"{t}-0" in line for t in accepted["topics"])
            and any(layer in line for layer in LOG_LAYER) and DISTRUST.search(line)]
    assert not ours, "\n".join(ours)
    assert re.search(r"Skipping recovery of \d+ logs from \S+ since clean shutdown file was found", log)
    for topic, written in accepted["written"].items():
        segments = sorted(n for n in written if n.endswith(".log"))
        end = accepted["expected"][topic][-1]["offset"] + 1
        loaded = re.search(rf"Completed load of Log\(dir=\S+/{topic}-0, .*logEndOffset=(\d+)\) "
                           rf"with (\d+) segments", log)
        assert loaded and (int(loaded[1]), int(loaded[2])) == (end, len(segments)), (topic, loaded and loaded[0])


def test_the_files_kseg_wrote_are_unchanged_after_the_broker_ran(accepted: dict[str, Any]) -> None:
    changed = []
    for topic, written in accepted["written"].items():
        after = accepted["after"][topic]
        segments = sorted(n for n in written if n.endswith(".log"))
        rolled = {n[:-4] for n in segments[:-1]}
        for name, data in written.items():
            stem, _, ext = name.partition(".")
            keep = ext == "log" or (stem in rolled and ext in ("index", "timeindex", "txnindex"))
            if keep and after.get(name) != data:
                changed.append(f"{topic}-0/{name}: {len(data)} bytes written, "
                               f"{'missing' if name not in after else f'{len(after[name])} bytes'} after the broker ran")
        extra_logs = sorted(n for n in after if n.endswith(".log") and n not in written)
        if extra_logs:
            changed.append(f"{topic}-0: the broker added {extra_logs}")
    assert not changed, "\n".join(changed)


def test_the_broker_keeps_the_leader_epochs_written(accepted: dict[str, Any]) -> None:
    for topic, written in accepted["written"].items():
        ours = written["leader-epoch-checkpoint"].decode().splitlines()[2:]
        theirs = accepted["after"][topic]["leader-epoch-checkpoint"].decode().splitlines()
        assert theirs[2:2 + len(ours)] == ours, (topic, ours, theirs)
        assert int(theirs[1]) == len(theirs) - 2 >= len(ours)
