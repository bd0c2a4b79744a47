"""Writers' ``--skip-unconvertible``: a partition of a log directory the target format cannot
hold stops the run with one line naming the option (exit 2, nothing published); with the
option it is left out and named in the summary, the other partitions are written (and
verify), and the command exits 1. Given one partition, the option is refused (honest options).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kseg.facts.primitives import INT64_MAX
from tests.builders import write_partition

KSEG = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]


def kseg(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([*KSEG, *map(str, args)], capture_output=True, text=True, timeout=120)


def _mixed(root: Path) -> None:
    """A v0 partition beside a v2 one (zstd fits only the v2 one)."""
    write_partition(root / "old-0", 0, "none")
    write_partition(root / "new-0", 2, "none")
    (root / "meta.properties").write_text("version=0\nbroker.id=1\n")


def _sizes(root: Path) -> None:
    """A partition of 12 records and one of 24: a rebase near 2^63-1 fits only the small one."""
    write_partition(root / "small-0", 2, "none", segments=1)
    write_partition(root / "big-0", 2, "none", segments=2)


# (writer, its arguments, the input, the partition it cannot convert, words of why, the one written)
CASES = {
    "recompress": (["recompress", "--codec", "zstd"], _mixed, "old-0", "zstd cannot be carried by magic 0",
                   "new-0"),
    "up-convert": (["up-convert", "--to-magic", "1", "--codec", "zstd"], _mixed, "old-0",
                   "zstd cannot be carried by magic 1", "new-0"),
    "down-convert": (["down-convert", "--to-magic", "1", "--codec", "zstd"], _mixed, "new-0",
                     "zstd cannot be carried by magic 1", "old-0"),
    "rebase": (["rebase", "--base-offset", str(INT64_MAX - 15)], _sizes, "big-0", "is out of range", "small-0"),
}


@pytest.mark.parametrize("writer", list(CASES))
def test_without_the_option_one_line_names_it_and_nothing_is_written(tmp_path, writer):
    args, make, bad, why, _ = CASES[writer]
    make(tmp_path / "in")
    out = tmp_path / "out"
    r = kseg(*args, tmp_path / "in", "-o", out)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kseg: error: "), r.stderr
    assert f"/{bad}/" in lines[0] and why in lines[0] and "--skip-unconvertible" in lines[0], lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.rglob("*") if "kseg-tmp" in p.name]


@pytest.mark.parametrize("writer", list(CASES))
def test_with_the_option_the_others_are_written_and_the_skipped_one_listed(tmp_path, writer):
    args, make, bad, why, good = CASES[writer]
    make(tmp_path / "in")
    out = tmp_path / "out"
    r = kseg(*args, tmp_path / "in", "-o", out, "--skip-unconvertible")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    [summary] = r.stderr.splitlines()
    assert f"skipped 1 partition(s) it cannot convert: {bad} (" in summary and why in summary, summary
    assert not (out / bad).exists()
    assert sorted(p.name for p in (out / good).glob("*.log"))
    v = kseg("verify", out)
    assert v.returncode == 0, v.stdout + v.stderr
    # The log directory's checkpoints name the partitions written, not the one left out.
    recovery = (out / "recovery-point-offset-checkpoint").read_text()
    assert good.rsplit("-", 1)[0] in recovery and bad.rsplit("-", 1)[0] not in recovery


def test_a_sound_log_directory_with_the_option_exits_0(tmp_path):
    _mixed(tmp_path / "in")
    r = kseg("recompress", "--codec", "gzip", tmp_path / "in", "-o", tmp_path / "out", "--skip-unconvertible")
    assert r.returncode == 0, r.stderr
    assert "skipped" not in r.stderr


@pytest.mark.parametrize("one", ["old-0", "old-0/00000000000000000000.log"])
def test_given_one_partition_the_option_is_refused(tmp_path, one):
    _mixed(tmp_path / "in")
    r = kseg("recompress", "--codec", "gzip", tmp_path / "in" / one, "-o", tmp_path / "out", "--skip-unconvertible")
    assert r.returncode == 2
    [line] = r.stderr.splitlines()
    assert "--skip-unconvertible leaves out partitions of a log directory; this input is one partition" in line
    assert not (tmp_path / "out").exists()


def test_one_partition_without_the_option_gives_no_hint(tmp_path):
    """Nothing else to write: the error does not offer an option that would be refused."""
    _mixed(tmp_path / "in")
    r = kseg("recompress", "--codec", "zstd", tmp_path / "in" / "old-0", "-o", tmp_path / "out")
    assert r.returncode == 2
    [line] = r.stderr.splitlines()
    assert "zstd cannot be carried by magic 0" in line and "--skip-unconvertible" not in line


def test_spark_recompress_skips_as_the_plain_command(tmp_path):
    """``kseg spark recompress`` takes the option (the plain command's options) and does the same."""
    pytest.importorskip("pyspark")
    import os
    import shutil

    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for a local Spark")
    _mixed(tmp_path / "in")
    plain = kseg("recompress", "--codec", "zstd", tmp_path / "in", "-o", tmp_path / "a", "--skip-unconvertible")
    dist = kseg("spark", "recompress", "--codec", "zstd", tmp_path / "in", "-o", tmp_path / "b",
                "--skip-unconvertible", "--master", "local[1]", "--report", tmp_path / "report.json")
    assert plain.returncode == dist.returncode == 1, dist.stderr
    import json

    [skipped] = json.loads((tmp_path / "report.json").read_text())["skipped"]  # the JSON summary says it too
    assert skipped["partition"] == "old-0" and "zstd cannot be carried by magic 0" in skipped["why"]
    assert dist.stderr.splitlines()[-1].replace(str(tmp_path / "b"), "OUT") == \
        plain.stderr.splitlines()[-1].replace(str(tmp_path / "a"), "OUT")
    tree = {str(p.relative_to(tmp_path / "a")): p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    assert tree == {str(p.relative_to(tmp_path / "b")): p.read_bytes()
                    for p in (tmp_path / "b").rglob("*") if p.is_file()}
    stop = kseg("spark", "recompress", "--codec", "zstd", tmp_path / "in", "-o", tmp_path / "c", "--master", "local[1]")
    assert stop.returncode == 2 and "--skip-unconvertible" in stop.stderr.splitlines()[-1]
    assert not (tmp_path / "c").exists()
