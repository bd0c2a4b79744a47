"""``kseg find``: the records that match a key, header, producer, offset or time filter.

A thin shell: parse options, call ``kseg.ops.find``, render with ``kseg.render.tools``.
Exit 0 (matches or none), 1 unreadable data met on the way, 2 bad usage.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterable

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded, record_report_options, time_option
from kseg.cli.storage import LOCATION
from kseg.errors import InputError
from kseg.ops.find import FindOptions, FindStats, Match, find
from kseg.render.payload import load_decoder
from kseg.render.tools import FindWriter, find_summary


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
@record_report_options
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
