"""The operator tools' click commands: ``kseg repair``, ``diff``, ``find`` and ``stats``.

Thin shells: parse options, call the operation in ``kseg.ops``, render with ``kseg.render.tools``.
Exit codes as elsewhere: 0 fine (or identical), 1 the data has problems (or differs), 2 bad usage.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterable

import click

from kseg.cli.storage import LOCATION, remote_output, say_report
from kseg.cli.common import (EXIT_DATA, EXIT_OK, guarded, index_interval_option, jobs_option, max_decompressed_option,
                              refuse_unless, time_option)
from kseg.errors import InputError
from kseg.ops.diff import DiffOptions, diff_paths
from kseg.ops.find import FindOptions, FindStats, Match, find
from kseg.ops.repair import RepairOptions, repair
from kseg.ops.salvage import SalvageOptions, salvage
from kseg.ops.stats import StatsOptions, stats_paths
from kseg.render.html_report import write_html_report
from kseg.render.payload import load_decoder
from kseg.render.salvage import write_salvage
from kseg.render.tools import FindWriter, find_summary, write_diff, write_repair, write_stats

format_option = click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
                             show_default=True)


@click.command("repair")
@click.argument("input_path", metavar="INPUT", type=LOCATION)
@click.option("-o", "--output", type=LOCATION, default=None,
              help="Output .log file, partition folder or log directory (matching INPUT). Required unless --dry-run.")
@click.option("--dry-run", is_flag=True, help="Report what recovery would cut; write nothing.")
@click.option("--force", is_flag=True, help="Replace an existing output.")
@click.option("--no-index", is_flag=True, help="Do not write .index/.timeindex/.txnindex files.")
@click.option("--salvage", "salvage_", is_flag=True,
              help="Read past damage and keep every batch it did not touch: the same as `kseg salvage`.")
@index_interval_option
@format_option
@max_decompressed_option
@guarded
@remote_output
def repair_cmd(input_path: Path, output: Path | None, dry_run: bool, force: bool, no_index: bool, salvage_: bool,
               index_interval_bytes: int, fmt: str, max_decompressed_bytes: int) -> None:
    """Recover as the broker does after an unclean shutdown, into a new output.

    Keeps every batch up to the first invalid one (bad CRC, partial or garbage tail,
    zero-filled preallocated space), drops the rest and the later segments of the
    partition, rebuilds the indexes and says exactly what was cut. Exit 0 when nothing
    had to be cut, 1 when something was.
    """
    if salvage_:
        so = SalvageOptions(dry_run=dry_run, force=force, index=not no_index,
                            index_interval_bytes=index_interval_bytes, max_decompressed_bytes=max_decompressed_bytes)
        found = salvage(input_path, output, so)
        say_report(lambda out: write_salvage(found, out, fmt))
        raise SystemExit(EXIT_OK if found.ok else EXIT_DATA)
    o = RepairOptions(dry_run=dry_run, force=force, index=not no_index, index_interval_bytes=index_interval_bytes,
                      max_decompressed_bytes=max_decompressed_bytes)
    report = repair(input_path, output, o)
    say_report(lambda out: write_repair(report, out, fmt))
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)
key_decoder_option = click.option("--key-decoder", default="utf8", show_default=True,
                                  help="utf8|hex|base64|int|long|json or module:function.")
value_decoder_option = click.option("--value-decoder", default="utf8", show_default=True,
                                    help="utf8|hex|base64|int|long|json or module:function.")


@click.command("diff")
@click.argument("a", type=LOCATION)
@click.argument("b", type=LOCATION)
@click.option("--records", is_flag=True, help="List the records that differ after the divergence.")
@click.option("--check-crc", is_flag=True,
              help="Also recompute both sides' CRCs (finds damage behind equal stored CRCs; reads every byte).")
@click.option("--max-records", type=click.IntRange(0), default=1000, show_default=True,
              help="With --records: list at most this many per partition (the count stays exact).")
@key_decoder_option
@value_decoder_option
@format_option
@max_decompressed_option
@jobs_option
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


@click.command("find")
@click.argument("paths", nargs=-1, required=True, type=LOCATION)
@click.option("--key", default=None, help="Records with exactly this key (UTF-8; see --key-hex).")
@click.option("--key-hex", default=None, help="Records with exactly this key, given in hex.")
@click.option("--key-regex", default=None, help="Records whose key matches (Python regex on the bytes).")
@click.option("--value-regex", default=None, help="Records whose value matches (Python regex on the bytes).")
@click.option("--header", default=None, metavar="NAME[=VALUE]", help="Records with this header (and value).")
@click.option("--producer-id", type=int, default=None, help="Records written by this producer id.")
@click.option("--transactional", is_flag=True, help="Records of transactional batches only.")
@click.option("--from-offset", type=int, default=None)
@click.option("--to-offset", type=int, default=None)
@time_option("--from-time", help="Records at or after this time.")
@time_option("--to-time", help="Records at or before this time.")
@click.option("--partitioner", is_flag=True,
              help="Scan only the partition Kafka's default partitioner gives --key (needs --topic, --partitions).")
@click.option("--topic", default=None,
              help="Only this topic's partitions (by their folders' names, <topic>-<n>); with --partitioner, "
                   "also the topic the key is placed in.")
@click.option("--partitions", type=click.IntRange(1), default=None,
              help="With --partitioner (only): the topic's partition count.")
@click.option("--no-index", is_flag=True, help="Do not use .index/.timeindex to skip data (read everything).")
@key_decoder_option
@value_decoder_option
@format_option
@max_decompressed_option
@jobs_option
@guarded
def find_cmd(paths: tuple[Path, ...], key: str | None, key_hex: str | None, key_regex: str | None,
             value_regex: str | None, header: str | None, producer_id: int | None, transactional: bool,
             from_offset: int | None, to_offset: int | None, from_time: int | None, to_time: int | None,
             partitioner: bool, topic: str | None, partitions: int | None, no_index: bool, key_decoder: str,
             value_decoder: str, fmt: str, max_decompressed_bytes: int, jobs: int) -> None:
    """The records that match, with topic, partition, offset and timestamp (--format json: JSON lines).

    Text names a record's partition as TOPIC-N, or, given several paths (two log directories
    may hold the same partition), by its folder's path; JSON lines name the segment file.

    Exit 0 (matches or none), 1 when unreadable data was met on the way, 2 bad usage.
    """
    o = find_options_from(key=key, key_hex=key_hex, key_regex=key_regex, value_regex=value_regex, header=header,
                          producer_id=producer_id, transactional=transactional, from_offset=from_offset,
                          to_offset=to_offset, from_time=from_time, to_time=to_time, partitioner=partitioner,
                          topic=topic, partitions=partitions, no_index=no_index,
                          max_decompressed_bytes=max_decompressed_bytes)
    writer = FindWriter(sys.stdout, fmt, load_decoder(key_decoder), load_decoder(value_decoder), folders=len(paths) > 1)
    st = FindStats()
    raise SystemExit(show_find(find(list(paths), o, st, jobs), st, writer))


def show_find(matches: Iterable[Match], st: FindStats, writer: FindWriter) -> int:
    """The matches written as they come, then the summary on stderr; the exit code. One
    rendering for ``kseg find`` and ``kseg spark find``, so that their outputs stay the same."""
    for m in matches:
        writer(m)
    sys.stdout.flush()
    click.echo(find_summary(st), err=True)
    return EXIT_DATA if st.problems else EXIT_OK


@click.command("stats")
@click.argument("paths", nargs=-1, required=True, type=LOCATION)
@click.option("--segments", is_flag=True, help="Text: a line per segment too (JSON always has them).")
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a self-contained HTML report with plots (needs the report extra).")
@format_option
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
        write_html_report(report, html)
        click.echo(f"kseg: wrote {html}", err=True)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


def diff_options_from(records: bool, check_crc: bool, max_records: int, max_decompressed_bytes: int) -> DiffOptions:
    """``kseg diff``'s options checked and turned into DiffOptions (also for ``kseg spark diff``)."""
    refuse_unless(records, ("max_records",), "caps the records --records lists: give --records too, or leave it out")
    return DiffOptions(records=records, check_crc=check_crc, max_records=max_records,
                       max_decompressed_bytes=max_decompressed_bytes)


def find_options_from(*, key: str | None, key_hex: str | None, key_regex: str | None, value_regex: str | None,
                      header: str | None, producer_id: int | None, transactional: bool, from_offset: int | None,
                      to_offset: int | None, from_time: int | None, to_time: int | None, partitioner: bool,
                      topic: str | None, partitions: int | None, no_index: bool, max_decompressed_bytes: int,
                      **_: object) -> FindOptions:
    """``kseg find``'s options checked and turned into FindOptions (also for ``kseg spark find``)."""
    if key is not None and key_hex is not None:
        raise InputError("give --key or --key-hex, not both")
    raw_key = key.encode() if key is not None else None
    if key_hex is not None:
        try:
            raw_key = bytes.fromhex(key_hex)
        except ValueError:
            raise InputError("--key-hex is not hex", found=key_hex) from None
    if partitioner and (raw_key is None or topic is None or partitions is None):
        raise InputError("--partitioner needs --key (or --key-hex), --topic and --partitions")
    if partitions is not None and not partitioner:
        raise InputError("--partitions is the topic's partition count for --partitioner: give --partitioner too "
                         "(to scan only the key's partition), or leave --partitions out")
    if not any(x is not None for x in (raw_key, key_regex, value_regex, header, producer_id)) and not transactional \
            and all(x is None for x in (from_offset, to_offset, from_time, to_time)):
        raise InputError("give at least one filter (--key, --key-regex, --value-regex, --header, --producer-id, "
                         "--transactional, or an offset/time range)")
    for name, rx in (("--key-regex", key_regex), ("--value-regex", value_regex)):
        if rx is not None:
            try:
                re.compile(rx.encode())
            except re.error as e:
                raise InputError(f"{name}: {e}", found=rx) from None
    return FindOptions(key=raw_key, key_regex=key_regex, value_regex=value_regex, header=header,
                       producer_id=producer_id, transactional=transactional, from_offset=from_offset,
                       to_offset=to_offset, from_time=from_time, to_time=to_time,
                       topic=topic, partitioner_topic=topic if partitioner else None,
                       partitions=partitions if partitioner else None,
                       use_indexes=not no_index, max_decompressed_bytes=max_decompressed_bytes)

