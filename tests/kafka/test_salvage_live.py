"""Live tier: ``kseg salvage`` against a real Kafka 4.3.1 broker's own recovery.

A broker writes a partition of several segments with two idempotent producers and stops
cleanly. Then, for each kind of damage (a zeroed region in the middle of the active segment,
a torn write there, a zeroed region in an older segment):

* a copy of the damaged partition is salvaged;
* the damaged partition is given back to the broker after an unclean shutdown (no
  ``.kafka_cleanshutdown``, no recovery point): its recovery keeps fewer records than
  salvage keeps, and never one salvage lost;
* the broker is started on salvage's output (as after a clean shutdown): it serves exactly
  salvage's records, loads the producer snapshot salvage wrote at the log end (its log says
  so, and says no snapshot failed to load), and ``kafka-transactions describe-producers``
  reports the producers that snapshot holds.

The recovered and lost counts of each case are printed (``-s``) for the salvage guide.
Needs ``java`` and ``mvn``; skipped otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable("4")
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

from click.testing import CliRunner  # noqa: E402
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from kseg.cli.main import main  # noqa: E402
from kseg.companions.read import read_producer_snapshot  # noqa: E402
from kseg.log.records import batch_records  # noqa: E402
from kseg.log.segment import Segment, partition_segments  # noqa: E402

RELEASE = "4"
TOPIC = "orders"
RECORDS = 900
SEGMENT_BYTES = 16384
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
CHECKPOINTS = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint")


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """A broker's work folder after it wrote ``orders-0`` and stopped cleanly."""
    work = tmp_path_factory.mktemp("salvage-live") / "broker"
    with brokers.Broker(RELEASE, work) as b:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        try:
            admin.create_topics([NewTopic(TOPIC, 1, 1, topic_configs={"internal.segment.bytes": str(SEGMENT_BYTES)})])
        finally:
            admin.close()
        producers = [KafkaProducer(bootstrap_servers=b.bootstrap, enable_idempotence=True, acks="all",
                                   linger_ms=5, batch_size=1024) for _ in range(2)]
        for i in range(RECORDS):
            producers[i // 50 % 2].send(TOPIC, key=f"order-{i}".encode(), value=f"value {i} ".encode() * 8,
                                        partition=0)
            if i % 25 == 24:
                producers[i // 50 % 2].flush()
        for p in producers:
            p.close()
    assert len(partition_segments(work / "data" / f"{TOPIC}-0")) >= 4
    return work


def _records(folder: Path) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for log in partition_segments(folder) for b in Segment(log).batches()
            for r in batch_records(b)]


def _consume(bootstrap: str) -> list[tuple[int, bytes | None, bytes | None]]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=8000)
    tp = TopicPartition(TOPIC, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    end = c.end_offsets([tp])[tp]
    out = []
    if end:
        for m in c:
            out.append((m.offset, m.key, m.value))
            if m.offset >= end - 1:
                break
    c.close()
    return out


def _batches(log: Path) -> list[tuple[int, int]]:
    return [(b.position, b.size) for b in Segment(log).batches()]


def _damage(folder: Path, kind: str) -> str:
    """Damage the partition in place; what was done, in words."""
    logs = partition_segments(folder)
    log = logs[-1] if kind.endswith("active") else logs[1]
    data = log.read_bytes()
    spans = _batches(log)
    pos, size = spans[len(spans) // 2]
    if kind.startswith("zeros"):
        start, n = pos + size // 2, 3 * size
        log.write_bytes(data[:start] + bytes(n) + data[start + n:])
        return f"{n} bytes zeroed at byte {start} of {log.name}"
    # torn: a batch cut short (its tail never written), the later batches intact after it
    cut = pos + size // 3
    log.write_bytes(data[:cut] + data[pos + size:])
    return f"batch at byte {pos} of {log.name} torn after {cut - pos} of {size} bytes"


def _describe_producers(bootstrap: str) -> dict[int, tuple[int, int]]:
    """Producer id -> (epoch, last sequence), as ``kafka-transactions describe-producers`` says."""
    cmd = brokers._java(RELEASE, "org.apache.kafka.tools.TransactionsCommand", "--bootstrap-server", bootstrap,
                        "describe-producers", "--topic", TOPIC, "--partition", "0")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        cells = line.split()
        if cells and cells[0].isdigit():
            out[int(cells[0])] = (int(cells[1]), int(cells[3]))
    return out


@pytest.mark.parametrize("kind", ["zeros-active", "torn-active", "zeros-older"])
def test_salvage_keeps_more_than_the_broker_and_the_broker_serves_it(written: Path, tmp_path: Path,
                                                                    kind: str) -> None:
    work = tmp_path / "broker"
    shutil.copytree(written, work, ignore=shutil.ignore_patterns("*.out"))
    data = work / "data"
    part = data / f"{TOPIC}-0"
    truth = _records(part)
    saved = {name: (data / name).read_bytes() for name in CHECKPOINTS}
    what = _damage(part, kind)
    damaged = tmp_path / "damaged" / part.name
    shutil.copytree(part, damaged)

    out = tmp_path / "salvaged" / part.name
    res = CliRunner().invoke(main, ["salvage", str(damaged), "-o", str(out), "--format", "json"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.output)
    salvaged = _records(out)
    assert set(salvaged) < set(truth)

    # The broker's recovery, after an unclean shutdown, of every segment (no recovery point).
    (data / CLEAN_SHUTDOWN).unlink()
    (data / "recovery-point-offset-checkpoint").unlink()
    b = brokers.Broker(RELEASE, work)
    try:
        b.start()
        recovered = _consume(b.bootstrap)
    finally:
        b.stop()
    assert set(recovered) <= set(salvaged) and len(recovered) < len(salvaged), (what, len(recovered), len(salvaged))

    # The broker on salvage's output, as after a clean shutdown: the checkpoints as they were.
    shutil.rmtree(part)
    shutil.copytree(out, part)
    for name, content in saved.items():
        (data / name).write_bytes(content)
    assert (data / CLEAN_SHUTDOWN).exists()
    leo = report["partitions"][0]["log_end_offset"]
    snapshot = read_producer_snapshot(out / f"{leo:020d}.snapshot")
    b = brokers.Broker(RELEASE, work)
    try:
        b.start()
        served = _consume(b.bootstrap)
        described = _describe_producers(b.bootstrap)
        log = (work / "kafka.out").read_text(errors="replace")
    finally:
        b.stop()
    assert served == salvaged
    loaded = [line for line in log.splitlines() if "Loading producer state from snapshot file" in line
              and f"{TOPIC}-0" in line]
    assert loaded and f"{leo:020d}.snapshot" in loaded[-1], loaded
    assert not re.search(rf"Failed to load producer snapshot.*{TOPIC}-0", log)
    assert described == {e.producer_id: (e.epoch, e.last_sequence) for e in snapshot.entries}
    assert len(described) == 2
    print(f"\n{kind}: {what}; {len(truth)} records written: salvage kept {len(salvaged)} "
          f"(lost {len(truth) - len(salvaged)}), the broker's recovery kept {len(recovered)} "
          f"(lost {len(truth) - len(recovered)})")


# The writers that take a whole log directory and write one (each with its options); repair and
# salvage take it damaged. compact cleans the active segments too: the KRaft metadata log's only
# one among them (kseg copies that log as it is).
LOG_DIR_WRITERS = {"repair": ["--format", "json"], "salvage": ["--format", "json"], "recompress": ["--codec", "zstd"],
                   "compact": ["--include-active"], "rebase": ["--base-offset", "1000"],
                   "up-convert": ["--to-magic", "2"]}
# The writers of log directories not here, and why.
NOT_STARTED_ON = {"down-convert": "Kafka 4 no longer serves magic 0 or 1 (tests/kafka/test_kafka_convert_live.py)",
                  "build": "builds partitions from JSON lines, not from a log directory (a broker starts on its "
                           "output in tests/kafka/test_build_accepted_live.py)"}


def test_every_log_dir_writer_has_its_row() -> None:
    from test_failure_matrix import COMMANDS

    writers = {n for n, c in COMMANDS.items() if c.role == "writer" and c.output_check == "verify"}
    assert writers == set(LOG_DIR_WRITERS) | set(NOT_STARTED_ON)


@pytest.mark.parametrize("command", sorted(LOG_DIR_WRITERS))
def test_the_broker_starts_on_a_rewritten_log_directory_as_it_is(written: Path, tmp_path: Path, command: str) -> None:
    """The broker's whole log directory (its KRaft metadata log included) through each writer
    (repair and salvage after damage): the output, taken as it is (its meta.properties, bootstrap
    and checkpoints are the command's), is a log directory the broker starts on, serving exactly
    the records kseg reads in it."""
    work = tmp_path / "broker"
    shutil.copytree(written, work, ignore=shutil.ignore_patterns("*.out"))
    data = work / "data"
    damaged = command in ("repair", "salvage")
    if damaged:
        _damage(data / f"{TOPIC}-0", "zeros-active")
    out = tmp_path / "out"
    res = CliRunner().invoke(main, [command, str(data), "-o", str(out), *LOG_DIR_WRITERS[command]])
    assert res.exit_code == (1 if damaged else 0), (res.output, res.stderr)
    kept = _records(out / f"{TOPIC}-0")
    assert kept and (out / "meta.properties").is_file()
    shutil.rmtree(data)
    shutil.copytree(out, data)
    b = brokers.Broker(RELEASE, work)
    try:
        b.start()
        served = _consume(b.bootstrap)
        log = (work / "kafka.out").read_text(errors="replace")
    finally:
        b.stop()
    assert served == kept
    trouble = brokers.log_trouble(log)
    assert not trouble, trouble[:3]
