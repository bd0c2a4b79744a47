"""kseg verify's text report in its three shapes: by default the files with findings, with
-v every file, with -q only the files with errors and their errors, with --no-notes no notes;
the summary line and the exit code are the same in every shape."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
COMPACTED = ROOT / "fixtures" / "logdir" / "compacted-v1-gzip-0"  # notes only: offset holes of compaction


def verify(*args: str):
    return CliRunner().invoke(main, ["verify", *args])


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    part = tmp_path / "bad-0"
    shutil.copytree(ROOT / "fixtures" / "logdir" / "v2-none-0", part)
    log = part / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[100] ^= 0xFF
    log.write_bytes(bytes(data))
    return part


def test_shapes(damaged: Path) -> None:
    runs = {shape: verify(*flags, str(damaged), str(COMPACTED))
            for shape, flags in {"default": [], "verbose": ["-v"], "errors": ["-q"], "no-notes": ["--no-notes"]}.items()}
    assert {r.exit_code for r in runs.values()} == {1}
    summaries = {r.output.splitlines()[-1] for r in runs.values()}
    assert len(summaries) == 1 and "1 with errors" in summaries.pop()
    default, verbose, errors, no_notes = (runs[k].output for k in ("default", "verbose", "errors", "no-notes"))
    assert "  note: " in default and "  error: " in default and str(COMPACTED) in default
    assert "  note: " not in errors and "  error: " in errors and str(COMPACTED) not in errors
    assert "  note: " not in no_notes and "  error: " in no_notes
    assert len(verbose.splitlines()) > len(default.splitlines()) > len(errors.splitlines())
    assert ".index: ok" in verbose and ".index: ok" not in default


@pytest.mark.parametrize("flags", [["-q", "-v"], ["-q", "--format", "json"], ["--no-notes", "--format", "sarif"]])
def test_contradictions_are_usage_errors(flags: list[str]) -> None:
    r = verify(*flags, str(COMPACTED))
    assert r.exit_code == 2 and r.output.startswith("kseg: error: ") and len(r.output.splitlines()) == 1


@pytest.mark.parametrize("logdir", ["logdir", "kafka-4/logdir", "kafka-3.9/logdir"])
def test_quick_is_clean_where_the_full_check_is(logdir: str) -> None:
    """--quick reads no records, so it knows no control batch: it must not then call every
    .txnindex entry's ABORT marker missing (the .txnindex is checked alone)."""
    path = str(ROOT / "fixtures" / logdir)
    full, quick = verify(path), verify("--quick", path)
    assert full.exit_code == 0, full.output[-2000:]
    assert quick.exit_code == 0 and " error(s) in all" in quick.output, quick.output[-2000:]
