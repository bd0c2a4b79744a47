"""``kseg plugins``: register, list and check plugin codecs (KIP-984 registry, spec §9.1).

The registry is --registry PATH, else the global --plugin-registry / $KSEG_PLUGIN_REGISTRY.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from kseg.cli.common import guarded, report_format_option
from kseg.codecs.plugins import (
    Registry,
    active_registry_path,
    check_registry,
    describe,
    entry_point_codecs,
    self_test,
)
from kseg.errors import InputError
from kseg.ops.registry import load_registry, register, reload_registry

registry_option = click.option(
    "--registry", "registry", type=click.Path(path_type=Path), default=None,
    help="A plugin-python-topic-0 folder or a JSON file [default: --plugin-registry / KSEG_PLUGIN_REGISTRY].")
no_import_option = click.option("--no-import", is_flag=True, help="Do not import the plugin classes.")


def _registry_path(given: Path | None, *, required: bool) -> Path | None:
    path = given if given is not None else active_registry_path()
    if path is None and required:
        raise InputError("no plugin registry: give --registry PATH (or kseg --plugin-registry PATH, "
                         "or KSEG_PLUGIN_REGISTRY)")
    return path


@click.group()
def plugins() -> None:
    """Plugin codecs (KIP-984): codec id 5 with a plugin id in the batch attributes.

    A plugin is a class kseg instantiates with no arguments, whose instances have
    compress(data: bytes) -> bytes and decompress(data: bytes) -> bytes. The registry
    (a plugin-python-topic-0 folder of registration records, or a JSON file) gives
    each alias its plugin id; --codec ALIAS writes with it.
    """


@plugins.command("register")
@registry_option
@click.option("--alias", required=True, help="The name used with --codec (and shown as plugin:ALIAS).")
@click.option("--class", "class_name", default=None,
              help="Python import path module:attribute of the class [default: the kseg.codecs "
                   "entry point named ALIAS].")
@click.option("--version", "version", required=True, help="The plugin version recorded (pluginVersion).")
@click.option("--id", "plugin_id", type=click.IntRange(1, 15), default=None,
              help="Plugin id 1-15 [default: the alias's id if it has one, else the smallest free id].")
@guarded
def register_cmd(registry: Path | None, alias: str, class_name: str | None, version: str,
                 plugin_id: int | None) -> None:
    """Append a registration record (key = alias, value = JSON) to the registry.

    Creates the registry if it does not exist (a folder, or a JSON file if PATH ends
    in .json). An alias keeps its id; an id is never reused for another alias.
    """
    path = _registry_path(registry, required=True)
    assert path is not None
    if class_name is None:
        class_name = entry_point_codecs().get(alias)
        if class_name is None:
            raise InputError(f"give --class module:attribute (no kseg.codecs entry point is named {alias!r})")
    reg, written = register(path, alias, class_name, version, plugin_id)
    why = self_test(class_name)
    if why:
        click.echo(f"kseg: warning: {why} (registered all the same: it must import where the data is read)",
                   err=True)
    if written:
        click.echo(f"registered plugin {alias!r} as id {reg.plugin_id} ({class_name}, version {version}) "
                   f"at {reg.origin}")
    else:
        click.echo(f"plugin {alias!r} is already registered as id {reg.plugin_id} ({class_name}, "
                   f"version {version}); nothing written")
    reload_registry()  # forget what was read before the new record


@plugins.command("list")
@registry_option
@report_format_option
@no_import_option
@guarded
def list_cmd(registry: Path | None, fmt: str, no_import: bool) -> None:
    """Show the registered plugins (latest record per alias) and whether each class imports,
    then codecs installed through the kseg.codecs entry points that have no plugin id."""
    path = _registry_path(registry, required=False)
    reg = load_registry(path) if path is not None else Registry(None)
    rows = describe(reg, try_import=not no_import)
    problems = reg.problems()
    if fmt == "json":
        click.echo(json.dumps({"registry": reg.source, "plugins": rows, "problems": problems}, indent=2))
        return
    click.echo(f"{reg.name}: {len(reg.current)} plugin(s)" if reg.source else f"{reg.name}")
    if rows:
        table = [("ID", "ALIAS", "VERSION", "CLASS", "IMPORTS", "NOTES")]
        for r in rows:
            imports = "-" if "imports" not in r else ("yes" if r["imports"] else "no")
            notes = r["status"] if r["status"] != "ok" else ", ".join(r.get("features") or [])
            if r["source"] == "registry" and r.get("entry_point") and r["entry_point"] != r["class"]:
                notes = ", ".join(x for x in (notes, f"entry point {r['entry_point']} not used") if x)
            table.append(("-" if r["id"] is None else str(r["id"]), r["alias"], r["version"] or "-", r["class"],
                          imports, notes))
        widths = [max(len(row[i]) for row in table) for i in range(5)]
        for row in table:
            click.echo("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5])
    if problems:
        click.echo(f"{len(problems)} problem(s) in the registry: run kseg plugins check")


@plugins.command("check")
@registry_option
@report_format_option
@no_import_option
@guarded
def check_cmd(registry: Path | None, fmt: str, no_import: bool) -> None:
    """Validate the registry: well-formed records, unique aliases and ids, an alias keeps
    its id, ids never reused; and (unless --no-import) every class imports and round-trips.

    Exit 0 when clean, 1 when problems were found, 2 when the registry cannot be read.
    """
    path = _registry_path(registry, required=True)
    reg = load_registry(path)
    problems = check_registry(reg, try_import=not no_import)
    if fmt == "json":
        click.echo(json.dumps({"registry": reg.source, "ok": not problems, "plugins": len(reg.current),
                               "records": len(reg.records), "problems": problems}, indent=2))
    else:
        for p in problems:
            click.echo(f"  error: {p}")
        status = "ok" if not problems else f"{len(problems)} problem(s)"
        click.echo(f"{reg.name}: {status} ({len(reg.records)} record(s), {len(reg.current)} plugin(s))")
    raise SystemExit(1 if problems else 0)
