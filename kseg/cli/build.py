"""``kseg build``: a partition folder from JSON lines (``kseg dump --format jsonl``'s own) or
from a fixture spec, written as every writer writes (a temporary name renamed when complete,
an existing output only with ``--force``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kseg.cli.common import SIZE, guarded, index_interval_option
from kseg.cli.storage import LOCATION, remote_output, say, shown
from kseg.errors import InputError
from kseg.ops.build import DERIVED, PAYLOADS, BuildOptions, build
from kseg.ops.fixture_spec import input_items
from kseg.printable import printable


@click.command("build")
@click.argument("input_path", metavar="[INPUT]", required=False, default="-",
                type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option("-o", "--output", type=LOCATION, required=True,
              help="The partition folder to write (a log directory when the lines name several partitions).")
@click.option("--payload", type=click.Choice(PAYLOADS), default="utf8", show_default=True,
              help="How keys and values are written in the lines (dump's --payload; key_b64/value_b64 are "
                   "always base64).")
@click.option("--derived", type=click.Choice(DERIVED), default="check", show_default=True,
              help="Batch fields the records determine (crc, size, count, last_offset, max_timestamp) that a line "
                   "gives differently: check (an error, nothing written), given (written as the line says: "
                   "deliberately damaged fixtures), computed (the computed value written, a note printed).")
@click.option("--segment-bytes", type=SIZE, default=None,
              help="Roll segments at this size instead of as the lines' file names say.")
@click.option("--no-index", is_flag=True, help="Do not write .index/.timeindex files.")
@index_interval_option
@click.option("--force", is_flag=True, help="Replace an existing output.")
@guarded
@remote_output
def build_cmd(input_path: Path, output: Path, payload: str, derived: str, segment_bytes: int | None, no_index: bool,
              index_interval_bytes: int, force: bool) -> None:
    """Write a partition folder from JSON lines (the inverse of dump --format jsonl) or a fixture spec.

    INPUT is a file, or - (the default) for standard input.
    """
    if segment_bytes is not None and segment_bytes <= 0:
        raise InputError("--segment-bytes must be positive")
    source = "<stdin>" if str(input_path) == "-" else str(input_path)
    options = BuildOptions(payload=payload, derived=derived, segment_bytes=segment_bytes, index=not no_index,
                           index_interval_bytes=index_interval_bytes, force=force)
    if str(input_path) == "-":
        items = input_items(sys.stdin.buffer, source)
        result = build(items, output, options, source=source)
    else:
        try:
            stream = open(input_path, "rb")
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}", file=source) from None
        with stream:
            result = build(input_items(stream, source), output, options, source=source)
    for note in result.notes:
        say(printable(f"kseg: note: {note}"))
    for d in result.disagreements:  # --derived given: each field written as the line gives it
        say(printable(f"kseg: note: written as given: {d}"))
    say(printable(result.line().replace(str(result.output), str(shown(output)))))
