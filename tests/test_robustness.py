"""Only kseg errors escape (STYLE habit 10), on both decoder paths, and the CLI never
shows a traceback.

Valid segments (spec vectors, small real files, kseg-built batches of every
magic x codec) are cut at every length, have bytes flipped, inserted and
junk appended (hypothesis). Walking them with ``Segment.batches()`` and
decoding every batch must succeed or raise a ``KsegError`` subclass, within
a time limit, with the C accelerator and with the pure-Python reference.
The CLI must answer corrupted, missing, bomb and early-closed-pipe inputs
with an exit code and at most one ``kseg: error:`` line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import subprocess
import sys
import time
import tracemalloc
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import kseg
from kseg.log import fast
from kseg.cli.main import main
from kseg.log.control import control_info
from kseg.log.encode import (
    BatchHeaderV2,
    assemble_v2,
    build_legacy_message,
    build_legacy_wrapper,
    build_v2_batch,
)
from kseg.errors import DecompressionLimitError, KsegError, TruncatedError
from kseg.model import make_record
from kseg.log.rebuild import rebuild_entry
from kseg.log.records import check_v2_batch_records
from kseg.log.segment import Segment

from conftest import REALDATA, examples, spec_vectors

LIMIT = 1 << 20  # decompression limit for fuzzed batches
TIME_LIMIT = 10  # seconds for one walk + decode; a hang fails the test
MIB = 1 << 20
KSEG = Path(sys.executable).with_name("kseg")


# --------------------------------------------------------------------------- samples


def _built_samples() -> dict[str, bytes]:
    """kseg-built entries of every magic x codec, with nulls, empties, headers, control."""
    out = {}
    for magic in (0, 1, 2):
        for codec, name in enumerate(("none", "gzip", "snappy", "lz4", "zstd")):
            if codec == 4 and magic < 2:
                continue
            recs = [make_record(100 + i, 1_700_000_000_000 + 3 * i, None if i == 1 else b"k%d" % i,
                                b"" if i == 2 else b"value-%d" % i * (i + 1),
                                [("h", b"x"), ("n", None)] if magic == 2 and i == 0 else [], magic=magic)
                    for i in range(4)]
            if magic == 2:
                raw = build_v2_batch(recs, codec=codec, producer_id=7, producer_epoch=1, base_sequence=0)
            elif codec == 0:
                raw = b"".join(build_legacy_message(r.offset, magic, 0, r.timestamp, r.key, r.value) for r in recs)
            else:
                raw = build_legacy_wrapper(recs, magic=magic, codec=codec)
            out[f"built-m{magic}-{name}"] = raw
    marker = make_record(104, 1_700_000_000_100, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 3))
    out["built-control"] = build_v2_batch([marker], control=True, transactional=True, producer_id=7,
                                          producer_epoch=1)
    return out


REAL_SMALL = [
    "kafka-gleam/00000000000000000000.log",
    "kafka-connect-spooldir/kafka-data/_confluent-command-0/00000000000000000000.log",
    "kafkajs/derived/v4_response_gzip.log",
    "kafkajs/derived/v4_response_snappy.topic-test-3.log",
    "kafkajs/derived/v2_response.log",
    "kafkajs/derived/v2_response_gzip.log",
    "kafkajs/derived/v0_response_gzip.log",
    "kafkajs/derived/v1_response_gzip.log",
    "kafkajs/derived/v4_response.log",
    "LDI-POC/bootstrap.checkpoint",
]
REAL_LARGER = [
    "kafka-rust/derived/fetch1.mytopic.1p.snappy.kafka.0822.log",
    "kafka-rust/derived/fetch1.mytopic.1p.gzip.kafka.0821.log",
]


def _samples() -> dict[str, bytes]:
    out = _built_samples()
    for p in spec_vectors():
        out[f"spec-{p.name}"] = p.read_bytes()
    for rel in REAL_SMALL + REAL_LARGER:
        p = REALDATA / rel
        if p.exists():
            out[f"real-{rel}"] = p.read_bytes()
    return out


SAMPLES = _samples()
SMALL = {k: v for k, v in SAMPLES.items() if len(v) <= 400}
NAMES = sorted(SAMPLES)


# --------------------------------------------------------------------------- the rule


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    def on_alarm(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def decode_everything(batches) -> int:
    """Decode every batch every way kseg offers; only KsegError may escape. Returns records seen."""
    n = 0
    for b in batches:
        assert b.crc_valid is (b.computed_crc() == b.crc)
        _ = (b.codec_name, b.timestamp_type_name, b.last_offset, b.last_sequence, b.delete_horizon_ms)
        try:
            records = kseg.batch_records(b, limit=LIMIT)
        except KsegError as e:
            assert e.position is not None, f"{type(e).__name__} without a byte position: {e}"
            # The upper bound (inside the batch) is test_error_position_stays_inside_the_batch.
            assert e.position >= b.position, (e.position, b.position, b.size)
            continue
        n += len(records)
        if b.is_control:
            for r in records:
                with contextlib.suppress(KsegError):
                    control_info(r)
        if b.magic >= 2:
            with contextlib.suppress(KsegError):
                check_v2_batch_records(b, limit=LIMIT)
        with contextlib.suppress(KsegError):
            rebuild_entry(b, limit=LIMIT)
    return n


def walk_bytes(buf: bytes):
    """The sans-IO walk (kseg.log.fast picks C or Python per ``ACCELERATED``)."""
    with time_limit(TIME_LIMIT):
        scan = fast.scan_entries(buf)
        if scan.tail is not None:
            err = scan.tail.error
            assert isinstance(err, KsegError)
            assert scan.tail.position == scan.consumed
            assert scan.tail.length == len(buf) - scan.consumed
            assert err.position is not None and scan.consumed <= err.position <= len(buf)
        decode_everything(scan.batches)
    return scan


def walk_file(path: Path, *, decode: bool = True, **kw):
    with time_limit(TIME_LIMIT):
        seg = Segment(path)
        batches = list(seg.batches(**kw))
        if decode:
            decode_everything(batches)
    return batches, seg.tail


def same_walk(buf: bytes, scan, batches, tail) -> None:
    """A file walk (in chunks) finds what a one-shot scan of its bytes finds."""
    assert [(b.position, bytes(b.raw)) for b in batches] == [(b.position, bytes(b.raw)) for b in scan.batches]
    if scan.tail is None:
        assert tail is None
    else:
        assert tail is not None
        assert (tail.position, tail.length, type(tail.error), tail.error.message, tail.error.position) == (
            scan.tail.position, scan.tail.length, type(scan.tail.error), scan.tail.error.message,
            scan.tail.error.position)


# --------------------------------------------------------------------------- cut, flip, junk


def test_samples_are_valid() -> None:
    assert len(SAMPLES) >= 14 + 3
    for name, buf in SAMPLES.items():
        scan = walk_bytes(buf)
        assert scan.tail is None and scan.batches, name
        assert all(b.crc_valid for b in scan.batches), name
        assert decode_everything(scan.batches) > 0, name


@pytest.mark.parametrize("name", NAMES)
def test_cut_at_every_length(name, decoder_path) -> None:
    buf = SAMPLES[name]
    full = walk_bytes(buf)
    ends = [b.position + b.size for b in full.batches]
    for n in range(len(buf)):
        scan = walk_bytes(buf[:n])
        complete = [e for e in ends if e <= n]
        assert len(scan.batches) == len(complete)
        if n == (complete[-1] if complete else 0):
            assert scan.tail is None
        else:
            assert isinstance(scan.tail.error, TruncatedError)  # a cut is truncation, never corruption


@pytest.mark.parametrize("name", sorted(SMALL))
def test_cut_files_walk_like_the_bytes(name, decoder_path, tmp_path) -> None:
    """Segment.batches() over every cut of a small file, in tiny chunks, equals the one-shot scan.

    Every cut is read as ``batches(end=n)`` of the whole file (the --max-bytes path);
    every 23rd cut is also written as a real truncated file.
    """
    buf = SMALL[name]
    whole = tmp_path / "00000000000000000000.log"
    whole.write_bytes(buf)
    cut_file = tmp_path / "00000000000000000001.log"
    for n in range(0, len(buf) + 1):
        data = buf[:n]
        scan = fast.scan_entries(data)
        # (decoding every cut is test_cut_at_every_length's job; this one is about framing)
        for chunk in (1, 40):
            batches, tail = walk_file(whole, chunk_size=chunk, end=n, decode=False)
            same_walk(data, scan, batches, tail)
        if n % 23 == 0 or n == len(buf):
            cut_file.write_bytes(data)
            batches, tail = walk_file(cut_file, chunk_size=7)
            same_walk(data, scan, batches, tail)


@pytest.mark.parametrize("name", NAMES)
def test_junk_after_a_valid_segment(name, decoder_path) -> None:
    buf = SAMPLES[name]
    original = [bytes(b.raw) for b in walk_bytes(buf).batches]
    for junk in (b"\x00", b"\x00" * 16, b"\x00" * 17, b"\xff" * 17, os.urandom(40), b"\x00" * 8 + b"\x7f\xff\xff\xff"
                 + b"\x00" * 4 + b"\x02", buf[:61]):
        scan = walk_bytes(buf + junk)
        # the valid entries are all still found, unchanged; the junk is a tail or more entries
        assert [bytes(b.raw) for b in scan.batches[: len(original)]] == original
        assert scan.tail is not None or scan.consumed == len(buf) + len(junk)


mutation = st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), min_size=1, max_size=6)


@examples(150)
@given(name=st.sampled_from(NAMES), flips=mutation, cut=st.one_of(st.none(), st.integers(0, 1 << 20)),
       junk=st.binary(max_size=24), insert=st.one_of(st.none(), st.tuples(st.integers(0, 1 << 20), st.binary(
           min_size=1, max_size=5))))
def test_flipped_bytes_raise_only_kseg_errors(decoder_path, name, flips, cut, junk, insert) -> None:
    buf = bytearray(SAMPLES[name])
    for pos, x in flips:
        buf[pos % len(buf)] ^= x
    if insert is not None:
        at = insert[0] % (len(buf) + 1)
        buf[at:at] = insert[1]
    if cut is not None:
        del buf[cut % (len(buf) + 1):]
    buf += junk
    walk_bytes(bytes(buf))


# Mutations aimed at the fields that size things: lengths, counts, varints, codec bits.
HOT_FIELDS_V2 = [8, 9, 10, 11, 16, 21, 22, 23, 57, 58, 59, 60, 61, 62, 63, 64]
HOT_FIELDS_LEGACY = [8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 26, 27, 28, 29]


@examples(150)
@given(name=st.sampled_from(sorted(k for k in SAMPLES if k.startswith("built-"))), data=st.data())
def test_hot_field_mutations_raise_only_kseg_errors(decoder_path, name, data) -> None:
    buf = bytearray(SAMPLES[name])
    hot = HOT_FIELDS_V2 if buf[16] == 2 else HOT_FIELDS_LEGACY
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.sampled_from(hot))
        buf[pos] = data.draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0x05, 0x07]))
    # fix the CRC so the mutation reaches the decoders, not just the CRC check
    if buf[16] == 2 and len(buf) >= 61:
        from crc32c import crc32c

        total = struct.unpack_from(">i", buf, 8)[0] + 12
        if 61 <= total <= len(buf):
            struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:total])))
    walk_bytes(bytes(buf))


@examples(200)
@given(data=st.binary(max_size=200), count=st.integers(-3, (1 << 31) - 1), base=st.integers(-(1 << 62), 1 << 62),
       lat=st.one_of(st.none(), st.integers(-1, 1 << 50)))
def test_random_record_bytes_raise_only_kseg_errors(decoder_path, data, count, base, lat) -> None:
    with time_limit(TIME_LIMIT):
        with contextlib.suppress(KsegError):
            fast.decode_v2_records(data, base, base, count, lat)
        with contextlib.suppress(KsegError):
            fast.check_v2_records(data, base, count)


@examples(200)
@given(body=st.binary(min_size=14, max_size=80), magic=st.sampled_from([0, 1]), attrs=st.integers(0, 255))
def test_random_legacy_messages_raise_only_kseg_errors(decoder_path, body, magic, attrs) -> None:
    buf = bytearray(struct.pack(">qi", 5, len(body)) + body)
    if len(buf) > 17:
        buf[16] = magic
        buf[17] = attrs
        buf[12:16] = zlib.crc32(bytes(buf[16:])).to_bytes(4, "big")
    walk_bytes(bytes(buf))


def _record_bytes_v2(key_length_byte: int | None = None, count: int | None = None) -> bytes:
    """One uncompressed v2 batch (key b"k") with a patched key length or record count, CRC fixed."""
    from crc32c import crc32c

    raw = bytearray(build_v2_batch([make_record(0, 1000, b"k", b"v")]))
    assert raw[61:].hex() == "10000000026b027600"
    if key_length_byte is not None:
        raw[65] = key_length_byte
    if count is not None:
        struct.pack_into(">i", raw, 57, count)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def test_error_position_stays_inside_the_batch(decoder_path) -> None:
    (b,) = fast.scan_entries(_record_bytes_v2(key_length_byte=0x7E)).batches  # key length 63, 3 bytes left
    with pytest.raises(KsegError) as ei:
        kseg.batch_records(b)
    assert ei.value.message == "key runs past its record"
    assert b.position <= ei.value.position < b.position + b.size, ei.value.position


def test_negative_record_count_error_has_a_position(decoder_path) -> None:
    (b,) = fast.scan_entries(_record_bytes_v2(count=-2), 7).batches  # the batch at file byte 7
    assert b.record_count == -2
    with pytest.raises(KsegError) as ei:
        kseg.batch_records(b)
    assert ei.value.message == "negative record count"
    assert ei.value.position is not None and b.position <= ei.value.position < b.position + b.size


def test_legacy_wrapper_value_error_is_a_file_position(decoder_path) -> None:
    first = build_legacy_message(0, 1, 0, 5, b"a", b"b")
    wrapper = bytearray(build_legacy_wrapper([make_record(1, 5, b"k", b"v", magic=1)], magic=1, codec=1))
    wrapper[26:30] = struct.pack(">i", 1000)  # key length past the message
    wrapper[12:16] = zlib.crc32(bytes(wrapper[16:])).to_bytes(4, "big")
    _, b = fast.scan_entries(first + bytes(wrapper)).batches
    assert (b.position, b.crc_valid) == (36, True)
    with pytest.raises(KsegError) as ei:
        kseg.batch_records(b)
    assert ei.value.message == "invalid key length"
    assert ei.value.position == b.position + 26


# --------------------------------------------------------------------------- CLI

RUN = CliRunner()


def cli(*args: str):
    result = RUN.invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"kseg {' '.join(args)} raised {result.exception!r}") from result.exception
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("kseg: error:")]
    if result.exit_code == 2 or (result.exit_code == 1 and not result.stdout):
        assert len(errors) == 1, result.stderr
    assert len(errors) <= 1, result.stderr
    return result


def corrupted(tmp_path: Path, name: str, mutate) -> Path:
    buf = bytearray(SAMPLES[name])
    mutate(buf)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(buf))
    return path


CORRUPTIONS = {
    "bad-magic": lambda b: b.__setitem__(16, 9),
    "flipped-crc": lambda b: b.__setitem__(18 if b[16] == 2 else 13, b[18 if b[16] == 2 else 13] ^ 0xFF),
    "flipped-payload": lambda b: b.__setitem__(len(b) - 3, b[len(b) - 3] ^ 0x5A),
    "huge-size": lambda b: b.__setitem__(slice(8, 12), b"\x7f\xff\xff\xff"),
    "tiny-size": lambda b: b.__setitem__(slice(8, 12), b"\x00\x00\x00\x05"),
    "truncated": lambda b: b.__delitem__(slice(len(b) - 5, None)),
    "junk-tail": lambda b: b.extend(b"\x00\x01garbage!"),
    "negative-count": lambda b: b.__setitem__(slice(57, 61), b"\xff\xff\xff\xfe") if b[16] == 2 else b.append(0),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("name", ["built-m2-gzip", "built-m2-none", "built-m1-snappy", "built-m0-none",
                                  "built-control"])
def test_cli_on_corrupted_files(tmp_path, name, corruption, decoder_path) -> None:
    path = corrupted(tmp_path, name, CORRUPTIONS[corruption])
    v = cli("verify", str(path))
    assert v.exit_code == 1, v.output
    assert "error" in v.stdout
    for fmt in ("text", "jsonl", "kafka"):
        d = cli("dump", "--records", "--format", fmt, str(path))
        assert d.exit_code in (0, 1), d.output
        d = cli("dump", "--records", "--keep-going", "--format", fmt, str(path))
        assert d.exit_code in (0, 1), d.output


def test_cli_dump_exit_code_reports_a_bad_tail(tmp_path) -> None:
    path = corrupted(tmp_path, "built-m2-none", CORRUPTIONS["truncated"])
    d = cli("dump", "--records", str(path))
    assert d.exit_code == 1


def test_cli_dump_undecodable_batch_is_one_error_line(tmp_path) -> None:
    path = corrupted(tmp_path, "built-m2-gzip", CORRUPTIONS["flipped-payload"])
    d = cli("dump", "--records", str(path))
    assert d.exit_code == 1
    (line,) = d.stderr.splitlines()
    assert line.startswith(f"kseg: error: {path}: at byte 0")


@examples(40)
@given(name=st.sampled_from(NAMES), flips=mutation, cut=st.integers(0, 1 << 20))
def test_cli_fuzz_never_tracebacks(tmp_path_factory, name, flips, cut) -> None:
    buf = bytearray(SAMPLES[name])
    for pos, x in flips:
        buf[pos % len(buf)] ^= x
    del buf[max(1, cut % (len(buf) + 1)):]
    path = tmp_path_factory.mktemp("fuzz") / "00000000000000000000.log"
    path.write_bytes(bytes(buf))
    with time_limit(TIME_LIMIT):
        assert cli("verify", str(path)).exit_code in (0, 1)
        assert cli("dump", "--records", "--format", "jsonl", str(path)).exit_code in (0, 1)
        assert cli("dump", "--records", "--format", "kafka", "--payload", "utf8", str(path)).exit_code in (0, 1)


@pytest.mark.parametrize("fmt", ["text", "jsonl", "kafka"])
def test_cli_invalid_utf8_header_key_dumps_without_crashing(tmp_path, fmt) -> None:
    from kseg.model import Header

    rec = make_record(0, 1000, b"k", b"v", [Header(b"\xff\xfe".decode("utf-8", "surrogateescape"), b"x")])
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(build_v2_batch([rec]))
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    proc = subprocess.run([str(KSEG), "dump", "--records", "--format", fmt, str(path)], capture_output=True,
                          env=env, timeout=60)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")[-300:]
    assert proc.returncode == 0


def test_cli_missing_file_exits_2(tmp_path) -> None:
    missing = tmp_path / "00000000000000000000.log"
    for args in (("verify",), ("dump",), ("dump", "--records")):
        r = cli(*args, str(missing))
        assert r.exit_code == 2
        (line,) = r.stderr.splitlines()
        assert line.startswith("kseg: error:") and str(missing) in line


def test_cli_error_line_shape_without_a_position(tmp_path) -> None:
    missing = tmp_path / "00000000000000000000.log"
    r = cli("verify", str(missing))
    assert r.stderr.strip() == f"kseg: error: {missing}: no such file or directory"


def test_cli_usage_error_exits_2() -> None:
    r = RUN.invoke(main, ["dump", "--format", "nonsense", "x.log"])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_truncated_tail_is_reported_with_its_byte_position(tmp_path) -> None:
    buf = SAMPLES["built-m2-none"] + SAMPLES["built-m2-gzip"][:40]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(buf)
    pos = len(SAMPLES["built-m2-none"])
    v = cli("verify", str(path))
    assert v.exit_code == 1 and f"at byte {pos}: 40 bytes at the end do not form a complete batch" in v.stdout
    d = cli("dump", "--records", "--format", "jsonl", str(path))
    assert f'"type": "trailing", "file": "{path}", "position": {pos}, "length": 40' in d.stdout
    seg = Segment(path)
    list(seg.batches())
    assert (seg.tail.position, seg.tail.length, seg.tail.error.position) == (pos, 40, pos)


# --------------------------------------------------------------------------- decompression bomb


def gzip_bomb(total: int, piece: int = MIB) -> bytes:
    """A valid gzip member of ``total`` zero bytes, built from one compressed piece.

    After a full flush zlib resets its window, so the bytes it emits for the
    next ``piece`` zeros are self-contained and can be repeated: only 2 pieces
    are ever compressed and the ~2 MiB result never expands in the test.
    """
    assert total % piece == 0
    zeros = bytes(piece)
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = co.compress(zeros) + co.flush(zlib.Z_FULL_FLUSH)
    again = co.compress(zeros) + co.flush(zlib.Z_FULL_FLUSH)
    end = co.flush(zlib.Z_FINISH)[:-8]  # final empty block; the trailer is ours
    crc = 0
    for _ in range(total // piece):
        crc = zlib.crc32(zeros, crc)
    return first + again * (total // piece - 1) + end + struct.pack("<II", crc, total & 0xFFFFFFFF)


def test_gzip_bomb_construction_is_valid() -> None:
    small = gzip_bomb(4 * MIB)
    assert zlib.decompress(small, 31) == bytes(4 * MIB)


@pytest.fixture(scope="module")
def bomb_segment(tmp_path_factory) -> Path:
    payload = gzip_bomb(2 << 30)
    assert len(payload) < 4 * MIB
    header = BatchHeaderV2(base_offset=0, last_offset_delta=0, base_timestamp=1_700_000_000_000,
                           max_timestamp=1_700_000_000_000, record_count=1, attributes=1)
    path = tmp_path_factory.mktemp("bomb") / "00000000000000000000.log"
    path.write_bytes(assemble_v2(header, payload))
    return path


def test_gzip_bomb_fails_verify_fast_and_small(bomb_segment) -> None:
    (batch,) = kseg.open_segment(bomb_segment).batches()
    assert batch.crc_valid and batch.codec_name == "gzip"
    tracemalloc.start()
    t0 = time.monotonic()
    try:
        r = cli("verify", "--max-decompressed-bytes", "16MiB", str(bomb_segment))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.monotonic() - t0
    assert r.exit_code == 1
    assert "decompression limit" in r.stdout
    assert elapsed < 10, elapsed
    assert peak < 80 * MIB, peak


def test_gzip_bomb_dump_is_one_error_line(bomb_segment) -> None:
    r = cli("dump", "--records", "--max-decompressed-bytes", "16MiB", str(bomb_segment))
    assert r.exit_code == 1
    (line,) = r.stderr.splitlines()
    assert line.startswith("kseg: error:") and "decompression limit" in line
    with pytest.raises(DecompressionLimitError) as ei:
        kseg.batch_records(next(kseg.open_segment(bomb_segment).batches()), limit=16 * MIB)
    assert ei.value.position == 0 and ei.value.where == "gzip payload"


def test_legacy_wrapper_bomb_is_bounded(tmp_path) -> None:
    from kseg.log.encode import wrap_legacy

    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(wrap_legacy(41, 1, 1, gzip_bomb(256 * MIB), timestamp=5))
    (batch,) = kseg.open_segment(path).batches()
    with pytest.raises(DecompressionLimitError):
        kseg.batch_records(batch, limit=8 * MIB)


# --------------------------------------------------------------------------- pipes


def test_dump_into_a_closed_pipe_has_no_traceback() -> None:
    big = REALDATA / "LDI-POC/__cluster_metadata-0/00000000000000000000.log"
    if not big.exists() or not KSEG.exists():
        pytest.skip("needs the LDI-POC metadata log and the kseg script")
    for args in (["dump", "--records"], ["dump", "--records", "--format", "jsonl"], ["dump", "--format", "kafka"]):
        proc = subprocess.Popen([str(KSEG), *args, str(big)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first = proc.stdout.readline()
        proc.stdout.close()  # `| head -1`
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert first
        assert b"Traceback" not in err and b"BrokenPipe" not in err and b"Exception ignored" not in err, err
        assert proc.returncode in (0, -signal.SIGPIPE), (proc.returncode, err)
