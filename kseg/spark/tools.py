"""``kseg spark diff|find|stats``: the operator tools with one Spark task per topic-partition.

Each takes the plain command's options plus ``--master``/``--conf``/``--report``/``--timings``,
prints the same output and exits with the same code. Tasks run kseg's own operations
(``kseg.ops.diff``, ``find``, ``stats``) on one partition and send back picklable results;
the driver puts them in order and renders them. ``register`` adds the commands to the
``kseg spark`` group (called from ``kseg.spark.cli``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded
from kseg.cli.diff import diff_cmd, diff_options_from
from kseg.cli.find import find_cmd, find_options_from, show_find
from kseg.cli.stats import stats_cmd
from kseg.ops.diff import OPERATION as DIFF, DiffReport
from kseg.ops.find import OPERATION as FIND, FindStats, matches_of
from kseg.ops.stats import OPERATION as STATS, StatsOptions
from kseg.render.html_report import write_html_report
from kseg.render.payload import load_decoder
from kseg.render.tools import FindWriter, write_diff, write_stats
from kseg.spark.jobs import run_operation, stream_operation, write_report


# --------------------------------------------------------------------------- commands


def register(group: click.Group, spark_params: list[click.Parameter], run_cls: Any) -> None:
    """Add diff, find and stats to ``kseg spark`` (``run_cls``: the session wrapper of kseg.spark.cli)."""

    def command(plain: click.Command, callback: Any, help_text: str, extra: tuple[click.Parameter, ...] = ()) -> None:
        params = [p for p in plain.params if p.name != "jobs"] + [*extra, *spark_params]  # Spark's own parallelism
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

    def find(master: str | None, conf: tuple[str, ...], report: Path | None, timings: bool, tmp_dir: Path | None,
             **kw: Any) -> None:
        o = find_options_from(**kw)
        writer = FindWriter(sys.stdout, kw["fmt"], load_decoder(kw["key_decoder"]), load_decoder(kw["value_decoder"]),
                            folders=len(kw["paths"]) > 1)
        run = run_cls(master, conf, timings)
        st, ran = FindStats(), []  # type: ignore[var-annotated]
        # Tasks spool their matches in a folder the driver reads (memory stays bounded however
        # many match), and the first partitions' matches are shown while the others run.
        with tempfile.TemporaryDirectory(prefix="kseg-find-", dir=tmp_dir) as spool, run.session() as session:
            merged = stream_operation(session, FIND, (list(kw["paths"]), spool), o, spool, ran)
            code = show_find(matches_of(merged, st), st, writer)
        if report is not None:
            rows: dict[str, dict] = {}  # a partition searched in parts (slices of a segment): one row
            for u, p, info in ran:
                name = f"{u.topic}-{u.partition}" if u.topic is not None else str(u.files[0])
                row = rows.setdefault(name, {"partition": name, "matches": 0, "records": 0, "seconds": 0.0,
                                             "host": info.host})
                row["matches"] += p.stats.matches
                row["records"] += p.stats.records
                row["seconds"] = round(row["seconds"] + info.seconds, 6)
            write_report(report, "find", list(rows.values()), {"matches": st.matches, **run.summary()})
        raise SystemExit(code)

    def stats(paths: tuple[Path, ...], segments: bool, html: Path | None, fmt: str, max_decompressed_bytes: int,
              master: str | None, conf: tuple[str, ...], report: Path | None, timings: bool) -> None:
        o = StatsOptions(max_decompressed_bytes=max_decompressed_bytes)
        run = run_cls(master, conf, timings)
        with run.session() as session:
            rep, _ = run_operation(session, STATS, list(paths), o)
        results = [p for t in rep.topics for p in t.partitions]  # a partition read in parts: one row
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
                            "`kseg find`, in partition order, shown as the partitions are searched).",
            (click.Option(["--tmp-dir"], type=click.Path(file_okay=False, path_type=Path), default=None,
                          help="Where tasks leave their matches for the driver [default: the system's temporary "
                               "folder]; on a cluster, a folder every executor can write."),))
    command(stats_cmd, stats, "Statistics on Spark, one task per topic-partition (the options and output of "
                              "`kseg stats`).")


__all__ = ["register"]
