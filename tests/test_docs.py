"""The documentation: the site builds strictly, the command reference covers every command and
option, and README.md stays a short front door."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with ``mkdocs build --strict`` (as ``make docs`` builds it)."""
    if find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (the docs extra: pip install '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    pages = sorted(p.relative_to(ROOT / "docs").with_suffix("").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    for page in pages:
        built = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert built.is_file(), page


def test_every_command_and_spark_subcommand_is_in_the_reference(site: Path) -> None:
    from kseg.cli.main import main
    from kseg.spark.cli import spark

    ref = (site / "reference/cli/index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'<h[1-6][^>]* id="([^"]+)"', ref))
    ctx = click.Context(main, info_name="kseg")
    names = main.list_commands(ctx)
    assert {"dump", "verify", "repair", "salvage", "export", "spark"} <= set(names)
    missing = [n for n in names if f"kseg-{n}" not in ids]
    assert not missing, missing
    sub = spark.list_commands(click.Context(spark, info_name="spark"))
    assert {"verify", "dump", "compact"} <= set(sub)
    missing = [n for n in sub if f"kseg-spark-{n}" not in ids]
    assert not missing, missing


def test_every_option_of_dump_is_in_the_reference(site: Path) -> None:
    from kseg.cli.main import main

    text = _text(site / "reference/cli/index.html")
    section = text[text.index("kseg dump"):]
    section = section[:section.index("kseg export")]  # the next command, in the reference's order
    dump = main.get_command(click.Context(main, info_name="kseg"), "dump")
    options = [o for p in dump.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts)]
    assert "--records" in options and "--max-decompressed-bytes" in options
    missing = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", section)]
    assert not missing, missing


def test_every_public_name_is_in_the_api_reference(site: Path) -> None:
    import kseg

    ref = (site / "reference/api/index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r' id="([^"]+)"', ref))
    missing = [n for n in kseg.__all__ if not any(i == n or i.endswith("." + n) for i in ids)]
    assert not missing, missing


def test_the_readme_is_a_short_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, len(lines)
    head = "\n".join(lines[:60])
    assert "make demo" in head and "make test" in head
    text = "\n".join(lines)
    assert "make docs" in text and "_KSEG_COMPLETE=bash_source kseg" in text
    # its links to the documentation point at pages that exist
    for target in re.findall(r"\]\((docs/[^)#]*)", text):
        assert (ROOT / target).exists(), target


def test_the_nav_lists_every_page() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").rglob("*.md"):
        assert page.relative_to(ROOT / "docs").as_posix() in nav, page
