"""``kseg repair``: recover a partition as the broker does after an unclean shutdown, into a new output.

A thin shell: parse options, call ``kseg.ops.repair`` (or ``kseg.ops.salvage`` with ``--salvage``),
render with ``kseg.render.tools``. Exit 0 nothing cut, 1 something was, 2 bad usage.
"""

from __future__ import annotations

from pathlib import Path

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, carried_damage_option, guarded, index_interval_option, \
    max_decompressed_option, recovery_options, report_format_option
from kseg.cli.storage import remote_output, say_report
from kseg.lazy import load
from kseg.ops.repair import RepairOptions, repair
from kseg.render.tools import write_repair

# --salvage is kseg salvage's run, loaded only then.
SALVAGE = "kseg.cli.salvage:salvage_for_repair"


@click.command("repair")
@recovery_options("Report what recovery would cut; write nothing.")
@click.option("--salvage", "salvage_", is_flag=True,
              help="Read past damage and keep every batch it did not touch: the same as `kseg salvage`.")
@index_interval_option
@report_format_option
@max_decompressed_option
@carried_damage_option
@guarded
@remote_output
def repair_cmd(input_path: Path, output: Path | None, dry_run: bool, force: bool, no_index: bool, salvage_: bool,
               index_interval_bytes: int, fmt: str, max_decompressed_bytes: int, on_damage: str) -> None:
    """Recover as the broker does after an unclean shutdown, into a new output.

    Keeps every batch up to the first invalid one (bad CRC, partial or garbage tail,
    zero-filled preallocated space), drops the rest and the later segments of the
    partition, rebuilds the indexes and says exactly what was cut. A leader-epoch-checkpoint
    the broker cannot read is written anew from the batches kept; a producer snapshot it cannot
    read is dropped. Exit 0 when nothing had to be cut, dropped or rebuilt, 1 when something was.
    """
    if salvage_:
        load(SALVAGE)(input_path, output, fmt, dry_run=dry_run, force=force, no_index=no_index,
                      index_interval_bytes=index_interval_bytes, max_decompressed_bytes=max_decompressed_bytes,
                      on_damage=on_damage)
    o = RepairOptions(dry_run=dry_run, force=force, index=not no_index, index_interval_bytes=index_interval_bytes,
                      max_decompressed_bytes=max_decompressed_bytes, on_damage=on_damage)
    report = repair(input_path, output, o)
    say_report(lambda out: write_repair(report, out, fmt))
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)
