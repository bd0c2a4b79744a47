"""``gs://`` and ``abfs://``/``az://`` log directories: kseg against real emulators on loopback
(fake-gcs-server for Google Cloud Storage, Azurite for Azure Blob Storage), started and stopped
by this module, compared with the local copy as ``test_object_store.py`` does for S3.

Every command's output over ``gs://bucket/logdir`` or ``abfs://container/logdir`` must be its
output over ``fixtures/logdir`` with the one prefix swapped; a writing command's objects must be
byte for byte its local output. The fixtures are uploaded one object per file with no folder
marker objects, as other tools leave them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")

from click.testing import CliRunner  # noqa: E402
from servers import Azurite, FakeGcs, ServerUnavailable, check_atomic_write  # noqa: E402

from kseg import storage  # noqa: E402
from kseg.cli.main import main  # noqa: E402
from kseg.errors import InputError  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logdir"
# Every variable kseg reads for any store: cleared around each test, then the store's own set.
STORE_VARS = ("STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS",
              "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT",
              "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN")


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def same_with_prefix(remote: str, local: str, url: str) -> None:
    assert remote.replace(url, str(FIXTURES)) == local
    assert url in remote or not local


@dataclass
class Store:
    scheme: str  # as URLs spell it
    server: Any
    logdir: str  # fixtures/logdir's URL there

    def url(self, key: str) -> str:
        return f"{self.scheme}://{key}"


@pytest.fixture(scope="module", params=["gs", "abfs"])
def store(request, tmp_path_factory):
    """The emulator for one scheme, running for this module's tests of that scheme, with
    ``fixtures/logdir`` uploaded."""
    kind = FakeGcs if request.param == "gs" else Azurite
    server = kind(tmp_path_factory.mktemp(request.param))
    try:
        server.__enter__()
    except ServerUnavailable as e:
        pytest.skip(f"no {request.param}:// emulator: {e}")
    try:
        yield Store(request.param, server, server.upload(FIXTURES, "kseg-test", "logdir"))
    finally:
        server.__exit__()


@pytest.fixture
def env(store, monkeypatch):
    """The store's variables (and no other store's) for one test."""
    for k in STORE_VARS:
        monkeypatch.delenv(k, raising=False)
    for k, v in store.server.env.items():
        monkeypatch.setenv(k, v)
    return store


# --------------------------------------------------------------------------- paths, no server


def test_url_forms(monkeypatch):
    for scheme in ("gs", "gcs", "abfs", "abfss", "az"):
        r = storage.as_path(f"{scheme}://bucket//logdir/t-0/00000000000000000000.log")
        assert isinstance(r, storage.RemotePath) and storage.is_remote(f"{scheme}://b/k")
        assert str(r) == f"{scheme}://bucket/logdir/t-0/00000000000000000000.log"
        assert str(r.parent.parent) == f"{scheme}://bucket/logdir"
        assert storage.as_path(Path(f"{scheme}://bucket/k")) == storage.as_path(f"{scheme}://bucket/k")
    for bad, says in [("gs://", "needs a bucket"), ("abfs://", "needs a container"),
                      ("abfs://c@acct.dfs.core.windows.net/x", "AZURE_STORAGE_ACCOUNT_NAME"),
                      ("hdfs://namenode:8020/logs", "Hadoop installation"), ("ftp://h/x", "unsupported")]:
        with pytest.raises(InputError, match=says):
            storage.as_path(bad)
    r = cli("verify", "hdfs://namenode:8020/logs")
    assert r.exit_code == 2 and "hdfs:// is not supported" in r.stderr and len(r.stderr.splitlines()) == 1
    # No Azure account anywhere: one line, exit 2, before any request.
    for k in STORE_VARS:
        monkeypatch.delenv(k, raising=False)
    r = cli("verify", "az://container/logdir")
    assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "paths need a storage account" in r.stderr and "AZURE_STORAGE_CONNECTION_STRING" in r.stderr


def test_azure_settings_from_the_standard_variables(monkeypatch):
    for k in STORE_VARS:
        monkeypatch.delenv(k, raising=False)
    assert storage.azure_settings() == {}
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    monkeypatch.setenv("AZURE_STORAGE_SAS_TOKEN", "?sv=1&sig=x")
    assert storage.azure_settings() == {"account_name": "acct", "sas_token": "?sv=1&sig=x"}
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING",
                       "DefaultEndpointsProtocol=https;AccountName=other;AccountKey=k==;"
                       "BlobEndpoint=https://other.blob.core.chinacloudapi.cn/")
    assert storage.azure_settings() == {
        "account_name": "other", "account_key": "k==", "blob_storage_scheme": "https", "dfs_storage_scheme": "https",
        "blob_storage_authority": ".blob.core.chinacloudapi.cn", "dfs_storage_authority": ".dfs.core.chinacloudapi.cn"}
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true")
    dev = storage.azure_settings()
    assert (dev["account_name"], dev["blob_storage_authority"], dev["blob_storage_scheme"]) == (
        "devstoreaccount1", "127.0.0.1:10000", "http")


def test_gcs_settings_from_the_standard_variables(monkeypatch):
    for k in STORE_VARS:
        monkeypatch.delenv(k, raising=False)
    assert set(storage.gcs_settings()) == {"retry_time_limit"}  # Google's default credentials
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "localhost:4443")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    s = storage.gcs_settings()
    assert (s["anonymous"], s["scheme"], s["endpoint_override"], s["project_id"]) == (True, "http", "localhost:4443",
                                                                                       "p")


# --------------------------------------------------------------------------- against the emulators


def test_listing_and_ranged_reads(env):
    root = storage.as_path(env.logdir)
    assert root.is_dir() and not root.is_file()
    assert sorted(p.name for p in root.iterdir()) == sorted(p.name for p in FIXTURES.iterdir())
    assert all(p.is_dir() for p in root.iterdir() if (FIXTURES / p.name).is_dir())
    log = root / "v2-headers-0" / "00000000000000000000.log"
    data = (FIXTURES / "v2-headers-0" / "00000000000000000000.log").read_bytes()
    assert log.stat().st_size == len(data) and log.read_bytes() == data
    with log.open("rb") as f:
        f.seek(10)
        assert f.read(20) == data[10:30]
    assert not (root / "nope").exists()
    with pytest.raises(FileNotFoundError):
        list((root / "nope").iterdir())


@pytest.mark.parametrize("args", [("-v",), ("--format", "json")])
def test_verify_same_as_local(env, args):
    remote, local = cli("verify", *args, env.logdir), cli("verify", *args, FIXTURES)
    assert remote.exit_code == local.exit_code
    same_with_prefix(remote.stdout, local.stdout, env.logdir)


@pytest.mark.parametrize("args", [(), ("-r", "--format", "jsonl", "--payload", "base64")])
def test_dump_same_as_local(env, args):
    remote, local = cli("dump", *args, env.logdir), cli("dump", *args, FIXTURES)
    assert remote.exit_code == local.exit_code
    same_with_prefix(remote.stdout, local.stdout, env.logdir)


def test_single_files_and_missing_objects(env):
    for name in ("v2-txn-0/00000000000000000000.log", "v2-txn-0/00000000000000000005.txnindex"):
        remote, local = cli("dump", f"{env.logdir}/{name}"), cli("dump", FIXTURES / name)
        assert remote.exit_code == local.exit_code == 0
        same_with_prefix(remote.stdout, local.stdout, env.logdir)
    missing = cli("verify", f"{env.logdir}/nope")
    assert missing.exit_code == 2 and "no such file or directory" in missing.stderr


def test_atomic_write(env):
    check_atomic_write(storage.as_path(env.url("kseg-test/writes/out.log")))


def _tree(fs: Any, key: str) -> dict[str, bytes]:
    from pyarrow import fs as pafs

    out = {}
    for info in fs.get_file_info(pafs.FileSelector(key, recursive=True)):
        if info.type == pafs.FileType.File:
            with fs.open_input_file(info.path) as f:
                out[info.path[len(key) + 1:]] = f.read()
    return out


def test_up_convert_to_objects_byte_identical(env, tmp_path):
    # Azure: one partition, as pyarrow's AzureFileSystem.delete_file (which each object's
    # temporary costs) stalls for seconds at a time against Azurite, releasing the lease of
    # the blob it just deleted again and again (see docs/guides/spark-and-object-storage.md).
    part = "" if env.scheme == "gs" else "v2-headers-0"
    src, local_src = (f"{env.logdir}/{part}", FIXTURES / part) if part else (env.logdir, FIXTURES)
    out = env.url("kseg-test/out-up-convert")
    args = ("up-convert", "--to-magic", "2")
    remote = cli(*args, src, "-o", out)
    local = cli(*args, local_src, "-o", tmp_path / "local")
    assert remote.exit_code == local.exit_code == 0, remote.stderr
    assert remote.stderr.replace(out, str(tmp_path / "local")) == local.stderr
    want = {str(p.relative_to(tmp_path / "local")): p.read_bytes()
            for p in sorted((tmp_path / "local").rglob("*")) if p.is_file()}
    got = _tree(env.server.fs(), "kseg-test/out-up-convert")
    assert ".kseg-manifest.json" in got  # written last: the output is complete (docs/guides/robustness.md)
    assert {k: v for k, v in got.items() if k != ".kseg-manifest.json"} == want
    assert cli(*args, src, "-o", out).exit_code == 2  # existing output: refused without --force
    if env.scheme != "gs":
        return  # --force's store-independent part is test_object_store's; Azure deletes stall (above)
    # Replaced whole with --force (stale objects go).
    stale = storage.as_path(f"{out}/stale-0/00000000000000000000.log")
    stale.write_bytes(b"old")
    assert cli(*args, src, "-o", out, "--force").exit_code == 0
    assert not stale.exists()
    got = _tree(env.server.fs(), "kseg-test/out-up-convert")
    assert {k: v for k, v in got.items() if k != ".kseg-manifest.json"} == want
