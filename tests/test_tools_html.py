"""kseg stats --html: a self-contained page whose plots render in a real headless browser."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from conftest import FIXTURES_LOGDIR
from kseg.cli.main import main

pytest.importorskip("plotly")

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)


def test_page_is_self_contained(tmp_path):
    page = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["stats", str(FIXTURES_LOGDIR), "--html", str(page)], catch_exceptions=False)
    assert res.exit_code == 0
    text = page.read_text()
    assert not re.search(r'<script[^>]+src="https?:', text)  # plotly.js inlined, nothing fetched
    for name in ("timeline", "mix", "batch-sizes", "skew"):
        assert f'id="fig-{name}"' in text


@pytest.mark.skipif(BROWSER is None, reason="no chromium for the headless check (apt-get install -y chromium)")
def test_plots_render_in_headless_chromium(tmp_path):
    page = tmp_path / "r.html"
    assert CliRunner().invoke(main, ["stats", str(FIXTURES_LOGDIR), "--html", str(page)]).exit_code == 0
    profile = tmp_path / "profile"
    cmd = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--no-first-run", "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
           "--virtual-time-budget=10000", "--dump-dom", page.as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    # plotly draws each figure as an <svg class="main-svg"> inside its div once its script ran.
    for name in ("timeline", "mix", "batch-sizes", "skew"):
        div = dom.split(f'id="fig-{name}"', 1)
        assert len(div) == 2, name
        assert "main-svg" in div[1].split("</section>", 1)[0], name
    assert "v2-txn-0" in dom and "bytes by codec" in dom
    shot = tmp_path / "shot.png"
    subprocess.run(cmd[:-2] + [f"--screenshot={shot}", "--window-size=1200,2400", page.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
