"""Log directories inside archives (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``), read in place.

Each archive is built here from a log directory; every command's output over the archive
must be its output over the unpacked folder with the one prefix swapped.
"""

from __future__ import annotations

import os
import time
import tarfile
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.log.segment import expand_inputs
from kseg.storage import ArchivePath, as_path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "logdir"
REALDATA = Path("/work/shared/realdata/Experts-in-team-innovation/kafka/data")
KINDS = ("tar", "tgz", "tar.gz", "zip")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def build(folder: Path, where: Path, kind: str) -> Path:
    """``folder`` packed under its own name, as ``tar``/``zip`` would pack it."""
    out = where / f"{folder.name}.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for p in sorted(folder.rglob("*")):
                z.write(p, str(p.relative_to(folder.parent)))
    else:
        with tarfile.open(out, "w" if kind == "tar" else "w:gz") as t:
            t.add(folder, arcname=folder.name)
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["verify", "dump", "state", "txn"])
def test_fixtures_archive_reads_as_the_folder(tmp_path, kind, command):
    archive = build(FIXTURES, tmp_path, kind)
    local = cli(command, FIXTURES)
    packed = cli(command, archive)
    assert packed.exit_code == local.exit_code
    # An error names the input as given: the archive.
    assert packed.output.replace(f"{archive}/logdir", str(FIXTURES)).replace(str(archive), str(FIXTURES)) \
        == local.output


@pytest.mark.parametrize("kind", ("tgz", "zip"))
def test_a_folder_inside_an_archive(tmp_path, kind):
    archive = build(FIXTURES, tmp_path, kind)
    inner = f"{archive}/logdir/v2-zstd-0"
    assert isinstance(as_path(inner), ArchivePath)
    local = cli("dump", FIXTURES / "v2-zstd-0")
    packed = cli("dump", inner)
    assert packed.exit_code == local.exit_code == 0
    assert packed.output.replace(f"{archive}/logdir", str(FIXTURES)) == local.output


def test_archive_root_goes_down_lone_folders(tmp_path):
    archive = build(FIXTURES, tmp_path, "tgz")
    root = as_path(archive)
    assert isinstance(root, ArchivePath) and root.inner == "logdir" and root.is_dir()
    segs = expand_inputs([archive])
    assert [s.name for s in segs] == [p.name for p in expand_inputs([FIXTURES])]
    assert all(isinstance(s, ArchivePath) and s.stat().st_size == (FIXTURES / s.parent.name / s.name).stat().st_size
               for s in segs)
    assert as_path(str(segs[0])) == segs[0]  # str() names it again


def test_missing_member_and_read_only(tmp_path):
    archive = build(FIXTURES, tmp_path, "zip")
    r = cli("verify", f"{archive}/logdir/nope-0")
    assert r.exit_code != 0 and "no such file" in r.output
    with pytest.raises(OSError):
        as_path(f"{archive}/logdir/v2-zstd-0/x.log").open("wb")
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not an archive")
    r = cli("verify", bad)
    assert r.exit_code == 2 and "not a .tar, .tar.gz/.tgz or .zip archive" in r.output


def test_members_named_with_dot_slash(tmp_path):
    archive = tmp_path / "dot.tgz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(FIXTURES, arcname=".")  # tar -C logdir -czf dot.tgz .
    local = cli("dump", FIXTURES)
    packed = cli("dump", archive)
    assert packed.exit_code == local.exit_code
    assert packed.output.replace(str(archive), str(FIXTURES)) == local.output


@pytest.mark.skipif(not REALDATA.is_dir(), reason="no real data under /work/shared/realdata")
@pytest.mark.parametrize("kind", ("tgz", "zip"))
@pytest.mark.parametrize("command", ["verify", "dump", "state"])
def test_real_log_directory_archive(tmp_path, kind, command):
    archive = build(REALDATA, tmp_path, kind)
    local = cli(command, REALDATA)
    packed = cli(command, archive)
    assert packed.exit_code == local.exit_code
    assert packed.output.replace(f"{archive}/{REALDATA.name}", str(REALDATA)) == local.output
    assert os.path.getsize(archive) > 0


# --------------------------------------------------------------------------- operator tools, compact, index


def extract(archive: Path, into: Path) -> Path:
    """The archive unpacked by the standard library (zip members get their stored times back,
    as ``unzip`` does), and the log directory inside it."""
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            z.extractall(into)
            for info in z.infolist():
                when = time.mktime(info.date_time + (0, 0, -1))
                os.utime(into / info.filename, (when, when))
    else:
        with tarfile.open(archive) as t:
            t.extractall(into, filter="tar")
    return into / FIXTURES.name


def same_but_prefix(packed, local, archive: Path, folder: Path) -> None:
    assert packed.exit_code == local.exit_code, packed.output
    for attr in ("stdout", "stderr"):
        a, b = getattr(packed, attr), getattr(local, attr)
        assert a.replace(f"{archive}/{FIXTURES.name}", str(folder)).replace(str(archive), str(folder)) == b
    assert packed.stdout or packed.stderr


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


NOW = "1763900000000"  # compact: the same clock for both runs (v2 delete horizons are stamped with it)

TOOL_RUNS = {
    "stats": lambda p, q: ("stats", "--segments", p),
    "stats-json": lambda p, q: ("stats", "--format", "json", p),
    "find": lambda p, q: ("find", "--key", "k1", p),
    "find-range": lambda p, q: ("find", "--from-offset", "3", "--to-offset", "9", "--format", "json", f"{q}/v2-txn-0"),
    "diff-left": lambda p, q: ("diff", "--records", p, FIXTURES),
    "diff-right": lambda p, q: ("diff", "--check-crc", f"{FIXTURES}/v2-zstd-0", f"{q}/v2-zstd-0"),
    "diff-partitions": lambda p, q: ("diff", "--records", f"{q}/v2-none-0", f"{FIXTURES}/v2-gzip-0"),
    "repair-dry": lambda p, q: ("repair", "--dry-run", p),
    "compact-dry": lambda p, q: ("compact", "--dry-run", "--now-ms", NOW, "--format", "json", p),
    "index-check": lambda p, q: ("index", "--check", p),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("run", sorted(TOOL_RUNS))
def test_tools_read_an_archive_as_the_folder(tmp_path, kind, run):
    archive = build(FIXTURES, tmp_path, kind)
    folder = extract(archive, tmp_path / "unpacked")
    same_but_prefix(cli(*TOOL_RUNS[run](archive, f"{archive}/logdir")), cli(*TOOL_RUNS[run](folder, folder)), archive, folder)


WRITERS = {
    "repair": lambda src, q, out: ("repair", src, "-o", out),
    "repair-partition": lambda src, q, out: ("repair", f"{q}/v2-txn-0", "-o", out),
    "compact": lambda src, q, out: ("compact", "--now-ms", NOW, src, "-o", out),
    "compact-segments": lambda src, q, out: ("compact", "--now-ms", NOW, "--include-active",
                                          f"{q}/compacted-v2-0/00000000000000000000.log",
                                          f"{q}/compacted-v2-0/00000000000000000023.log", "-o", out),
    "index": lambda src, q, out: ("index", "--rebuild", src, "-o", out),
    "up-convert": lambda src, q, out: ("up-convert", "--to-magic", "2", src, "-o", out),
    "rebase-partition": lambda src, q, out: ("rebase", "--base-offset", "5", f"{q}/v2-txn-0", "-o", out),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("run", sorted(WRITERS))
def test_writers_take_an_archive_as_input(tmp_path, kind, run):
    archive = build(FIXTURES, tmp_path, kind)
    folder = extract(archive, tmp_path / "unpacked")
    packed = cli(*WRITERS[run](archive, f"{archive}/logdir", tmp_path / "from-archive"))
    local = cli(*WRITERS[run](folder, folder, tmp_path / "from-folder"))
    assert packed.exit_code == local.exit_code, packed.output
    assert packed.stdout.replace(f"{archive}/{FIXTURES.name}", str(folder)).replace(
        "from-archive", "from-folder") == local.stdout
    assert tree(tmp_path / "from-archive") == tree(tmp_path / "from-folder")
    assert len(tree(tmp_path / "from-folder")) > 2
    # Outputs keep the inputs' times, as from the folder (zip: to its 2-second resolution).
    for p in (tmp_path / "from-folder").rglob("*.log"):
        other = tmp_path / "from-archive" / p.relative_to(tmp_path / "from-folder")
        assert abs(other.stat().st_mtime - p.stat().st_mtime) <= 2


@pytest.mark.parametrize("run", ["stats", "find", "diff-left", "diff-right", "repair-dry", "compact-dry", "index-check"])
def test_tools_refuse_a_bad_archive_as_verify_does(tmp_path, run):
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not an archive")
    r = cli(*TOOL_RUNS[run](bad, f"{bad}/logdir"))
    assert r.exit_code == 2 and "not a .tar, .tar.gz/.tgz or .zip archive" in r.output
    cut = build(FIXTURES, tmp_path, "zip")
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])  # a zip cut short: no central directory
    r = cli(*TOOL_RUNS[run](cut, f"{cut}/logdir"))
    assert r.exit_code == 2 and "not a .tar, .tar.gz/.tgz or .zip archive" in r.output


def test_archives_stay_read_only(tmp_path):
    archive = build(FIXTURES, tmp_path, "tgz")
    before = archive.read_bytes()
    r = cli("index", "--rebuild", archive)
    assert r.exit_code == 2 and "give -o/--output" in r.stderr
    for args in (("repair", archive, "-o", archive), ("compact", "--now-ms", NOW, archive, "-o", tmp_path / "c")):
        cli(*args)
    assert archive.read_bytes() == before
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())  # no temporary left behind
