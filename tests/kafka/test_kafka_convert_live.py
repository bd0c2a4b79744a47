"""Live tier: a real Kafka 3.9.2 broker judges ``kseg down-convert`` and ``kseg up-convert``.

3.9 is the last release that converts message formats: it serves old Fetch
versions by down-converting v2 batches (Fetch v0/v1 get magic 0, v2/v3 get
magic 1; ``KafkaApis.maybeConvertFetchedData``, ``LazyDownConversionRecords``,
``RecordsUtil.downConvert``) and it up-converts magic 0/1 message sets produced
into newer-format topics (``LogValidator``). One broker runs per module; all
its traffic happens in the module fixture, then it is stopped and each test
compares.

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
skipped as consumers skip them: see ``fetch_all``). The concatenated messages
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
(``--partition-leader-epoch``) and, on LogAppendTime topics, the append time
(``--log-append-time``, from the produce response). Batch boundaries are the
broker's too (one v2 batch per produce request): kseg converts each request's
message set on its own.

Needs ``java`` and ``mvn``; skipped otherwise.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import brokers
import pytest

_why = brokers.java_available()
if _why is None:
    try:
        brokers.fetch("3.9")
    except brokers.KafkaUnavailable as exc:
        _why = str(exc).splitlines()[0]
if _why:
    pytest.skip(f"live Kafka conversion tier skipped: {_why}", allow_module_level=True)

import checks  # noqa: E402
from checks import CODEC_OUTPUT_MAY_DIFFER  # noqa: E402
import traffic  # noqa: E402  (needs kafka-python, which the test extra installs)
from kafka import KafkaAdminClient, KafkaProducer  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402
from kafka.protocol.old.fetch import FetchRequest, FetchResponse  # noqa: E402
from kafka.protocol.old.produce import ProduceRequest, ProduceResponse  # noqa: E402

from kseg.formats.attributes import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, LOG_APPEND_TIME  # noqa: E402
from kseg.log.decode import scan_entries  # noqa: E402
from kseg.log.encode import build_legacy_message_set, build_legacy_wrapper  # noqa: E402
from kseg.log.records import batch_records, payload_bytes  # noqa: E402
from kseg.log.segment import segment_file_name  # noqa: E402
from kseg.model import Batch, make_record  # noqa: E402

RELEASE = "3.9"
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
#: Fetch version -> the magic the broker serves
FETCH_MAGIC = {0: 0, 1: 0, 2: 1, 3: 1}


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
    """One Produce request of an old message set and what the broker answered."""

    topic: str
    magic: int
    codec: str
    records: tuple  # (timestamp, key, value) per message
    base_offset: int
    log_append_time: int  # -1 on CreateTime topics

    @property
    def name(self) -> str:
        return f"{self.topic}/magic{self.magic}-{self.codec}@{self.base_offset}"


@dataclass
class Scenario:
    log_dir: Path
    fetched: dict[tuple[str, int], bytes] = field(default_factory=dict)  # (topic, fetch version) -> messages
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


def _produce_v2_batches(bootstrap: str) -> None:
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


def fetch_all(wire: Wire, version: int, topic: str) -> bytes:
    """Every complete message an old consumer gets, fetching on after the last complete one.

    As a consumer does, an entry that ends below the position is skipped: when the
    fetch offset falls on a control batch, 3.9 serves the next data batch twice
    (``LazyDownConversionRecords`` caches the first converted chunk, which skipped
    the control batch, but then steps over one batch only before converting again).
    """
    out = bytearray()
    offset = 0
    for _ in range(1000):
        error, high_watermark, records = wire.fetch(version, topic, offset)
        assert error == 0, f"{topic} fetch v{version} at {offset}: error {error}"
        start = offset
        for entry in complete_entries(records):
            if last_offset(entry) >= offset:
                out += entry.raw
                offset = last_offset(entry) + 1
        if offset == start or offset >= high_watermark:
            break  # the end, or nothing after it but control batches
    return bytes(out)


def _produce_old(wire: Wire, scenario: Scenario) -> None:
    for n, (topic, magic, codec) in enumerate(UP_REQUESTS):
        records = _legacy_records(5 + n % 3, traffic.BASE_TS + n * 100_000, f"{topic}-{magic}-{codec}")
        message_set = legacy_message_set(magic, codec, records, 0)
        for _ in range(50):  # the topic's leadership may still be on its way
            error, base, lat = wire.produce(topic, message_set)
            if error not in (3, 5, 6):  # unknown topic, leader not available, not leader
                break
            time.sleep(0.2)
        assert error == 0, f"produce magic {magic} {codec} to {topic}: error {error}"
        scenario.produced.append(Produced(topic, magic, codec, records, base, lat))


def run_scenario(workdir: Path) -> Scenario:
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
                    scenario.fetched[topic, version] = fetch_all(wire, version, topic)
            for version in (0, 3):  # what precedes the zstd batch is served, then the zstd batch is refused
                error, _, records = wire.fetch(version, "down-zstd", 0)
                following = max((last_offset(e) + 1 for e in complete_entries(records)), default=0)
                error_there, _, _ = wire.fetch(version, "down-zstd", following)
                scenario.zstd[version] = {"error_at_0": error, "next": following, "error_there": error_there}
            _produce_old(wire, scenario)
        finally:
            wire.close()
    return scenario


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Scenario:
    return run_scenario(tmp_path_factory.mktemp("kafka-convert"))


def _partition(scenario: Scenario, topic: str) -> Path:
    return scenario.log_dir / f"{topic}-0"


def _log_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.glob("*.log")))


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


# --------------------------------------------------------------------------- down-conversion


@pytest.mark.parametrize("topic", DOWN_TOPICS)
@pytest.mark.parametrize("version", sorted(FETCH_MAGIC))
def test_live_down_convert_like_old_fetch(scenario: Scenario, topic: str, version: int, tmp_path: Path) -> None:
    """v2 -> v0/v1, and v1 -> v0 (a v1 topic served to Fetch v0/v1; Fetch v2/v3 get its v1 entries as stored)."""
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
    out = tmp_path / f"{topic}-0"
    rc, err = _kseg(["down-convert", str(_partition(scenario, topic)), "-o", str(out), "--to-magic", str(magic),
                     "--no-index"], tmp_path)
    assert rc == 0, err
    problem = compare(_log_bytes(out), want)
    assert problem is None, problem


def test_live_down_convert_drops_what_the_broker_drops(scenario: Scenario, tmp_path: Path) -> None:
    """The transactional batches (committed and aborted) are served, control batches and
    headers are not; kseg's summary counts what it dropped."""
    entries = scan_entries(_log_bytes(_partition(scenario, "down"))).batches
    control = [e for e in entries if e.is_control]
    data = {r.offset for e in entries if not e.is_control for r in batch_records(e)}
    headers = sum(len(r.headers) for e in entries if not e.is_control for r in batch_records(e))
    assert len(control) == 2 and any(e.is_transactional and not e.is_control for e in entries) and headers
    for version in FETCH_MAGIC:
        served = {r.offset for e in scan_entries(scenario.fetched["down", version]).batches
                  for r in batch_records(e)}
        assert served == data, f"fetch v{version}"
    rc, err = _kseg(["down-convert", str(_partition(scenario, "down")), "-o", str(tmp_path / "down-0"),
                     "--to-magic", "1", "--no-index"], tmp_path)
    assert rc == 0 and f"{len(control)} control batches" in err and f"{headers} headers" in err, err


@pytest.mark.parametrize("version", [0, 3])
def test_live_down_convert_zstd_refused(scenario: Scenario, version: int, tmp_path: Path) -> None:
    """The broker serves what precedes a zstd batch and answers UNSUPPORTED_COMPRESSION_TYPE at it;
    kseg refuses the partition with a usage error naming the zstd batch and writes nothing."""
    seen = scenario.zstd[version]
    assert seen["error_at_0"] == 0
    assert seen["error_there"] == UNSUPPORTED_COMPRESSION_TYPE
    entries = scan_entries(_log_bytes(_partition(scenario, "down-zstd"))).batches
    zstd = next(e for e in entries if e.codec_name == "zstd")
    assert seen["next"] == zstd.base_offset
    out = tmp_path / "down-zstd-0"
    rc, err = _kseg(["down-convert", str(_partition(scenario, "down-zstd")), "-o", str(out),
                     "--to-magic", str(FETCH_MAGIC[version])], tmp_path)
    assert rc == 2, err
    assert "zstd" in err and f"at byte {zstd.position}" in err, err
    assert not out.exists()


# --------------------------------------------------------------------------- up-conversion


def _broker_entries(scenario: Scenario, p: Produced) -> bytes:
    entries = scan_entries(_log_bytes(_partition(scenario, p.topic))).batches
    last = p.base_offset + len(p.records) - 1
    return b"".join(bytes(e.raw) for e in entries if p.base_offset <= last_offset(e) <= last)


def _up_ids() -> list[str]:
    return [f"{t}-magic{m}-{c}" for t, m, c in UP_REQUESTS]


@pytest.mark.parametrize("index", range(len(UP_REQUESTS)), ids=_up_ids())
def test_live_up_convert_like_produce(scenario: Scenario, index: int, tmp_path: Path) -> None:
    p = scenario.produced[index]
    to_magic = 1 if p.topic.startswith("up-v1") else 2
    want = _broker_entries(scenario, p)
    assert want, f"{p.name}: the broker wrote nothing for it"
    assert (p.log_append_time > 0) == p.topic.endswith("-lat")
    assert {e.magic for e in scan_entries(want).batches} == {to_magic}
    inp = tmp_path / "in" / f"{p.topic}-0"
    inp.mkdir(parents=True)
    (inp / segment_file_name(p.base_offset)).write_bytes(legacy_message_set(p.magic, p.codec, p.records,
                                                                            p.base_offset))
    out = tmp_path / "out" / f"{p.topic}-0"
    args = ["up-convert", str(inp), "-o", str(out), "--to-magic", str(to_magic), "--no-index",
            "--partition-leader-epoch", "0"]
    if p.log_append_time != -1:
        args += ["--timestamp-type", "log-append", "--log-append-time", str(p.log_append_time)]
    rc, err = _kseg(args, tmp_path)
    assert rc == 0, err
    problem = compare(_log_bytes(out), want)
    assert problem is None, f"{p.name}: {problem}"
