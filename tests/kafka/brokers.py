"""Real Apache Kafka releases on loopback, for comparing kseg with Kafka itself.

Everything comes from Maven Central through ``mvn`` (the jars of one release,
as listed by ``oracle/kafka-<release>/pom.xml``) into ``.cache/kafka/<release>/lib``;
nothing is downloaded from anywhere else.

* :func:`fetch` copies a release's jars into the cache (idempotent: a stamp
  file records the pom it was fetched for).
* :class:`Broker` runs one broker in its own temporary folder on free ports:
  a single combined KRaft node for 4.x (storage formatted first, as
  ``kafka-storage.sh format`` does), ZooKeeper plus a broker for 2.8, 3.6 and 3.9
  (``inter.broker.protocol.version=2.8`` so topics may keep the old message
  formats; 3.9 as a KRaft node where asked, ``kraft=True``: the admin-tool scenario).
  :meth:`Broker.stop` shuts down cleanly (SIGTERM, then SIGKILL).
* :func:`dump_log_segments` runs the release's own ``DumpLogSegments`` the way
  ``kafka-dump-log.sh`` does and returns its exit code, stdout and stderr.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ORACLE = REPO / "oracle"
CACHE = Path(os.environ.get("KSEG_KAFKA_CACHE", REPO / ".cache" / "kafka"))

#: release name -> (version, DumpLogSegments main class); oldest first
RELEASES: dict[str, tuple[str, str]] = {
    "2.8": ("2.8.2", "kafka.tools.DumpLogSegments"),
    "3.6": ("3.6.2", "kafka.tools.DumpLogSegments"),
    "3.9": ("3.9.2", "kafka.tools.DumpLogSegments"),
    "4.0": ("4.0.2", "kafka.tools.DumpLogSegments"),
    "4.1": ("4.1.2", "kafka.tools.DumpLogSegments"),
    "4.2": ("4.2.2", "kafka.tools.DumpLogSegments"),
    "4": ("4.3.1", "org.apache.kafka.tools.DumpLogSegments"),
    "4.4": ("4.4.0", "org.apache.kafka.tools.DumpLogSegments"),
}
#: version -> release name ("4.3.1" -> "4")
NAMES = {v: release for release, (v, _) in RELEASES.items()}
#: release -> its release line (``kseg dump --kafka-version``): "4" is the 4.3 line, kept under its first
#: name since its corpus (fixtures/kafka-4) and the tiered, clients and cleaner scenarios run it
LINES = {release: ".".join(v.split(".")[:2]) for release, (v, _) in RELEASES.items()}
#: the releases run with ZooKeeper (the others as a KRaft combined node); they can keep topics in the
#: old message formats (v0/v1) since the broker speaks inter.broker.protocol.version 2.8
ZOOKEEPER_RELEASES = frozenset({"2.8", "3.6", "3.9"})


#: the releases the live tests run by default (what ``pytest`` and so ``make test`` start brokers for);
#: KSEG_KAFKA_RELEASES="2.8 3.6 3.9 4.0 4.1 4.2 4 4.4" (or "all") runs the live dump tier on others too
LIVE_DEFAULT = ("3.9", "4")


def uses_zookeeper(release: str) -> bool:
    return release in ZOOKEEPER_RELEASES


#: the releases whose segment.bytes cannot go below 1 MiB (since 4.1); small test segments take the
#: internal.segment.bytes topic config there instead
INTERNAL_SEGMENT_BYTES_RELEASES = frozenset({"4.1", "4.2", "4", "4.4"})


def segment_bytes_config(release: str) -> str:
    """The topic config that sets a small segment size on the release's broker."""
    return "internal.segment.bytes" if release in INTERNAL_SEGMENT_BYTES_RELEASES else "segment.bytes"


def live_releases() -> tuple[str, ...]:
    """The releases the live dump tier runs: KSEG_KAFKA_RELEASES (names of RELEASES, or "all"), else
    LIVE_DEFAULT."""
    names = os.environ.get("KSEG_KAFKA_RELEASES", "").replace(",", " ").split()
    if not names:
        return LIVE_DEFAULT
    if names == ["all"]:
        return tuple(RELEASES)
    unknown = [n for n in names if n not in RELEASES]
    if unknown:
        raise ValueError(f"KSEG_KAFKA_RELEASES: unknown release(s) {', '.join(unknown)}; known: {', '.join(RELEASES)}")
    return tuple(names)

# kafka-run-class.sh runs tools with config/tools-log4j.properties: WARN and up on stderr.
_TOOLS_LOG4J = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""
_BROKER_LOG4J = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
"""


class KafkaUnavailable(RuntimeError):
    """Java, Maven or the release's jars are not available on this machine."""


def version(release: str) -> str:
    return RELEASES[release][0]


def java_available() -> str | None:
    """None when ``java`` and ``mvn`` are both on PATH, else why not."""
    missing = [tool for tool in ("java", "mvn") if shutil.which(tool) is None]
    return f"{' and '.join(missing)} not on PATH" if missing else None


def unavailable(*releases: str) -> str | None:
    """None when the releases' brokers can run here (java, mvn, the jars fetched), else why not in
    one line: what the live modules skip with."""
    why = java_available()
    if why is None:
        try:
            for release in releases or live_releases():
                fetch(release)
        except KafkaUnavailable as exc:
            why = str(exc).splitlines()[0]
    return why


def fetch(release: str) -> Path:
    """The folder of the release's jars, copied there by Maven on first use (by one test process
    at a time: make test runs the live tier's modules side by side)."""
    (CACHE / release).mkdir(parents=True, exist_ok=True)
    with open(CACHE / release / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _fetch(release)


def _fetch(release: str) -> Path:
    pom = ORACLE / f"kafka-{release}" / "pom.xml"
    lib = CACHE / release / "lib"
    stamp = CACHE / release / "fetched"
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest and lib.is_dir():
        return lib
    why = java_available()
    if why:
        raise KafkaUnavailable(why)
    shutil.rmtree(lib, ignore_errors=True)
    proc = subprocess.run(
        ["mvn", "-q", "-B", "-f", str(pom), "dependency:copy-dependencies", f"-DoutputDirectory={lib}"],
        capture_output=True, text=True)
    if proc.returncode != 0 or not any(lib.glob("kafka_2.13-*.jar")):
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise KafkaUnavailable(f"mvn could not fetch Kafka {version(release)}:\n{tail}")
    (CACHE / release / "tools-log4j.properties").write_text(_TOOLS_LOG4J)
    stamp.write_text(digest)
    return lib


#: the JVM options kafka-run-class.sh gives a tool (KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS defaults)
KAFKA_RUN_CLASS_OPTS = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                        "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                        "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
#: quicker start-up for the many short runs of the tests (output is the same); no hsperfdata file,
#: whose "Cannot use file /tmp/hsperfdata_root/N because it is locked" warning lands on stdout
QUICK_START_OPTS = ["-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"]


def _java(release: str, main: str, *args: str, log4j: Path | None = None,
          jvm_opts: list[str] | None = None) -> list[str]:
    lib = fetch(release)
    log4j = log4j or CACHE / release / "tools-log4j.properties"
    return ["java", *(QUICK_START_OPTS if jvm_opts is None else jvm_opts),
            f"-Dlog4j.configuration=file:{log4j}", "-cp", f"{lib}/*", main, *args]


def dump_log_segments_command(release: str, *args: str, as_kafka_run_class: bool = False) -> list[str]:
    """The command line of ``kafka-dump-log.sh ARGS`` for the release (its JVM options if asked)."""
    return _java(release, RELEASES[release][1], *args,
                 jvm_opts=KAFKA_RUN_CLASS_OPTS if as_kafka_run_class else None)


def dump_log_segments(release: str, *args: str, cwd: Path | None = None) -> tuple[int, bytes, bytes]:
    """Run the release's DumpLogSegments (``kafka-dump-log.sh ARGS``)."""
    proc = subprocess.run(dump_log_segments_command(release, *args), capture_output=True, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _properties(values: dict[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


#: a broker log line that says the broker is in trouble
_TROUBLE = re.compile(r"\] ERROR |KafkaStorageException|offline")


def log_trouble(text: str) -> list[str]:
    """The lines of a broker's log (``kafka.out``) that say it is in trouble, but for the race of a
    combined KRaft node's start: its controller registration may reach the controller before that
    is active, which logs it as an ERROR with a NotControllerException on the next line, and the
    node registers again at once."""
    lines = text.splitlines()
    return [line for i, line in enumerate(lines) if _TROUBLE.search(line)
            and not ("apiKey=CONTROLLER_REGISTRATION" in line and i + 1 < len(lines)
                     and "NotControllerException" in lines[i + 1])]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no {path})"


@dataclass
class Broker:
    """One broker of ``release`` in ``workdir`` (a fresh folder), on loopback."""

    release: str
    workdir: Path
    extra: dict[str, object] = field(default_factory=dict)
    #: more listeners of a KRaft node: name -> security protocol (each on a free port, :attr:`ports`)
    more_listeners: dict[str, str] = field(default_factory=dict)
    #: more ``kafka-storage format`` arguments of a KRaft node (``--add-scram ...``)
    format_args: list[str] = field(default_factory=list)
    #: a KRaft node formatted ``--standalone`` (kraft.version 1: voters added and removed at run time)
    #: instead of a static ``controller.quorum.voters``
    dynamic_quorum: bool = False
    #: a release of ZOOKEEPER_RELEASES run as a KRaft combined node all the same (3.9: the admin-tool scenario)
    kraft: bool = False
    port: int = 0
    controller_port: int = 0
    cluster_id: str = ""
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)

    @property
    def zookeeper(self) -> bool:
        return uses_zookeeper(self.release) and not self.kraft

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "data"

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        out = open(self.workdir / f"{name}.out", "wb")
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=self.workdir,
                                start_new_session=True)
        out.close()
        self.procs.append((name, proc))
        return proc

    def logs(self) -> str:
        """The tail of each process's output, for a failure report."""
        return "\n".join(f"--- {name}.out (last lines)\n{_tail(self.workdir / f'{name}.out')}"
                         for name, _ in self.procs)

    def start(self, timeout: float = 120.0) -> "Broker":
        self.workdir.mkdir(parents=True, exist_ok=True)
        log4j = self.workdir / "log4j.properties"
        log4j.write_text(_BROKER_LOG4J)
        self.port = free_port()
        config: dict[str, object] = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": self.log_dir,
            "num.partitions": 1,
            "offsets.topic.replication.factor": 1,
            "offsets.topic.num.partitions": 1,
            "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 1,
            "group.initial.rebalance.delay.ms": 0,
            "auto.create.topics.enable": "false",
            "log.cleaner.enable": "false",
            "log.retention.check.interval.ms": 3_600_000,
        }
        if self.zookeeper:
            zk_port = free_port()
            (self.workdir / "zk").mkdir(exist_ok=True)
            self._spawn("zookeeper", _java(self.release, "org.apache.zookeeper.server.ZooKeeperServerMain",
                                           str(zk_port), str(self.workdir / "zk"), log4j=log4j))
            self._wait_port(zk_port, timeout)
            config |= {"broker.id": 0, "zookeeper.connect": f"127.0.0.1:{zk_port}",
                       "inter.broker.protocol.version": "2.8"}
        else:
            controller = self.controller_port = free_port()
            self.ports = {name: free_port() for name in self.more_listeners}
            listeners = [f"PLAINTEXT://127.0.0.1:{self.port}",
                         *(f"{name}://127.0.0.1:{port}" for name, port in self.ports.items())]
            protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT",
                         *(f"{name}:{proto}" for name, proto in self.more_listeners.items())]
            config |= {
                "process.roles": "broker,controller",
                "node.id": 1,
                **({"controller.quorum.bootstrap.servers": f"127.0.0.1:{controller}"} if self.dynamic_quorum
                   else {"controller.quorum.voters": f"1@127.0.0.1:{controller}"}),
                "listeners": ",".join([*listeners, f"CONTROLLER://127.0.0.1:{controller}"]),
                "advertised.listeners": ",".join(listeners),
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": ",".join(protocols),
                "share.coordinator.state.topic.replication.factor": 1,
                "share.coordinator.state.topic.min.isr": 1,
                # a metadata snapshot (__cluster_metadata-0/*.checkpoint) soon, for the dump checks
                "metadata.log.max.record.bytes.between.snapshots": 2048,
            }
        config |= self.extra
        server = self.workdir / "server.properties"
        server.write_text(_properties(config))
        if not self.zookeeper and not (self.log_dir / "meta.properties").exists():
            # a Kafka Uuid in URL-safe base64 may start with "-"; the "=" form keeps the argument
            # parser from reading such an id as an option
            cluster_id = self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            fmt = subprocess.run(_java(self.release, "kafka.tools.StorageTool", "format",
                                       f"--cluster-id={cluster_id}", f"--config={server}",
                                       *(["--standalone"] if self.dynamic_quorum else []), *self.format_args,
                                       log4j=log4j),
                                 capture_output=True, text=True)
            if fmt.returncode != 0:
                raise RuntimeError(f"kafka-storage format failed:\n{fmt.stdout}{fmt.stderr}")
        self._spawn("kafka", _java(self.release, "kafka.Kafka", str(server), log4j=log4j))
        self._wait_ready(timeout)
        return self

    def _check_alive(self) -> None:
        for name, proc in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}\n{self.logs()}")

    def _wait_port(self, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"nothing listens on {port} after {timeout}s\n{self.logs()}")

    def _wait_ready(self, timeout: float) -> None:
        """Socket open and a metadata request answered with this broker in it."""
        from kafka import KafkaAdminClient

        deadline = time.monotonic() + timeout
        self._wait_port(self.port, timeout)
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
                try:
                    # a metadata request (kafka-python's DescribeCluster fails on 2.8's v0 answers)
                    admin.list_topics()
                    if admin._client.cluster.brokers():
                        return
                finally:
                    admin.close()
            except Exception:  # noqa: BLE001 - not ready yet, whatever the reason
                time.sleep(0.5)
        raise TimeoutError(f"broker {self.bootstrap} not ready after {timeout}s\n{self.logs()}")

    def stop(self, timeout: float = 60.0) -> None:
        """Clean shutdown, newest process first (broker before ZooKeeper)."""
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def __enter__(self) -> "Broker":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
