"""Real Kafka files: kseg must see what the independent checker wrote down.

Every .log/.checkpoint row of /work/shared/realdata/SOURCES.md and every
binary vector of vectors.md (and the spec's §11 vectors) is decoded through
the public API; entry, record, magic and codec counts, offset ranges, bad CRCs
and trailing bytes must equal the check column. ``kseg verify`` must exit 0
on the good files and 1 on the known-bad ones. The data is read-only.

Tolerated differences from the checker, all in one place:
* ``ts=`` lists the timestamp type of v1/v2 entries; v0 entries show ``-``.
* ``records=`` counts records of decodable batches. A batch whose records do
  not decode is listed in ``UNDECODABLE`` with the reason; the checker only
  framed and CRC-checked it.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from crc32c import crc32c

import kseg
from kseg.cli.main import main
from kseg.companions.check import companion_paths
from kseg.log.control import control_info
from kseg.log.decode import scan_entries
from kseg.log.encode import legacy_message_crc
from kseg.errors import CorruptBatchError, KsegError, TruncatedError, UnsupportedCodecError

from conftest import (
    REALDATA,
    SPEC_VECTORS_DIR,
    kseg_view,
    log_like_vectors,
    sources_expectations,
    spec_vectors,
    vector_entries,
)

EXPECTATIONS = [e for e in sources_expectations() if e.path.exists()]
if not EXPECTATIONS:
    pytest.skip("no real data under /work/shared/realdata", allow_module_level=True)

# Vectors whose records kseg refuses, with the reason (the checker only framed them).
UNDECODABLE = {
    # attributes say "none" but the records region is a zstd frame (kafkajs fixture quirk):
    "kafkajs/v0_recordbatch_zstd.json": CorruptBatchError,
}


def run_cli(*args: str):
    result = CliRunner().invoke(main, list(args))
    # CliRunner maps an uncaught exception to exit code 1: make that a failure.
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"kseg {' '.join(args)} raised {result.exception!r}") from result.exception
    return result


# --------------------------------------------------------------------------- SOURCES.md


def test_sources_table_was_parsed() -> None:
    # 60 log files plus 4 TRUNCATED partial-message fragments are listed today.
    assert len(EXPECTATIONS) >= 60
    assert sum(e.truncated for e in EXPECTATIONS) == 4
    assert any(e.crc_bad for e in EXPECTATIONS) and any(e.trailing and not e.truncated for e in EXPECTATIONS)


@pytest.mark.parametrize("exp", EXPECTATIONS, ids=[e.id for e in EXPECTATIONS])
def test_real_file_matches_sources(exp) -> None:
    seen = kseg_view(exp.path)
    assert seen.record_errors == []
    assert seen.entries == exp.entries
    assert seen.trailing == exp.trailing
    assert seen.crc_bad == exp.crc_bad
    if exp.truncated:
        assert isinstance(seen.tail.error, TruncatedError)
        assert seen.tail.position == 0
        return
    assert seen.records == exp.records
    assert dict(seen.magic) == exp.magic
    assert dict(seen.codecs) == exp.codecs
    if seen.offsets:
        assert (min(seen.offsets), max(seen.offsets)) == exp.offsets
    if exp.ts and exp.ts != "-":
        assert seen.ts_types == {exp.ts}
    elif exp.ts == "-":
        assert seen.ts_types == {"-"}
    if exp.producer_ids is not None:
        assert len(seen.producer_ids) == exp.producer_ids
    if exp.control is not None:
        assert (sum(seen.control.values()), dict(seen.control)) == exp.control
    else:
        assert not seen.control
    if exp.headers is not None:
        assert seen.headers == exp.headers
    if exp.trailing:
        assert seen.tail is not None and seen.tail.position + seen.tail.length == exp.path.stat().st_size
    else:
        assert seen.tail is None


@pytest.mark.parametrize("exp", EXPECTATIONS, ids=[e.id for e in EXPECTATIONS])
def test_verify_exit_code(exp) -> None:
    result = run_cli("verify", str(exp.path))
    assert result.exit_code == (1 if exp.bad else 0), result.output
    assert "Traceback" not in result.output
    if exp.bad:
        assert "error" in result.stdout
    else:
        assert "0 with errors, 0 error(s)" in result.stdout


def test_verify_quick_agrees_on_every_good_file() -> None:
    good = [str(e.path) for e in EXPECTATIONS if not e.bad]
    result = run_cli("verify", "--quick", *good)
    assert result.exit_code == 0, result.output
    # Index files beside a segment are checked with it and counted as files of their own.
    indexes = sum(cp.is_file() for g in good for cp in companion_paths(g).values())
    assert f"{len(good) + indexes} file(s) checked, 0 with errors" in result.stdout


def test_truncated_tail_is_reported_with_its_position() -> None:
    exp = next(e for e in EXPECTATIONS if e.trailing and not e.truncated)
    size = exp.path.stat().st_size
    result = run_cli("verify", str(exp.path))
    assert result.exit_code == 1
    assert f"at byte {size - exp.trailing}" in result.stdout
    assert f"{exp.trailing} bytes at the end" in result.stdout


def test_partial_message_fragment_verify_names_byte_0() -> None:
    exp = next(e for e in EXPECTATIONS if e.truncated)
    result = run_cli("verify", str(exp.path))
    assert result.exit_code == 1
    assert "at byte 0:" in result.stdout and "1024 bytes at the end do not form a complete batch" in result.stdout


def test_bad_crc_file_is_flagged_with_both_crcs() -> None:
    exp = next(e for e in EXPECTATIONS if e.crc_bad)
    result = run_cli("verify", "--format", "json", str(exp.path))
    assert result.exit_code == 1
    assert '"check": "crc"' in result.stdout
    (batch,) = list(kseg.open_segment(exp.path).batches())
    assert batch.computed_crc() != batch.crc
    assert f"{batch.crc:#010x}" in result.stdout and f"{batch.computed_crc():#010x}" in result.stdout


def test_kafka_rust_invalid_crc_copy_differs_only_in_the_crc() -> None:
    bad = REALDATA / "kafka-rust/derived/fetch2.mytopic.nocompression.invalid_crc.kafka.0900.log"
    good = REALDATA / "kafka-rust/derived/fetch2.mytopic.nocompression.kafka.0900.log"
    if not (bad.exists() and good.exists()):
        pytest.skip("kafka-rust fetch2 pair not present")
    (b,) = kseg.open_segment(bad).batches()
    (g,) = kseg.open_segment(good).batches()
    assert kseg.batch_records(b) [0][2:4] == kseg.batch_records(g)[0][2:4]
    assert not b.crc_valid and g.crc_valid and b.computed_crc() == g.crc


def test_verify_a_whole_partition_folder_and_log_dir() -> None:
    folder = REALDATA / "Experts-in-team-innovation/kafka/data"
    if not folder.is_dir():
        pytest.skip("Experts-in-team-innovation not present")
    result = run_cli("verify", str(folder))
    assert result.exit_code == 0, result.output
    assert "0 with errors" in result.stdout


# --------------------------------------------------------------------------- vectors.md

LOG_VECTORS = log_like_vectors()
LEGACY_BODIES = [v for v in vector_entries() if v.check.startswith("legacy message")]


def _vector_view(path: Path):
    seen = kseg_view(path)
    ctrl_batches = sum(1 for b in kseg.open_segment(path).batches() if b.is_control)
    return seen, ctrl_batches


@pytest.mark.parametrize("vec", LOG_VECTORS, ids=[v.id for v in LOG_VECTORS])
def test_vector_matches_its_check_line(vec) -> None:
    check = vec.check
    want = {k: int(v) for k, v in re.findall(r"\b(entries|bad_crc|trailing|ctrl|txn)=(\d+)", check)}
    seen, ctrl_batches = _vector_view(vec.path)
    assert seen.entries == want["entries"]
    assert seen.crc_bad == want["bad_crc"]
    assert seen.trailing == want["trailing"]
    assert ctrl_batches == want["ctrl"]
    txn = sum(1 for b in kseg.open_segment(vec.path).batches() if b.is_transactional)
    assert txn == want["txn"]
    magic = re.search(r"magic=(\{[^}]*\})", check).group(1)
    codecs = re.search(r"codecs=(\{[^}]*\})", check).group(1)
    assert dict(seen.magic) == eval(magic)  # noqa: S307 - literal dicts from our own data file
    assert dict(seen.codecs) == eval(codecs)  # noqa: S307
    expected_error = UNDECODABLE.get(vec.id)
    if expected_error is None:
        assert seen.record_errors == []
    else:
        assert [type(e) for e in seen.record_errors] == [expected_error]


# Vectors the checker calls clean but that kseg verify rejects, with the reason (all hand-made
# or spliced; each reason is a real violation of the format rules in the spec).
VERIFY_FINDS = {
    "kafka-python/record_batch_data_v2[2]": "offsets do not increase",  # two batches spliced: offsets 3 then 0
    "kafka-python/control_batch_data_v2[0]": "transaction marker in a non-transactional batch",
    'sarama/case "uncompressed record"': "maxTimestamp is not the largest record timestamp",
    'sarama/case "gzipped record"': "maxTimestamp is not the largest record timestamp",
    'sarama/case "snappy compressed record"': "maxTimestamp is not the largest record timestamp",
    'sarama/case "lz4 compressed record"': "maxTimestamp is not the largest record timestamp",
    "kafkajs/v0_recordbatch_zstd.json": "runs past its record",
}


@pytest.mark.parametrize("vec", LOG_VECTORS, ids=[v.id for v in LOG_VECTORS])
def test_verify_on_vectors(vec, tmp_path) -> None:
    want = {k: int(v) for k, v in re.findall(r"\b(bad_crc|trailing)=(\d+)", vec.check)}
    result = run_cli("verify", str(as_log(vec.path, tmp_path)))
    bad = want["bad_crc"] or want["trailing"] or vec.id in VERIFY_FINDS
    assert result.exit_code == (1 if bad else 0), result.stdout
    if vec.id in VERIFY_FINDS:
        assert VERIFY_FINDS[vec.id] in result.stdout
    if want["bad_crc"]:
        assert "crc mismatch" in result.stdout
    if want["trailing"]:
        assert f"{want['trailing']} bytes at the end" in result.stdout


def as_log(vec_path: Path, tmp_path: Path) -> Path:
    """A copy named like a segment: ``kseg verify`` checks only .log/.checkpoint names as logs."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(vec_path.read_bytes())
    return path


def test_verify_reads_a_vector_named_bin_as_a_log() -> None:
    # A file that is not a known companion is verified as a log, as dump reads it.
    vec = LOG_VECTORS[0]
    result = run_cli("verify", "-v", str(vec.path))
    assert result.exit_code == 0, result.stdout
    assert "1 file(s) checked, 0 with errors" in result.stdout and " batches" in result.stdout


def test_kafka_python_vector_with_two_batches_goes_backwards(tmp_path) -> None:
    vec = next((v for v in LOG_VECTORS if v.id == "kafka-python/record_batch_data_v2[2]"), None)
    if vec is None:
        pytest.skip("vector not present")
    batches = list(kseg.open_segment(vec.path).batches())
    assert [b.offset for b in batches] == [3, 0]
    assert kseg.batch_records(batches[1])[0].headers == (kseg.Header("hkey", b"hval"),)
    result = run_cli("verify", str(as_log(vec.path, tmp_path)))
    assert result.exit_code == 1 and "offsets do not increase" in result.stdout


def test_vector_with_undecodable_records_fails_verify(tmp_path) -> None:
    vec = next((v for v in LOG_VECTORS if v.id in UNDECODABLE), None)
    if vec is None:
        pytest.skip("vector not present")
    result = run_cli("verify", str(as_log(vec.path, tmp_path)))
    assert result.exit_code == 1 and "runs past its record" in result.stdout


@pytest.mark.parametrize("vec", LEGACY_BODIES, ids=[v.id for v in LEGACY_BODIES])
def test_legacy_message_bodies(vec, tmp_path) -> None:
    """Sarama's message bodies start at the CRC: add offset+size framing and read them."""
    body = vec.path.read_bytes()
    want = dict(re.findall(r"(\w+)=(\S+)", vec.check))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(struct.pack(">qi", 0, len(body)) + body)
    magic = int(want["magic"])
    scan = scan_entries(path.read_bytes())
    if magic > 1:
        # A v2 magic in a legacy frame: too short for a v2 batch, so the walk stops.
        assert scan.batches == [] and isinstance(scan.tail.error, CorruptBatchError)
        assert scan.tail.error.position == 8  # the size field
        return
    (batch,) = kseg.open_segment(path).batches()
    assert batch.magic == magic
    assert batch.attributes == int(want["attrs"], 16)
    assert batch.codec_name == want["codec"]
    assert batch.crc_valid is (want["crc_ok"] == "True")
    if want["codec"] == "zstd":
        with pytest.raises(UnsupportedCodecError):
            kseg.batch_records(batch)  # zstd is not allowed with magic < 2 (spec §2.2)
        return
    try:
        records = kseg.batch_records(batch)
    except CorruptBatchError as e:
        # Sarama's "empty" wrappers compress an empty message set: Java refuses those too.
        assert "Bulk" not in vec.name and batch.is_compressed
        assert "no inner messages" in e.message
        return
    # Inner magic normally equals the wrapper's; Sarama's v1 LZ4 sample wraps v0 messages.
    assert all(r.magic <= magic for r in records)
    assert all(legacy_message_crc(r) == r.crc for r in records)
    if "Bulk" in vec.name:
        assert len(records) == 2
        assert [r.offset for r in records] == sorted({r.offset for r in records})


def test_kafkajs_message_sets_with_size_prefix(tmp_path) -> None:
    by_name = {v.name: v for v in vector_entries()}
    gz, plain = by_name.get("messages_v0_GZIP.json"), by_name.get("messages_v0_uncompressed.json.json")
    if gz is None or plain is None:
        pytest.skip("kafkajs message set vectors not present")
    for vec, count in ((gz, 1), (plain, 3)):
        raw = vec.path.read_bytes()
        (size,) = struct.unpack_from(">i", raw)
        assert size == len(raw) - 4
        path = tmp_path / f"{vec.name}.log"
        path.write_bytes(raw[4:])
        seg = kseg.open_segment(path)
        batches = list(seg.batches())
        assert seg.tail is None and len(batches) == count and all(b.crc_valid for b in batches)
        records = [r for b in batches for r in kseg.batch_records(b)]
        assert [r.key for r in records] == [b"key-0", b"key-1", b"key-2"]
        assert [r.value for r in records] == [b"some-value-0", b"some-value-1", b"some-value-2"]
        assert [r.offset for r in records] == [0, 1, 2]


def test_kafkajs_crc_payload() -> None:
    vec = next((v for v in vector_entries() if v.name == "crcPayload.json"), None)
    if vec is None:
        pytest.skip("vector not present")
    expected = int(re.search(r"expect (\d+)", vec.check).group(1))
    assert crc32c(vec.path.read_bytes()) == expected


def test_every_vector_decodes_or_raises_a_kseg_error() -> None:
    """Vectors without a check line (fetch responses, control keys, fuzz finds) as .log bytes."""
    vectors = vector_entries()
    assert len(vectors) >= 50
    for vec in vectors:
        data = vec.path.read_bytes()
        for buf in (data, struct.pack(">qi", 0, len(data)) + data):
            scan = scan_entries(buf)
            for b in scan.batches:
                try:
                    kseg.batch_records(b, limit=1 << 20)
                except KsegError:
                    pass


# --------------------------------------------------------------------------- spec §11 vectors

SPEC = spec_vectors()


def test_spec_vectors_present() -> None:
    if not SPEC_VECTORS_DIR.is_dir():
        pytest.skip("spec vectors not present")
    assert {p.name for p in SPEC} >= {"sample-v1-gzip-wrapper.bin", "sample-v1.bin", "sample-v2.bin"}


@pytest.mark.parametrize("path", SPEC, ids=[p.name for p in SPEC])
def test_spec_vector_is_clean(path) -> None:
    seen = kseg_view(path)
    assert seen.entries >= 1 and seen.crc_bad == 0 and seen.trailing == 0 and seen.record_errors == []
    assert run_cli("verify", str(path)).exit_code == 0


def _spec(name: str) -> Path:
    path = SPEC_VECTORS_DIR / name
    if not path.exists():
        pytest.skip(f"{name} not present")
    return path


def test_spec_v2_vector_fields() -> None:
    (b,) = kseg.open_segment(_spec("sample-v2.bin")).batches()
    assert (b.size, b.crc, b.record_count, b.partition_leader_epoch) == (85, 0x6A8990A3, 2, 0)
    r1, r2 = kseg.batch_records(b)
    assert (r1.offset, r1.timestamp, r1.key, r1.value, r1.headers) == (0, 1700000000000, b"k1", b"v1", ())
    assert (r2.offset, r2.timestamp, r2.key, r2.value) == (1, 1700000000005, None, b"v2")
    assert r2.headers == (kseg.Header("h", b"x"),)


def test_spec_v1_vector_fields() -> None:
    """sample-v1.bin holds the §11 v1 message followed by the §11 v0 message."""
    b, v0 = kseg.open_segment(_spec("sample-v1.bin")).batches()
    assert (b.offset, b.size, b.crc, b.magic, b.timestamp) == (7, 42, 0x6AD05DB8, 1, 1700000000000)
    (r,) = kseg.batch_records(b)
    assert (r.key, r.value) == (b"key", b"value")
    assert (v0.offset, v0.size, v0.crc, v0.magic, v0.timestamp, v0.timestamp_type) == (8, 31, 0xACC08400, 0, -1, -1)
    (r0,) = kseg.batch_records(v0)
    assert (r0.key, r0.value) == (None, b"value")


def test_spec_v1_gzip_wrapper_with_hole_and_log_append_time(tmp_path) -> None:
    raw = _spec("sample-v1-gzip-wrapper.bin").read_bytes()
    (b,) = kseg.open_segment(_spec("sample-v1-gzip-wrapper.bin")).batches()
    assert (b.offset, b.magic, b.codec_name, b.timestamp_type_name) == (102, 1, "gzip", "CreateTime")
    records = kseg.batch_records(b)
    assert [r.offset for r in records] == [100, 102]
    assert [r.key for r in records] == [b"a", b"c"]
    # verify reports the hole as a note, not an error
    result = run_cli("verify", str(as_log(_spec("sample-v1-gzip-wrapper.bin"), tmp_path)))
    assert result.exit_code == 0 and "holes in the inner offsets" in result.stdout
    # As the broker stamps LogAppendTime in place (spec §2.3): attribute 0x09, wrapper
    # timestamp, new CRC; the inner messages keep their CreateTime values.
    stamped = bytearray(raw)
    stamped[17] = 0x09
    stamped[18:26] = (1800000000000).to_bytes(8, "big")
    stamped[12:16] = zlib.crc32(bytes(stamped[16:])).to_bytes(4, "big")
    path = tmp_path / "00000000000000000100.log"
    path.write_bytes(bytes(stamped))
    (s,) = kseg.open_segment(path).batches()
    assert s.crc_valid and s.timestamp_type_name == "LogAppendTime"
    stamped_records = kseg.batch_records(s)
    assert [r.timestamp for r in stamped_records] == [1800000000000] * 2
    assert [r.stored_timestamp for r in stamped_records] == [r.stored_timestamp for r in records]


def test_spec_hex_vectors_of_section_11(tmp_path) -> None:
    """The v0 message and the cleaner's empty v2 batch are only given as hex."""
    v0 = bytes.fromhex("0000000000000008 00000013 acc08400 00 00 ffffffff 00000005 76616c7565".replace(" ", ""))
    empty = bytes.fromhex(
        "0000000000000064 00000031 00000005 02 87f0f5b0 0000 00000004 ffffffffffffffff "
        "0000018bcfe56800 000000000000002a 0003 0000000a 00000000".replace(" ", "")
    )
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(v0 + empty)
    a, b = kseg.open_segment(path).batches()
    assert a.crc_valid and b.crc_valid
    assert (a.magic, a.offset, a.crc, a.size) == (0, 8, 0xACC08400, 31)
    assert kseg.batch_records(a)[0][2:4] == (None, b"value")
    assert (b.offset, b.last_offset, b.partition_leader_epoch, b.producer_id, b.producer_epoch) == (100, 104, 5, 42, 3)
    assert (b.base_sequence, b.base_timestamp, b.timestamp, b.record_count) == (10, -1, 1700000000000, 0)
    assert kseg.batch_records(b) == []


def test_control_record_types_of_real_kraft_files() -> None:
    exp = [e for e in EXPECTATIONS if e.control]
    assert exp
    for e in exp:
        names = Counter()
        for b in kseg.open_segment(e.path).batches():
            if b.is_control:
                (r,) = kseg.batch_records(b)
                names[control_info(r).type_name] += 1
        assert dict(names) == e.control[1]
