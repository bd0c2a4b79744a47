"""``kseg dump``: the batches, records and index entries of segment files, in text, JSON lines
or kafka-dump-log.sh's own lines."""

from __future__ import annotations

import os
import sys
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generator, Iterator, Protocol

import click

from kseg.cli.common import EXIT_DATA, EXIT_USAGE, expand_for_dump, guarded, jobs_option, refuse_unless
from kseg.cli.record_options import dump_options, redact_options, redactor_of
from kseg.defaults import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.interrupts import Terminated, exit_code
from kseg.lazy import load
from kseg.log.listing import read_kind
from kseg.ops.dump import DumpOptions
from kseg.ops.dump_split import OPERATION, DumpCounts, DumpJob, LiveTails, dump_counted, splits
from kseg.ops.executors import execute, here_only
from kseg.ops.live_output import IDLE
from kseg.errors import InputError
from kseg.ops.redact import FIELDS, IDS, SECRETS, Redactor
from kseg.ops.sniff import KAFKA, KAFKA07, input_format_of, name_format
from kseg.ops.spool import FileSpan
from kseg.render.dump import RENDERERS, ChunkedWriter, KafkaRenderer, payload_decoder
from kseg.render.fields import RECORD_FIELDS, RecordView, parse_fields
from kseg.render.payload import load_decoder


# What dump's --redact takes: the record fields, the identities of decoded internal topics,
# and the secrets --format kafka would show.
DUMP_REDACTS = (*FIELDS, IDS, SECRETS)
DUMP_KAFKA07 = "kseg.render.kafka07:dump_kafka07"  # the pre-0.8 dump, loaded for 0.7 files


def dump_redactor(redact: tuple[str, ...], redact_key: str | None, decode: str | None,
                  show_secrets: bool = False) -> Redactor | None:
    """dump's (and spark dump's) --redact: ids applies to the records --decode decodes."""
    redactor = redactor_of(redact, redact_key, DUMP_REDACTS, show_secrets)
    if redactor is not None and redactor.ids and not decode:
        raise InputError("--redact ids applies to the internal topics' records --decode decodes: give --decode "
                         "auto (or a family), or --redact keys,values to hide the raw keys and values")
    return redactor


dump_redact_options = redact_options(
    "the keys, values or header values of the records shown (an undecodable batch with --keep-going: its header's "
    "bytes only)", DUMP_REDACTS)


def shows_secrets(fmt: str, show_secrets: bool, redactor: Redactor | None) -> bool:
    """Decoded secrets are shown with --show-secrets, and in --format kafka (as kafka-dump-log.sh
    shows them) unless --redact secrets."""
    return show_secrets or (fmt == "kafka" and not (redactor is not None and redactor.secrets))


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
@dump_redact_options
@click.option("--show-secrets", is_flag=True,
              help="With --decode: show SCRAM salts and keys, delegation token ids and sensitive configuration "
                   "values (passwords, JAAS configurations, keys) of the metadata log; hidden by default "
                   "([hidden]). --format kafka always shows them, as kafka-dump-log.sh.")
@jobs_option
@guarded
def dump(paths: tuple[Path, ...], jobs: int = 1, **options: Any) -> None:
    """Show the batches (and with --records the records) of segment files.

    PATHS are .log, .index, .timeindex, .txnindex, .snapshot or .checkpoint files,
    leader-epoch-checkpoint, partition.metadata or quorum-state files, partition
    folders or log directories.
    """
    try:
        run_dump(paths, PoolRunner(jobs), **options)
    except KeyboardInterrupt as e:
        # Ctrl-C: stop now, quietly, with the shell's code for SIGINT (SIGTERM: one line, 143).
        # Pending output is dropped, and stdout is pointed at /dev/null so that the exit
        # cannot block on a full pipe.
        _drop_stdout()
        if isinstance(e, Terminated):
            click.echo("kseg: terminated", err=True)
        raise SystemExit(exit_code(e)) from None


class DumpRunner(Protocol):
    """Where a dump's files are rendered when not one after another in this process: a pool of
    worker processes (``-j``), or Spark's executors (``kseg spark dump``)."""

    def takes(self, files: list[Path], options: DumpOptions) -> bool:
        """Whether these files are rendered by it (else the dump runs here, serially)."""

    def __call__(self, job: DumpJob, files: list[Path], spool: str) -> Generator[Any, None, None]:
        """The items of dump's merge (``kseg.ops.dump_split.merge``), in file order."""


@dataclass(frozen=True)
class PoolRunner:
    """``-j N``: files, and slices of a large log, rendered by N worker processes; a single file
    read whole, or one only this process may read (stdin, an object), keeps the dump here."""

    jobs: int

    def takes(self, files: list[Path], options: DumpOptions) -> bool:
        return not any(here_only(f) for f in files) and splits(files, options, self.jobs)

    def __call__(self, job: DumpJob, files: list[Path], spool: str) -> Generator[Any, None, None]:
        return execute(OPERATION, (files, spool), job, self.jobs)


def run_dump(paths: tuple[Path, ...], runner: DumpRunner, *, records: bool, fmt: str, payload: str | None,
             key_decoder: str | None, value_decoder: str | None, decode: str | None, kafka_version: str,
             skip_record_metadata: bool, index_sanity: bool, verify_index: bool, from_offset: int | None,
             to_offset: int | None, from_time: int | None, to_time: int | None, max_bytes: int | None,
             keep_going: bool, input_format: str, max_decompressed_bytes: int,
             fields: tuple[str, ...] | None = None, no_truncate: bool = False, redact: tuple[str, ...] = (),
             redact_key: str | None = None, show_secrets: bool = False, spool_dir: str | None = None) -> None:
    """``kseg dump`` (and ``kseg spark dump``) to standard output: the files rendered here, or by
    ``runner`` with the output merged in file order (its spool folder under ``spool_dir``, default
    the system's temporary folder); exits 1 or 2 as the data says. An interrupt is raised as it
    came, the output pending dropped."""
    payload, kd, vd, records, decode = prepare_dump(fmt, payload, key_decoder, value_decoder, records, decode)
    refuse_unless(fmt != "kafka" and input_format != "kafka07", ("fields",),
                  "applies to the text and jsonl record lines of Kafka segments")
    refuse_unless(fmt == "text" and input_format != "kafka07", ("no_truncate",),
                  "applies to the text format (jsonl and kafka lines are never cut)")
    refuse_unless(input_format != "kafka07", ("redact", "redact_key"), "applies to Kafka segments")
    refuse_unless(fmt != "kafka" and input_format != "kafka07", ("show_secrets",),
                  "applies to kseg's own formats (--format kafka shows every field, as kafka-dump-log.sh)")
    redactor = dump_redactor(redact, redact_key, decode, show_secrets)
    records = records or fields is not None  # choosing record fields asks for the records
    view = RecordView(fields, not no_truncate)
    files, newest = expand_for_dump(paths)
    if input_format == "kafka07":
        load(DUMP_KAFKA07)(files, sys.stdout, fmt=fmt, deep=records, key_decoder=kd, value_decoder=vd)
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
    split = KAFKA07 not in formats and runner.takes(files, options)  # a Kafka 0.7 file keeps the dump here
    live = LiveTails(newest)
    counts = DumpCounts()
    interrupted = False

    def tell(line: str) -> None:
        out.flush()
        click.echo(line, err=True)

    try:
        if split:  # files rendered elsewhere, the output merged in file order
            import tempfile  # (not loaded by a dump in one process)

            spec = RendererSpec(fmt, payload, key_decoder, value_decoder, records, kafka_version,
                                skip_record_metadata, index_sanity, verify_index, view)
            with tempfile.TemporaryDirectory(prefix=".kseg-dump-" if spool_dir else "kseg-dump-",
                                             dir=spool_dir) as spool:
                with closing(runner(DumpJob(options, spec, live), files, spool)) as items:
                    _write_merged(items, out, renderer, counts)
        else:  # the reference: each file's output streams out as it is read
            for f, form in zip(files, formats):
                if form == KAFKA07:
                    out.flush()
                    sys.stdout.flush()
                    load(DUMP_KAFKA07)([f], sys.stdout, fmt=fmt, deep=records, key_decoder=kd, value_decoder=vd)
                    sys.stdout.flush()
                    continue
                dump_counted(f, options, renderer, tell, live, counts)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if not interrupted:  # what was read is shown, also when an error stops the dump
            renderer.close()
            out.flush()
    if counts.unreadable:
        raise SystemExit(EXIT_USAGE)
    if counts.problems:
        # Everything readable was shown; the data still has problems (exit 1, as verify).
        click.echo(f"kseg: {counts.problems} problem(s) in the data (bad CRCs, partial or undecodable batches); "
                   "see kseg verify", err=True)
        raise SystemExit(EXIT_DATA)


def _write_merged(items: Iterator[Any], out: ChunkedWriter, renderer: Any, counts: DumpCounts) -> None:
    """The merge's items written out: bytes (or spans of a spool file, sent by the kernel where it
    can) to stdout, lines to stderr at their places; the totals absorbed (exit code, the
    renderer's report at the end)."""
    fd = _stdout_fd()
    for item in items:
        if isinstance(item, bytes):
            out.write(item)
        elif isinstance(item, FileSpan):
            out.flush()
            if fd is None or not item.send(fd):
                for chunk in item.chunks():
                    out.write(chunk)
        elif item is IDLE:  # the rest is still being rendered: what is here leaves now
            out.flush()
        elif isinstance(item, str):
            out.flush()
            click.echo(item, err=True, nl=False)
        else:
            counts.absorb(item.counts)
            for state in item.states:
                renderer.absorb(state)


@dataclass(frozen=True)
class RendererSpec:
    """How to make the dump's renderer in a worker process (``DumpJob.renderer``): the options by
    name, since a decoder (a lambda, a user's function) does not cross processes."""

    fmt: str
    payload: str
    key_decoder: str | None
    value_decoder: str | None
    records: bool
    kafka_version: str
    skip_record_metadata: bool
    index_sanity: bool
    verify_index: bool
    view: RecordView

    def __call__(self, out: Any, err: Any) -> Any:
        kd, vd = dump_decoders(self.fmt, self.payload, self.key_decoder, self.value_decoder)
        return make_renderer(self.fmt, out, err, kd, vd, records=self.records, kafka_version=self.kafka_version,
                             skip_record_metadata=self.skip_record_metadata, index_sanity=self.index_sanity,
                             verify_index=self.verify_index, view=self.view)


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
                       keep_going=keep_going, strict_names=fmt == "kafka", kafka_stops=fmt == "kafka", decode=decode,
                       wrapper_counts=fmt != "kafka", record_spans=getattr(renderer, "takes_spans", False),
                       plain_runs=getattr(renderer, "takes_plain_runs", False),
                       header_runs=getattr(renderer, "takes_header_runs", False), redactor=redactor,
                       show_secrets=shows_secrets(fmt, show_secrets, redactor))


def _stdout_fd() -> int | None:
    """Standard output's descriptor (None: not a real file, such as tests' captured output)."""
    try:
        return sys.stdout.buffer.fileno()
    except (AttributeError, ValueError, OSError):
        return None


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
    if read_kind(path, strict=fmt == "kafka") == "log":
        return input_format_of(path, input_format)
    return KAFKA


def prepare_dump(fmt: str, payload: str | None, key_decoder: str | None, value_decoder: str | None,
                 records: bool, decode: str | None) -> tuple[str, Any, Any, bool, str | None]:
    """``kseg dump``'s options resolved as kafka-dump-log.sh resolves its own:
    (payload, key decoder, value decoder, records, decode)."""
    refuse_unless(fmt == "kafka", ("kafka_version", "skip_record_metadata", "index_sanity", "verify_index"),
                  "shapes kafka-dump-log.sh's lines: it applies with --format kafka only")
    if payload is None:
        payload = "none" if fmt == "kafka" else "utf8"
    kd, vd = dump_decoders(fmt, payload, key_decoder, value_decoder)
    if (key_decoder or value_decoder) and fmt == "kafka":
        records = True  # as kafka-dump-log.sh: a decoder implies --print-data-log
    if fmt == "kafka" and payload != "none":
        records = True
    if decode == "none":
        decode = None
    if decode:
        records = True  # as kafka-dump-log.sh's --offsets-decoder & co.: decoding needs the records
    return payload, kd, vd, records, decode


def dump_decoders(fmt: str, payload: str, key_decoder: str | None, value_decoder: str | None) -> tuple[Any, Any]:
    """The key and value decoders of ``--payload`` (resolved), ``--key-decoder`` and ``--value-decoder``."""
    kd = payload_decoder(payload, fmt)
    vd = kd
    if key_decoder:
        kd = load_decoder(key_decoder)
    if value_decoder:
        vd = load_decoder(value_decoder)
    return kd, vd
