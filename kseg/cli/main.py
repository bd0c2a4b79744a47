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

from kseg.cli import tools
from kseg.cli.common import (
    EXIT_DATA,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    KsegGroup,
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
from kseg.cli.internals import state, txn
from kseg.cli.plugins import plugins
from kseg.cli.storage import LOCATION, remote_output, s3_endpoint_option, shown
from kseg.codecs.choice import choose
from kseg.codecs.plugins import activate
from kseg.ops import registry  # noqa: F401 - installs the reader of registry files (--plugin-registry)
from kseg.companions.build import build_indexes
from kseg.companions.check import check_segment_companions
from kseg.companions.check import companion_paths as companion_paths_of
from kseg.errors import InputError, KsegError, TruncatedError
from kseg.findings import ERROR
from kseg.log.atomic import AtomicDir, check_output, write_atomic_many
from kseg.log.decode import Tail
from kseg.log.segment import base_offset_of, companion_path, expand_inputs, is_stdin, strict_batches, zero_bytes_to_end
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
from kseg.ops.dump import BadBatchEvent, BatchEvent, DumpOptions, TailEvent, dump_paths, file_kind
from kseg.ops.jobs import run_job
from kseg.ops.kafka07 import up_convert_kafka07, verify_kafka07
from kseg.ops.sniff import KAFKA, KAFKA07, conversion_input_format, format_hint, input_format_of, name_format
from kseg.ops.tiered import check_remote_store
from kseg.ops.verify import NOTE, Problem, VerifyOptions, verify_paths
from kseg.render.dump import RENDERERS, ChunkedWriter, KafkaRenderer
from kseg.render.kafka07 import dump_kafka07
from kseg.render.reports import compact_json, compact_line, job_line, write_verify


@click.group(cls=KsegGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--traceback", is_flag=True, help="Show the Python stack on errors (for bug reports).")
@click.option("--plugin-registry", type=click.Path(path_type=Path), envvar="KSEG_PLUGIN_REGISTRY", default=None,
              help="Plugin codec registry: a plugin-python-topic-0 folder or a JSON file "
                   "[env: KSEG_PLUGIN_REGISTRY].")
@s3_endpoint_option
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
         value_decoder: str | None, decode: str | None, kafka_version: str, skip_record_metadata: bool,
         index_sanity: bool, verify_index: bool,
         from_offset: int | None, to_offset: int | None, from_time: int | None, to_time: int | None,
         max_bytes: int | None, keep_going: bool, input_format: str, max_decompressed_bytes: int) -> None:
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
    # Each log-like file's format by name, else by its first bytes (a README is unusable input).
    formats = [_dump_format(f, input_format, fmt) for f in files]
    sys.stdout.flush()
    out = ChunkedWriter(sys.stdout.buffer)  # output leaves in 1 MiB writes
    renderer = (KafkaRenderer(out, sys.stderr, kd, vd, deep=records, kafka_version=kafka_version,
                              skip_record_metadata=skip_record_metadata, index_sanity=index_sanity,
                              verify_index=verify_index) if fmt == "kafka"
                else RENDERERS[fmt](out, sys.stderr, kd, vd))
    options = DumpOptions(records=records, from_offset=from_offset, to_offset=to_offset, from_time=from_time,
                          to_time=to_time, max_bytes=max_bytes, max_decompressed_bytes=max_decompressed_bytes,
                          keep_going=keep_going, strict_names=fmt == "kafka", decode=decode,
                          wrapper_counts=fmt != "kafka", record_spans=getattr(renderer, "takes_spans", False))
    problems = unreadable = 0
    live = live_tails(paths, files)
    interrupted = False
    try:
        for f in files:
            try:
                if _dump_format(f, input_format, fmt) == KAFKA07:
                    out.flush()
                    sys.stdout.flush()
                    dump_kafka07([f], sys.stdout, fmt=fmt, deep=records, key_decoder=kd, value_decoder=vd)
                    sys.stdout.flush()
                    continue
                for ev in dump_paths([f], options):
                    renderer(ev)
                    if (isinstance(ev, BadBatchEvent)
                            or (isinstance(ev, TailEvent) and ev.reported and not live(ev.path, ev.tail))
                            or (isinstance(ev, BatchEvent) and not ev.crc_valid)):
                        problems += 1
                    if isinstance(ev, TailEvent) and ev.reported and ev.tail.position == 0:
                        hint = format_hint(f, KAFKA)
                        if hint:
                            click.echo(f"kseg: {f}: {hint}", err=True)
            except InputError as e:
                out.flush()
                if not is_stdin(f) and not os.path.lexists(f):  # deleted by the broker since it was listed
                    click.echo(f"kseg: note: {f}: the file went away during the run", err=True)
                    continue
                if not keep_going:
                    raise
                click.echo(f"kseg: error: {e}", err=True)  # one line; the rest goes on
                unreadable += 1
    except KeyboardInterrupt:
        # Ctrl-C: stop now, quietly, with the shell's code for SIGINT. Pending output is
        # dropped, and stdout is pointed at /dev/null so that the exit cannot block on a full pipe.
        interrupted = True
        _drop_stdout()
        raise SystemExit(EXIT_INTERRUPTED) from None
    finally:
        if not interrupted:  # what was read is shown, also when an error stops the dump
            renderer.close()
            out.flush()
    if unreadable:
        raise SystemExit(EXIT_USAGE)
    if problems:
        # Everything readable was shown; the data still has problems (exit 1, as verify).
        click.echo(f"kseg: {problems} problem(s) in the data (bad CRCs, partial or undecodable batches); "
                   "see kseg verify", err=True)
        raise SystemExit(EXIT_DATA)


def _drop_stdout() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return  # not a real file (tests' captured output)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _dump_format(path: Path, input_format: str | None, fmt: str) -> str:
    if input_format is None and name_format(path) == KAFKA07:  # *.kafka: recognised by name
        return KAFKA07
    if file_kind(path, strict=fmt == "kafka") == "log":
        return input_format_of(path, input_format)
    return KAFKA


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
@click.option("--remote-metadata", "remote_metadata", multiple=True, type=click.Path(path_type=Path),
              metavar="PATH", help="PATHS are a tiered store: also compare its segments with the "
              "__remote_log_metadata partition(s) PATH holds (a partition folder or the broker's log directory; "
              "repeatable): segments listed but missing, present but unlisted, offsets and sizes.")
@guarded
def verify(paths: tuple[Path, ...], quick: bool, fmt: str, no_index: bool, input_format: str, verbose: bool,
           max_decompressed_bytes: int, remote_metadata: tuple[Path, ...]) -> None:
    """Check segment files, partition folders or log directories; report every problem.

    Exit 0 when clean, 1 when problems were found, 2 when the input is unusable.
    """
    if remote_metadata and input_format == "kafka07":
        raise InputError("--remote-metadata is for a tiered store of Kafka segments, not 0.7 files")
    progress = _progress() if sys.stderr.isatty() else None
    if input_format == "kafka07":
        report = verify_kafka07(paths, quick=quick, max_decompressed_bytes=max_decompressed_bytes)
        for f in report.files:
            hint = None if f.ok else format_hint(Path(f.path), KAFKA07)
            if hint:
                f.problems.append(Problem(NOTE, "format", f.path, None, hint))
    else:
        options = VerifyOptions(quick=quick, max_decompressed_bytes=max_decompressed_bytes,
                                check_indexes=not no_index, input_format=input_format)
        report = verify_paths(paths, options, progress=progress)
        if remote_metadata:
            report.files.append(check_remote_store(list(remote_metadata), list(paths)))
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
@remote_output
def up_convert_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
                   max_decompressed_bytes: int, to_magic: int, codec: str, level: int | None, input_format: str,
                   base_offset: int, timestamp_type: str, log_append_time: int | None,
                   partition_leader_epoch: int, batch_records: int, batch_bytes: int) -> None:
    """Convert to a newer message format: pre-0.8 -> v0/v1/v2, v0 -> v1, v0/v1 -> v2."""
    check_log_append(timestamp_type, log_append_time)
    o = UpOptions(to_magic=to_magic, choice=choose(codec, level), log_append_time=log_append_time,
                  partition_leader_epoch=partition_leader_epoch,
                  batch_records=batch_records, batch_bytes=batch_bytes, limit=max_decompressed_bytes)
    options = write_flags(no_index, index_interval_bytes, force)
    if conversion_input_format(input_path, input_format) == KAFKA07:
        result = up_convert_kafka07(input_path, output, o, base_offset, options)
    else:
        result = run_job([input_path], output, lambda segs: (lambda b, s: up_convert(b, o, s), 0), options, command="up-convert")
    click.echo(job_line(result, shown(output)), err=True)


@main.command("down-convert")
@down_convert_options
@guarded
@remote_output
def down_convert_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
                     max_decompressed_bytes: int, to_magic: int, codec: str, level: int | None) -> None:
    """Convert to an older message format as the broker did for old consumers (drops what it cannot carry)."""
    o = DownOptions(to_magic=to_magic, choice=choose(codec, level), limit=max_decompressed_bytes)
    options = write_flags(no_index, index_interval_bytes, force)
    result = run_job([input_path], output, lambda segs: (lambda b, s: down_convert(b, o, s), 0), options, command="down-convert")
    click.echo(job_line(result, shown(output)), err=True)


@main.command("recompress")
@recompress_options
@guarded
@remote_output
def recompress_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
                   max_decompressed_bytes: int, codec: str, level: int | None, topics: str,
                   batch_records: int) -> None:
    """Same message format, new codec (the old compression.codec / compressed.topics pair)."""
    o = RecompressOptions(choice=choose(codec, level, keep_allowed=False), batch_records=batch_records,
                          limit=max_decompressed_bytes)
    wanted = topic_set(topics)
    options = write_flags(no_index, index_interval_bytes, force)
    result = run_job([input_path], output, lambda segs: (lambda b, s: recompress(b, o, s), 0), options,
                     select=(lambda topic: not wanted or topic in wanted), command="recompress")
    click.echo(job_line(result, shown(output)), err=True)


@main.command("rebase")
@rebase_options
@guarded
@remote_output
def rebase_cmd(input_path: Path, output: Path, index_interval_bytes: int, no_index: bool, force: bool,
               max_decompressed_bytes: int, base_offset: int) -> None:
    """Shift every offset so the data starts at --base-offset (v1/v2: no decompression)."""
    options = write_flags(no_index, index_interval_bytes, force)
    result = run_job([input_path], output, rebase_maker(base_offset, max_decompressed_bytes), options,
                     command="rebase")
    click.echo(job_line(result, shown(output)), err=True)


@main.command("index")
@click.argument("inputs", nargs=-1, required=True, type=LOCATION)
@click.option("--check", "mode", flag_value="check", default=True, help="Check .index/.timeindex/.txnindex (default).")
@click.option("--rebuild", "mode", flag_value="rebuild", help="Write .index/.timeindex anew from the log.")
@click.option("-o", "--output", type=LOCATION, default=None,
              help="With --rebuild: write the indexes into this folder or s3:// prefix (partition folders and "
                   "log directories keep their layout under it) instead of beside the segments.")
@click.option("--force", is_flag=True, help="With --rebuild -o: write into an existing output folder.")
@index_interval_option
@guarded
@remote_output(merge=True)
def index_cmd(inputs: tuple[Path, ...], mode: str, output: Path | None, force: bool,
              index_interval_bytes: int) -> None:
    """Check or rebuild the offset and time indexes of segments, partition folders or log directories."""
    pairs = [(seg, root) for root in inputs for seg in expand_inputs([root]) if seg.suffix == ".log"]
    if not pairs:
        raise InputError("no .log segments found", file=str(inputs[0]))
    if mode == "check":
        errors = checked = 0
        for seg, _ in pairs:
            if not any(p.is_file() for p in companion_paths_of(seg).values()):
                click.echo(f"{seg}: nothing to check (no .index, .timeindex or .txnindex beside it)")
                continue
            checked += 1
            findings = check_segment_companions(seg)
            bad = [f for f in findings if f.severity == ERROR]
            errors += len(bad)
            for f in findings:
                click.echo(f"{f.severity}: {f}")
            click.echo(f"{seg}: {'ok' if not bad else f'{len(bad)} error(s)'}")
        if not checked:
            click.echo("kseg: nothing to check: no segment has index files", err=True)
        raise SystemExit(EXIT_DATA if errors else EXIT_OK)
    building = None
    if output is None:
        for root in inputs:
            if not isinstance(root, Path):
                raise InputError("cannot write beside segments in an archive or object storage: give -o/--output",
                                 file=str(root))
    else:
        check_output(list(inputs), output, force=force)
        building = AtomicDir(output)  # the output folder appears whole, or not at all
    written = []
    try:
        for seg, root in pairs:
            base = base_offset_of(seg)
            if base is None:
                raise InputError("segment name does not start with its base offset", file=str(seg))
            entries = [b._replace(raw=memoryview(b"")) for b in strict_batches(seg)]
            index, timeindex = build_indexes(entries, base, index_interval_bytes)
            if building is None:
                folder = seg.parent
            else:
                folder = building.tmp if root.is_file() else building.tmp.joinpath(*seg.parent.parts[len(root.parts):])
                folder.mkdir(parents=True, exist_ok=True)
            index_path, time_path = companion_path(seg, ".index", folder), companion_path(seg, ".timeindex", folder)
            write_atomic_many({index_path: index, time_path: timeindex})  # both or neither
            written.append((index_path, len(index) // 8, time_path, len(timeindex) // 12))
    except BaseException:
        if building is not None:
            building.abort()
        raise
    if building is not None:
        building.commit()
    for index_path, n_index, time_path, n_time in written:
        if building is not None and output is not None:
            index_path = output / index_path.relative_to(building.tmp)
            time_path = output / time_path.relative_to(building.tmp)
        click.echo(f"kseg: wrote {shown(index_path)} ({n_index} entries) and {shown(time_path)} ({n_time} entries)",
                   err=True)


@main.command("compact")
@compact_options
@index_interval_option
@guarded
@remote_output
def compact_cmd(inputs: tuple[Path, ...], output: Path | None, dry_run: bool, force: bool, now_ms: int | None,
                delete_retention_ms: int, min_compaction_lag_ms: int, include_active: bool, topics: str,
                key_map_bytes: int, producer_id_expiration_ms: int, first_dirty_offset: int | None,
                single_pass: bool, segment_bytes: int, segment_index_bytes: int, keep_segments: bool, fmt: str,
                max_decompressed_bytes: int, index_interval_bytes: int) -> None:
    """Keep the latest record per key, as Kafka's log cleaner does (offline)."""
    o, wanted = compact_setup(inputs, output, dry_run, now_ms, delete_retention_ms, min_compaction_lag_ms,
                              include_active, topics, key_map_bytes, producer_id_expiration_ms,
                              first_dirty_offset, single_pass, segment_bytes, segment_index_bytes,
                              keep_segments, max_decompressed_bytes)
    result = compact_job(list(inputs), None if dry_run else output, o, force=force, topics=wanted,
                         index_interval_bytes=index_interval_bytes)
    if fmt == "json":
        click.echo(compact_json(result, o.now_ms))
    else:
        click.echo(compact_line(result, dry_run, None if output is None else shown(output)), err=True)


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
main.add_command(state)
main.add_command(txn)
for _tool in tools.COMMANDS:
    main.add_command(_tool)
main.add_command(_LazySpark("spark", help="Run verify, dump, conversions, compaction, diff, find and stats on Spark "
                                         "(needs the spark extra: pip install 'kseg[spark]')."))

if __name__ == "__main__":  # pragma: no cover
    main()
