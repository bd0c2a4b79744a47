"""The options of the commands that show or copy record contents: ``dump``'s option set and
``--redact``. Kept apart from ``kseg.cli.common`` because their choices come from the internal-topic
decoders and the redactor, which a ``verify`` or a conversion never loads."""

from __future__ import annotations

import click

from kseg.cli.common import SIZE, Decorator, input_format_option, max_decompressed_option, options, \
    record_filter_options
from kseg.cli.storage import LOCATION
from kseg.decoders import DECODE_CHOICES, KAFKA_VERSIONS
from kseg.errors import InputError
from kseg.ops.redact import FIELDS, REDACTABLE, SECRETS, Redactor, parse_fields


def redact_options(what: str, names: tuple[str, ...] = FIELDS) -> Decorator:
    """``--redact`` and ``--redact-key`` (bundle, dump, state): ``what`` says what the hash replaces,
    ``names`` the values of ``REDACTABLE`` the command takes."""
    listed = "; ".join(f"{n}: {REDACTABLE[n]}" for n in names)
    return options(
        click.option("--redact", "redact", multiple=True, metavar="WHAT",
                     help=f"Replace {what} by their length and a keyed hash (redacted:<length>:<hmac>; equal "
                          f"values stay equal). WHAT, repeatable or a comma list: {listed}."),
        click.option("--redact-key", envvar="KSEG_REDACT_KEY", default=None, metavar="TEXT",
                     help="The key of --redact's hash, so that two runs (and two commands) hash a value alike "
                          "[env: KSEG_REDACT_KEY; default: a random key, not stored]"
                          + (" (secrets are hidden, not hashed)." if SECRETS in names else ".")),
    )


def redactor_of(redact: tuple[str, ...], redact_key: str | None, names: tuple[str, ...] = FIELDS,
                show_secrets: bool = False) -> Redactor | None:
    """The redactor ``--redact``/``--redact-key`` ask for, or None; a usage error for a name the
    command does not take, a key without anything to hash, or secrets both hidden and shown."""
    try:
        fields = parse_fields(redact, names)
    except ValueError as e:
        raise InputError(f"--redact {e}") from None
    ctx = click.get_current_context(silent=True)
    typed = ctx is None or ctx.get_parameter_source("redact_key") != click.core.ParameterSource.ENVIRONMENT
    if redact_key is not None and typed and not fields - {SECRETS}:  # (a key in the environment may wait)
        raise InputError("--redact-key is the key of --redact's hash: give --redact "
                         f"{'|'.join(n for n in names if n != SECRETS)} too, or leave it out")
    if SECRETS in fields and show_secrets:
        raise InputError("--redact secrets hides what --show-secrets shows: leave one of them out")
    return Redactor.make(fields, redact_key.encode() if redact_key else None) if fields else None


dump_options = options(
    click.argument("paths", nargs=-1, required=True, type=LOCATION),
    click.option("--records", "-r", "records", is_flag=True, help="Show records, not only batches (--deep-iteration)."),
    click.option("--format", "fmt", type=click.Choice(["text", "jsonl", "kafka"]), default="text", show_default=True),
    click.option("--payload", type=click.Choice(["none", "utf8", "hex", "base64"]), default=None,
                 help="How keys and values are shown [default: utf8; none for --format kafka]."),
    click.option("--key-decoder", default=None, help="utf8|hex|base64|int|long|json or module:function."),
    click.option("--value-decoder", default=None, help="utf8|hex|base64|int|long|json or module:function."),
    click.option("--decode", type=click.Choice(list(DECODE_CHOICES)), default=None,
                 help="Decode internal-topic records (__consumer_offsets, __transaction_state, the KRaft metadata "
                      "log, __share_group_state, __remote_log_metadata); auto: by topic folder and *.checkpoint "
                      "name. Implies --records."),
    click.option("--kafka-version", type=click.Choice(list(KAFKA_VERSIONS)), default=KAFKA_VERSIONS[0],
                 show_default=True, help="Whose kafka-dump-log.sh lines --format kafka prints: a Kafka release "
                                         "line (4: the newest 4.x)."),
    click.option("--skip-record-metadata", is_flag=True,
                 help="--format kafka: print record contents without the offset/size part, as kafka-dump-log.sh."),
    click.option("--index-sanity-check", "index_sanity", is_flag=True,
                 help="--format kafka: for .index/.timeindex files print the broker's sanity verdict, not the "
                      "entries, as kafka-dump-log.sh."),
    click.option("--verify-index-only", "verify_index", is_flag=True,
                 help="--format kafka: for .index/.timeindex files print no entries, as kafka-dump-log.sh."),
    record_filter_options,
    click.option("--max-bytes", type=SIZE, default=None, help="Read only the first N bytes of each log file."),
    click.option("--keep-going", is_flag=True, help="Show an undecodable batch as raw bytes and go on."),
    input_format_option,
    max_decompressed_option,
)
