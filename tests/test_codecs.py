"""Codec tests: round trips, kafka-python as an oracle, exact framings, bombs, fuzz.

Rules: every codec is run with every magic it allows; every decode of
foreign or broken bytes either succeeds or raises a KsegError; bombs must
fail fast without allocating their output.
"""

from __future__ import annotations

import hashlib
import random
import struct
import time
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
import snappy
import xxhash
import zstandard
from hypothesis import given
from hypothesis import strategies as st
from conftest import examples
from kafka import codec as kafka_codec

from kseg.codecs import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    Codec,
    codec_by_name,
    get_codec,
    get_kafka07_codec,
    register_codec,
    registered_codecs,
    unregister_codec,
)
from kseg.codecs.kafka_lz4 import (
    KAFKA_LZ4_HEADER,
    KAFKA_LZ4_HEADER_V0,
    _kafka_frame,
    break_header_checksum,
    fix_header_checksum,
    header_checksum,
)
from kseg.codecs.xerial import XERIAL_HEADER, raw_uncompressed_length, xerial_encode
from kseg.errors import (
    DecompressionError,
    DecompressionLimitError,
    InputError,
    KsegError,
    UnsupportedCodecError,
)
from kseg.formats.attributes import CODEC_NAMES
from kseg.log.decode import legacy_value_region, records_region, scan_entries
from kseg.log.records import payload_bytes

from conftest import REPO  # noqa: E402
from conftest import SPEC_VECTORS_DIR as SPEC_VECTORS  # noqa: E402
MIB = 1 << 20
KIB = 1 << 10

ALL_CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
MAGICS = [0, 1, 2]
CODEC_MAGICS = [
    pytest.param(codec, magic, id=f"{codec.name}-m{magic}")
    for codec in ALL_CODECS
    for magic in MAGICS
    if codec.allows_magic(magic)
]


def payload(seed: int, size: int, mode: int) -> bytes:
    """Deterministic test data: random, zeros, short repeats, repeated runs, or words."""
    rng = random.Random(seed)
    if mode == 4:
        words = [rng.randbytes(rng.randint(2, 9)).hex().encode() for _ in range(300)]
        return b" ".join(rng.choice(words) for _ in range(size // 4 + 1))[:size]
    if mode == 0:
        return rng.randbytes(size)
    if mode == 1:
        return bytes(size)
    if mode == 2:
        unit = rng.randbytes(rng.randint(1, 40))
        return (unit * (size // len(unit) + 1))[:size]
    parts = []
    while sum(map(len, parts)) < size:
        parts.append(rng.randbytes(rng.randint(1, 300)) * rng.randint(1, 50))
    return b"".join(parts)[:size]


# Sizes around the 32 KiB xerial chunk and the 64 KiB LZ4 block.
EDGE_SIZES = [0, 1, 15, 16, 17]
EDGE_SIZES += [32 * KIB - 1, 32 * KIB, 32 * KIB + 1, 64 * KIB, 64 * KIB + 1, 200 * KIB]

payloads = st.one_of(
    st.binary(max_size=300),
    st.builds(payload, st.integers(0, 2**32), st.integers(0, 200 * KIB), st.integers(0, 4)),
)


def only_kseg_errors(codec: Codec, data: bytes, magic: int, limit: int = MIB) -> None:
    """Decode and accept success or a KsegError; anything else fails the test."""
    try:
        out = codec.decompress(data, magic=magic, limit=limit)
    except KsegError:
        return
    assert isinstance(out, bytes)
    assert len(out) <= max(limit, len(data))


# --- round trips -------------------------------------------------------------


@pytest.mark.parametrize(("codec", "magic"), CODEC_MAGICS)
@given(data=payloads)
@examples(25)
def test_round_trip(codec: Codec, magic: int, data: bytes) -> None:
    packed = codec.compress(data, magic=magic)
    assert codec.decompress(packed, magic=magic) == data
    # A memoryview into a larger buffer, as the segment decoder will pass it.
    framed = b"\xee" * 3 + packed + b"\xee" * 5
    assert codec.decompress(memoryview(framed)[3 : 3 + len(packed)], magic=magic) == data


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@given(data=payloads, flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(1, 255)), max_size=3),
       cut=st.integers(0, 64), limit=st.sampled_from([MIB, 1 << 28, 100, 0]))
@examples(25)
def test_whole_v2_payloads_read_as_decompress_reads_them(codec: Codec, data: bytes, flips, cut: int,
                                                          limit: int) -> None:
    """``decompress_v2_whole`` (verify's one library call per payload) gives what ``decompress``
    gives, or None; never an error of its own, whatever the bytes."""
    packed = bytearray(codec.compress(data, magic=2))
    for at, x in flips:
        if packed:
            packed[at % len(packed)] ^= x
    view = memoryview(bytes(packed[:max(0, len(packed) - cut)] if cut % 4 == 0 else packed))
    whole = codec.decompress_v2_whole(view, limit)
    if whole is not None:
        assert whole == codec.decompress(view, magic=2, limit=limit)
    if not flips and cut % 4 and limit == 1 << 28 and codec.name in ("gzip", "zstd") and len(view) <= 8192:
        assert whole == data  # the common case is taken (the default limit lets zstd feed 8 KiB at once)


@pytest.mark.parametrize(("codec", "magic"), CODEC_MAGICS)
@pytest.mark.parametrize("size", EDGE_SIZES)
def test_round_trip_edge_sizes(codec: Codec, magic: int, size: int) -> None:
    for mode in (0, 3):
        data = payload(size, size, mode)
        packed = codec.compress(data, magic=magic)
        assert codec.decompress(bytearray(packed), magic=magic) == data


@pytest.mark.parametrize(
    ("codec", "levels"),
    [(GZIP, [-1, 1, 5, 9]), (LZ4, [1, 3, 9, 12, 17]), (ZSTD, [-131072, -5, 1, 3, 19, 22])],
)
def test_levels(codec: Codec, levels: list[int]) -> None:
    data = payload(7, 100 * KIB, 4)
    outputs = set()
    for level in levels:
        packed = codec.compress(data, level=level)
        assert codec.decompress(packed) == data
        outputs.add(packed)
    assert len(outputs) > 1  # the level reaches the library


@pytest.mark.parametrize(
    ("codec", "level"),
    [(GZIP, 0), (GZIP, 10), (LZ4, 0), (LZ4, 18), (ZSTD, 23), (ZSTD, -131073)]
    + [(SNAPPY, 1), (NONE, 1)],
)
def test_bad_level_is_input_error(codec: Codec, level: int) -> None:
    with pytest.raises(InputError):
        codec.compress(b"x", level=level)


def test_default_levels_match_java() -> None:
    data = payload(3, 50 * KIB, 3)
    assert GZIP.compress(data) == GZIP.compress(data, level=6)
    assert ZSTD.compress(data) == ZSTD.compress(data, level=3)
    assert LZ4.compress(data) == LZ4.compress(data, level=9)


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_negative_limit_is_input_error(codec: Codec) -> None:
    with pytest.raises(InputError):
        codec.decompress(codec.compress(b"abc"), limit=-1)


# --- kafka-python as an oracle ------------------------------------------------

# Every known difference from kafka-python, in one place:
# * An empty snappy payload: kseg (like Java) writes the 16-byte xerial header
#   alone; kafka-python reads xerial only when len > 16, so it decodes those
#   16 bytes as a raw block and fails.
# * kafka-python's lz4_encode stores the content size (FLG 0x68); Java never
#   does but accepts it. kseg reads it; kseg never writes it.
KAFKA_PYTHON_CANNOT_READ_EMPTY = {"snappy"}

ORACLE_SIZES = [0, 1, 100, 32 * KIB + 5, 70 * KIB, 150 * KIB]


@pytest.mark.parametrize("size", ORACLE_SIZES)
@pytest.mark.parametrize("mode", [0, 3])
def test_kseg_reads_kafka_python(size: int, mode: int) -> None:
    data = payload(size + mode, size, mode)
    assert SNAPPY.decompress(kafka_codec.snappy_encode(data)) == data
    assert SNAPPY.decompress(kafka_codec.snappy_encode(data, xerial_compatible=False)) == data
    assert GZIP.decompress(kafka_codec.gzip_encode(data)) == data
    for magic in (1, 2):
        assert LZ4.decompress(kafka_codec.lz4_encode(data), magic=magic) == data
    assert LZ4.decompress(kafka_codec.lz4_encode_old_kafka(data), magic=0) == data
    assert ZSTD.decompress(kafka_codec.zstd_encode(data), magic=2) == data


@pytest.mark.parametrize("size", ORACLE_SIZES)
@pytest.mark.parametrize("mode", [0, 3])
def test_kafka_python_reads_kseg(size: int, mode: int) -> None:
    data = payload(size + mode, size, mode)
    for magic in MAGICS:
        if size or "snappy" not in KAFKA_PYTHON_CANNOT_READ_EMPTY:
            assert kafka_codec.snappy_decode(SNAPPY.compress(data, magic=magic)) == data
        assert kafka_codec.gzip_decode(GZIP.compress(data, magic=magic)) == data
    assert kafka_codec.lz4_decode(LZ4.compress(data, magic=1)) == data
    assert kafka_codec.lz4_decode(LZ4.compress(data, magic=2)) == data
    assert kafka_codec.lz4_decode_old_kafka(LZ4.compress(data, magic=0)) == data
    assert kafka_codec.zstd_decode(ZSTD.compress(data, magic=2)) == data


def test_kafka_python_empty_snappy_difference_still_holds() -> None:
    # If kafka-python learns to read a header-only stream, drop the exception above.
    with pytest.raises(Exception):
        kafka_codec.snappy_decode(SNAPPY.compress(b""))


def test_standard_lz4_rejects_the_magic0_frame() -> None:
    # The broken HC is really broken: a standard reader refuses it.
    with pytest.raises(RuntimeError, match="headerChecksum"):
        kafka_codec.lz4_decode(LZ4.compress(b"data", magic=0))


@given(data=payloads)
@examples(25)
def test_oracle_both_ways_hypothesis(data: bytes) -> None:
    assert SNAPPY.decompress(kafka_codec.snappy_encode(data)) == data
    assert LZ4.decompress(kafka_codec.lz4_encode_old_kafka(data), magic=0) == data
    assert ZSTD.decompress(kafka_codec.zstd_encode(data)) == data
    assert kafka_codec.lz4_decode_old_kafka(LZ4.compress(data, magic=0)) == data
    assert kafka_codec.gzip_decode(GZIP.compress(data)) == data
    if data:
        assert kafka_codec.snappy_decode(SNAPPY.compress(data)) == data


# --- exact framings and vectors -----------------------------------------------

# (name, hex, provenance)
HEADER_VECTORS = [
    ("lz4 magic>=1", "04224d18604082", "spec §11 / §4.3: KIP-57 correct HC"),
    ("lz4 magic 0", "04224d1860401a", "spec §11 / §4.3: KAFKA-3160 broken HC"),
    ("xerial", "82534e41505059000000000100000001", "spec §11 / §4.2: SnappyOutputStream header"),
]


@pytest.mark.parametrize(
    ("name", "hexstr", "source"), HEADER_VECTORS, ids=[v[0] for v in HEADER_VECTORS]
)
@pytest.mark.parametrize("data", [b"", b"x", bytes(100 * KIB)], ids=["empty", "1B", "100KiB"])
def test_exact_headers(name: str, hexstr: str, source: str, data: bytes) -> None:
    expected = bytes.fromhex(hexstr)
    if name == "xerial":
        produced = [SNAPPY.compress(data, magic=m) for m in MAGICS]
    elif name == "lz4 magic 0":
        produced = [LZ4.compress(data, magic=0)]
    else:
        produced = [LZ4.compress(data, magic=1), LZ4.compress(data, magic=2)]
    for packed in produced:
        assert packed[: len(expected)] == expected, source


def test_header_constants() -> None:
    assert XERIAL_HEADER.hex() == "82534e41505059000000000100000001"
    assert KAFKA_LZ4_HEADER.hex() == "04224d18604082"
    assert KAFKA_LZ4_HEADER_V0.hex() == "04224d1860401a"


def test_xxh32_and_hc_vectors() -> None:
    # spec §4.3: xxh32 self-check vectors, and the FLG 0x64 HC values.
    assert xxhash.xxh32_intdigest(b"", seed=0) == 0x02CC5D05
    assert xxhash.xxh32_intdigest(b"a", seed=0) == 0x550D7456
    frame = bytes.fromhex("04224d18644000")
    assert header_checksum(frame) == 0xA7
    assert header_checksum(frame, broken=True) == 0x0C
    assert fix_header_checksum(KAFKA_LZ4_HEADER_V0) == KAFKA_LZ4_HEADER
    assert break_header_checksum(KAFKA_LZ4_HEADER) == KAFKA_LZ4_HEADER_V0


def test_lz4_frame_shape_is_javas() -> None:
    data = payload(1, 200 * KIB, 0)  # incompressible: stored blocks
    frame = LZ4.compress(data)
    assert frame.endswith(b"\x00\x00\x00\x00")
    pos, sizes = 7, []
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        if word == 0:
            break
        sizes.append(word & 0x7FFFFFFF)
        assert word & 0x80000000  # random data is stored uncompressed, as Java does
        pos += 4 + (word & 0x7FFFFFFF)
    assert pos + 4 == len(frame)
    assert sizes == [64 * KIB] * 3 + [200 * KIB - 3 * 64 * KIB]


def test_gzip_header_is_javas() -> None:
    packed = GZIP.compress(b"hello")
    # no flags, MTIME 0, XFL 0, OS 255
    assert packed[:10] == bytes.fromhex("1f8b08000000000000ff")
    assert struct.unpack("<II", packed[-8:]) == (zlib.crc32(b"hello"), 5)


def test_spec_v1_gzip_wrapper_vector() -> None:
    """spec §11: v1 gzip wrapper at offset 102 with inner relative offsets 0 and 2."""
    path = SPEC_VECTORS / "sample-v1-gzip-wrapper.bin"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    raw = path.read_bytes()
    offset, size, _crc, magic, attributes, _ts, key_len = struct.unpack_from(">qiIbbqi", raw, 0)
    assert (offset, magic, attributes & 0x07, key_len) == (102, 1, 1, -1)
    (value_len,) = struct.unpack_from(">i", raw, 30)
    value = raw[34 : 34 + value_len]
    assert 34 + value_len == len(raw) == 12 + size
    inner = GZIP.decompress(value, magic=1)
    assert inner == kafka_codec.gzip_decode(value)
    found = []
    pos = 0
    while pos < len(inner):
        rel_offset, entry_size = struct.unpack_from(">qi", inner, pos)
        (klen,) = struct.unpack_from(">i", inner, pos + 12 + 4 + 2 + 8)
        key = inner[pos + 12 + 18 : pos + 12 + 18 + klen]
        found.append((rel_offset, key))
        pos += 12 + entry_size
    assert found == [(0, b"a"), (2, b"c")]


# --- gzip ---------------------------------------------------------------------


def test_gzip_concatenated_members_and_trailing_junk() -> None:
    a, b = GZIP.compress(b"first "), kafka_codec.gzip_encode(b"second")
    assert GZIP.decompress(a + b) == b"first second"
    # Java ignores bytes after a member that are not a gzip header.
    assert GZIP.decompress(a + b"\x00\x00junk") == b"first "


@pytest.mark.parametrize(
    "data",
    [
        b"",
        zlib.compress(b"zlib-wrapped"),
        GZIP.compress(b"truncated" * 50)[:-9],
        b"\x1f\x8b\x08junk!!!!!!",
    ],
    ids=["empty", "zlib", "truncated", "bad-header"],
)
def test_gzip_rejects(data: bytes) -> None:
    with pytest.raises(DecompressionError):
        GZIP.decompress(data)


# --- snappy -------------------------------------------------------------------


def test_snappy_raw_block_decodes() -> None:
    data = payload(5, 100 * KIB, 3)
    assert SNAPPY.decompress(bytes(cramjam.snappy.compress_raw(data))) == data
    assert SNAPPY.decompress(snappy.compress(b"short")) == b"short"  # < 16 bytes: raw


def test_python_snappy_does_not_understand_xerial() -> None:
    # Why kseg frames snappy itself: python-snappy's uncompress knows raw blocks only.
    data = payload(9, 40 * KIB, 3)
    framed = kafka_codec.snappy_encode(data)
    with pytest.raises(snappy.UncompressError):
        snappy.uncompress(framed)


def test_snappy_chunks_hold_at_most_32k() -> None:
    data = payload(2, 100 * KIB, 0)
    framed = SNAPPY.compress(data)
    pos, lengths = 16, []
    while pos < len(framed):
        (size,) = struct.unpack_from(">i", framed, pos)
        block = memoryview(framed)[pos + 4 : pos + 4 + size]
        lengths.append(raw_uncompressed_length(block)[0])
        pos += 4 + size
    assert lengths == [32 * KIB] * 3 + [100 * KIB - 3 * 32 * KIB]
    assert SNAPPY.compress(b"") == XERIAL_HEADER
    assert SNAPPY.decompress(XERIAL_HEADER) == b""


def test_snappy_concatenated_streams() -> None:
    a, b = payload(1, 40 * KIB, 3), payload(2, 10, 0)
    assert SNAPPY.decompress(SNAPPY.compress(a) + kafka_codec.snappy_encode(b)) == a + b
    assert SNAPPY.decompress(XERIAL_HEADER + XERIAL_HEADER + SNAPPY.compress(a)[16:]) == a


@pytest.mark.parametrize("versions", [bytes.fromhex("0100000001000000"), b"\xff" * 8, b"\x00" * 8])
def test_snappy_ignores_version_fields(versions: bytes) -> None:
    data = payload(3, 50 * KIB, 3)
    framed = SNAPPY.compress(data)
    assert SNAPPY.decompress(framed[:8] + versions + framed[16:]) == data


def test_snappy_chunk_length_past_end() -> None:
    framed = SNAPPY.compress(payload(4, 40 * KIB, 3))
    second = 16 + 4 + struct.unpack_from(">i", framed, 16)[0]
    with pytest.raises(DecompressionError, match=f"at byte {second}") as info:
        SNAPPY.decompress(framed[:-1])
    assert info.value.position == second
    assert "runs past the end" in str(info.value)


def test_snappy_negative_chunk_length() -> None:
    with pytest.raises(DecompressionError, match="negative chunk length -1") as info:
        SNAPPY.decompress(XERIAL_HEADER + b"\xff\xff\xff\xff" + b"\x00" * 8)
    assert info.value.position == 16


def test_snappy_partial_length_word_is_ignored_like_java() -> None:
    framed = SNAPPY.compress(b"payload")
    assert SNAPPY.decompress(framed + b"\x00\x00") == b"payload"


@pytest.mark.parametrize(
    "data",
    [b"", b"\x80", b"\x05ab", b"\xff\xff\xff\xff\xff\x01", XERIAL_HEADER + b"\x00\x00\x00\x00"],
    ids=["empty", "cut-varint", "short-block", "long-varint", "empty-chunk"],
)
def test_snappy_rejects(data: bytes) -> None:
    with pytest.raises(DecompressionError):
        SNAPPY.decompress(data)


def test_snappy_damaged_xerial_magic_says_so() -> None:
    framed = bytearray(SNAPPY.compress(b"payload" * 100))
    framed[3] ^= 0x20
    with pytest.raises(DecompressionError, match="decoded as a raw snappy block") as info:
        SNAPPY.decompress(bytes(framed))
    assert "82534e4150505900" in str(info.value)


def test_snappy_implausible_length_is_refused_before_decoding() -> None:
    # claims 1 MiB (under the limit) from 6 bytes: no valid block can do that
    with pytest.raises(DecompressionError, match="declares 1048576 bytes") as info:
        SNAPPY.decompress(b"\x80\x80\x40" + b"\x00\x01\x02")
    assert not isinstance(info.value, DecompressionLimitError)


# --- lz4 ----------------------------------------------------------------------


def test_lz4_magic1_rejects_broken_hc() -> None:
    with pytest.raises(DecompressionError, match="expected 0x82, found 0x1a") as info:
        LZ4.decompress(LZ4.compress(b"data", magic=0), magic=1)
    assert info.value.position == 6
    assert "pre-KIP-57" in str(info.value)


def test_lz4_magic1_rejects_other_bad_hc() -> None:
    frame = bytearray(LZ4.compress(b"data", magic=1))
    frame[6] = 0x00
    with pytest.raises(DecompressionError, match="expected 0x82, found 0x00"):
        LZ4.decompress(bytes(frame), magic=2)


@pytest.mark.parametrize("broken", [True, False], ids=["broken-hc", "correct-hc"])
def test_lz4_magic0_accepts_either_hc(broken: bool) -> None:
    data = payload(8, 100 * KIB, 3)
    frame = LZ4.compress(data, magic=1)
    if broken:
        frame = break_header_checksum(frame)
    assert LZ4.decompress(frame, magic=0) == data


@pytest.mark.parametrize("broken", [True, False], ids=["broken-hc", "correct-hc"])
def test_lz4_magic0_with_content_size(broken: bool) -> None:
    data = payload(9, 70 * KIB, 3)
    frame = lz4.frame.compress(data, block_linked=False, store_size=True)
    assert frame[4] & 0x08  # the content-size field shifts the HC byte to 14
    if broken:
        frame = break_header_checksum(frame)
        assert frame[14] != fix_header_checksum(frame)[14]
    assert LZ4.decompress(frame, magic=0) == data


def test_lz4_lenient_cases() -> None:
    data = payload(10, 150 * KIB, 3)
    linked = lz4.frame.compress(
        data, block_linked=True, content_checksum=True, block_checksum=True
    )
    assert not linked[4] & 0x20
    assert LZ4.decompress(linked) == data  # Java would reject linked blocks
    assert LZ4.decompress(LZ4.compress(data) + b"trailing junk") == data


def _general_lz4(frame: bytes, magic: int) -> bytes:
    """The frame through python-lz4's own frame reader (the HC made what it checks)."""
    return lz4.frame.decompress(fix_header_checksum(frame) if magic == 0 else frame)


@given(st.binary(max_size=200 * KIB) | st.builds(lambda n, r: bytes([n % 7]) * r, st.integers(0, 255),
                                                  st.integers(0, 300 * KIB)),
       st.sampled_from(MAGICS))
def test_lz4_kafka_frames_read_block_by_block(data: bytes, magic: int) -> None:
    # Kafka's own frames take the block-by-block path; what it returns is python-lz4's frame reading.
    frame = LZ4.compress(data, magic=magic)
    assert _kafka_frame(memoryview(frame), magic, len(data)) == data
    assert LZ4.decompress(frame, magic=magic) == _general_lz4(frame, magic) == data


def test_lz4_block_path_reads_stored_blocks() -> None:
    data = random.Random(5).randbytes(150 * KIB)  # incompressible: python-lz4 stores the blocks
    frame = LZ4.compress(data)
    assert struct.unpack_from("<I", frame, 7)[0] & 0x80000000
    assert _kafka_frame(memoryview(frame), 2, len(data)) == data


def test_lz4_block_path_leaves_the_rest_to_the_frame_reader() -> None:
    # Anything but Kafka's exact frame, and any damage, goes to the general reader, which words the error.
    data = payload(11, 100 * KIB, 3)
    frame = LZ4.compress(data)
    others = [
        lz4.frame.compress(data, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB),
        lz4.frame.compress(data, content_checksum=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB),
        break_header_checksum(frame),  # magic >= 1 must carry the correct HC
    ]
    for other in others:
        assert _kafka_frame(memoryview(other), 2, 1 << 30) is None
    assert _kafka_frame(memoryview(frame), 2, len(data) - 1) is None  # over the limit
    with pytest.raises(DecompressionLimitError):
        LZ4.decompress(frame, limit=len(data) - 1)
    for at in range(7, len(frame), 97):  # a flipped byte: the same bytes as the frame reader, or its error
        corrupt = bytearray(frame)
        corrupt[at] ^= 0xFF
        fast = _kafka_frame(memoryview(bytes(corrupt)), 2, 1 << 30)
        try:
            general = _general_lz4(bytes(corrupt), 2)
        except RuntimeError:
            assert fast is None
        else:
            assert fast in (None, general)
    for cut in range(len(frame) - 1):
        assert _kafka_frame(memoryview(frame[:cut]), 2, 1 << 30) is None
        with pytest.raises(DecompressionError):
            LZ4.decompress(frame[:cut])


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x04\x22\x4d",
        b"\x05\x22\x4d\x18\x60\x40\x82\x00\x00\x00\x00",
        bytes.fromhex("04224d18604082"),
        LZ4.compress(b"abc" * 1000)[:-4],
        bytes.fromhex("04224d186840") + b"\x00" * 5,
    ],
    ids=["empty", "short", "bad-magic", "header-only", "no-end-mark", "cut-descriptor"],
)
def test_lz4_rejects(data: bytes) -> None:
    for magic in MAGICS:
        with pytest.raises(DecompressionError):
            LZ4.decompress(data, magic=magic)


# --- zstd ---------------------------------------------------------------------


def test_zstd_context_is_reused_safely() -> None:
    """One decompression context per thread: an error leaves it usable, and threads do not share one."""
    from concurrent.futures import ThreadPoolExecutor

    frames = [(ZSTD.compress(payload(s, 20_000, 3)), payload(s, 20_000, 3)) for s in range(8)]
    with pytest.raises(DecompressionError):
        ZSTD.decompress(frames[0][0][:-5] + b"\xff" * 5)
    assert ZSTD.decompress(frames[1][0]) == frames[1][1]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            got = list(pool.map(lambda f: ZSTD.decompress(f[0]), frames * 20))
            assert got == [f[1] for f in frames] * 20


def test_zstd_written_without_content_size() -> None:
    frame = ZSTD.compress(payload(1, 1000, 3))
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN


def _broker_written(codec: str) -> list[tuple[bytes, bytes]]:
    """(compressed, decompressed) payloads of the batches a real broker's LogCleaner rebuilt (Java wrote
    them: fixtures/kafka-cleaner/<release>/after*/)."""
    out = []
    for segment in sorted((REPO / "fixtures" / "kafka-cleaner").glob("*/after*/*/*.log")):
        for batch in scan_entries(segment.read_bytes()).batches:
            if batch.codec_name == codec:
                compressed = records_region(batch) if batch.magic >= 2 else legacy_value_region(batch)[1]
                out.append((bytes(compressed), payload_bytes(batch)[0]))
    return out


def test_zstd_like_zstd_jni() -> None:
    """Kafka's zstd bytes: zstd-jni's stream, flushed then closed (no content size, the window of an
    unknown size, an empty last block); the broker's cleaner wrote these on 3.9.2 and 4.3.1."""
    written = _broker_written("zstd")
    assert len(written) >= 4
    for compressed, data in written:
        assert ZSTD.compress(data) == compressed
    frame = ZSTD.compress(payload(1, 1000, 3))
    assert frame.endswith(b"\x01\x00\x00")  # the empty last block
    assert zstandard.get_frame_parameters(frame).window_size == 1 << 21


def test_snappy_blocks_differ_from_snappy_java() -> None:
    """The one codec whose bytes kseg does not match (tests/kafka/checks.py CODEC_OUTPUT_MAY_DIFFER):
    cramjam writes the same framing and, for some of the broker's batches, other copies than snappy-java;
    both decompress to the same data. When this fails, kseg matches and the tolerance can go."""
    written = _broker_written("snappy")
    assert len(written) >= 4
    assert all(SNAPPY.decompress(compressed) == SNAPPY.decompress(SNAPPY.compress(data)) == data
               for compressed, data in written)
    assert all(SNAPPY.compress(data)[:16] == compressed[:16] for compressed, data in written)
    assert any(SNAPPY.compress(data) != compressed for compressed, data in written)


#: size -> SHA-256 of what Kafka's ZstdCompression (kafka-clients 3.9.2 and 4.3.1, zstd-jni 1.5.6)
#: wrote for ``_zstd_input(size)``, written in pieces of 1-300 bytes and closed
ZSTD_BY_KAFKA = {
    100: "cc349cd51b7e36cc62848e6fe1938131d652ea6b176030dd13dce2cbf983e7a7",
    20_000: "4f085d442bdef96c02e822d1ddfd018e6ff66cb1b20f9fba2a7a211d3c56c848",
    300_000: "8876d0c1f6dea1af0740af7cb2ae65f856431d380a1a85baa5bea463e098030b",
}
#: the libzstd release those bytes need (other releases pick other matches in larger inputs)
KAFKA_LIBZSTD = (1, 5, 6)


def _zstd_input(size: int) -> bytes:
    return b"".join(b"kafka-record-%d:%s;" % (i * 7919 % 1000, b"x" * (i % 13)) for i in range(size))[:size]


@pytest.mark.parametrize("size", sorted(ZSTD_BY_KAFKA))
def test_zstd_like_kafka_zstd_compression(size: int) -> None:
    """Over 16 KiB Java's BufferedOutputStream hands zstd-jni 16 KiB pieces, over 128 KiB there are
    several blocks: the bytes are still Java's (with Kafka's libzstd release)."""
    if size > 16 * KIB and zstandard.ZSTD_VERSION != KAFKA_LIBZSTD:
        pytest.skip(f"Kafka's zstd bytes need libzstd {KAFKA_LIBZSTD}, zstandard bundles "
                    f"{zstandard.ZSTD_VERSION} (constraints.txt pins the one with Kafka's)")
    assert hashlib.sha256(ZSTD.compress(_zstd_input(size))).hexdigest() == ZSTD_BY_KAFKA[size]


def test_zstd_empty_like_kafka() -> None:
    assert ZSTD.compress(b"") == bytes.fromhex("28b52ffd2000010000")  # what zstd-jni closes an unused stream with
    assert ZSTD.decompress(ZSTD.compress(b"")) == b""


def test_zstd_frames_without_size_and_concatenated() -> None:
    a, b = payload(1, 300 * KIB, 3), payload(2, 5000, 0)
    streamed = zstandard.ZstdCompressor().compressobj()
    unsized = streamed.compress(a) + streamed.flush()
    assert zstandard.get_frame_parameters(unsized).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert ZSTD.decompress(unsized) == a
    sized = zstandard.ZstdCompressor(write_checksum=True).compress(b)
    assert ZSTD.decompress(unsized + sized) == a + b
    assert ZSTD.decompress(sized + unsized + sized) == b + a + b


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_needs_magic2(magic: int) -> None:
    with pytest.raises(UnsupportedCodecError, match=f"zstd is not allowed with magic {magic}"):
        ZSTD.compress(b"x", magic=magic)
    with pytest.raises(UnsupportedCodecError, match=f"zstd is not allowed with magic {magic}"):
        ZSTD.decompress(ZSTD.compress(b"x"), magic=magic)


@pytest.mark.parametrize(
    "data",
    [b"", ZSTD.compress(b"abc" * 1000)[:-3], ZSTD.compress(b"abc") + b"junk", b"\x28\xb5\x2f\xfd"],
    ids=["empty", "truncated", "trailing-junk", "magic-only"],
)
def test_zstd_rejects(data: bytes) -> None:
    # zstandard's stream_reader returns a truncated frame's partial output silently.
    with pytest.raises(DecompressionError):
        ZSTD.decompress(data)


# --- limits and bombs -----------------------------------------------------------

SMALL_LIMIT = 16 * MIB
BOMB_SIZE = 2 << 30  # 2 GiB


# none returns its input: there is nothing to bound.
@pytest.mark.parametrize(("codec", "magic"), [p for p in CODEC_MAGICS if p.values[0] is not NONE])
def test_limit_is_inclusive(codec: Codec, magic: int) -> None:
    data = payload(11, 100 * KIB, 3)
    packed = codec.compress(data, magic=magic)
    assert codec.decompress(packed, magic=magic, limit=len(data)) == data
    with pytest.raises(DecompressionLimitError, match=f"limit of {len(data) - 1} bytes"):
        codec.decompress(packed, magic=magic, limit=len(data) - 1)


def test_default_limit() -> None:
    assert DEFAULT_MAX_DECOMPRESSED_BYTES == 256 * MIB


@pytest.mark.parametrize(("codec", "magic"), CODEC_MAGICS)
def test_small_payload_allocates_little_under_default_limit(codec: Codec, magic: int) -> None:
    # python-lz4 allocates max_length up front: asking it for limit + 1 at once
    # would reserve 256 MiB for every small batch.
    packed = codec.compress(b"small batch" * 100, magic=magic)
    tracemalloc.start()
    try:
        codec.decompress(packed, magic=magic)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MIB


def gzip_zero_bomb(size: int) -> bytes:
    """A single gzip member of ``size`` zero bytes, built without holding them.

    After a full flush deflate restarts from scratch, so every later 1 MiB
    chunk compresses to the same bytes: compress two chunks, repeat the second.
    """
    chunk = bytes(MIB)
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = deflater.compress(chunk) + deflater.flush(zlib.Z_FULL_FLUSH)
    repeat = deflater.compress(chunk) + deflater.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size // MIB):
        crc = zlib.crc32(chunk, crc)
    body = first + repeat * (size // MIB - 1) + deflater.flush()
    return GZIP.compress(b"")[:10] + body + struct.pack("<II", crc, size & 0xFFFFFFFF)


def lz4_zero_bomb(size: int) -> bytes:
    """A Kafka LZ4 frame of ``size`` zero bytes: independent 64 KiB blocks, repeated."""
    one = LZ4.compress(bytes(64 * KIB))
    block = one[7:-4]
    return one[:7] + block * (size // (64 * KIB)) + b"\x00\x00\x00\x00"


def zstd_zero_bomb(size: int) -> bytes:
    """One streamed zstd frame (no content size) of ``size`` zero bytes."""
    compressor = zstandard.ZstdCompressor().compressobj()
    chunk = bytes(MIB)
    parts = [compressor.compress(chunk) for _ in range(size // MIB)]
    return b"".join(parts) + compressor.flush()


def test_bomb_builders_are_honest() -> None:
    # The same builders at 8 MiB decode, with the reference readers, to zeros.
    assert kafka_codec.gzip_decode(gzip_zero_bomb(8 * MIB)) == bytes(8 * MIB)
    assert lz4.frame.decompress(lz4_zero_bomb(8 * MIB)) == bytes(8 * MIB)
    assert kafka_codec.zstd_decode(zstd_zero_bomb(8 * MIB)) == bytes(8 * MIB)


def assert_bomb_refused(
    codec: Codec, bomb: bytes, magic: int = 2, max_peak: int = 3 * SMALL_LIMIT
) -> None:
    tracemalloc.start()
    try:
        started = time.perf_counter()
        with pytest.raises(DecompressionLimitError, match=f"limit of {SMALL_LIMIT} bytes"):
            codec.decompress(bomb, magic=magic, limit=SMALL_LIMIT)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 5, f"{codec.name} bomb took {elapsed:.1f}s"
    assert peak < max_peak, f"{codec.name} bomb allocated {peak} bytes"


def test_gzip_bomb() -> None:
    bomb = gzip_zero_bomb(BOMB_SIZE)
    assert len(bomb) < 4 * MIB
    assert_bomb_refused(GZIP, bomb)
    assert_bomb_refused(GZIP, GZIP.compress(b"ok") + bomb)  # second member


@pytest.mark.parametrize("magic", MAGICS)
def test_lz4_bomb(magic: int) -> None:
    bomb = lz4_zero_bomb(BOMB_SIZE)
    if magic == 0:
        bomb = break_header_checksum(bomb)
    assert_bomb_refused(LZ4, bomb, magic)


def test_zstd_bomb() -> None:
    bomb = zstd_zero_bomb(BOMB_SIZE)
    assert len(bomb) < MIB
    assert_bomb_refused(ZSTD, bomb)
    assert_bomb_refused(ZSTD, ZSTD.compress(b"ok") + bomb)  # second frame


def test_snappy_bombs_refused_before_decoding() -> None:
    # A raw block whose length varint claims 4 GiB - 1.
    assert_bomb_refused(SNAPPY, b"\xff\xff\xff\xff\x0f" + b"\x00" * 64, max_peak=MIB)
    # A xerial stream of 32 MiB of zeros in 1024 honest chunks.
    framed = xerial_encode(bytes(32 * MIB))
    assert_bomb_refused(SNAPPY, framed, max_peak=MIB)


def test_snappy_densest_valid_block_passes_plausibility() -> None:
    zeros = bytes(4 * MIB)
    block = bytes(cramjam.snappy.compress_raw(zeros))
    assert len(zeros) / len(block) > 20  # close to the 64/3 bound
    assert SNAPPY.decompress(block) == zeros


# --- fuzz: only kseg errors escape ---------------------------------------------

FUZZ_SEEDS = [
    codec.compress(data, magic=magic)
    for codec in ALL_CODECS
    for magic in MAGICS
    if codec.allows_magic(magic)
    for data in (b"", b"hello hello hello", payload(12, 70 * KIB, 3))
] + [
    kafka_codec.lz4_encode(b"content size" * 10),
    kafka_codec.snappy_encode(b"x", xerial_compatible=False),
    XERIAL_HEADER + XERIAL_HEADER,
]


@given(data=st.binary(max_size=2000), magic=st.sampled_from(MAGICS))
@examples(1000)
def test_fuzz_random_bytes(data: bytes, magic: int) -> None:
    for codec in ALL_CODECS:
        only_kseg_errors(codec, data, magic)


@given(data=st.binary(max_size=200), magic=st.sampled_from(MAGICS))
@examples(500)
def test_fuzz_with_valid_prefixes(data: bytes, magic: int) -> None:
    # Valid magic numbers/headers reach deeper than random bytes do.
    zstd_magic, gzip_start = b"\x28\xb5\x2f\xfd", b"\x1f\x8b\x08\x00"
    for prefix in (XERIAL_HEADER, KAFKA_LZ4_HEADER, KAFKA_LZ4_HEADER_V0, zstd_magic, gzip_start):
        for codec in ALL_CODECS:
            only_kseg_errors(codec, prefix + data, magic)


@given(
    seed=st.sampled_from(FUZZ_SEEDS),
    edits=st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=4),
    cut=st.integers(0, 2**31),
    junk=st.binary(max_size=8),
    magic=st.sampled_from(MAGICS),
)
@examples(1000)
def test_fuzz_mutated_payloads(
    seed: bytes, edits: list[tuple[int, int]], cut: int, junk: bytes, magic: int
) -> None:
    mutated = bytearray(seed)
    if mutated:
        for where, value in edits:
            mutated[where % len(mutated)] = value
        del mutated[cut % (len(mutated) + 1) :]
    mutated += junk
    for codec in ALL_CODECS:
        only_kseg_errors(codec, bytes(mutated), magic)


@pytest.mark.parametrize("seed", FUZZ_SEEDS[:45:3] + FUZZ_SEEDS[-3:])
def test_every_truncation(seed: bytes) -> None:
    step = max(1, len(seed) // 200)
    for end in range(0, len(seed), step):
        for codec in ALL_CODECS:
            for magic in MAGICS:
                only_kseg_errors(codec, seed[:end], magic)


# --- registry -------------------------------------------------------------------


def test_registry_built_ins() -> None:
    for codec_id, name in CODEC_NAMES.items():
        codec = get_codec(codec_id)
        assert codec.id == codec_id
        assert codec.name == name
        assert codec_by_name(name) is codec
    assert [c.name for c in registered_codecs()][:5] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert [c.allows_magic(0) for c in ALL_CODECS] == [True, True, True, True, False]


@pytest.mark.parametrize("codec_id", [-1, 6, 7, 8, 255])
def test_unknown_codec_id(codec_id: int) -> None:
    with pytest.raises(UnsupportedCodecError, match=f"^unknown compression codec id {codec_id}$"):
        get_codec(codec_id)


def test_plugin_codec_id_points_to_plugin_registry() -> None:
    with pytest.raises(UnsupportedCodecError, match="plugin"):
        get_codec(5)


def test_unknown_name() -> None:
    with pytest.raises(UnsupportedCodecError, match="^Unknown compression name: brotli$"):
        codec_by_name("brotli")


class Reverse(Codec):
    """A toy plugin codec: reverses its input."""

    id = 5
    name = "reverse"

    def compress(self, data: bytes, *, magic: int = 2, level: int | None = None) -> bytes:
        self.check_magic(magic)
        return bytes(data)[::-1]

    def decompress(
        self, data: bytes, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    ) -> bytes:
        self.check_magic(magic)
        return bytes(data)[::-1]


def test_register_plugin_codec() -> None:
    plugin = Reverse()
    register_codec(plugin)
    try:
        assert codec_by_name("reverse") is plugin
        assert plugin in registered_codecs()
        with pytest.raises(UnsupportedCodecError):
            get_codec(5)  # plugins are found by plugin id, not here
        with pytest.raises(InputError, match="already taken"):
            register_codec(Reverse())
        register_codec(plugin)  # the same object again is harmless
    finally:
        unregister_codec(plugin)
    with pytest.raises(UnsupportedCodecError):
        codec_by_name("reverse")


def test_register_replace_built_in() -> None:
    class FastGzip(Reverse):
        id = 1
        name = "gzip"

    replacement = FastGzip()
    with pytest.raises(InputError, match="already taken"):
        register_codec(replacement)
    register_codec(replacement, replace=True)
    try:
        assert get_codec(1) is replacement
        assert codec_by_name("gzip") is replacement
    finally:
        register_codec(GZIP, replace=True)
        assert get_codec(1) is GZIP
    with pytest.raises(TypeError):
        register_codec(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("attributes", range(8))
def test_kafka07_codec(attributes: int) -> None:
    codec = get_kafka07_codec(attributes)
    assert codec.id == attributes & 0x03
    data = payload(attributes, 40 * KIB, 3)
    assert codec.decompress(codec.compress(data, magic=0), magic=0) == data
