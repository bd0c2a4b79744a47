"""MkDocs hooks: load every ``kseg`` command before mkdocs-click documents the group.

The command group imports each command's module on first use (``COMMANDS`` in
``kseg/cli/main.py``); mkdocs-click reads a group's loaded commands, so they are all loaded
here, in the order ``kseg --help`` lists them.
"""

from __future__ import annotations

from typing import Any

import click


def on_config(config: Any) -> Any:
    from kseg.cli.main import main

    ctx = click.Context(main, info_name="kseg")
    names = main.list_commands(ctx)
    for name in names:
        main.get_command(ctx, name)
    main.commands = {name: main.commands[name] for name in names}
    return config
