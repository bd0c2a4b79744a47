"""kseg.1 is written from the click commands: every command (kseg spark's too, when the extra is
installed) and every option appears in it, and groff reads it without a warning."""

from __future__ import annotations

import shutil
import subprocess

import click
import pytest

from kseg.cli.main import main
from kseg.cli.manpage import render, roff


def _all_commands(group: click.Group, ctx: click.Context, prefix: str = "kseg"):
    for name in group.list_commands(ctx):
        try:
            cmd = group.get_command(ctx, name)
        except ImportError:
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx)
        yield f"{prefix} {name}", cmd, sub
        if isinstance(cmd, click.Group):
            yield from _all_commands(cmd, sub, f"{prefix} {name}")


def test_every_command_and_option_is_on_the_page() -> None:
    page = render()
    commands = list(_all_commands(main, click.Context(main, info_name="kseg")))
    assert len(commands) > 15
    for name, cmd, ctx in commands:
        assert f".SS {roff(name)}\n" in page, name
        for param in cmd.get_params(ctx):
            if isinstance(param, click.Option):
                for opt in param.opts:
                    assert roff(opt) in page, f"{name} {opt}"


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_groff_reads_it_without_warnings(tmp_path) -> None:
    page = tmp_path / "kseg.1"
    page.write_text(render())
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True,
                       env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stderr == "", r.stderr


@pytest.mark.parametrize("words,cword,expected", [
    ("kseg ver", 1, "plain,verify"),
    ("kseg --tr", 1, "plain,--traceback"),
    ("kseg verify fixtures/lo", 2, "file,fixtures/lo"),
    ("kseg up-convert fixtures/logdir -o ou", 4, "file,ou"),
    ("kseg dump s3://bucket/pre", 2, ""),
])
def test_shell_completion(words: str, cword: int, expected: str) -> None:
    """Commands and the group's options complete by name; path arguments and -o complete as files
    in the shell."""
    import os
    import sys

    env = dict(os.environ, COMP_WORDS=words, COMP_CWORD=str(cword), _KSEG_COMPLETE="bash_complete")
    r = subprocess.run([sys.executable, "-c", "from kseg.cli import run; run()"], capture_output=True, text=True,
                       env=env)
    assert r.stdout.strip() == expected, r.stderr
