"""Test data: broker-like segments of every magic x codec, built with kseg's encoder
(itself checked against kafka-python in test_oracle), and kafka-python as a reader."""

from __future__ import annotations

from pathlib import Path

from kafka.record.memory_records import MemoryRecords

from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.model import Record, make_record
from kseg.log.segment import segment_file_name

LEGACY_CODECS = ("none", "gzip", "snappy", "lz4")
V2_CODECS = LEGACY_CODECS + ("zstd",)
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
CASES = [(m, c) for m in (0, 1) for c in LEGACY_CODECS] + [(2, c) for c in V2_CODECS]
T0 = 1_700_000_000_000


def sample_records(first_offset: int, n: int, *, magic: int, headers: bool = True) -> list[Record]:
    """Keys and values with nulls and empties; v2 gets headers (one with a null value)."""
    out = []
    for i in range(n):
        off = first_offset + i
        key = None if i % 7 == 3 else (b"" if i % 11 == 5 else f"key-{off % 5}".encode())
        value = None if i % 9 == 4 else f"value-{off}-\u00e9".encode()
        hdrs = [("h", f"x{i}".encode()), ("n", None)] if (magic == 2 and headers and i % 3 == 0) else []
        ts = -1 if magic == 0 else T0 + off * 10 + (i % 3)
        out.append(make_record(off, ts, key, value, hdrs, magic=magic))
    return out


def entries(magic: int, codec: str, first_offset: int, n_batches: int = 3, per: int = 4) -> bytes:
    """Entries with consecutive offsets: one wrapper/batch per ``per`` records when compressed
    (v2: always batches), one message per record for uncompressed legacy."""
    out = bytearray()
    off = first_offset
    cid = CODEC_IDS[codec]
    for _ in range(n_batches):
        recs = sample_records(off, per, magic=magic)
        if magic == 2:
            out += build_v2_batch(recs, codec=cid, partition_leader_epoch=0)
        elif cid == 0:
            for r in recs:
                out += build_legacy_message(r.offset, magic, 0, r.stored_timestamp, r.key, r.value)
        else:
            out += build_legacy_wrapper(recs, magic=magic, codec=cid)
        off += per
    return bytes(out)


def write_partition(folder: Path, magic: int, codec: str, *, segments: int = 2, first_offset: int = 0,
                    n_batches: int = 3, per: int = 4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    off = first_offset
    for _ in range(segments):
        (folder / segment_file_name(off)).write_bytes(entries(magic, codec, off, n_batches, per))
        off += n_batches * per
    return folder


def kafka_python_records(data: bytes) -> list[tuple]:
    """(offset, timestamp, key, value, headers) of every record, via kafka-python, CRCs validated."""
    out = []
    mr = MemoryRecords(data)
    while True:
        batch = mr.next_batch()
        if batch is None:
            break
        assert batch.validate_crc(), "kafka-python rejects a CRC"
        for r in batch:
            headers = tuple((k, v) for k, v in r.headers) if hasattr(r, "headers") and r.headers else ()
            out.append((r.offset, r.timestamp, r.key, r.value, headers))
    return out


def folder_records(folder: Path) -> list[tuple]:
    out = []
    for seg in sorted(folder.glob("*.log")):
        out.extend(kafka_python_records(seg.read_bytes()))
    return out


def metadata_log(folder: Path, values: list[tuple[dict, int]]) -> Path:
    """A ``__cluster_metadata`` segment of one batch: each (record data, Kafka record type id) as
    the controller frames it (frame version 1, type, record version 0)."""
    from kseg.decoders.metadata import RECORDS
    from kseg.decoders.schema import encode

    folder.mkdir(parents=True, exist_ok=True)
    framed = [bytes([1, type_id, 0]) + encode(RECORDS[type_id], value, 0) for value, type_id in values]
    (folder / segment_file_name(0)).write_bytes(
        build_v2_batch([make_record(i, T0, None, v) for i, v in enumerate(framed)]))
    return folder
