"""``kseg state`` and ``kseg txn``: answers from the records the broker writes about itself."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from kseg.cli.common import EXIT_DATA, EXIT_OK, guarded, jobs_option, refuse_unless, report_format_option, time_option
from kseg.cli.record_options import redact_options, redactor_of
from kseg.cli.storage import LOCATION
from kseg.defaults import DEFAULT_COORDINATOR_PARTITIONS
from kseg.errors import InputError
from kseg.ops.redact import IDS, SECRETS
from kseg.ops.state import Limit, coordinator_partition, replay
from kseg.ops.txn import DEFAULT_MAX_TIMEOUT_MS, explain_transactions
from kseg.render.answers import write_state, write_txn



@click.command("state")
@click.argument("paths", nargs=-1, type=LOCATION)
@click.option("--at-offset", type=int, default=None, help="Replay up to this offset (inclusive, per partition).")
@time_option("--at-time", help="Replay records up to this time (inclusive).")
@click.option("--coordinator-of", "coordinator_of", default=None, metavar="ID",
              help="Print the __consumer_offsets / __transaction_state partition holding this group or "
                   "transactional id, and stop.")
@click.option("--partitions", type=click.IntRange(1), default=DEFAULT_COORDINATOR_PARTITIONS, show_default=True,
              help="With --coordinator-of: the topic's partition count (offsets.topic.num.partitions, "
                   "transaction.state.log.num.partitions).")
@click.option("--show-secrets", is_flag=True,
              help="Show SCRAM salts and keys, delegation token ids and sensitive configuration values (passwords, "
                   "JAAS configurations, keys) of the metadata image; hidden by default ([hidden]).")
@redact_options("the identities in the state", (IDS, SECRETS))
@report_format_option
@guarded
def state(paths: tuple[Path, ...], at_offset: int | None, at_time: int | None, coordinator_of: str | None,
          partitions: int, show_secrets: bool, fmt: str, redact: tuple[str, ...] = (),
          redact_key: str | None = None) -> None:
    """Replay __consumer_offsets, __transaction_state, the KRaft metadata log, __share_group_state or
    __remote_log_metadata up to a point and print the state: committed offsets and groups,
    transactional ids, the metadata image, share-partitions, remote segments.

    Exit 0 when every record up to that point was read, 1 when damage was met on the way (a batch
    that fails its checks, bytes that form no batch: their records are not applied, so the state
    may lack them; each is a problem line)."""
    refuse_unless(coordinator_of is not None, ("partitions",),
                  "is the topic's partition count for --coordinator-of: give --coordinator-of too, or leave it out")
    refuse_unless(coordinator_of is None, ("at_offset", "at_time", "show_secrets", "redact"),
                  "limits a replay; --coordinator-of replays nothing: leave one of them out")
    if coordinator_of is not None and paths:
        raise InputError("--coordinator-of reads no PATH (it only computes the partition): leave the paths out, "
                         "or --coordinator-of to replay them")
    if coordinator_of is not None:
        n = coordinator_partition(coordinator_of, partitions)
        if fmt == "json":
            click.echo(json.dumps({"id": coordinator_of, "partitions": partitions, "partition": n}))
        else:
            click.echo(f"{coordinator_of}: partition {n} of {partitions} "
                       f"(__consumer_offsets-{n} for a group, __transaction_state-{n} for a transactional id)")
        return
    if not paths:
        raise InputError("give PATH... (internal topic partitions or a log directory), or --coordinator-of ID")
    redactor = redactor_of(redact, redact_key, (IDS, SECRETS), show_secrets)
    report = replay(list(paths), Limit(at_offset, at_time), show_secrets=show_secrets,
                    hide_id=redactor.text if redactor is not None and redactor.ids else None)
    write_state(report, sys.stdout, fmt)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)


@click.command("txn")
@click.argument("paths", nargs=-1, required=True, type=LOCATION)
@click.option("--max-timeout-ms", type=click.IntRange(0), default=DEFAULT_MAX_TIMEOUT_MS, show_default=True,
              help="A transaction open longer than this is hanging (transaction.max.timeout.ms).")
@time_option("--now-ms", help="The clock to measure open transactions by [default: now].")
@click.option("--all", "all_partitions", is_flag=True, help="List partitions without transactions too.")
@report_format_option
@jobs_option
@guarded
def txn(paths: tuple[Path, ...], max_timeout_ms: int, now_ms: int | None, all_partitions: bool, fmt: str,
        jobs: int) -> None:
    """Every transaction of each partition: producer, offsets, records, state, times; the last stable
    offset; hanging transactions with the command that ends them; contradictions.

    Exit 0 when all is well, 1 when a transaction hangs or the files contradict each other.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    report = explain_transactions(list(paths), now_ms=now, max_timeout_ms=max_timeout_ms,
                                  all_partitions=all_partitions, jobs=jobs)
    write_txn(report, sys.stdout, fmt)
    raise SystemExit(EXIT_OK if report.ok else EXIT_DATA)
