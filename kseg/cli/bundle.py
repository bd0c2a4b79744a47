"""The ``kseg bundle`` command: a support bundle of a log directory, optionally redacted.

A thin shell: parse options, call ``kseg.ops.bundle``, render with ``kseg.render.bundle``.
Exit 0 the bundle was written, 1 a batch to redact was damaged (nothing written), 2 bad
usage or unreadable input.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kseg.cli.common import guarded, index_interval_option, max_decompressed_option, time_option
from kseg.cli.record_options import redact_options, redactor_of
from kseg.defaults import DEFAULT_COORDINATOR_PARTITIONS
from kseg.ops.bundle import BundleOptions, bundle
from kseg.ops.redact import FIELDS, SECRETS
from kseg.storage import is_remote
from kseg.render.bundle import write_bundle


@click.command("bundle")
@click.argument("logdir", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(), required=True,
              help="The bundle: a name ending in .tar.gz or .tgz (every kseg command reads it in place).")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC",
              help="Take this topic's partitions (repeatable). With no --topic, --group or --transactional-id: "
                   "every partition.")
@click.option("--group", "groups", multiple=True, metavar="GROUP",
              help="Take the __consumer_offsets partition holding this consumer group (repeatable).")
@click.option("--transactional-id", "transactional_ids", multiple=True, metavar="ID",
              help="Take the __transaction_state partition holding this transactional id (repeatable).")
@click.option("--coordinator-partitions", type=click.IntRange(1), default=DEFAULT_COORDINATOR_PARTITIONS, show_default=True,
              help="The partition count of __consumer_offsets / __transaction_state (offsets.topic.num.partitions, "
                   "transaction.state.log.num.partitions), for --group and --transactional-id.")
@click.option("--from-offset", type=int, default=None,
              help="Only the segments holding offsets from this one on (ordinary topics; internal ones whole).")
@click.option("--to-offset", type=int, default=None, help="... up to this one, inclusive.")
@time_option("--from-time", help="Only the segments holding timestamps from this time on (ordinary topics).")
@time_option("--to-time", help="... up to this time, inclusive.")
@redact_options("the record keys, values or header values of ordinary topics (batches rebuilt with valid CRCs, "
                "indexes rebuilt; offsets, timestamps and counts kept)", (*FIELDS, SECRETS))
@click.option("--show-secrets", is_flag=True,
              help="Take the KRaft metadata log as it is: by default its SCRAM salts and keys, delegation token ids "
                   "and sensitive configuration values (passwords, JAAS configurations, keys) are replaced by "
                   "[hidden] in the segments, snapshots and bootstrap.checkpoint that hold any.")
@click.option("--force", is_flag=True, help="Replace an existing bundle.")
@index_interval_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@max_decompressed_option
@guarded
def bundle_cmd(logdir: Path, output: str | Path, topics: tuple[str, ...], groups: tuple[str, ...],
               transactional_ids: tuple[str, ...], coordinator_partitions: int, from_offset: int | None,
               to_offset: int | None, from_time: int | None, to_time: int | None, redact: tuple[str, ...],
               redact_key: str | None, show_secrets: bool, force: bool, index_interval_bytes: int, fmt: str,
               max_decompressed_bytes: int) -> None:
    """Collect what a support case needs from a log directory into one .tar.gz.

    The partitions of the named topics (or only the segments covering an offset or time
    window), the __consumer_offsets partition of a group, the __transaction_state partition
    of a transactional id, the KRaft metadata log, the log directory's checkpoints, and a
    manifest (kseg-bundle.json: each file's source, size and SHA-256, the kseg version, the
    selection, the redaction). Every kseg command reads the bundle in place.
    """
    if is_remote(output):  # a URL that Path would fold into a local name (s3:/bucket/...)
        raise click.BadParameter("a bundle is one local .tar.gz file; copy it to the object store afterwards",
                                 param_hint="-o/--output")
    output = Path(output)
    redactor = redactor_of(redact, redact_key, (*FIELDS, SECRETS), show_secrets)
    o = BundleOptions(topics=topics, groups=groups, transactional_ids=transactional_ids,
                      coordinator_partitions=coordinator_partitions, from_offset=from_offset, to_offset=to_offset,
                      from_time=from_time, to_time=to_time, redactor=redactor if redactor else None,
                      key_given=redact_key is not None, show_secrets=show_secrets, force=force,
                      index_interval_bytes=index_interval_bytes,
                      max_decompressed_bytes=max_decompressed_bytes)
    write_bundle(bundle(logdir, output, o), sys.stdout, fmt)
