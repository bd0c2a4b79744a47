"""kafka-dump-log.sh shows keys, payloads and header keys as ``new String(bytes, UTF_8)``;
``kseg.decoders.jvm.java_utf8`` and its C twin (``_format.java_utf8``, what the C line
writers use) must give the JVM's text for every malformed input, which differs from
Python's "replace" for encoded surrogates.

The oracle is the JVM itself (``tests/java/Utf8Decode.java`` run by ``java``'s
single-file launcher), over every string of up to three bytes from an alphabet of the
bytes that matter to UTF-8 and thousands of random ones; skipped without ``java``.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from kseg.decoders.jvm import java_utf8
from kseg.model import Header, make_record
from kseg.render import bulk, lines

JAVA_SOURCE = Path(__file__).parent / "java" / "Utf8Decode.java"
# lead bytes of every length, the continuation ranges' edges, bytes never valid in UTF-8
ALPHABET = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
            0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFB, 0xFC, 0xFE, 0xFF]

# Found with the JVM (17): what new String gives where Python's "replace" gives one U+FFFD per byte.
KNOWN = {
    b"\xed\xa0\x80": "\ufffd",
    b"\xed\xbf\xbfA": "\ufffdA",
    b"\xed\xa0": "\ufffd",
    b"\xed\xa0A": "\ufffdA",
    b"\xed\xa0\x80\xed\xa0\x80": "\ufffd\ufffd",
    b"\xed\xbf\x80\xbf": "\ufffd\ufffd",
    b"\xed\x9f\xbf": "\ud7ff",  # the last code point before the surrogates: valid
    b"\xe0\x80\x80": "\ufffd\ufffd\ufffd",  # overlong: as Python
    b"\xf4\x90\x80\x80": "\ufffd\ufffd\ufffd\ufffd",  # past U+10FFFF: as Python
}


def _utf16_units(text: str) -> str:
    raw = text.encode("utf-16-be", "surrogatepass")
    return " ".join(raw[i:i + 2].hex() for i in range(0, len(raw), 2))


@pytest.mark.parametrize("data", list(KNOWN))
def test_known_values(data: bytes) -> None:
    assert java_utf8(data) == KNOWN[data]


def _cases() -> list[bytes]:
    rnd = random.Random(17)
    cases = [bytes(t) for n in (1, 2, 3) for t in itertools.product(ALPHABET, repeat=n)]
    cases += [bytes(rnd.choice(ALPHABET) for _ in range(rnd.randint(4, 8))) for _ in range(5000)]
    cases += [rnd.randbytes(16) for _ in range(5000)]  # e.g. UUIDs in the metadata log's records
    return cases


@pytest.mark.skipif(not bulk.ACCELERATED, reason="the C twin is not built")
def test_c_twin_decodes_as_python() -> None:
    """Every case of the JVM test, each also after ASCII runs of 1 to 9 bytes (the C walk takes
    ASCII eight bytes at a time) and joined into one long value: C and Python give the same text."""
    cases = _cases()
    wrong = [c.hex() for c in cases for pre in (b"", b"a", b"abcdefghi")
             if bulk._format.java_utf8(pre + c).decode("utf-8", "surrogatepass") != java_utf8(pre + c)]
    assert not wrong, wrong[:10]
    joined = b"".join(cases)
    assert bulk._format.java_utf8(joined).decode("utf-8") == java_utf8(joined)
    assert bulk._format.java_utf8(b"") == b""


@pytest.mark.skipif(not bulk.ACCELERATED, reason="the C twin is not built")
@pytest.mark.parametrize("between", [b"", b"A"])
def test_c_twin_over_every_four_bytes(between: bytes) -> None:
    """The C writer is a state machine whose state is how far into a sequence it is (up to three
    bytes): every four bytes from the alphabet, one after another (each one's end state meets
    the next one's bytes) and apart, give Python's text; a case that does not is named."""
    cases = [bytes(t) for t in itertools.product(ALPHABET, repeat=4)]
    joined = between.join(cases)
    if bulk._format.java_utf8(joined).decode("utf-8", "surrogatepass") != java_utf8(joined):
        wrong = [c.hex() for c in cases
                 if bulk._format.java_utf8(c).decode("utf-8", "surrogatepass") != java_utf8(c)]
        pytest.fail(f"C and Python differ: {wrong[:10] or 'only where cases meet'}")


def test_same_text_as_the_jvm() -> None:
    java = shutil.which("java")
    if java is None:
        pytest.skip("the JVM oracle for UTF-8 decoding needs java on PATH")
    cases = _cases()
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # no sanitizer runtime in the JVM
    proc = subprocess.run([java, str(JAVA_SOURCE)], input="\n".join(c.hex() for c in cases) + "\n",
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    jvm = proc.stdout.split("\n")[:len(cases)]
    wrong = [(c.hex(), j, _utf16_units(java_utf8(c))) for c, j in zip(cases, jvm) if _utf16_units(java_utf8(c)) != j]
    assert not wrong, wrong[:10]


@pytest.mark.skipif(not bulk.ACCELERATED, reason="the C twin is not built")
def test_c_twin_kafka_lines_match_python() -> None:
    """Keys, payloads and header keys with every malformed shape: C and Python give the same lines."""
    bad = list(KNOWN) + [b"\xff", b"ok"]
    records = [make_record(i, 1_700_000_000_000, k, v, headers=(Header(h.decode("utf-8", "surrogateescape"), b"x"),))
               for i, (k, v, h) in enumerate(itertools.product(bad, bad, bad))]
    args = (records, "CreateTime", 2, 0, -1, lines.JAVA, lines.JAVA, None, [])
    assert bulk._format.kafka_records(*args) == lines.kafka_records(*args)
    assert "\ufffd".encode() in lines.kafka_records(*args)


@pytest.mark.skipif(not bulk.ACCELERATED, reason="the C twin is not built")
@pytest.mark.parametrize("at", range((1 << 16) - 9, (1 << 16) + 2))
def test_c_twin_across_its_block_boundary(at: int) -> None:
    """The C writer reserves room 64 KiB of input at a time: a sequence, a malformed unit or an
    encoded surrogate that starts just before that boundary and ends past it is written whole,
    as Python writes it; so is one cut off by the value's end there."""
    units = [b"\xc3\xbc", b"\xe2\x82\xac", b"\xf0\x9f\x9a\x80", b"\xed\xa0\x80", b"\xed\xa0", b"\xe2\x82",
             b"\xf0\x9f\x9a", b"\xff", b"\x80", b"\xc3"]
    for unit in units:
        for tail in (b"", b"z" * 9):
            data = b"a" * at + unit + tail
            assert bulk._format.java_utf8(data).decode("utf-8", "surrogatepass") == java_utf8(data), (at, unit)
            data = bytes(range(128, 256)) * (at // 128) + b"a" * (at % 128) + unit + tail  # no ASCII run
            assert bulk._format.java_utf8(data).decode("utf-8", "surrogatepass") == java_utf8(data), (at, unit)
