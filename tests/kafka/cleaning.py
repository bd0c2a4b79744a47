"""The broker's own LogCleaner as the judge of ``kseg compact``.

:func:`run_scenario` runs one broker of a release with the cleaner off,
creates compacted topics (small segments, duplicate keys, tombstones, an
idempotent producer, transactions that commit and abort; on 3.9 also a
``message.format.version=0.10.2`` topic written with v1 produce requests; per
message format a topic whose producers use every codec on keys of their own, so
that the cleaner rebuilds batches of each codec),
stops it and copies every partition as it is ("before"). It then starts the
same broker again with the cleaner on and aggressive settings, waits (bounded)
until ``cleaner-offset-checkpoint`` covers each partition up to its active
segment, stops it and copies the partitions again ("after"). The wall-clock
window of the cleaning (just before the restart, just after the stop) is kept:
the cleaner's clock was somewhere in it.

:func:`compare` runs ``kseg compact`` on "before" with the broker's settings
and a clock inside that window and lists every difference with "after": the
segment file names (the cleaner's grouping), per batch its offsets, attributes,
producer fields, base sequence, size and CRC (when the delete horizons are
equal), the delete horizon as "set or not" and inside the window, every
record, and the ``.index``/``.timeindex`` bytes. A batch of a codec in
``checks.CODEC_OUTPUT_MAY_DIFFER`` (snappy) may differ in size and CRC; its
payload decompressed may not, and the batches after it are compared at their
positions moved by the difference (that file's ``.log``/``.index``/``.timeindex``
bytes are then not compared).
"""

from __future__ import annotations

import functools
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import brokers
import checks

from kseg.log.decode import scan_entries
from kseg.log.records import payload_bytes

SEGMENT_BYTES = 2048  # while producing: many small segments
CLEAN_SEGMENT_BYTES = 6144  # set before cleaning: the cleaner groups up to 3 of them
INDEX_INTERVAL = 512
DELETE_RETENTION_MS = 86_400_000
#: the topic of the second cleaning: its tombstones' delete horizons pass between the two cleanings
SHORT_RETENTION_MS = 2000
SECOND_TOPIC = "cv2r"
MIN_COMPACTION_LAG_MS = 0
#: the topic with a compaction lag: records older than it are cleaned, the recent tail is not
LAG_TOPIC, LAG_MS = "cv2lag", 3_600_000
#: the topics whose broker stamps batches with its own clock (LogAppendTime)
LAT_TOPICS = ("cv2lat", "cv1lat")
#: the topics of the codecs: every codec's producer has keys of its own, overwritten and tombstoned within
#: its own batches, so the cleaner keeps part of them and rebuilds (recompresses) batches of each codec
CODEC_TOPICS = {"cv2codecs": (None, "gzip", "snappy", "lz4", "zstd"), "cv1codecs": (None, "gzip", "snappy", "lz4")}
#: the third cleaning: more distinct keys than the cleaner's dedupe buffer holds, cleaned in rounds
MAP_TOPIC = "cvmap"
MAP_BUFFER_BYTES = (1 << 20) + 24  # log.cleaner.dedupe.buffer.size, just over the broker's least (1 MiB): 43,691 slots, 39,321 keys a round
MAP_KEYS, MAP_RECORDS, MAP_SEGMENT_BYTES = 45_000, 60_000, 192 * 1024
BASE_TS = 1_700_000_000_000
PARTITION = 0


def topics_for(release: str) -> dict[str, dict[str, str]]:
    seg_key = brokers.segment_bytes_config(release)
    cfg = {
        "cleanup.policy": "compact",
        seg_key: str(SEGMENT_BYTES),
        "index.interval.bytes": str(INDEX_INTERVAL),
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": str(DELETE_RETENTION_MS),
        "min.compaction.lag.ms": str(MIN_COMPACTION_LAG_MS),
        "segment.ms": "600000",
    }
    topics = {"cv2": dict(cfg), SECOND_TOPIC: {**cfg, "delete.retention.ms": str(SHORT_RETENTION_MS)},
              LAG_TOPIC: {**cfg, "min.compaction.lag.ms": str(LAG_MS)},
              "cv2lat": {**cfg, "message.timestamp.type": "LogAppendTime"}}
    if brokers.uses_zookeeper(release):
        topics["cv1"] = {**cfg, "message.format.version": "0.10.2"}
        topics["cv1lat"] = {**cfg, "message.format.version": "0.10.2", "message.timestamp.type": "LogAppendTime"}
        topics["cv1codecs"] = {**cfg, "message.format.version": "0.10.2"}
    topics["cv2codecs"] = dict(cfg)
    return topics


def lag_ms(partition: str) -> int:
    """The partition's topic's min.compaction.lag.ms."""
    return LAG_MS if partition.rsplit("-", 1)[0] == LAG_TOPIC else MIN_COMPACTION_LAG_MS


def settings(release: str, delete_retention_ms: int = DELETE_RETENTION_MS) -> dict[str, Any]:
    """What ``kseg compact`` is told (the broker's topic settings when it cleaned)."""
    return {"segment_bytes": CLEAN_SEGMENT_BYTES, "delete_retention_ms": delete_retention_ms,
            "min_compaction_lag_ms": MIN_COMPACTION_LAG_MS, "index_interval_bytes": INDEX_INTERVAL,
            "min_compaction_lag_ms_by_partition": {f"{LAG_TOPIC}-{PARTITION}": LAG_MS},
            "topics": topics_for(release)}


def _value(tag: str, i: int) -> bytes:
    return f"{tag} value {i} " .encode() + b"x" * (i % 13)


def _send(p, topic: str, items: list[tuple[bytes, bytes | None, int]], flush_every: int = 6) -> None:
    for n, (key, value, ts) in enumerate(items, 1):
        p.send(topic, key=key, value=value, timestamp_ms=ts, partition=PARTITION)
        if n % flush_every == 0:
            p.flush()
    p.flush()


def produce(bootstrap: str, release: str) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(n, 1, 1, topic_configs=c) for n, c in topics_for(release).items()])
    finally:
        admin.close()
    common = {"bootstrap_servers": bootstrap, "linger_ms": 20, "batch_size": 1024}
    ts = BASE_TS

    def batch(tag: str, n: int, keys: int, tomb_every: int = 0) -> list[tuple[bytes, bytes | None, int]]:
        nonlocal ts
        out = []
        for i in range(n):
            key = f"k{(i * 7) % keys}".encode()
            value = None if tomb_every and i % tomb_every == tomb_every - 1 else _value(tag, i)
            out.append((key, value, ts))
            ts += 1000
        return out

    for topic in ("cv2", SECOND_TOPIC):
        ts = BASE_TS
        # v2: plain and compressed producers, duplicate keys, tombstones
        for codec in (None, "gzip", None, "lz4"):
            p = KafkaProducer(compression_type=codec, **common)
            _send(p, topic, batch(f"plain-{codec}", 40, 12, tomb_every=9))
            p.close()
        # idempotent producer (producer ids, sequences)
        p = KafkaProducer(enable_idempotence=True, acks="all", **common)
        _send(p, topic, batch("idem", 30, 12, tomb_every=7))
        p.close()
        # transactions: commit, abort, commit, abort, commit
        p = KafkaProducer(transactional_id=f"cleaner-txn-{topic}", **common)
        p.init_transactions()
        for i, commit in enumerate((True, False, True, False, True)):
            p.begin_transaction()
            _send(p, topic, batch(f"txn{i}-{'commit' if commit else 'abort'}", 12, 16, tomb_every=5),
                  flush_every=4)
            p.commit_transaction() if commit else p.abort_transaction()
        p.close()
        # a tail of plain records so the transactions lie in rolled segments
        p = KafkaProducer(**common)
        _send(p, topic, batch("tail", 40, 12, tomb_every=11))
        p.close()
    for topic in ("cv1", "cv1lat"):
        if topic in topics_for(release):
            ts = BASE_TS
            for codec in (None, "gzip", None):
                p = KafkaProducer(compression_type=codec, api_version=(0, 10, 1), **common)
                _send(p, topic, batch(f"v1-{codec}", 50, 12, tomb_every=9))
                p.close()
    # every codec: each producer overwrites and tombstones its own keys, so that the cleaner keeps the last
    # of them and rebuilds batches of that codec; a plain tail leaves them all in rolled segments
    for topic, codecs in CODEC_TOPICS.items():
        if topic in topics_for(release):
            ts = BASE_TS
            v1 = {"api_version": (0, 10, 1)} if topic.startswith("cv1") else {}
            for codec in codecs:
                p = KafkaProducer(compression_type=codec, **v1, **common)
                items = batch(f"{codec}", 30, 8, tomb_every=7)
                _send(p, topic, [(codec.encode() + b"-" + k if codec else k, v, t) for k, v, t in items])
                p.close()
            p = KafkaProducer(**v1, **common)
            _send(p, topic, [(b"tail-" + k, v, t) for k, v, t in batch("tail", 30, 8)])
            p.close()
    # LogAppendTime: the broker's clock replaces the producer's timestamps
    ts = BASE_TS
    for codec in (None, "gzip", None):
        p = KafkaProducer(compression_type=codec, **common)
        _send(p, "cv2lat", batch(f"lat-{codec}", 50, 12, tomb_every=9))
        p.close()
    # the compaction lag: old records (cleanable), then records stamped now (within the lag: not cleanable)
    ts = BASE_TS
    p = KafkaProducer(**common)
    _send(p, LAG_TOPIC, batch("old", 80, 12, tomb_every=9))
    ts = int(time.time() * 1000)
    _send(p, LAG_TOPIC, batch("recent", 80, 12, tomb_every=9))
    p.close()
    # a larger segment.bytes for the cleaning, so that it groups segments (the active one does not roll
    # until something is appended); alter_configs replaces a topic's whole set
    from kafka.admin import ConfigResource, ConfigResourceType

    seg_key = brokers.segment_bytes_config(release)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, n, configs={**c, seg_key: str(CLEAN_SEGMENT_BYTES)})
                             for n, c in topics_for(release).items()])
    finally:
        admin.close()


def produce_map(bootstrap: str, release: str) -> None:
    """The key-map topic: more distinct keys than one cleaning's map holds, no tombstones or
    transactions (each of the broker's cleanings has its own clock; kseg's rounds share one)."""
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

    seg_key = brokers.segment_bytes_config(release)
    cfg = {**topics_for(release)["cv2"], seg_key: str(MAP_SEGMENT_BYTES)}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(MAP_TOPIC, 1, 1, topic_configs=cfg)])
    finally:
        admin.close()
    p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20, batch_size=16384)
    for i in range(MAP_RECORDS):
        p.send(MAP_TOPIC, key=f"key{(i * 37) % MAP_KEYS}".encode(), value=f"v{i}".encode(),
               timestamp_ms=BASE_TS + i, partition=PARTITION)
    p.flush()
    p.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, MAP_TOPIC,
                                            configs={**cfg, seg_key: str(3 * MAP_SEGMENT_BYTES)})])
    finally:
        admin.close()


def produce_more(bootstrap: str) -> None:
    """New dirty data for the second cleaning: overwrites, tombstones, an aborted and a committed
    transaction, and enough after them to roll the active segment past them."""
    from kafka import KafkaProducer

    common = {"bootstrap_servers": bootstrap, "linger_ms": 20, "batch_size": 1024}
    ts = BASE_TS + 10_000_000
    items = lambda tag, n, tomb: [(f"k{(i * 5) % 14}".encode(), None if i % tomb == tomb - 1 else  # noqa: E731
                                   _value(tag, i), ts + i * 1000) for i in range(n)]
    p = KafkaProducer(**common)
    _send(p, SECOND_TOPIC, items("more", 60, 8))
    p.close()
    p = KafkaProducer(transactional_id=f"cleaner-txn-{SECOND_TOPIC}", **common)
    p.init_transactions()
    for i, commit in enumerate((False, True)):
        p.begin_transaction()
        _send(p, SECOND_TOPIC, items(f"more-txn{i}", 10, 4), flush_every=4)
        p.commit_transaction() if commit else p.abort_transaction()
    p.close()
    p = KafkaProducer(**common)
    _send(p, SECOND_TOPIC, items("more-tail", 120, 9))
    p.close()


def _checkpoint(logdir: Path) -> dict[str, int]:
    path = logdir / "cleaner-offset-checkpoint"
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    out = {}
    for line in lines[2:]:
        topic, part, offset = line.split()
        out[f"{topic}-{part}"] = int(offset)
    return out


def _active_base(partition: Path) -> int:
    return max(int(p.stem) for p in partition.glob("*.log"))


def _cleanable_end(partition: Path, lag: int) -> int:
    """Where the cleaner's checkpoint ends up: the active segment's base offset, or with a compaction
    lag the base offset of the first segment holding a record stamped within the lag of now."""
    if lag <= 0:
        return _active_base(partition)
    _, records = _dump(partition)
    recent = min((r["offset"] for r in records if r["timestamp"] > time.time() * 1000 - lag),
                 default=None)
    bases = sorted(int(p.stem) for p in partition.glob("*.log"))
    if recent is None:
        return bases[-1]
    return max(b for b in bases if b <= recent)


#: files a partition copy leaves out: segments still waiting for asynchronous deletion, the
#: cleaner's work files, and the broker's producer snapshots and checkpoints (kseg compact does not write them)
TRANSIENT = ("*.deleted", "*.cleaned", "*.swap", "*.snapshot", "leader-epoch-checkpoint", "partition.metadata")


def _copy(logdir: Path, dest: Path, partitions: list[str]) -> None:
    for name in partitions:
        shutil.copytree(logdir / name, dest / name, ignore=shutil.ignore_patterns(*TRANSIENT))


def _clean(release: str, workdir: Path, partitions: list[str], clean_timeout: float,
           extra: dict[str, Any] | None = None) -> tuple[int, int]:
    """Start the broker again with the cleaner on, wait until it cleaned ``partitions`` up to their active
    segments, stop it; the wall-clock window (ms) of all that."""
    logdir = workdir / "broker" / "data"
    active = {p: _cleanable_end(logdir / p, lag_ms(p)) for p in partitions}
    broker = brokers.Broker(release, workdir / "broker", {
        "log.cleaner.enable": "true", "log.cleaner.backoff.ms": 100, "log.cleaner.threads": 1, **(extra or {})})
    start_ms = int(time.time() * 1000)
    try:
        broker.start()
        deadline = time.monotonic() + clean_timeout
        while True:
            cp = _checkpoint(logdir)
            if all(cp.get(p, -1) >= active[p] for p in partitions):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"cleaner checkpoint {cp} does not reach {active} after {clean_timeout}s\n"
                                   f"{broker.logs()}")
            time.sleep(0.5)
        time.sleep(1.0)  # let a cleaning that may follow start and finish
    finally:
        broker.stop()
    return start_ms, int(time.time() * 1000)


def _produce(release: str, workdir: Path, what) -> None:
    broker = brokers.Broker(release, workdir / "broker", {"log.cleaner.enable": "false"})
    try:
        broker.start()
        what(broker.bootstrap)
    except BaseException:
        print(f"Kafka {brokers.version(release)} run failed; files in {workdir}\n{broker.logs()}", file=sys.stderr)
        raise
    finally:
        broker.stop()


def run_scenario(release: str, workdir: Path, clean_timeout: float = 90.0, second: bool = True,
                 third: bool = True) -> dict[str, Any]:
    """Broker runs, "before"/"after" copies (and "before2"/"after2" of the second cleaning, "before3"/"after3"
    of the key-map one) in ``workdir``; returns the manifest (also written there as manifest.json)."""
    logdir = workdir / "broker" / "data"
    partitions = [f"{t}-{PARTITION}" for t in topics_for(release) if t != SECOND_TOPIC]
    _produce(release, workdir, lambda bootstrap: produce(bootstrap, release))
    _copy(logdir, workdir / "before", partitions)
    window = _clean(release, workdir, [*partitions, f"{SECOND_TOPIC}-{PARTITION}"], clean_timeout)
    _copy(logdir, workdir / "after", partitions)
    manifest: dict[str, Any] = {
        "release": release, "kafka_version": brokers.version(release), "partitions": partitions,
        "window_ms": list(window), "checkpoint": _checkpoint(logdir), "settings": settings(release)}
    if second:
        # the second cleaning: its first cleaning stamped delete horizons that have passed by now
        part = [f"{SECOND_TOPIC}-{PARTITION}"]
        _produce(release, workdir, produce_more)
        _copy(logdir, workdir / "before2", part)
        window2 = _clean(release, workdir, part, clean_timeout)
        _copy(logdir, workdir / "after2", part)
        manifest["second"] = {
            "release": release, "kafka_version": brokers.version(release), "partitions": part,
            "window_ms": list(window2), "previous_window_ms": list(window),
            "checkpoint": _checkpoint(logdir), "settings": settings(release, SHORT_RETENTION_MS)}
    if third:
        # the third cleaning: the dirty range has more distinct keys than the dedupe buffer holds: rounds
        part = [f"{MAP_TOPIC}-{PARTITION}"]
        _produce(release, workdir, lambda bootstrap: produce_map(bootstrap, release))
        _copy(logdir, workdir / "before3", part)
        window3 = _clean(release, workdir, part, clean_timeout, {"log.cleaner.dedupe.buffer.size": MAP_BUFFER_BYTES})
        _copy(logdir, workdir / "after3", part)
        manifest["third"] = {
            "release": release, "kafka_version": brokers.version(release), "partitions": part,
            "window_ms": list(window3), "checkpoint": _checkpoint(logdir),
            "settings": {**settings(release), "segment_bytes": 3 * MAP_SEGMENT_BYTES,
                         "key_map_bytes": MAP_BUFFER_BYTES, "single_pass": False}}
    (workdir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


# --------------------------------------------------------------------------- comparison

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex")


def kseg_compact(before: Path, out: Path, manifest: dict[str, Any], now_ms: int | None = None,
                 single_pass: bool = True, partitions: list[str] | None = None) -> None:
    """``kseg compact`` of every partition of ``before`` (or of ``partitions``) into ``out``, told the
    broker's settings (``--single-pass``: one broker cleaning)."""
    s = manifest["settings"]
    now_ms = manifest["window_ms"][0] if now_ms is None else now_ms
    single_pass = single_pass and s.get("single_pass", True)
    key_map = ["--key-map-bytes", str(s["key_map_bytes"])] if "key_map_bytes" in s else []
    for part in partitions or manifest["partitions"]:
        lag = s.get("min_compaction_lag_ms_by_partition", {}).get(part, s["min_compaction_lag_ms"])
        rc, _, err = checks.run_kseg(
            ["compact", str(before / part), "-o", str(out / part), "--now-ms", str(now_ms),
             "--delete-retention-ms", str(s["delete_retention_ms"]), "--segment-bytes", str(s["segment_bytes"]),
             "--min-compaction-lag-ms", str(lag), *(["--single-pass"] * single_pass), *key_map,
             "--index-interval-bytes", str(s["index_interval_bytes"])], cwd=out.parent)
        assert rc == 0, err.decode()


def _dump(partition: Path) -> tuple[list[dict], list[dict]]:
    """The batches and records of a partition folder (cached: inputs are read many times, outputs are new)."""
    return _dump_cached(str(partition.resolve()))


@functools.lru_cache(maxsize=64)
def _dump_cached(partition: str) -> tuple[list[dict], list[dict]]:
    rc, out, err = checks.run_kseg(["dump", "--records", "--format", "jsonl", "--payload", "base64", partition],
                                   cwd=Path(partition).parent)
    assert rc == 0, err.decode()
    batches, records = [], []
    for line in out.decode().splitlines():
        obj = json.loads(line)
        if obj.get("type") == "batch":
            obj["file"] = Path(obj["file"]).name
            batches.append(obj)
        elif obj.get("type") == "record":
            records.append(obj)
    return batches, records


def _horizons(partition: Path) -> set[int]:
    return {b["delete_horizon_ms"] for b in _dump(partition)[0] if b.get("delete_horizon_ms") is not None}


def compare_partition(got: Path, want: Path, manifest: dict[str, Any], clock_exact: bool = False,
                      earlier: set[int] = frozenset()) -> list[str]:
    """Every difference of kseg's output (``got``) from the broker's cleaned partition (``want``).

    ``clock_exact``: kseg ran with the cleaner's own clock, so the ``.log`` files must be byte-identical.
    ``earlier``: delete horizons an earlier cleaning stamped (already in the input), not in this window.
    """
    name = want.name
    problems: list[str] = []
    files = lambda d: sorted(p.name for p in d.iterdir() if p.suffix in SEGMENT_SUFFIXES)  # noqa: E731
    if files(got) != files(want):
        problems.append(f"{name}: segment files: kseg {files(got)} broker {files(want)}")
    ret = manifest["settings"]["delete_retention_ms"]
    lo, hi = (t + ret for t in manifest["window_ms"])
    gb, gr = _dump(got)
    wb, wr = _dump(want)
    gmap = {b["base_offset"]: b for b in gb}
    # a batch of a codec in CODEC_OUTPUT_MAY_DIFFER may differ in size and CRC (its payload decompressed
    # must not), and so may a compressed one with another delete horizon (other timestamp deltas, compressed):
    # the batches after it in its file move by as much, and that file's index entries with them
    shift: dict[str, int] = {}  # file -> how far kseg's batches lie behind the broker's so far
    moved: dict[int, int] = {}  # offset -> that shift at the broker's batch holding it
    loose: set[str] = set()  # files holding such a batch whose bytes differ
    for b in wb:
        k = gmap.pop(b["base_offset"], None)
        where = f"{name}: batch {b['base_offset']}..{b['last_offset']}"
        if k is None:
            problems.append(f"{where}: kept by the broker, missing in kseg's output")
            continue
        wh, kh = b.get("delete_horizon_ms"), k.get("delete_horizon_ms")
        if (wh is None) != (kh is None):
            problems.append(f"{where}: delete horizon broker {wh} kseg {kh}")
        elif wh is not None and wh not in earlier and not lo <= wh <= hi:
            problems.append(f"{where}: broker delete horizon {wh} outside the window {lo}..{hi}")
        skip = {"crc", "delete_horizon_ms", "position"} if wh != kh else {"delete_horizon_ms", "position"}
        delta = shift.get(b["file"], 0)
        tolerated = b.get("codec") in checks.CODEC_OUTPUT_MAY_DIFFER and b.get("codec") == k.get("codec")
        if (tolerated and b["crc"] != k["crc"]) or (wh != kh and b.get("codec") != "none"):
            # (another horizon: other timestamp deltas, so other compressed bytes of any codec)
            skip |= {"crc", "size"}
            loose.add(b["file"])
            shift[b["file"]] = delta + k["size"] - b["size"]
            if wh == kh and _payload(got / k["file"], k["position"]) != _payload(want / b["file"], b["position"]):
                problems.append(f"{where}: {b['codec']} payload decompressed differs from the broker's")
        moved.update(dict.fromkeys(range(b["base_offset"], b["last_offset"] + 1), delta))
        if k["position"] != b["position"] + delta:
            shifted = f" ({delta:+} for the resized batches before it)" if delta else ""
            problems.append(f"{where}: position broker {b['position']}{shifted} kseg {k['position']}")
        for field in sorted(set(b) | set(k)):
            if field not in skip and b.get(field) != k.get(field):
                problems.append(f"{where}: {field} broker {b.get(field)!r} kseg {k.get(field)!r}")
    for b in gmap.values():
        problems.append(f"{name}: batch {b['base_offset']}..{b['last_offset']}: in kseg's output only")
    gmap_r = {r["offset"]: r for r in gr}
    for r in wr:
        k = gmap_r.pop(r["offset"], None)
        r = {**r, "batch_position": r["batch_position"] + moved.get(r["offset"], 0)}
        if k is None:
            problems.append(f"{name}: record {r['offset']} (key {r.get('key')!r}) kept by the broker only")
        elif k != r:
            problems.append(f"{name}: record {r['offset']}: broker {r} kseg {k}")
    for r in gmap_r.values():
        problems.append(f"{name}: record {r['offset']} (key {r.get('key')!r}) kept by kseg only")
    if clock_exact:
        for w in sorted(want.glob("*.log")):
            g = got / w.name
            if w.name not in loose and g.exists() and g.read_bytes() != w.read_bytes():
                problems.append(f"{name}/{w.name}: not byte-identical with the cleaner's clock")
    for suffix in (".index", ".timeindex", ".txnindex"):
        for w in sorted(want.glob(f"*{suffix}")):
            g = got / w.name
            if suffix != ".txnindex" and shift.get(f"{w.stem}.log"):
                continue  # positions moved: the index entries fall on other batches
            if g.exists() and g.read_bytes() != w.read_bytes():
                problems.append(f"{name}/{w.name}: {len(g.read_bytes())} bytes from kseg, "
                                f"{len(w.read_bytes())} from the broker, not the same")
    return problems


def _payload(segment: Path, position: int) -> bytes:
    """The decompressed payload of the batch at ``position`` of a ``.log`` file."""
    batch = next(b for b in scan_entries(segment.read_bytes()).batches if b.position == position)
    return payload_bytes(batch, limit=1 << 24)[0]


def cleaner_clock(before: Path, after: Path, manifest: dict[str, Any],
                  partitions: list[str] | None = None) -> int | None:
    """The clock of the broker's cleaning of ``partitions`` (default: all), from the delete horizons it
    stamped (those not in ``before`` already), or None when it stamped none or several values."""
    horizons: set[int] = set()
    for part in partitions or manifest["partitions"]:
        horizons |= _horizons(after / part) - _horizons(before / part)
    if len(horizons) != 1:
        return None
    return horizons.pop() - manifest["settings"]["delete_retention_ms"]


def compare(before: Path, after: Path, out: Path, manifest: dict[str, Any],
            now_ms: int | str | None = None) -> dict[str, list[str]]:
    """Partition -> differences of ``kseg compact before`` from ``after``, with the clock ``now_ms``
    (default: the window's start; "cleaner": the cleaner's own clock, then the logs must be byte-identical).

    The cleaner cleans one partition at a time with its clock read then: a partition whose cleaning
    stamped a delete horizon is compared with that clock; one that stamped none (v1 data, nothing to
    stamp) with the earliest clock of the others, which its cleaning does not depend on."""
    lo, hi = manifest["window_ms"]
    clocks: dict[str, Any] = {p: now_ms for p in manifest["partitions"]}
    exact = now_ms == "cleaner"
    if exact:
        clocks = {p: cleaner_clock(before, after, manifest, [p]) for p in manifest["partitions"]}
        known = [c for c in clocks.values() if c is not None] or [lo]  # nothing stamped: no clock needed
        assert all(lo <= c <= hi for c in known), f"the cleaner's clocks {known} are outside the window {lo}..{hi}"
        clocks = {p: min(known) if c is None else c for p, c in clocks.items()}
    out_diffs = {}
    for part, clock in clocks.items():
        kseg_compact(before, out, manifest, clock, partitions=[part])
        out_diffs[part] = compare_partition(out / part, after / part, manifest, exact, _horizons(before / part))
    return out_diffs


def stages(manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """("", the first cleaning's manifest), ("2", the second's) and ("3", the key-map one's) when there
    are: the suffix of the before/after folders and what to compare them with."""
    return [("", manifest)] + [(n, manifest[k]) for n, k in (("2", "second"), ("3", "third")) if k in manifest]


CORPUS = brokers.REPO / "fixtures" / "kafka-cleaner"


def write_corpus(release: str, workdir: Path) -> Path:
    """A new broker run into ``fixtures/kafka-cleaner/<release>/`` (before/, after/, manifest.json)."""
    manifest = run_scenario(release, workdir)
    dest = CORPUS / release
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for name in ("before", "after", "before2", "after2", "before3", "after3", "manifest.json"):
        if (workdir / name).exists():
            (shutil.copytree if name != "manifest.json" else shutil.copy)(workdir / name, dest / name)
    for stage, m in stages(manifest):
        diffs = compare(dest / f"before{stage}", dest / f"after{stage}", workdir / f"out{stage}", m, "cleaner")
        for part, d in diffs.items():
            print(f"{release} {part} cleaning {stage or 1}: {len(d)} differences from the broker's cleaner",
                  *d, sep="\n")
    return dest


if __name__ == "__main__":  # python tests/kafka/cleaning.py [RELEASE...]: new corpus
    import tempfile

    for rel in sys.argv[1:] or brokers.LIVE_DEFAULT:
        with tempfile.TemporaryDirectory(prefix=f"kseg-cleaner-{rel}-") as tmp:
            write_corpus(rel, Path(tmp))
