"""``kseg spark ...``: the single-machine commands, distributed on Spark.

Each command takes the plain command's own options (the click parameters are
shared, so they cannot drift apart), prints the same output and exits with the
same code; it adds ``--master``, ``--conf``, ``--report`` and ``--timings``.
verify and dump run one task per file, the writers (conversions, compaction,
salvage) one task per topic-partition, on the operations' own plan / run / merge steps. Loaded only when ``kseg spark`` is used.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import click

from kseg.cli.common import (
    EXIT_DATA,
    EXIT_OK,
    Decorator,
    guarded,
    params_of,
    shown_options,
    verify_options,
)
from kseg.cli.dump import dump as plain_dump, run_dump
from kseg.cli.salvage import keep_crc_failed_file, salvage_cmd, salvage_options, write_crc_failed_file
from kseg.cli.write import WRITE_COMMANDS, compact_cmd, compact_setup, conversion_job
from kseg.errors import InputError, KsegError
from kseg.interrupts import interruption
from kseg.log.atomic import AtomicFile
from kseg.log.segment import is_stream
from kseg.ops.dump_split import OPERATION as DUMP
from kseg.ops.compact_split import OPERATION as COMPACT, CompactJob
from kseg.ops.convert_split import CONVERSIONS, CONVERSIONS_SPLIT
from kseg.ops.salvage import OPERATION as SALVAGE, SalvageJob
from kseg.ops.skips import skipped_json
from kseg.ops.verify import VerifyOptions, input_groups, verify_kafka07
from kseg.printable import printable
from kseg.render.reports import compact_json, compact_line, job_line, write_verify
from kseg.render.salvage import write_salvage
from kseg.spark.jobs import (
    run_operation,
    stream_operation,
    spark_verify,
    verify_report_json,
    verify_rows,
    write_report,
    writer_rows,
)
from kseg.spark.tasks import Failed
from kseg.spark.tools import register as register_tools


@click.group("spark", context_settings={"help_option_names": ["-h", "--help"]})
def spark() -> None:
    """Run verify, dump, conversions, compaction and salvage on Spark (local[*] by default, or --master URL).

    Paths must be visible at the same names from every executor (a local disk in
    local mode; a shared or network file system on a cluster), or be s3:// URLs.
    """


def _conf_pairs(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, not {v!r}", param_hint="--conf")
        out[key.strip()] = value
    return out


SPARK_PARAMS = [
    click.Option(["--master"], default=None, metavar="URL",
                 help="Spark master [default: local[*], or what spark-submit chose]."),
    click.Option(["--conf", "conf"], multiple=True, metavar="KEY=VALUE",
                 help="A Spark setting (repeatable); wins over kseg's defaults."),
    click.Option(["--report"], type=click.Path(dir_okay=False, path_type=Path), default=None,
                 help="Write per-file (per-partition) results here: Parquet for .parquet/.pq, else JSON."),
    click.Option(["--timings"], is_flag=True, help="Print Spark's start-up time and the job's time on stderr."),
]


class _Run:
    """The session for one command, with its timings."""

    def __init__(self, master: str | None, conf: tuple[str, ...], timings: bool):
        self.master, self.conf, self.timings = master, _conf_pairs(conf), timings
        self.spark: Any = None
        self.startup = 0.0
        self.workers = 0.0
        self.t_job = 0.0

    @contextlib.contextmanager
    def session(self) -> Iterator[Any]:
        try:
            from kseg.spark.session import Started, get_session
        except ImportError as e:  # pragma: no cover - depends on the install
            raise InputError(f"kseg spark needs PySpark and pyarrow: pip install 'kseg[spark]' ({e})") from None
        t0 = time.perf_counter()
        try:
            self.spark = get_session(self.master, self.conf, warm=True)
        except ImportError as e:
            raise InputError(f"kseg spark needs PySpark and pyarrow: pip install 'kseg[spark]' ({e})") from None
        except Exception as e:
            signalled = interruption()
            if signalled is not None:  # py4j turned our SIGINT/SIGTERM into an error of its own
                raise signalled from None
            raise InputError(f"cannot start Spark: {str(e).strip().splitlines()[0] if str(e).strip() else e!r}") \
                from None
        self.startup = Started.seconds or (time.perf_counter() - t0)
        self.workers = Started.workers
        t1 = time.perf_counter()
        try:
            yield self.spark
        finally:
            self.t_job = time.perf_counter() - t1
            if self.timings:
                log = f", JVM log {printable(Started.log)}" if Started.log else ""
                click.echo(f"kseg spark: start-up {self.startup:.2f} s (of which Python workers "
                           f"{self.workers:.2f} s), job {self.t_job:.2f} s "
                           f"(master {self.spark.sparkContext.master}, "
                           f"{self.spark.sparkContext.defaultParallelism} cores{log})", err=True)

    def summary(self) -> dict:
        return {"master": self.spark.sparkContext.master if self.spark else None,
                "startup_seconds": round(self.startup, 3), "worker_startup_seconds": round(self.workers, 3),
                "job_seconds": round(self.t_job, 3)}


def _command(name: str, option_set: Decorator, extra: list[click.Parameter], help_text: str):
    def decorate(fn: Callable[..., Any]) -> click.Command:
        cmd = click.Command(name, callback=guarded(fn), params=[*params_of(option_set), *extra, *SPARK_PARAMS],
                            help=help_text)
        spark.add_command(cmd)
        return cmd

    return decorate


def _no_streams(paths: Any) -> None:
    """Executors read files by name: standard input and pipes are for the plain commands."""
    for p in paths:
        if is_stream(p):
            raise InputError("kseg spark reads files by name; read standard input or a pipe with the plain "
                             "command (kseg verify -, kseg dump -)", file=str(p))


@contextlib.contextmanager
def _stdout_to(output: Path | None, keep: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Standard output into ``output``, published when the command ends normally, with an exit
    code, or with one of ``keep``; removed when it ends any other way (an interrupt)."""
    if output is None:
        yield
        return
    f = AtomicFile(output)
    import io

    text = io.TextIOWrapper(f.f, encoding=sys.stdout.encoding or "utf-8", errors=sys.stdout.errors or "strict",
                            newline=None, write_through=True)
    try:
        with contextlib.redirect_stdout(text):
            yield
    except BaseException as e:
        text.flush()
        if isinstance(e, (SystemExit, *keep)):
            text.detach()
            f.commit()
        else:
            text.detach()
            f.abort()
        raise
    text.flush()
    text.detach()
    f.commit()


# --------------------------------------------------------------------------- verify


@_command("verify", verify_options, [
    click.Option(["-o", "--output"], type=click.Path(dir_okay=False, path_type=Path), default=None,
                 help="Write the report here instead of stdout."),
], "Check segment files, partition folders or log directories on Spark, one task per file.\n\n"
   "The same checks, output and exit codes as `kseg verify` (0 clean, 1 problems, 2 unusable input).")
def verify(paths: tuple[Path, ...], quick: bool, fmt: str, no_index: bool, input_format: str, verbose: bool,
           errors_only: bool, no_notes: bool, max_decompressed_bytes: int, output: Path | None, master: str | None, conf: tuple[str, ...],
           report: Path | None, timings: bool) -> None:
    shown = shown_options(verbose, errors_only, no_notes, fmt)

    if input_format == "kafka07":
        rep = verify_kafka07(paths, quick=quick, max_decompressed_bytes=max_decompressed_bytes)
        with _stdout_to(output):
            write_verify(rep, sys.stdout, fmt, **shown)
        raise SystemExit(EXIT_OK if rep.ok else EXIT_DATA)
    options = VerifyOptions(quick=quick, max_decompressed_bytes=max_decompressed_bytes, check_indexes=not no_index,
                            input_format=input_format)
    _no_streams(paths)
    input_groups(paths)  # unusable input: exit 2 before Spark starts
    run = _Run(master, conf, timings)
    with run.session() as session:
        rep, rows, stats = spark_verify(session, paths, options)
    with _stdout_to(output):
        write_verify(rep, sys.stdout, fmt, **shown)
    if report is not None:
        facts = {**stats, **run.summary()}
        write_report(report, "verify", verify_rows(rep, rows), {"ok": rep.ok, "error_count": rep.error_count, **facts},
                     document=verify_report_json(rep, rows, facts))
    raise SystemExit(EXIT_OK if rep.ok else EXIT_DATA)


# --------------------------------------------------------------------------- dump


class _SparkDump:
    """``kseg spark dump``'s runner (``kseg.cli.dump.DumpRunner``): every file rendered on Spark by
    dump's own ``run``, the output merged on the driver in file order as it comes."""

    def __init__(self, run: _Run):
        self.run = run
        self.ran: list[tuple[Any, Any, Any]] = []
        self.started = False

    def takes(self, files: list[Path], options: Any) -> bool:
        _no_streams(files)
        return True

    def __call__(self, job: Any, files: list[Path], spool: str) -> Iterator[Any]:
        self.started = True
        with self.run.session() as session:
            yield from stream_operation(session, DUMP, (files, spool), job, spool, self.ran)

    def report(self, path: Path) -> None:
        rows = [{"file": str(unit.path), "batches": p.counts.batches, "records": p.counts.records,
                 "problems": p.counts.problems, "error": None if p.error is None else str(p.error),
                 "seconds": info.seconds, "host": info.host} for unit, p, info in self.ran if not isinstance(p, Failed)]
        problems = sum(r["problems"] for r in rows)
        ok = not problems and all(r["error"] is None for r in rows) and len(rows) == len(self.ran)
        write_report(path, "dump", rows, {"ok": ok, "problems": problems, **self.run.summary()})


def _spark_dump(paths: tuple[Path, ...], output: Path | None, tmp_dir: Path | None, master: str | None,
                conf: tuple[str, ...], report: Path | None, timings: bool, **options: Any) -> None:
    runner = _SparkDump(_Run(master, conf, timings))
    where = str(tmp_dir) if tmp_dir else (str(output.absolute().parent) if output is not None else None)
    try:
        with _stdout_to(output, keep=(KsegError,)):  # what was read is kept, also when an error stops the dump
            run_dump(paths, runner, spool_dir=where, **options)
    except (KsegError, SystemExit):
        if report is not None and runner.started:
            runner.report(report)
        raise
    if report is not None and runner.started:
        runner.report(report)


spark.add_command(click.Command("dump", callback=guarded(_spark_dump), params=[
    *(p for p in plain_dump.params if p.name != "jobs"),  # Spark's own parallelism
    click.Option(["-o", "--output"], type=click.Path(dir_okay=False, path_type=Path), default=None,
                 help="Write the dump here instead of stdout."),
    click.Option(["--tmp-dir"], type=click.Path(file_okay=False, path_type=Path), default=None,
                 help="Where tasks leave their text for the driver [default: beside --output, else the "
                      "system's temporary folder]; on a cluster, a folder every executor can write."),
    *SPARK_PARAMS,
], help="Show the batches (and with --records the records) of segment files, one Spark task per file.\n\n"
        "The same output as `kseg dump` (its options), streamed in file order."))


# --------------------------------------------------------------------------- writers


def _writer(plain: click.Command, help_text: str) -> Callable[[Callable[..., Any]], click.Command]:
    """A writer's Spark command: the plain command's options but ``-j`` (Spark's own parallelism)."""
    def decorate(fn: Callable[..., Any]) -> click.Command:
        params = [p for p in plain.params if p.name != "jobs"] + SPARK_PARAMS
        cmd = click.Command(plain.name, callback=guarded(fn), params=params, help=help_text)
        spark.add_command(cmd)
        return cmd

    return decorate


def _run_writer(op: Any, inputs: Any, job: Any, master: str | None, conf: tuple[str, ...],
                report: Path | None, timings: bool, summary: Callable[[Any], dict]) -> Any:
    """A writer's operation on Spark, its ``--report`` written; returns the operation's result."""
    run = _Run(master, conf, timings)
    with run.session() as session:
        result, ran = run_operation(session, op, inputs, job)
    if report is not None:
        write_report(report, op.name, writer_rows(ran), {**summary(result), **run.summary()})
    return result


def _conversion(command: str) -> None:
    def convert(input_path: Path, output: Path, master: str | None, conf: tuple[str, ...], report: Path | None,
                timings: bool, **options: Any) -> None:
        job = conversion_job(command, input_path, output, **options)
        result = _run_writer(CONVERSIONS_SPLIT[command], input_path, job, master, conf, report, timings,
                             lambda r: {"summary": r.summary.as_json(), "skipped": skipped_json(r.skipped)})
        click.echo(job_line(result, output), err=True)
        if result.incomplete:  # damaged batches skipped or carried, partitions skipped: the data had problems
            raise SystemExit(EXIT_DATA)

    plain = WRITE_COMMANDS[command]
    _writer(plain, f"{(plain.help or '').splitlines()[0]} On Spark, one task per topic-partition "
                   f"(the options of `kseg {command}`).")(convert)


for _name in CONVERSIONS:
    _conversion(_name)


@_writer(compact_cmd, "Keep the latest record per key on Spark, one task per topic-partition (the options of "
                      "`kseg compact`).")
def compact(inputs: tuple[Path, ...], output: Path | None, dry_run: bool, force: bool, fmt: str,
            index_interval_bytes: int, master: str | None, conf: tuple[str, ...], report: Path | None,
            timings: bool, **options: Any) -> None:
    o, wanted = compact_setup(inputs, output, dry_run, **options)
    job = CompactJob(o, None if dry_run else str(output), force, wanted, index_interval_bytes)
    result = _run_writer(COMPACT, list(inputs), job, master, conf, report, timings,
                         lambda r: {"partitions": r.partitions, "now_ms": o.now_ms, **r.stats.as_json()})
    if fmt == "json":
        click.echo(compact_json(result, o.now_ms))
    else:
        click.echo(compact_line(result, dry_run, output), err=True)
    if result.damaged:
        raise SystemExit(EXIT_DATA)


@_writer(salvage_cmd, "Recover every batch the damage did not touch on Spark, one task per partition "
                      "(the options, report and output of `kseg salvage`).")
def salvage(input_path: Path, output: Path | None, fmt: str, master: str | None, conf: tuple[str, ...],
            report: Path | None, timings: bool, keep_crc_failed: Path | None, **options: Any) -> None:
    _no_streams([input_path])
    keep_crc_failed_file(input_path, output, keep_crc_failed, **options)
    rep = _run_writer(SALVAGE, input_path, SalvageJob(salvage_options(keep_crc_failed=keep_crc_failed is not None,
                                                                      **options), None if output is None else
                                                      str(output)),
                      master, conf, report, timings, lambda r: {"ok": r.ok, "ranges_lost": len(r.lost)})
    write_crc_failed_file(rep, keep_crc_failed)
    write_salvage(rep, sys.stdout, fmt)
    raise SystemExit(EXIT_OK if rep.ok else EXIT_DATA)


register_tools(spark, SPARK_PARAMS, _Run)  # kseg spark diff, find, stats
