"""kseg's own CRC-32C (``kseg/_checksum.c``) is the crc32c package's, on every input.

The package is the reference (and what ``kseg.checksums`` falls back to when the C is not
built). Both C paths are checked on this machine whatever its CPU: the crc32 instruction
(when the CPU has SSE4.2) and the portable tables. Lengths around the three-stream block
sizes (3 x 256 and 3 x 8192 bytes) take the joins; slices of a larger buffer start and end
at every alignment; every v2 batch and producer snapshot of the fixtures is checked too.
"""

from __future__ import annotations

import zlib

import crc32c as reference
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES_LOGDIR, examples
from kseg import checksums
from kseg.facts.record_batch_v2 import CRC_START
from kseg.log.fast import scan_entries

try:
    from kseg import _checksum
except ImportError:  # pragma: no cover - a build without a C compiler
    pytest.skip("kseg._checksum is not built: kseg.checksums uses the crc32c package itself",
                allow_module_level=True)

PATHS = [_checksum.crc32c, _checksum.crc32c_portable]
IDS = ["best", "portable"]

# Vectors with provenance: RFC 3720 (iSCSI) B.4, and the check value of the CRC catalogue.
VECTORS = [
    (b"123456789", 0xE3069283),  # the CRC catalogue's check value for CRC-32C
    (bytes(32), 0x8A9136AA),  # RFC 3720 B.4: 32 bytes of zeros
    (b"\xff" * 32, 0x62A8AB43),  # RFC 3720 B.4: 32 bytes of 0xff
    (bytes(range(32)), 0x46DD794E),  # RFC 3720 B.4: incrementing bytes
    (bytes(range(31, -1, -1)), 0x113FDB5C),  # RFC 3720 B.4: decrementing bytes
    (b"", 0),
]
EDGES = sorted({n + d for n in (0, 8, 256 * 3, 8192 * 3, 8192 * 6 + 256 * 3) for d in range(-9, 10) if n + d >= 0})


@pytest.mark.parametrize("crc", PATHS, ids=IDS)
@pytest.mark.parametrize("data,expected", VECTORS, ids=[str(i) for i in range(len(VECTORS))])
def test_published_vectors(crc, data, expected) -> None:
    assert crc(data) == expected == reference.crc32c(data)


@pytest.mark.parametrize("crc", PATHS, ids=IDS)
def test_lengths_around_every_block_join(crc) -> None:
    data = bytes((i * 131 + 7) & 0xFF for i in range(EDGES[-1]))
    for n in EDGES:
        assert crc(data[:n]) == reference.crc32c(data[:n]), n


@pytest.mark.parametrize("crc", PATHS, ids=IDS)
@examples(200)
@given(data=st.binary(max_size=70_000), start=st.integers(0, 16), cut=st.integers(0, 16))
def test_any_bytes_and_any_alignment(crc, data, start, cut) -> None:
    view = memoryview(data)[start: max(start, len(data) - cut)]
    assert crc(view) == reference.crc32c(view)
    assert crc(bytearray(view)) == crc(bytes(view)) == crc(view)


def test_kseg_uses_the_fastest_path_built() -> None:
    assert checksums.ACCELERATED and checksums.crc32c is _checksum.crc32c
    with pytest.raises(TypeError):
        _checksum.crc32c("text")  # as the package: bytes-like objects only
    with pytest.raises(TypeError):
        reference.crc32c("text")


def test_every_fixture_batch() -> None:
    seen = 0
    for path in sorted(FIXTURES_LOGDIR.rglob("*.log")):
        for b in scan_entries(path.read_bytes()).batches:
            if b.magic == 2:
                covered = b.raw[CRC_START:]
                assert _checksum.crc32c(covered) == _checksum.crc32c_portable(covered) \
                    == reference.crc32c(covered) == b.crc
                seen += 1
    assert seen > 50


# --- CRC-32 (v0/v1 messages): zlib is the reference ------------------------------------------


@pytest.fixture(params=[True, False], ids=["clmul", "tables"])
def crc32_code(request):
    """Both CRC-32 codes: carry-less multiplication (where the CPU has it) and the tables."""
    in_use = _checksum.crc32_fast(request.param)
    try:
        if request.param and not in_use:
            pytest.skip("this CPU has no PCLMULQDQ/SSE4.1: only the table code runs here")
        yield
    finally:
        _checksum.crc32_fast(True)


@examples(400)
@given(st.binary(max_size=600) | st.integers(0, 5000).map(lambda n: bytes(range(256)) * (n // 256) + bytes(n % 256)),
       st.integers(0, (1 << 32) - 1))
def test_crc32_is_zlibs(crc32_code, data: bytes, start: int) -> None:
    assert _checksum.crc32(data) == zlib.crc32(data)
    assert _checksum.crc32(data, start) == zlib.crc32(data, start)


def test_crc32_every_length_and_alignment(crc32_code) -> None:
    """Both sides of every 16- and 64-byte step of the carry-less code, from every alignment."""
    data = bytes((i * 131 + 7) & 0xFF for i in range(1200))
    for n in range(1100):
        assert _checksum.crc32(data[:n], n) == zlib.crc32(data[:n], n), n
    view = memoryview(data)
    for start in range(16):
        assert _checksum.crc32(view[start:start + 1000]) == zlib.crc32(view[start:start + 1000])


def test_crc32_of_every_legacy_message() -> None:
    from kseg.facts.message_v0v1 import CRC_START as LEGACY_CRC_START

    n = 0
    for path in FIXTURES_LOGDIR.glob("*/*.log"):
        for b in scan_entries(path.read_bytes()).batches:
            if b.magic < 2:
                assert _checksum.crc32(b.raw[LEGACY_CRC_START:]) == zlib.crc32(b.raw[LEGACY_CRC_START:]) == b.crc
                n += 1
    assert n > 50
