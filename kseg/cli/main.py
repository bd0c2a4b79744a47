"""The ``kseg`` command group and its plain commands: parse options, call operations, present results.

Exit codes: 0 fine, 1 the data has problems, 2 bad usage or unreadable input.
Errors are one line on stderr (``kseg: error: ...``); ``--traceback`` shows the stack.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import click

from kseg.cli.common import (
    EXIT_DATA,
    EXIT_OK,
    EXIT_USAGE,
    State,
    check_log_append,
    compact_options,
    compact_setup,
    down_convert_options,
    dump_options,
    expand_for_dump,
    fail,
    guarded,
    index_interval_option,
    prepare_dump,
    rebase_options,
    recompress_options,
    topic_set,
    up_convert_options,
    verify_options,
    write_flags,
)
from kseg.cli.plugins import plugins
from kseg.codecs.choice import choose
from kseg.codecs.plugins import activate
from kseg.companions.build import build_indexes
from kseg.companions.check import check_segment_companions
from kseg.errors import InputError, KsegError, TruncatedError
from kseg.log.atomic import write_atomic, write_atomic_many
from kseg.log.decode import Tail
from kseg.log.segment import base_offset_of, companion_path, strict_batches, zero_bytes_to_end
from kseg.ops.compact import compact_job
from kseg.ops.convert import (
    DownOptions,
    RecompressOptions,
    UpOptions,
    down_convert,
    rebase_maker,
    recompress,
    up_convert,
)
from kseg.ops.dump import BadBatchEvent, DumpOptions, TailEvent, dump_paths
from kseg.ops.jobs import run_job
from kseg.ops.kafka07 import up_convert_kafka07, verify_kafka07
from kseg.ops.verify import VerifyOptions, verify_paths
from kseg.render.dump import RENDERERS, KafkaRenderer
from kseg.render.kafka07 import dump_kafka07
from kseg.render.reports import compact_json, compact_line, job_line, write_verify


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--traceback", is_flag=True, help="Show the Python stack on errors (for bug reports).")
@click.option("--plugin-registry", type=click.Path(path_type=Path), envvar="KSEG_PLUGIN_REGISTRY", default=None,
              help="Plugin codec registry: a plugin-python-topic-0 folder or a JSON file "
                   "[env: KSEG_PLUGIN_REGISTRY].")
@click.version_option(package_name="kseg")
def main(traceback: bool, plugin_registry: Path | None) -> None:
    """Look inside, verify and convert Apache Kafka log segment files."""
    State.traceback = traceback
    try:
        activate(plugin_registry)
    except KsegError as e:
        if traceback:
            raise
        fail(e)


@main.command()
@dump_options
@guarded
def dump(paths: tuple[Path, ...], records: bool, fmt: str, payload: str | None, key_decoder: str | None,
         value_decoder: str | None, decode: str | None, from_offset: int | None, to_offset: int | None,
         from_time: int | None, to_time: int | None, max_bytes: int | None, keep_going: bool,
         input_format: str, max_decompressed_bytes: int) -> None:
    """Show the batches (and with --records the records) of segment files.

    PATHS are .log, .index, .timeindex, .txnindex, .snapshot or .checkpoint files,
    leader-epoch-checkpoint, partition.metadata or quorum-state files, partition
    folders or log directories.
    """
    payload, kd, vd, records, decode = prepare_dump(fmt, payload, key_decoder, value_decoder, records, decode)
    files = expand_for_dump(paths)
    if input_format == "kafka07":
        dump_kafka07(files, sys.stdout, fmt=fmt, deep=records, key_decoder=kd, value_decoder=vd)
        return
    options = DumpOptions(records=records, from_offset=from_offset, to_offset=to_offset, from_time=from_time,
                          to_time=to_time, max_bytes=max_bytes, max_decompressed_bytes=max_decompressed_bytes,
                          keep_going=keep_going, strict_names=fmt == "kafka", decode=decode)
    renderer = (KafkaRenderer(sys.stdout, sys.stderr, kd, vd, deep=records) if fmt == "kafka"
                else RENDERERS[fmt](sys.stdout, sys.stderr, kd, vd))
    problems = unreadable = 0
    live = live_tails(paths, files)
    try:
        for path in files:
            try:
                for ev in dump_paths([path], options):
                    renderer(ev)
                    if isinstance(ev, BadBatchEvent) or (isinstance(ev, TailEvent) and ev.reported
                                                         and not live(ev.path, ev.tail)):
                        problems += 1
            except InputError as e:
                sys.stdout.flush()
                if not os.path.lexists(path):  # deleted by the broker since it was listed
                    click.echo(f"kseg: note: {path}: the file went away during the run", err=True)
                    continue
                if not keep_going:
                    raise
                click.echo(f"kseg: error: {e}", err=True)  # one line; the rest goes on
                unreadable += 1
    finally:
        renderer.close()
        sys.stdout.flush()
    if unreadable:
        raise SystemExit(EXIT_USAGE)
    if problems:
        # Everything readable was shown; the data still has problems (exit 1, as verify).
        click.echo(f"kseg: {problems} problem(s) in the data (partial or undecodable batches); "
                   "see kseg verify", err=True)
        raise SystemExit(EXIT_DATA)


def live_tails(paths: tuple[Path, ...], files: list[Path]) -> Callable[[Path, Tail], bool]:
    """Whether a tail is what a live broker leaves (shown, but not a problem in the data): a
    partial batch at the end of a partition folder's newest segment, or preallocated zeros."""
    named = {Path(p) for p in paths}
    newest = {f.parent: f for f in files if f not in named and f.suffix == ".log"}

    def live(path: Path, tail: Tail) -> bool:
        if isinstance(tail.error, TruncatedError):
            return newest.get(path.parent) == path
        return zero_bytes_to_end(path, tail.position) is not None

    return live


@main.command()
@verify_options
@guarded
def verify(paths: tuple[Path, ...], quick: bool, fmt: str, no_index: bool, input_format: str, verbose: bool,
           max_decompressed_bytes: int) -> None:
    """Check segment files, partition folders or log directories; report every problem.

    Exit 0 when clean, 1 when problems were found, 2 when the input is unusable.
    """
    progress = _progress() if sys.stderr.isatty() else None
    if input_format == "kafka07":
        report = verify_kafka07(paths, quick=quick, max_decompressed_bytes=max_decompressed_bytes)
    else:
        options = VerifyOptions(quick=quick, max_decompressed_bytes=max_decompressed_bytes,
                                check_indexes=not no_index)
        report = verify_paths(paths, options, progress=progress)
    if progress:
        click.echo("\r\033[K", nl=False, err=True)
    write_verify(report, sys.stdout, fmt, verbose=verbose)
    if report.unreadable:  # every other file was checked; these could not be read
        raise SystemExit(EXIT_USAGE)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def _progress() -> Callable[[str], None]:
    count = [0]

    def show(path: str) -> None:
        count[0] += 1
        click.echo(f"\r\033[Kverifying [{count[0]}] {path}", nl=False, err=True)

    return show


# --------------------------------------------------------------------------- writing commands


@main.command("up-convert")
@up_convert_options
@guarded
def up_convert_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
                   max_decompressed_bytes: int, to_magic: int, codec: str, level: int | None, input_format: str,
                   base_offset: int, timestamp_type: str, log_append_time: int | None, batch_records: int,
                   batch_bytes: int) -> None:
    """Convert to a newer message format: pre-0.8 -> v0/v1/v2, v0 -> v1, v0/v1 -> v2."""
    check_log_append(timestamp_type, log_append_time)
    o = UpOptions(to_magic=to_magic, choice=choose(codec, level), log_append_time=log_append_time,
                  batch_records=batch_records, batch_bytes=batch_bytes, limit=max_decompressed_bytes)
    options = write_flags(no_index, index_interval_bytes, force)
    if input_format == "kafka07":
        result = up_convert_kafka07(input_path, output, o, base_offset, options)
    else:
        result = run_job([input_path], output, lambda segs: (lambda b, s: up_convert(b, o, s), 0), options)
    click.echo(job_line(result, output), err=True)


@main.command("down-convert")
@down_convert_options
@guarded
def down_convert_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
                     max_decompressed_bytes: int, to_magic: int, codec: str, level: int | None) -> None:
    """Convert to an older message format as the broker did for old consumers (drops what it cannot carry)."""
    o = DownOptions(to_magic=to_magic, choice=choose(codec, level), limit=max_decompressed_bytes)
    options = write_flags(no_index, index_interval_bytes, force)
    result = run_job([input_path], output, lambda segs: (lambda b, s: down_convert(b, o, s), 0), options)
    click.echo(job_line(result, output), err=True)


@main.command("recompress")
@recompress_options
@guarded
def recompress_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
                   max_decompressed_bytes: int, codec: str, level: int | None, topics: str,
                   batch_records: int) -> None:
    """Same message format, new codec (the old compression.codec / compressed.topics pair)."""
    o = RecompressOptions(choice=choose(codec, level, keep_allowed=False), batch_records=batch_records,
                          limit=max_decompressed_bytes)
    wanted = topic_set(topics)
    options = write_flags(no_index, index_interval_bytes, force)
    result = run_job([input_path], output, lambda segs: (lambda b, s: recompress(b, o, s), 0), options,
                     select=(lambda topic: not wanted or topic in wanted))
    click.echo(job_line(result, output), err=True)


@main.command("rebase")
@rebase_options
@guarded
def rebase_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
               max_decompressed_bytes: int, base_offset: int) -> None:
    """Shift every offset so the data starts at --base-offset (v1/v2: no decompression)."""
    options = write_flags(no_index, index_interval_bytes, force)
    result = run_job([input_path], output, rebase_maker(base_offset, max_decompressed_bytes), options)
    click.echo(job_line(result, output), err=True)


@main.command("index")
@click.argument("segment", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--check", "mode", flag_value="check", default=True, help="Check .index/.timeindex (default).")
@click.option("--rebuild", "mode", flag_value="rebuild", help="Write .index/.timeindex anew from the log.")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --rebuild: write the indexes into this folder instead of beside the segment.")
@index_interval_option
@guarded
def index_cmd(segment: Path, mode: str, output: Path | None, index_interval_bytes: int) -> None:
    """Check or rebuild a segment's offset and time indexes."""
    if mode == "check":
        findings = check_segment_companions(segment)
        errors = [f for f in findings if f.severity == "error"]
        for f in findings:
            click.echo(f"{f.severity}: {f}")
        click.echo(f"{segment}: {'ok' if not errors else f'{len(errors)} error(s)'}")
        raise SystemExit(EXIT_DATA if errors else EXIT_OK)
    base = base_offset_of(segment)
    if base is None:
        raise InputError("segment name does not start with its base offset", file=str(segment))
    entries = [b._replace(raw=memoryview(b"")) for b in strict_batches(segment)]
    index, timeindex = build_indexes(entries, base, index_interval_bytes)
    folder = output or segment.parent
    index_path, time_path = companion_path(segment, ".index", folder), companion_path(segment, ".timeindex", folder)
    write_atomic_many({index_path: index, time_path: timeindex})  # both or neither
    click.echo(f"kseg: wrote {index_path} ({len(index) // 8} entries) and "
               f"{time_path} ({len(timeindex) // 12} entries)", err=True)


@main.command("compact")
@compact_options
@guarded
def compact_cmd(inputs: tuple[Path, ...], output: Path | None, dry_run: bool, force: bool, now_ms: int | None,
                delete_retention_ms: int, min_compaction_lag_ms: int, include_active: bool, topics: str,
                key_map_bytes: int, producer_id_expiration_ms: int, first_dirty_offset: int | None,
                single_pass: bool, fmt: str, max_decompressed_bytes: int) -> None:
    """Keep the latest record per key, as Kafka's log cleaner does (offline)."""
    o, wanted = compact_setup(inputs, output, dry_run, now_ms, delete_retention_ms, min_compaction_lag_ms,
                              include_active, topics, key_map_bytes, producer_id_expiration_ms,
                              first_dirty_offset, single_pass, max_decompressed_bytes)
    result = compact_job(list(inputs), None if dry_run else output, o, force=force, topics=wanted)
    if fmt == "json":
        click.echo(compact_json(result, o.now_ms))
    else:
        click.echo(compact_line(result, dry_run, output), err=True)


class _LazySpark(click.Group):
    """``kseg spark ...``: loaded on use, so that plain commands never import PySpark."""

    def _real(self) -> click.Group:
        from kseg.spark.cli import spark  # late: PySpark only when kseg spark is used

        return spark

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self._real().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._real().get_command(ctx, name)


main.add_command(plugins)
main.add_command(_LazySpark("spark", help="Run verify, dump, conversions and compaction on Spark "
                                         "(needs the spark extra: pip install 'kseg[spark]')."))

if __name__ == "__main__":  # pragma: no cover
    main()
