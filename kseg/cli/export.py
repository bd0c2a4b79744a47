"""``kseg export``: the records of segment files into Parquet or Arrow IPC files, one per partition.

A thin shell: parse options, call ``kseg.ops.export``, render with ``kseg.render.export``.
Exit 0 every record written, 1 damage stopped the run (nothing written) or was left out
(``--on-damage skip``), 2 bad usage, unreadable input or a missing pyarrow.
"""

from __future__ import annotations

from pathlib import Path

import click

from kseg.allocator import arrow_pool_for_streaming
from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded, jobs_option, max_decompressed_option, record_filter_options
from kseg.cli.storage import LOCATION, remote_output, say_report
from kseg.errors import InputError
from kseg.ops.columns import RECORD_COLUMNS, check_columns
from kseg.ops.export import COMPRESSIONS, FORMATS, ExportOptions, export
from kseg.ops.read import ReadFilter
from kseg.render.export import write_export


def _columns(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    try:
        return tuple(check_columns("records", [c.strip() for c in value.split(",") if c.strip()]) or ())
    except InputError:
        raise click.BadParameter(f"unknown column in {value!r}; the record columns are "
                                 f"{', '.join(RECORD_COLUMNS)}", ctx, param) from None


CODECS = sorted({c for names in COMPRESSIONS.values() for c in names})


@click.command("export")
@click.argument("input_path", metavar="INPUT", type=LOCATION)
@click.option("-o", "--output", type=LOCATION, required=True,
              help="Output folder (one <topic>-<partition> file per partition); for a segment file or a partition "
                   "folder, a file name ending in .parquet (or .arrow, .feather) names the file itself.")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), default="parquet", show_default=True,
              help="parquet, or arrow: the Arrow IPC file format (Feather v2).")
@click.option("--columns", callback=_columns, metavar="COLUMN,...",
              help=f"Only these columns of the record schema (kept in its order): {', '.join(RECORD_COLUMNS)}.")
@click.option("--compression", type=click.Choice(CODECS), default=None,
              help=f"Parquet: {', '.join(COMPRESSIONS['parquet'])} [default: zstd]; "
                   f"arrow: {', '.join(COMPRESSIONS['arrow'])} [default: none].")
@record_filter_options
@click.option("--include-control", is_flag=True, help="Export control records (transaction markers) too.")
@click.option("--on-damage", type=click.Choice(["stop", "skip"]), default="stop", show_default=True,
              help="A damaged batch (a CRC that does not match, contents that do not decode, a segment cut short): "
                   "stop (exit 1, write nothing), skip (leave it out, list it, exit 1).")
@click.option("--max-file-rows", type=click.IntRange(min=1), metavar="N",
              help="Write each partition into files of at most N records, <topic>-<partition>.00000.parquet and on "
                   "(in order of offsets), as Spark's maxRecordsPerFile: a Parquet writer holds each row group's "
                   "footer entry until its file closes, about a byte per record.")
@click.option("--force", is_flag=True, help="Replace an existing output (only one kseg exported).")
@max_decompressed_option
@jobs_option
@guarded
@remote_output
def export_cmd(input_path: Path, output: Path, fmt: str, columns: tuple[str, ...] | None, compression: str | None,
               from_offset: int | None, to_offset: int | None, from_time: int | None, to_time: int | None,
               include_control: bool, on_damage: str, max_file_rows: int | None, force: bool,
               max_decompressed_bytes: int, jobs: int) -> None:
    """Write the records of segment files into Parquet or Arrow files.

    INPUT is a .log file, a partition folder or a log directory; the rows are the records
    `kseg dump --records` shows with the same filters, in the record schema of the Python
    API's to_arrow(). Needs pyarrow (pip install 'kseg[arrow]'). With -j, partitions are
    written at once; a lone partition is read on one core while the other writes.
    """
    read = ReadFilter(from_offset, to_offset, from_time, to_time, include_control, on_damage, max_decompressed_bytes)
    o = ExportOptions(fmt=fmt, columns=columns, read=read, compression=compression, force=force, jobs=jobs,
                     max_file_rows=max_file_rows)
    arrow_pool_for_streaming()  # memory flat batch after batch (kseg.allocator)
    report = export(input_path, output, o)
    say_report(lambda out: write_export(report, out))
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)
