"""``kseg verify``: check segment files, partition folders or log directories; report every problem."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, EXIT_USAGE, guarded, jobs_option, shown_options, verify_options
from kseg.errors import InputError
from kseg.lazy import load
from kseg.ops.sniff import KAFKA07, format_hint
from kseg.ops.verify import NOTE, Problem, VerifyOptions, verify_kafka07, verify_paths
from kseg.render.reports import write_verify

# Only --remote-metadata needs it (it replays __remote_log_metadata with the decoders): loaded on use.
CHECK_REMOTE_STORE = "kseg.ops.tiered:check_remote_store"
# Only --expect needs the JSON-lines reader of kseg build: loaded on use.
CHECK_EXPECTED = "kseg.ops.expect:expected_report"


@click.command("verify")
@verify_options
@jobs_option
@click.option("--remote-metadata", "remote_metadata", multiple=True, type=click.Path(path_type=Path),
              metavar="PATH", help="PATHS are a tiered store: also compare its segments with the "
              "__remote_log_metadata partition(s) PATH holds (a partition folder or the broker's log directory; "
              "repeatable): segments listed but missing, present but unlisted, offsets and sizes.")
@click.option("--expect", "expect", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE.jsonl",
              help="Also check that the records are what FILE says: JSON lines in dump's contract (kseg dump -r "
              "--format jsonl); only the fields a line gives are compared, each difference with its line number.")
@guarded
def verify(paths: tuple[Path, ...], quick: bool, fmt: str, no_index: bool, input_format: str, verbose: bool,
           errors_only: bool, no_notes: bool, max_decompressed_bytes: int, jobs: int, remote_metadata: tuple[Path, ...], expect: Path | None) -> None:
    """Check segment files, partition folders or log directories; report every problem.

    Exit 0 when clean, 1 when problems were found, 2 when the input is unusable.
    """
    shown = shown_options(verbose, errors_only, no_notes, fmt)
    if remote_metadata and input_format == "kafka07":
        raise InputError("--remote-metadata is for a tiered store of Kafka segments, not 0.7 files")
    if expect is not None and input_format == "kafka07":
        raise InputError("--expect compares Kafka records in dump's JSON lines, not 0.7 files")
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
        report = verify_paths(paths, options, progress=progress, jobs=jobs)
        if remote_metadata:
            report.files.append(load(CHECK_REMOTE_STORE)(list(remote_metadata), list(paths)))
        if expect is not None:
            report.files.append(load(CHECK_EXPECTED)(list(paths), expect))
    if progress:
        click.echo("\r\033[K", nl=False, err=True)
    write_verify(report, sys.stdout, fmt, **shown)
    if report.unreadable:  # every other file was checked; these could not be read
        raise SystemExit(EXIT_USAGE)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def _progress() -> Callable[[str], None]:
    count = [0]

    def show(path: str) -> None:
        count[0] += 1
        click.echo(f"\r\033[Kverifying [{count[0]}] {path}", nl=False, err=True)

    return show

