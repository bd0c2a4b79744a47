"""``kseg stats``: records, bytes, codecs, time range, keys, producers and problems per partition.

A thin shell: parse options, call ``kseg.ops.stats``, render with ``kseg.render.tools`` (and, with
``--html``, ``kseg.render.html_report``, loaded only then). Exit 0 clean, 1 problems found.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded, jobs_option, max_decompressed_option, report_format_option
from kseg.cli.storage import LOCATION
from kseg.lazy import load
from kseg.ops.stats import StatsOptions, stats_paths
from kseg.render.tools import write_stats

# The HTML report (plots) is loaded only when asked for.
WRITE_HTML_REPORT = "kseg.render.html_report:write_html_report"


@click.command("stats")
@click.argument("paths", nargs=-1, required=True, type=LOCATION)
@click.option("--segments", is_flag=True, help="Text: a line per segment too (JSON always has them).")
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a self-contained HTML report with plots (needs the report extra).")
@report_format_option
@max_decompressed_option
@jobs_option
@guarded
def stats_cmd(paths: tuple[Path, ...], segments: bool, html: Path | None, fmt: str,
              max_decompressed_bytes: int, jobs: int) -> None:
    """Records, bytes, codecs, time range, keys, producers, transactions and problems per topic,
    partition and segment. Exit 0 clean, 1 when problems were found in the data."""
    report = stats_paths(list(paths), StatsOptions(max_decompressed_bytes=max_decompressed_bytes), jobs)
    write_stats(report, sys.stdout, fmt, segments=segments)
    if html is not None:
        load(WRITE_HTML_REPORT)(report, html)
        click.echo(f"kseg: wrote {html}", err=True)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)
