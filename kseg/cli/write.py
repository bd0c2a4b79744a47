"""The writing commands: ``kseg up-convert``, ``down-convert``, ``recompress``, ``rebase``,
``index`` and ``compact``. Each writes a new output (a temporary name renamed when complete)
and never touches its input; ``-o s3://...`` through ``remote_output``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kseg.cli.common import (
    EXIT_DATA,
    EXIT_OK,
    check_log_append,
    compact_options,
    down_convert_options,
    guarded,
    index_interval_option,
    jobs_option,
    on_damage_option,
    rebase_options,
    recompress_options,
    topic_set,
    up_convert_options,
)
from kseg.cli.storage import LOCATION, remote_output, say, shown
from kseg.codecs.choice import choose
from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.defaults import DEFAULT_BATCH_BYTES, DEFAULT_BATCH_RECORDS
from kseg.errors import InputError
from kseg.findings import ERROR
from kseg.log.checks import STOP
from kseg.storage import VANISHED
from kseg.ops.compact import CompactOptions, default_now_ms
from kseg.ops.compact_split import CompactJob, compact_paths
from kseg.ops.convert_split import ConvertJob, convert_path
from kseg.ops.index_split import CHECK, NOTHING, VANISHED_UNIT, IndexJob, index_paths
from kseg.ops.jobs import JobResult, WriteOptions
from kseg.ops.sniff import KAFKA07, conversion_input_format
from kseg.printable import printable
from kseg.render.reports import compact_json, compact_line, job_line


@click.command("up-convert")
@up_convert_options
@jobs_option
@guarded
@remote_output
def up_convert_cmd(input_path: Path, output: Path, jobs: int, **options: Any) -> None:
    """Convert to a newer message format: pre-0.8 -> v0/v1/v2, v0 -> v1, v0/v1 -> v2."""
    finish_job(convert_path(input_path, conversion_job("up-convert", input_path, output, **options), jobs), output)


@click.command("down-convert")
@down_convert_options
@jobs_option
@guarded
@remote_output
def down_convert_cmd(input_path: Path, output: Path, jobs: int, **options: Any) -> None:
    """Convert to an older message format as the broker did for old consumers (drops what it cannot carry)."""
    finish_job(convert_path(input_path, conversion_job("down-convert", input_path, output, **options), jobs), output)


@click.command("recompress")
@recompress_options
@jobs_option
@guarded
@remote_output
def recompress_cmd(input_path: Path, output: Path, jobs: int, **options: Any) -> None:
    """Same message format, new codec (the old compression.codec / compressed.topics pair)."""
    finish_job(convert_path(input_path, conversion_job("recompress", input_path, output, **options), jobs), output)


@click.command("rebase")
@rebase_options
@jobs_option
@guarded
@remote_output
def rebase_cmd(input_path: Path, output: Path, jobs: int, **options: Any) -> None:
    """Shift every offset so the data starts at --base-offset (v1/v2: no decompression)."""
    finish_job(convert_path(input_path, conversion_job("rebase", input_path, output, **options), jobs), output)


@click.command("index")
@click.argument("inputs", nargs=-1, required=True, type=LOCATION)
@click.option("--check", "mode", flag_value="check", default=True, help="Check .index/.timeindex/.txnindex (default).")
@click.option("--rebuild", "mode", flag_value="rebuild", help="Write .index/.timeindex anew from the log.")
@click.option("-o", "--output", type=LOCATION, default=None,
              help="With --rebuild: write the indexes into this folder or s3:// prefix (partition folders and "
                   "log directories keep their layout under it) instead of beside the segments.")
@click.option("--force", is_flag=True, help="With --rebuild -o: write into an existing output folder; "
                                            "without -o: replace the indexes beside the segments.")
@index_interval_option
@on_damage_option
@jobs_option
@guarded
@remote_output(merge=True)
def index_cmd(inputs: tuple[Path, ...], mode: str, output: Path | None, force: bool,
              index_interval_bytes: int, on_damage: str, jobs: int) -> None:
    """Check or rebuild the offset and time indexes of segments, partition folders or log directories."""
    result = index_paths(list(inputs), IndexJob(mode, None if output is None else str(output), force,
                                                index_interval_bytes, on_damage), jobs)
    if mode == CHECK:
        errors = checked = 0
        for p in result.segments:
            if p.status == VANISHED_UNIT:
                click.echo(f"kseg: note: {printable(p.segment)}: {VANISHED}", err=True)
                continue
            if p.status == NOTHING:
                click.echo(f"{printable(p.segment)}: nothing to check (no .index, .timeindex or .txnindex beside it)")
                continue
            checked += 1
            bad = [f for f in p.findings if f.severity == ERROR]
            errors += len(bad)
            for f in p.findings:
                click.echo(printable(f"{f.severity}: {f}"))
            click.echo(f"{printable(p.segment)}: {'ok' if not bad else f'{len(bad)} error(s)'}")
        if not checked:
            click.echo("kseg: nothing to check: no segment has index files", err=True)
        raise SystemExit(EXIT_DATA if errors else EXIT_OK)
    for p in result.segments:
        assert p.written is not None
        index_path, n_index, time_path, n_time = p.written
        say(f"kseg: wrote {shown(Path(index_path))} ({n_index} entries) and {shown(Path(time_path))} ({n_time} entries)")
    if result.damage:
        say(f"kseg: index --rebuild: {result.damage.line()}")
        raise SystemExit(EXIT_DATA)


@click.command("compact")
@compact_options
@index_interval_option
@jobs_option
@guarded
@remote_output
def compact_cmd(inputs: tuple[Path, ...], output: Path | None, dry_run: bool, force: bool, fmt: str,
                index_interval_bytes: int, jobs: int, **options: Any) -> None:
    """Keep the latest record per key, as Kafka's log cleaner does (offline)."""
    o, wanted = compact_setup(inputs, output, dry_run, **options)
    result = compact_paths(list(inputs), CompactJob(o, None if dry_run else str(output), force, wanted,
                                                    index_interval_bytes), jobs)
    if fmt == "json":
        say(compact_json(result, o.now_ms), err=False)
    else:
        say(compact_line(result, dry_run, None if output is None else shown(output)))
    if result.damaged:
        raise SystemExit(EXIT_DATA)


# --------------------------------------------------------------------------- option checks


def conversion_job(command: str, input_path: Path, output: Any, *, index_interval_bytes: int, no_index: bool,
                   force: bool, max_decompressed_bytes: int, on_damage: str, skip_unconvertible: bool,
                   codec: str = "keep", level: int | None = None, to_magic: int = 2, input_format: str | None = None,
                   base_offset: int = 0, timestamp_type: str = "create", log_append_time: int | None = None,
                   partition_leader_epoch: int = -1, batch_records: int = DEFAULT_BATCH_RECORDS,
                   batch_bytes: int = DEFAULT_BATCH_BYTES, topics: str = "") -> ConvertJob:
    """A conversion's options (those of its command) checked, exit 2 before anything is read,
    and turned into its job: what ``kseg <command>`` and ``kseg spark <command>`` both run."""
    check_log_append(timestamp_type, log_append_time)
    choose(codec, level, keep_allowed=command != "recompress")
    return ConvertJob(command, str(output), write_flags(no_index, index_interval_bytes, force, on_damage,
                                                        max_decompressed_bytes, skip_unconvertible),
                      to_magic=to_magic, codec=codec, level=level, log_append_time=log_append_time,
                      partition_leader_epoch=partition_leader_epoch, batch_records=batch_records,
                      batch_bytes=batch_bytes, base_offset=base_offset, topics=frozenset(topic_set(topics)),
                      kafka07=command == "up-convert" and conversion_input_format(input_path, input_format) == KAFKA07)


def write_flags(no_index: bool, index_interval_bytes: int, force: bool, on_damage: str = STOP,
                max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                skip_unconvertible: bool = False) -> WriteOptions:
    return WriteOptions(index=not no_index, index_interval_bytes=index_interval_bytes, force=force,
                        on_damage=on_damage, limit=max_decompressed_bytes, skip_unconvertible=skip_unconvertible)


def finish_job(result: JobResult, output: Path) -> None:
    """The job's summary line (after publishing, for an ``s3://`` output); exit 1 when damaged batches were
    skipped or carried, or partitions it cannot convert were left out (``--skip-unconvertible``)."""
    say(job_line(result, shown(output)))
    if getattr(result, "incomplete", False):
        raise SystemExit(EXIT_DATA)


def compact_setup(inputs: tuple[Path, ...], output: Path | None, dry_run: bool, *, now_ms: int | None,
                  delete_retention_ms: int, min_compaction_lag_ms: int, include_active: bool, topics: str,
                  key_map_bytes: int, producer_id_expiration_ms: int, first_dirty_offset: int | None,
                  single_pass: bool, segment_bytes: int, segment_index_bytes: int, keep_segments: bool,
                  max_decompressed_bytes: int, on_damage: str = STOP) -> tuple[CompactOptions, frozenset[str] | None]:
    """The compact options checked and turned into CompactOptions and the topic set."""
    if output is None and not dry_run:
        raise InputError("give -o/--output, or --dry-run")
    for p in inputs:
        if not p.exists():
            raise InputError("no such file or directory", file=str(p))
    o = CompactOptions(now_ms=default_now_ms() if now_ms is None else now_ms,
                       delete_retention_ms=delete_retention_ms, min_compaction_lag_ms=min_compaction_lag_ms,
                       include_active=include_active, key_map_bytes=key_map_bytes,
                       producer_expiration_ms=producer_id_expiration_ms, first_dirty_offset=first_dirty_offset,
                       single_pass=single_pass, limit=max_decompressed_bytes, group_segments=not keep_segments,
                       segment_bytes=segment_bytes, segment_index_bytes=segment_index_bytes, on_damage=on_damage)
    return o, frozenset(topic_set(topics)) or None


WRITE_COMMANDS: dict[str, click.Command] = {c.name: c for c in (up_convert_cmd, down_convert_cmd, recompress_cmd,
                                                                 rebase_cmd)}  # type: ignore[misc]
