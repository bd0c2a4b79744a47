"""The Python API (``kseg.open_partition(p).records()``, ``to_arrow()``, ``to_pandas()``) against
``kseg dump --format jsonl``: the same records with the same filters, for every fixture
partition; the Arrow schema is the Spark data source's; damage raises or is skipped.

The reference is dump's own JSON lines (the issue asks for exactly that agreement), read with
``--payload hex`` so every byte string compares exactly.
"""

from __future__ import annotations

import json
import re
import shutil
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

import kseg
from kseg.cli.main import main
from kseg.ops.columns import RECORD_SCHEMA_DDL, schema_ddl

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
PARTITIONS = sorted(p.name for p in LOGDIR.iterdir() if p.is_dir())

needs_arrow = pytest.mark.skipif(find_spec("pyarrow") is None, reason="pyarrow is not installed (the spark extra)")


def dump_lines(path: Path, *options: str, exit_code: int = 0) -> list[dict]:
    """``kseg dump -r --format jsonl --payload hex`` of a file or folder: batch and record lines."""
    res = CliRunner().invoke(main, ["dump", "-r", "--format", "jsonl", "--payload", "hex", *options, str(path)])
    assert res.exit_code == exit_code, res.output
    return [json.loads(line) for line in res.stdout.splitlines()]


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def dump_records(path: Path, *options: str, control: bool = False) -> list[tuple]:
    return [(d["offset"], d["timestamp"], d["key"], d["value"], [(h["key"], h["value"]) for h in d["headers"]])
            for d in dump_lines(path, *options) if d["type"] == "record" and (control or "control" not in d)]


def api_records(records) -> list[tuple]:
    return [(r.offset, r.timestamp, _hex(r.key), _hex(r.value), [(h.key, _hex(h.value)) for h in r.headers])
            for r in records]


# --------------------------------------------------------------------------- records()


@pytest.mark.parametrize("name", PARTITIONS)
def test_records_are_dumps_records(name: str) -> None:
    want = dump_records(LOGDIR / name)
    assert want, name
    assert api_records(kseg.open_partition(LOGDIR / name).records()) == want


def test_a_segments_records_are_dumps_records() -> None:
    seg = sorted((LOGDIR / "v2-gzip-0").glob("*.log"))[1]
    assert api_records(kseg.open_segment(seg).records()) == dump_records(seg)


def _filters(name: str) -> list[tuple[dict, list[str]]]:
    """Filters cutting inside the partition's offsets and times (from its own records)."""
    records = dump_records(LOGDIR / name)
    offsets = sorted(r[0] for r in records)
    times = sorted(r[1] for r in records)
    lo, hi = offsets[len(offsets) // 3], offsets[2 * len(offsets) // 3]
    tlo, thi = times[len(times) // 4], times[3 * len(times) // 4]
    return [
        ({"from_offset": lo}, ["--from-offset", str(lo)]),
        ({"to_offset": hi}, ["--to-offset", str(hi)]),
        ({"from_offset": lo, "to_offset": hi}, ["--from-offset", str(lo), "--to-offset", str(hi)]),
        ({"from_time": tlo}, ["--from-time", str(tlo)]),
        ({"to_time": thi}, ["--to-time", str(thi)]),
        ({"from_time": tlo, "to_time": thi, "from_offset": lo}, ["--from-time", str(tlo), "--to-time", str(thi),
                                                                  "--from-offset", str(lo)]),
    ]


@pytest.mark.parametrize("name", PARTITIONS)
def test_filters_are_dumps_filters(name: str) -> None:
    part = kseg.open_partition(LOGDIR / name)
    for kw, options in _filters(name):
        assert api_records(part.records(**kw)) == dump_records(LOGDIR / name, *options), (kw, options)


def test_control_records_are_left_out_unless_asked_for() -> None:
    part = kseg.open_partition(LOGDIR / "v2-txn-0")
    every = dump_records(LOGDIR / "v2-txn-0", control=True)
    data = dump_records(LOGDIR / "v2-txn-0")
    assert len(every) > len(data)  # the fixture has transaction markers
    assert api_records(part.records()) == data
    assert api_records(part.records(include_control=True)) == every


def test_a_log_dirs_records_carry_topic_and_partition() -> None:
    got = list(kseg.open_log_dir(LOGDIR).records(from_offset=2))
    want = []
    for name in PARTITIONS:
        topic, _, n = name.rpartition("-")
        want += [(topic, int(n), *r) for r in dump_records(LOGDIR / name, "--from-offset", "2")]
    assert [(r.topic, r.partition, *api_records([r])[0]) for r in got] == want


# --------------------------------------------------------------------------- damage


def _damaged(tmp_path: Path) -> tuple[Path, int]:
    """v2-gzip-0 with a byte of its second batch's payload flipped: (its first segment, that batch's position)."""
    part = tmp_path / "t-0"
    shutil.copytree(LOGDIR / "v2-gzip-0", part)
    seg = part / "00000000000000000000.log"
    second = [b.position for b in kseg.open_segment(seg).batches()][1]
    data = bytearray(seg.read_bytes())
    data[second + 70] ^= 0xFF
    seg.write_bytes(bytes(data))
    return seg, second


def test_damage_raises_with_file_and_position(tmp_path: Path) -> None:
    seg, second = _damaged(tmp_path)
    with pytest.raises(kseg.CrcMismatchError) as e:
        list(kseg.open_partition(seg.parent).records())
    assert (e.value.file, e.value.position) == (str(seg), second)
    assert str(seg) in str(e.value) and f"byte {second}" in str(e.value)


def _records_by_batch(path: Path, exit_code: int = 0) -> list[tuple[str, int, tuple]]:
    """(file, batch position, record) of each data record dump shows, in order."""
    out, file = [], ""
    for d in dump_lines(path, exit_code=exit_code):
        if d["type"] == "batch":
            file = str(Path(d["file"]).resolve())
        elif "control" not in d:
            out.append((file, d["batch_position"], (d["offset"], d["timestamp"], d["key"], d["value"],
                                                     [(h["key"], h["value"]) for h in d["headers"]])))
    return out


def test_damage_skipped_leaves_the_batch_out(tmp_path: Path) -> None:
    seg, second = _damaged(tmp_path)
    every = _records_by_batch(seg.parent, exit_code=1)  # dump shows a batch whose CRC fails, marked crc_valid false
    want = [r for file, pos, r in every if (file, pos) != (str(seg.resolve()), second)]
    assert 0 < len(want) < len(every)
    assert api_records(kseg.open_partition(seg.parent).records(on_damage="skip")) == want


def test_a_cut_segment_raises_truncated_or_stops_when_skipping(tmp_path: Path) -> None:
    seg = tmp_path / "00000000000000000000.log"
    src = LOGDIR / "v2-gzip-0" / "00000000000000000000.log"
    second = [b.position for b in kseg.open_segment(src).batches()][1]
    seg.write_bytes(src.read_bytes()[: second + 30])
    with pytest.raises(kseg.TruncatedError) as e:
        list(kseg.open_segment(seg).records())
    assert (e.value.file, e.value.position) == (str(seg), second)
    before = [r for _, pos, r in _records_by_batch(src) if pos < second]
    assert before and api_records(kseg.open_segment(seg).records(on_damage="skip")) == before


def test_on_damage_carry_is_refused() -> None:
    with pytest.raises(kseg.InputError, match="stop, skip"):
        list(kseg.open_partition(LOGDIR / "v2-none-0").records(on_damage="carry"))


# --------------------------------------------------------------------------- Arrow


def _ddl(t) -> str:
    """An Arrow type in Spark's DDL (the data source's names)."""
    import pyarrow as pa

    if pa.types.is_list(t):
        fields = ", ".join(f"{f.name}: {_ddl(f.type)}" for f in t.value_type)
        return f"ARRAY<STRUCT<{fields}>>"
    return {pa.string(): "STRING", pa.int32(): "INT", pa.int64(): "BIGINT", pa.binary(): "BINARY",
            pa.bool_(): "BOOLEAN"}[t]


def _schema_ddl(schema) -> str:
    return ", ".join(f"{f.name} {_ddl(f.type)}" for f in schema)


@needs_arrow
def test_the_arrow_schema_is_the_data_sources() -> None:
    part = kseg.open_partition(LOGDIR / "v2-headers-0")
    assert _schema_ddl(part.to_arrow().schema) == RECORD_SCHEMA_DDL == schema_ddl("records")
    cols = ["value", "offset", "headers"]
    assert _schema_ddl(part.to_arrow(columns=cols).schema) == schema_ddl("records", cols) \
        == "offset BIGINT, value BINARY, headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
    with pytest.raises(kseg.InputError, match="unknown nope"):
        part.to_arrow(columns=["offset", "nope"])


@needs_arrow
@pytest.mark.parametrize("name", PARTITIONS)
def test_arrow_rows_are_dumps_lines(name: str) -> None:
    """Every column but ``sequence`` (which dump's lines do not give per record) from dump's
    batch and record lines."""
    want = []
    batch: dict = {}
    topic, _, n = name.rpartition("-")
    for d in dump_lines(LOGDIR / name):
        if d["type"] == "batch":
            batch = d
        elif "control" not in d:
            v2 = batch["magic"] >= 2
            want.append({
                "topic": topic, "partition": int(n), "segment": batch["file"], "offset": d["offset"],
                "timestamp": d["timestamp"], "timestamp_type": d["timestamp_type"], "key": d["key"],
                "value": d["value"], "headers": [(h["key"], h["value"]) for h in d["headers"]],
                "magic": batch["magic"], "codec": batch["codec"], "batch_position": d["batch_position"],
                "partition_leader_epoch": batch.get("partition_leader_epoch"),
                "producer_id": batch.get("producer_id"), "producer_epoch": batch.get("producer_epoch"),
                "is_transactional": batch["is_transactional"] if v2 else None,
                "is_control": batch["is_control"] if v2 else None})
    rows = kseg.open_partition(LOGDIR / name).to_arrow().to_pylist()
    for r in rows:
        r.pop("sequence")
        r["segment"] = str(Path(r["segment"]).relative_to(ROOT))
        r["key"], r["value"] = _hex(r["key"]), _hex(r["value"])
        r["headers"] = [(h["key"], _hex(h["value"])) for h in r["headers"]]
    for w in want:
        w["segment"] = str(Path(w["segment"]).resolve().relative_to(ROOT))
    assert rows == want


@needs_arrow
def test_arrow_filters_and_columns(tmp_path: Path) -> None:
    part = kseg.open_partition(LOGDIR / "v2-timestamps-0")
    for kw, options in _filters("v2-timestamps-0"):
        table = part.to_arrow(columns=["offset", "timestamp"], **kw)
        assert table.column_names == ["offset", "timestamp"]
        assert list(zip(*table.to_pydict().values())) == [r[:2] for r in dump_records(LOGDIR / "v2-timestamps-0",
                                                                                      *options)]


@needs_arrow
def test_batches_stream_in_bounded_pieces() -> None:
    import pyarrow as pa

    log_dir = kseg.open_log_dir(LOGDIR)
    reader = log_dir.to_batches(batch_rows=8)
    assert isinstance(reader, pa.RecordBatchReader)
    pieces = list(reader)
    assert len(pieces) > 10 and max(p.num_rows for p in pieces) < 8 + 64  # one Kafka batch past the bound at most
    whole = log_dir.to_arrow()
    assert pa.Table.from_batches(pieces).equals(whole)
    assert whole.num_rows == sum(1 for _ in log_dir.records())


@needs_arrow
def test_arrow_damage_raises_or_skips(tmp_path: Path) -> None:
    seg, second = _damaged(tmp_path)
    with pytest.raises(kseg.CrcMismatchError):
        kseg.open_segment(seg).to_arrow()
    table = kseg.open_segment(seg).to_arrow(on_damage="skip")
    assert second not in table.column("batch_position").to_pylist()
    assert table.num_rows == len(list(kseg.open_segment(seg).records(on_damage="skip")))


def test_pandas() -> None:
    pytest.importorskip("pyarrow", reason="pyarrow is not installed (the spark extra)")
    pytest.importorskip("pandas", reason="pandas is not installed")
    df = kseg.open_partition(LOGDIR / "v2-none-0").to_pandas(columns=["offset", "value"])
    assert list(df.columns) == ["offset", "value"]
    assert list(df["offset"]) == [r[0] for r in dump_records(LOGDIR / "v2-none-0")]


# --------------------------------------------------------------------------- the public names


def test_all_is_the_public_names_and_each_resolves() -> None:
    public = [n for n in dir(kseg) if not n.startswith("_")]
    assert sorted(kseg.__all__) == kseg.__all__ == public
    for name in kseg.__all__:
        assert getattr(kseg, name) is not None, name
        assert getattr(kseg, name).__doc__, name  # each says what it is for
    # nothing else a user could take for public: the facade's own imports stay private
    stray = [n for n, v in vars(kseg).items() if not n.startswith("_") and n not in kseg.__all__
             and not (isinstance(v, ModuleType) and v.__name__ == f"kseg.{n}")]
    assert not stray, stray
    with pytest.raises(AttributeError):
        kseg.no_such_name  # noqa: B018
    page = (ROOT / "docs/reference/api.md").read_text()
    section = page[:page.index("## Reference")]  # the examples (the reference below names modules)
    named = set(re.findall(r"\bkseg\.([A-Za-z]\w*)", section))
    assert named <= set(kseg.__all__), named - set(kseg.__all__)
