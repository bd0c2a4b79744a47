"""The ``kseg`` command group: global options, and where each command lives.

Exit codes: 0 fine, 1 the data has problems, 2 bad usage or unreadable input.
Errors are one line on stderr (``kseg: error: ...``); ``--traceback`` shows the stack.

Each command's module is imported when the command is used (``COMMANDS``), so that a
``kseg dump`` or ``kseg verify`` loads what it needs and nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from kseg.cli.common import KsegGroup, LazyCommand, State, fail
from kseg.cli.storage import s3_endpoint_option
from kseg.codecs.plugins import Registry, activate
from kseg.errors import KsegError
from kseg.lazy import load

# name -> where the click command lives ("module:attribute", loaded on use; tests/test_layers.py
# checks it) and its line in ``kseg --help``, which therefore lists the commands without loading one.
COMMANDS = {
    "dump": LazyCommand("kseg.cli.dump:dump", "Show the batches and records of segment files."),
    "verify": LazyCommand("kseg.cli.verify:verify", "Check segments, partition folders or log directories."),
    "up-convert": LazyCommand("kseg.cli.write:up_convert_cmd", "Convert to a newer message format."),
    "down-convert": LazyCommand("kseg.cli.write:down_convert_cmd",
                                "Convert to an older message format, as the broker did."),
    "recompress": LazyCommand("kseg.cli.write:recompress_cmd", "Same message format, another codec."),
    "rebase": LazyCommand("kseg.cli.write:rebase_cmd", "Shift every offset so the data starts at --base-offset."),
    "index": LazyCommand("kseg.cli.write:index_cmd", "Check or rebuild the offset and time indexes."),
    "compact": LazyCommand("kseg.cli.write:compact_cmd", "Keep the latest record per key, as the log cleaner does."),
    "build": LazyCommand("kseg.cli.build:build_cmd", "Write a partition folder from JSON lines or a fixture spec."),
    "repair": LazyCommand("kseg.cli.repair:repair_cmd", "Recover as the broker does after an unclean shutdown."),
    "salvage": LazyCommand("kseg.cli.salvage:salvage_cmd", "Recover every batch the damage did not touch."),
    "bundle": LazyCommand("kseg.cli.bundle:bundle_cmd", "Collect what a support case needs into one .tar.gz."),
    "export": LazyCommand("kseg.cli.export:export_cmd", "Write the records into Parquet or Arrow files."),
    "diff": LazyCommand("kseg.cli.diff:diff_cmd", "Compare two copies of a partition or two log directories."),
    "find": LazyCommand("kseg.cli.find:find_cmd", "The records that match, with where each one is."),
    "stats": LazyCommand("kseg.cli.stats:stats_cmd", "Records, bytes, codecs, keys, producers and problems."),
    "state": LazyCommand("kseg.cli.internals:state", "Replay an internal topic and print its state."),
    "txn": LazyCommand("kseg.cli.internals:txn", "Every transaction of each partition; hanging ones."),
    "plugins": LazyCommand("kseg.cli.plugins:plugins", "Plugin codecs (KIP-984) and their registry."),
}

# Registry files (--plugin-registry) are read by kseg.ops.registry, which sits above the codecs:
# loaded when a registry is first read, not by every command.
READ_REGISTRY = "kseg.ops.registry:load_registry"


def read_registry(path: str | os.PathLike) -> Registry:
    """``kseg.ops.registry.load_registry``, imported on the first read."""
    return load(READ_REGISTRY)(path)


ACCELERATOR_STATUS = "kseg.log.fast:accelerator_status"


def _version(ctx: click.Context, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    click.echo(f"kseg, version {version('kseg')}\nC accelerator: {load(ACCELERATOR_STATUS)()}")
    ctx.exit()


@click.group(cls=KsegGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--traceback", is_flag=True, help="Show the Python stack on errors (for bug reports).")
@click.option("--plugin-registry", type=click.Path(path_type=Path), envvar="KSEG_PLUGIN_REGISTRY", default=None,
              help="Plugin codec registry: a plugin-python-topic-0 folder or a JSON file "
                   "[env: KSEG_PLUGIN_REGISTRY].")
@s3_endpoint_option
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=lambda ctx, _, value: _version(
    ctx, value), help="Show the version and whether the C accelerator is in use, and exit.")
def main(traceback: bool, plugin_registry: Path | None) -> None:
    """Look inside, verify and convert Apache Kafka log segment files."""
    State.traceback = traceback
    try:
        activate(plugin_registry, read_registry)
    except KsegError as e:
        if traceback:
            raise
        fail(e)


class _LazySpark(click.Group):
    """``kseg spark ...``: loaded on use, so that plain commands never import PySpark; each of its
    commands has the line of the plain command it runs."""

    def _real(self) -> click.Group:
        from kseg.spark.cli import spark  # late: PySpark only when kseg spark is used

        return spark

    def list_commands(self, ctx: click.Context) -> list[str]:
        return self._real().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = self._real().get_command(ctx, name)
        if command is not None and name in COMMANDS:  # the same line as the command it runs on Spark
            command.short_help = COMMANDS[name].summary
        return command


main.add_command(_LazySpark("spark", help="Run verify, dump, conversions, compaction, diff, find and stats on Spark "
                                         "(needs the spark extra: pip install 'kseg[spark]').",
                            short_help="Run the commands over whole log directories on Spark."))

if __name__ == "__main__":  # pragma: no cover
    main()
