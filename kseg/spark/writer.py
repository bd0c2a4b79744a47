"""Rows of the record schema back to a log directory (the write side of ``format("kseg")``).

    df.write.format("kseg").option("magic", 2).option("codec", "zstd").save("/data/out")

Output: one ``<topic>-<partition>`` folder per topic-partition, segments named by
their first offset and rolled at ``segmentBytes``, with ``.index``/``.timeindex``
built by Kafka's rules (kseg's ``SegmentSink``).

Options: ``magic`` (0, 1, 2; default 2), ``codec`` (keep: each row's ``codec``
column, none when absent; or none, gzip, snappy, lz4, zstd, a plugin alias),
``compressionLevel``, ``segmentBytes`` (default 1GiB, Kafka's segment.bytes),
``indexIntervalBytes`` (default 4096), ``grouping`` (source: one output batch
per input batch, keeping producer fields, transactional and control flags, when
``segment``/``batch_position`` are there; size: batches of ``batchRecords``
records (1000) / ``batchBytes`` bytes (1000KiB)), ``topic``/``partition`` (for
rows without them), ``pluginRegistry`` (the plugin codec registry, a folder or a
JSON file, for a plugin alias or rows of plugin batches; default
$KSEG_PLUGIN_REGISTRY). Columns other than ``offset`` are optional: ``topic``,
``partition``, ``timestamp`` (ms or a Spark timestamp), ``timestamp_type``,
``key``, ``value`` (binary or string), ``headers``, ``codec``,
``partition_leader_epoch``, ``producer_id``, ``producer_epoch``, ``sequence``,
``is_transactional``, ``is_control``, ``segment``, ``batch_position``.

Rows of one topic-partition must reach each Spark task in offset order (a read
through ``format("kseg")`` is; after a shuffle use
``sortWithinPartitions("topic", "partition", "offset")`` or ``write_log_dir``),
and different tasks must hold disjoint offset ranges of a topic-partition (the
commit checks it). Magic 0/1 cannot carry headers, control records or
producer state: those are dropped, and counted.

Each task writes into a staging folder beside the output (same file system,
so the final moves are renames); the driver's commit moves the segments into
place only when every task succeeded.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from kseg.codecs import codec_by_name
from kseg.codecs.choice import plugin_choice
from kseg.defaults import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_RECORDS,
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_SEGMENT_BYTES,
)
from kseg.defaults import parse_size as _size
from kseg.errors import InputError, OutputError, UnsupportedCodecError
from kseg.formats.attributes import CODEC_NONE, CODEC_PLUGIN, LOG_APPEND_TIME, TIMESTAMP_TYPE_MASK
from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import Header, Record
from kseg.ops.jobs import SegmentSink, WriteOptions
from kseg.ops.registry import registry_use

STAGING_MARK = ".kseg-write-"
_TS_TYPES = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}
_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers", "codec",
            "partition_leader_epoch", "producer_id", "producer_epoch", "sequence", "is_transactional",
            "is_control", "segment", "batch_position")


def new_job_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class WriteSpec:
    path: str
    magic: int = 2
    codec: str = "keep"
    level: int | None = None
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    grouping: str | None = None  # None: source when the columns allow it
    batch_records: int = DEFAULT_BATCH_RECORDS
    batch_bytes: int = DEFAULT_BATCH_BYTES
    topic: str | None = None
    partition: int | None = None
    # what each task calls first: the plugin registry activated where it runs
    setup: Callable[[], None] = field(default_factory=registry_use)

    @classmethod
    def parse(cls, options: dict) -> "WriteSpec":
        o = {str(k).lower(): v for k, v in options.items() if v is not None}

        def get(*names: str, default: Any = None) -> Any:
            for n in names:
                if n.lower() in o:
                    return o[n.lower()]
            return default

        path = get("path")
        if not path:
            raise InputError("give an output folder: df.write.format('kseg').save(OUTDIR)")
        magic = int(get("magic", default=2))
        if magic not in (0, 1, 2):
            raise InputError(f"option magic: 0, 1 or 2, not {magic}")
        codec = str(get("codec", "compression.type", default="keep")).lower()
        grouping = get("grouping")
        if grouping is not None and str(grouping).lower() not in ("source", "size"):
            raise InputError(f"option grouping: source or size, not {grouping!r}")
        level = get("compressionLevel", "level")
        spec = cls(
            path=str(path), magic=magic, codec=codec, level=None if level is None else int(level),
            segment_bytes=_size(get("segmentBytes", "segment.bytes", default=DEFAULT_SEGMENT_BYTES)),
            index_interval_bytes=_size(get("indexIntervalBytes", "index.interval.bytes", default=DEFAULT_INDEX_INTERVAL_BYTES)),
            grouping=None if grouping is None else str(grouping).lower(),
            batch_records=int(get("batchRecords", default=DEFAULT_BATCH_RECORDS)),
            batch_bytes=_size(get("batchBytes", default=DEFAULT_BATCH_BYTES)),
            topic=get("topic"), partition=None if get("partition") is None else int(get("partition")),
            setup=registry_use(get("pluginRegistry")),
        )
        if spec.codec != "keep":
            spec.setup()  # a plugin alias is looked up in the registry the tasks will use
            spec.codec_choice(spec.codec)  # fail early on an unknown name or a zstd legacy target
        return spec

    def check_columns(self, columns: list[str]) -> None:
        if "offset" not in columns:
            raise InputError("the DataFrame needs an offset column (the record schema of format('kseg'))")
        if "topic" not in columns and self.topic is None:
            raise InputError("the DataFrame needs a topic column, or .option('topic', NAME)")
        if "partition" not in columns and self.partition is None:
            raise InputError("the DataFrame needs a partition column, or .option('partition', N)")

    def codec_choice(self, name: str):
        """(codec id, codec object or None, plugin id) for a codec name."""
        if name.startswith("plugin:"):
            name = name[len("plugin:"):]
        try:
            codec = codec_by_name(name)
            cid, pid = codec.id, None
        except UnsupportedCodecError:
            choice = plugin_choice(name, self.level)
            if choice is None:
                raise InputError(f"Unknown compression name: {name}") from None
            codec, cid, pid = choice.codec, CODEC_PLUGIN, choice.plugin_id
        if self.magic < 2 and (cid == CODEC_PLUGIN or cid > 3):
            raise InputError(f"{name} cannot be carried by magic {self.magic} (none, gzip, snappy or lz4)")
        return cid, codec, pid


# --------------------------------------------------------------------------- one task


@dataclass
class _Row:
    offset: int
    timestamp: int
    ts_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    codec: str | None
    group: Any  # the source batch (segment, position), or None
    ple: int
    pid: int
    epoch: int
    seq: int
    txn: bool
    control: bool


@dataclass
class _Piece:
    topic: str
    partition: int
    base_offset: int
    last_offset: int
    records: int
    rel: str  # the .log file, relative to the staging folder


class _PartitionWriter:
    """One topic-partition inside one task: groups rows into batches, batches into segments."""

    def __init__(self, spec: WriteSpec, topic: str, partition: int, folder: Path, rel_base: Path,
                 stats: Counter):
        self.spec, self.topic, self.partition = spec, topic, partition
        self.folder, self.rel_base = folder, rel_base
        self.stats = stats
        self.group: list[_Row] = []
        self.group_bytes = 0
        self.last_offset: int | None = None
        self.sink: Any = None  # kseg.jobs.SegmentSink
        self.piece: _Piece | None = None
        self.pieces: list[_Piece] = []

    # -- grouping
    def add(self, row: _Row) -> None:
        if self.last_offset is not None and row.offset <= self.last_offset:
            raise InputError(
                f"rows of {self.topic}-{self.partition} reach a task out of offset order ({row.offset} after "
                f"{self.last_offset}): sort them, e.g. df.sortWithinPartitions('topic', 'partition', 'offset'), "
                "or write with kseg.spark.write_log_dir(df, path)")
        self.last_offset = row.offset
        if self.group and not self._same_group(self.group[-1], row):
            self.flush()
        self.group.append(row)
        self.group_bytes += len(row.key or b"") + len(row.value or b"") + 32
        if row.control:
            self.flush()

    def _same_group(self, a: _Row, b: _Row) -> bool:
        if a.control or b.control:
            return False
        source = self.spec.grouping != "size" and a.group is not None and b.group is not None
        if source:
            return a.group == b.group
        if (a.ts_type, a.codec, a.txn, a.pid, a.epoch, a.ple) != (b.ts_type, b.codec, b.txn, b.pid, b.epoch, b.ple):
            return False
        if a.ts_type == LOG_APPEND_TIME and a.timestamp != b.timestamp:
            return False
        if self.spec.magic < 2 and self._codec_of(a)[0] == CODEC_NONE:
            return False
        return (len(self.group) < self.spec.batch_records
                and self.group_bytes + len(b.key or b"") + len(b.value or b"") + 32 <= self.spec.batch_bytes)

    def _codec_of(self, row: _Row):
        name = self.spec.codec if self.spec.codec != "keep" else (row.codec or "none")
        return self.spec.codec_choice(name)

    # -- encoding
    def flush(self) -> None:
        rows, self.group, self.group_bytes = self.group, [], 0
        if not rows:
            return
        for raw, first, last, n in self._encode(rows):
            self._append(raw, first, last, n)

    def _encode(self, rows: list[_Row]) -> Iterator[tuple[bytes, int, int, int]]:
        spec, s = self.spec, self.stats
        cid, codec, pid = self._codec_of(rows[0])
        first = rows[0]
        if spec.magic >= 2:
            ts_type = 1 if first.ts_type == LOG_APPEND_TIME else 0
            records = [Record(r.offset, r.timestamp, r.key, r.value, r.headers, r.timestamp, 0, 2, None)
                       for r in rows]
            raw = build_v2_batch(
                records, codec=cid if pid is None else 0, level=spec.level, timestamp_type=ts_type,
                transactional=first.txn, control=first.control, producer_id=first.pid,
                producer_epoch=first.epoch, base_sequence=first.seq, partition_leader_epoch=first.ple,
                max_timestamp=first.timestamp if ts_type == LOG_APPEND_TIME else None,
                plugin_id=pid, codec_impl=codec if cid != CODEC_NONE else None,
            )
            s["batches"] += 1
            s["records"] += len(rows)
            yield raw, rows[0].offset, rows[-1].offset, len(rows)
            return
        kept = []
        for r in rows:
            if r.control:
                s["dropped control records"] += 1
                continue
            if r.headers:
                s["dropped headers"] += len(r.headers)
            if r.pid != -1 or r.txn:
                s["dropped producer states"] += 1
            kept.append(r)
        if not kept:
            return
        lat = spec.magic == 1 and first.ts_type == LOG_APPEND_TIME
        attrs = TIMESTAMP_TYPE_MASK if lat else 0
        if spec.magic == 0 and any(r.timestamp != -1 for r in kept):
            s["dropped timestamps"] += sum(1 for r in kept if r.timestamp != -1)

        def ts(r: _Row) -> int:
            return r.timestamp if spec.magic == 1 else -1

        if cid == CODEC_NONE:
            for r in kept:
                s["batches"] += 1
                s["records"] += 1
                yield build_legacy_message(r.offset, spec.magic, attrs, ts(r), r.key, r.value), r.offset, r.offset, 1
            return
        inner = [Record(r.offset, ts(r), r.key, r.value, (), ts(r), attrs, spec.magic, None) for r in kept]
        raw = build_legacy_wrapper(inner, magic=spec.magic, codec=cid, level=spec.level,
                                   timestamp_type=1 if lat else 0,
                                   wrapper_timestamp=kept[0].timestamp if lat else None, codec_impl=codec)
        s["batches"] += 1
        s["records"] += len(kept)
        yield raw, kept[0].offset, kept[-1].offset, len(kept)

    # -- segments
    def _append(self, raw: bytes, first: int, last: int, n: int) -> None:
        if self.sink is not None and self.sink.position > 0 and \
                self.sink.position + len(raw) > self.spec.segment_bytes:
            self._close_segment()
        if self.sink is None:
            path = self.folder / segment_file_name(first)
            self.sink = SegmentSink(path, first, WriteOptions(index_interval_bytes=self.spec.index_interval_bytes))
            self.piece = _Piece(self.topic, self.partition, first, last, 0,
                                str(self.rel_base / path.name))
        self.sink.write(raw)
        self.piece.last_offset = last  # type: ignore[union-attr]
        self.piece.records += n  # type: ignore[union-attr]
        self.stats["bytes"] += len(raw)

    def _close_segment(self) -> None:
        if self.sink is not None:
            self.sink.commit()
            self.pieces.append(self.piece)  # type: ignore[arg-type]
            self.sink, self.piece = None, None

    def close(self) -> list[_Piece]:
        self.flush()
        self._close_segment()
        return self.pieces

    def abort(self) -> None:
        if self.sink is not None:
            self.sink.abort()


def staging_dir(spec: WriteSpec, job_id: str) -> Path:
    out = Path(spec.path)
    return out.parent / f".{out.name}{STAGING_MARK}{job_id}"


def _bytes(v: Any) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


def _millis(v: Any) -> int:
    if v is None:
        return -1
    if isinstance(v, _dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return int(v.timestamp() * 1000)
    return int(v)


def _headers(v: Any) -> tuple:
    if not v:
        return ()
    out = []
    for h in v:
        if isinstance(h, dict):
            k, val = h.get("key"), h.get("value")
        else:
            k, val = h[0], h[1]
        out.append(Header(k if isinstance(k, str) else (k or b"").decode("utf-8", "surrogateescape"), _bytes(val)))
    return tuple(out)


def rows_of(spec: WriteSpec, columns: list[str], batch: Any) -> Iterator[tuple[str, int, _Row]]:
    """(topic, partition, row) for each row of an Arrow RecordBatch (or a dict of column lists)."""
    n = batch.num_rows if hasattr(batch, "num_rows") else len(next(iter(batch.values())))

    def col(name: str) -> list:
        if name not in columns:
            return [None] * n
        return batch.column(name).to_pylist() if hasattr(batch, "column") else list(batch[name])

    c = {name: col(name) for name in _COLUMNS}
    for i in range(n):
        topic = c["topic"][i] if c["topic"][i] is not None else spec.topic
        partition = c["partition"][i] if c["partition"][i] is not None else spec.partition
        if topic is None or partition is None:
            raise InputError("a row has no topic or partition (give .option('topic', ...) / ('partition', ...))")
        offset = c["offset"][i]
        if offset is None:
            raise InputError(f"a row of {topic}-{partition} has no offset")
        tt_name = c["timestamp_type"][i]
        ts_type = _TS_TYPES.get(tt_name, 0) if tt_name is not None else 0
        seg, pos = c["segment"][i], c["batch_position"][i]
        pid = c["producer_id"][i]
        yield topic, int(partition), _Row(
            offset=int(offset), timestamp=_millis(c["timestamp"][i]), ts_type=ts_type,
            key=_bytes(c["key"][i]), value=_bytes(c["value"][i]), headers=_headers(c["headers"][i]),
            codec=c["codec"][i], group=(seg, pos) if seg is not None and pos is not None else None,
            ple=-1 if c["partition_leader_epoch"][i] is None else int(c["partition_leader_epoch"][i]),
            pid=-1 if pid is None else int(pid),
            epoch=-1 if c["producer_epoch"][i] is None else int(c["producer_epoch"][i]),
            seq=-1 if c["sequence"][i] is None else int(c["sequence"][i]),
            txn=bool(c["is_transactional"][i]), control=bool(c["is_control"][i]),
        )


def write_task(spec: WriteSpec, job_id: str, task: str, batches: Iterable[Any],
               columns: list[str] | None = None) -> tuple[list, dict, str]:
    """Write one task's rows under the staging folder; returns (pieces, stats, staging)."""
    spec.setup()
    staging = staging_dir(spec, job_id)
    task_rel = Path(f"task-{task}")
    stats: Counter = Counter()
    writers: dict[tuple[str, int], _PartitionWriter] = {}
    try:
        for batch in batches:
            cols = columns if columns is not None else batch.schema.names
            for topic, partition, row in rows_of(spec, cols, batch):
                w = writers.get((topic, partition))
                if w is None:
                    name = f"{topic}-{partition}"
                    w = _PartitionWriter(spec, topic, partition, staging / task_rel / name, task_rel / name, stats)
                    writers[(topic, partition)] = w
                w.add(row)
        pieces: list = []
        for w in writers.values():
            pieces.extend(p.__dict__ for p in w.close())
    except BaseException:
        for w in writers.values():
            w.abort()
        shutil.rmtree(staging / task_rel, ignore_errors=True)
        raise
    return pieces, dict(stats), str(staging)


# --------------------------------------------------------------------------- the driver's commit


@dataclass
class WriteResult:
    partitions: int = 0
    segments: int = 0
    stats: Counter = field(default_factory=Counter)


def commit_job(spec: WriteSpec, job_id: str, messages: list, overwrite: bool) -> WriteResult:
    """Check each topic-partition's pieces are disjoint in offsets, move them into place."""
    staging = staging_dir(spec, job_id)
    out = Path(spec.path)
    result = WriteResult()
    by_tp: dict[tuple[str, int], list[dict]] = {}
    for m in messages:
        result.stats.update(m.stats)
        for p in m.pieces:
            by_tp.setdefault((p["topic"], p["partition"]), []).append(p)
    try:
        for (topic, partition), pieces in by_tp.items():
            pieces.sort(key=lambda p: p["base_offset"])
            for a, b in zip(pieces, pieces[1:]):
                if b["base_offset"] <= a["last_offset"]:
                    raise InputError(
                        f"{topic}-{partition}: two Spark tasks hold overlapping offsets ({a['base_offset']}.."
                        f"{a['last_offset']} and {b['base_offset']}..{b['last_offset']}): give each "
                        "topic-partition's offsets to one task in order, e.g. "
                        "df.repartition('topic', 'partition').sortWithinPartitions('offset'), or use "
                        "kseg.spark.write_log_dir(df, path)")
        if out.exists() and not overwrite and any(out.iterdir()):
            clash = [f"{t}-{p}" for t, p in by_tp if (out / f"{t}-{p}").exists()]
            if clash:
                raise OutputError(f"topic-partition folders exist already: {', '.join(sorted(clash)[:5])} "
                                  "(use mode('overwrite') to replace the output)", file=str(out))
        final = staging / "final"
        final.mkdir(parents=True, exist_ok=True)
        for (topic, partition), pieces in by_tp.items():
            folder = final / f"{topic}-{partition}"
            folder.mkdir(parents=True, exist_ok=True)
            for p in pieces:
                src = staging / p["rel"]
                stem = src.name.split(".", 1)[0]
                for companion in src.parent.iterdir():
                    if companion.name.split(".", 1)[0] == stem and not companion.name.startswith("."):
                        os.replace(companion, folder / companion.name)
                result.segments += 1
        result.partitions = len(by_tp)
        if out.exists() and (overwrite or not any(out.iterdir())):
            old = out.with_name(f".{out.name}{STAGING_MARK}{job_id}-old")
            os.replace(out, old)
            os.replace(final, out)
            shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
        elif out.exists():
            for folder in final.iterdir():
                os.replace(folder, out / folder.name)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            os.replace(final, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def abort_job(spec: WriteSpec, job_id: str) -> None:
    shutil.rmtree(staging_dir(spec, job_id), ignore_errors=True)
