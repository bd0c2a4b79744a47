"""``kseg diff``: where two copies of a partition (or two log directories) diverge.

A thin shell: parse options, call ``kseg.ops.diff``, render with ``kseg.render.tools``.
Exit 0 identical, 1 different, 2 bad usage.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded, record_report_options, refuse_unless
from kseg.cli.storage import LOCATION
from kseg.ops.diff import DiffOptions, diff_paths
from kseg.render.payload import load_decoder
from kseg.render.tools import write_diff


@click.command("diff")
@click.argument("a", type=LOCATION)
@click.argument("b", type=LOCATION)
@click.option("--records", is_flag=True, help="List the records that differ after the divergence.")
@click.option("--check-crc", is_flag=True,
              help="Also recompute both sides' CRCs (finds damage behind equal stored CRCs; reads every byte).")
@click.option("--max-records", type=click.IntRange(0), default=1000, show_default=True,
              help="With --records: list at most this many per partition (the count stays exact).")
@record_report_options
@guarded
def diff_cmd(a: Path, b: Path, records: bool, check_crc: bool, max_records: int, key_decoder: str,
             value_decoder: str, fmt: str, max_decompressed_bytes: int, jobs: int = 1) -> None:
    """Compare two copies of a partition (replicas, a backup and the live folder), or two log directories.

    Finds the first offset where they diverge from batch offsets and CRCs (equal
    batches are not decompressed), with the leader epochs on each side, and what is
    only on one side. Exit 0 identical, 1 different.
    """
    o = diff_options_from(records, check_crc, max_records, max_decompressed_bytes)
    report = diff_paths(a, b, o, jobs)
    write_diff(report, sys.stdout, fmt, load_decoder(key_decoder), load_decoder(value_decoder))
    raise SystemExit(EXIT_OK if report.identical else EXIT_DATA)


def diff_options_from(records: bool, check_crc: bool, max_records: int, max_decompressed_bytes: int) -> DiffOptions:
    """``kseg diff``'s options checked and turned into DiffOptions (also for ``kseg spark diff``)."""
    refuse_unless(records, ("max_records",), "caps the records --records lists: give --records too, or leave it out")
    return DiffOptions(records=records, check_crc=check_crc, max_records=max_records,
                       max_decompressed_bytes=max_decompressed_bytes)
