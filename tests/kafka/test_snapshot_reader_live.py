"""Live: what kseg says Kafka's producer-snapshot reader makes of a snapshot's bytes
(``kseg.companions.kafka_snapshot``, which ``kseg-dump-log`` prints on stderr as the tool does) against
``ProducerStateManager.readSnapshot`` itself on the JVM with the release's jars, over snapshots a
broker wrote damaged every way its reader branches: cut at every length, bytes flipped, the version
and the entry count set to edge and random values, bytes appended, and whole entries added or removed
with the CRC made right again (which the reader takes). ``fixtures/kafka-damaged-companions`` holds the
tool's own lines on a few of these; this reaches every branch. Needs ``java`` and ``mvn``; skipped
otherwise (one JVM per release, a few seconds).
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import brokers
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kseg.checksums import crc32c  # noqa: E402
from kseg.companions.kafka_snapshot import kafka_snapshot_problem  # noqa: E402
from kseg.kafka_releases import kafka_release  # noqa: E402
from test_dump_log_dropin import kseg_version  # noqa: E402

_why = brokers.unavailable()
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

SOURCE = Path(__file__).resolve().parent.parent / "java" / "ReadSnapshot.java"
SNAPSHOT = brokers.REPO / "fixtures" / "kafka-4" / "logdir" / "v2-0" / "00000000000000000104.snapshot"
ENTRY = 46
INT16_EDGES = [-32768, -255, -1, 0, 1, 2, 254, 32767]
INT32_EDGES = [-(1 << 31), -16777214, -1, 0, 1, 2, 3, 253, 65282, (1 << 31) - 1]


def _with_crc(data: bytes) -> bytes:
    """The snapshot with its CRC made right for the bytes after it (as a writer would have)."""
    return data[:2] + crc32c(data[6:]).to_bytes(4, "big") + data[6:]


def _variants() -> list[bytes]:
    rnd = random.Random(104)
    good = SNAPSHOT.read_bytes()
    out = [good]
    out += [good[:n] for n in range(len(good))]  # every cut
    for v in INT16_EDGES + [rnd.randrange(-32768, 32768) for _ in range(20)]:
        out.append(v.to_bytes(2, "big", signed=True) + good[2:])
        out.append(_with_crc(v.to_bytes(2, "big", signed=True) + good[2:]))
    for c in INT32_EDGES + [rnd.randrange(-(1 << 31), 1 << 31) for _ in range(20)]:
        out.append(good[:6] + c.to_bytes(4, "big", signed=True) + good[10:])
        out.append(_with_crc(good[:6] + c.to_bytes(4, "big", signed=True) + good[10:]))
    entries = good[10:]
    for extra in (b"", b"\0", b"\xff" * 7, entries[:ENTRY], entries[:ENTRY] + b"\x01"):
        out.append(good + extra)
        out.append(_with_crc(good + extra))
    for n in range(0, 5):  # n whole entries, the count saying so or not
        body = (entries * 3)[:n * ENTRY]
        for count in (n, n + 1, max(n - 1, 0)):
            out.append(_with_crc(good[:6] + count.to_bytes(4, "big") + body))
            out.append(_with_crc(good[:6] + count.to_bytes(4, "big") + body[:-3]))
    for _ in range(300):  # a few bytes flipped anywhere
        data = bytearray(good)
        for _ in range(rnd.randint(1, 3)):
            data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        out.append(bytes(data))
    return out


@pytest.mark.parametrize("release", brokers.live_releases())
def test_snapshot_verdicts_are_kafkas(release: str, tmp_path: Path) -> None:
    variants = _variants()
    paths = []
    for i, data in enumerate(variants):
        p = tmp_path / f"{i:05d}.snapshot"
        p.write_bytes(data)
        paths.append(p)
    lib = brokers.fetch(release)
    proc = subprocess.run(["java", *brokers.QUICK_START_OPTS, "-cp", f"{lib}/*", str(SOURCE)],
                          input="".join(f"{p}\n" for p in paths), capture_output=True, text=True, check=True)
    kafka = proc.stdout.splitlines()
    assert len(kafka) == len(variants)
    assert not [line for line in kafka if line.startswith("THROWS")], "the reader threw outside its contract"
    generated = kafka_release(kseg_version(release)).snapshot_generated_reader
    ours = [kafka_snapshot_problem(data, generated) for data in variants]
    wrong = [(i, k, o) for i, (k, o) in enumerate(zip(kafka, ours))
             if (k[len("CORRUPT "):] if k.startswith("CORRUPT ") else None) != o]
    assert wrong == [], wrong[:5]
    assert sum(k.startswith("OK") for k in kafka) > 5 and sum(k.startswith("CORRUPT") for k in kafka) > 300
