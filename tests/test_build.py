"""``kseg build``: dump's JSON lines back into a partition folder, and fixture specs.

The round trips start from bytes kseg did not write through the builder (the shipped fixtures,
real broker files, segments encoded here with ``kseg.log.encode``) and must give the same
``.log`` bytes where they are the records' own (uncompressed; LogAppendTime v2 batches aside,
whose records' stored timestamps a dump does not show) and else the same records, and a
folder ``kseg verify`` finds clean.
"""

from __future__ import annotations

import json
import zlib
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from conftest import examples
from kseg.cli.main import main
from kseg.formats.attributes import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_ZSTD, LOG_APPEND_TIME
from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.log.records import batch_records
from kseg.log.segment import Segment, partition_segments, segment_file_name
from kseg.model import make_record
from kseg.ops.build import BuildOptions, build, build_records

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
INTERNAL = ROOT / "fixtures" / "internal"
REALDATA = ROOT.parent / "shared" / "realdata"
SPEC = ROOT / "examples" / "fixture-spec.json"


def kseg(*args: str, input: bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def dump_lines(path: Path, *extra: str) -> bytes:
    res = kseg("dump", "-r", "--format", "jsonl", *extra, str(path))
    assert res.exit_code in (0, 1), res.output
    return res.stdout_bytes


def records_of(log: Path) -> list[tuple]:
    """Every record of a segment as (offset, timestamp, key, value, headers)."""
    out = []
    for b in Segment(log).batches():
        out += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch_records(b)]
    return out


def exact(log: Path, *, codecs: bool = False) -> bool:
    """Whether the builder owes this segment's bytes: no batch whose records' own timestamps a
    dump does not show (LogAppendTime v2 batches and v1 wrappers show the batch's), and every
    batch uncompressed, or (``codecs``) compressed the way kseg's codecs write."""
    return all(not (b.timestamp_type == LOG_APPEND_TIME and (b.magic >= 2 or b.is_compressed))
               and (codecs or not b.is_compressed) for b in Segment(log).batches())


def assert_round_trip(src: Path, out: Path) -> None:
    """The same records, and the same bytes where owed: for the shipped fixtures (written by
    fixtures/generate.py with the codec libraries, Kafka's way) whatever the codec, for files a
    broker wrote where uncompressed (their producers' compressors vary)."""
    codecs = ROOT in src.resolve().parents
    segs = partition_segments(src) if src.is_dir() else [src]
    built = sorted(out.glob("*.log"))
    assert [p.name for p in built] == [p.name for p in segs] or not src.is_dir()
    for seg in segs:
        dst = out / seg.name if src.is_dir() else built[0]
        if dst.read_bytes() != seg.read_bytes():
            assert not exact(seg, codecs=codecs), f"{seg}: the bytes differ, and they are owed"
            assert records_of(dst) == records_of(seg), seg
    if src.is_dir() and (src / "leader-epoch-checkpoint").is_file():
        # What follows from the data: a broker's file may also hold epochs that led no batch.
        def entries(p: Path) -> set[str]:
            return set(p.read_text().splitlines()[2:])
        assert entries(out / "leader-epoch-checkpoint") <= entries(src / "leader-epoch-checkpoint")
    for txn in (src.glob("*.txnindex") if src.is_dir() else []):
        if txn.stat().st_size:
            assert (out / txn.name).read_bytes() == txn.read_bytes(), txn


def _partitions() -> list:
    found = [p for p in sorted(LOGDIR.iterdir()) if p.is_dir()] + \
            [p for p in sorted(INTERNAL.iterdir()) if p.is_dir() and p.name[-1:].isdigit() and "-" in p.name]
    if REALDATA.is_dir():
        found += sorted({p.parent for p in REALDATA.rglob("*.log") if p.parent.name[-1:].isdigit()
                         and "-" in p.parent.name})
    return [pytest.param(p, id=str(p.relative_to(ROOT.parent))) for p in found]


@pytest.mark.parametrize("src", _partitions())
def test_dump_then_build_gives_the_partition_back(src: Path, tmp_path: Path) -> None:
    out = tmp_path / src.name
    clean = kseg("verify", str(src)).exit_code == 0
    res = kseg("build", "-o", str(out), input=dump_lines(src))
    assert res.exit_code == 0, res.output
    assert_round_trip(src, out)
    if clean:
        check = kseg("verify", str(out))
        assert check.exit_code == 0, check.output


INVALID_CRC = REALDATA / "kafka-rust" / "derived" / "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.log"


@pytest.mark.skipif(not INVALID_CRC.is_file(), reason="the shared real files are not here")
def test_a_real_damaged_file_fails_the_check_and_round_trips_as_given(tmp_path: Path) -> None:
    """A real file with a bad CRC: the line's CRC disagrees with the records (exit 1, nothing
    written, the line named); --derived given writes it back byte for byte, damage included."""
    lines = dump_lines(INVALID_CRC)
    res = kseg("build", "-o", str(tmp_path / "a"), input=lines)
    assert res.exit_code == 1 and "line " in res.output and "crc" in res.output, res.output
    assert not (tmp_path / "a").exists()
    res = kseg("build", "--derived", "given", "-o", str(tmp_path / "b"), input=lines)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "b" / segment_file_name(0)).read_bytes() == INVALID_CRC.read_bytes()
    assert kseg("verify", str(tmp_path / "b")).exit_code == 1


@pytest.mark.parametrize("payload", ["hex", "base64"])
def test_every_lossless_payload_builds_the_same_bytes(payload: str, tmp_path: Path) -> None:
    src = LOGDIR / "v2-headers-0"
    res = kseg("build", "--payload", payload, "-o", str(tmp_path / "out"), input=dump_lines(src, "--payload", payload))
    assert res.exit_code == 0, res.output
    assert_round_trip(src, tmp_path / "out")


def test_a_log_directory_round_trips_with_its_partitions(tmp_path: Path) -> None:
    out = tmp_path / "logdir"
    res = kseg("build", "-o", str(out), input=dump_lines(LOGDIR))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == sorted(p.name for p in LOGDIR.iterdir() if p.is_dir())
    for part in ("v2-txn-0", "v0-gzip-0", "compacted-v2-0"):
        assert_round_trip(LOGDIR / part, out / part)
    assert (out / "recovery-point-offset-checkpoint").is_file()
    assert kseg("verify", str(out)).exit_code == 0


# --------------------------------------------------------------------------- derived fields


def _lines(src: Path) -> list[dict]:
    return [json.loads(line) for line in dump_lines(src).splitlines()]


def _text(lines: list[dict]) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in lines).encode()


def test_a_wrong_crc_is_reported_with_its_line_and_nothing_is_written(tmp_path: Path) -> None:
    lines = _lines(LOGDIR / "v2-none-0")
    batch_at = [i for i, d in enumerate(lines) if d["type"] == "batch"][1]
    lines[batch_at]["crc"] ^= 0x5A5A
    res = kseg("build", "-o", str(tmp_path / "out"), input=_text(lines))
    assert res.exit_code == 1
    errors = [line for line in res.output.splitlines() if line.startswith("kseg: error:")]
    assert len(errors) == 1 and f"line {batch_at + 1} " in errors[0] and "crc" in errors[0], res.output
    assert not (tmp_path / "out").exists()


def test_derived_given_builds_a_wrong_crc_that_verify_reports(tmp_path: Path) -> None:
    lines = _lines(LOGDIR / "v2-none-0")
    first = next(d for d in lines if d["type"] == "batch")
    first["crc"] ^= 1
    out = tmp_path / "out"
    res = kseg("build", "--derived", "given", "-o", str(out), input=_text(lines))
    assert res.exit_code == 0 and "written as given" in res.output, res.output
    check = kseg("verify", str(out))
    assert check.exit_code == 1 and "crc mismatch" in check.output, check.output


def test_derived_computed_writes_the_computed_values(tmp_path: Path) -> None:
    """A dump edited by hand (a value changed, the CRC left stale) builds with --derived computed."""
    lines = _lines(LOGDIR / "v2-none-0")
    rec = next(d for d in lines if d["type"] == "record" and "value" in d and d["value"])
    rec["value"] = "edited"
    src = _text(lines)
    assert kseg("build", "-o", str(tmp_path / "a"), input=src).exit_code == 1
    res = kseg("build", "--derived", "computed", "-o", str(tmp_path / "b"), input=src)
    assert res.exit_code == 0 and "computed value written" in res.output, res.output
    assert kseg("verify", str(tmp_path / "b")).exit_code == 0
    assert any(r[3] == b"edited" for seg in sorted((tmp_path / "b").glob("*.log")) for r in records_of(seg))


@pytest.mark.parametrize("field,value,found", [
    ("count", 7, "record count"), ("last_offset", -1, "last_offset"), ("max_timestamp", 5, "maxTimestamp")])
def test_each_derived_field_is_checked(field: str, value: int, found: str, tmp_path: Path) -> None:
    lines = _lines(LOGDIR / "v2-none-0")
    first = next(d for d in lines if d["type"] == "batch")
    first[field] = first["base_offset"] + value if field == "last_offset" else value
    res = kseg("build", "-o", str(tmp_path / "out"), input=_text(lines))
    assert res.exit_code == 1 and f"{field}: the line gives" in res.output, res.output


def test_a_truncated_tail_and_a_gap_as_given(tmp_path: Path) -> None:
    lines = _lines(LOGDIR / "v2-none-0")
    batches = [d for d in lines if d["type"] == "batch"]
    last_in_first_segment = [b for b in batches if b["file"] == batches[0]["file"]][-1]
    last_in_first_segment["size"] -= 20
    out = tmp_path / "out"
    res = kseg("build", "--derived", "given", "-o", str(out), input=_text(lines))
    assert res.exit_code == 0, res.output
    check = kseg("verify", str(out))
    assert check.exit_code == 1, check.output


def test_a_gap_in_the_offsets_is_built_as_the_lines_say(tmp_path: Path) -> None:
    """Offsets skipped inside and between batches (what compaction leaves) are data, not damage."""
    spec = tmp_path / "gap.json"
    spec.write_text(json.dumps({"batches": [{"records": [{"offset": 0, "value": "a"}, {"offset": 5, "value": "b"}]},
                                            {"base_offset": 20, "records": [{"value": "c"}]}]}))
    out = tmp_path / "out"
    res = kseg("build", str(spec), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert [r[0] for r in records_of(out / segment_file_name(0))] == [0, 5, 20]
    assert kseg("verify", str(out)).exit_code == 0


# --------------------------------------------------------------------------- usage and output rules


def test_a_bad_line_is_one_error_with_its_number(tmp_path: Path) -> None:
    text = dump_lines(LOGDIR / "v2-none-0").splitlines(keepends=True)
    text[2] = b'{"type": "record", "offset": "three"}\n'
    res = kseg("build", "-o", str(tmp_path / "out"), input=b"".join(text))
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [res.output.strip()] and "line 3" in res.output, res.output
    assert not (tmp_path / "out").exists()
    res = kseg("build", "-o", str(tmp_path / "out"), input=b"not json at all\n")
    assert res.exit_code == 2 and "kseg: error:" in res.output
    res = kseg("build", "-o", str(tmp_path / "out"), input=b"")
    assert res.exit_code == 2 and "no batch or record lines" in res.output


def test_an_existing_output_is_kept_without_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious").write_text("mine")
    lines = dump_lines(LOGDIR / "v2-none-0")
    res = kseg("build", "-o", str(out), input=lines)
    assert res.exit_code == 2 and (out / "precious").read_text() == "mine"
    res = kseg("build", "--force", "-o", str(out), input=lines)
    assert res.exit_code == 0 and not (out / "precious").exists()
    assert_round_trip(LOGDIR / "v2-none-0", out)


def test_segments_rolled_by_size(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = kseg("build", "--segment-bytes", "300", "-o", str(out), input=dump_lines(LOGDIR / "v2-none-0"))
    assert res.exit_code == 0, res.output
    segs = partition_segments(out)
    assert len(segs) > 3
    assert all(s.stat().st_size <= 300 or len(list(Segment(s).batches())) == 1 for s in segs)
    assert kseg("verify", str(out)).exit_code == 0


# --------------------------------------------------------------------------- generated partitions

_BYTES = st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=20).map(str.encode))


@st.composite
def partitions(draw) -> list[tuple[int, bytes, bool]]:
    """Segments (base offset, bytes, whether every byte is owed) of batches encoded here: every
    magic, Kafka's codecs, producer fields and transactions, LogAppendTime (whose records'
    own timestamps a dump does not show: records owed, not bytes), kept last offsets."""
    segments, offset, ts = [], draw(st.integers(0, 1000)), 1_700_000_000_000
    for _ in range(draw(st.integers(1, 3))):
        base, raw, owed = offset, b"", True
        for _ in range(draw(st.integers(1, 4))):
            magic = draw(st.sampled_from([0, 1, 2]))
            codec = draw(st.sampled_from([CODEC_NONE, CODEC_GZIP, CODEC_LZ4] + ([CODEC_ZSTD] if magic == 2 else [])))
            n = draw(st.integers(1, 4))
            recs = []
            for i in range(n):
                headers = draw(st.lists(st.tuples(st.text(max_size=5), _BYTES), max_size=2)) if magic == 2 else []
                recs.append(make_record(offset + i, -1 if magic == 0 else ts + draw(st.integers(-5, 50)),
                                        draw(_BYTES), draw(_BYTES), headers, magic=magic))
            kept = 0
            if magic == 2:
                lat, pid = draw(st.booleans()), draw(st.sampled_from([-1, 42]))
                kept = draw(st.integers(0, 2))  # the cleaner keeps a batch's last offset
                raw += build_v2_batch(recs, codec=codec, partition_leader_epoch=draw(st.integers(0, 1)),
                                      producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                                      base_sequence=offset if pid >= 0 else -1,
                                      transactional=pid >= 0 and draw(st.booleans()),
                                      timestamp_type=LOG_APPEND_TIME if lat else 0,
                                      max_timestamp=ts + 100 if lat else None,
                                      last_offset_delta=n - 1 + kept)
                owed = owed and not lat
            elif codec:
                raw += build_legacy_wrapper(recs, magic=magic, codec=codec)
            else:
                raw += b"".join(build_legacy_message(r.offset, magic, 0, r.stored_timestamp, r.key, r.value)
                                for r in recs)
            offset += n + kept + draw(st.integers(0, 3))
        segments.append((base, raw, owed))
    return segments


@examples(30)
@given(parts=partitions())
def test_generated_partitions_round_trip(parts: list[tuple[int, bytes, bool]], tmp_path_factory) -> None:
    root = tmp_path_factory.mktemp("gen")
    src = root / "gen-0"
    src.mkdir()
    for base, raw, _ in parts:
        (src / segment_file_name(base)).write_bytes(raw)
    res = kseg("build", "-o", str(root / "out"), input=dump_lines(src))
    assert res.exit_code == 0, res.output
    for base, raw, owed in parts:
        built = root / "out" / segment_file_name(base)
        if owed:  # kseg's codecs write what they wrote: every byte is owed here
            assert built.read_bytes() == raw
        else:
            assert records_of(built) == records_of(src / segment_file_name(base))
    assert kseg("verify", str(root / "out")).exit_code == 0


# --------------------------------------------------------------------------- the fixture spec and the API


def test_the_example_spec_builds_what_it_says(tmp_path: Path) -> None:
    out = tmp_path / "orders-0"
    res = kseg("build", str(SPEC), "-o", str(out))
    assert res.exit_code == 0, res.output
    assert kseg("verify", str(out)).exit_code == 0
    recs = [r for seg in partition_segments(out) for r in records_of(seg)]
    assert [r[0] for r in recs] == list(range(8))
    assert recs[0][2:4] == (b"order-1", b'{"qty": 2}') and recs[0][4][0].key == "trace"
    assert recs[1][3] is None and recs[2][2] == b"\x00\xff" and recs[2][1] == 1_700_000_005_000
    assert recs[7][1] == 1_700_000_099_000  # LogAppendTime: the batch's time
    assert [p.name for p in partition_segments(out)] == [segment_file_name(0), segment_file_name(6)]
    assert (out / segment_file_name(0, ".txnindex")).stat().st_size > 0  # the aborted transaction
    assert (out / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n1 6\n"
    txn = kseg("txn", str(out))
    assert "1 aborted" in txn.output, txn.output


def test_a_bad_spec_is_one_error(tmp_path: Path) -> None:
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps({"batches": [{"control": "MAYBE"}]}))
    res = kseg("build", str(spec), "-o", str(tmp_path / "out"))
    assert res.exit_code == 2 and "batch 1" in res.output and "COMMIT or ABORT" in res.output, res.output


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    """A partition made in a pytest fixture through the Python API."""
    recs = [make_record(i, 1_700_000_000_000 + i, f"k{i % 3}".encode(), f"v{i}".encode(), [("h", b"x")])
            for i in range(25)]
    build_records(recs, tmp_path / "orders-0", batch_records=10, codec="zstd")
    return tmp_path / "orders-0"


def test_the_python_builder_in_a_pytest_fixture(orders: Path, tmp_path: Path) -> None:
    recs = records_of(partition_segments(orders)[0])
    assert len(recs) == 25 and recs[24][2:4] == (b"k0", b"v24")
    assert len(list(Segment(partition_segments(orders)[0]).batches())) == 3
    again = build(dump_lines(orders).splitlines(), tmp_path / "again", BuildOptions())
    assert again.records == 25 and (tmp_path / "again" / segment_file_name(0)).read_bytes() == \
        (orders / segment_file_name(0)).read_bytes()
    shutil.rmtree(tmp_path / "again")


def test_build_partition_takes_a_spec_a_file_records_or_lines(tmp_path: Path) -> None:
    import kseg

    spec = json.loads(SPEC.read_text())
    a = kseg.build_partition(spec, tmp_path / "a")
    b = kseg.build_partition(SPEC, tmp_path / "b")
    assert a.records == b.records == 8
    for seg in partition_segments(tmp_path / "a"):
        assert seg.read_bytes() == (tmp_path / "b" / seg.name).read_bytes()
    kseg.build_partition([kseg.make_record(5, 1_700_000_000_000, b"k", None)], tmp_path / "c")
    assert records_of(tmp_path / "c" / segment_file_name(5)) == [(5, 1_700_000_000_000, b"k", None, ())]
    d = kseg.build_partition(dump_lines(tmp_path / "c").decode().splitlines(), tmp_path / "d")
    assert d.records == 1 and (tmp_path / "d" / segment_file_name(5)).read_bytes() == \
        (tmp_path / "c" / segment_file_name(5)).read_bytes()
    with pytest.raises(kseg.InputError, match="exists"):
        kseg.build_partition(spec, tmp_path / "a")


# --------------------------------------------------------------------------- the records a fixture must hold


def test_expect_holds_a_fixture_to_its_text(tmp_path: Path) -> None:
    from kseg.ops.expect import expect_findings

    src = LOGDIR / "v2-txn-0"
    lines = dump_lines(src).decode().splitlines()
    assert expect_findings([src], lines) == []
    records_only = [json.dumps({k: v for k, v in json.loads(line).items() if k in ("type", "offset", "key", "value")})
                    for line in lines if '"type": "record"' in line]
    assert expect_findings([src], records_only) == []
    changed = [json.loads(line) for line in lines]
    at = next(i for i, d in enumerate(changed) if d["type"] == "record" and d.get("value"))
    changed[at]["value"] = "something else"
    found = expect_findings([src], [json.dumps(d) for d in changed], source="want.jsonl")
    assert len(found) == 1 and found[0].where == f"want.jsonl line {at + 1}" and "value" in found[0].message
    assert found[0].found.startswith('"') and found[0].expected == '"something else"'
    found = expect_findings([src], lines[:-1])
    assert len(found) == 1 and "number of records" in found[0].message


class Reversed:
    """A plugin codec only this class reads (zlib, bytes reversed): deterministic, so owed byte for byte."""

    def compress(self, data: bytes) -> bytes:
        return zlib.compress(data, 6)[::-1]

    def decompress(self, data: bytes) -> bytes:
        return zlib.decompress(data[::-1])


def test_a_plugin_codec_round_trips(tmp_path: Path) -> None:
    from kseg.codecs import plugins

    cls = f"{__name__}:Reversed"
    reg = tmp_path / "registry.json"
    reg.write_text(json.dumps({"rev": {"pluginID": 4, "pluginAlias": "rev", "pluginClassName": cls,
                                       "pluginVersion": "1"}}))
    codec = plugins.PluginCodec(plugins.Registration(4, "rev", cls, "1"), Reversed())
    src = tmp_path / "t-0"
    src.mkdir()
    recs = [make_record(i, 1_700_000_000_000 + i, f"k{i}".encode(), f"v{i}".encode() * 5, [("h", b"x")])
            for i in range(6)]
    raw = b"".join(build_v2_batch(part, plugin_id=4, codec_impl=codec, partition_leader_epoch=0)
                   for part in (recs[:3], recs[3:]))
    (src / segment_file_name(0)).write_bytes(raw)
    try:
        lines = kseg("--plugin-registry", str(reg), "dump", "-r", "--format", "jsonl", str(src)).stdout_bytes
        assert lines.count(b'"codec": "plugin:rev"') == 2 and b'"plugin_id": 4' in lines
        res = kseg("--plugin-registry", str(reg), "build", "-o", str(tmp_path / "out"), input=lines)
        assert res.exit_code == 0, res.output
        assert (tmp_path / "out" / segment_file_name(0)).read_bytes() == raw
        res = kseg("build", "-o", str(tmp_path / "none"), input=lines)  # no registry: the codec is unknown
        assert res.exit_code != 0 and "line 1" in res.output and not (tmp_path / "none").exists(), res.output
    finally:
        plugins._Active.path = plugins._UNSET
        plugins._reset()


def test_a_control_record_from_its_control_object(tmp_path: Path) -> None:
    """Hand-written lines may give a marker as dump shows it, without its key and value bytes."""
    text = ('{"type": "batch", "magic": 2, "base_offset": 0, "producer_id": 9, "producer_epoch": 1, '
            '"base_sequence": 0, "is_transactional": true}\n'
            '{"type": "record", "offset": 0, "timestamp": 1700000000000, "key": "k", "value": "v"}\n'
            '{"type": "batch", "magic": 2, "producer_id": 9, "producer_epoch": 1, "is_transactional": true, '
            '"is_control": true}\n'
            '{"type": "record", "offset": 1, "timestamp": 1700000000001, "control": {"type": "COMMIT", '
            '"coordinator_epoch": 5}}\n')
    out = tmp_path / "t-0"
    res = kseg("build", "-o", str(out), input=text.encode())
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in dump_lines(out).splitlines()]
    assert lines[-1]["control"] == {"type": "COMMIT", "type_id": 1, "version": 0, "coordinator_epoch": 5}
    assert "1 committed" in kseg("txn", str(out)).output


@pytest.mark.parametrize("lines,what", [
    ('{"type": "batch", "magic": 1}\n{"type": "record", "offset": 0, "value": "v", "headers": [{"key": "h", '
     '"value": "x"}]}\n', "no headers"),
    ('{"type": "batch", "magic": 2, "is_transactional": "yes"}\n{"type": "record", "offset": 0}\n', "true or false"),
    ('{"type": "batch", "magic": 3}\n{"type": "record", "offset": 0}\n', "magic must be"),
    ('{"type": "batch", "magic": 2, "codec": "brotli"}\n{"type": "record", "offset": 0}\n', "unknown codec"),
    ('{"type": "batch", "magic": 2}\n{"type": "record", "offset": 0, "value_b64": "***"}\n', "not base64"),
    ('{"type": "batch", "magic": 2}\n{"type": "record", "timestamp": 5}\n', '"offset"'),
    ('{"type": "index_entry", "offset": 0, "position": 0}\n', "not a batch or record line"),
])
def test_lines_that_cannot_be_built(lines: str, what: str, tmp_path: Path) -> None:
    res = kseg("build", "-o", str(tmp_path / "out"), input=lines.encode())
    assert res.exit_code == 2 and what in res.output and "line " in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_the_docs_fixture_example_runs(tmp_path: Path) -> None:
    import re

    page = (ROOT / "docs/guides/ci.md").read_text()
    section = page[page.index("## Fixtures as code"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1).replace("@pytest.fixture\n", "")
    scope: dict = {}
    exec(compile(code, "docs/guides/ci.md", "exec"), scope)
    folder = scope["orders"](tmp_path)
    recs = [r for seg in partition_segments(folder) for r in records_of(seg)]
    assert len(recs) == 100 and recs[7][2] == b"k7"
    assert kseg("verify", str(folder)).exit_code == 0


def test_a_compressed_batch_the_dump_found_damaged_is_not_repaired_silently(tmp_path: Path) -> None:
    """A compressed batch's CRC is not compared (a codec may write other bytes), unless the line
    says the stored CRC did not match: then the damage is reported, or kept with --derived given."""
    src = tmp_path / "t-0"
    shutil.copytree(LOGDIR / "v2-gzip-0", src)
    log = src / segment_file_name(0)
    data = bytearray(log.read_bytes())
    data[17] ^= 0xFF  # the first batch's stored CRC (bytes 17-20)
    log.write_bytes(bytes(data))
    lines = dump_lines(src)
    assert b'"crc_valid": false' in lines
    res = kseg("build", "-o", str(tmp_path / "a"), input=lines)
    assert res.exit_code == 1 and "line 1 " in res.output and "crc" in res.output, res.output
    res = kseg("build", "--derived", "given", "-o", str(tmp_path / "b"), input=lines)
    assert res.exit_code == 0 and (tmp_path / "b" / log.name).read_bytes() == bytes(data)


@pytest.mark.parametrize("spec,where,what", [
    ({"batches": [{"records": [{"value": "a"}, {"offset": "x"}]}]}, "batch 1, record 2", '"offset" must be'),
    ({"batches": [{"records": [{"value": 1.5, "timestamp": "soon"}]}]}, "batch 1, record 1", '"timestamp" must be'),
    ({"batches": [{"codec": "brotli", "records": [{"value": "a"}]}]}, "batch 1", "unknown codec"),
    ({"batches": [{"records": []}, {"magic": 0, "records": [{"value": "a", "headers": {"h": "x"}}]}]},
     "batch 2", "no headers"),
    ({"batches": [{"control": "MAYBE"}]}, "batch 1", "COMMIT or ABORT"),
    ({"start_timestamp": "now", "batches": []}, "spec", '"start_timestamp" must be'),
])
def test_a_bad_spec_names_the_batch_and_record(spec: dict, where: str, what: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    res = kseg("build", str(path), "-o", str(tmp_path / "out"))
    assert res.exit_code == 2 and f"({where})" in res.output and what in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1


def test_a_record_under_the_wrong_batch_line(tmp_path: Path) -> None:
    text = dump_lines(LOGDIR / "v2-none-0").splitlines(keepends=True)
    text[1], text[2] = text[1].replace(b'"batch_position": 0', b'"batch_position": 999'), text[2]
    res = kseg("build", "-o", str(tmp_path / "out"), input=b"".join(text))
    assert res.exit_code == 2 and "(line 2)" in res.output and "batch_position 999" in res.output, res.output


@pytest.mark.parametrize("partition", ["v2-headers-0", "v1-gzip-0", "v2-txn-0"])
def test_verify_expect_holds_a_fixture_to_its_text(tmp_path: Path, partition: str) -> None:
    """kseg verify --expect: clean when the lines are the fixture's own dump, exit 1 with the
    expectation's line number when one value differs, exit 2 when the expectation is missing."""
    src = LOGDIR / partition
    lines = kseg("dump", "-r", "--format", "jsonl", str(src)).stdout.splitlines()
    expect = tmp_path / "expected.jsonl"
    expect.write_text("\n".join(lines) + "\n")
    ok = kseg("verify", str(src), "--expect", str(expect))
    assert ok.exit_code == 0, ok.output
    n, doc = next((n, json.loads(x)) for n, x in enumerate(lines, 1)
                  if json.loads(x)["type"] == "record" and json.loads(x).get("value") is not None)
    doc["value"] = doc["value"] + "!"
    lines[n - 1] = json.dumps(doc)
    expect.write_text("\n".join(lines) + "\n")
    bad = kseg("verify", str(src), "--expect", str(expect))
    assert bad.exit_code == 1
    assert f"(expected.jsonl line {n}): record {doc['offset']}: value is not what expected.jsonl says" in bad.output
    missing = kseg("verify", str(src), "--expect", str(tmp_path / "absent.jsonl"))
    assert missing.exit_code == 2 and "absent.jsonl" in missing.output
