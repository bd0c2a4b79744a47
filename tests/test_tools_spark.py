"""kseg spark diff|find|stats: the same output and exit codes as the plain commands, one task
per partition (one local Spark session for the module; skipped without PySpark or Java)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from click.testing import CliRunner  # noqa: E402

from kseg.cli.main import main  # noqa: E402
from test_tools_diff import leader, write, batch  # noqa: E402
from test_tools_find import keyed_log_dir  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "logdir"


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java for a local Spark")
    from kseg.spark import get_session

    session = get_session("local[2]", {"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()


def both(*args):
    plain = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    on_spark = CliRunner().invoke(main, ["spark", args[0], "--master", "local[2]", *[str(a) for a in args[1:]]],
                                  catch_exceptions=False)
    return plain, on_spark


def test_stats(spark):
    plain, on_spark = both("stats", FIXTURES, "--format", "json")
    assert on_spark.exit_code == plain.exit_code == 0
    assert on_spark.stdout == plain.stdout


def test_stats_keeps_renamed_replicas_apart(spark, tmp_path):
    from builders import write_partition

    for name in ("t-0", "t-0.0123456789abcdef0123456789abcdef-delete", "t-0.fedcba9876543210fedcba9876543210-future",
                 "t-1", "t-1.0123456789abcdef0123456789abcdef-stray"):
        write_partition(tmp_path / name, 2, "none", segments=2, n_batches=1, per=2)
    for fmt in ("text", "json"):
        plain, on_spark = both("stats", tmp_path, "--format", fmt)
        assert on_spark.exit_code == plain.exit_code == 0
        assert on_spark.stdout == plain.stdout and "delete" in plain.stdout


def test_find(spark, tmp_path):
    root = keyed_log_dir(tmp_path / "logs", per_partition_batches=10)
    for args in ([root, "--key", "user-42", "--partitioner", "--topic", "orders", "--partitions", "4"],
                 [root, "--key-regex", "^user-1", "--format", "json"],
                 [root, "--from-offset", "100", "--to-offset", "110"],
                 [FIXTURES, "--from-offset", "0"], [FIXTURES, "--value-regex", ".", "--format", "json"]):
        plain, on_spark = both("find", *args)
        assert on_spark.exit_code == plain.exit_code == 0
        assert on_spark.stdout == plain.stdout and plain.stdout
        assert on_spark.stderr == plain.stderr and "match(es)" in plain.stderr


def test_find_report_has_a_row_per_partition(spark, tmp_path):
    report = tmp_path / "find.json"
    on_spark = CliRunner().invoke(main, ["spark", "find", "--master", "local[2]", "--report", str(report),
                                         "--key", "k1", str(FIXTURES)], catch_exceptions=False)
    assert on_spark.exit_code == 0
    doc = json.loads(report.read_text())
    assert [row["partition"] for row in doc["files"]] == sorted(p.name for p in FIXTURES.iterdir())
    assert sum(row["matches"] for row in doc["files"]) == doc["matches"] > 0


def test_find_on_damaged_data_reports_as_the_plain_command(spark, tmp_path):
    root = tmp_path / "logdir"
    shutil.copytree(FIXTURES, root)
    log = root / "v2-none-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[61 + 10] ^= 0xFF  # in the first batch's records, past its 61-byte header: its CRC no longer holds
    log.write_bytes(bytes(data))
    for args in (["--from-offset", "0"], ["--value-regex", ".", "--format", "json"]):
        plain, on_spark = both("find", root, *args)
        assert on_spark.exit_code == plain.exit_code == 1
        assert on_spark.stdout == plain.stdout and plain.stdout
        assert on_spark.stderr == plain.stderr and "crc mismatch" in plain.stderr


def test_find_spools_many_matches_in_the_folder_given_and_leaves_nothing(spark, tmp_path):
    """A partition with more matches than a task keeps in memory: they go through files in
    --tmp-dir (read back and removed by the driver), the output is the plain command's."""
    root = keyed_log_dir(tmp_path / "logs", partitions=1, per_partition_batches=300, per=20)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    plain = CliRunner().invoke(main, ["find", "--value-regex", ".", "--format", "json", str(root)],
                               catch_exceptions=False)
    on_spark = CliRunner().invoke(main, ["spark", "find", "--master", "local[2]", "--tmp-dir", str(tmp),
                                         "--value-regex", ".", "--format", "json", str(root)], catch_exceptions=False)
    assert (on_spark.exit_code, on_spark.stdout, on_spark.stderr) == (plain.exit_code, plain.stdout, plain.stderr)
    assert plain.stdout.count("\n") == 6000
    assert list(tmp.iterdir()) == []


def _sliced_roots(tmp_path, monkeypatch):
    """Log directories of one partition, a large segment (healthy, or damaged at a cut) and a small
    one, with slices of a few batches planned (``test_slices``'s data)."""
    from kseg.ops import cuts
    from test_slices import _damage_cases, _segment, _batch

    monkeypatch.setattr(cuts, "MIN_SLICE_BYTES", 1)
    for name in ("healthy", "a flipped byte in a size field"):
        root = tmp_path / name.replace(" ", "-")
        data, indexed = _damage_cases()[name]
        _segment(root / "t-0", 0, data, indexed)
        _segment(root / "t-0", 10_000, _batch([10_000]))
        yield name, root


def test_find_searches_slices_of_a_large_segment_as_tasks(spark, tmp_path, monkeypatch):
    """A partition of one large segment and a small one: the plan cuts the large one for the
    session's parallelism; output, errors and exit code are the plain command's, damage in a
    slice included; --report keeps one row per partition."""
    from kseg.ops import find

    for name, root in _sliced_roots(tmp_path, monkeypatch):
        units = find.plan(([str(root)], None), find.FindOptions(workers=2))
        assert max(u.parts for u in units) > 1
        for args in (["--value-regex", "v"], ["--from-offset", "40", "--to-offset", "150", "--format", "json"]):
            plain, on_spark = both("find", root, *args)
            assert (on_spark.exit_code, on_spark.stdout, on_spark.stderr) == (
                plain.exit_code, plain.stdout, plain.stderr), (name, args)
        report = root.parent / f"{root.name}.json"
        assert CliRunner().invoke(main, ["spark", "find", "--master", "local[2]", "--report", str(report),
                                         "--value-regex", "v", str(root)]).exit_code in (0, 1)
        doc = json.loads(report.read_text())
        assert [row["partition"] for row in doc["files"]] == ["t-0"]
        assert doc["files"][0]["matches"] == doc["matches"] > 0


def test_stats_reads_slices_of_a_large_segment_as_tasks(spark, tmp_path, monkeypatch):
    """The plan cuts a large segment for the session's parallelism; the report is the plain
    command's, damage in a slice included; --report keeps one row per partition."""
    from kseg.ops import stats

    for name, root in _sliced_roots(tmp_path, monkeypatch):
        assert max(u.parts for u in stats.plan([root], stats.StatsOptions(workers=2))) > 1
        for fmt in ("text", "json"):
            plain, on_spark = both("stats", root, "--format", fmt)
            assert (on_spark.exit_code, on_spark.stdout) == (plain.exit_code, plain.stdout), (name, fmt)
        report = root.parent / f"{root.name}.json"
        CliRunner().invoke(main, ["spark", "stats", "--master", "local[2]", "--report", str(report), str(root)])
        doc = json.loads(report.read_text())
        assert [row["partition"] for row in doc["files"]] == [str(root / "t-0")]


def test_diff(spark, tmp_path):
    leader(tmp_path)
    write(tmp_path / "b" / "t-0", [[batch(o) for o in range(0, 100, 10)], [batch(100, epoch=1)]],
          [(0, 0), (1, 100)])
    shutil.copytree(tmp_path / "a" / "t-0", tmp_path / "a" / "u-0")
    shutil.copytree(tmp_path / "a" / "t-0", tmp_path / "b" / "u-0")
    plain, on_spark = both("diff", tmp_path / "a", tmp_path / "b", "--records")
    assert on_spark.exit_code == plain.exit_code == 1
    assert on_spark.stdout == plain.stdout and "u-0: identical" in plain.stdout
