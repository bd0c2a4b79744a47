"""One Kafka 4.3.1 broker with tiered storage (LocalTieredStorage) and share groups, and the checks
kseg must pass on what it wrote (shared by the live test and the committed corpus test).

:func:`run` starts a broker whose remote storage manager is Kafka's own file-system
``LocalTieredStorage`` (the ``kafka-storage`` test jar, see ``oracle/kafka-4/pom.xml``)
and whose metadata manager is the default topic-based one (``__remote_log_metadata``,
one partition, replication factor 1), then

* creates ``tiered`` (``remote.storage.enable=true``, 8 KiB segments, one second of
  local retention, 30 kB of retention in all), produces to it (plain, gzip, an aborted and
  a committed transaction), and waits until the remote store holds every rolled segment,
  the broker deleted its local copies and retention deleted the oldest remote ones;
* produces to ``shared`` and consumes it with the real ``ConsoleShareConsumer`` in two
  share groups, after ``kafka-configs.sh`` set ``share.auto.offset.reset=earliest`` for
  each: ``share-accept`` acknowledges the first 12 records, ``share-reject`` rejects 5;
  then ``kafka-share-groups.sh --describe --offsets --verbose`` says where each group is;
* stops the broker cleanly.

:func:`write_corpus` keeps such a run as ``fixtures/kafka-tiered/``: ``remote/`` (the
store), ``logdir/`` (``__remote_log_metadata-0``, ``__share_group_state-0``,
``__consumer_offsets-0``), ``manifest.json`` (records produced, the share-group tool's
answer) and ``dumps/`` (what DumpLogSegments printed, :func:`kafka_dumps`).
``python tests/kafka/tiered.py`` (``make kafka-tiered-corpus``) writes a new one.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import brokers
import checks

RELEASE = "4"
LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
TIERED_TOPIC = "tiered"
SHARE_TOPIC = "shared"
SEGMENT_BYTES = 8 * 1024
ABORTED_PREFIX = "txn-abort"
RETENTION_BYTES = 30_000  # about 5 segments: the oldest remote ones are deleted
#: share group -> (ConsoleShareConsumer flags, records it takes)
SHARE_GROUPS: dict[str, tuple[list[str], int]] = {
    "share-accept": ([], 12),
    "share-reject": (["--reject"], 5),
}
SHARE_RECORDS = 40
INTERNAL = ("__remote_log_metadata-0", "__share_group_state-0", "__consumer_offsets-0")
CORPUS = brokers.REPO / "fixtures" / "kafka-tiered"

BROKER_CONFIG: dict[str, object] = {
    "remote.log.storage.system.enable": "true",
    "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
    "remote.log.metadata.manager.listener.name": "PLAINTEXT",
    "rlmm.config.remote.log.metadata.topic.replication.factor": 1,
    "rlmm.config.remote.log.metadata.topic.num.partitions": 1,
    "remote.log.manager.task.interval.ms": 500,
    "log.retention.check.interval.ms": 500,
    "share.coordinator.state.topic.num.partitions": 1,
}


def _records(n: int, prefix: str) -> list[tuple[str, str]]:
    return [(f"{prefix}-{i % 17}", f"{prefix} value {i} " * 3) for i in range(n)]


def produce_tiered(bootstrap: str) -> list[tuple[str, str]]:
    """Records to TIERED_TOPIC; returns the committed ones in offset order."""
    from kafka import KafkaProducer

    committed: list[tuple[str, str]] = []

    def send(p: Any, records: list[tuple[str, str]]) -> None:
        for k, v in records:
            p.send(TIERED_TOPIC, key=k.encode(), value=v.encode())
        p.flush()

    for codec, n in ((None, 200), ("gzip", 300)):
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=5, batch_size=2048)
        send(p, _records(n, f"plain-{codec}"))
        p.close()
        committed += _records(n, f"plain-{codec}")
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="tiered-txn", linger_ms=5, batch_size=2048)
    p.init_transactions()
    for prefix in (ABORTED_PREFIX, "txn-commit"):
        p.begin_transaction()
        send(p, _records(60, prefix))
        if prefix == ABORTED_PREFIX:
            p.abort_transaction()
        else:
            p.commit_transaction()
            committed += _records(60, prefix)
    p.close()
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=2048)
    send(p, _records(200, "tail"))  # more segments after the transactions (the last stays active, local)
    p.close()
    return committed + _records(200, "tail")


def _remote_logs(remote_dir: Path) -> list[Path]:
    return sorted(remote_dir.glob(f"{TIERED_TOPIC}-0-*/*.log"))


def wait_tiered(broker: brokers.Broker, remote_dir: Path, timeout: float = 90.0) -> None:
    """Until every local segment but the active one is in the remote store and deleted locally, the
    oldest are deleted from the store by retention, and the metadata says so (kseg's own cross-check
    finds nothing, not even a copy or deletion in progress)."""
    from kseg.errors import KsegError
    from kseg.ops.tiered import check_remote_store

    local = broker.log_dir / f"{TIERED_TOPIC}-0"
    metadata = broker.log_dir / "__remote_log_metadata-0"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        broker._check_alive()
        logs = sorted(local.glob("*.log"))
        remote = _remote_logs(remote_dir)
        if len(logs) == 1 and len(remote) >= 3 and not remote[0].name.startswith("0" * 20):
            try:
                if not check_remote_store([metadata], [remote_dir]).problems:
                    return
            except (KsegError, OSError):  # files moving under the reader
                pass
        time.sleep(0.5)
    raise TimeoutError(f"segments not tiered after {timeout}s: local {sorted(p.name for p in local.glob('*'))}, "
                       f"remote {[p.name for p in _remote_logs(remote_dir)]}\n{broker.logs()}")


def _tool(main: str, *args: str, timeout: float = 90.0) -> str:
    proc = subprocess.run(brokers._java(RELEASE, main, *args), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def share_traffic(bootstrap: str) -> None:
    """SHARE_RECORDS records to SHARE_TOPIC, then each share group takes its records."""
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i, (k, v) in enumerate(_records(SHARE_RECORDS, "share")):
        p.send(SHARE_TOPIC, key=k.encode(), value=v.encode())
        if i % 5 == 4:
            p.flush()  # several batches
    p.close()
    for group, (flags, n) in SHARE_GROUPS.items():
        _tool("kafka.admin.ConfigCommand", "--bootstrap-server", bootstrap, "--alter", "--entity-type", "groups",
              "--entity-name", group, "--add-config", "share.auto.offset.reset=earliest")
        _tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
              "--topic", SHARE_TOPIC, "--group", group, "--max-messages", str(n), "--timeout-ms", "30000",
              "--command-property", "max.poll.records=5", *flags)


def describe_share_groups(bootstrap: str) -> dict[str, dict[str, Any]]:
    """``kafka-share-groups.sh --describe --offsets --verbose --all-groups``: group -> its row."""
    out = _tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server", bootstrap,
                "--describe", "--offsets", "--verbose", "--all-groups")
    rows: dict[str, dict[str, Any]] = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) == 6 and cols[0] != "GROUP":
            rows[cols[0]] = {"topic": cols[1], "partition": int(cols[2]), "leader_epoch": int(cols[3]),
                             "start_offset": int(cols[4]), "lag": cols[5], "line": line}
    return rows


def run(workdir: Path) -> dict[str, Any]:
    """The broker run; the manifest (records produced, share groups as the admin API saw them)."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    remote_root = workdir / "remote"
    broker = brokers.Broker(RELEASE, workdir, extra={**BROKER_CONFIG, "rsm.config.dir": remote_root})
    with broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([
                NewTopic(TIERED_TOPIC, 1, 1, topic_configs={
                    "remote.storage.enable": "true", "internal.segment.bytes": str(SEGMENT_BYTES),
                    "local.retention.ms": "1000", "retention.bytes": str(RETENTION_BYTES),
                    "index.interval.bytes": "512"}),
                NewTopic(SHARE_TOPIC, 1, 1),
            ])
        finally:
            admin.close()
        produced = produce_tiered(broker.bootstrap)
        share_traffic(broker.bootstrap)
        wait_tiered(broker, remote_root / "kafka-tiered-storage")
        groups = describe_share_groups(broker.bootstrap)
    return {"kafka_version": brokers.version(RELEASE), "produced": [{"key": k, "value": v} for k, v in produced],
            "aborted_key_prefix": ABORTED_PREFIX, "share_groups": groups}


def remote_dir(workdir: Path) -> Path:
    return workdir / "remote" / "kafka-tiered-storage"


# --------------------------------------------------------------------------- DumpLogSegments

#: (files, kafka-dump-log.sh flags, kseg dump options): one DumpLogSegments run each, all files at once
def dump_jobs(remote: Path, logdir: Path) -> list[tuple[list[str], list[str], list[str]]]:
    internal = [f"logdir/{p}/{log.name}" for p in INTERNAL for log in sorted((logdir / p).glob("*.log"))]
    decoders = {"__remote_log_metadata": ("--remote-log-metadata-decoder", "remote-log-metadata"),
                "__share_group_state": ("--share-group-state-decoder", "share-group-state"),
                "__consumer_offsets": ("--offsets-decoder", "offsets")}
    jobs = []
    for rel in internal:
        flag, family = decoders[rel.split("/")[1].rsplit("-", 1)[0]]
        jobs.append(([rel], [flag], ["--decode", family]))
    by_suffix: dict[str, list[str]] = {}
    for p in sorted(remote.rglob("*")):
        if p.suffix in checks.DUMPED_SUFFIXES:
            by_suffix.setdefault(p.suffix, []).append(f"remote/{p.relative_to(remote)}")
    for suffix, combos in ((".log", ("plain", "deep-data", "max-bytes")),
                           (".index", ("plain", "index-sanity", "verify-index")),
                           (".timeindex", ("plain", "index-sanity", "verify-index")), (".txnindex", ("plain",)),
                           (".snapshot", ("plain",))):
        for combo in combos:
            jobs.append((by_suffix.get(suffix, []), checks.COMBOS[combo], checks.KSEG_OPTIONS[combo] or []))
    return [j for j in jobs if j[0]]


def kafka_name(rel: str) -> str:
    """A remote file's path with Kafka's own names (DumpLogSegments parses the offset from the
    name and stops at ``<offset>-<segment id>``): ``remote/tiered-0/<20 digits>.<suffix>``."""
    if not rel.startswith("remote/"):
        return rel
    folder, name = rel.split("/")[1:]
    stem, suffix = name.split(".", 1)
    return f"remote/{re.sub(r'-[A-Za-z0-9_-]{22}$', '', folder)}/{stem.split('-', 1)[0]}.{suffix}"


def kafka_dumps(root: Path) -> list[dict[str, Any]]:
    """DumpLogSegments on the files of ``root`` (``remote/`` and ``logdir/``): the remote files
    copied under Kafka's names into a temporary folder first."""
    out = []
    with tempfile.TemporaryDirectory(prefix="kseg-tiered-names-") as tmp:
        for rel in (str(p.relative_to(root)) for p in (root / "remote").rglob("*") if p.is_file()):
            dst = Path(tmp) / kafka_name(rel)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, dst)
        shutil.copytree(root / "logdir", Path(tmp) / "logdir")
        for files, flags, kseg_opts in dump_jobs(root / "remote", root / "logdir"):
            args = ["--files", ",".join(kafka_name(f) for f in files), *flags]
            rc, stdout, stderr = brokers.dump_log_segments(RELEASE, *args, cwd=Path(tmp))
            out.append({"files": files, "command": ["kafka-dump-log.sh", *args], "kseg": kseg_opts, "exit": rc,
                        "stdout": checks.placeholder_paths(stdout, Path(tmp)),
                        "stderr": checks.placeholder_paths(stderr, Path(tmp))})
    return out


def kseg_dump(root: Path, files: list[str], kseg_opts: list[str]) -> tuple[int, bytes, bytes]:
    """``kseg dump --format kafka`` of the files (their own names), printed names mapped to Kafka's."""
    rc, out, err = checks.run_kseg(["dump", "--format", "kafka", *kseg_opts, *files], cwd=root)
    for rel in files:
        for a, b in ((rel, kafka_name(rel)), (rel.rsplit(".", 1)[0] + ".log", kafka_name(rel).rsplit(".", 1)[0]
                                              + ".log")):
            out, err = out.replace(a.encode(), b.encode()), err.replace(a.encode(), b.encode())
    return rc, checks.placeholder_paths(out, root), checks.placeholder_paths(err, root)


def _gap_blocks(stderr: bytes) -> list[bytes]:
    """DumpLogSegments' "Non-consecutive offsets in FILE" blocks, in a fixed order: Kafka prints them
    in its hash map's order of the absolute paths, which differ here (tiered names against Kafka's)."""
    blocks: list[list[bytes]] = []
    for line in stderr.splitlines(keepends=True):
        if line.startswith(b"Non-consecutive offsets in ") or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return sorted(b"".join(b) for b in blocks)


def dump_differences(root: Path, dumps: list[dict[str, Any]]) -> list[str]:
    problems = []
    for d in dumps:
        rc, out, err = kseg_dump(root, d["files"], d["kseg"])
        what = " ".join(d["command"][2:])
        if out != d["stdout"]:
            a, b = d["stdout"].decode().splitlines(), out.decode().splitlines()
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            line = (lambda lines: lines[first] if first < len(lines) else "<end>")
            problems.append(f"{what}: stdout differs at line {first + 1}:\n  kafka: {line(a)}\n  kseg:  {line(b)}")
        if _gap_blocks(err) != _gap_blocks(d["stderr"]):
            problems.append(f"{what}: stderr differs:\n  kafka: {d['stderr'][:300]!r}\n  kseg:  {err[:300]!r}")
        if d["exit"] == 0 and rc != 0:
            problems.append(f"{what}: kseg exited {rc}")
    return problems


# --------------------------------------------------------------------------- corpus


def copy_run(workdir: Path, dest: Path) -> None:
    """The remote store and the internal partitions of a run into ``dest`` (remote/, logdir/)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(remote_dir(workdir), dest / "remote")
    for p in INTERNAL:
        shutil.copytree(workdir / "data" / p, dest / "logdir" / p)


def write_corpus(workdir: Path, dest: Path = CORPUS) -> Path:
    manifest = run(workdir)
    copy_run(workdir, dest)
    golden = dest / "dumps"
    golden.mkdir()
    entries = []
    for i, d in enumerate(kafka_dumps(dest)):
        for stream in ("stdout", "stderr"):
            (golden / f"{i:02d}.{stream}").write_bytes(d[stream])
        entries.append({k: d[k] for k in ("files", "command", "kseg", "exit")}
                       | {"stdout": f"{i:02d}.stdout", "stderr": f"{i:02d}.stderr"})
    manifest["dumps"] = entries
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return dest


def load_dumps(root: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [e | {"stdout": (root / "dumps" / e["stdout"]).read_bytes(),
                 "stderr": (root / "dumps" / e["stderr"]).read_bytes()} for e in manifest["dumps"]]


# --------------------------------------------------------------------------- what kseg must say


def remote_records(remote: Path) -> list[dict[str, Any]]:
    """The data records of every remote segment per ``kseg dump --records``, aborted ones left out."""
    out = []
    for part in sorted(p for p in remote.iterdir() if p.is_dir()):
        for r in checks.kseg_records(part):
            if not (r["key"] or "").startswith(ABORTED_PREFIX):
                out.append({"offset": r["offset"], "key": r["key"], "value": r["value"]})
    return out


def produced_slice(produced: list[dict[str, str]], records: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The run of ``produced`` (committed records in offset order) that ``records`` should be: from
    the first of them (retention deleted the segments before), as many (the active segment stays local)."""
    if not records:
        return []
    first = next((i for i, r in enumerate(produced) if r["value"] == records[0]["value"]), len(produced))
    return produced[first:first + len(records)]


def kseg_json(args: list[str], cwd: Path, ok: tuple[int, ...] = (0,)) -> dict[str, Any]:
    rc, out, err = checks.run_kseg([*args, "--format", "json"], cwd=cwd)
    assert rc in ok, f"kseg {' '.join(args)} exited {rc}: {err.decode()}"
    return json.loads(out)


def decoded_records(partition: Path) -> list[dict[str, Any]]:
    """Every record of an internal partition per ``kseg dump --records --decode auto``."""
    rc, out, err = checks.run_kseg(["dump", "--records", "--decode", "auto", "--format", "jsonl", str(partition)],
                                   cwd=partition.parent)
    assert rc == 0, err.decode()
    return [o for o in map(json.loads, out.splitlines()) if o.get("type") == "record"]


def undecoded(records: list[dict[str, Any]]) -> list[str]:
    """Records whose key or value kseg could not decode (unknown types, versions, bytes)."""
    bad = []
    for r in records:
        for part in ("key", "value"):
            d = r.get(f"{part}_decoded")
            raw = r.get(f"{part}_b64")
            if raw is not None and (d is None or d.get("data") is None or d.get("notes")):
                bad.append(f"offset {r['offset']} {part}: {d}")
    return bad


# --------------------------------------------------------------------------- the checks, for both tests


def check_store_verifies(root: Path) -> None:
    """``kseg verify --remote-metadata logdir/ remote/``: every remote file clean, the store as the metadata says."""
    doc = kseg_json(["verify", "--remote-metadata", "logdir", "remote"], cwd=root)
    assert doc["ok"] and doc["errors"] == 0, [f for f in doc["files"] if f["problems"]]
    kinds = {f["kind"] for f in doc["files"]}
    assert {"log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint", "remote-log-metadata"} <= kinds, kinds
    assert not [p for f in doc["files"] for p in f["problems"]]


def check_metadata_names_the_store(root: Path) -> None:
    """``kseg state`` of ``__remote_log_metadata``: the segments present are exactly those copied and
    not deleted, with the same ids, offsets and sizes; the ones retention removed are DELETE_SEGMENT_FINISHED."""
    doc = kseg_json(["state", "logdir/__remote_log_metadata-0"], cwd=root)
    (ps,) = doc["partitions"]
    assert not ps["notes"]
    (name, part), = ps["remote_partitions"].items()
    assert name == f"{TIERED_TOPIC}-0"
    folder, = (root / "remote").iterdir()
    assert folder.name == f"{TIERED_TOPIC}-0-{part['topicId']}"
    store = {}
    for log in folder.glob("*.log"):
        offset, sid = log.stem.split("-", 1)
        store[sid] = (int(offset), log.stat().st_size)
    listed = {sid: (seg["startOffset"], seg["segmentSizeInBytes"]) for sid, seg in part["segments"].items()
              if seg["state"] == "COPY_SEGMENT_FINISHED"}
    assert listed == store
    # the metadata's txnIndexEmpty says whether the store has the segment's .txnindex
    txn = {sid: not seg["txnIndexEmpty"] for sid, seg in part["segments"].items() if sid in store}
    assert txn == {sid: any(folder.glob(f"*-{sid}.txnindex")) for sid in store}, txn
    deleted = [seg for seg in part["segments"].values() if seg["state"] != "COPY_SEGMENT_FINISHED"]
    assert deleted and all(seg["state"] == "DELETE_SEGMENT_FINISHED" for seg in deleted)
    segs = sorted(part["segments"].values(), key=lambda s: s["startOffset"])
    assert all(a["endOffset"] + 1 == b["startOffset"] for a, b in zip(segs, segs[1:]))


def check_remote_records(root: Path, manifest: dict[str, Any]) -> None:
    """The remote segments hold the records produced (a run of them: the oldest deleted, the newest local)."""
    records = remote_records(root / "remote")
    assert len(records) > 100
    assert [{"key": r["key"], "value": r["value"]} for r in records] == produced_slice(manifest["produced"], records)


def check_internal_records_decode(root: Path) -> None:
    """Every record of the three internal partitions decodes: no unknown types or versions."""
    for p in INTERNAL:
        records = decoded_records(root / "logdir" / p)
        assert records and not undecoded(records), (p, undecoded(records)[:5])
    schemas = {r["key_decoded"]["schema"] for r in decoded_records(root / "logdir" / "__consumer_offsets-0")}
    assert {"ShareGroupMetadataKey", "ShareGroupMemberMetadataKey", "ShareGroupTargetAssignmentMetadataKey",
            "ShareGroupTargetAssignmentMemberKey", "ShareGroupCurrentMemberAssignmentKey",
            "ShareGroupStatePartitionMetadataKey"} <= schemas, schemas
    share = {(r["key_decoded"]["schema"], r["value_decoded"]["schema"])
             for r in decoded_records(root / "logdir" / "__share_group_state-0")}
    assert share == {("ShareSnapshotKey", "ShareSnapshotValue"), ("ShareUpdateKey", "ShareUpdateValue")}, share


def check_share_state(root: Path, manifest: dict[str, Any]) -> None:
    """``kseg state`` of ``__share_group_state``: each group's share-partition where
    ``kafka-share-groups.sh --describe --offsets`` put it (start offset, leader epoch), and the
    state batches the consumers left (accepted records before the start offset, rejected ones Archived)."""
    doc = kseg_json(["state", "logdir/__share_group_state-0"], cwd=root)
    (ps,) = doc["partitions"]
    assert not ps["notes"]
    groups = ps["share_groups"]
    assert set(groups) == set(manifest["share_groups"]) == set(SHARE_GROUPS)
    for group, row in manifest["share_groups"].items():
        (sp,) = groups[group]
        assert row["partition"] == sp["partition"]
        assert (sp["startOffset"], sp["leaderEpoch"]) == (row["start_offset"], row["leader_epoch"]), (group, sp, row)
        assert sp["stateEpoch"] >= 0 and sp["snapshotEpoch"] >= 0
    accept = groups["share-accept"][0]
    assert accept["startOffset"] == SHARE_GROUPS["share-accept"][1]
    assert all(b["firstOffset"] >= accept["startOffset"] and b["deliveryStateName"] != "Acknowledged"
               for b in accept["stateBatches"])
    reject = groups["share-reject"][0]
    assert [(b["firstOffset"], b["lastOffset"], b["deliveryStateName"]) for b in reject["stateBatches"]][:1] == \
        [(0, SHARE_GROUPS["share-reject"][1] - 1, "Archived")]


def check_corpus(root: Path = CORPUS) -> list[str]:
    """DumpLogSegments re-run on the committed corpus: what differs from its stored outputs."""
    manifest = json.loads((root / "manifest.json").read_text())
    stored = load_dumps(root, manifest)
    fresh = kafka_dumps(root)
    same = {"stderr": _gap_blocks}  # its order follows the hash of a temporary folder's path
    return [f"{' '.join(a['command'][2:])}: {stream} differs" for a, b in zip(stored, fresh)
            for stream in ("stdout", "stderr", "exit")
            if same.get(stream, lambda x: x)(a[stream]) != same.get(stream, lambda x: x)(b[stream])] + \
        ([f"{len(fresh)} DumpLogSegments runs, {len(stored)} stored"] if len(fresh) != len(stored) else [])


if __name__ == "__main__":  # python tests/kafka/tiered.py [--check]: a new fixtures/kafka-tiered, or check it
    if sys.argv[1:] == ["--check"]:
        diffs = check_corpus()
        print(*diffs or ["fixtures/kafka-tiered: ok"], sep="\n")
        sys.exit(1 if diffs else 0)
    with tempfile.TemporaryDirectory(prefix="kseg-tiered-") as tmp:
        print(write_corpus(Path(tmp)))
