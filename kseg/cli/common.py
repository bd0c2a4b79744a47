"""What every kseg command shares: exit codes, error handling, option sets, argument checks.

The option sets are decorators, so ``kseg spark ...`` takes exactly the plain
commands' options (``params_of``) and the two cannot drift apart.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, NamedTuple

import click

from kseg.cli.loading import quiet_interrupts
from kseg.cli.storage import LOCATION
from kseg.defaults import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_RECORDS,
    DEFAULT_DELETE_RETENTION_MS,
    DEFAULT_INDEX_INTERVAL_BYTES,
    DEFAULT_KEY_MAP_BYTES,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_PRODUCER_EXPIRATION_MS,
    DEFAULT_SEGMENT_BYTES,
    DEFAULT_SEGMENT_INDEX_BYTES,
    parse_size,
)
from kseg.cli.exits import EXIT_DATA, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE  # noqa: F401 - re-exported
from kseg.errors import DataError, InputError, KsegError
from kseg.interrupts import Terminated, catching_signals, exit_code
from kseg.lazy import load
from kseg.log.listing import newest_segments, reading_groups
from kseg.log.segment import is_stdin
from kseg.ops.executors import AUTO, parse_jobs
from kseg.storage import remove_live_objects


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class State:
    """Process-wide CLI settings (``kseg --traceback``)."""

    traceback = False


def fail(e: KsegError) -> None:
    """One stderr line and the exit code for a kseg error (1: the data; 2: the input or usage)."""
    click.echo(f"kseg: error: {e}", err=True)
    raise SystemExit(EXIT_DATA if isinstance(e, DataError) else EXIT_USAGE)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn kseg errors into one stderr line and the right exit code; SIGTERM ends the command
    the way Ctrl-C does (cleanup on the way out, one line, 143 instead of 130); whatever way the
    command ends, temporaries and staging objects it has not published or removed go."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with catching_signals():
            _guarding[0] += 1
            try:
                return _guarded_call(fn, args, kwargs)
            finally:
                _guarding[0] -= 1
                if not _guarding[0]:  # the outermost command's way out
                    remove_leftovers()

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


_guarding = [0]  # nesting of guarded commands (kseg spark tools wraps plain ones)


def _guarded_call(fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except KsegError as e:
        if State.traceback:
            raise
        fail(e)
    except BrokenPipeError:
        # `kseg dump ... | head`: the reader went away; leave quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(EXIT_OK)
    except OSError as e:
        # The machine failed us (a full disk, a file that went away): one line, exit 2.
        if State.traceback:
            raise
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"kseg: error: {where}{e.strerror or e}", err=True)
        raise SystemExit(EXIT_USAGE)
    except MemoryError:
        # An input that asks for more memory than the machine (or ulimit -v) gives: one line, exit 2.
        if State.traceback:
            raise
        sys.stderr.write("kseg: error: out of memory (an input needs more than this process may use; "
                         "raise the memory limit or report the file)\n")
        raise SystemExit(EXIT_USAGE)
    except KeyboardInterrupt as e:
        # Ctrl-C or SIGTERM: outputs were cleaned up on the way out; no traceback, the shell's 130/143.
        if State.traceback:
            raise
        interrupted(e)


def interrupted(e: KeyboardInterrupt) -> None:
    """One line and the shell's code for the signal: 130 (Ctrl-C), 143 (SIGTERM)."""
    click.echo("kseg: terminated" if isinstance(e, Terminated) else "kseg: interrupted", err=True)
    raise SystemExit(exit_code(e))


def remove_leftovers() -> None:
    """Temporaries and staging objects a command made and neither published nor removed
    (a signal between making one and the code that would clean it up). Temporaries are made
    only through ``kseg.log.atomic``: a command that never loaded it has none to remove."""
    atomic = sys.modules.get("kseg.log.atomic")
    if atomic is not None:
        atomic.remove_live_temporaries()
    remove_live_objects()


class LazyCommand(NamedTuple):
    """A command the group imports on first use: where it lives and its line in the group's help."""

    where: str  # "module:attribute"
    summary: str


class KsegGroup(click.Group):
    """The ``kseg`` group: click's own errors (usage, bad options) read ``kseg: error: ...``
    like kseg's, and Ctrl-C ends any command with exit 130 and no traceback.

    ``lazy`` names commands by where they live; a command's module is imported when the
    command is looked up, so ``kseg dump`` loads the dump path and nothing else, and the
    group's help and shell completion, which only need the summaries, load no command
    (tests/test_layers.py checks the table as it checks imports).
    """

    def __init__(self, *args: Any, lazy: dict[str, LazyCommand] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            with quiet_interrupts():
                command = load(self.lazy[name].where)
            command.short_help = self.lazy[name].summary
            self.add_command(command, name)
        return super().get_command(ctx, name)

    def summaries(self, ctx: click.Context, limit: int = 45) -> list[tuple[str, str]]:
        """(name, one line) of each visible command, from the table where it has not been loaded."""
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy and name not in self.commands:
                rows.append((name, self.lazy[name].summary))
            elif (command := self.get_command(ctx, name)) is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        return rows

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = self.summaries(ctx, formatter.width - 6 - max(map(len, self.list_commands(ctx)), default=0))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        from click.shell_completion import CompletionItem

        found = [CompletionItem(name, help=line) for name, line in self.summaries(ctx) if name.startswith(incomplete)]
        return found + click.Command.shell_complete(self, ctx, incomplete)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:  # here rather than in click's main, which would print a blank line
            interrupted(e)

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            with catching_signals():
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:
            e.show()
            raise SystemExit(e.exit_code)
        except click.ClickException as e:
            ctx = getattr(e, "ctx", None)
            hint = f" (see '{ctx.command_path} --help')" if isinstance(e, click.UsageError) and ctx else ""
            click.echo(f"kseg: error: {e.format_message()}{hint}", err=True)
            raise SystemExit(EXIT_USAGE if isinstance(e, click.UsageError) else e.exit_code)
        except KeyboardInterrupt as e:
            interrupted(e)
        except click.exceptions.Abort as e:  # click's word for a KeyboardInterrupt while it parsed
            interrupted(e.__context__ if isinstance(e.__context__, KeyboardInterrupt) else KeyboardInterrupt())
        raise SystemExit(rv if isinstance(rv, int) else EXIT_OK)


class SizeType(click.ParamType):
    """A byte count: ``1048576``, ``64MiB``, ``1g``."""

    name = "size"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        try:
            return parse_size(value)
        except InputError as e:
            self.fail(e.message, param, ctx)


SIZE = SizeType()


# How every time option reads its value (``time_option`` puts it in each one's help).
TIME_GRAMMAR = ("milliseconds since the epoch (digits alone, as 1700000000000) or ISO-8601 "
                "(2023-11-14T22:13:20.5Z, 2023-11-14T23:13:20+01:00, 2023-11-14)")
NO_ZONE_RULE = "a time without a zone is UTC"


class TimeType(click.ParamType):
    """A point in time, for every time option (``time_option``): ``TIME_GRAMMAR``; a time
    without a zone is read as UTC (not the machine's zone: the same command gives the same
    answer wherever it runs, and the broker's timestamps are UTC milliseconds)."""

    name = "time"

    def convert(self, value: Any, param: Any, ctx: Any) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        try:
            return int(text)
        except ValueError:
            pass
        from datetime import datetime, timezone  # stdlib, late: only a time given as ISO-8601 needs it

        try:
            when = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" and text else text)
        except ValueError:
            self.fail(f"{value!r} is neither milliseconds since the epoch nor an ISO-8601 time", param, ctx)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        delta = when - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


TIME = TimeType()


def given(name: str) -> bool:
    """Whether the running command's option ``name`` was given (not left at its default)."""
    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is not None and source not in (click.core.ParameterSource.DEFAULT,
                                                 click.core.ParameterSource.DEFAULT_MAP)


def refuse_unless(applies: bool, names: tuple[str, ...], why: str) -> None:
    """Options given where they cannot apply are a usage error naming the option and why
    (never silently ignored)."""
    ctx = click.get_current_context(silent=True)
    if applies or ctx is None:
        return
    for p in ctx.command.params:
        if p.name in names and given(p.name):
            raise InputError(f"{p.opts[-1]} {why}")


def time_option(*decls: str, help: str, **kw: Any) -> Decorator:
    """A point-in-time option: ``TIME``, with the grammar and the zone rule in its help."""
    return click.option(*decls, type=TIME, default=None, metavar="TIME",
                        help=f"{help} TIME: {TIME_GRAMMAR}; {NO_ZONE_RULE}.", **kw)


def options(*decorators: Decorator) -> Decorator:
    """Several click decorators as one, applied in the order they read."""

    def apply(f: Callable[..., Any]) -> Callable[..., Any]:
        for d in reversed(decorators):
            f = d(f)
        return f

    return apply


def params_of(decorator: Decorator) -> list[click.Parameter]:
    """The click parameters an option set adds, in order (for commands built by hand)."""
    f = decorator(lambda **_: None)
    return list(reversed(getattr(f, "__click_params__", [])))


max_decompressed_option = click.option(
    "--max-decompressed-bytes", type=SIZE, default=DEFAULT_MAX_DECOMPRESSED_BYTES, show_default="256MiB",
    help="A batch that inflates past this is reported as an error (decompression bomb guard).")
index_interval_option = click.option(
    "--index-interval-bytes", type=SIZE, default=DEFAULT_INDEX_INTERVAL_BYTES, show_default=True,
    help="Bytes between offset index entries (Kafka's index.interval.bytes).")
def damage_option(help_text: str) -> Decorator:
    """``--on-damage stop|skip|carry`` (``kseg.log.checks``), described for the command."""
    return click.option("--on-damage", type=click.Choice(["stop", "skip", "carry"]), default="stop", show_default=True,
                        help=help_text)


ON_DAMAGE_HELP = ("What to do with a damaged batch (a CRC that does not match, contents that contradict its "
                  "header, or offsets that go back; what `kseg verify` reports as errors): stop (exit 1, write nothing), skip (leave it "
                  "out), carry (copy its bytes as they are, never re-encoded nor given a new CRC). skip and carry "
                  "write the output, list the batches in the summary and exit 1. A file carried over beside the "
                  "segments (a producer snapshot, partition.metadata ...) that fails its checks likewise; a .txnindex "
                  "is written anew from the log under skip, never left out; a log directory's log-start and cleaner "
                  "checkpoints are written from the log alone under skip or carry.")
on_damage_option = damage_option(ON_DAMAGE_HELP)
# repair and salvage have their own way with damaged batches (cut, read past): the policy is for files
carried_damage_option = damage_option(
    "What to do with a file carried over beside the segments (partition.metadata, quorum-state, meta.properties, "
    "...) that fails its checks (what `kseg verify` reports as errors): stop (exit 1, write nothing), skip (leave "
    "it out), carry (copy it as it is). skip and carry write the output, name the file in the summary and exit 1. "
    "A log directory's log-start and cleaner checkpoints are written anew from the log under either.")
SKIP_UNCONVERTIBLE_HELP = ("A partition of a log directory that the target format cannot hold (zstd in a v0/v1 "
                           "message, an offset past 2^63-1) is left out of the output and named in the summary; "
                           "the others are written, and the command exits 1. Without it such a partition stops "
                           "the command (one line, exit 2, nothing written).")
skip_unconvertible_option = click.option("--skip-unconvertible", is_flag=True, help=SKIP_UNCONVERTIBLE_HELP)
codec_option = click.option("--codec", default="keep", show_default=True,
                            help="keep (each batch's own codec), none, gzip, snappy, lz4, zstd or a plugin alias.")
level_option = click.option("--level", type=int, default=None, help="Compression level (codec's default if unset).")
INPUT_FORMAT_HELP = ("kafka07: the pre-0.8 message format (offsets are byte positions) [default: by name "
                     "(*.kafka files, 0.7 partition folders), else by the first bytes].")
def _jobs(ctx: click.Context, param: click.Parameter, value: str) -> int:
    try:
        return parse_jobs(value)
    except ValueError:
        raise click.BadParameter(f"{value}: give a count of 1 or more, or {AUTO}") from None


jobs_option = click.option(
    "-j", "--jobs", default="1", metavar="N|auto", callback=_jobs, show_default=True,
    help="Worker processes (auto: the cores this process may use); the output is the same for any number.")
# --format of the commands that print a report (text for people, json for programs).
report_format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                                    show_default=True)
key_decoder_option = click.option("--key-decoder", default="utf8", show_default=True,
                                  help="utf8|hex|base64|int|long|json or module:function.")
value_decoder_option = click.option("--value-decoder", default="utf8", show_default=True,
                                    help="utf8|hex|base64|int|long|json or module:function.")
input_format_option = click.option(
    "--input-format", type=click.Choice(["kafka", "kafka07"]), default=None, help=INPUT_FORMAT_HELP)

# What diff and find share: how keys and values are shown, the report's form, the bomb guard, workers.
record_report_options = options(key_decoder_option, value_decoder_option, report_format_option,
                                max_decompressed_option, jobs_option)

# The record filters of dump and export (inclusive; a batch wholly outside them is skipped on its header).
record_filter_options = options(
    click.option("--from-offset", type=int, default=None),
    click.option("--to-offset", type=int, default=None),
    time_option("--from-time", help="From this time on (a batch by its newest timestamp, a record by its own)."),
    time_option("--to-time", help="Up to this time, inclusive."),
)

def shown_options(verbose: bool, errors_only: bool, no_notes: bool, fmt: str) -> dict[str, bool]:
    """What a verify report shows (``write_verify``'s keywords); contradictory choices are a usage error."""
    if verbose and errors_only:
        raise InputError("-v/--verbose lists every file and -q/--errors-only only those with errors: choose one")
    if (errors_only or no_notes) and fmt != "text":
        raise InputError(f"{'-q/--errors-only' if errors_only else '--no-notes'} shapes the text report; "
                         f"--format {fmt} always carries every finding")
    return {"verbose": verbose, "errors_only": errors_only, "notes": not no_notes}


verify_options = options(
    click.argument("paths", nargs=-1, required=True, type=LOCATION),
    click.option("--quick", is_flag=True, help="Framing and CRCs only (the broker's own check, at disk speed)."),
    click.option("--format", "fmt", type=click.Choice(["text", "json", "junit", "sarif", "github"]), default="text",
                 show_default=True, help="junit, sarif: a report for CI (a test case per file, a failure per "
                 "problem); github: GitHub Actions annotations (::error file=...::...)."),
    click.option("--no-index", is_flag=True, help="Do not check .index/.timeindex/.txnindex files."),
    input_format_option,
    click.option("-v", "--verbose", is_flag=True, help="List every file checked, not only those with findings."),
    click.option("-q", "--errors-only", is_flag=True, help="Text: only the files with errors and their errors "
                 "(no notes), then the summary line."),
    click.option("--no-notes", is_flag=True, help="Text: leave out notes (facts Kafka accepts, such as the "
                 "offset holes compaction leaves); errors and the summary as usual."),
    max_decompressed_option,
)

write_options = options(
    click.argument("input_path", metavar="INPUT", type=LOCATION),
    click.option("-o", "--output", type=LOCATION, required=True,
                 help="Output .log file, partition folder or log directory (matching INPUT)."),
    index_interval_option,
    click.option("--no-index", is_flag=True, help="Do not write .index/.timeindex files."),
    click.option("--force", is_flag=True, help="Replace an existing output."),
    max_decompressed_option,
    on_damage_option,
    skip_unconvertible_option,
)

up_convert_options = options(
    write_options,
    click.option("--to-magic", type=click.IntRange(1, 2), required=True),
    codec_option,
    level_option,
    input_format_option,
    click.option("--base-offset", type=int, default=0, show_default=True,
                 help="First logical offset for --input-format kafka07."),
    click.option("--timestamp-type", type=click.Choice(["create", "log-append"]), default="create",
                 show_default=True,
                 help="create: v1 timestamps are kept, v0 messages get none (-1); log-append (needs "
                      "--log-append-time): every converted entry is stamped, as on a LogAppendTime topic."),
    time_option("--log-append-time", help="The LogAppendTime to stamp (with --timestamp-type log-append)."),
    click.option("--partition-leader-epoch", type=click.IntRange(-1, 2**31 - 1), default=-1, show_default=True,
                 help="The leader epoch written into each new v2 batch (the broker writes its current one)."),
    click.option("--batch-records", type=click.IntRange(1), default=DEFAULT_BATCH_RECORDS, show_default=True,
                 help="At most this many uncompressed legacy messages per v2 batch."),
    click.option("--batch-bytes", type=SIZE, default=DEFAULT_BATCH_BYTES, show_default=True,
                 help="At most about this many bytes per v2 batch built from uncompressed messages "
                      "(stays under the broker's default max.message.bytes, 1 MiB)."),
)

down_convert_options = options(
    write_options,
    click.option("--to-magic", type=click.IntRange(0, 1), required=True),
    codec_option,
    level_option,
)

recompress_options = options(
    write_options,
    click.option("--codec", required=True, help="none, gzip, snappy, lz4, zstd or a plugin alias."),
    level_option,
    click.option("--topics", default="", help="Comma list of topics to recompress (log directories); empty: all."),
    click.option("--batch-records", type=click.IntRange(1), default=DEFAULT_BATCH_RECORDS, show_default=True,
                 help="At most this many uncompressed legacy messages per new wrapper."),
)

rebase_options = options(
    write_options,
    click.option("--base-offset", type=click.IntRange(0), required=True, help="The new first offset."),
)

def recovery_options(dry_run_help: str) -> Decorator:
    """What ``repair`` and ``salvage`` share: a damaged input, a new output (or --dry-run)."""
    return options(
        click.argument("input_path", metavar="INPUT", type=LOCATION),
        click.option("-o", "--output", type=LOCATION, default=None,
                     help="Output .log file, partition folder or log directory (matching INPUT). "
                          "Required unless --dry-run."),
        click.option("--dry-run", is_flag=True, help=dry_run_help),
        click.option("--force", is_flag=True, help="Replace an existing output."),
        click.option("--no-index", is_flag=True, help="Do not write .index/.timeindex/.txnindex files."),
    )


compact_options = options(
    click.argument("inputs", nargs=-1, required=True, type=LOCATION),
    click.option("-o", "--output", type=LOCATION, default=None,
                 help="Output folder (partition) or log directory, or an s3:// prefix. Required unless --dry-run."),
    click.option("--dry-run", is_flag=True, help="Print the summary only; write nothing."),
    click.option("--force", is_flag=True, help="Replace an existing output."),
    time_option("--now-ms", help="The cleaner's clock [default: now]."),
    click.option("--delete-retention-ms", type=int, default=DEFAULT_DELETE_RETENTION_MS, show_default=True),
    click.option("--min-compaction-lag-ms", type=int, default=0, show_default=True),
    click.option("--include-active", is_flag=True, help="Clean the newest segment too (the broker never does)."),
    click.option("--topics", default="", help="Comma list of topics to compact in a log directory; empty: all."),
    click.option("--key-map-bytes", type=SIZE, default=DEFAULT_KEY_MAP_BYTES, show_default="128MiB",
                 help="Memory for the key map (24 bytes per key: an MD5 digest and an offset, as the broker)."),
    click.option("--producer-id-expiration-ms", type=int, default=DEFAULT_PRODUCER_EXPIRATION_MS, show_default=True),
    click.option("--first-dirty-offset", type=int, default=None,
                 help="The cleaner checkpoint: segments before it count as clean (legacy tombstone rule)."),
    click.option("--single-pass", is_flag=True,
                 help="One cleaning pass, as one broker cleaning round (default: until a pass changes nothing)."),
    click.option("--segment-bytes", type=SIZE, default=DEFAULT_SEGMENT_BYTES, show_default="1GiB",
                 help="Adjacent cleaned segments are merged into one while their sizes add up to at most this "
                      "(the topic's segment.bytes), as the broker's cleaner groups them."),
    click.option("--segment-index-bytes", type=SIZE, default=DEFAULT_SEGMENT_INDEX_BYTES, show_default="10MiB",
                 help="... and their offset and time indexes to at most this each (segment.index.bytes)."),
    click.option("--keep-segments", is_flag=True,
                 help="One output segment per input segment (do not group cleaned segments)."),
    click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True),
    max_decompressed_option,
    on_damage_option,
)


# --------------------------------------------------------------------------- argument checks


def topic_set(topics: str) -> set[str]:
    """``--topics a,b``: the names given (empty: every topic)."""
    return {t.strip() for t in topics.split(",") if t.strip()}


def expand_for_dump(paths: tuple[Path, ...] | list[Path]) -> tuple[list[Path], frozenset[Path]]:
    """Files as given; folders become their segment files (with companions) in offset order.
    With them, from the same listing, the segments a broker may still be writing
    (``Group.newest``: none of the files named)."""
    out: list[Path] = []
    newest: set[Path] = set()
    for p in paths:
        if p.is_dir():
            groups = reading_groups([p])
            out.extend(f for g in groups for f in g.files)
            newest |= newest_segments(groups)
        elif os.path.lexists(p) or is_stdin(p) or not isinstance(p, Path):  # a file, or what is not one
            out.append(p)
        else:
            raise InputError("no such file or directory", file=str(p))
    return out, frozenset(newest)


def check_log_append(timestamp_type: str, log_append_time: int | None) -> None:
    if (timestamp_type == "log-append") != (log_append_time is not None):
        raise InputError("--timestamp-type log-append and --log-append-time go together")
