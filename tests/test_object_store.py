"""Log directories in object storage: kseg against a real S3-compatible server (SeaweedFS on
loopback, started once per run by ``servers.object_store``), compared with the local copy.

Every command's output over ``s3://bucket/logdir`` must be its output over ``fixtures/logdir``
with the one prefix swapped; memory stays flat reading a large object.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

from click.testing import CliRunner  # noqa: E402
from servers import check_atomic_write  # noqa: E402

from kseg import storage  # noqa: E402
from kseg.cli.main import main  # noqa: E402
from kseg.errors import InputError  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "logdir"


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def same_with_prefix(remote: str, local: str, url: str, path: Path) -> None:
    assert remote.replace(url, str(path)) == local
    assert url in remote or not local


# --------------------------------------------------------------------------- paths


def test_as_path_forms(tmp_path):
    assert storage.as_path("a/b.log") == Path("a/b.log")
    assert storage.as_path(f"file://{tmp_path}/x.log") == tmp_path / "x.log"
    assert storage.as_path("file:///a%20b/c") == Path("/a b/c")
    r = storage.as_path("s3://bucket//logdir/t-0/00000000000000000000.log")
    assert isinstance(r, storage.RemotePath)
    assert str(r) == "s3://bucket/logdir/t-0/00000000000000000000.log"
    assert (r.name, r.suffix, r.parent.name, str(r.with_suffix(".index"))) == (
        "00000000000000000000.log", ".log", "t-0", "s3://bucket/logdir/t-0/00000000000000000000.index")
    assert storage.as_path(Path("s3://bucket/k")) == storage.as_path("s3://bucket/k")  # through Path() and back
    for bad in ("s3://", "hdfs://namenode/x", "file://host/x"):
        with pytest.raises(InputError):
            storage.as_path(bad)
    assert cli("verify", "ftp://b/x").exit_code == 2


def test_listing_and_ranged_reads(s3_env, s3_logdir):
    root = storage.as_path(s3_logdir)
    assert root.is_dir() and not root.is_file()
    local = sorted(p.name for p in FIXTURES.iterdir())
    assert sorted(p.name for p in root.iterdir()) == local
    log = root / "v2-headers-0" / "00000000000000000000.log"
    data = (FIXTURES / "v2-headers-0" / "00000000000000000000.log").read_bytes()
    assert log.stat().st_size == len(data) and log.read_bytes() == data
    with log.open("rb") as f:
        f.seek(10)
        assert f.read(20) == data[10:30]
    assert not (root / "nope").exists()


def test_atomic_write(s3_env, object_store):
    check_atomic_write(storage.as_path("s3://kseg-test/writes/out.log"))


def test_units_on_objects_weigh_their_bytes(s3_env, s3_logdir):
    """Units planned over objects weigh the objects' bytes (those of the local copy), so that the
    executors (processes, Spark) can balance them."""
    from kseg.ops import find, stats, verify

    plans = {  # each operation's plan, and the files a unit of it reads
        "find": (lambda root: find.plan(([root], None), find.FindOptions()), lambda u: u.files),
        "stats": (lambda root: stats.plan([root], stats.StatsOptions()), lambda u: u.segments),
        "verify": (lambda root: verify.plan([root], verify.VerifyOptions()),
                   lambda u: [] if u.kind == verify.MANIFEST_UNIT else [storage.as_path(u.path)]),  # a root reads none
    }
    for name, (plan, files_of) in plans.items():
        units = plan(s3_logdir)
        assert all(isinstance(p, storage.RemotePath) for u in units for p in files_of(u)), name
        local = [sum((FIXTURES / p.parent.name / p.name).stat().st_size for p in files_of(u)) for u in units]
        assert [u.weight for u in units] == local and sum(local) > 0, name


# --------------------------------------------------------------------------- plain commands


@pytest.mark.parametrize("args", [("-v",), ("--format", "json"), ("--quick",), ("--no-index",)])
def test_verify_same_as_local(s3_env, s3_logdir, args):
    remote, local = cli("verify", *args, s3_logdir), cli("verify", *args, FIXTURES)
    assert remote.exit_code == local.exit_code
    same_with_prefix(remote.stdout, local.stdout, s3_logdir, FIXTURES)


@pytest.mark.parametrize("args", [(), ("-r", "--format", "jsonl", "--payload", "base64"),
                                  ("-r", "--format", "kafka", "--payload", "utf8"),
                                  ("--from-offset", "5", "--to-offset", "17", "-r")])
def test_dump_same_as_local(s3_env, s3_logdir, args):
    remote, local = cli("dump", *args, s3_logdir), cli("dump", *args, FIXTURES)
    assert remote.exit_code == local.exit_code
    # --format kafka names files by their absolute path, as kafka-dump-log.sh: the URL is the object's.
    same_with_prefix(remote.stdout, local.stdout.replace(str(FIXTURES.resolve()), str(FIXTURES)), s3_logdir,
                     FIXTURES)


def test_single_files_and_companions(s3_env, s3_logdir):
    for name in ("v2-txn-0/00000000000000000000.log", "v2-txn-0/00000000000000000000.index",
                 "v2-txn-0/00000000000000000005.txnindex", "v2-txn-0/leader-epoch-checkpoint"):
        remote, local = cli("dump", f"{s3_logdir}/{name}"), cli("dump", FIXTURES / name)
        assert remote.exit_code == local.exit_code == 0
        same_with_prefix(remote.stdout, local.stdout, s3_logdir, FIXTURES)
    part = cli("verify", "-v", f"{s3_logdir}/v2-txn-0")
    assert part.stdout.replace(s3_logdir, str(FIXTURES)) == cli("verify", "-v", FIXTURES / "v2-txn-0").stdout


def test_endpoint_option_and_missing_objects(s3_env, s3_logdir, monkeypatch):
    endpoint = s3_env["AWS_ENDPOINT_URL_S3"]
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    r = cli("--s3-endpoint", endpoint, "verify", "--quick", f"{s3_logdir}/v2-headers-0")
    assert r.exit_code == 0, r.stderr
    missing = cli("verify", f"{s3_logdir}/nope")
    assert missing.exit_code == 2 and "no such file or directory" in missing.stderr


@pytest.mark.parametrize("args", [("stats", "--segments"), ("find", "--key", "k1"), ("repair", "--dry-run"),
                                  ("index", "--check"), ("txn", "--now-ms", "1800000000000"),
                                  ("compact", "--dry-run", "--now-ms", "1800000000000", "--format", "json")])
def test_other_readers_same_as_local(s3_env, s3_logdir, args):
    remote, local = cli(*args, s3_logdir), cli(*args, FIXTURES)
    assert remote.exit_code == local.exit_code, remote.stderr
    assert remote.stdout.replace(s3_logdir, str(FIXTURES)) == local.stdout  # find names no files
    assert remote.stderr.replace(s3_logdir, str(FIXTURES)) == local.stderr
    assert local.stdout


def test_state_from_objects(s3_env, object_store):
    internal = REPO / "fixtures" / "internal"
    url = object_store.upload(internal, "kseg-test", "internal")
    for args in (("state",), ("state", "--format", "json"), ("txn", "--now-ms", "1800000000000")):
        remote, local = cli(*args, url), cli(*args, internal)
        assert remote.exit_code == local.exit_code, remote.stderr
        assert remote.stdout.replace(url, str(internal)) == local.stdout and local.stdout


def test_diff_either_side_an_object(s3_env, s3_logdir):
    local = cli("diff", "--records", FIXTURES, FIXTURES)
    for a, b in ((s3_logdir, FIXTURES), (FIXTURES, s3_logdir), (s3_logdir, s3_logdir)):
        r = cli("diff", "--records", a, b)
        assert r.exit_code == local.exit_code == 0
        assert r.stdout.replace(s3_logdir, str(FIXTURES)) == local.stdout


# --------------------------------------------------------------------------- writing commands


def _download(fs, key: str, into: Path) -> dict[str, bytes]:
    from pyarrow import fs as pafs

    into.mkdir(parents=True, exist_ok=True)
    pafs.copy_files(key, str(into), source_filesystem=fs)
    got = {str(p.relative_to(into)): p.read_bytes() for p in sorted(into.rglob("*")) if p.is_file()}
    # kseg's manifest, written last, lists every other object with its size (test_publish.py checks more)
    manifest = json.loads(got.pop(".kseg-manifest.json"))
    assert {o["key"]: o["size"] for o in manifest["objects"]} == {k: len(v) for k, v in got.items()}
    return got


@pytest.mark.parametrize("args", [("up-convert", "--to-magic", "2"), ("recompress", "--codec", "lz4"),
                                  ("rebase", "--base-offset", "1000")])
def test_writing_commands_to_objects_byte_identical(s3_env, s3_logdir, object_store, tmp_path, args):
    out = f"s3://kseg-test/out-{args[0]}"
    remote = cli(*args, s3_logdir, "-o", out)
    local = cli(*args, FIXTURES, "-o", tmp_path / "local")
    assert remote.exit_code == local.exit_code == 0, remote.stderr
    assert remote.stderr.replace(out, str(tmp_path / "local")) == local.stderr
    want = {str(p.relative_to(tmp_path / "local")): p.read_bytes()
            for p in sorted((tmp_path / "local").rglob("*")) if p.is_file()}
    assert _download(object_store.fs(), out[len("s3://"):], tmp_path / "back") == want
    # Existing output: refused without --force; replaced whole with it (stale objects go).
    assert cli(*args, s3_logdir, "-o", out).exit_code == 2
    stale = storage.as_path(f"{out}/stale-0/00000000000000000000.log")
    stale.write_bytes(b"old")
    assert cli(*args, s3_logdir, "-o", out, "--force").exit_code == 0
    assert not stale.exists()
    # A single segment to a single object.
    seg = f"{s3_logdir}/v2-headers-0/00000000000000000000.log"
    assert cli(*args, seg, "-o", f"{out}.log").exit_code == 0
    assert storage.as_path(f"{out}.log").read_bytes() == (
        cli(*args, FIXTURES / "v2-headers-0" / "00000000000000000000.log", "-o", tmp_path / "one.log"),
        (tmp_path / "one.log").read_bytes())[1]


def test_failed_write_leaves_no_object(s3_env, s3_logdir):
    out = "s3://kseg-test/out-failed"
    r = cli("recompress", "--codec", "zstd", s3_logdir, "-o", out)  # zstd cannot go into magic 1
    assert r.exit_code == 2 and "zstd cannot be carried by magic 1" in r.stderr  # impossible: a usage error
    assert not storage.as_path(out).exists()


NOW = "1763900000000"  # compact: one clock for every run (v2 delete horizons are stamped with it)


def _local_tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _objects(fs, prefix: str) -> list[str]:
    from pyarrow import fs as pafs

    return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
                  if i.type == pafs.FileType.File)


@pytest.mark.parametrize("args", [("compact", "--now-ms", NOW), ("compact", "--now-ms", NOW, "--topics", "v2-txn"),
                                  ("index", "--rebuild")])
def test_compact_and_index_objects_in_and_out(s3_env, s3_logdir, object_store, tmp_path, args):
    """s3:// in, s3:// out: the objects are the local command's files byte for byte."""
    out = f"s3://kseg-test/out-{args[0]}-{len(args)}"
    remote = cli(*args, s3_logdir, "-o", out)
    local = cli(*args, FIXTURES, "-o", tmp_path / "local")
    assert remote.exit_code == local.exit_code == 0, remote.stderr
    assert remote.stdout == local.stdout
    assert remote.stderr.replace(out, str(tmp_path / "local")) == local.stderr
    want = _local_tree(tmp_path / "local")
    assert len(want) > 20
    assert _download(object_store.fs(), out[len("s3://"):], tmp_path / "back") == want
    assert not [k for k in _objects(object_store.fs(), "kseg-test") if "kseg-tmp" in k]  # no staging left
    # Existing output: refused without --force.
    again = cli(*args, s3_logdir, "-o", out)
    assert again.exit_code == 2 and "exists" in again.stderr
    # A local input to an s3:// output is the same again.
    assert cli(*args, FIXTURES, "-o", f"{out}-from-local").exit_code == 0
    assert _download(object_store.fs(), f"{out[len('s3://'):]}-from-local", tmp_path / "back2") == want


def test_compact_partition_to_objects_and_index_force_merges(s3_env, s3_logdir, object_store, tmp_path):
    part = f"{s3_logdir}/compacted-v2-0"
    out = "s3://kseg-test/out-compact-partition"
    assert cli("compact", "--now-ms", NOW, part, "-o", out).exit_code == 0
    assert cli("compact", "--now-ms", NOW, FIXTURES / "compacted-v2-0", "-o", tmp_path / "local").exit_code == 0
    assert _download(object_store.fs(), out[len("s3://"):], tmp_path / "back") == _local_tree(tmp_path / "local")
    # index --rebuild -o --force writes into the existing output; what else is there stays.
    idx = "s3://kseg-test/out-index-merge"
    keep = storage.as_path(f"{idx}/notes.txt")
    keep.write_bytes(b"kept")
    assert cli("index", "--rebuild", part, "-o", idx).exit_code == 2
    r = cli("index", "--rebuild", part, "-o", idx, "--force")
    assert r.exit_code == 0 and f"{idx}/00000000000000000000.index" in r.stderr
    assert keep.read_bytes() == b"kept"
    assert storage.as_path(f"{idx}/00000000000000000023.timeindex").is_file()
    # In place over objects: refused (give -o).
    r = cli("index", "--rebuild", part)
    assert r.exit_code == 2 and "give -o/--output" in r.stderr


def test_writes_that_fail_leave_nothing(s3_env, s3_logdir, object_store, monkeypatch):
    # The store refuses the writes (a wrong secret): exit 2 with one line, no object anywhere.
    before = _objects(object_store.fs(), "kseg-test")
    with monkeypatch.context() as m:
        m.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
        for args in (("compact", "--now-ms", NOW, FIXTURES), ("index", "--rebuild", FIXTURES),
                     ("up-convert", "--to-magic", "2", FIXTURES)):
            r = cli(*args, "-o", "s3://kseg-test/out-refused")
            assert r.exit_code == 2 and r.stderr.startswith("kseg: error:"), r.stderr
            assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1
    assert _objects(object_store.fs(), "kseg-test") == before
    # A failure half way through the upload (the third object): nothing under the target, no staging left.
    # The connection going (exit 2), or Ctrl-C (exit 130), after two objects were uploaded.
    import kseg.cli.storage as cli_storage

    real = storage.upload_tree
    for stop, code, said in ((OSError("connection reset (test)"), 2, "connection reset (test)"),
                             (KeyboardInterrupt(), 130, "kseg: interrupted")):
        def failing(local, target, hashes=None, stop=stop):
            files = sorted(p for p in Path(local).rglob("*") if p.is_file())
            for f in files[:2]:
                real(f, target / f.relative_to(local).as_posix())
            raise stop

        monkeypatch.setattr(cli_storage, "upload_tree", failing)
        out = "s3://kseg-test/out-half-way"
        r = cli("compact", "--now-ms", NOW, s3_logdir, "-o", out)
        assert r.exit_code == code and said in r.stderr
        assert not storage.as_path(out).exists()
        assert _objects(object_store.fs(), "kseg-test") == before




# --------------------------------------------------------------------------- Spark, local mode


@pytest.fixture(scope="module")
def spark(object_store):
    """A local Spark session whose executors get the test server's variables."""
    pytest.importorskip("pyspark")
    from kseg.spark import get_session

    saved = {k: os.environ.get(k) for k in object_store.env}
    os.environ.update(object_store.env)
    conf = {f"spark.executorEnv.{k}": v for k, v in object_store.env.items()}
    session = get_session("local[2]", conf)
    try:
        yield session
    finally:
        session.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.parametrize("args", [("-v",), ("--format", "json", "--quick")])
def test_spark_verify_same_as_local(spark, s3_logdir, args):
    remote = cli("spark", "verify", *args, s3_logdir)
    local = cli("verify", *args, FIXTURES)
    assert remote.exit_code == local.exit_code
    same_with_prefix(remote.stdout, local.stdout, s3_logdir, FIXTURES)


@pytest.mark.parametrize("args", [("-r", "--format", "jsonl", "--payload", "base64"), ("-r",)])
def test_spark_dump_same_as_local(spark, s3_logdir, args):
    remote = cli("spark", "dump", *args, s3_logdir)
    local = cli("dump", *args, FIXTURES)
    assert remote.exit_code == local.exit_code == 0
    same_with_prefix(remote.stdout, local.stdout, s3_logdir, FIXTURES)


def test_data_source_reads_objects(spark, s3_logdir):
    def rows(path: str) -> list:
        df = spark.read.format("kseg").load(path).drop("segment")
        return sorted(tuple(r) for r in df.collect())

    remote = rows(s3_logdir)
    assert remote and remote == rows(str(FIXTURES))
    pushed = spark.read.format("kseg").load(s3_logdir).where("topic = 'v2-headers' AND offset >= 2")
    assert pushed.count() == spark.read.format("kseg").load(str(FIXTURES)).where(
        "topic = 'v2-headers' AND offset >= 2").count()


SPARK_WRITERS = [("up-convert", "--to-magic", "2", "--codec", "lz4"), ("compact", "--now-ms", NOW)]


@pytest.mark.parametrize("args", SPARK_WRITERS)
def test_spark_writers_to_objects_byte_identical(spark, s3_logdir, object_store, tmp_path, args):
    """kseg spark up-convert/compact, s3:// in and out: executors upload their partitions under a
    staging prefix and the driver copies them into place; the objects are the plain command's
    local files byte for byte (a log directory: one task per partition; a partition: one task)."""
    fs = object_store.fs()
    for name, src in (("logdir", ""), ("partition", "/compacted-v2-0")):
        out = f"s3://kseg-test/spark-{args[0]}-{name}"
        remote = cli("spark", *args, f"{s3_logdir}{src}", "-o", out)
        local = cli(*args, f"{FIXTURES}{src}", "-o", tmp_path / name)
        assert remote.exit_code == local.exit_code == 0, remote.stderr
        assert remote.stderr.replace(out, str(tmp_path / name)) == local.stderr
        want = _local_tree(tmp_path / name)
        assert len(want) > 3
        assert _download(fs, out[len("s3://"):], tmp_path / f"back-{name}") == want
    assert not [k for k in _objects(fs, "kseg-test") if "kseg-tmp" in k]  # no staging left
    again = cli("spark", *args, s3_logdir, "-o", f"s3://kseg-test/spark-{args[0]}-logdir")
    assert again.exit_code == 2 and "exists" in again.stderr


def test_spark_write_failing_in_one_task_leaves_nothing(spark, object_store, tmp_path):
    """One partition cannot be converted (a segment cut inside a batch): the command fails as the
    plain one does, the other tasks' uploads are dropped with the staging prefix, and nothing is
    under the output."""
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(FIXTURES, broken)
    seg = broken / "v2-zstd-0" / "00000000000000000000.log"
    seg.write_bytes(seg.read_bytes()[:-7])
    url = object_store.upload(broken, "kseg-test", "broken")
    local = cli("up-convert", "--to-magic", "2", broken, "-o", tmp_path / "out")
    out = "s3://kseg-test/spark-broken-out"
    remote = cli("spark", "up-convert", "--to-magic", "2", url, "-o", out)
    assert remote.exit_code == local.exit_code != 0
    assert remote.stderr.splitlines()[-1].replace(url, str(broken)) == local.stderr.splitlines()[-1]
    assert not storage.as_path(out).exists()
    assert not [k for k in _objects(object_store.fs(), "kseg-test") if "kseg-tmp" in k or "broken-out" in k]


# --------------------------------------------------------------------------- memory


LARGE_MB = int(os.environ.get("KSEG_LARGE_OBJECT_MB", "1024"))


def _write_large_segment(fs, key: str, target_bytes: int) -> int:
    """A valid v2 segment of about ``target_bytes``, streamed to the store (never whole in memory)."""
    from kseg.log.encode import build_v2_batch
    from kseg.model import make_record

    value = os.urandom(64 * 1024)
    offset = written = 0
    with fs.open_output_stream(key) as out:
        while written < target_bytes:
            recs = [make_record(offset + j, 1_700_000_000_000 + offset + j, b"k%d" % j, value) for j in range(16)]
            raw = build_v2_batch(recs)
            out.write(raw)
            written += len(raw)
            offset += 16
    return written


def _peak_rss_mb(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run ``kseg`` in a child and return its peak resident memory (MiB) and stdout."""
    # VmHWM is this process image's own peak (ru_maxrss would carry the forking parent's over exec).
    code = ("import sys; sys.argv = ['kseg'] + sys.argv[1:]\n"
            "try:\n    from kseg.cli.main import main; main()\n"
            "finally:\n    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
            "    sys.stderr.write('PEAK_RSS_KB %s\\n' % hwm[0].split()[1])\n")
    p = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=900)
    peak = [line for line in p.stderr.splitlines() if line.startswith("PEAK_RSS_KB")]
    assert peak and p.returncode == 0, p.stderr
    return int(peak[-1].split()[1]) / 1024, p.stdout


def test_rss_flat_reading_a_large_object(object_store, s3_logdir):
    """``kseg verify`` over a large remote segment: reads by 8 MiB ranges, so peak memory is
    the small object's plus a few chunks, never the object's size."""
    fs = object_store.fs()
    key = f"kseg-test/large/big-0/{0:020d}.log"
    t0 = time.perf_counter()
    size = _write_large_segment(fs, key, LARGE_MB * 1024 * 1024)
    upload = time.perf_counter() - t0
    env = {**os.environ, **object_store.env}
    try:
        small_mb, _ = _peak_rss_mb(["verify", f"{s3_logdir}/v2-headers-0"], env)
        t0 = time.perf_counter()
        big_mb, out = _peak_rss_mb(["verify", "--quick", f"s3://{key}"], env)
        read = time.perf_counter() - t0
    finally:
        fs.delete_dir("kseg-test/large")
    assert ", 0 error(s)" in out
    sys.stderr.write(f"\nlarge object: {size / 2**20:.0f} MiB, written in {upload:.1f} s, verified in {read:.1f} s; "
                     f"peak RSS {big_mb:.0f} MiB (small object: {small_mb:.0f} MiB)\n")
    assert big_mb - small_mb < 80, (big_mb, small_mb)
