"""kseg on Spark: Kafka log directories as DataFrames, and the kseg commands distributed.

    from kseg.spark import get_session, register, write_log_dir

    spark = get_session()                       # local[*] with kseg's defaults, format("kseg") registered
    register(spark)                             # or: make format("kseg") available in any session
    df = spark.read.format("kseg").load("/var/lib/kafka")
    write_log_dir(df.where("topic = 'orders'"), "/tmp/orders", magic=2, codec="zstd")

Importing ``kseg.spark`` does not import PySpark; the functions below do, when called.
"""

from __future__ import annotations

from typing import Any


def register(spark: Any, *, filter_pushdown: bool = True) -> None:
    """Make ``format("kseg")`` available in a SparkSession (reads and writes)."""
    from kseg.spark.source import register as _register

    _register(spark, filter_pushdown=filter_pushdown)


def get_session(master: str | None = None, conf: dict[str, str] | None = None, **kw: Any) -> Any:
    """A SparkSession with kseg's defaults (see ``kseg.spark.session``), ``format("kseg")`` registered."""
    from kseg.spark.session import get_session as _get

    return _get(master, conf, **kw)


def read_log_dir(spark: Any, *paths: str, **options: Any) -> Any:
    """``spark.read.format("kseg").options(**options).load(paths)``, registering the source first."""
    register(spark)
    reader = spark.read.format("kseg")
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(list(paths) if len(paths) > 1 else paths[0])


def write_log_dir(df: Any, path: str, *, mode: str = "append", **options: Any) -> None:
    """Write a DataFrame with the record schema as a log directory, whatever its partitioning:
    each topic-partition goes to one task, in offset order.

    ``mode`` "append" (the output is created, or gets new topic-partition folders; an existing
    topic-partition is never touched: an error) or "overwrite" (the output is replaced once
    every task has succeeded). Spark 4's Python data sources take no other save mode.
    """
    register(df.sparkSession)
    keys = [c for c in ("topic", "partition") if c in df.columns]
    ordered = (df.repartition(*keys) if keys else df.coalesce(1)).sortWithinPartitions(*keys, "offset")
    writer = ordered.write.format("kseg").mode(mode)
    for k, v in options.items():
        writer = writer.option(k, v)
    writer.save(path)


__all__ = ["get_session", "read_log_dir", "register", "write_log_dir"]
