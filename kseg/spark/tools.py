"""``kseg spark diff|find|stats``: the operator tools with one Spark task per topic-partition.

Each takes the plain command's options plus ``--master``/``--conf``/``--report``/``--timings``,
prints the same output and exits with the same code. Tasks run kseg's own operations
(``kseg.ops.diff``, ``find``, ``stats``) on one partition and send back picklable results;
the driver puts them in order and renders them. ``register`` adds the commands to the
``kseg spark`` group (called from ``kseg.spark.cli``).
"""

from __future__ import annotations

import io
import sys
from functools import partial
from pathlib import Path
from typing import Any

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded
from kseg.cli.tools import diff_cmd, diff_options_from, find_cmd, find_options_from, stats_cmd
from kseg.errors import KsegError
from kseg.ops.diff import OPERATION as DIFF, DiffReport
from kseg.ops.find import FindStats, find_in_groups, partition_groups, select_groups
from kseg.ops.stats import OPERATION as STATS, StatsOptions
from kseg.render.html_report import write_html_report
from kseg.render.payload import load_decoder
from kseg.render.tools import FindWriter, find_summary, write_diff, write_stats
from kseg.spark.jobs import run_operation, run_tasks, write_report
from kseg.spark.tasks import Failed


def _size(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        try:
            total += p.stat().st_size
        except OSError:
            pass
    return total


def _raise_failures(results: list[Any]) -> None:
    for r in results:
        if isinstance(r, Failed):
            raise r.error


# --------------------------------------------------------------------------- tasks (run on executors)


def find_task(args: tuple, group: Any) -> Any:
    o, fmt, key_decoder, value_decoder, folders = args
    st = FindStats()
    out = io.StringIO()
    writer = FindWriter(out, fmt, load_decoder(key_decoder), load_decoder(value_decoder), folders=folders)
    try:
        for m in find_in_groups([group], o, st):
            writer(m)
    except KsegError as e:
        return Failed(e)
    return out.getvalue(), st


# --------------------------------------------------------------------------- commands


def register(group: click.Group, spark_params: list[click.Parameter], run_cls: Any) -> None:
    """Add diff, find and stats to ``kseg spark`` (``run_cls``: the session wrapper of kseg.spark.cli)."""

    def command(plain: click.Command, callback: Any, help_text: str) -> None:
        params = [p for p in plain.params if p.name != "jobs"] + list(spark_params)  # Spark's own parallelism
        group.add_command(click.Command(plain.name, callback=guarded(callback), params=params, help=help_text))

    def diff(a: Path, b: Path, records: bool, check_crc: bool, max_records: int, key_decoder: str,
             value_decoder: str, fmt: str, max_decompressed_bytes: int, master: str | None, conf: tuple[str, ...],
             report: Path | None, timings: bool) -> None:
        o = diff_options_from(records, check_crc, max_records, max_decompressed_bytes)
        kd, vd = load_decoder(key_decoder), load_decoder(value_decoder)
        run = run_cls(master, conf, timings)
        with run.session() as session:
            results, _ = run_operation(session, DIFF, (a, b), o)
        rep = DiffReport(str(a), str(b), results)
        write_diff(rep, sys.stdout, fmt, kd, vd)
        if report is not None:
            write_report(report, "diff", [{"name": p.name, "kind": p.kind, "diverge_offset": p.diverge_offset}
                                          for p in results], {"identical": rep.identical, **run.summary()})
        raise SystemExit(EXIT_OK if rep.identical else EXIT_DATA)

    def find(master: str | None, conf: tuple[str, ...], report: Path | None, timings: bool, **kw: Any) -> None:
        o = find_options_from(**kw)
        groups = select_groups(partition_groups(list(kw["paths"])), o)
        run = run_cls(master, conf, timings)
        with run.session() as session:
            task = partial(find_task, (o, kw["fmt"], kw["key_decoder"], kw["value_decoder"], len(kw["paths"]) > 1))
            results = run_tasks(session, task, groups, [_size(g[2]) for g in groups], "kseg find")
        _raise_failures(results)
        total = FindStats()
        for text, st in results:
            sys.stdout.write(text)
            for name in ("segments", "segments_skipped", "seeks", "batches", "batches_skipped", "records",
                         "matches"):
                setattr(total, name, getattr(total, name) + getattr(st, name))
            total.problems.extend(st.problems)
            total.partitions.extend(st.partitions)
        sys.stdout.flush()
        click.echo(find_summary(total), err=True)
        if report is not None:
            write_report(report, "find", [{"partition": p, "matches": st.matches, "records": st.records}
                                          for (_, st), p in zip(results, total.partitions)],
                         {"matches": total.matches, **run.summary()})
        raise SystemExit(EXIT_DATA if total.problems else EXIT_OK)

    def stats(paths: tuple[Path, ...], segments: bool, html: Path | None, fmt: str, max_decompressed_bytes: int,
              master: str | None, conf: tuple[str, ...], report: Path | None, timings: bool) -> None:
        o = StatsOptions(max_decompressed_bytes=max_decompressed_bytes)
        run = run_cls(master, conf, timings)
        with run.session() as session:
            rep, ran = run_operation(session, STATS, list(paths), o)
        results = [p for _, p, _ in ran]
        write_stats(rep, sys.stdout, fmt, segments=segments)
        if html is not None:
            write_html_report(rep, html)
            click.echo(f"kseg: wrote {html}", err=True)
        if report is not None:
            write_report(report, "stats", [{"partition": p.path, "records": p.acc.records, "bytes": p.acc.bytes,
                                            "problems": p.acc.problem_count} for p in results],
                         {"ok": rep.ok, **run.summary()})
        raise SystemExit(EXIT_OK if rep.ok else EXIT_DATA)

    command(diff_cmd, diff, "Compare two copies of partitions on Spark, one task per partition pair "
                            "(the options and output of `kseg diff`).")
    command(find_cmd, find, "Find records on Spark, one task per topic-partition (the options and output of "
                            "`kseg find`, in partition order).")
    command(stats_cmd, stats, "Statistics on Spark, one task per topic-partition (the options and output of "
                              "`kseg stats`).")


__all__ = ["register"]
