"""Segment slices to rows: the record and batch schemas, as Arrow batches or Python tuples.

Needs pyarrow (for Arrow output) but not PySpark, so it runs and is tested on
its own. Columns that are the same for every record of a Kafka batch are built
once per batch and expanded with ``take``; per-record columns come from
transposing the decoded records, so the Python work per record stays small.
"""

from __future__ import annotations

from itertools import accumulate, chain
from typing import Any, Iterator

from ..errors import KsegError
from ..formats.attributes import CODEC_NONE, LOG_APPEND_TIME, NO_SEQUENCE
from ..model import Batch
from ..records import batch_records
from ..segment import Segment
from .plan import Conditions, ReadOptions, Slice, seek_range

INT32_MAX = (1 << 31) - 1

RECORD_SCHEMA_DDL = (
    "topic STRING, partition INT, segment STRING, offset BIGINT, timestamp BIGINT, timestamp_type STRING, "
    "key BINARY, value BINARY, headers ARRAY<STRUCT<key: STRING, value: BINARY>>, magic INT, codec STRING, "
    "batch_position BIGINT, partition_leader_epoch INT, producer_id BIGINT, producer_epoch INT, sequence INT, "
    "is_transactional BOOLEAN, is_control BOOLEAN"
)
BATCH_SCHEMA_DDL = (
    "topic STRING, partition INT, segment STRING, position BIGINT, base_offset BIGINT, last_offset BIGINT, "
    "count INT, magic INT, codec STRING, timestamp_type STRING, max_timestamp BIGINT, size INT, crc BIGINT, "
    "crc_valid BOOLEAN, partition_leader_epoch INT, producer_id BIGINT, producer_epoch INT, base_sequence INT, "
    "is_transactional BOOLEAN, is_control BOOLEAN, delete_horizon_ms BIGINT"
)

RECORD_COLUMNS = [c.split(" ", 1)[0] for c in RECORD_SCHEMA_DDL.replace("STRUCT<key: STRING, value: BINARY>", "S")
                  .split(", ")]
BATCH_COLUMNS = [c.split(" ", 1)[0] for c in BATCH_SCHEMA_DDL.split(", ")]

# Per-batch columns of the record schema, in schema order (filled once per Kafka batch).
_BATCH_LEVEL = ("topic", "partition", "segment", "timestamp_type", "magic", "codec", "batch_position",
                "partition_leader_epoch", "producer_id", "producer_epoch", "is_transactional", "is_control")


def arrow_types() -> dict[str, Any]:
    import pyarrow as pa

    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    return {
        "STRING": pa.string(), "INT": pa.int32(), "BIGINT": pa.int64(), "BINARY": pa.binary(),
        "BOOLEAN": pa.bool_(), "HEADERS": pa.list_(pa.field("element", header)),
    }


def arrow_schema(level: str = "records"):
    """The Arrow schema Spark expects for the record (or batch) schema."""
    import pyarrow as pa

    types = arrow_types()
    ddl = RECORD_SCHEMA_DDL if level == "records" else BATCH_SCHEMA_DDL
    fields = []
    for part in ddl.replace("ARRAY<STRUCT<key: STRING, value: BINARY>>", "HEADERS").split(", "):
        name, kind = part.split(" ")
        fields.append(pa.field(name, types[kind]))
    return pa.schema(fields)


# --------------------------------------------------------------------------- reading a slice


def _skip_batch(b: Batch, c: Conditions) -> bool:
    """True when no record of this batch can pass the offset/time conditions (header facts only)."""
    if c.offset_lo is not None and b.last_offset < c.offset_lo:
        return True
    if c.offset_hi is not None and (b.magic >= 2 or b.codec == CODEC_NONE) and b.offset > c.offset_hi:
        return True
    exact_ts = b.magic >= 2 or b.codec == CODEC_NONE or b.magic == 0 or b.timestamp_type == LOG_APPEND_TIME
    if c.time_lo is not None and exact_ts and b.timestamp < c.time_lo:
        return True
    if c.time_hi is not None and b.timestamp > c.time_hi:
        if b.magic < 2 and (b.codec == CODEC_NONE or b.magic == 0 or b.timestamp_type == LOG_APPEND_TIME):
            return True
        if b.magic >= 2 and b.timestamp_type == LOG_APPEND_TIME:
            return True
    return False


def slice_batches(s: Slice, cond: Conditions | None, opts: ReadOptions) -> Iterator[Batch]:
    """The batches of a slice, after index seeks and header-level skips."""
    start, end = seek_range(s, cond)
    if end is not None and start >= end:
        return
    seg = Segment(s.path)
    skip = cond is not None and cond.filters_records
    for b in seg.batches(start=start, end=end):
        if skip and _skip_batch(b, cond):  # type: ignore[arg-type]
            continue
        yield b
    t = seg.tail
    if t is not None and s.end is not None and opts.mode == "failfast" and (end is None or t.position < end):
        # A non-final slice must end exactly at its boundary; bytes in between do not frame.
        raise KsegError(
            "bytes inside the segment do not form batches (kseg dump stops here; read with "
            "option mode=dropmalformed to go on from the next split, or splitBytes=0 to stop here)",
            file=s.path, position=t.position)


def _sequence(b: Batch, offset: int) -> int:
    if b.base_sequence is None or b.base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    delta = offset - b.offset
    base = b.base_sequence
    return delta - (INT32_MAX - base) - 1 if base > INT32_MAX - delta else base + delta


def _records(b: Batch, opts: ReadOptions):
    try:
        return batch_records(b, limit=opts.max_decompressed_bytes)
    except KsegError as e:
        return e


def record_tuples(s: Slice, cond: Conditions | None, opts: ReadOptions) -> Iterator[tuple]:
    """Rows of the record schema as tuples (the slow path, kept for comparison and fallback)."""
    filt = cond is not None and cond.filters_records
    for b in slice_batches(s, cond, opts):
        records = _records(b, opts)
        if isinstance(records, KsegError):
            if opts.mode == "failfast":
                raise records.located(file=s.path)
            continue
        v2 = b.magic >= 2
        head = (s.topic, s.partition, s.path)
        tt, codec = b.timestamp_type_name, b.codec_name
        for r in records:
            if filt and not cond.record_ok(r.offset, r.timestamp):  # type: ignore[union-attr]
                continue
            yield (*head, r.offset, r.timestamp, tt, r.key, r.value,
                   [(h.key, h.value) for h in r.headers], b.magic, codec, b.position,
                   b.partition_leader_epoch, b.producer_id, b.producer_epoch,
                   _sequence(b, r.offset) if v2 else None,
                   b.is_transactional if v2 else None, b.is_control if v2 else None)


class _RecordColumns:
    """Accumulates records column by column; ``flush`` makes one Arrow RecordBatch."""

    def __init__(self, schema):
        self.schema = schema
        self.reset()

    def reset(self) -> None:
        self.n = 0
        self.batch_rows: list[tuple] = []  # one tuple per Kafka batch: the _BATCH_LEVEL values + base seq + base
        self.take: list[int] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list = []
        self.values: list = []
        self.header_counts: list[int] = []
        self.headers: list = []

    def add(self, s: Slice, b: Batch, records: list) -> None:
        if not records:
            return
        v2 = b.magic >= 2
        idx = len(self.batch_rows)
        self.batch_rows.append((
            s.topic, s.partition, s.path, b.timestamp_type_name, b.magic, b.codec_name, b.position,
            b.partition_leader_epoch, b.producer_id, b.producer_epoch,
            b.is_transactional if v2 else None, b.is_control if v2 else None,
            (b.base_sequence if b.base_sequence is not None else None) if v2 else None, b.offset,
        ))
        n = len(records)
        self.take.extend([idx] * n)
        offs, tss, keys, values, hdrs = list(zip(*records))[:5]
        self.offsets.extend(offs)
        self.timestamps.extend(tss)
        self.keys.extend(keys)
        self.values.extend(values)
        if v2:
            self.header_counts.extend(map(len, hdrs))
            self.headers.extend(chain.from_iterable(hdrs))
        else:
            self.header_counts.extend([0] * n)
        self.n += n

    def flush(self):
        import pyarrow as pa
        import pyarrow.compute as pc

        types = arrow_types()
        cols = list(zip(*self.batch_rows))
        take = pa.array(self.take, pa.int32())
        kinds = {"topic": "STRING", "partition": "INT", "segment": "STRING", "timestamp_type": "STRING",
                 "magic": "INT", "codec": "STRING", "batch_position": "BIGINT", "partition_leader_epoch": "INT",
                 "producer_id": "BIGINT", "producer_epoch": "INT", "is_transactional": "BOOLEAN",
                 "is_control": "BOOLEAN"}
        per_batch = {name: pa.array(cols[i], types[kinds[name]]).take(take) for i, name in enumerate(_BATCH_LEVEL)}
        offsets = pa.array(self.offsets, pa.int64())
        # sequence = baseSequence + (offset - baseOffset), wrapping past int32 max; -1 stays -1.
        base_seq = pa.array(cols[12], pa.int64()).take(take)
        base_off = pa.array(cols[13], pa.int64()).take(take)
        raw = pc.add(base_seq, pc.subtract(offsets, base_off))
        wrapped = pc.if_else(pc.greater(raw, INT32_MAX), pc.subtract(raw, 1 << 31), raw)
        seq = pc.if_else(pc.equal(base_seq, NO_SEQUENCE), base_seq, wrapped).cast(pa.int32())
        if self.headers:
            hk, hv = zip(*self.headers)
            try:
                keys = pa.array(hk, pa.string())
            except (UnicodeEncodeError, pa.ArrowInvalid):
                keys = pa.array([k.encode("utf-8", "replace").decode("utf-8") for k in hk], pa.string())
            values = pa.array(hv, pa.binary())
        else:
            keys, values = pa.array([], pa.string()), pa.array([], pa.binary())
        htype = types["HEADERS"]
        struct = pa.StructArray.from_arrays([keys, values], fields=list(htype.value_type))
        hoff = pa.array([0, *accumulate(self.header_counts)], pa.int32())
        headers = pa.ListArray.from_arrays(hoff, struct, type=htype)
        arrays = {
            **per_batch,
            "offset": offsets,
            "timestamp": pa.array(self.timestamps, pa.int64()),
            "key": pa.array(self.keys, pa.binary()),
            "value": pa.array(self.values, pa.binary()),
            "headers": headers,
            "sequence": seq,
        }
        out = pa.RecordBatch.from_arrays([arrays[f.name] for f in self.schema], schema=self.schema)
        self.reset()
        return out


def record_arrow(s: Slice, cond: Conditions | None, opts: ReadOptions, schema=None) -> Iterator[Any]:
    """Rows of the record schema as Arrow RecordBatches of about ``max_records_per_batch`` rows."""
    cols = _RecordColumns(schema if schema is not None else arrow_schema("records"))
    filt = cond is not None and cond.filters_records
    limit = opts.max_records_per_batch
    for b in slice_batches(s, cond, opts):
        records = _records(b, opts)
        if isinstance(records, KsegError):
            if opts.mode == "failfast":
                raise records.located(file=s.path)
            continue
        if filt:
            ok = cond.record_ok  # type: ignore[union-attr]
            records = [r for r in records if ok(r.offset, r.timestamp)]
        cols.add(s, b, records)
        if cols.n >= limit:
            yield cols.flush()
    if cols.n:
        yield cols.flush()


# --------------------------------------------------------------------------- the batch level


def batch_tuples(s: Slice, cond: Conditions | None, opts: ReadOptions) -> Iterator[tuple]:
    """One row per batch, the fields of ``kseg dump --format jsonl``'s batch lines."""
    for b in slice_batches(s, None, opts):
        v2 = b.magic >= 2
        if v2:
            first, last, count = b.offset, b.last_offset, b.record_count or 0
        elif b.codec != CODEC_NONE:
            records = _records(b, opts)
            if isinstance(records, KsegError):
                if opts.mode == "failfast":
                    raise records.located(file=s.path)
                continue
            first, last, count = records[0].offset, b.offset, len(records)
        else:
            first, last, count = b.offset, b.offset, 1
        yield (s.topic, s.partition, s.path, b.position, first, last, count, b.magic, b.codec_name,
               b.timestamp_type_name, b.timestamp, b.size, b.crc, b.crc_valid,
               b.partition_leader_epoch, b.producer_id, b.producer_epoch, b.base_sequence,
               b.is_transactional if v2 else None, b.is_control if v2 else None,
               b.delete_horizon_ms if v2 else None)


def batch_arrow(s: Slice, cond: Conditions | None, opts: ReadOptions, schema=None) -> Iterator[Any]:
    import pyarrow as pa

    schema = schema if schema is not None else arrow_schema("batches")
    rows: list[tuple] = []

    def make():
        cols = list(zip(*rows))
        return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)

    for row in batch_tuples(s, cond, opts):
        rows.append(row)
        if len(rows) >= opts.max_records_per_batch:
            yield make()
            rows = []
    if rows:
        yield make()


def read_slice(s: Slice, cond: Conditions | None, opts: ReadOptions, schema=None) -> Iterator[Any]:
    if opts.level == "batches":
        return batch_arrow(s, cond, opts, schema) if opts.arrow else batch_tuples(s, cond, opts)
    return record_arrow(s, cond, opts, schema) if opts.arrow else record_tuples(s, cond, opts)
