"""Up-conversion of pre-0.8 (Kafka 0.7) files: logical offsets assigned from a base (spec §2.4).

Each top-level 0.7 message becomes one entry: an uncompressed message one
record (grouped into v2 batches like other legacy messages), a compressed one a
wrapper (v0/v1) or batch (v2) of its payloads, keeping its codec unless --codec says otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from kseg.errors import InputError
from kseg.formats.attributes import (
    CODEC_NONE,
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
)
from kseg.kafka07.read import logical_records
from kseg.log.atomic import check_output
from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.log.listing import LOG_SUFFIX
from kseg.log.segment import segment_file_name
from kseg.model import Record
from kseg.ops.convert import Summary, UpOptions
from kseg.ops.jobs import JobResult, SegmentSink, WriteOptions
from kseg.ops.skips import refuse_for_one_partition


def kafka07_entries(paths: list[Path], o: UpOptions, base_offset: int, s: Summary) -> Iterator[bytes]:
    lat = o.log_append_time
    ts_type = LOG_APPEND_TIME if lat is not None else CREATE_TIME
    ts = NO_TIMESTAMP if lat is None else lat
    pending: list[Record] = []

    def flush() -> Iterator[bytes]:
        nonlocal pending
        if pending:
            codec = o.choice.id_for(CODEC_NONE)
            raw = build_v2_batch(pending, codec=codec, level=o.choice.level, timestamp_type=ts_type,
                                 partition_leader_epoch=o.partition_leader_epoch,
                                 max_timestamp=lat, plugin_id=o.choice.plugin_id, codec_impl=o.choice.codec)
            s.rebuilt += 1
            s.batches_out += 1
            s.records_out += len(pending)
            s.bytes_out += len(raw)
            pending = []
            yield raw

    for msg, records in logical_records(paths, base_offset, o.limit):
        s.batches_in += 1
        s.records_in += len(records)
        codec = o.choice.id_for(msg.codec)
        if o.to_magic == 2:
            if msg.codec == CODEC_NONE:
                pending.append(records[0])
                if len(pending) >= o.batch_records:
                    yield from flush()
                continue
            yield from flush()
            raw = build_v2_batch(records, codec=codec, level=o.choice.level, timestamp_type=ts_type,
                                 partition_leader_epoch=o.partition_leader_epoch,
                                 max_timestamp=lat, plugin_id=o.choice.plugin_id, codec_impl=o.choice.codec)
        else:
            magic = o.to_magic
            attrs = TIMESTAMP_TYPE_MASK if (lat is not None and magic == 1) else 0
            if codec == CODEC_NONE:
                for r in records:
                    raw = build_legacy_message(r.offset, magic, attrs, ts, r.key, r.value)
                    s.batches_out += 1
                    s.records_out += 1
                    s.bytes_out += len(raw)
                    yield raw
                continue
            inner = [r._replace(magic=magic, attributes=attrs, stored_timestamp=ts) for r in records]
            raw = build_legacy_wrapper(inner, magic=magic, codec=codec, level=o.choice.level,
                                       timestamp_type=ts_type, wrapper_timestamp=ts, codec_impl=o.choice.codec)
        s.rebuilt += 1
        s.recompressed += codec != CODEC_NONE
        s.batches_out += 1
        s.records_out += len(records)
        s.bytes_out += len(raw)
        yield raw
    yield from flush()


def up_convert_kafka07(src: Path, output: Path, o: UpOptions, base_offset: int, options: WriteOptions) -> JobResult:
    """A 0.7 file, or a folder of them in name order, to one segment named by ``base_offset``."""
    if not src.exists():
        raise InputError("no such file or directory", file=str(src))
    refuse_for_one_partition(options.skip_unconvertible, src)
    check_output([src], output, force=options.force)
    paths = sorted(p for p in src.iterdir() if p.is_file()) if src.is_dir() else [src]
    dst = output if output.suffix == LOG_SUFFIX else output / segment_file_name(base_offset)
    dst.parent.mkdir(parents=True, exist_ok=True)
    result = JobResult()
    sink = SegmentSink(dst, base_offset, options)
    try:
        for raw in kafka07_entries(paths, o, base_offset, result.summary):
            sink.write(raw)
    except BaseException:
        sink.abort()
        raise
    sink.commit()
    result.segments.append(dst)
    return result
