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
@click.version_option(package_name="kseg")
def main(traceback: bool) -> None:
    """Look inside, verify and convert Apache Kafka log segment files."""
    _State.traceback = traceback


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--records", "-r", "deep", is_flag=True, help="Show records, not only batches (--deep-iteration).")
@click.option("--format", "fmt", type=click.Choice(["text", "jsonl", "kafka"]), default="text", show_default=True)
@click.option("--payload", type=click.Choice(["none", "utf8", "hex", "base64"]), default=None,
              help="How keys and values are shown [default: utf8; none for --format kafka].")
@click.option("--key-decoder", default=None, help="utf8|hex|base64|int|long|json or module:function.")
@click.option("--value-decoder", default=None, help="utf8|hex|base64|int|long|json or module:function.")
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
         value_decoder: str | None, from_offset: int | None, to_offset: int | None, from_time: int | None,
         to_time: int | None, max_bytes: int | None, keep_going: bool, input_format: str,
         max_decompressed_bytes: int) -> None:
    """Show the batches (and with --records the records) of segment files.

    PATHS are .log, .index, .timeindex, .txnindex, .snapshot or .checkpoint files,
    partition folders or log directories.
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
    files = _expand_for_dump(paths, expand_inputs)
    if input_format == "kafka07":
        from .kafka07 import dump_kafka07

        dump_kafka07(files, sys.stdout, fmt=fmt, deep=deep, key_decoder=kd, value_decoder=vd)
        return
    options = DumpOptions(records=deep, from_offset=from_offset, to_offset=to_offset, from_time=from_time,
                          to_time=to_time, max_bytes=max_bytes, max_decompressed_bytes=max_decompressed_bytes,
                          keep_going=keep_going, strict_names=fmt == "kafka")
    renderer_cls = RENDERERS[fmt]
    renderer = (KafkaRenderer(sys.stdout, sys.stderr, kd, vd, deep=deep) if fmt == "kafka"
                else renderer_cls(sys.stdout, sys.stderr, kd, vd))
    try:
        for ev in dump_paths(files, options):
            renderer(ev)
    finally:
        renderer.close()
        sys.stdout.flush()


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
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--quick", is_flag=True, help="Framing and CRCs only (the broker's own check, at disk speed).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--no-index", is_flag=True, help="Do not check .index/.timeindex/.txnindex files.")
@click.option("--input-format", type=click.Choice(["kafka", "kafka07"]), default="kafka", show_default=True)
@max_decompressed_option
@guarded
def verify(paths: tuple[Path, ...], quick: bool, fmt: str, no_index: bool, input_format: str,
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
    _print_verify(report, fmt)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def _progress() -> Callable[[str], None]:
    count = [0]

    def show(path: str) -> None:
        count[0] += 1
        click.echo(f"\r\033[Kverifying [{count[0]}] {path}", nl=False, err=True)

    return show


def _print_verify(report: Any, fmt: str) -> None:
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
        status = "ok" if f.ok else f"{len(f.errors)} error(s)"
        detail = f"{f.batches} batches, {f.records} records, {f.bytes} bytes" if f.kind == "log" else f.kind
        click.echo(f"{f.path}: {status} ({detail})")
        for p in f.problems:
            click.echo(f"  {p.severity}: {p}")
        if f.suppressed_notes:
            click.echo(f"  note: {f.suppressed_notes} more notes not shown")
    total = len(report.files)
    bad = sum(1 for f in report.files if not f.ok)
    click.echo(f"{total} file(s) checked, {bad} with errors, {report.error_count} error(s) in all")


if __name__ == "__main__":  # pragma: no cover
    main()
