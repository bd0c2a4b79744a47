"""One read-error classification for every storage backend (``kseg.storage.gone``/``ReadError``).

"The file went away during the run" is a note, and the run goes on, only for a local file
that is no longer there (deleted by retention). Every other read failure (a zip member with
a bad CRC-32 or damaged deflate data, a tar cut short, an object store that stops answering)
is one error naming the path, ``kseg: error: PATH: cannot read: <reason>``, exit 2, in every
command; in ``verify`` it is an "unreadable" finding (exit 2). Never a traceback.

Each case runs the real ``kseg`` command in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

from kseg.errors import InputError
from kseg.storage import ArchivePath, ReadError, RemotePath, as_path, gone
from tests.verify_text import with_paths

REPO = Path(__file__).resolve().parent.parent
PARTITION = REPO / "fixtures" / "logdir" / "v2-txn-0"
DAMAGED = "00000000000000000005.log"  # the newest segment: the first one reads fine before it
KSEG_CODE = "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"
# The same, with the log named in KSEG_TEST_DOOMED deleted just before it is read (as
# retention deletes a segment between a command's listing and its reading).
DOOMED_CODE = """
import os, sys
from kseg.log import segment
doomed = os.environ["KSEG_TEST_DOOMED"]
listed = segment.Segment.batch_lists
def batch_lists(self, *args, **kwargs):
    if str(self.path) == doomed and os.path.exists(doomed):
        os.unlink(doomed)
    return listed(self, *args, **kwargs)
segment.Segment.batch_lists = batch_lists
from kseg.cli.main import main
sys.argv[0] = "kseg"
main()
"""


def kseg(*args: str | Path, env: dict[str, str] | None = None, code: str = KSEG_CODE,
         timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


# --------------------------------------------------------------------------- damaged inputs


def _zip(where: Path, partition: Path = PARTITION) -> Path:
    out = where / "logs.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(partition.iterdir()):
            z.write(p, f"{partition.name}/{p.name}")
    return out


def _member(archive: Path, name: str = DAMAGED) -> zipfile.ZipInfo:
    with zipfile.ZipFile(archive) as z:
        return next(i for i in z.infolist() if i.filename.endswith("/" + name))


def zip_bad_crc(where: Path, name: str = DAMAGED, partition: Path = PARTITION) -> tuple[Path, str]:
    """The member's bytes intact, its stored CRC-32 (local header and central directory) wrong:
    only the CRC check can tell."""
    out = _zip(where, partition)
    info = _member(out, name)
    data = bytearray(out.read_bytes())
    struct.pack_into("<I", data, info.header_offset + 14, info.CRC ^ 0x5A5A5A5A)
    eocd = data.rindex(b"PK\x05\x06")
    central = struct.unpack_from("<I", data, eocd + 16)[0]  # the central directory's first record
    while True:
        name_len = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46:central + 46 + name_len].decode() == info.filename:
            struct.pack_into("<I", data, central + 16, info.CRC ^ 0x5A5A5A5A)
            break
        extra, comment = struct.unpack_from("<HH", data, central + 30)
        central += 46 + name_len + extra + comment
    out.write_bytes(bytes(data))
    return out, f"{out}/{partition.name}/{name}"


def zip_bad_deflate(where: Path) -> tuple[Path, str]:
    """The member's deflate stream starts with a reserved block type: zlib refuses it."""
    out = _zip(where)
    info = _member(out)
    data = bytearray(out.read_bytes())
    name_len, extra = struct.unpack_from("<HH", data, info.header_offset + 26)
    data[info.header_offset + 30 + name_len + extra] = 0xFF  # BFINAL=1, BTYPE=11
    out.write_bytes(bytes(data))
    return out, f"{out}/{PARTITION.name}/{DAMAGED}"


def _tar_cut(where: Path, mode: str, name: str) -> tuple[Path, str]:
    out = where / name
    with tarfile.open(out, mode) as t:
        t.add(PARTITION, arcname=PARTITION.name)
    data = out.read_bytes()
    out.write_bytes(data[: len(data) * 2 // 3])
    return out, str(out)  # the archive cannot be listed: the error names it


def tar_truncated(where: Path) -> tuple[Path, str]:
    return _tar_cut(where, "w", "logs.tar")


def tgz_truncated(where: Path) -> tuple[Path, str]:
    return _tar_cut(where, "w:gz", "logs.tgz")


DAMAGE = {"zip bad crc": zip_bad_crc, "zip bad deflate": zip_bad_deflate, "tar truncated": tar_truncated,
          "tgz truncated": tgz_truncated}
# command -> its arguments over the input
COMMANDS = {
    "verify": lambda p: ["verify", p],
    "dump": lambda p: ["dump", "--records", p],
    "dump --keep-going": lambda p: ["dump", "--keep-going", p],
    "stats": lambda p: ["stats", p],
    "find": lambda p: ["find", "--key-regex", "k", p],
    "txn": lambda p: ["txn", p],
    "diff": lambda p: ["diff", p, PARTITION],
    "diff (right)": lambda p: ["diff", PARTITION, p],
    "index --check": lambda p: ["index", "--check", p],
    "up-convert": lambda p: ["up-convert", "--to-magic", "2", p, "-o", "{out}"],
    "recompress": lambda p: ["recompress", "--codec", "gzip", p, "-o", "{out}"],
    "compact": lambda p: ["compact", "--now-ms", "1800000000000", p, "-o", "{out}"],
    "repair --dry-run": lambda p: ["repair", "--dry-run", p],
}


def one_read_error(r: subprocess.CompletedProcess, named: str, *, verify: bool = False) -> str:
    """Exit 2, no traceback, and exactly one error line, ``PATH: cannot read: ...`` (in verify's
    report for a member it could list, else on stderr as ``kseg: error:``)."""
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert "went away" not in r.stdout + r.stderr, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("kseg: error:")]
    if verify and not errors:
        # verify's text names the file once, its findings indented under it
        lines = r.stdout.splitlines()
        found = [line.strip() for line in lines if line.strip().startswith("error:")]
        header = [i for i, line in enumerate(lines) if line.startswith(f"{named}: ")]
        assert len(found) == 1 and found[0].startswith("error: cannot read: "), r.stdout
        assert len(header) == 1 and lines[header[0] + 1].strip() == found[0], r.stdout
        return f"{named}: {found[0]}"
    assert len(errors) == 1, r.stderr
    assert errors[0].startswith(f"kseg: error: {named}: cannot read: "), errors[0]
    return errors[0]


@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_damaged_archive_is_one_read_error(tmp_path, damage, command) -> None:
    archive, named = DAMAGE[damage](tmp_path)
    before = archive.read_bytes()
    args = [str(a).replace("{out}", str(tmp_path / "out")) for a in COMMANDS[command](str(archive))]
    r = kseg(*args)
    line = one_read_error(r, named, verify=command == "verify")
    if damage == "zip bad crc":
        assert "Bad CRC-32" in line
    if damage == "zip bad deflate":
        assert "damaged compressed data" in line
    assert archive.read_bytes() == before
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [archive.name]  # nothing left behind


def test_verify_checks_the_rest_of_an_archive(tmp_path) -> None:
    """verify goes on past the unreadable member: the good segment is checked and reported."""
    archive, named = zip_bad_crc(tmp_path)
    r = kseg("verify", "-v", archive)
    one_read_error(r, named, verify=True)
    assert f"{archive}/{PARTITION.name}/00000000000000000000.log: ok" in r.stdout, r.stdout
    checked = len(list(PARTITION.iterdir()))  # every file of the partition, the unreadable one too
    assert f"{checked} file(s) checked, 1 with errors, 1 error(s) in all" in r.stdout, r.stdout


@pytest.mark.parametrize("command", ["verify", "index --check"])
def test_damaged_index_member_is_one_read_error(tmp_path, command) -> None:
    """A companion (.index) that fails to read is the same read error, not a finding about it (exit 1)."""
    archive, named = zip_bad_crc(tmp_path, DAMAGED.replace(".log", ".index"))
    one_read_error(kseg(*COMMANDS[command](str(archive))), named, verify=command == "verify")


def test_state_of_a_damaged_internal_topic_is_one_read_error(tmp_path) -> None:
    internal = REPO / "fixtures" / "internal" / "__consumer_offsets-0"
    archive, named = zip_bad_crc(tmp_path, "00000000000000000000.log", internal)
    one_read_error(kseg("state", archive), named)


# --------------------------------------------------------------------------- a local file deleted


# command -> (exit code, where the one line is, what it says): every reader notes it and goes on
# (stats in its report, find before its summary line).
DELETED = {
    "verify": (0, "stdout", "note:"),
    "dump": (0, "stderr", "kseg: note:"),
    "txn": (1, "stdout", "note:"),  # exit 1: the commits were in the deleted segment, the rest hangs
    "stats": (0, "stdout", "note:"),
    "find": (0, "stderr", "kseg: note:"),
}


@pytest.mark.parametrize("command", list(DELETED))
def test_local_file_deleted_during_the_run(tmp_path, command) -> None:
    part = tmp_path / PARTITION.name
    shutil.copytree(PARTITION, part)
    doomed = part / DAMAGED
    r = kseg(*COMMANDS[command](str(part)), code=DOOMED_CODE, env={"KSEG_TEST_DOOMED": str(doomed)})
    code, stream, head = DELETED[command]
    assert not doomed.exists()  # the hook ran
    assert r.returncode == code, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    out = with_paths(r.stdout) if command == "verify" else r.stdout
    said = [line.strip() for line in (out + r.stderr).splitlines()]
    lines = [line for line in said if str(doomed) in line and line.startswith(("note:", "error:", "kseg:"))]
    assert lines == [line.strip() for line in {"stdout": out, "stderr": r.stderr}[stream].splitlines()
                     if line.strip() in lines]
    assert len(lines) == 1 and lines[0].startswith(head), (r.stdout, r.stderr)
    if code != 2:
        assert "went away" in lines[0]
        assert not [line for line in r.stderr.splitlines() if line.startswith("kseg: error:")], r.stderr
    else:
        assert lines[0] == f"kseg: error: {doomed}: cannot read: No such file or directory", lines


# --------------------------------------------------------------------------- the classification


def test_gone_only_for_a_local_file_no_longer_there(tmp_path) -> None:
    here = tmp_path / "a.log"
    here.write_bytes(b"")
    archive, _ = zip_bad_crc(tmp_path)
    assert not gone(here) and not gone(str(here))
    assert gone(tmp_path / "b.log") and gone(str(tmp_path / "b.log"))
    assert not gone(Path("-")) and not gone("-")
    assert not gone(ArchivePath(archive, f"{PARTITION.name}/{DAMAGED}"))
    assert not gone(ArchivePath(archive, "no/such/member.log"))
    assert not gone(f"{archive}/no/such/member.log")  # a plain path through an archive: a member
    assert not gone(RemotePath("s3", "bucket/t-0/00000000000000000000.log"))
    assert not gone("s3://bucket/t-0/00000000000000000000.log")


@pytest.mark.parametrize("piece", [1, 7, 4096, 65536, None])
def test_bad_crc_member_read_in_pieces_is_an_error(tmp_path, piece) -> None:
    """zipfile checks a member's CRC only at its end of stream: however it is read (in pieces,
    seeking, exactly its size), a bad member ends in ReadError, never in its bytes."""
    archive, named = zip_bad_crc(tmp_path)
    member = as_path(named)
    size = member.stat().st_size
    with pytest.raises(ReadError) as e, member.open("rb") as f:
        got = 0
        while got < size:
            f.seek(got)
            got += len(f.read(size - got if piece is None else min(piece, size - got)))
        f.read(1)
    assert str(e.value).startswith(f"{named}: cannot read: Bad CRC-32")


def test_good_member_read_in_pieces(tmp_path) -> None:
    archive = _zip(tmp_path)
    member = as_path(f"{archive}/{PARTITION.name}/{DAMAGED}")
    want = (PARTITION / DAMAGED).read_bytes()
    with member.open("rb") as f:
        parts = [f.read(100) for _ in range(len(want) // 100 + 2)]
    assert b"".join(parts) == want


# --------------------------------------------------------------------------- credentials in a URL


@pytest.mark.parametrize("url", ["s3://AKIAEXAMPLE:s3cr3tW0rd@bucket/logs", "s3://s3cr3tW0rd@bucket/logs",
                                 "gs://user:s3cr3tW0rd@bucket/logs", "abfs://user:s3cr3tW0rd@container/logs"])
def test_credentials_in_a_url_are_refused_unechoed(url) -> None:
    r = kseg("verify", url)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "s3cr3tW0rd" not in r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("kseg: error:")]
    assert len(errors) == 1 and "credentials are not taken in the URL" in errors[0], r.stderr
    assert ("AWS_ACCESS_KEY_ID" in errors[0]) == url.startswith("s3:"), errors[0]
    assert "Azure" not in errors[0] or url.startswith("abfs:")
    with pytest.raises(InputError) as e:
        as_path(Path(url))  # a URL that went through Path() on the way is checked the same
    assert "s3cr3tW0rd" not in str(e.value) and "***@" in str(e.value)


def test_azure_account_form_keeps_its_message() -> None:
    r = kseg("verify", "abfs://container@account.dfs.core.windows.net/logs")
    assert r.returncode == 2 and "AZURE_STORAGE_ACCOUNT_NAME" in r.stderr and "credentials" not in r.stderr


# --------------------------------------------------------------------------- an object store failing


@pytest.mark.live  # a server of its own
def test_object_store_stopping_mid_dump_is_one_read_error(tmp_path) -> None:
    """A SeaweedFS S3 server of this test's own, stopped while ``kseg dump`` reads a large
    segment by ranges: exit 2 and one error line naming the object, not "went away"."""
    pytest.importorskip("pyarrow")
    from servers import SeaweedFS, ServerUnavailable, stop

    from kseg.log.encode import build_v2_batch
    from kseg.model import make_record

    server = SeaweedFS(Path(tempfile.mkdtemp(prefix="weed-", dir=tmp_path)))
    try:
        server.__enter__()
    except ServerUnavailable as e:
        pytest.skip(f"no S3-compatible server: {e}")
    try:
        fs = server.fs()
        fs.create_dir("stops")
        key = "stops/t-0/00000000000000000000.log"
        offset = written = 0
        with fs.open_output_stream(key) as out:
            while written < 24 << 20:  # three 8 MiB ranged reads
                raw = build_v2_batch([make_record(offset + j, 1_700_000_000_000, b"k", os.urandom(2000))
                                      for j in range(8)])
                out.write(raw)
                written += len(raw)
                offset += 8
        p = subprocess.Popen([sys.executable, "-c", KSEG_CODE, "dump", "--records", f"s3://{key}"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, **server.env})
        try:
            # The dump's output fills the pipe long before the first range is shown: kseg waits
            # on its stdout, mid-object, while the server is stopped.
            assert len(p.stdout.read(1 << 16)) == 1 << 16
            stop(server.proc)
            p.stdout.read()
            stderr = p.stderr.read().decode()
            p.wait(120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stdout.close()
            p.stderr.close()
    finally:
        server.__exit__()
    r = subprocess.CompletedProcess(p.args, p.returncode, "", stderr)
    one_read_error(r, f"s3://{key}")


# --------------------------------------------------------------------------- member names


@pytest.mark.parametrize("kind", ["tar", "zip"])
def test_member_names_resolve_as_tar_does(tmp_path, kind) -> None:
    """``logs//t-0/./x.log`` is ``logs/t-0/x.log``; of two members under one name the last is
    read (as tar extracts it), and the repeat is said once."""
    import io

    good = (PARTITION / "00000000000000000000.log").read_bytes()
    names = [("logs/t-0/00000000000000000000.log", b"junk" * 10),
             ("logs//t-0/./00000000000000000000.log", good)]
    archive = tmp_path / f"logs.{kind}"
    if kind == "tar":
        with tarfile.open(archive, "w") as t:
            for name, data in names:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    else:
        with zipfile.ZipFile(archive, "w") as z:
            for name, data in names:
                z.writestr(name, data)
    r = kseg("verify", archive)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "1 file(s) checked, 0 with errors" in r.stdout, r.stdout
    notes = [line for line in r.stderr.splitlines() if line.startswith("kseg: note:")]
    assert len(notes) == 1 and "logs/t-0/00000000000000000000.log" in notes[0] and "last" in notes[0], r.stderr
    assert as_path(f"{archive}/logs/t-0/00000000000000000000.log").read_bytes() == good
