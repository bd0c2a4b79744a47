"""``format("kseg")``: Kafka log segments as a Spark data source (the Python Data Source API).

    from kseg.spark import register
    register(spark)                                   # once per session
    df = spark.read.format("kseg").load("/var/lib/kafka")          # records
    bf = spark.read.format("kseg").option("level", "batches").load(path)
    df.write.format("kseg").option("magic", 2).option("codec", "zstd").save("/tmp/out")

Reader options: ``level`` (records | batches), ``splitBytes`` (segments larger than
this are read in several tasks, cut at batch boundaries named by the offset
index; 0: one task per segment; default 128MiB), ``mode`` (failfast |
dropmalformed), ``maxDecompressedBytes``, ``fromOffset``/``toOffset``/``fromTime``/
``toTime``/``topics``/``partitions`` (the same as filters on those columns),
``arrow`` (false: hand rows over as Python tuples, slower), ``maxRecordsPerBatch``,
``pluginRegistry`` (the plugin codec registry for plugin batches; default
$KSEG_PLUGIN_REGISTRY). Writer options: see ``kseg.spark.writer``.

This module imports PySpark: import it only where Spark is wanted.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Iterator

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
    WriterCommitMessage,
)

from kseg.ops.columns import arrow_schema, read_slice, schema_ddl
from kseg.ops.registry import registry_use
from kseg.spark.writer import WriteSpec, abort_job, commit_job, new_job_id, write_task
from kseg.ops.slices import (
    Conditions,
    ReadOptions,
    Slice,
    option_conditions,
    pack_slices,
    plan_slices,
)

_OPS = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<=", In: "in"}
_RECORD_ONLY = ("offset", "timestamp")


class SlicePartition(InputPartition):
    """One Spark input partition: segment files or byte ranges of them (a tuple of Slices)."""

    def __init__(self, slices: tuple[Slice, ...]):
        super().__init__(slices)


class KsegDataSource(DataSource):
    """Kafka log segments: a log directory, partition folders or .log files."""

    @classmethod
    def name(cls) -> str:
        return "kseg"

    def schema(self) -> str:
        level = "batches" if str(self.options.get("level") or "records").lower() == "batches" else "records"
        columns = self.options.get("columns")
        return schema_ddl(level, [c.strip() for c in str(columns).split(",") if c.strip()] if columns else None)

    def reader(self, schema) -> DataSourceReader:
        return KsegReader(self.options, schema)

    def writer(self, schema, overwrite: bool) -> "KsegWriter":
        return KsegWriter(dict(self.options), schema, overwrite)


class KsegNoPushdownDataSource(KsegDataSource):
    """The same source for sessions with spark.sql.python.filterPushdown.enabled=false."""

    def reader(self, schema) -> DataSourceReader:
        return _PlainReader(self.options, schema)


class _PlainReader(DataSourceReader):
    def __init__(self, options: Any, schema: Any):
        self.opts = ReadOptions.parse(options)
        self.cond: Conditions = option_conditions(options)
        self.schema_json = schema.json() if hasattr(schema, "json") else None
        self.setup = registry_use(options.get("pluginRegistry"))  # what each task calls first

    def partitions(self) -> list[InputPartition]:
        cond = self.cond
        slices = plan_slices(self.opts.paths, self.opts.split_bytes, cond)
        groups = pack_slices(slices, self.opts.split_bytes, self.opts.min_partition_bytes)
        return [SlicePartition(tuple(g)) for g in groups]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        slices = partition.value
        if not slices:  # no segment at all: Spark asks for one partition anyway
            return iter(())
        self.setup()
        schema = arrow_schema(self.opts.level, self.opts.columns) if self.opts.arrow else None
        cond = self.cond if self.opts.level == "records" else _slice_only(self.cond)
        return chain.from_iterable(read_slice(s, cond, self.opts, schema) for s in slices)


class KsegReader(_PlainReader):
    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        for f in filters:
            op = _OPS.get(type(f))
            attribute: tuple = getattr(f, "attribute", ())
            column = attribute[0] if len(attribute) == 1 else None
            value = getattr(f, "value", None)
            if op is None or column is None:
                yield f
                continue
            if self.opts.level == "batches" and column in _RECORD_ONLY:
                yield f
                continue
            if not self.cond.add(column, op, value):
                yield f


def _slice_only(c: Conditions) -> Conditions:
    return Conditions(topics=c.topics, partitions=c.partitions, segments=c.segments,
                      partition_lo=c.partition_lo, partition_hi=c.partition_hi)


# --------------------------------------------------------------------------- writing


class KsegCommit(WriterCommitMessage):
    def __init__(self, pieces: list, stats: dict, staging: str):
        self.pieces = pieces
        self.stats = stats
        self.staging = staging


class KsegWriter(DataSourceArrowWriter):
    """Each task writes its rows as segments of each topic-partition into a private staging
    folder; ``commit`` (on the driver) checks their offset ranges and moves them into place."""

    def __init__(self, options: dict, schema: Any, overwrite: bool):
        self.spec = WriteSpec.parse(options)
        self.columns = list(schema.fieldNames())
        self.overwrite = overwrite
        self.job_id = new_job_id()
        self.spec.check_columns(self.columns)

    def write(self, iterator: Iterator[Any]) -> KsegCommit:
        from pyspark import TaskContext


        ctx = TaskContext.get()
        task = f"{ctx.partitionId():05d}-{ctx.attemptNumber()}" if ctx else "00000-0"
        pieces, stats, staging = write_task(self.spec, self.job_id, task, iterator)
        return KsegCommit(pieces, stats, staging)

    def commit(self, messages: list) -> None:
        commit_job(self.spec, self.job_id, [m for m in messages if m is not None], self.overwrite)

    def abort(self, messages: list) -> None:
        abort_job(self.spec, self.job_id)


def register(spark: Any, *, filter_pushdown: bool = True) -> None:
    """Make ``spark.read.format("kseg")`` and ``df.write.format("kseg")`` available in ``spark``.

    Filter pushdown for Python data sources is a session setting
    (``spark.sql.python.filterPushdown.enabled``); it is turned on here unless
    ``filter_pushdown=False``, in which case a source without pushdown is registered.
    """
    if filter_pushdown:
        try:
            spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        except Exception:
            filter_pushdown = False
    spark.dataSource.register(KsegDataSource if filter_pushdown else KsegNoPushdownDataSource)
