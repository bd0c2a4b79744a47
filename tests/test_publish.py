"""Publishing to an object store cannot be mistaken for complete (issue 31, item 1).

Against the real SeaweedFS server the suite starts (``servers.object_store``): a writer's
``s3://`` output gets ``.kseg-manifest.json`` last, ``kseg verify`` checks the prefix against
it (a missing, extra or truncated object is exit 1 naming its key). The store refusing
writes, going down or being killed mid-publish, for every writer: the failure matrix's
``s3out`` cells (tests/test_failure_matrix.py); kseg spark's staging is named here.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "logdir"
PARTITIONS = ("v2-none-0", "v2-gzip-0", "v1-none-0")
MANIFEST = ".kseg-manifest.json"
KSEG = "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"

@pytest.fixture
def s3(object_store, tmp_path):
    """(environment for a child on the test server with TMPDIR a fresh folder, that folder, pyarrow fs)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE")}
    env.update(object_store.env)
    env["TMPDIR"] = str(tmp)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    fs = object_store.fs()
    fs.create_dir("kseg-test")
    return env, tmp, fs


@pytest.fixture
def logdir(tmp_path) -> Path:
    """A log directory of three partitions."""
    d = tmp_path / "logdir"
    for name in PARTITIONS:
        shutil.copytree(FIXTURES / name, d / name)
    return d


def kseg(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", KSEG, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=120)


def keys(fs, prefix: str) -> dict[str, int]:
    """Every object under ``prefix`` (relative key -> size)."""
    from pyarrow import fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
    return {i.path[len(prefix) + 1:]: i.size for i in infos if i.type == pafs.FileType.File}


def publish(env, fs, logdir, name: str) -> str:
    prefix = f"kseg-test/publish-{name}"
    fs.delete_dir_contents(prefix, missing_dir_ok=True)
    r = kseg(env, "up-convert", logdir, "-o", f"s3://{prefix}/out", "--to-magic", "2")
    assert r.returncode == 0, r.stderr
    return prefix


# --------------------------------------------------------------------------- a published output


def test_published_output_has_a_manifest_written_last(s3, logdir) -> None:
    env, tmp, fs = s3
    prefix = publish(env, fs, logdir, "ok")
    there = keys(fs, f"{prefix}/out")
    manifest = json.loads(fs.open_input_file(f"{prefix}/out/{MANIFEST}").read())
    listed = {o["key"]: o for o in manifest["objects"]}
    assert set(listed) == set(there) - {MANIFEST}
    assert {k for k in listed if "/" not in k}, "the log directory's own files (checkpoints) are listed"
    assert {k.split("/")[0] for k in listed if "/" in k} == set(PARTITIONS)
    for key, o in listed.items():
        data = fs.open_input_file(f"{prefix}/out/{key}").read()
        assert o["size"] == there[key] == len(data)
        assert o["sha256"] == hashlib.sha256(data).hexdigest()
    assert manifest["command"][:2] == ["kseg", "up-convert"] and manifest["kseg_version"] and manifest["time"]
    assert keys(fs, prefix).keys() == {f"out/{k}" for k in there}  # no staging left
    assert os.listdir(tmp) == []
    r = kseg(env, "verify", "-v", f"s3://{prefix}/out")
    assert r.returncode == 0, r.stdout + r.stderr
    assert [line for line in r.stdout.splitlines() if MANIFEST in line] == [
        f"s3://{prefix}/out/{MANIFEST}: ok (manifest)"], r.stdout  # checked, and not read as a segment


def _delete(fs, out: str) -> str:
    key = f"{PARTITIONS[1]}/00000000000000000000.index"
    fs.delete_file(f"{out}/{key}")
    return f"{key}: listed in the manifest, missing"


def _add(fs, out: str) -> str:
    with fs.open_output_stream(f"{out}/{PARTITIONS[0]}/stray.txt") as f:
        f.write(b"not ours")
    return f"{PARTITIONS[0]}/stray.txt: not listed in the manifest"


def _truncate(fs, out: str) -> str:
    key = f"{PARTITIONS[2]}/00000000000000000000.log"
    data = fs.open_input_file(f"{out}/{key}").read()
    with fs.open_output_stream(f"{out}/{key}") as f:
        f.write(data[:-10])
    return f"{key}: size differs from the manifest: expected {len(data)} bytes, found {len(data) - 10} bytes"


@pytest.mark.parametrize("change", [_delete, _add, _truncate], ids=["deleted", "added", "truncated"])
def test_verify_checks_the_manifest(change, s3, logdir, tmp_path) -> None:
    env, tmp, fs = s3
    prefix = publish(env, fs, logdir, change.__name__.strip("_"))
    out = f"{prefix}/out"
    message = change(fs, out)
    r = kseg(env, "verify", f"s3://{out}")
    assert r.returncode == 1, r.stdout + r.stderr
    assert _under(r.stdout, f"s3://{out}/{MANIFEST}", f"  error: {message}"), r.stdout
    # the same folder copied to local disk: the same verdict
    local = tmp_path / "copy"
    for key in keys(fs, out):
        (local / key).parent.mkdir(parents=True, exist_ok=True)
        (local / key).write_bytes(fs.open_input_file(f"{out}/{key}").read())
    r = kseg(env, "verify", local)
    assert r.returncode == 1 and _under(r.stdout, f"{local}/{MANIFEST}", f"  error: {message}"), r.stdout


def _under(report: str, path: str, line: str) -> bool:
    """Whether verify's text ``report`` has ``line`` among the findings under ``path``'s header."""
    lines = report.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith(f"{path}: ")), None)
    if start is None:
        return False
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return line in lines[start + 1:end]


def test_verify_without_a_manifest_is_as_before(s3, logdir) -> None:
    env, tmp, fs = s3
    prefix = publish(env, fs, logdir, "nomanifest")
    fs.delete_file(f"{prefix}/out/{MANIFEST}")
    fs.delete_dir(f"{prefix}/out/{PARTITIONS[1]}")
    r = kseg(env, "verify", f"s3://{prefix}/out")
    assert r.returncode == 0 and MANIFEST not in r.stdout, r.stdout + r.stderr


# --------------------------------------------------------------------------- the store failing


# --------------------------------------------------------------------------- kseg spark's staging


class _NoDeletes:
    """The store failing to delete (a pyarrow filesystem otherwise)."""

    def __init__(self, fs):
        self._fs = fs

    def __getattr__(self, name):
        return getattr(self._fs, name)

    def delete_dir(self, *a):
        raise OSError("AWS Error NETWORK_CONNECTION: Connection refused")

    delete_file = delete_dir


@pytest.mark.parametrize("deletes", [True, False], ids=["store down", "store up"])
def test_spark_staging_left_is_named(deletes, s3_env, object_store, monkeypatch) -> None:
    """``kseg spark`` writers (``kseg.ops.staging``): a task failing after others uploaded under the staging prefix;
    when the prefix cannot be removed, the one error line names it and how to remove it."""
    from kseg import storage
    from kseg.errors import InputError, OutputError
    from kseg.ops.staging import open_stage, publishing

    fs = object_store.fs()
    fs.create_dir("kseg-test")
    fs.delete_dir_contents("kseg-test/spark-staging", missing_dir_ok=True)
    out = storage.as_path("s3://kseg-test/spark-staging/out")
    with pytest.raises(InputError) as raised:
        stage = open_stage([], out, force=False)
        with publishing(str(out)):
            with fs.open_output_stream(storage.as_path(f"{stage.where}/t-0/00000000000000000000.log").key) as f:
                f.write(b"uploaded by a task")
            if deletes:
                real = storage.filesystem
                monkeypatch.setattr(storage, "filesystem", lambda scheme: _NoDeletes(real(scheme)))
            raise InputError("task failed (test)", file="/in/t-1")
    monkeypatch.undo()
    left = keys(fs, "kseg-test/spark-staging")
    if not deletes:
        assert left == {} and not isinstance(raised.value, OutputError) and str(raised.value) == "/in/t-1: task failed (test)"
        return
    [staging] = {k.split("/")[0] for k in left}
    url = f"s3://kseg-test/spark-staging/{staging}/"
    assert str(raised.value) == (
        f"s3://kseg-test/spark-staging/out: /in/t-1: task failed (test); left: {url} (staging objects); "
        f"remove them with: aws s3 rm --recursive --endpoint-url {s3_env['AWS_ENDPOINT_URL_S3']} {url}")
    fs.delete_dir(url[len("s3://"):])


def test_damage_skipped_is_published_as_locally(s3, tmp_path) -> None:
    """``--on-damage skip`` ends with exit 1 and the output in place locally; to s3:// the same:
    published with its manifest, the summary line (naming the damage) after it."""
    env, tmp, fs = s3
    part = tmp_path / "in" / "v2-none-0"
    shutil.copytree(FIXTURES / "v2-none-0", part)
    log = part / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[70] ^= 0xFF  # inside the first batch: its CRC no longer matches
    log.write_bytes(bytes(data))
    local = kseg(env, "up-convert", part, "-o", tmp_path / "local", "--to-magic", "2", "--on-damage", "skip")
    prefix = "kseg-test/publish-damaged"
    fs.delete_dir_contents(prefix, missing_dir_ok=True)
    r = kseg(env, "up-convert", part, "-o", f"s3://{prefix}/out", "--to-magic", "2", "--on-damage", "skip")
    assert r.returncode == local.returncode == 1, r.stderr
    assert r.stderr.replace(f"s3://{prefix}/out", str(tmp_path / "local")) == local.stderr
    there = keys(fs, f"{prefix}/out")
    assert set(there) - {MANIFEST} == {p.name for p in (tmp_path / "local").iterdir()}
    assert kseg(env, "verify", f"s3://{prefix}/out").returncode == 0
