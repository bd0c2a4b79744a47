"""Regenerate the seed corpora in tests/fuzz/corpus/<target>/ from fixtures/ and the real
broker files (KSEG_REALDATA, default /work/shared/realdata; skipped when absent).

Seeds are small (whole segments up to 8 KiB, records sections and inner message sets
cut out of them, companion files up to 4 KiB), named by where they came from, with
each target's parameter bytes in front (see tests/fuzz/targets.py). Run it only to
refresh the corpus; the fuzzer's own discoveries are not committed.
"""

from __future__ import annotations

import hashlib
import os
import random
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "fuzz"))

from kseg.errors import KsegError  # noqa: E402
from kseg.log import decode  # noqa: E402
from kseg.log.records import payload_bytes  # noqa: E402

CORPUS = ROOT / "tests" / "fuzz" / "corpus"
REALDATA = Path(os.environ.get("KSEG_REALDATA", "/work/shared/realdata"))
MAX_LOG = 8 << 10
MAX_PIECE = 2 << 10
PER_TARGET = 40


def put(target: str, data: bytes, seen: dict, kind: int = 0) -> None:
    if seen.setdefault((target, kind), 0) >= PER_TARGET // (7 if target == "companions" else 1):
        return
    seen.setdefault(target, 0)
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    p = d / hashlib.sha1(data).hexdigest()[:16]
    if not p.exists():
        p.write_bytes(data)
        seen[target] += 1
        seen[(target, kind)] += 1


def index_sound_seeds(log: Path, seen: dict) -> None:
    """A segment's .index and .timeindex with its batch rows (base offset and size cut to a byte
    and two, as the target reads them)."""
    from kseg.companions.check import BatchRows, summarize_batches
    from kseg.log.segment import Segment, base_offset_of

    base = base_offset_of(log)
    if base is None or base > 255 or log.stat().st_size > 0xFFFF:
        return
    rows = BatchRows()
    try:
        rows.extend(summarize_batches(Segment(log).batches())[0])
    except KsegError:
        return
    if len(rows) > 127:
        return
    for kind, suffix in ((0, ".index"), (1, ".timeindex")):
        f = log.with_suffix(suffix)
        if f.is_file() and f.stat().st_size <= MAX_PIECE:
            size = log.stat().st_size
            put("index_sound", bytes([kind | len(rows) << 1, base, size >> 8, size & 0xFF]) + bytes(rows.data)
                + f.read_bytes(), seen, kind)


def logs() -> list[Path]:
    found = sorted((ROOT / "fixtures" / "logdir").rglob("*.log"))
    if REALDATA.is_dir():
        found += sorted(REALDATA.rglob("*.log"))
    return [p for p in found if p.stat().st_size <= MAX_LOG]


def main() -> None:
    seen: dict[str, int] = {}
    for p in logs():
        buf = p.read_bytes()
        put("log", buf, seen)
        put("scan", b"\x81\x00\x00" + buf, seen)
        # resync: final, limits open, from the start; then the same bytes with a stretch zeroed
        put("resync", b"\x01\x00\x00\x00" + buf, seen)
        put("resync", b"\x01\x00\x00\x05" + buf[:len(buf) // 3] + bytes(40) + buf[len(buf) // 3 + 40:], seen)
        put("span_columns", b"\x01" + buf, seen)  # a segment: spans and records to columns
        put("sound_v2_run", b"\x00" + buf, seen)  # a segment from no offset, no base, the fuzz limit
        put("stats_v2_run", b"\x00" + buf, seen)  # a segment, rolled, no checkpoint, the fuzz limit
        put("v2_header_run", b"\x00" + buf, seen)  # a segment: its batches' lines alone
        put("v2_record_run", b"\x00" + buf, seen)  # a segment with its records, the fuzz limit, 4 MB runs
        put("v2_record_run", b"\x04" + buf, seen)  # the same, runs of one batch each
        index_sound_seeds(p, seen)
        put("v2_column_run", b"\x00" + buf, seen)  # a segment, no offset range, control batches stopping
        put("entry_starts", b"\x00\x00\x40" + buf, seen)  # its size as it is, an entry every 64 bytes
        put("entry_starts", b"\x04\x00\x40" + buf, seen, kind=1)  # the same, read a header at a time
        for b in decode.scan_entries(buf).batches:
            try:
                data, _ = payload_bytes(b, limit=1 << 20)
            except KsegError:
                continue
            if len(data) > MAX_PIECE:
                continue
            if b.magic >= 2 and b.codec == 3 and len(b.raw) <= MAX_PIECE:  # lz4: the frame as stored
                put("lz4_frame", b"\x00" + bytes(decode.records_region(b)), seen)
            if b.magic >= 2:
                lat = decode.effective_log_append_time(b)
                head = struct.pack(">bqqB", max(-128, min(127, b.record_count)), b.offset, b.base_timestamp,
                                   lat is not None) + (struct.pack(">q", lat) if lat is not None else b"")
                put("v2_records", head + data, seen)
                if "__consumer_offsets" in str(p) or "__cluster_metadata" in str(p) or "__transaction" in str(p):
                    fam = 0 if "offsets" in str(p) else 2 if "metadata" in str(p) else 1
                    for r in decode.decode_v2_records(data, 0, 0, b.record_count, None) if b.codec == 0 else []:
                        key = r.key or b""
                        if len(key) < 255 and r.value is not None:
                            put("decoders", bytes([fam | (4 if b.is_control else 0), len(key)]) + key + r.value, seen)
            elif b.codec:
                head = bytes([b.magic | (2 if b.offset else 0) | (b.attributes & 8)])
                head += struct.pack(">iq", b.offset & 0x7FFFFFFF, b.timestamp)
                put("legacy", head + data, seen)
    companions = {".index": 0, ".timeindex": 1, ".txnindex": 2, ".snapshot": 3}
    roots = [ROOT / "fixtures"] + ([REALDATA] if REALDATA.is_dir() else [])
    for root in roots:
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.stat().st_size > 4096:
                continue
            which = companions.get(p.suffix)
            if which is None:
                which = {"leader-epoch-checkpoint": 4, "partition.metadata": 5}.get(p.name)
            if which is None:
                continue
            base = int(p.stem) if p.stem.isdigit() else 0
            put("companions", bytes([which]) + struct.pack(">q", base) + p.read_bytes(), seen, which)
    # encoders: a few hand-made parameter strings (the fuzzer builds records from them)
    for i, s in enumerate([b"\x00" * 40, b"\x01" * 40, b"\x03" + b"\x05" * 60, b"\x07\x7f" + bytes(range(90))]):
        put("encoders", s, seen)
    # span_columns, raw spans: parts of a blob with spans over it taken from the bytes that follow
    for s in [b"\x00\x01\x08" + bytes(range(8)) + bytes(200), b"\x00\x03\x20" + bytes(range(32)) * 8,
              b"\x00\x02\x10" + bytes(range(255, 0, -1))]:
        put("span_columns", s, seen, 1)
    # lz4_frame: Kafka's frames of the codec (a stored block among them), without their header
    from kseg.codecs import get_codec

    lz4 = get_codec(3)
    for data in (b"", b"kafka" * 20, bytes(range(256)) * 300, random.Random(0).randbytes(70000)):
        put("lz4_frame", b"\x04" + lz4.compress(data)[7:], seen, 1)
    for name, n in sorted(k for k in seen.items() if isinstance(k[0], str)):
        print(f"{name}: {n} seeds")


if __name__ == "__main__":
    main()
