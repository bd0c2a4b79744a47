"""A real Kafka 3.9.2 broker's message-format conversions, and the checks ``kseg down-convert`` and
``kseg up-convert`` must pass against them (shared by the live test and the committed corpus test).

3.9 is the last release that converts message formats: it serves old Fetch
versions by down-converting v2 batches (Fetch v0/v1 get magic 0, v2/v3 get
magic 1; ``KafkaApis.maybeConvertFetchedData``, ``LazyDownConversionRecords``,
``RecordsUtil.downConvert``) and it up-converts magic 0/1 message sets produced
into newer-format topics (``LogValidator``). :func:`run_scenario` runs one
broker, sends all the traffic below, stops it and returns a :class:`Scenario`:
everything the checks compare. :func:`write_corpus` keeps one such run as
``fixtures/kafka-convert/3.9/`` and :func:`load_corpus` reads it back into the
same :class:`Scenario`, so the live test (``test_kafka_convert_live.py``) and the
corpus test (``tests/test_kafka_convert_corpus.py``, no Java) run the same
``check_*`` functions. ``python tests/kafka/converting.py``
(``make kafka-convert-corpus``) writes a new corpus.

Down-conversion. kafka-python producers write v2 batches to a v2 topic
(none, gzip, snappy, lz4; keys, null keys, tombstones, empty values, headers;
a transaction that commits and one that aborts, so transactional batches and
control batches), to a LogAppendTime topic and, as an 0.10 client, to a v1
topic (v1 -> v0 for Fetch v0/v1, served as stored to v2/v3). Old Fetch
requests, built with kafka-python's protocol classes and sent over a raw
socket, read every partition from offset 0; each response keeps only its
complete messages (the broker truncates its lazily converted send at the size
it announced, or pads it with an "overflow" entry of offset -1: a partial
trailing message either way) and the next fetch starts after the last complete
one (entries ending below it, which 3.9 sends again after a control batch, are
skipped as consumers skip them: see :func:`fetch_all`). The concatenated messages
must be byte for byte ``kseg down-convert --to-magic 0|1`` of the broker's own
segment; snappy entries field by field (``CODEC_OUTPUT_MAY_DIFFER``). zstd: the
broker answers UNSUPPORTED_COMPRESSION_TYPE at a zstd batch and kseg refuses
the partition (exit 2) naming the batch.

Up-conversion. Produce v2 requests carry magic 0 and magic 1 message sets
(built with kseg's encoder: uncompressed and every legacy codec) into a v2
topic, a v1 topic (``message.format.version=0.10.2``) and LogAppendTime
variants of both. Each request's message set is then written again as a
segment at the offset the broker assigned, and ``kseg up-convert`` of it must
give the broker's entries byte for byte. What is the broker's choice and is
handed to kseg: the base offset (the log end), the leader epoch
(``--partition-leader-epoch``, from the partition's ``leader-epoch-checkpoint``;
a v1 topic keeps none, and its entries carry none) and, on LogAppendTime topics,
the append time (``--log-append-time``, from the produce response). Batch
boundaries are the broker's too (one v2 batch per produce request): kseg converts
each request's message set on its own.

The corpus (``fixtures/kafka-convert/3.9/``): ``logdir/`` (the ``.log`` files of
the partitions old consumers read, and of the zstd one), ``fetched/<topic>-v<N>.bin``
(the complete messages Fetch vN got, concatenated), ``produced/<NN>-<topic>-magic<M>-<codec>/``
(``sent.bin``: the message set of the Produce request; ``input.bin``: the same
messages at the broker's offset, kseg's input; ``broker.bin``: the entries the broker
wrote for it) and ``manifest.json`` (every fetch's position, error and high
watermark, what the zstd fetches met, each request's offset, epoch and append time).
"""

from __future__ import annotations

import json
import shutil
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brokers
import checks
from checks import CODEC_OUTPUT_MAY_DIFFER  # the one tolerated difference, shared with the cleaner's check

from kseg.companions.read import parse_leader_epoch_checkpoint
from kseg.formats.attributes import (CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CONTROL_ABORT, CONTROL_COMMIT,
                                     LOG_APPEND_TIME)
from kseg.log.control import control_info
from kseg.log.decode import scan_entries
from kseg.log.encode import build_legacy_message_set, build_legacy_wrapper
from kseg.log.records import batch_records, payload_bytes
from kseg.log.segment import segment_file_name
from kseg.model import Batch, make_record

RELEASE = "3.9"
CORPUS = brokers.REPO / "fixtures" / "kafka-convert" / RELEASE
UNSUPPORTED_COMPRESSION_TYPE = 76
FETCH_BYTES = 1 << 20  # the whole partition is read; the converted send still truncates (see above)
V1_FORMAT = {"message.format.version": "0.10.2"}
LOG_APPEND = {"message.timestamp.type": "LogAppendTime"}
TOPICS: dict[str, dict[str, str]] = {
    "down": {},
    "down-lat": dict(LOG_APPEND),
    "down-zstd": {},
    "down-v1": dict(V1_FORMAT),
    "up-v2": {},
    "up-v2-lat": dict(LOG_APPEND),
    "up-v1": dict(V1_FORMAT),
    "up-v1-lat": {**V1_FORMAT, **LOG_APPEND},
}
CODECS = {"none": CODEC_NONE, "gzip": CODEC_GZIP, "snappy": CODEC_SNAPPY, "lz4": CODEC_LZ4}
#: the topics old consumers read whole
DOWN_TOPICS = ["down", "down-lat", "down-v1"]
#: the partitions the corpus keeps: what old consumers read, and the one with a zstd batch
KEPT_PARTITIONS = [*DOWN_TOPICS, "down-zstd"]
#: Fetch version -> the magic the broker serves
FETCH_MAGIC = {0: 0, 1: 0, 2: 1, 3: 1}
#: the Fetch versions sent at the zstd partition
ZSTD_FETCHES = (0, 3)


# --------------------------------------------------------------------------- the wire


class Wire:
    """Kafka requests over one plain socket: kafka-python's protocol classes, nothing of its client."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.correlation = 0

    def call(self, request, response_type):
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id="kseg-convert-live")
        self.sock.sendall(request.encode(header=True, framed=True))
        (size,) = struct.unpack(">i", self._read(4))
        response = response_type.decode(self._read(size), header=True)
        assert response.header.correlation_id == self.correlation
        return response

    def _read(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()

    def fetch(self, version: int, topic: str, offset: int) -> tuple[int, int, bytes]:
        """(error code, high watermark, records bytes) of one old Fetch of partition 0."""
        from kafka.protocol.old.fetch import FetchRequest, FetchResponse

        partitions = [(topic, [(0, offset, FETCH_BYTES)])]
        if version < 3:
            request = FetchRequest[version](replica_id=-1, max_wait_ms=100, min_bytes=0, topics=partitions)
        else:
            request = FetchRequest[version](replica_id=-1, max_wait_ms=100, min_bytes=0, max_bytes=FETCH_BYTES,
                                            topics=partitions)
        response = self.call(request, FetchResponse[version])
        [(name, [(index, error, high_watermark, records)])] = response.topics
        assert (name, index) == (topic, 0)
        return error, high_watermark, records or b""

    def produce(self, topic: str, message_set: bytes) -> tuple[int, int, int]:
        """(error code, base offset, log append time) of one Produce v2 request (acks=1)."""
        from kafka.protocol.old.produce import ProduceRequest, ProduceResponse

        request = ProduceRequest[2](required_acks=1, timeout=10_000, topics=[(topic, [(0, message_set)])])
        response = self.call(request, ProduceResponse[2])
        [(name, [(index, error, base_offset, log_append_time)])] = response.topics
        assert (name, index) == (topic, 0)
        return error, base_offset, log_append_time


def complete_entries(records: bytes) -> list[Batch]:
    """The complete messages of a fetch response; a partial trailing one (a truncated
    message or the broker's overflow entry, offset -1) is left out."""
    return scan_entries(records, final=False).batches


def last_offset(entry: Batch) -> int:
    """The last offset an entry holds (a legacy wrapper's offset is its last inner one)."""
    return entry.base_offset + (entry.last_offset_delta or 0)


# --------------------------------------------------------------------------- the scenario


@dataclass(frozen=True)
class Produced:
    """One Produce request of an old message set, what the broker answered and what it wrote."""

    topic: str
    magic: int
    codec: str
    base_offset: int
    leader_epoch: int | None  # the partition's epoch at base_offset (None: the topic keeps no epochs, v1)
    log_append_time: int  # -1 on CreateTime topics
    sent: bytes  # the message set of the request (offsets from 0)
    input: bytes  # the same messages at base_offset: kseg's input
    broker: bytes  # the entries the broker wrote for it

    @property
    def name(self) -> str:
        return f"{self.topic}/magic{self.magic}-{self.codec}@{self.base_offset}"

    @property
    def to_magic(self) -> int:
        return 1 if self.topic.startswith("up-v1") else 2


@dataclass
class Scenario:
    log_dir: Path  # <topic>-0 folders
    fetched: dict[tuple[str, int], bytes] = field(default_factory=dict)  # (topic, fetch version) -> messages
    fetches: dict[tuple[str, int], list[dict[str, int]]] = field(default_factory=dict)  # the same: each fetch
    zstd: dict[int, dict[str, int]] = field(default_factory=dict)  # fetch version -> what it met
    produced: list[Produced] = field(default_factory=list)


def legacy_message_set(magic: int, codec: str, records: tuple, base: int) -> bytes:
    """A magic 0/1 message set at offsets ``base``.. (a client sends base 0; the broker assigns)."""
    recs = [make_record(base + i, ts if magic else -1, key, value, magic=magic) for i, (ts, key, value)
            in enumerate(records)]
    if codec == "none":
        return build_legacy_message_set(recs, magic=magic)
    return build_legacy_wrapper(recs, magic=magic, codec=CODECS[codec])


def _legacy_records(n: int, start_ts: int, salt: str) -> tuple:
    out = []
    for i in range(n):
        key = None if i % 4 == 2 else f"{salt}-key-{i}".encode()
        value = None if i % 5 == 3 else (f"{salt} value {i} " * (1 + i % 3)).encode()
        out.append((start_ts + (i * 7919) % 5000, key, value))  # timestamps not in order
    return tuple(out)


#: (topic, magic, codec) of every Produce request of an old message set
UP_REQUESTS = [
    *(("up-v2", magic, codec) for magic in (0, 1) for codec in CODECS),
    ("up-v2-lat", 0, "none"), ("up-v2-lat", 0, "gzip"), ("up-v2-lat", 1, "none"), ("up-v2-lat", 1, "lz4"),
    *(("up-v1", 0, codec) for codec in CODECS),
    ("up-v1-lat", 0, "none"), ("up-v1-lat", 0, "snappy"),
]


def up_ids() -> list[str]:
    return [f"{t}-magic{m}-{c}" for t, m, c in UP_REQUESTS]


def _produce_v2_batches(bootstrap: str) -> None:
    import traffic
    from kafka import KafkaProducer

    common = {"bootstrap_servers": bootstrap, "linger_ms": 20, "batch_size": 1024}
    ts = traffic.BASE_TS
    for codec in (None, "gzip", "snappy", "lz4"):
        p = KafkaProducer(compression_type=codec, **common)
        traffic.send(p, "down", traffic.sample_records(f"down-{codec}", 30, ts))
        p.close()
        ts += 100_000
    p = KafkaProducer(transactional_id="convert-txn", compression_type="gzip", **common)
    p.init_transactions()
    for i, commit in enumerate((True, False)):
        p.begin_transaction()
        traffic.send(p, "down", traffic.sample_records(f"txn{i}", 12, ts))
        (p.commit_transaction if commit else p.abort_transaction)()
        ts += 100_000
    p.close()
    p = KafkaProducer(**common)  # after the abort marker: the log does not end on a control batch
    traffic.send(p, "down", traffic.sample_records("tail", 5, ts))
    p.close()
    for codec in (None, "gzip"):
        p = KafkaProducer(compression_type=codec, **common)
        traffic.send(p, "down-lat", traffic.sample_records(f"lat-{codec}", 20, ts))
        p.close()
    for codec in (None, "gzip", "lz4"):  # magic 1 messages (Produce v2), as an 0.10 client wrote them
        p = KafkaProducer(compression_type=codec, api_version=(0, 10, 1), **common)
        traffic.send(p, "down-v1", traffic.sample_records(f"v1-{codec}", 15, ts), headers=False)
        p.close()
    for codec, n in ((None, 6), ("zstd", 6), (None, 3)):
        p = KafkaProducer(compression_type=codec, **common)
        traffic.send(p, "down-zstd", traffic.sample_records(f"zstd-{codec}", n, ts))
        p.close()


def fetch_all(wire: Wire, version: int, topic: str) -> tuple[bytes, list[dict[str, int]]]:
    """Every complete message an old consumer gets, fetching on after the last complete one;
    and each fetch (its offset, error, high watermark, response size, entries kept).

    As a consumer does, an entry that ends below the position is skipped: when the
    fetch offset falls on a control batch, 3.9 serves the next data batch twice
    (``LazyDownConversionRecords`` caches the first converted chunk, which skipped
    the control batch, but then steps over one batch only before converting again).
    """
    out = bytearray()
    fetches = []
    offset = 0
    for _ in range(1000):
        error, high_watermark, records = wire.fetch(version, topic, offset)
        assert error == 0, f"{topic} fetch v{version} at {offset}: error {error}"
        start = offset
        kept = 0
        for entry in complete_entries(records):
            if last_offset(entry) >= offset:
                out += entry.raw
                offset = last_offset(entry) + 1
                kept += 1
        fetches.append({"offset": start, "error": error, "high_watermark": high_watermark,
                        "response_bytes": len(records), "entries_kept": kept})
        if offset == start or offset >= high_watermark:
            break  # the end, or nothing after it but control batches
    return bytes(out), fetches


def _produce_old(wire: Wire) -> list[tuple[str, int, str, bytes, int, int, int]]:
    """Each request: (topic, magic, codec, message set, message count, base offset, append time)."""
    import traffic

    answers = []
    for n, (topic, magic, codec) in enumerate(UP_REQUESTS):
        records = _legacy_records(5 + n % 3, traffic.BASE_TS + n * 100_000, f"{topic}-{magic}-{codec}")
        message_set = legacy_message_set(magic, codec, records, 0)
        for _ in range(50):  # the topic's leadership may still be on its way
            error, base, lat = wire.produce(topic, message_set)
            if error not in (3, 5, 6):  # unknown topic, leader not available, not leader
                break
            time.sleep(0.2)
        assert error == 0, f"produce magic {magic} {codec} to {topic}: error {error}"
        answers.append((topic, magic, codec, message_set, len(records), base, lat))
    return answers


def log_bytes(folder: Path) -> bytes:
    """A partition's ``.log`` files, concatenated in offset order."""
    return b"".join(p.read_bytes() for p in sorted(folder.glob("*.log")))


def _leader_epoch(partition: Path, offset: int) -> int | None:
    """The partition's leader epoch at ``offset`` by its ``leader-epoch-checkpoint`` (None without one)."""
    path = partition / "leader-epoch-checkpoint"
    entries = parse_leader_epoch_checkpoint(path.read_bytes()).entries if path.exists() else []
    epochs = [e.epoch for e in entries if e.start_offset <= offset]  # in offset order
    return epochs[-1] if epochs else None


def _messages(message_set: bytes) -> list:
    return [r for e in scan_entries(message_set).batches for r in batch_records(e)]


def _written(log_dir: Path, topic: str, message_set: bytes, count: int, base: int, lat: int, magic: int,
             codec: str) -> Produced:
    """A request's :class:`Produced`, from the broker's partition after it stopped."""
    partition = log_dir / f"{topic}-0"
    last = base + count - 1
    broker = b"".join(bytes(e.raw) for e in scan_entries(log_bytes(partition)).batches
                      if base <= last_offset(e) <= last)
    records = tuple((r.timestamp, r.key, r.value) for r in _messages(message_set))
    return Produced(topic, magic, codec, base, _leader_epoch(partition, base), lat, message_set,
                    legacy_message_set(magic, codec, records, base), broker)


def run_scenario(workdir: Path) -> Scenario:
    """One broker run: topics, traffic, old fetches and produce requests; stopped before it returns."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    broker = brokers.Broker(RELEASE, workdir / "broker")
    scenario = Scenario(broker.log_dir)
    with broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.create_topics([NewTopic(name, 1, 1, topic_configs=cfg) for name, cfg in TOPICS.items()])
        finally:
            admin.close()
        _produce_v2_batches(broker.bootstrap)
        wire = Wire(broker.port)
        try:
            for topic in DOWN_TOPICS:
                for version in FETCH_MAGIC:
                    scenario.fetched[topic, version], scenario.fetches[topic, version] = \
                        fetch_all(wire, version, topic)
            for version in ZSTD_FETCHES:  # what precedes the zstd batch is served, then the zstd batch is refused
                error, _, records = wire.fetch(version, "down-zstd", 0)
                following = max((last_offset(e) + 1 for e in complete_entries(records)), default=0)
                error_there, _, _ = wire.fetch(version, "down-zstd", following)
                scenario.zstd[version] = {"error_at_0": error, "next": following, "error_there": error_there}
            answers = _produce_old(wire)
        finally:
            wire.close()
    scenario.produced = [_written(broker.log_dir, topic, message_set, count, base, lat, magic, codec)
                         for topic, magic, codec, message_set, count, base, lat in answers]
    return scenario


# --------------------------------------------------------------------------- the corpus


def _produced_dir(index: int, p: Produced) -> str:
    return f"{index:02d}-{p.topic}-magic{p.magic}-{p.codec}"


def write_corpus(workdir: Path, dest: Path = CORPUS) -> Path:
    """A new broker run kept in ``dest``: logdir/, fetched/, produced/, manifest.json."""
    scenario = run_scenario(workdir)
    shutil.rmtree(dest, ignore_errors=True)
    for topic in KEPT_PARTITIONS:  # the .log files only: kseg down-convert reads nothing else
        (dest / "logdir" / f"{topic}-0").mkdir(parents=True)
        for seg in sorted((scenario.log_dir / f"{topic}-0").glob("*.log")):
            shutil.copy(seg, dest / "logdir" / f"{topic}-0" / seg.name)
    (dest / "fetched").mkdir()
    fetches = []
    for (topic, version), raw in sorted(scenario.fetched.items()):
        name = f"{topic}-v{version}.bin"
        (dest / "fetched" / name).write_bytes(raw)
        fetches.append({"topic": topic, "fetch_version": version, "magic": FETCH_MAGIC[version], "file": name,
                        "fetches": scenario.fetches[topic, version]})
    produced = []
    for index, p in enumerate(scenario.produced):
        folder = dest / "produced" / _produced_dir(index, p)
        folder.mkdir(parents=True)
        for name in ("sent", "input", "broker"):
            (folder / f"{name}.bin").write_bytes(getattr(p, name))
        produced.append({"dir": folder.name, "topic": p.topic, "magic": p.magic, "codec": p.codec,
                         "base_offset": p.base_offset, "leader_epoch": p.leader_epoch,
                         "log_append_time": p.log_append_time})
    manifest = {"release": RELEASE, "kafka_version": brokers.version(RELEASE), "topics": TOPICS,
                "partitions": [f"{t}-0" for t in KEPT_PARTITIONS], "fetched": fetches,
                "zstd": {str(v): seen for v, seen in sorted(scenario.zstd.items())}, "produced": produced}
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return dest


def load_corpus(root: Path = CORPUS) -> Scenario:
    """A kept run as the :class:`Scenario` the checks take."""
    manifest = json.loads((root / "manifest.json").read_text())
    scenario = Scenario(root / "logdir")
    for f in manifest["fetched"]:
        key = (f["topic"], f["fetch_version"])
        scenario.fetched[key] = (root / "fetched" / f["file"]).read_bytes()
        scenario.fetches[key] = f["fetches"]
    scenario.zstd = {int(v): seen for v, seen in manifest["zstd"].items()}
    for p in manifest["produced"]:
        folder = root / "produced" / p["dir"]
        scenario.produced.append(Produced(
            p["topic"], p["magic"], p["codec"], p["base_offset"], p["leader_epoch"], p["log_append_time"],
            *((folder / f"{name}.bin").read_bytes() for name in ("sent", "input", "broker"))))
    return scenario


# --------------------------------------------------------------------------- comparing


def _kseg(args: list[str], cwd: Path) -> tuple[int, str]:
    rc, _, err = checks.run_kseg(args, cwd)
    return rc, err.decode(errors="replace")


def _describe(raw: bytes) -> list[str]:
    """Entries, one line each, for a readable assertion message."""
    lines = []
    for e in scan_entries(raw, final=False).batches:
        lines.append(f"@{e.position} offset {e.base_offset} magic {e.magic} attrs {e.attributes:#x} "
                     f"ts {e.max_timestamp} crc {e.crc:#010x} size {e.size}")
    return lines


#: the fields of an entry outside its payload, CRC and size
_FIELDS = ("base_offset", "magic", "attributes", "max_timestamp", "partition_leader_epoch", "last_offset_delta",
           "base_timestamp", "producer_id", "producer_epoch", "base_sequence", "record_count")


def compare(got: bytes, want: bytes) -> str | None:
    """None when kseg's entries are the broker's: byte for byte, or for a codec of
    ``CODEC_OUTPUT_MAY_DIFFER`` every field and the decompressed payload; else what differs."""
    if got == want:
        return None
    mine, theirs = scan_entries(got).batches, scan_entries(want).batches
    if len(mine) != len(theirs):
        return _first_difference(got, want)
    for a, b in zip(mine, theirs):
        if bytes(a.raw) == bytes(b.raw):
            continue
        if a.codec_name not in CODEC_OUTPUT_MAY_DIFFER or any(getattr(a, f) != getattr(b, f) for f in _FIELDS) \
                or payload_bytes(a, limit=1 << 24)[0] != payload_bytes(b, limit=1 << 24)[0]:
            return _first_difference(got, want)
    return None


def _first_difference(got: bytes, want: bytes) -> str:
    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return (f"first difference at byte {at} (kseg {len(got)} bytes, broker {len(want)} bytes)\n"
            f"kseg:\n  " + "\n  ".join(_describe(got)) + "\nbroker:\n  " + "\n  ".join(_describe(want)))


# --------------------------------------------------------------------------- the checks


def partition(scenario: Scenario, topic: str) -> Path:
    return scenario.log_dir / f"{topic}-0"


def check_down_convert(scenario: Scenario, topic: str, version: int, tmp: Path) -> None:
    """v2 -> v0/v1, and v1 -> v0 (a v1 topic served to Fetch v0/v1; Fetch v2/v3 get its v1 entries as stored):
    ``kseg down-convert`` of the partition is what Fetch ``version`` served."""
    magic = FETCH_MAGIC[version]
    want = scenario.fetched[topic, version]
    assert want, f"fetch v{version} of {topic} returned no messages"
    served = scan_entries(want).batches
    assert {e.magic for e in served} == {magic}
    if topic != "down-v1" or magic == 0:  # what the broker converted: every codec, both timestamp types
        assert {e.codec_name for e in served} == ({"none", "gzip", "lz4"} if topic == "down-v1" else
                                                  {"none", "gzip"} if topic == "down-lat" else
                                                  {"none", "gzip", "snappy", "lz4"})
    if topic == "down-lat" and magic == 1:
        assert all(e.timestamp_type == LOG_APPEND_TIME for e in served)
    out = tmp / f"{topic}-0"
    rc, err = _kseg(["down-convert", str(partition(scenario, topic)), "-o", str(out), "--to-magic", str(magic),
                     "--no-index"], tmp)
    assert rc == 0, err
    problem = compare(log_bytes(out), want)
    assert problem is None, problem


def check_down_convert_drops(scenario: Scenario, tmp: Path) -> None:
    """The transactional batches (committed and aborted) are served, control batches and
    headers are not; kseg's summary counts what it dropped."""
    entries = scan_entries(log_bytes(partition(scenario, "down"))).batches
    control = [e for e in entries if e.is_control]
    data = {r.offset for e in entries if not e.is_control for r in batch_records(e)}
    headers = sum(len(r.headers) for e in entries if not e.is_control for r in batch_records(e))
    assert len(control) == 2 and any(e.is_transactional and not e.is_control for e in entries) and headers
    for version in FETCH_MAGIC:
        served = {r.offset for e in scan_entries(scenario.fetched["down", version]).batches
                  for r in batch_records(e)}
        assert served == data, f"fetch v{version}"
    rc, err = _kseg(["down-convert", str(partition(scenario, "down")), "-o", str(tmp / "down-0"),
                     "--to-magic", "1", "--no-index"], tmp)
    assert rc == 0 and f"{len(control)} control batches" in err and f"{headers} headers" in err, err


def check_zstd_refused(scenario: Scenario, version: int, tmp: Path) -> None:
    """The broker serves what precedes a zstd batch and answers UNSUPPORTED_COMPRESSION_TYPE at it;
    kseg refuses the partition with a usage error naming the zstd batch and writes nothing."""
    seen = scenario.zstd[version]
    assert seen["error_at_0"] == 0
    assert seen["error_there"] == UNSUPPORTED_COMPRESSION_TYPE
    entries = scan_entries(log_bytes(partition(scenario, "down-zstd"))).batches
    zstd = next(e for e in entries if e.codec_name == "zstd")
    assert seen["next"] == zstd.base_offset
    out = tmp / "down-zstd-0"
    rc, err = _kseg(["down-convert", str(partition(scenario, "down-zstd")), "-o", str(out),
                     "--to-magic", str(FETCH_MAGIC[version])], tmp)
    assert rc == 2, err
    assert "zstd" in err and f"at byte {zstd.position}" in err, err
    assert not out.exists()


def check_up_convert(scenario: Scenario, index: int, tmp: Path) -> None:
    """``kseg up-convert`` of a produced message set, at the broker's offset and told its epoch and
    append time, gives the entries the broker wrote for it."""
    p = scenario.produced[index]
    assert (p.topic, p.magic, p.codec) == UP_REQUESTS[index]
    assert p.broker, f"{p.name}: the broker wrote nothing for it"
    assert (p.log_append_time > 0) == p.topic.endswith("-lat")
    assert {e.magic for e in scan_entries(p.broker).batches} == {p.to_magic}
    # kseg's input is the request's messages, only placed at the broker's offset
    sent, given = _messages(p.sent), _messages(p.input)
    assert [r.offset - p.base_offset for r in given] == [r.offset for r in sent] == list(range(len(sent)))
    assert [r._replace(offset=0, crc=None) for r in given] == [r._replace(offset=0, crc=None) for r in sent]
    inp = tmp / "in" / f"{p.topic}-0"
    inp.mkdir(parents=True)
    (inp / segment_file_name(p.base_offset)).write_bytes(p.input)
    out = tmp / "out" / f"{p.topic}-0"
    args = ["up-convert", str(inp), "-o", str(out), "--to-magic", str(p.to_magic), "--no-index"]
    if p.leader_epoch is not None:
        args += ["--partition-leader-epoch", str(p.leader_epoch)]
    if p.log_append_time != -1:
        args += ["--timestamp-type", "log-append", "--log-append-time", str(p.log_append_time)]
    rc, err = _kseg(args, tmp)
    assert rc == 0, err
    problem = compare(log_bytes(out), p.broker)
    assert problem is None, f"{p.name}: {problem}"


def check_coverage(scenario: Scenario) -> None:
    """The run covers what it claims: every legacy codec converted each way, a commit and an abort
    marker with their transactions' batches, LogAppendTime batches, a v1 topic, a zstd batch."""
    down = scan_entries(log_bytes(partition(scenario, "down"))).batches
    assert {e.magic for e in down} == {2} and {e.codec_name for e in down} >= set(CODECS)
    markers = [control_info(batch_records(e)[0]).type_id for e in down if e.is_control]
    assert sorted(markers) == [CONTROL_ABORT, CONTROL_COMMIT], markers
    aborted = next(e for e in down if e.is_control and control_info(batch_records(e)[0]).type_id == CONTROL_ABORT)
    assert any(e.is_transactional and not e.is_control and e.producer_id == aborted.producer_id
               and e.base_offset < aborted.base_offset for e in down), "no aborted data batch"
    records = [r for e in down if not e.is_control for r in batch_records(e)]
    assert any(r.key is None for r in records) and any(r.value is None for r in records)
    assert any(r.value == b"" for r in records) and any(r.headers for r in records)
    lat = scan_entries(log_bytes(partition(scenario, "down-lat"))).batches
    assert lat and all(e.timestamp_type == LOG_APPEND_TIME for e in lat)
    v1 = scan_entries(log_bytes(partition(scenario, "down-v1"))).batches
    assert {e.magic for e in v1} == {1} and {e.codec_name for e in v1} == {"none", "gzip", "lz4"}
    assert "zstd" in {e.codec_name for e in scan_entries(log_bytes(partition(scenario, "down-zstd"))).batches}
    assert set(scenario.fetched) == {(t, v) for t in DOWN_TOPICS for v in FETCH_MAGIC}
    assert set(scenario.zstd) == set(ZSTD_FETCHES)
    assert [(p.topic, p.magic, p.codec) for p in scenario.produced] == UP_REQUESTS
    for magic in (0, 1):
        assert {p.codec for p in scenario.produced if p.magic == magic and p.topic == "up-v2"} == set(CODECS)
    assert {p.codec for p in scenario.produced if p.topic == "up-v1"} == set(CODECS)
    assert all(p.leader_epoch is not None for p in scenario.produced if p.to_magic == 2)
    assert any(p.log_append_time > 0 for p in scenario.produced if p.to_magic == 1)


if __name__ == "__main__":  # python tests/kafka/converting.py: a new fixtures/kafka-convert/3.9
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kseg-convert-") as tmp:
        written = write_corpus(Path(tmp) / "run")
        size = sum(p.stat().st_size for p in written.rglob("*") if p.is_file())
        print(f"{written}: {size // 1024} KiB", file=sys.stderr)
