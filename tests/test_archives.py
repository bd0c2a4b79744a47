"""Log directories inside archives (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``), read in place.

Each archive is built here from a log directory; every command's output over the archive
must be its output over the unpacked folder with the one prefix swapped.
"""

from __future__ import annotations

import os
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
