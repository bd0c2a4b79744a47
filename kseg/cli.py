"""The ``kseg`` command: parses options, calls operations, presents results.

Exit codes: 0 fine, 1 the data has problems, 2 bad usage or unreadable input.
Errors are one line on stderr (``kseg: error: ...``); ``--traceback`` shows the stack.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

import click

from .errors import DataError, InputError, KsegError
from .storage_cli import LOCATION, remote_output, s3_endpoint_option, shown

EXIT_OK, EXIT_DATA, EXIT_USAGE = 0, 1, 2
MAX_DECOMPRESSED_DEFAULT = 256 * 1024 * 1024


class _State:
    traceback = False


def _fail(e: KsegError) -> None:
    click.echo(f"kseg: error: {e}", err=True)
    raise SystemExit(EXIT_DATA if isinstance(e, DataError) else EXIT_USAGE)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn kseg errors into one stderr line and the right exit code."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KsegError as e:
            if _State.traceback:
                raise
            _fail(e)
        except BrokenPipeError:
            # `kseg dump ... | head`: the reader went away; leave quietly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(EXIT_OK)

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _size(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower().rstrip("ib").rstrip("b")
    mult = 1
    if t and t[-1] in units:
        mult, t = units[t[-1]], t[:-1]
    try:
        return int(t) * mult
    except ValueError:
        raise click.BadParameter(f"not a size: {text!r} (e.g. 1048576, 64MiB, 1g)") from None


class SizeType(click.ParamType):
    name = "size"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        return value if isinstance(value, int) else _size(value)


SIZE = SizeType()

max_decompressed_option = click.option(
    "--max-decompressed-bytes",
    type=SIZE,
    default=MAX_DECOMPRESSED_DEFAULT,
    show_default="256MiB",
    help="A batch that inflates past this is reported as an error (decompression bomb guard).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--traceback", is_flag=True, help="Show the Python stack on errors (for bug reports).")
@click.option("--plugin-registry", type=click.Path(path_type=Path), envvar="KSEG_PLUGIN_REGISTRY", default=None,
              help="Plugin codec registry: a plugin-python-topic-0 folder or a JSON file "
                   "[env: KSEG_PLUGIN_REGISTRY].")
@s3_endpoint_option
@click.version_option(package_name="kseg")
def main(traceback: bool, plugin_registry: Path | None) -> None:
    """Look inside, verify and convert Apache Kafka log segment files."""
    _State.traceback = traceback
    from .plugins import activate

    try:
        activate(plugin_registry)
    except KsegError as e:
        if traceback:
            raise
        _fail(e)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=LOCATION)
@click.option("--records", "-r", "deep", is_flag=True, help="Show records, not only batches (--deep-iteration).")
@click.option("--format", "fmt", type=click.Choice(["text", "jsonl", "kafka"]), default="text", show_default=True)
@click.option("--payload", type=click.Choice(["none", "utf8", "hex", "base64"]), default=None,
              help="How keys and values are shown [default: utf8; none for --format kafka].")
@click.option("--key-decoder", default=None, help="utf8|hex|base64|int|long|json or module:function.")
@click.option("--value-decoder", default=None, help="utf8|hex|base64|int|long|json or module:function.")
@click.option("--decode", type=click.Choice(["none", "offsets", "transactions", "metadata", "auto"]), default=None,
              help="Decode internal-topic records (__consumer_offsets, __transaction_state, the KRaft metadata "
                   "log); auto: by topic folder and *.checkpoint name. Implies --records.")
@click.option("--from-offset", type=int, default=None)
@click.option("--to-offset", type=int, default=None)
@click.option("--from-time", type=int, default=None, help="Milliseconds since the epoch.")
@click.option("--to-time", type=int, default=None, help="Milliseconds since the epoch.")
@click.option("--max-bytes", type=SIZE, default=None, help="Read only the first N bytes of each log file.")
@click.option("--keep-going", is_flag=True, help="Show an undecodable batch as raw bytes and go on.")
@click.option("--input-format", type=click.Choice(["kafka", "kafka07"]), default="kafka", show_default=True,
              help="kafka07: the pre-0.8 message format (offsets are byte positions).")
@max_decompressed_option
@guarded
def dump(paths: tuple[Path, ...], deep: bool, fmt: str, payload: str | None, key_decoder: str | None,
         value_decoder: str | None, decode: str | None, from_offset: int | None, to_offset: int | None,
         from_time: int | None, to_time: int | None, max_bytes: int | None, keep_going: bool,
         input_format: str, max_decompressed_bytes: int) -> None:
    """Show the batches (and with --records the records) of segment files.

    PATHS are .log, .index, .timeindex, .txnindex, .snapshot or .checkpoint files,
    leader-epoch-checkpoint, partition.metadata or quorum-state files, partition
    folders or log directories.
    """
    from .dump import DumpOptions, dump_paths
    from .payload import load_decoder
    from .render import KafkaRenderer, RENDERERS, payload_decoder
    from .segment import expand_inputs

    if payload is None:
        payload = "none" if fmt == "kafka" else "utf8"
    kd = payload_decoder(payload, fmt)
    vd = kd
    if key_decoder:
        kd = load_decoder(key_decoder)
    if value_decoder:
        vd = load_decoder(value_decoder)
    if (key_decoder or value_decoder) and fmt == "kafka":
        deep = True  # as kafka-dump-log.sh: a decoder implies --print-data-log
    if fmt == "kafka" and payload != "none":
        deep = True
    if decode == "none":
        decode = None
    if decode:
        deep = True  # as kafka-dump-log.sh's --offsets-decoder & co.: decoding needs the records
    files = _expand_for_dump(paths, expand_inputs)
    if input_format == "kafka07":
        from .kafka07 import dump_kafka07

        dump_kafka07(files, sys.stdout, fmt=fmt, deep=deep, key_decoder=kd, value_decoder=vd)
        return
    options = DumpOptions(records=deep, from_offset=from_offset, to_offset=to_offset, from_time=from_time,
                          to_time=to_time, max_bytes=max_bytes, max_decompressed_bytes=max_decompressed_bytes,
                          keep_going=keep_going, strict_names=fmt == "kafka", decode=decode)
    renderer_cls = RENDERERS[fmt]
    renderer = (KafkaRenderer(sys.stdout, sys.stderr, kd, vd, deep=deep) if fmt == "kafka"
                else renderer_cls(sys.stdout, sys.stderr, kd, vd))
    from .dump import BadBatchEvent, TailEvent

    problems = 0
    try:
        for ev in dump_paths(files, options):
            renderer(ev)
            if isinstance(ev, BadBatchEvent) or (isinstance(ev, TailEvent) and ev.reported):
                problems += 1
    finally:
        renderer.close()
        sys.stdout.flush()
    if problems:
        # Everything readable was shown; the data still has problems (exit 1, as verify).
        click.echo(f"kseg: {problems} problem(s) in the data (partial or undecodable batches); "
                   "see kseg verify", err=True)
        raise SystemExit(EXIT_DATA)


def _expand_for_dump(paths: tuple[Path, ...], expand: Callable[[list], list[Path]]) -> list[Path]:
    """Files as given; folders become their segment files (with companions) in offset order."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            for log in expand([p]):
                out.append(log)
        elif p.exists():
            out.append(p)
        else:
            raise InputError("no such file or directory", file=str(p))
    return out


@main.command()
@click.argument("paths", nargs=-1, required=True, type=LOCATION)
@click.option("--quick", is_flag=True, help="Framing and CRCs only (the broker's own check, at disk speed).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--no-index", is_flag=True, help="Do not check .index/.timeindex/.txnindex files.")
@click.option("--input-format", type=click.Choice(["kafka", "kafka07"]), default="kafka", show_default=True)
@click.option("-v", "--verbose", is_flag=True, help="List every file checked, not only those with findings.")
@max_decompressed_option
@guarded
def verify(paths: tuple[Path, ...], quick: bool, fmt: str, no_index: bool, input_format: str, verbose: bool,
           max_decompressed_bytes: int) -> None:
    """Check segment files, partition folders or log directories; report every problem.

    Exit 0 when clean, 1 when problems were found, 2 when the input is unusable.
    """
    from .verify import VerifyOptions, verify_paths

    progress = _progress() if sys.stderr.isatty() else None
    if input_format == "kafka07":
        from .kafka07 import verify_kafka07

        report = verify_kafka07(paths, quick=quick, max_decompressed_bytes=max_decompressed_bytes)
    else:
        options = VerifyOptions(quick=quick, max_decompressed_bytes=max_decompressed_bytes,
                                check_indexes=not no_index)
        report = verify_paths(paths, options, progress=progress)
    if progress:
        click.echo("\r\033[K", nl=False, err=True)
    _print_verify(report, fmt, verbose=verbose)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def _progress() -> Callable[[str], None]:
    count = [0]

    def show(path: str) -> None:
        count[0] += 1
        click.echo(f"\r\033[Kverifying [{count[0]}] {path}", nl=False, err=True)

    return show


def _print_verify(report: Any, fmt: str, verbose: bool = True) -> None:
    if fmt == "json":
        out = {
            "ok": report.ok,
            "errors": report.error_count,
            "files": [
                {"file": f.path, "kind": f.kind, "ok": f.ok, "batches": f.batches, "records": f.records,
                 "bytes": f.bytes, "problems": [p.as_json() for p in f.problems],
                 "suppressed_notes": f.suppressed_notes}
                for f in report.files
            ],
        }
        click.echo(json.dumps(out, indent=2))
        return
    for f in report.files:
        if not verbose and not f.problems and not f.suppressed_notes:
            continue
        status = "ok" if f.ok else f"{len(f.errors)} error(s)"
        detail = f"{f.batches} batches, {f.records} records, {f.bytes} bytes" if f.kind == "log" else f.kind
        click.echo(f"{f.path}: {status} ({detail})")
        for p in f.problems:
            click.echo(f"  {p.severity}: {p}")
        if f.suppressed_notes:
            click.echo(f"  note: {f.suppressed_notes} more notes not shown")
    total = len(report.files)
    bad = sum(1 for f in report.files if not f.ok)
    batches = sum(f.batches for f in report.files)
    records = sum(f.records for f in report.files)
    click.echo(f"{total} file(s) checked, {bad} with errors, {report.error_count} error(s) in all "
               f"({batches} batches, {records} records)")


# --------------------------------------------------------------------------- writing commands


def _write_options(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--force", is_flag=True, help="Replace an existing output.")(f)
    f = click.option("--no-index", is_flag=True, help="Do not write .index/.timeindex files.")(f)
    f = click.option("--index-interval-bytes", type=SIZE, default=4096, show_default=True,
                     help="Bytes between offset index entries (Kafka's index.interval.bytes).")(f)
    f = click.option("-o", "--output", type=LOCATION, required=True,
                     help="Output .log file, partition folder or log directory (matching INPUT).")(f)
    f = click.argument("input_path", metavar="INPUT", type=LOCATION)(f)
    return max_decompressed_option(f)


def _codec_choice(name: str, level: int | None, *, keep_allowed: bool = True):
    from .codecs import codec_by_name
    from .convert import CodecChoice
    from .errors import UnsupportedCodecError

    if name == "keep":
        if not keep_allowed:
            raise InputError("--codec keep is not allowed here")
        if level is not None:
            raise InputError("--level needs a --codec")
        return CodecChoice()
    try:
        return CodecChoice(codec_by_name(name), level)
    except UnsupportedCodecError:
        from .plugins import plugin_choice

        choice = plugin_choice(name, level)
        if choice is None:
            raise InputError(f"Unknown compression name: {name}") from None
        return choice


def _report_job(result: Any, output: Path) -> None:
    click.echo(f"kseg: wrote {len(result.segments)} segment(s) under {shown(output)}: {result.summary.line()}",
               err=True)


def _write_flags(output: Path, no_index: bool, index_interval_bytes: int, force: bool):
    from .jobs import WriteOptions

    return WriteOptions(index=not no_index, index_interval_bytes=index_interval_bytes, force=force)


codec_option = click.option("--codec", default="keep", show_default=True,
                            help="keep (each batch's own codec), none, gzip, snappy, lz4, zstd or a plugin alias.")
level_option = click.option("--level", type=int, default=None, help="Compression level (codec's default if unset).")


@main.command("up-convert")
@_write_options
@click.option("--to-magic", type=click.IntRange(1, 2), required=True)
@codec_option
@level_option
@click.option("--input-format", type=click.Choice(["kafka", "kafka07"]), default="kafka", show_default=True)
@click.option("--base-offset", type=int, default=0, show_default=True,
              help="First logical offset for --input-format kafka07.")
@click.option("--timestamp-type", type=click.Choice(["create", "log-append"]), default="create", show_default=True,
              help="Type for messages without a timestamp (v0); log-append needs --log-append-time.")
@click.option("--log-append-time", type=int, default=None, help="Milliseconds since the epoch.")
@click.option("--batch-records", type=click.IntRange(1), default=1000, show_default=True,
              help="At most this many uncompressed legacy messages per v2 batch.")
@click.option("--batch-bytes", type=SIZE, default=1000 * 1024, show_default=True,
              help="At most about this many bytes per v2 batch built from uncompressed messages "
                   "(stays under the broker's default max.message.bytes, 1 MiB).")
@guarded
@remote_output
def up_convert_cmd(input_path: Path, output: Path, no_index: bool, index_interval_bytes: int, force: bool,
                   max_decompressed_bytes: int, to_magic: int, codec: str, level: int | None, input_format: str,
                   base_offset: int, timestamp_type: str, log_append_time: int | None, batch_records: int,
                   batch_bytes: int) -> None:
    """Convert to a newer message format: pre-0.8 -> v0/v1/v2, v0 -> v1, v0/v1 -> v2."""
    from .convert import UpOptions, up_convert
    from .jobs import run_job

    if (timestamp_type == "log-append") != (log_append_time is not None):
        raise InputError("--timestamp-type log-append and --log-append-time go together")
    o = UpOptions(to_magic=to_magic, choice=_codec_choice(codec, level), log_append_time=log_append_time,
                  batch_records=batch_records, batch_bytes=batch_bytes, limit=max_decompressed_bytes)
    options = _write_flags(output, no_index, index_interval_bytes, force)
    if input_format == "kafka07":
        from .kafka07_convert import up_convert_kafka07

        result = up_convert_kafka07(input_path, output, o, base_offset, options)
    else:
        result = run_job([input_path], output, lambda segs: (lambda b, s: up_convert(b, o, s), 0), options)
    _report_job(result, output)


@main.command("down-convert")
@_write_options
@click.option("--to-magic", type=click.IntRange(0, 1), required=True)
@codec_option
@level_option
@guarded
@remote_output
def down_convert_cmd(input_path: Path, output: Path, no_index: bool, index_interval_bytes: int, force: bool,
                     max_decompressed_bytes: int, to_magic: int, codec: str, level: int | None) -> None:
    """Convert to an older message format as the broker did for old consumers (drops what it cannot carry)."""
    from .convert import DownOptions, down_convert
    from .jobs import run_job

    o = DownOptions(to_magic=to_magic, choice=_codec_choice(codec, level), limit=max_decompressed_bytes)
    options = _write_flags(output, no_index, index_interval_bytes, force)
    result = run_job([input_path], output, lambda segs: (lambda b, s: down_convert(b, o, s), 0), options)
    _report_job(result, output)


@main.command("recompress")
@_write_options
@click.option("--codec", required=True, help="none, gzip, snappy, lz4, zstd or a plugin alias.")
@level_option
@click.option("--topics", default="", help="Comma list of topics to recompress (log directories); empty: all.")
@click.option("--batch-records", type=click.IntRange(1), default=1000, show_default=True,
              help="At most this many uncompressed legacy messages per new wrapper.")
@guarded
@remote_output
def recompress_cmd(input_path: Path, output: Path, no_index: bool, index_interval_bytes: int, force: bool,
                   max_decompressed_bytes: int, codec: str, level: int | None, topics: str,
                   batch_records: int) -> None:
    """Same message format, new codec (the old compression.codec / compressed.topics pair)."""
    from .convert import RecompressOptions, recompress
    from .jobs import run_job

    o = RecompressOptions(choice=_codec_choice(codec, level, keep_allowed=False), batch_records=batch_records,
                          limit=max_decompressed_bytes)
    wanted = {t.strip() for t in topics.split(",") if t.strip()}
    options = _write_flags(output, no_index, index_interval_bytes, force)
    result = run_job([input_path], output, lambda segs: (lambda b, s: recompress(b, o, s), 0), options,
                     select=(lambda topic: not wanted or topic in wanted))
    _report_job(result, output)


@main.command("rebase")
@_write_options
@click.option("--base-offset", type=click.IntRange(0), required=True, help="The new first offset.")
@guarded
@remote_output
def rebase_cmd(input_path: Path, output: Path, no_index: bool, index_interval_bytes: int, force: bool,
               max_decompressed_bytes: int, base_offset: int) -> None:
    """Shift every offset so the data starts at --base-offset (v1/v2: no decompression)."""
    from .convert import rebase_maker
    from .jobs import run_job

    options = _write_flags(output, no_index, index_interval_bytes, force)
    result = run_job([input_path], output, rebase_maker(base_offset, max_decompressed_bytes), options)
    _report_job(result, output)


@main.command("index")
@click.argument("segment", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--check", "mode", flag_value="check", default=True, help="Check .index/.timeindex (default).")
@click.option("--rebuild", "mode", flag_value="rebuild", help="Write .index/.timeindex anew from the log.")
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --rebuild: write the indexes into this folder instead of beside the segment.")
@click.option("--index-interval-bytes", type=SIZE, default=4096, show_default=True)
@guarded
def index_cmd(segment: Path, mode: str, output: Path | None, index_interval_bytes: int) -> None:
    """Check or rebuild a segment's offset and time indexes."""
    from .index_check import check_segment_companions

    if mode == "check":
        findings = check_segment_companions(segment)
        errors = [f for f in findings if f.severity == "error"]
        for f in findings:
            where = f" at byte {f.position}" if f.position is not None else ""
            extra = f": expected {f.expected}, found {f.found}" if f.expected is not None or f.found is not None else ""
            click.echo(f"{f.severity}: {f.file}{where}: {f.message}{extra}")
        click.echo(f"{segment}: {'ok' if not errors else f'{len(errors)} error(s)'}")
        raise SystemExit(EXIT_DATA if errors else EXIT_OK)
    from .index_build import build_indexes
    from .segment import strict_batches
    from .output import write_atomic
    from .segment import base_offset_of

    base = base_offset_of(segment)
    if base is None:
        raise InputError("segment name does not start with its base offset", file=str(segment))
    entries = [b._replace(raw=memoryview(b"")) for b in strict_batches(segment)]
    index, timeindex = build_indexes(entries, base, index_interval_bytes)
    folder = output or segment.parent
    stem = segment.name.split(".")[0]
    write_atomic(folder / f"{stem}.index", index)
    write_atomic(folder / f"{stem}.timeindex", timeindex)
    click.echo(f"kseg: wrote {folder / (stem + '.index')} ({len(index) // 8} entries) and "
               f"{folder / (stem + '.timeindex')} ({len(timeindex) // 12} entries)", err=True)


@main.command("compact")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Output folder (partition) or log directory. Required unless --dry-run.")
@click.option("--dry-run", is_flag=True, help="Print the summary only; write nothing.")
@click.option("--force", is_flag=True, help="Replace an existing output.")
@click.option("--now-ms", type=int, default=None, help="The cleaner's clock [default: now].")
@click.option("--delete-retention-ms", type=int, default=86_400_000, show_default=True)
@click.option("--min-compaction-lag-ms", type=int, default=0, show_default=True)
@click.option("--include-active", is_flag=True, help="Clean the newest segment too (the broker never does).")
@click.option("--topics", default="", help="Comma list of topics to compact in a log directory; empty: all.")
@click.option("--key-map-bytes", type=SIZE, default=128 * 1024 * 1024, show_default="128MiB",
              help="Memory for the key map (24 bytes per key: an MD5 digest and an offset, as the broker).")
@click.option("--producer-id-expiration-ms", type=int, default=86_400_000, show_default=True)
@click.option("--first-dirty-offset", type=int, default=None,
              help="The cleaner checkpoint: segments before it count as clean (legacy tombstone rule).")
@click.option("--single-pass", is_flag=True,
              help="One cleaning pass, as one broker cleaning round (default: until a pass changes nothing).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@max_decompressed_option
@guarded
def compact_cmd(inputs: tuple[Path, ...], output: Path | None, dry_run: bool, force: bool, now_ms: int | None,
                delete_retention_ms: int, min_compaction_lag_ms: int, include_active: bool, topics: str,
                key_map_bytes: int, producer_id_expiration_ms: int, first_dirty_offset: int | None,
                single_pass: bool, fmt: str, max_decompressed_bytes: int) -> None:
    """Keep the latest record per key, as Kafka's log cleaner does (offline)."""
    from .compact import compact_job

    o, wanted = compact_setup(inputs, output, dry_run, now_ms, delete_retention_ms, min_compaction_lag_ms,
                              include_active, topics, key_map_bytes, producer_id_expiration_ms,
                              first_dirty_offset, single_pass, max_decompressed_bytes)
    result = compact_job(list(inputs), None if dry_run else output, o, force=force, topics=wanted)
    print_compact(result, o, fmt, dry_run, output)


def compact_setup(inputs: tuple[Path, ...], output: Path | None, dry_run: bool, now_ms: int | None,
                  delete_retention_ms: int, min_compaction_lag_ms: int, include_active: bool, topics: str,
                  key_map_bytes: int, producer_id_expiration_ms: int, first_dirty_offset: int | None,
                  single_pass: bool, max_decompressed_bytes: int) -> tuple[Any, set[str] | None]:
    """The compact options checked and turned into CompactOptions and the topic set (shared with Spark)."""
    from .compact import CompactOptions, default_now_ms

    if output is None and not dry_run:
        raise InputError("give -o/--output, or --dry-run")
    for p in inputs:
        if not p.exists():
            raise InputError("no such file or directory", file=str(p))
    o = CompactOptions(now_ms=default_now_ms() if now_ms is None else now_ms,
                       delete_retention_ms=delete_retention_ms, min_compaction_lag_ms=min_compaction_lag_ms,
                       include_active=include_active, key_map_bytes=key_map_bytes,
                       producer_expiration_ms=producer_id_expiration_ms, first_dirty_offset=first_dirty_offset,
                       single_pass=single_pass, limit=max_decompressed_bytes)
    wanted = {t.strip() for t in topics.split(",") if t.strip()}
    return o, wanted or None


def print_compact(result: Any, o: Any, fmt: str, dry_run: bool, output: Path | None) -> None:
    if fmt == "json":
        click.echo(json.dumps({"partitions": result.partitions, "now_ms": o.now_ms, **result.stats.as_json()}))
    else:
        where = "dry run" if dry_run else f"wrote {len(result.segments)} segment(s) under {output}"
        click.echo(f"kseg: compact ({where}, {result.partitions} partition(s)): {result.stats.line()}", err=True)


class _LazySpark(click.Group):
    """``kseg spark ...``: loaded on use, so that plain commands never import PySpark."""

    def _real(self) -> click.Group:
        from .spark.cli import spark

        return spark

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self._real().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._real().get_command(ctx, name)


def _register_subcommands() -> None:
    from .plugin_cli import plugins

    main.add_command(plugins)
    main.add_command(_LazySpark("spark", help="Run verify, dump, conversions and compaction on Spark "
                                             "(needs the spark extra: pip install 'kseg[spark]')."))


_register_subcommands()

if __name__ == "__main__":  # pragma: no cover
    main()
