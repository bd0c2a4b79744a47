"""A SparkSession that just works for kseg: local or cluster, with sane defaults.

Defaults are applied only where the user has not said otherwise (a ``--conf``,
``spark-defaults.conf``, an environment variable or ``spark-submit`` flags):

* master ``local[*]``, unless the process runs under ``spark-submit`` (which
  chose the master already);
* in local mode, the executors' Python is the current interpreter
  (``spark.pyspark.python`` / ``PYSPARK_PYTHON``), and the driver binds to the
  loopback interface (a laptop's hostname often resolves to an unreachable
  address);
* no web UI and no console progress bar for command-line runs (they would
  write to the terminal the results go to), Spark's own logging at ERROR;
* Python data source filter pushdown on (``kseg`` pushes offset, time, topic
  and partition filters), and ``format("kseg")`` registered.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from typing import Any, Iterable

import kseg.ops.dump_split  # noqa: F401 - warmed in the workers with this module (_warm_worker)
import kseg.ops.verify  # noqa: F401 - idem
import kseg.render.dump  # noqa: F401 - idem (dump's renderers)
import kseg.spark.tasks  # noqa: F401 - idem
from kseg.spark.source import register

DEFAULT_MASTER = "local[*]"
# Set by the JVM when it starts the Python driver (spark-submit, pyspark shell).
_UNDER_SPARK_SUBMIT = "PYSPARK_GATEWAY_PORT"

_LOG4J = """\
rootLogger.level = error
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def is_local(master: str | None) -> bool:
    return master is None or master.startswith("local")


def _log4j_file() -> str:
    path = os.path.join(tempfile.gettempdir(), f"kseg-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}.properties")
    try:
        with open(path) as f:
            if f.read() == _LOG4J:
                return path
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(_LOG4J)
    os.replace(tmp, path)
    return path


def session_defaults(master: str | None, user_conf: dict[str, str], *, quiet: bool = True) -> dict[str, str]:
    """The configuration kseg adds to ``user_conf`` (which always wins)."""
    out: dict[str, str] = {}
    env = os.environ

    def default(key: str, value: str) -> None:
        if key not in user_conf:
            out[key] = value

    under_submit = _UNDER_SPARK_SUBMIT in env
    effective_master = user_conf.get("spark.master", master)
    if effective_master is None and not under_submit:
        effective_master = DEFAULT_MASTER
    if effective_master is not None:
        out["spark.master"] = effective_master
    if is_local(effective_master) and not under_submit:
        if "PYSPARK_PYTHON" not in env:
            default("spark.pyspark.python", sys.executable)
        if "SPARK_LOCAL_IP" not in env:
            default("spark.driver.bindAddress", "127.0.0.1")
            default("spark.driver.host", "127.0.0.1")
    if quiet:
        default("spark.ui.enabled", "false")
        default("spark.ui.showConsoleProgress", "false")
        if not under_submit and "spark.driver.extraJavaOptions" not in user_conf:
            out["spark.driver.extraJavaOptions"] = f"-Dlog4j.configurationFile=file:{_log4j_file()}"
    default("spark.sql.python.filterPushdown.enabled", "true")
    # Executors on other machines reach the same object store (s3://, gs://, abfs:// paths);
    # credentials stay with each node's own environment or instance role, never in the job's
    # configuration: only where the store is and which account or project it is.
    for var in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT",
                "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"):
        if env.get(var):
            default(f"spark.executorEnv.{var}", env[var])
    return out


class Started:
    """How long the session took to start (``seconds``; 0 when one was running already) and,
    of that, how long starting the executors' Python workers took (``workers``)."""

    seconds: float = 0.0
    workers: float = 0.0
    log: str | None = None  # the JVM log of the session this process started (quiet runs)


def _warm_worker(_: int) -> None:
    # Its module brings what a task needs (kseg.spark.tasks, and with it kseg's decoders, codecs
    # and checks): unpickling this function in a fresh worker imports them.
    time.sleep(0.2)  # so that each task slot starts its own worker


def warm_up(spark: Any) -> float:
    """Start a Python worker in every task slot and import kseg there; returns the seconds spent."""
    t0 = time.perf_counter()
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)
    sc.setJobDescription("kseg: start Python workers")
    sc.parallelize(range(n), n).foreach(_warm_worker)
    sc.setJobDescription(None)
    return time.perf_counter() - t0


SPARK_LOGS_KEPT = 10  # a run's JVM log, and those of the runs before it


def spark_log_dir() -> str:
    """The folder of the JVM logs of quiet runs (one file per run), the user's own."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return os.path.join(tempfile.gettempdir(), f"kseg-spark-{uid}")


def new_spark_log_path() -> str:
    """A file of its own for this run's JVM console output (its start-up warnings, errors),
    named by the time and the process; the oldest logs beyond ``SPARK_LOGS_KEPT`` are removed
    (a JVM still writing to one keeps writing to it: the name goes, not the file)."""
    folder = spark_log_dir()
    os.makedirs(folder, mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = os.path.join(folder, f"{stamp}-{os.getpid()}.log")
    try:
        old = sorted(n for n in os.listdir(folder) if n.endswith(".log"))
    except OSError:
        old = []
    for name in old[:max(0, len(old) - (SPARK_LOGS_KEPT - 1))]:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    return path


def _launch_quiet_gateway(app_name: str, settings: dict[str, str]) -> None:
    """Start the JVM the way PySpark would, but in a session of its own (so Ctrl-C reaches only
    kseg, which cancels the jobs, and not the JVM's Python workers, which would each print a
    traceback) with its console output in a log of its own (``new_spark_log_path()``, named in
    ``Started.log``) rather than on the terminal.
    py4j's own logging is silenced: an interrupted call is kseg's to report."""
    import logging

    try:
        from pyspark import SparkConf, SparkContext
        from pyspark.java_gateway import launch_gateway
    except ImportError:  # pragma: no cover - depends on the PySpark version
        return
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    # and what it logs through the root logger (an interrupted call, with its traceback)
    logging.getLogger().addFilter(lambda record: "py4j" not in record.pathname.split(os.sep))
    if getattr(SparkContext, "_gateway", None) is not None:
        return
    conf = SparkConf(loadDefaults=False)
    conf.setAppName(app_name)
    for k, v in settings.items():
        conf.set(k, v)
    Started.log = new_spark_log_path()
    log = open(Started.log, "ab")
    import pyspark.java_gateway as java_gateway

    started: list[Any] = []  # the JVM, in a session of its own: a signal to kseg does not reach it
    popen = java_gateway.Popen
    java_gateway.Popen = lambda *a, **k: started.append(popen(*a, **k)) or started[-1]
    try:
        gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True, "stdout": log, "stderr": log})
    except TypeError:  # pragma: no cover - a PySpark without popen_kwargs
        return
    except BaseException:
        # Ctrl-C, SIGTERM or a failure before the JVM answered: it would not see kseg go
        # (it watches its stdin only once started), so it is stopped here.
        for proc in started:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except OSError:
                pass
        raise
    finally:
        java_gateway.Popen = popen
        log.close()  # the JVM holds its own descriptor
    if started:
        import atexit

        atexit.register(_end_group, started[-1])
    SparkContext._ensure_initialized(gateway=gateway)


def _end_group(proc: Any) -> None:
    """At kseg's exit, however it ends (Ctrl-C, SIGTERM, an error): the JVM's process group,
    which holds its Python workers, is told to stop now, rather than when the JVM notices
    its stdin close. ``poll()`` first: a JVM already gone is reaped, never its reused pid signalled."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except OSError:
            pass


def get_session(master: str | None = None, conf: dict[str, str] | Iterable[tuple[str, str]] | None = None,
                *, app_name: str = "kseg", quiet: bool = True, warm: bool = False) -> Any:
    """Start (or reuse) a SparkSession with kseg's defaults and ``format("kseg")`` registered.

    ``master`` None: ``local[*]``, or what spark-submit chose. ``conf`` pairs win over
    every default here. ``warm``: also start the executors' Python workers now (counted
    in ``Started.seconds``), so that the first job's time is the job's alone.
    """
    from pyspark.sql import SparkSession

    user = dict(conf or {})
    t0 = time.perf_counter()
    active = SparkSession.getActiveSession()
    if active is None:
        settings = session_defaults(master, user, quiet=quiet)
        settings.update(user)
        if is_local(settings.get("spark.master")) and "PYSPARK_PYTHON" not in os.environ \
                and "spark.pyspark.python" not in user:
            # Older launchers read the environment rather than the conf.
            os.environ["PYSPARK_PYTHON"] = settings.get("spark.pyspark.python", sys.executable)
        if quiet and _UNDER_SPARK_SUBMIT not in os.environ:
            _launch_quiet_gateway(app_name, settings)
        builder = SparkSession.builder.appName(app_name)
        for k, v in settings.items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        if quiet:
            spark.sparkContext.setLogLevel(os.environ.get("KSEG_SPARK_LOG_LEVEL", "ERROR"))
        Started.workers = warm_up(spark) if warm else 0.0
        Started.seconds = time.perf_counter() - t0
    else:
        spark = active
        Started.seconds = Started.workers = 0.0
        for k, v in user.items():
            try:
                spark.conf.set(k, v)
            except Exception:  # static confs cannot change on a running session
                pass
    register(spark)
    return spark
