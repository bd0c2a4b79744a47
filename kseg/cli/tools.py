"""The operator tools' click commands: ``kseg repair``, ``diff``, ``find`` and ``stats``.

Thin shells: parse options, call the operation in ``kseg.ops``, render with ``kseg.render.tools``.
Exit codes as elsewhere: 0 fine (or identical), 1 the data has problems (or differs), 2 bad usage.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded, index_interval_option, max_decompressed_option
from kseg.ops.diff import DiffOptions, diff_paths
from kseg.ops.repair import RepairOptions, repair
from kseg.render.payload import load_decoder
from kseg.render.tools import write_diff, write_repair

format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True)


@click.command("repair")
@click.argument("input_path", metavar="INPUT", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Output .log file, partition folder or log directory (matching INPUT). Required unless --dry-run.")
@click.option("--dry-run", is_flag=True, help="Report what recovery would cut; write nothing.")
@click.option("--force", is_flag=True, help="Replace an existing output.")
@click.option("--no-index", is_flag=True, help="Do not write .index/.timeindex/.txnindex files.")
@index_interval_option
@format_option
@max_decompressed_option
@guarded
def repair_cmd(input_path: Path, output: Path | None, dry_run: bool, force: bool, no_index: bool,
               index_interval_bytes: int, fmt: str, max_decompressed_bytes: int) -> None:
    """Recover as the broker does after an unclean shutdown, into a new output.

    Keeps every batch up to the first invalid one (bad CRC, partial or garbage tail,
    zero-filled preallocated space), drops the rest and the later segments of the
    partition, rebuilds the indexes and says exactly what was cut. Exit 0 when nothing
    had to be cut, 1 when something was.
    """
    o = RepairOptions(dry_run=dry_run, force=force, index=not no_index, index_interval_bytes=index_interval_bytes,
                      max_decompressed_bytes=max_decompressed_bytes)
    report = repair(input_path, output, o)
    write_repair(report, sys.stdout, fmt)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)
key_decoder_option = click.option("--key-decoder", default="utf8", show_default=True,
                                  help="utf8|hex|base64|int|long|json or module:function.")
value_decoder_option = click.option("--value-decoder", default="utf8", show_default=True,
                                    help="utf8|hex|base64|int|long|json or module:function.")


@click.command("diff")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--records", is_flag=True, help="List the records that differ after the divergence.")
@click.option("--max-records", type=click.IntRange(0), default=1000, show_default=True,
              help="With --records: list at most this many per partition (the count stays exact).")
@key_decoder_option
@value_decoder_option
@format_option
@max_decompressed_option
@guarded
def diff_cmd(a: Path, b: Path, records: bool, max_records: int, key_decoder: str, value_decoder: str, fmt: str,
             max_decompressed_bytes: int) -> None:
    """Compare two copies of a partition (replicas, a backup and the live folder), or two log directories.

    Finds the first offset where they diverge from batch offsets and CRCs (equal
    batches are not decompressed), with the leader epochs on each side, and what is
    only on one side. Exit 0 identical, 1 different.
    """
    o = DiffOptions(records=records, max_records=max_records, max_decompressed_bytes=max_decompressed_bytes)
    report = diff_paths(a, b, o)
    write_diff(report, sys.stdout, fmt, load_decoder(key_decoder), load_decoder(value_decoder))
    raise SystemExit(EXIT_OK if report.identical else EXIT_DATA)


COMMANDS = [repair_cmd, diff_cmd]
