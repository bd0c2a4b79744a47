"""kseg on what other clients than kafka-python made a Kafka broker write (no Java needed).

``fixtures/kafka-clients/<release>/`` (written by ``tests/kafka/clients.py --write``): a
Kafka broker's partitions after librdkafka (every codec, idempotence, transactions
committed and aborted, binary keys, headers with null values, a ~500 KB value) and the
Java client's tools (``ProducerPerformance`` per codec and transactional, ``ConsoleProducer``
with headers) produced to it, what librdkafka consumers read back (``read_uncommitted`` and
``read_committed``) and what the release's DumpLogSegments printed (``golden/``). Here kseg must

* verify every file (``kseg verify``, ``kseg index --check``),
* give the records each consumer received (``kseg dump -r --format jsonl``; for
  ``read_committed`` without the records of the transactions ``kseg txn`` says were aborted),
* print byte for byte what DumpLogSegments printed (``kseg dump --format kafka``),
* count the transactions the producers committed and aborted (``kseg txn``): librdkafka's
  as the scenario made them, the Java tool's as the markers DumpLogSegments printed.

The checks are functions of the corpus folder, so the live test (``tests/kafka/test_kafka_clients_live.py``)
runs the same ones on a fresh broker run.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import brokers  # noqa: E402
import checks  # noqa: E402
import clients  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "kafka-clients"
CORPORA = sorted(p for p in FIXTURES.glob("*") if (p / "golden" / "manifest.json").is_file())


def _large(value: str | None) -> str | dict | None:
    """A value as records.json keeps it (latin-1 text, or length and SHA-256 past clients.LARGE)."""
    if value is None or len(value) <= clients.LARGE:
        return value
    raw = value.encode("latin-1")
    return {"length": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def kseg_txn(partition: Path) -> dict:
    rc, out, err = checks.run_kseg(["txn", "--all", "--format", "json", str(partition)], cwd=partition.parent)
    assert rc == 0, (out + err).decode(errors="replace")[-3000:]
    (doc,) = json.loads(out)["partitions"]
    return doc


def kseg_consumed(partition: Path, isolation: str) -> list[dict]:
    """The records a consumer of ``isolation`` level gets from the partition, per kseg: ``dump -r --format
    jsonl`` without control records, for read_committed also without the records of aborted transactions
    (matched by producer id and offset range, from ``kseg txn``)."""
    aborted = []
    if isolation == "read_committed":
        aborted = [(t["producer_id"], t["first_offset"], t["last_offset"])
                   for t in kseg_txn(partition)["transactions"] if t["state"] == "aborted"]
    rc, out, err = checks.run_kseg(["dump", "-r", "--format", "jsonl", "--payload", "base64", str(partition)],
                                   cwd=partition.parent)
    assert rc == 0, err.decode()
    records, producer = [], None
    for line in out.splitlines():
        obj = json.loads(line)
        if obj.get("type") == "batch":
            producer, control = obj["producer_id"], obj["is_control"]
            continue
        if obj.get("type") != "record" or control:
            continue
        if any(pid == producer and first <= obj["offset"] <= last for pid, first, last in aborted):
            continue
        records.append({
            "offset": obj["offset"], "timestamp": obj["timestamp"], "timestamp_type": obj["timestamp_type"],
            "key": _large(checks._latin1(obj["key"])), "value": _large(checks._latin1(obj["value"])),
            "headers": [{"key": h["key"], "value": _large(checks._latin1(h["value"]))}
                        for h in obj.get("headers") or []],
        })
    return records


def markers_in_golden(root: Path, partition: str) -> dict[str, int]:
    """COMMIT and ABORT markers DumpLogSegments printed for the partition's segments (--deep-iteration)."""
    text = b"".join(p.read_bytes() for p in (root / "golden" / partition).glob("*.log.deep.stdout")).decode()
    return {kind: len(re.findall(rf"endTxnMarker: {kind}\b", text)) for kind in ("COMMIT", "ABORT")}


# --------------------------------------------------------------------------- checks (corpus and live tier)

def check_verify(root: Path) -> None:
    proc = subprocess.run([checks.KSEG, "verify", str(root / "logdir")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rc, out, err = checks.run_kseg(["index", "--check", "logdir"], cwd=root)
    assert rc == 0 and b"error" not in out, (out + err).decode(errors="replace")[-3000:]


def check_records(root: Path, isolation: str, partition: str) -> None:
    received = json.loads((root / "records.json").read_text())[isolation][partition]
    assert received, f"the {isolation} consumer received nothing from {partition}"
    assert kseg_consumed(root / "logdir" / partition, isolation) == received


def check_transactions(root: Path, partition: str) -> None:
    doc = kseg_txn(root / "logdir" / partition)
    markers = markers_in_golden(root, partition)
    assert (doc["committed"], doc["aborted"], doc["open"]) == (markers["COMMIT"], markers["ABORT"], 0)
    committed, aborted = clients.TRANSACTIONS[partition]
    assert doc["aborted"] == aborted
    if committed is not None:
        assert doc["committed"] == committed
    else:
        assert doc["committed"] >= 1


def dump_cases(root: Path) -> list[tuple[str, str, dict]]:
    manifest = json.loads((root / "golden" / "manifest.json").read_text())
    return [(manifest["release"], e["file"], e) for e in manifest["entries"]]


def check_dump(root: Path, tool: str, entry: dict) -> None:
    golden = root / "golden"
    checks.compare_dump(tool, entry["file"], entry["combo"], root / "logdir", (golden / entry["stdout"]).read_bytes(),
                        (golden / entry["stderr"]).read_bytes(), entry["exit"])


# --------------------------------------------------------------------------- the corpus tests

def _id(root: Path) -> str:
    return root.name


@pytest.mark.parametrize("root", CORPORA, ids=_id)
def test_verify(root: Path) -> None:
    check_verify(root)


def _record_cases() -> list:
    return [pytest.param(root, isolation, partition, id=f"{root.name}:{isolation}:{partition}")
            for root in CORPORA
            for isolation, parts in json.loads((root / "records.json").read_text()).items()
            for partition in sorted(parts)]


@pytest.mark.parametrize("root,isolation,partition", _record_cases())
def test_records_as_consumed(root: Path, isolation: str, partition: str) -> None:
    check_records(root, isolation, partition)


@pytest.mark.parametrize("root,partition", [pytest.param(r, p, id=f"{r.name}:{p}") for r in CORPORA
                                            for p in clients.TRANSACTIONS])
def test_transactions_counted(root: Path, partition: str) -> None:
    check_transactions(root, partition)


def _dump_cases() -> list:
    out = []
    for root in CORPORA:
        for tool, rel, entry in dump_cases(root):
            reason = checks.known_difference(tool, rel, entry["combo"])
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(root, tool, entry, marks=marks, id=f"{root.name}:{rel}:{entry['combo']}"))
    return out


@pytest.mark.parametrize("root,tool,entry", _dump_cases())
def test_dump_like_kafka(root: Path, tool: str, entry: dict) -> None:
    check_dump(root, tool, entry)


def release_of(root: Path) -> str:
    return json.loads((root / "golden" / "manifest.json").read_text())["release"]


def check_shows_the_clients(root: Path) -> None:
    """The corpus holds what it is for: every codec from both clients, null header values (from the Java
    client where the release's ConsoleProducer parses headers), a large value, aborted records the
    read_committed consumer did not get, and the Java producer's transactions in the protocol version
    ``clients.JAVA_TOOLS`` says the release speaks (v2 bumps the producer epoch at every transaction's
    end, KIP-890; v1 keeps it)."""
    tools = clients.JAVA_TOOLS[release_of(root)]
    golden = root / "golden"
    for partition in ("rdkafka-codecs-0", "java-perf-0"):
        text = b"".join(p.read_bytes() for p in (golden / partition).glob("*.log.plain.stdout")).decode()
        # upper case in 2.8's tool (CompressionType's enum names), lower case since
        assert {m.lower() for m in re.findall(r"compresscodec: (\w+)", text)} == set(clients.CODECS), partition
    records = json.loads((root / "records.json").read_text())
    uncommitted, committed = records["read_uncommitted"], records["read_committed"]
    assert len(committed["rdkafka-txn-0"]) < len(uncommitted["rdkafka-txn-0"])
    for partition in ("rdkafka-codecs-0", *(["java-console-0"] if tools.headers else [])):
        assert any(h["value"] is None for r in uncommitted[partition] for h in r["headers"]), partition
    assert any(isinstance(r["value"], dict) and r["value"]["length"] >= 400_000
               for r in uncommitted["rdkafka-large-0"])
    epochs = [t["producer_epoch"] for t in kseg_txn(root / "logdir" / "java-txn-0")["transactions"]]
    assert len(epochs) >= 2, epochs
    if tools.transactions == 2:
        assert epochs == sorted(set(epochs)), epochs
    else:
        assert len(set(epochs)) == 1, epochs


def test_corpus_per_release() -> None:
    """Each corpus is the release its folder names, a release the scenario knows; every release the scenario
    knows has its corpus, and the scenario knows every release the project runs (``brokers.RELEASES``)."""
    assert CORPORA, "fixtures/kafka-clients holds no corpus"
    for root in CORPORA:
        assert release_of(root) == root.name and root.name in clients.JAVA_TOOLS, root
    missing = [r for r in clients.JAVA_TOOLS if r not in {root.name for root in CORPORA}]
    assert not missing, f"no corpus for {missing} (tests/kafka/clients.py --release R --write fixtures/kafka-clients/R)"
    rowless = [r for r in brokers.RELEASES if r not in clients.JAVA_TOOLS]
    assert not rowless, f"releases without a clients.JAVA_TOOLS row: {rowless}"
    assert clients.DEFAULT_RELEASE in clients.JAVA_TOOLS


@pytest.mark.parametrize("root", CORPORA, ids=_id)
def test_corpus_shows_the_clients(root: Path) -> None:
    check_shows_the_clients(root)
