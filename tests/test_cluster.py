"""kseg on a real Spark standalone cluster: a master and two workers on loopback, started from
the installed PySpark's jars by ``servers.spark_cluster``; each worker runs its executors'
Python with this interpreter.

``kseg spark`` runs as its own process (the driver), as a user would run it, and must print
what local mode and the plain commands print, over local paths and over ``s3://``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "logdir"
TIMEOUT = 300
CLUSTER_CONF = ["--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
                "--conf", "spark.cores.max=2"]


def kseg(*args, env: dict[str, str] | None = None, cluster=None) -> subprocess.CompletedProcess:
    """Run the kseg command line in a child process (a driver of its own)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    full.update(env or {})
    full.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()",
           *[str(a) for a in args]]
    try:
        p = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO)
    except subprocess.TimeoutExpired:
        if cluster is not None:
            cluster.print_logs()
        raise
    if p.returncode not in (0, 1) and cluster is not None:
        sys.stderr.write(p.stderr[-5000:])
        cluster.print_logs()
    return p


def on_cluster(cluster, command: str, *args, env=None) -> subprocess.CompletedProcess:
    return kseg("spark", command, "--master", cluster.url, *CLUSTER_CONF, *args, env=env, cluster=cluster)


def executors_started(cluster) -> dict[str, int]:
    """Executor folders each worker made (app-*/<executor id>), by worker."""
    return {w.name: len(list(w.glob("app-*/*"))) for w in sorted(cluster.root.glob("worker-*")) if w.is_dir()}


def test_verify_on_the_cluster_is_local_mode_and_plain(spark_cluster):
    plain = kseg("verify", "-v", FIXTURES)
    local = kseg("spark", "verify", "-v", "--master", "local[2]", FIXTURES)
    report = spark_cluster.root / "report.json"
    dist = on_cluster(spark_cluster, "verify", "-v", "--report", report, FIXTURES)
    assert plain.returncode == local.returncode == dist.returncode == 0, dist.stderr[-3000:]
    assert dist.stdout == local.stdout == plain.stdout
    assert json.loads(report.read_text())["ok"] is True
    # The work ran in executors on both workers, not in the driver.
    assert all(n >= 1 for n in executors_started(spark_cluster).values()), executors_started(spark_cluster)


def test_dump_on_the_cluster(spark_cluster):
    args = ("-r", "--format", "jsonl", "--payload", "base64")
    plain = kseg("dump", *args, FIXTURES)
    dist = on_cluster(spark_cluster, "dump", *args, FIXTURES)
    assert plain.returncode == dist.returncode == 0, dist.stderr[-3000:]
    assert dist.stdout == plain.stdout


def test_verify_and_dump_objects_on_the_cluster(spark_cluster, object_store, s3_logdir):
    """Executors read the objects themselves, with the credentials of their workers' environment."""
    env = object_store.env
    plain = kseg("verify", "-v", FIXTURES)
    dist = on_cluster(spark_cluster, "verify", "-v", s3_logdir, env=env)
    assert plain.returncode == dist.returncode == 0, dist.stderr[-3000:]
    assert dist.stdout.replace(s3_logdir, str(FIXTURES)) == plain.stdout
    args = ("-r", "--format", "jsonl")
    plain = kseg("dump", *args, FIXTURES)
    dist = on_cluster(spark_cluster, "dump", *args, s3_logdir, env=env)
    assert plain.returncode == dist.returncode == 0, dist.stderr[-3000:]
    assert dist.stdout.replace(s3_logdir, str(FIXTURES)) == plain.stdout


def test_up_convert_objects_to_objects_on_the_cluster(spark_cluster, object_store, s3_logdir, tmp_path):
    """Executors in the workers' processes write the output's objects (under a staging prefix the
    driver copies into place): the objects are the plain command's local files, byte for byte."""
    from pyarrow import fs as pafs

    env = object_store.env
    args = ("--to-magic", "2", "--codec", "zstd")
    out = "s3://kseg-test/cluster-up-convert"
    plain = kseg("up-convert", *args, FIXTURES, "-o", tmp_path / "local")
    dist = on_cluster(spark_cluster, "up-convert", *args, s3_logdir, "-o", out, env=env)
    assert plain.returncode == dist.returncode == 0, dist.stderr[-3000:]
    fs = object_store.fs()
    back = tmp_path / "back"
    back.mkdir()
    pafs.copy_files(out[len("s3://"):], str(back), source_filesystem=fs)
    tree = {str(p.relative_to(back)): p.read_bytes() for p in sorted(back.rglob("*")) if p.is_file()}
    assert tree.pop(".kseg-manifest.json", None) is not None  # written last: the output is complete
    local = tmp_path / "local"
    assert tree == {str(p.relative_to(local)): p.read_bytes() for p in sorted(local.rglob("*")) if p.is_file()}
    staged = [i.path for i in fs.get_file_info(pafs.FileSelector("kseg-test", recursive=True))
              if "kseg-tmp" in i.path]
    assert not staged
