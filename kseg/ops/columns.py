"""Segment slices to rows: the record and batch schemas, as Arrow batches or Python tuples.

Needs pyarrow (for Arrow output) but not PySpark, so it runs and is tested on
its own. Columns that are the same for every record of a Kafka batch are built
once per batch and expanded with ``take``; per-record columns come from
transposing the decoded records, so the Python work per record stays small.
"""

from __future__ import annotations

from itertools import accumulate, chain, groupby
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from kseg.errors import InputError, KsegError
from kseg.facts.primitives import INT32_MAX
from kseg.formats.attributes import CODEC_NAMES, CODEC_NONE, CREATE_TIME, LOG_APPEND_TIME, NO_SEQUENCE, TIMESTAMP_TYPE_NAMES
from kseg.log.records import RecordSpans, batch_records, batch_spans
from kseg.log.span_columns import CONTROL_ROWS, ColumnBudget, ColumnBuffers, ColumnRun, runs_and_batches, span_columns
from kseg.log.segment import Segment
from kseg.model import Batch, record_sequence
from kseg.ops.slices import Conditions, ReadOptions, Slice, seek_range

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


def _ddl_parts(level: str) -> list[tuple[str, str]]:
    ddl = RECORD_SCHEMA_DDL if level == "records" else BATCH_SCHEMA_DDL
    hidden = ddl.replace("ARRAY<STRUCT<key: STRING, value: BINARY>>", "HEADERS")
    return [tuple(part.split(" ")) for part in hidden.split(", ")]  # type: ignore[misc]


def check_columns(level: str, columns: list[str] | None) -> list[str] | None:
    if columns is None:
        return None
    known = [n for n, _ in _ddl_parts(level)]
    unknown = [c for c in columns if c not in known]
    if unknown or not columns:
        raise InputError(f"option columns: unknown {', '.join(unknown) or '(none given)'}; "
                         f"the {level} schema has {', '.join(known)}")
    return [n for n in known if n in columns]  # schema order


def schema_ddl(level: str = "records", columns: list[str] | None = None) -> str:
    """The Spark schema (DDL) of a level, or of some of its columns (in schema order)."""
    parts = _ddl_parts(level)
    keep = check_columns(level, columns)
    return ", ".join(f"{n} {k}" for n, k in parts if keep is None or n in keep).replace(
        "HEADERS", "ARRAY<STRUCT<key: STRING, value: BINARY>>")


def arrow_schema(level: str = "records", columns: list[str] | None = None):
    """The Arrow schema Spark expects for the record (or batch) schema, or some of its columns."""
    import pyarrow as pa

    types = arrow_types()
    keep = check_columns(level, columns)
    return pa.schema([pa.field(name, types[kind]) for name, kind in _ddl_parts(level)
                      if keep is None or name in keep])


# --------------------------------------------------------------------------- reading a slice


def _skip_batch(b: Batch, c: Conditions) -> bool:
    """True when no record of this batch can pass the offset/time conditions (header facts only)."""
    if c.offset_lo is not None and b.last_offset < c.offset_lo:
        return True
    if c.offset_hi is not None and (b.magic >= 2 or b.codec == CODEC_NONE) and b.base_offset > c.offset_hi:
        return True
    exact_ts = b.magic >= 2 or b.codec == CODEC_NONE or b.magic == 0 or b.timestamp_type == LOG_APPEND_TIME
    if c.time_lo is not None and exact_ts and b.max_timestamp < c.time_lo:
        return True
    if c.time_hi is not None and b.max_timestamp > c.time_hi:
        if b.magic < 2 and (b.codec == CODEC_NONE or b.magic == 0 or b.timestamp_type == LOG_APPEND_TIME):
            return True
        if b.magic >= 2 and b.timestamp_type == LOG_APPEND_TIME:
            return True
    return False


def slice_batches(s: Slice, cond: Conditions | None, opts: ReadOptions) -> Iterator[Batch]:
    """The batches of a slice, after index seeks and header-level skips."""
    for entries in slice_batch_lists(s, cond, opts):
        yield from entries


def slice_batch_lists(s: Slice, cond: Conditions | None, opts: ReadOptions) -> Iterator[list[Batch]]:
    """``slice_batches`` in the scanner's lists (some may be empty after the skips)."""
    start, end = seek_range(s, cond)
    if end is not None and start >= end:
        return
    seg = Segment(Path(s.path))
    skip = cond is not None and cond.filters_records
    for entries in seg.batch_lists(start=start, end=end):
        yield [b for b in entries if not _skip_batch(b, cond)] if skip else entries  # type: ignore[arg-type]
    t = seg.tail
    if t is not None and s.end is not None and opts.mode == "failfast" and (end is None or t.position < end):
        # A non-final slice must end exactly at its boundary; bytes in between do not frame.
        raise KsegError(
            "bytes inside the segment do not form batches (kseg dump stops here; read with "
            "option mode=dropmalformed to go on from the next split, or splitBytes=0 to stop here)",
            file=s.path, position=t.position)


def _records(b: Batch, opts: ReadOptions, *, spans: bool = False) -> "list | RecordSpans | KsegError":
    """The batch's records (as the C reader's spans where ``spans`` and it gives them), or the error
    that stopped them: each mode decides what an error does."""
    try:
        found = batch_spans(b, limit=opts.max_decompressed_bytes) if spans else None
        return found if found is not None else batch_records(b, limit=opts.max_decompressed_bytes)
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
                   record_sequence(b, r) if v2 else None,
                   b.is_transactional if v2 else None, b.is_control if v2 else None)


def _java_int(values: Any) -> Any:
    """An int64 Arrow column's values as Java ints hold them (two's complement, 32 bits)."""
    import pyarrow.compute as pc

    return pc.subtract(pc.bit_wise_and(pc.add(values, 0x80000000), 0xFFFFFFFF), 0x80000000)


def _header_keys(keys: list[str]) -> Any:
    """Header keys as an Arrow string column: a key that is not UTF-8 (read with surrogateescape)
    has each byte that is not replaced with "?"."""
    import pyarrow as pa

    try:
        return pa.array(keys, pa.string())
    except (UnicodeEncodeError, pa.ArrowInvalid):
        return pa.array([k.encode("utf-8", "replace").decode("utf-8") for k in keys], pa.string())


class _RecordColumns:
    """Accumulates records as column buffers (``kseg.log.span_columns``); ``flush`` makes one
    Arrow RecordBatch.

    A batch comes as spans over its data (``add_spans``: no Python object per record) or as
    decoded records (``add``); per-batch values are kept once per Kafka batch and expanded with
    run-end decoding. A run of batches comes as columns already (``add_run``: no Python per batch).
    """

    def __init__(self, schema):
        import pyarrow as pa

        self.schema = schema
        self.types = {f.name: f.type for f in schema}
        self.headers_type = self.types.get("headers")
        self.int32 = pa.int32()
        self.flags: dict[tuple[int, int], tuple] = {}  # (magic, attributes) -> per-batch facts
        self.constants: dict[tuple, Any] = {}  # (type, value, rows) -> a column of it (Arrow's are immutable)
        self.reset()

    def reset(self) -> None:
        self.n = 0
        self.bytes = 0  # of the parts' data: what flushing frees
        # per Kafka batch (row, record count, part): see ``_batch``; a column run as a _Run
        self.parts: list = []

    def _flags(self, b: Batch) -> tuple:
        key = (b.magic, b.attributes)
        f = self.flags.get(key)
        if f is None:
            v2 = b.magic >= 2
            f = (b.timestamp_type_name, b.codec_name, b.is_transactional if v2 else None,
                 b.is_control if v2 else None)
            self.flags[key] = f
        return f

    def _batch(self, s: Slice, b: Batch, n: int, part: Any) -> None:
        tt, codec, txn, control = self._flags(b)
        self.parts.append(((s.topic, s.partition, s.path, tt, b.magic, codec, b.position,
                            b.partition_leader_epoch, b.producer_id, b.producer_epoch, txn, control,
                            b.base_sequence, b.base_offset), n, part))
        self.n += n

    def add(self, s: Slice, b: Batch, records: list) -> None:
        if records:
            self._batch(s, b, len(records), list(records))  # a list (spans: a tuple): transposed at the flush
            self.bytes += sum(len(r.key or b"") + len(r.value or b"") for r in records)

    def add_spans(self, s: Slice, b: Batch, spans: RecordSpans) -> None:
        if spans.count:
            self._batch(s, b, spans.count, (spans.data, spans.records, spans.headers))
            self.bytes += len(spans.data)

    def add_run(self, s: Slice, run: ColumnRun) -> None:
        if run.rows:
            self.parts.append(_Run(s, run))
            self.n += run.rows
            self.bytes += run.bytes

    def _buffer_arrays(self, c: ColumnBuffers) -> dict[str, Any]:
        """The per-record columns of ``span_columns``' buffers."""
        import pyarrow as pa

        n = c.rows

        def binary(count: int, validity: bytes, nulls: int, offsets: bytes, data: bytes, type_=pa.binary()) -> Any:
            return pa.Array.from_buffers(type_, count, [pa.py_buffer(validity) if nulls else None,
                                                        pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)

        out = {"offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(c.offsets)]),
               "timestamp": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(c.timestamps)]),
               "key": binary(n, c.key_validity, c.key_nulls, c.key_offsets, c.key_data),
               "value": binary(n, c.value_validity, c.value_nulls, c.value_offsets, c.value_data)}
        if self.headers_type is not None:
            keys = binary(c.headers, b"", 0, c.header_key_offsets, c.header_key_data, pa.string())
            try:
                keys.validate(full=True)
            except pa.ArrowInvalid:  # not UTF-8: as the records' keys read (``_header_keys``)
                keys = _header_keys([k.decode("utf-8", "surrogateescape") for k in binary(
                    c.headers, b"", 0, c.header_key_offsets, c.header_key_data).to_pylist()])
            values = binary(c.headers, c.header_value_validity, c.header_value_nulls, c.header_value_offsets,
                            c.header_value_data)
            hoff = pa.Array.from_buffers(self.int32, n + 1, [None, pa.py_buffer(c.header_offsets)])
            out["headers"] = self._headers(hoff, keys, values)
        return out

    def _record_arrays(self, parts: list[list]) -> dict[str, Any]:
        """The per-record columns of decoded records (transposed, one list per column)."""
        import pyarrow as pa

        records = list(chain.from_iterable(parts))
        offs, tss, keys, values, hdrs = list(zip(*records))[:5]
        out = {"offset": pa.array(offs, pa.int64()), "timestamp": pa.array(tss, pa.int64()),
               "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary())}
        if self.headers_type is not None:
            flat = list(chain.from_iterable(hdrs))
            hk = [h.key for h in flat]
            hv = pa.array([h.value for h in flat], pa.binary())
            hoff = pa.array([0, *accumulate(map(len, hdrs))], self.int32)
            out["headers"] = self._headers(hoff, _header_keys(hk), hv)
        return out

    def _headers(self, offsets: Any, keys: Any, values: Any) -> Any:
        import pyarrow as pa

        htype = self.headers_type
        struct = pa.StructArray.from_arrays([keys, values], fields=list(htype.value_type))
        return pa.ListArray.from_arrays(offsets, struct, type=htype)

    def _constant(self, type_: Any, value: Any, n: int) -> Any:
        import pyarrow as pa

        key = (type_, value, n)
        same = self.constants.get(key)
        if same is None:
            if len(self.constants) > 64:
                self.constants.clear()
            same = self.constants[key] = pa.repeat(pa.scalar(value, type_), n)
        return same

    def _batch_arrays(self, parts: list[tuple]) -> dict[str, Any]:
        """Every column of Kafka batches added one by one: the per-record columns of each run of
        span parts in one span_columns call, each run of decoded records transposed, joined in
        order; the per-batch values expanded to their records."""
        import pyarrow as pa
        import pyarrow.compute as pc

        types = self.types
        cols = list(zip(*(row for row, _, _ in parts)))
        n = 0
        ends = []
        for _, count, _ in parts:
            n += count
            ends.append(n)
        run_ends = pa.array(ends, self.int32)
        runs = [(spans, [p for _, _, p in group])
                for spans, group in groupby(parts, key=lambda p: isinstance(p[2], tuple))]
        pieces = [self._buffer_arrays(span_columns(group)) if spans else self._record_arrays(group)
                  for spans, group in runs]
        arrays = _joined(pieces)

        rows_batch: list = []  # each row's Kafka batch (made once, for the columns that vary)

        def expand(values: tuple, type_) -> Any:
            first = values[0]
            if values.count(first) == len(values):  # (a column's values are all of one type, or None)
                return self._constant(type_, first, n)
            if not rows_batch:
                rows_batch.append(pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(
                    run_ends, pa.array(range(len(values)), self.int32))))
            return pa.array(values, type_).take(rows_batch[0])

        arrays.update({name: expand(cols[i], types[name]) for i, name in enumerate(_BATCH_LEVEL) if name in types})
        if "sequence" in types:
            if any(seq is not None and seq >= 0 for seq in cols[12]):
                # kseg.model.record_sequence over whole columns, in Java's int arithmetic.
                base_seq = expand(cols[12], pa.int64())
                delta = _java_int(pc.subtract(arrays["offset"], expand(cols[13], pa.int64())))
                limit = _java_int(pc.subtract(INT32_MAX, delta))
                wrapped = pc.if_else(pc.greater(base_seq, limit),
                                     _java_int(pc.subtract(pc.subtract(delta, pc.subtract(INT32_MAX, base_seq)), 1)),
                                     _java_int(pc.add(base_seq, delta)))
                none = pc.less(base_seq, 0)
                arrays["sequence"] = pc.if_else(pc.is_null(base_seq), base_seq,
                                                pc.if_else(none, NO_SEQUENCE, wrapped)).cast(pa.int32())
            else:
                # none has a sequence: -1 (v2, any negative base) or null (legacy)
                arrays["sequence"] = expand(tuple(None if seq is None else NO_SEQUENCE for seq in cols[12]),
                                            pa.int32())
        return arrays

    def _run_arrays(self, part: _Run) -> dict[str, Any]:
        """Every column of a column run: the per-record ones from its buffers, the per-batch ones
        from its per-record header facts (v2, a built-in codec)."""
        import pyarrow as pa

        s, run = part
        n, c = run.rows, run.batch
        arrays = self._buffer_arrays(run.columns)

        def fixed(type_: Any, buf: bytes | int) -> Any:
            if isinstance(buf, int):  # the same in every record
                return self._constant(type_, buf, n)
            return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(buf)])

        def flags(buf: bytes, yes: Any, no: Any, type_: Any) -> Any:
            bits = fixed(pa.bool_(), buf)
            set_ = bits.true_count
            if set_ in (0, n):
                return self._constant(type_, yes if set_ else no, n)
            return pa.array([no, yes], type_).take(bits.cast(pa.int8()))

        def codecs(buf: bytes | int, type_: Any) -> Any:  # the built-in codecs' names
            if isinstance(buf, int):
                return self._constant(type_, CODEC_NAMES[buf], n)
            return pa.array([CODEC_NAMES[k] for k in range(max(CODEC_NAMES) + 1)], type_).take(fixed(pa.int8(), buf))

        lat = TIMESTAMP_TYPE_NAMES[LOG_APPEND_TIME], TIMESTAMP_TYPE_NAMES[CREATE_TIME]
        made = {"topic": lambda t: self._constant(t, s.topic, n), "partition": lambda t: self._constant(t, s.partition, n),
                "segment": lambda t: self._constant(t, s.path, n),
                "timestamp_type": lambda t: flags(c.log_append_time, *lat, t),
                "magic": lambda t: self._constant(t, 2, n), "codec": lambda t: codecs(c.codec, t),
                "batch_position": lambda t: fixed(t, c.position),
                "partition_leader_epoch": lambda t: fixed(t, c.leader_epoch),
                "producer_id": lambda t: fixed(t, c.producer_id), "producer_epoch": lambda t: fixed(t, c.producer_epoch),
                "sequence": lambda t: fixed(t, c.sequence),
                "is_transactional": lambda t: flags(c.transactional, True, False, t),
                "is_control": lambda t: flags(c.control, True, False, t)}
        arrays.update({name: make(self.types[name]) for name, make in made.items() if name in self.types})
        return arrays

    def flush(self):
        import pyarrow as pa

        pieces = []
        for is_run, group in groupby(self.parts, key=lambda p: isinstance(p, _Run)):
            if is_run:
                pieces.extend(self._run_arrays(p) for p in group)
            else:
                pieces.append(self._batch_arrays(list(group)))
        arrays = _joined(pieces)
        out = pa.RecordBatch.from_arrays([arrays[f.name] for f in self.schema], schema=self.schema)
        self.reset()
        return out


class _Run(NamedTuple):
    source: Slice
    run: ColumnRun


def _joined(pieces: list[dict[str, Any]]) -> dict[str, Any]:
    """Columns of consecutive rows joined, column by column."""
    import pyarrow as pa

    if len(pieces) == 1:
        return pieces[0]
    return {name: pa.concat_arrays([piece[name] for piece in pieces]) for name in pieces[0]}


def record_arrow(s: Slice, cond: Conditions | None, opts: ReadOptions, schema=None) -> Iterator[Any]:
    """Rows of the record schema as Arrow RecordBatches of about ``max_records_per_batch`` rows."""
    cols = _RecordColumns(schema if schema is not None else arrow_schema("records"))
    filt = cond is not None and cond.filters_records
    limit = opts.max_records_per_batch
    lists = slice_batch_lists(s, cond, opts)
    # Without a record-level filter, runs of v2 batches come as columns at once
    # (``runs_and_batches``: control batches are rows here, and no CRC is checked, as below).
    budget = ColumnBudget(limit, 1 << 62, CONTROL_ROWS, check_crc=False, limit=opts.max_decompressed_bytes)
    items = chain.from_iterable(lists) if filt else runs_and_batches(lists, None, None, budget)
    for b in items:
        if isinstance(b, ColumnRun):
            cols.add_run(s, b)
            if cols.n >= limit:
                yield cols.flush()
            budget.rows = limit - cols.n
            continue
        # The C reader's spans go straight into the columns (``span_columns``); a record-level
        # filter, or a batch the reader gives no spans for, goes through decoded records.
        records = _records(b, opts, spans=not filt)
        if isinstance(records, KsegError):
            if opts.mode == "failfast":
                raise records.located(file=s.path)
            continue
        if isinstance(records, RecordSpans):
            cols.add_spans(s, b, records)
        else:
            if filt:
                ok = cond.record_ok  # type: ignore[union-attr]
                records = [r for r in records if ok(r.offset, r.timestamp)]
            cols.add(s, b, records)
        if cols.n >= limit:
            yield cols.flush()
        budget.rows = limit - cols.n
    if cols.n:
        yield cols.flush()


# --------------------------------------------------------------------------- the batch level


def batch_tuples(s: Slice, cond: Conditions | None, opts: ReadOptions) -> Iterator[tuple]:
    """One row per batch, the fields of ``kseg dump --format jsonl``'s batch lines."""
    for b in slice_batches(s, None, opts):
        v2 = b.magic >= 2
        if v2:
            first, last, count = b.base_offset, b.last_offset, b.record_count or 0
        elif b.codec != CODEC_NONE:
            records = _records(b, opts)
            if isinstance(records, KsegError):
                if opts.mode == "failfast":
                    raise records.located(file=s.path)
                continue
            first, last, count = records[0].offset, b.base_offset, len(records)
        else:
            first, last, count = b.base_offset, b.base_offset, 1
        yield (s.topic, s.partition, s.path, b.position, first, last, count, b.magic, b.codec_name,
               b.timestamp_type_name, b.max_timestamp, b.size, b.crc, b.crc_valid,
               b.partition_leader_epoch, b.producer_id, b.producer_epoch, b.base_sequence,
               b.is_transactional if v2 else None, b.is_control if v2 else None,
               b.delete_horizon_ms if v2 else None)


def batch_arrow(s: Slice, cond: Conditions | None, opts: ReadOptions, schema=None) -> Iterator[Any]:
    import pyarrow as pa

    schema = schema if schema is not None else arrow_schema("batches")
    rows: list[tuple] = []
    idx = [BATCH_COLUMNS.index(f.name) for f in schema]

    def make():
        cols = list(zip(*rows))
        return pa.RecordBatch.from_arrays([pa.array(cols[i], f.type) for i, f in zip(idx, schema)], schema=schema)

    for row in batch_tuples(s, cond, opts):
        rows.append(row)
        if len(rows) >= opts.max_records_per_batch:
            yield make()
            rows = []
    if rows:
        yield make()


def _select(rows: Iterator[tuple], level: str, columns: list[str] | None) -> Iterator[tuple]:
    if columns is None:
        return rows
    names = RECORD_COLUMNS if level == "records" else BATCH_COLUMNS
    idx = [names.index(c) for c in check_columns(level, columns)]  # type: ignore[union-attr]
    return (tuple(r[i] for i in idx) for r in rows)


def read_slice(s: Slice, cond: Conditions | None, opts: ReadOptions, schema=None) -> Iterator[Any]:
    if schema is None and opts.arrow:
        schema = arrow_schema(opts.level, opts.columns)
    if opts.level == "batches":
        if opts.arrow:
            return batch_arrow(s, cond, opts, schema)
        return _select(batch_tuples(s, cond, opts), "batches", opts.columns)
    if opts.arrow:
        return record_arrow(s, cond, opts, schema)
    return _select(record_tuples(s, cond, opts), "records", opts.columns)
