"""``kseg dump``: the batches, records and index entries of segment files, in text, JSON lines
or kafka-dump-log.sh's own lines."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

import click

from kseg.cli.common import (EXIT_DATA, EXIT_USAGE, dump_options, expand_for_dump, guarded, redact_options,
                             redactor_of, refuse_unless)
from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import InputError, TruncatedError
from kseg.interrupts import Terminated, exit_code
from kseg.log.decode import Tail
from kseg.log.segment import zero_bytes_to_end
from kseg.ops.dump import (BadBatchEvent, BatchEvent, DumpOptions, NoteEvent, PlainRunEvent, TailEvent, dump_paths,
                           file_kind)
from kseg.ops.redact import Redactor
from kseg.ops.sniff import KAFKA, KAFKA07, format_hint, input_format_of, name_format
from kseg.render.dump import RENDERERS, ChunkedWriter, KafkaRenderer, payload_decoder
from kseg.render.fields import RECORD_FIELDS, RecordView, parse_fields
from kseg.render.kafka07 import dump_kafka07
from kseg.render.payload import load_decoder
from kseg.printable import printable
from kseg.storage import VANISHED, gone


def _fields(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    try:
        return parse_fields(value)
    except ValueError as e:
        raise click.BadParameter(str(e), ctx, param) from None


@click.command("dump")
@dump_options
@click.option("--fields", callback=_fields, metavar="FIELD,...",
              help=f"The record lines' fields, in this order (text and jsonl; implies --records): "
                   f"{','.join(RECORD_FIELDS)}.")
@click.option("--no-truncate", is_flag=True, help="Text: show long keys, values and header values whole.")
@redact_options("the keys, values or header values of the records shown (an undecodable batch with --keep-going: "
                "its header's bytes only)")
@click.option("--show-secrets", is_flag=True,
              help="With --decode: show SCRAM salts and keys, delegation token ids and sensitive configuration "
                   "values (passwords, JAAS configurations, keys) of the metadata log; hidden by default "
                   "([hidden]). --format kafka always shows them, as kafka-dump-log.sh.")
@guarded
def dump(paths: tuple[Path, ...], records: bool, fmt: str, payload: str | None, key_decoder: str | None,
         value_decoder: str | None, decode: str | None, kafka_version: str, skip_record_metadata: bool,
         index_sanity: bool, verify_index: bool,
         from_offset: int | None, to_offset: int | None, from_time: int | None, to_time: int | None,
         max_bytes: int | None, keep_going: bool, input_format: str, max_decompressed_bytes: int,
         fields: tuple[str, ...] | None = None, no_truncate: bool = False, redact: tuple[str, ...] = (),
         redact_key: str | None = None, show_secrets: bool = False) -> None:
    """Show the batches (and with --records the records) of segment files.

    PATHS are .log, .index, .timeindex, .txnindex, .snapshot or .checkpoint files,
    leader-epoch-checkpoint, partition.metadata or quorum-state files, partition
    folders or log directories.
    """
    payload, kd, vd, records, decode = prepare_dump(fmt, payload, key_decoder, value_decoder, records, decode)
    refuse_unless(fmt != "kafka" and input_format != "kafka07", ("fields",),
                  "applies to the text and jsonl record lines of Kafka segments")
    refuse_unless(fmt == "text" and input_format != "kafka07", ("no_truncate",),
                  "applies to the text format (jsonl and kafka lines are never cut)")
    refuse_unless(input_format != "kafka07", ("redact", "redact_key"), "applies to Kafka segments")
    refuse_unless(fmt != "kafka" and input_format != "kafka07", ("show_secrets",),
                  "applies to kseg's own formats (--format kafka shows every field, as kafka-dump-log.sh)")
    redactor = redactor_of(redact, redact_key)
    records = records or fields is not None  # choosing record fields asks for the records
    view = RecordView(fields, not no_truncate)
    files = expand_for_dump(paths)
    if input_format == "kafka07":
        dump_kafka07(files, sys.stdout, fmt=fmt, deep=records, key_decoder=kd, value_decoder=vd)
        return
    # Each log-like file's format by name, else by its first bytes (a README is unusable input).
    formats = [_dump_format(f, input_format, fmt) for f in files]
    sys.stdout.flush()
    out = ChunkedWriter(sys.stdout.buffer)  # output leaves in 1 MiB writes
    renderer = make_renderer(fmt, out, sys.stderr, kd, vd, records=records, kafka_version=kafka_version,
                             skip_record_metadata=skip_record_metadata, index_sanity=index_sanity,
                             verify_index=verify_index, view=view)
    options = dump_options_for(fmt, renderer, records=records, decode=decode, max_bytes=max_bytes,
                               from_offset=from_offset, to_offset=to_offset, from_time=from_time, to_time=to_time,
                               max_decompressed_bytes=max_decompressed_bytes, keep_going=keep_going,
                               redactor=redactor, show_secrets=show_secrets)
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
                    if isinstance(ev, NoteEvent):  # renamed, grew or changed while it was read
                        out.flush()
                        click.echo(f"kseg: note: {printable(str(ev.path))}: {ev.text}", err=True)
                        continue
                    renderer(ev)
                    if isinstance(ev, PlainRunEvent):
                        problems += len(ev.run.bad_crcs)
                    elif (isinstance(ev, BadBatchEvent)
                            or (isinstance(ev, TailEvent) and ev.reported and not live(ev.path, ev.tail))
                            or (isinstance(ev, BatchEvent) and not ev.crc_valid)):
                        problems += 1
                    if isinstance(ev, TailEvent) and ev.reported and ev.tail.position == 0:
                        hint = format_hint(f, KAFKA)
                        if hint:
                            click.echo(f"kseg: {f}: {hint}", err=True)
            except InputError as e:
                out.flush()
                if gone(f):  # a local file deleted by the broker since it was listed
                    click.echo(f"kseg: note: {f}: {VANISHED}", err=True)
                    continue
                if not keep_going:
                    raise
                click.echo(f"kseg: error: {e}", err=True)  # one line; the rest goes on
                unreadable += 1
    except KeyboardInterrupt as e:
        # Ctrl-C: stop now, quietly, with the shell's code for SIGINT (SIGTERM: one line, 143).
        # Pending output is dropped, and stdout is pointed at /dev/null so that the exit
        # cannot block on a full pipe.
        interrupted = True
        _drop_stdout()
        if isinstance(e, Terminated):
            click.echo("kseg: terminated", err=True)
        raise SystemExit(exit_code(e)) from None
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


def make_renderer(fmt: str, out: Any, err: Any, kd: Any, vd: Any, *, records: bool, kafka_version: str,
                  skip_record_metadata: bool = False, index_sanity: bool = False, verify_index: bool = False,
                  view: RecordView | None = None) -> Any:
    """The renderer of ``fmt`` writing to ``out`` (bytes) and ``err`` (text); shared with
    ``kseg-dump-log``, which is ``--format kafka`` under kafka-dump-log.sh's options. ``view``:
    ``--fields`` and ``--no-truncate`` (text and jsonl)."""
    if fmt == "kafka":
        return KafkaRenderer(out, err, kd, vd, deep=records, kafka_version=kafka_version,
                             skip_record_metadata=skip_record_metadata, index_sanity=index_sanity,
                             verify_index=verify_index)
    return RENDERERS[fmt](out, err, kd, vd, view=view)


def dump_options_for(fmt: str, renderer: Any, *, records: bool, decode: str | None, max_bytes: int | None,
                     from_offset: int | None = None, to_offset: int | None = None, from_time: int | None = None,
                     to_time: int | None = None, max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                     keep_going: bool = False, redactor: Redactor | None = None,
                     show_secrets: bool = False) -> DumpOptions:
    """What the dump operation is asked for ``fmt`` and its renderer (``--format kafka`` reads names
    as kafka-dump-log.sh does and hands the renderer what it can write at once)."""
    return DumpOptions(records=records, from_offset=from_offset, to_offset=to_offset, from_time=from_time,
                       to_time=to_time, max_bytes=max_bytes, max_decompressed_bytes=max_decompressed_bytes,
                       keep_going=keep_going, strict_names=fmt == "kafka", decode=decode,
                       wrapper_counts=fmt != "kafka", record_spans=getattr(renderer, "takes_spans", False),
                       plain_runs=getattr(renderer, "takes_plain_runs", False), redactor=redactor,
                       show_secrets=show_secrets or fmt == "kafka")


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


def prepare_dump(fmt: str, payload: str | None, key_decoder: str | None, value_decoder: str | None,
                 records: bool, decode: str | None) -> tuple[str, Any, Any, bool, str | None]:
    """``kseg dump``'s options resolved as kafka-dump-log.sh resolves its own:
    (payload, key decoder, value decoder, records, decode)."""
    refuse_unless(fmt == "kafka", ("kafka_version", "skip_record_metadata", "index_sanity", "verify_index"),
                  "shapes kafka-dump-log.sh's lines: it applies with --format kafka only")
    if payload is None:
        payload = "none" if fmt == "kafka" else "utf8"
    kd = payload_decoder(payload, fmt)
    vd = kd
    if key_decoder:
        kd = load_decoder(key_decoder)
    if value_decoder:
        vd = load_decoder(value_decoder)
    if (key_decoder or value_decoder) and fmt == "kafka":
        records = True  # as kafka-dump-log.sh: a decoder implies --print-data-log
    if fmt == "kafka" and payload != "none":
        records = True
    if decode == "none":
        decode = None
    if decode:
        records = True  # as kafka-dump-log.sh's --offsets-decoder & co.: decoding needs the records
    return payload, kd, vd, records, decode
