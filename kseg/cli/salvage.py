"""The ``kseg salvage`` command: every batch the damage did not touch, into a new output.

A thin shell: parse options, call ``kseg.ops.salvage``, render with ``kseg.render.salvage``.
Exit 0 nothing lost, 1 something was lost, 2 bad usage or unreadable input.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import click

from kseg.cli.common import (EXIT_DATA, EXIT_OK, SIZE, carried_damage_option, guarded, index_interval_option,
                             jobs_option, max_decompressed_option, recovery_options, report_format_option)
from kseg.cli.storage import remote_output, say_report
from kseg.errors import InputError
from kseg.log.atomic import check_output, write_atomic
from kseg.ops.salvage import DEFAULT_MAX_BATCH_BYTES, SalvageOptions, SalvageReport, salvage
from kseg.render.salvage import CRC_FAILED_MARK, write_crc_failed, write_salvage


@click.command("salvage")
@recovery_options("Report what would be recovered and lost; write nothing.")
@click.option("--max-batch-bytes", type=SIZE, default=DEFAULT_MAX_BATCH_BYTES, show_default="64MiB",
              help="The largest batch believed when resynchronising (a larger length field is damage).")
@click.option("--keep-crc-failed", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE.jsonl",
              help=f"Write the records of the batches that fail their CRC but decompress and parse to this JSON "
                   f"Lines file (dump's jsonl record lines, each marked \"{CRC_FAILED_MARK}\": true, with its segment, "
                   f"its batch's byte position and both CRCs); they are never written into the output partition.")
@index_interval_option
@report_format_option
@max_decompressed_option
@carried_damage_option
@jobs_option
@guarded
@remote_output
def salvage_cmd(input_path: Path, output: Path | None, fmt: str, jobs: int, keep_crc_failed: Path | None,
                **options: Any) -> None:
    """Recover every batch the damage did not touch, into a new output.

    Reads past damaged regions (bad CRCs, zeros, garbage, torn writes, absurd lengths) in
    every segment, resynchronising on the next batch that passes every check, and names
    each region left out with its byte range and the offsets it held. Exit 0 when nothing
    was lost, 1 when something was.
    """
    keep_crc_failed_file(input_path, output, keep_crc_failed, **options)
    report = salvage(input_path, output, salvage_options(keep_crc_failed=keep_crc_failed is not None, **options), jobs)
    write_crc_failed_file(report, keep_crc_failed)
    say_report(lambda out: write_salvage(report, out, fmt))
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def salvage_for_repair(input_path: Path, output: Path | None, fmt: str, **options: Any) -> None:
    """``kseg repair --salvage``: the salvage above with repair's options (one worker, no CRC-failed file)."""
    report = salvage(input_path, output, salvage_options(max_batch_bytes=DEFAULT_MAX_BATCH_BYTES, **options))
    say_report(lambda out: write_salvage(report, out, fmt))
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def salvage_options(*, dry_run: bool, force: bool, no_index: bool, max_batch_bytes: int, index_interval_bytes: int,
                    max_decompressed_bytes: int, on_damage: str, keep_crc_failed: bool = False) -> SalvageOptions:
    """salvage's options (``kseg salvage`` and ``kseg spark salvage``)."""
    return SalvageOptions(dry_run=dry_run, force=force, index=not no_index, index_interval_bytes=index_interval_bytes,
                          max_decompressed_bytes=max_decompressed_bytes, max_batch_bytes=max_batch_bytes,
                          keep_crc_failed=keep_crc_failed, on_damage=on_damage)


def keep_crc_failed_file(input_path: Path, output: Path | None, keep: Path | None, *, dry_run: bool, force: bool,
                         **_: Any) -> None:
    """--keep-crc-failed's file: refused with --dry-run, and held to the outputs' rules."""
    if keep is None:
        return
    if dry_run:
        raise InputError("--keep-crc-failed writes a file; --dry-run writes nothing: leave one of them out")
    check_output([input_path] + ([output] if output is not None else []), keep, force=force)


def write_crc_failed_file(report: SalvageReport, keep: Path | None) -> None:
    """The CRC-failed batches' records, marked, written whole or not at all."""
    if keep is not None:
        lines = io.BytesIO()
        write_crc_failed(report, lines)
        write_atomic(keep, lines.getvalue())
