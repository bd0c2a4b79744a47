"""``kseg.1``: the manual page, written from the click commands themselves so it cannot drift.

    python -m kseg.cli.manpage > kseg.1      # or: make man
    man -l kseg.1

One page: NAME, SYNOPSIS, DESCRIPTION, then a section per command (``kseg spark`` and its
commands included) with its help text and every option, EXIT STATUS and ENVIRONMENT.
"""

from __future__ import annotations

import sys
from importlib.metadata import version
from typing import Iterator

import click

from kseg.cli.main import main

EXIT_STATUS = (("0", "fine: the data is as it should be, the command did its work"),
               ("1", "the data has problems (verify found errors, a reader met damaged data, a writer stopped)"),
               ("2", "bad usage or unreadable input"),
               ("130, 143", "interrupted (SIGINT, SIGTERM), after the command's own cleanup"))
ENVIRONMENT = (("KSEG_PLUGIN_REGISTRY", "the plugin codec registry (as --plugin-registry)"),
               ("KSEG_PURE_PYTHON", "set: run the pure-Python code instead of the C accelerator"),
               ("KSEG_KAFKA_VERSION", "kseg-dump-log: whose kafka-dump-log output to reproduce"))


def roff(text: str) -> str:
    """Text made safe for roff: backslashes and leading dots or quotes escaped."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.splitlines())


def _commands(group: click.Group, ctx: click.Context, prefix: str) -> Iterator[tuple[str, click.Command,
                                                                                    click.Context]]:
    for name in group.list_commands(ctx):
        try:
            cmd = group.get_command(ctx, name)
        except ImportError:  # kseg spark without the spark extra: the page says it is missing
            continue
        if cmd is None or cmd.hidden:
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx)
        yield f"{prefix} {name}", cmd, sub
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, sub, f"{prefix} {name}")


def _options(cmd: click.Command, ctx: click.Context) -> list[str]:
    out = []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        out += [".TP", f"\\fB{roff(names)}\\fR", roff(help_text or "")]
    return out


def render(group: click.Group = main) -> str:
    """The whole page as roff (man macros)."""
    ctx = click.Context(group, info_name="kseg")
    lines = [f'.TH KSEG 1 "" "kseg {version("kseg")}" "kseg manual"', ".SH NAME",
             "kseg \\- look inside, verify and convert Apache Kafka log segment files",
             ".SH SYNOPSIS", "\\fBkseg\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
             ".SH DESCRIPTION", roff(group.help or ""), ".SS Global options", *_options(group, ctx),
             ".SH COMMANDS"]
    for name, cmd, sub in _commands(group, ctx, "kseg"):
        usage = " ".join(cmd.collect_usage_pieces(sub))
        lines += [f".SS {roff(name)}", f"\\fB{roff(name)}\\fR {roff(usage)}", ".PP", roff(cmd.help or "")]
        lines += _options(cmd, sub)
    lines.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        lines += [".TP", f"\\fB{code}\\fR", roff(meaning)]
    lines.append(".SH ENVIRONMENT")
    for name, meaning in ENVIRONMENT:
        lines += [".TP", f"\\fB{name}\\fR", roff(meaning)]
    lines += [".SH SEE ALSO", "\\fBkseg\\-dump\\-log\\fR(1), \\fBkafka\\-dump\\-log.sh\\fR"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
