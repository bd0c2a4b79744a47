"""The ``kseg salvage`` command: every batch the damage did not touch, into a new output.

A thin shell: parse options, call ``kseg.ops.salvage``, render with ``kseg.render.salvage``.
Exit 0 nothing lost, 1 something was lost, 2 bad usage or unreadable input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kseg.cli.common import (EXIT_DATA, EXIT_OK, SIZE, guarded, index_interval_option, jobs_option,
                             max_decompressed_option)
from kseg.cli.storage import LOCATION, remote_output, say_report
from kseg.ops.salvage import DEFAULT_MAX_BATCH_BYTES, SalvageOptions, salvage
from kseg.render.salvage import write_salvage


@click.command("salvage")
@click.argument("input_path", metavar="INPUT", type=LOCATION)
@click.option("-o", "--output", type=LOCATION, default=None,
              help="Output .log file, partition folder or log directory (matching INPUT). Required unless --dry-run.")
@click.option("--dry-run", is_flag=True, help="Report what would be recovered and lost; write nothing.")
@click.option("--force", is_flag=True, help="Replace an existing output.")
@click.option("--no-index", is_flag=True, help="Do not write .index/.timeindex/.txnindex files.")
@click.option("--max-batch-bytes", type=SIZE, default=DEFAULT_MAX_BATCH_BYTES, show_default="64MiB",
              help="The largest batch believed when resynchronising (a larger length field is damage).")
@index_interval_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@max_decompressed_option
@jobs_option
@guarded
@remote_output
def salvage_cmd(input_path: Path, output: Path | None, fmt: str, jobs: int, **options: Any) -> None:
    """Recover every batch the damage did not touch, into a new output.

    Reads past damaged regions (bad CRCs, zeros, garbage, torn writes, absurd lengths) in
    every segment, resynchronising on the next batch that passes every check, and names
    each region left out with its byte range and the offsets it held. Exit 0 when nothing
    was lost, 1 when something was.
    """
    report = salvage(input_path, output, salvage_options(**options), jobs)
    say_report(lambda out: write_salvage(report, out, fmt))
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def salvage_options(*, dry_run: bool, force: bool, no_index: bool, max_batch_bytes: int, index_interval_bytes: int,
                    max_decompressed_bytes: int) -> SalvageOptions:
    """salvage's options (``kseg salvage`` and ``kseg spark salvage``)."""
    return SalvageOptions(dry_run=dry_run, force=force, index=not no_index, index_interval_bytes=index_interval_bytes,
                          max_decompressed_bytes=max_decompressed_bytes, max_batch_bytes=max_batch_bytes)
