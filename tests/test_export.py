"""``kseg export``: Parquet and Arrow files that hold what the Python API and ``kseg dump`` say.

For every fixture partition and both formats the file read back with pyarrow equals
``kseg.open_partition(p).to_arrow()`` (the same filters, the same columns), and, as an
independent check, its offsets, keys and values equal ``kseg dump --format jsonl``'s. Then the
writer's rules: one file per partition for a log directory, an existing output refused
without --force and never replaced when kseg did not make it, damage under ``stop`` leaves no
file (exit 1, one ``FILE: at byte N`` line) and under ``skip`` is listed, and without pyarrow a
one-line error naming the extra (exit 2).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import kseg
from kseg.cli.main import main
from kseg.log.segment import Segment, segment_file_name
from tests.test_api import LOGDIR, PARTITIONS, dump_records

pa = pytest.importorskip("pyarrow", reason="kseg export needs pyarrow (the arrow extra)")
pq = pytest.importorskip("pyarrow.parquet")

ROOT = Path(__file__).resolve().parent.parent
READ = {"parquet": lambda p: pq.read_table(p), "arrow": lambda p: pa.ipc.open_file(pa.memory_map(str(p))).read_all()}
SUFFIX = {"parquet": ".parquet", "arrow": ".arrow"}


def export(*args: str | Path, code: int = 0):
    res = CliRunner().invoke(main, ["export", *map(str, args)])
    assert res.exit_code == code, res.output
    return res


def leftovers(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if ".kseg-tmp" in p.name]


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def as_dump(table) -> list[tuple]:
    """A table's rows in dump_records' shape (offset, timestamp, hex key, hex value, headers)."""
    d = table.to_pydict()
    return [(o, t, _hex(k), _hex(v), [(h["key"], _hex(h["value"])) for h in hs])
            for o, t, k, v, hs in zip(d["offset"], d["timestamp"], d["key"], d["value"], d["headers"])]


# --------------------------------------------------------------------------- every fixture, both formats


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
@pytest.mark.parametrize("name", PARTITIONS)
def test_every_fixture_partition_reads_back(name: str, fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"out{SUFFIX[fmt]}"
    export("--format", fmt, LOGDIR / name, "-o", out)
    got = READ[fmt](out)
    want = kseg.open_partition(LOGDIR / name).to_arrow()
    assert got.schema.remove_metadata() == want.schema
    assert got.equals(want), name
    assert as_dump(got) == dump_records(LOGDIR / name)  # the independent check: dump's own lines
    assert leftovers(tmp_path) == []


def test_a_log_directory_gives_a_folder_of_partition_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = export(LOGDIR, "-o", out)
    assert sorted(os.listdir(out)) == [f"{n}.parquet" for n in PARTITIONS]
    for n in PARTITIONS:
        assert pq.read_table(out / f"{n}.parquet").equals(kseg.open_partition(LOGDIR / n).to_arrow())
    assert res.stdout.splitlines()[-1].startswith(f"exported {sum(len(dump_records(LOGDIR / n)) for n in PARTITIONS)} "
                                                  f"records of {len(PARTITIONS)} partitions to {out} (parquet, zstd)")


def test_a_segment_file_and_a_partition_into_a_folder(tmp_path: Path) -> None:
    seg = LOGDIR / "v2-gzip-0" / segment_file_name(0)
    export(seg, "-o", tmp_path / "a")
    assert os.listdir(tmp_path / "a") == ["v2-gzip-0.parquet"]
    assert pq.read_table(tmp_path / "a" / "v2-gzip-0.parquet").equals(kseg.open_segment(seg).to_arrow())
    export("--format", "arrow", LOGDIR / "v2-gzip-0", "-o", tmp_path / "b")
    assert os.listdir(tmp_path / "b") == ["v2-gzip-0.arrow"]


def test_a_log_directory_cannot_go_into_one_file(tmp_path: Path) -> None:
    res = export(LOGDIR, "-o", tmp_path / "all.parquet", code=2)
    assert "names one file, but the input is a log directory" in res.stderr
    assert not (tmp_path / "all.parquet").exists()


# --------------------------------------------------------------------------- filters and columns

FILTERS = [
    (["--from-offset", "5", "--to-offset", "20"], {"from_offset": 5, "to_offset": 20}),
    (["--from-time", "1700000000005", "--to-time", "2023-11-14T22:13:20.015Z"],
     {"from_time": 1700000000005, "to_time": 1700000000015}),
    (["--include-control"], {"include_control": True}),
]


@pytest.mark.parametrize("name", ["v2-gzip-0", "v2-txn-0", "v1-lz4-0", "mixed-magic-0"])
@pytest.mark.parametrize("args,kwargs", FILTERS, ids=["offsets", "times", "control"])
def test_filters_are_the_apis(name: str, args: list[str], kwargs: dict, tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    export(LOGDIR / name, "-o", out, *args)
    got = pq.read_table(out)
    assert got.equals(kseg.open_partition(LOGDIR / name).to_arrow(**kwargs))
    dump_args = [a for a in args if a != "--include-control"]
    want = dump_records(LOGDIR / name, *dump_args, control="--include-control" in args)
    assert as_dump(got) == want


def test_include_control_exports_the_markers(tmp_path: Path) -> None:
    export(LOGDIR / "v2-txn-0", "-o", tmp_path / "with.parquet", "--include-control")
    export(LOGDIR / "v2-txn-0", "-o", tmp_path / "without.parquet")
    with_, without = pq.read_table(tmp_path / "with.parquet"), pq.read_table(tmp_path / "without.parquet")
    assert with_.num_rows > without.num_rows
    assert any(with_.column("is_control").to_pylist()) and not any(without.column("is_control").to_pylist())


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_columns(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"out{SUFFIX[fmt]}"
    export("--format", fmt, LOGDIR / "v2-headers-0", "-o", out, "--columns", "value,offset,headers")
    got = READ[fmt](out)
    assert got.column_names == ["offset", "value", "headers"]  # the schema's order
    assert got.equals(kseg.open_partition(LOGDIR / "v2-headers-0").to_arrow(columns=["offset", "value", "headers"]))


def test_an_unknown_column_is_a_usage_error(tmp_path: Path) -> None:
    res = export(LOGDIR / "v2-none-0", "-o", tmp_path / "o.parquet", "--columns", "offset,nope", code=2)
    assert "unknown column" in res.stderr and "partition_leader_epoch" in res.stderr
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("fmt,codec", [("parquet", "none"), ("parquet", "snappy"), ("parquet", "gzip"),
                                       ("arrow", "zstd"), ("arrow", "lz4")])
def test_compression(fmt: str, codec: str, tmp_path: Path) -> None:
    out = tmp_path / f"out{SUFFIX[fmt]}"
    res = export("--format", fmt, "--compression", codec, LOGDIR / "v2-none-0", "-o", out)
    assert READ[fmt](out).equals(kseg.open_partition(LOGDIR / "v2-none-0").to_arrow())
    if fmt == "parquet":
        assert {pq.ParquetFile(out).metadata.row_group(0).column(i).compression.lower()
                for i in range(3)} == {"uncompressed" if codec == "none" else codec}
    assert f"({fmt}, {'uncompressed' if codec == 'none' else codec})" in res.stdout


def test_offsets_and_timestamps_are_delta_encoded(tmp_path: Path) -> None:
    """The columns that grow by small steps take Parquet's delta encoding; the others do not."""
    out = tmp_path / "out.parquet"
    export(LOGDIR / "v2-none-0", "-o", out)
    meta = pq.ParquetFile(out).metadata
    encodings = {meta.schema.column(i).name: set(meta.row_group(0).column(i).encodings)
                 for i in range(meta.num_columns)}
    assert {c for c, e in encodings.items() if "DELTA_BINARY_PACKED" in e} == {"offset", "timestamp"}


def test_jobs_give_the_same_files(tmp_path: Path) -> None:
    """-j 2 writes partitions in worker processes (a log directory) or reads a lone partition on
    a thread of its own: the files are -j 1's, byte for byte."""
    for src in (LOGDIR, LOGDIR / "v2-gzip-0"):
        one, many = tmp_path / f"{src.name}-1", tmp_path / f"{src.name}-2"
        export(src, "-o", one, "-j", "1")
        export(src, "-o", many, "-j", "2")
        files = sorted(p.name for p in one.iterdir())
        assert files and files == sorted(p.name for p in many.iterdir())
        assert all((one / f).read_bytes() == (many / f).read_bytes() for f in files)


# --------------------------------------------------------------------------- --max-file-rows


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
@pytest.mark.parametrize("limit", [1, 4, 29, 30])  # v2-none-0 holds 29 records
def test_max_file_rows_rolls_a_partition_into_parts(fmt: str, limit: int, tmp_path: Path) -> None:
    """Parts named in offset order, every one but the last exactly full, together the partition's
    one file (the same rows, the same schema and metadata); the same bytes with -j 2."""
    src = LOGDIR / "v2-none-0"
    whole = tmp_path / f"whole{SUFFIX[fmt]}"
    export("--format", fmt, src, "-o", whole)
    for jobs in ("1", "2"):
        out = tmp_path / f"parts-{jobs}"
        res = export("--format", fmt, src, "-o", out, "--max-file-rows", limit, "-j", jobs)
        names = sorted(os.listdir(out))
        count = -(-29 // limit)
        assert names == [f"v2-none-0.{i:05d}{SUFFIX[fmt]}" for i in range(count)]
        tables = [READ[fmt](out / n) for n in names]
        assert [t.num_rows for t in tables] == [limit] * (count - 1) + [29 - limit * (count - 1)]
        assert pa.concat_tables(tables).equals(READ[fmt](whole), check_metadata=True)
        first = res.stdout.splitlines()[0]
        assert first.endswith(": 29 records from 3 segments")
        assert (f"({count} files)" in first) == (count > 1)
    assert all((tmp_path / "parts-1" / n).read_bytes() == (tmp_path / "parts-2" / n).read_bytes()
               for n in os.listdir(tmp_path / "parts-1"))


def test_max_file_rows_over_a_log_directory(tmp_path: Path) -> None:
    """Each partition its own parts; read back as one dataset they are every partition's records;
    --force replaces such a folder (every file in it kseg's)."""
    import pyarrow.dataset as ds

    out = tmp_path / "out"
    export(LOGDIR, "-o", out, "--max-file-rows", 10, "-j", "2")
    for name in PARTITIONS:
        parts = sorted(out.glob(f"{name}.*.parquet"))
        want = kseg.open_partition(LOGDIR / name).to_arrow()
        assert len(parts) == max(1, -(-want.num_rows // 10))
        assert pa.concat_tables(pq.read_table(p) for p in parts).equals(want)
    total = ds.dataset(out, format="parquet").count_rows()
    assert total == sum(kseg.open_partition(LOGDIR / n).to_arrow().num_rows for n in PARTITIONS)
    export(LOGDIR, "-o", out, "--max-file-rows", 100, "--force")
    assert sorted(os.listdir(out)) == [f"{n}.00000.parquet" for n in PARTITIONS]


def test_max_file_rows_needs_a_folder(tmp_path: Path) -> None:
    out = tmp_path / "one.parquet"
    res = export(LOGDIR / "v2-none-0", "-o", out, "--max-file-rows", 5, code=2)
    assert res.stderr == ("kseg: error: -o one.parquet names one file, but --max-file-rows writes a partition "
                          "into several: give a folder\n")
    assert not out.exists()
    res = export(LOGDIR / "v2-none-0", "-o", tmp_path / "x", "--max-file-rows", 0, code=2)
    assert "--max-file-rows" in res.stderr and not (tmp_path / "x").exists()


# --------------------------------------------------------------------------- outputs: --force


def test_an_existing_output_needs_force_and_must_be_kseg_s(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    export(LOGDIR / "v2-none-0", "-o", out)
    res = export(LOGDIR / "v2-gzip-0", "-o", out, code=2)
    assert res.stderr == f"kseg: error: {out}: the output exists (use --force to replace it)\n"
    export(LOGDIR / "v2-gzip-0", "-o", out, "--force")
    assert pq.read_table(out).equals(kseg.open_partition(LOGDIR / "v2-gzip-0").to_arrow())
    # A file kseg did not make is never replaced, --force or not (a Parquet file of someone else's too).
    theirs = tmp_path / "theirs.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), theirs)
    before = theirs.read_bytes()
    res = export(LOGDIR / "v2-gzip-0", "-o", theirs, "--force", code=2)
    assert "is not a kseg export" in res.stderr and len(res.stderr.splitlines()) == 1
    assert theirs.read_bytes() == before
    # A folder: replaced only when everything in it is kseg's export.
    folder = tmp_path / "folder"
    export(LOGDIR, "-o", folder)
    export(LOGDIR, "-o", folder, "--force", "--format", "arrow")
    assert sorted(os.listdir(folder)) == [f"{n}.arrow" for n in PARTITIONS]
    (folder / "notes.txt").write_text("mine")
    export(LOGDIR, "-o", folder, "--force", code=2)
    assert (folder / "notes.txt").read_text() == "mine"
    assert leftovers(tmp_path) == []


def test_the_output_must_not_be_the_input(tmp_path: Path) -> None:
    part = tmp_path / "v2-none-0"
    shutil.copytree(LOGDIR / "v2-none-0", part)
    res = export(part, "-o", part / "inside", code=2)
    assert "must not be an input" in res.stderr


# --------------------------------------------------------------------------- damage


def _damaged_copy(tmp_path: Path) -> tuple[Path, Path]:
    """v2-none-0 with a byte of its first segment's last record flipped (a CRC that does not match)."""
    part = tmp_path / "in" / "v2-none-0"
    shutil.copytree(LOGDIR / "v2-none-0", part)
    log = part / segment_file_name(0)
    data = bytearray(log.read_bytes())
    data[-3] ^= 0x5A
    log.write_bytes(bytes(data))
    return part, log


@pytest.mark.parametrize("jobs", ["1", "2"])  # -j 2: the lone partition is read on a thread of its own
@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_damage_stops_and_leaves_no_file(fmt: str, jobs: str, tmp_path: Path) -> None:
    part, log = _damaged_copy(tmp_path)
    for out, more in ((tmp_path / f"out{SUFFIX[fmt]}", []), (tmp_path / "folder", []),
                      (tmp_path / "parts", ["--max-file-rows", "3"])):  # parts before the damage written, then gone
        res = export("--format", fmt, "-j", jobs, part, "-o", out, *more, code=1)
        lines = res.stderr.splitlines()
        assert len(lines) == 1 and re.match(rf"kseg: error: {re.escape(str(log))}: at byte \d+ .*crc mismatch",
                                            lines[0]), res.stderr
        assert res.stdout == ""
        assert not out.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_damage_skipped_is_listed(jobs: str, tmp_path: Path) -> None:
    part, log = _damaged_copy(tmp_path)
    out = tmp_path / "out.parquet"
    res = export(part, "-o", out, "--on-damage", "skip", "-j", jobs, code=1)
    assert pq.read_table(out).equals(kseg.open_partition(part).to_arrow(on_damage="skip"))
    left = [line for line in res.stdout.splitlines() if line.startswith("  left out: ")]
    assert len(left) == 1 and str(log) in left[0] and "crc mismatch" in left[0]
    assert res.stdout.splitlines()[-1].endswith("; 1 damaged batch left out")


def test_an_unreadable_input_is_exit_2(tmp_path: Path) -> None:
    res = export(tmp_path / "nope", "-o", tmp_path / "out", code=2)
    assert res.stderr == f"kseg: error: {tmp_path / 'nope'}: no such file or directory\n"


# --------------------------------------------------------------------------- without pyarrow


def test_without_pyarrow_one_line_names_the_extra(tmp_path: Path) -> None:
    """pyarrow blocked as if not installed (an import of it raises ImportError)."""
    code = ("import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None; "
            "from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()")
    r = subprocess.run([sys.executable, "-c", code, "export", str(LOGDIR / "v2-none-0"), "-o", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr == "kseg: error: kseg export needs pyarrow: pip install 'kseg[arrow]'\n"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_offsets_going_back_are_damage_as_in_verify(jobs: str, tmp_path: Path) -> None:
    """A batch's framing offset is under no CRC: moved back to the segment's first offset, the
    batch is what verify calls an error ("offsets do not increase"); export stops at it, or
    leaves it out with --on-damage skip, as every writer does (not laundered into Parquet)."""
    part = tmp_path / "in" / "v2-none-0"
    shutil.copytree(LOGDIR / "v2-none-0", part)
    log = part / segment_file_name(0)
    data = bytearray(log.read_bytes())
    batches = list(Segment(log).batches())
    last = batches[-1]
    data[last.position:last.position + 8] = (0).to_bytes(8, "big")
    log.write_bytes(bytes(data))
    v = CliRunner().invoke(main, ["verify", str(part)])
    assert v.exit_code == 1 and f"at byte {last.position}: offsets do not increase" in v.output, v.output
    res = export("-j", jobs, part, "-o", tmp_path / "stop.parquet", code=1)
    assert res.stderr.startswith(f"kseg: error: {log}: at byte {last.position}: ") and \
        "offsets do not increase" in res.stderr and not (tmp_path / "stop.parquet").exists()
    out = tmp_path / "out.parquet"
    res = export(part, "-o", out, "--on-damage", "skip", "-j", jobs, code=1)
    total = kseg.open_partition(LOGDIR / "v2-none-0").to_arrow().num_rows
    assert pq.read_table(out).num_rows == total - last.record_count
    left = [line for line in res.stdout.splitlines() if line.startswith("  left out: ")]
    assert len(left) == 1 and f"at byte {last.position}" in left[0] and "offsets do not increase" in left[0]
