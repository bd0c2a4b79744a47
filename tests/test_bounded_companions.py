"""Companion files read in bounded memory, whatever they claim; no traceback on any of them;
errors quote at most a short escaped excerpt of the input.

The multi-GiB cases are sparse files (a few KB on disk) beside a real segment, and each command
runs in a child process under an address-space ceiling (RLIMIT_AS): reading such a file whole
would be a MemoryError there. The child also reports its peak resident memory (VmHWM). Tests with
``flat_memory`` in their name are left out of the sanitizer run (ASan's shadow memory is no
dump's).
"""

from __future__ import annotations

import io
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from verify_text import with_paths

from conftest import examples
from kseg.cli.main import main
from kseg.companions.check import MAX_FINDINGS_PER_FILE, txn_index_findings
from kseg.companions.read import MAX_LINE_CHARS, MAX_TEXT_BYTES, java_int
from kseg.errors import DataError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PARTITION = FIXTURES / "logdir" / "v2-txn-0"  # segments at 0 and 5, the second transactional
GIB = 1 << 30
CEILING = GIB  # the child's address space: Python and kseg need ~150 MiB of it
MAX_LINE = 300  # an error line, file name included

# Runs kseg and reports the process's peak resident memory on stderr's last line.
CODE = ("import sys\nfrom kseg.cli.main import main\nsys.argv[0] = 'kseg'\ncode = 0\ntry:\n    main()\n"
        "except SystemExit as e:\n    code = e.code\nfinally:\n"
        "    sys.stderr.write([x for x in open('/proc/self/status') if x.startswith('VmHWM')][0])\n"
        "sys.exit(code)\n")
PEAKS: dict[str, tuple[float, int]] = {}  # what each run took (seconds, peak KiB), for the record


def _ceiling(limit: int | None = CEILING):
    def apply() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def kseg(*args: str | Path, limit: int | None = None, timeout: float = 300) -> tuple[int, str, str, int]:
    """Run kseg, under an address-space ceiling if ``limit`` is given (the ``flat_memory`` tests: not
    under a sanitizer, whose shadow memory is reserved address space): (exit code, stdout, stderr
    without the peak line, peak KiB)."""
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc/self/status to read a process's peak memory from")
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", CODE, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_ceiling(limit))
    err, _, peak = proc.stderr.rpartition("VmHWM:")
    kib = int(peak.split()[0])
    PEAKS[" ".join(map(str, args[:1])) + " " + Path(str(args[-1])).name] = (time.monotonic() - start, kib)
    return proc.returncode, proc.stdout, err, kib


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "MemoryError" not in text, text[-2000:]
        lines = [re.sub(r"/\S*/", "/.../", line) for line in text.splitlines()]  # the test's folders vary in length
        assert all(len(line) < MAX_LINE for line in lines), max(lines, key=len)[:400]


def sparse(path: Path, size: int, head: bytes = b"") -> Path:
    path.write_bytes(head)
    os.truncate(path, size)
    return path


@pytest.fixture
def partition(tmp_path: Path) -> Path:
    """A partition folder holding the real transactional segment at offset 5 alone."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    shutil.copy(PARTITION / "00000000000000000005.log", folder)
    return folder


# --------------------------------------------------------------------------- 3 GiB sparse companions

# suffix -> (what verify and index --check say of it, what the dump's first lines hold)
SPARSE = {
    ".index": ("the file is larger than Kafka can map", "zero_tail 402653183"),
    ".timeindex": ("the file is larger than Kafka can map", "zero_tail 268435455"),
    ".txnindex": (f"checking stopped after {MAX_FINDINGS_PER_FILE} findings", "last_stable_offset"),
}


@pytest.mark.parametrize("suffix", list(SPARSE))
def test_flat_memory_3gib_sparse_index_files(partition: Path, suffix: str) -> None:
    said, dumped = SPARSE[suffix]
    companion = sparse(partition / f"00000000000000000005{suffix}", 3 * GIB)
    for args in (("verify", partition), ("index", "--check", partition)):
        code, out, err, kib = kseg(*args, limit=CEILING)
        no_traceback(out, err)
        assert code == 1, (args, out, err)
        assert said in out, out
        assert kib < 300 * 1024, (args, kib)
    if suffix != ".txnindex":
        code, out, err, kib = kseg("dump", companion, limit=CEILING)
        no_traceback(out, err)
        assert code == 0 and dumped in out, (out, err)
        assert len(out.splitlines()) == 4  # the file, the zero tail, the header, the one entry
        assert kib < 300 * 1024, kib
    # A zero .txnindex is 94 million valid entries: its dump streams them; read the start, hang up.
    for fmt in ("text", "jsonl", "kafka"):
        proc = subprocess.Popen([sys.executable, "-c", CODE, "dump", "--format", fmt, str(companion)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=_ceiling())
        assert proc.stdout is not None and proc.stderr is not None
        head = [proc.stdout.readline() for _ in range(5)]
        proc.stdout.close()
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
        no_traceback("".join(head), err)
        assert code == 0, err
        assert any("offset" in line.lower() for line in head), head
        assert int(err.rpartition("VmHWM:")[2].split()[0]) < 300 * 1024


SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc, count

# (what the 3 GiB snapshot's header says, the error)
SNAPSHOTS = [
    (b"", "unknown producer snapshot version: expected 1, found 0"),
    (SNAPSHOT_HEADER.pack(1, 0, 2**31 - 1), "producer snapshot ends inside entry"),
    (SNAPSHOT_HEADER.pack(1, 0, (3 * GIB - 10) // 46), "bytes after the producer entries"),
]


@pytest.mark.parametrize("head, said", SNAPSHOTS)
def test_flat_memory_3gib_sparse_snapshot(partition: Path, head: bytes, said: str) -> None:
    snap = sparse(partition / "00000000000000000009.snapshot", 3 * GIB, head)
    code, out, err, kib = kseg("verify", partition, limit=CEILING)
    no_traceback(out, err)
    assert code == 1 and said in out, out
    assert kib < 300 * 1024
    code, out, err, kib = kseg("dump", snap, limit=CEILING)
    no_traceback(out, err)
    assert code == 1 and said in err, err
    assert [line for line in err.splitlines() if line.startswith("kseg: error:")] == err.splitlines()
    assert kib < 300 * 1024


def test_flat_memory_snapshot_past_what_kafka_reads(partition: Path) -> None:
    """A header whose count matches a 2.3 GB file: Kafka reads a snapshot whole into one Java array,
    which cannot be that large; kseg says so without reading it."""
    count = 50_000_000
    snap = sparse(partition / "00000000000000000009.snapshot", 10 + count * 46, SNAPSHOT_HEADER.pack(1, 0, count))
    code, out, err, kib = kseg("dump", snap, limit=CEILING)
    no_traceback(out, err)
    assert code == 1 and "producer snapshot larger than Kafka reads" in err, err
    assert kib < 300 * 1024


class _Zeros(io.RawIOBase):
    def __init__(self, n: int):
        self.n = n

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[override]
        k = min(len(b), self.n)
        b[:k] = bytes(k)
        self.n -= k
        return k


def test_flat_memory_large_index_in_a_compressed_tar(tmp_path: Path) -> None:
    """A 640 MiB zero .index inside a .tar.gz, the child allowed 512 MiB: read in pieces through the
    archive's decompressor (never ``read_bytes()`` of the member)."""
    archive = tmp_path / "logs.tgz"
    seg = (PARTITION / "00000000000000000000.log").read_bytes()
    size = 640 << 20
    with tarfile.open(archive, "w:gz", compresslevel=1) as t:
        info = tarfile.TarInfo("t-0/00000000000000000000.log")
        info.size = len(seg)
        t.addfile(info, io.BytesIO(seg))
        info = tarfile.TarInfo("t-0/00000000000000000000.index")
        info.size = size
        t.addfile(info, io.BufferedReader(_Zeros(size), 1 << 20))
    member = f"{archive}/t-0/00000000000000000000.index"
    for args, code_wanted, said in (
        # the checks count slot 0 as preallocated space too (the broker wrote no entry); the dump shows
        # the slots as kafka-dump-log.sh reads them (slot 0 an entry, the rest its zero tail)
        (("verify", archive), 0, f"{size // 8} preallocated zero entries"),
        (("index", "--check", archive), 0, f"{size // 8} preallocated zero entries"),
        (("dump", member), 0, f"zero_tail {size // 8 - 1}"),
    ):
        code, out, err, kib = kseg(*args, limit=512 << 20)
        no_traceback(out, err)
        assert code == code_wanted and said in out, (args, out, err)
        assert kib < 300 * 1024


# --------------------------------------------------------------------------- text companions


def _text_cases() -> list[tuple[str, str, str]]:
    digits = "9" * 10_000_000
    return [
        # (file name, content, what the error says)
        ("leader-epoch-checkpoint", f"0\n1\n0 {digits}\n", "line too long for leader-epoch-checkpoint"),
        ("leader-epoch-checkpoint", "0\n1\n" + "x" * (10 << 20) + "\n", "line too long"),
        ("leader-epoch-checkpoint", f"0\n1\n0 {digits[:5000]}\n", "start offset out of range"),
        ("leader-epoch-checkpoint", f"0\n{digits[:5000]}\n", "entry count out of range"),
        ("partition.metadata", "version: 0\ntopic_id: " + "A" * (10 << 20) + "\n", "line too long"),
        ("partition.metadata", f"version: {digits[:5000]}\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", "version out of range"),
        ("quorum-state", '{"leaderEpoch": ' + digits[:5000] + "}", "out of range"),
        ("quorum-state", "[" * 200_000 + "]" * 200_000, "nested too deeply"),
        ("quorum-state", '{"leaderEpoch": "' + "\\u001b[31m" * 10_000 + '"}', "leaderEpoch is not an epoch"),
    ]


@pytest.mark.parametrize("name, content, said", _text_cases(), ids=lambda v: v[:24] if isinstance(v, str) else v)
def test_text_companion_errors_are_one_short_line(partition: Path, name: str, content: str, said: str) -> None:
    path = partition / name
    path.write_text(content)
    before = path.read_bytes()
    code, out, err, _ = kseg("verify", partition)
    no_traceback(out, err)
    assert code == 1, (out, err)
    mine = [line for line in with_paths(out).splitlines() if name in line and "error:" in line]
    assert len(mine) == 1 and said in mine[0], out
    assert "\x1b" not in out
    code, out, err, _ = kseg("dump", path)
    if "leaderEpoch is not an epoch" in said:  # a value the dump prints (escaped), not an error there
        no_traceback(err)
        assert code == 0 and "\x1b" not in out and "\\x1b[31m" in out, out[:400]
    else:
        no_traceback(out, err)
        errors = err.splitlines()
        assert code == 1 and len(errors) == 1 and errors[0].startswith("kseg: error:") and said in errors[0], err
    assert path.read_bytes() == before


def test_offset_checkpoint_numbers_past_a_long(tmp_path: Path) -> None:
    """A log directory's recovery-point checkpoint with a 5000-digit offset: Kafka's Long.parseLong
    fails, and so does kseg's reading, in one short finding (never Python's int-string limit)."""
    logdir = tmp_path / "logs"
    shutil.copytree(PARTITION, logdir / "t-0")
    (logdir / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {'7' * 5000}\n")
    code, out, err, _ = kseg("verify", logdir)
    no_traceback(out, err)
    assert code == 1 and "offset out of range" in out, out


def test_flat_memory_a_text_companion_past_the_size_bound_is_not_read(partition: Path) -> None:
    path = sparse(partition / "leader-epoch-checkpoint", MAX_TEXT_BYTES + 1)
    code, out, err, kib = kseg("dump", path, limit=CEILING)
    no_traceback(out, err)
    assert code == 1 and "leader-epoch-checkpoint is too large" in err and f"at most {MAX_TEXT_BYTES}" in err
    assert kib < 100 * 1024


# --------------------------------------------------------------------------- numbers as Java reads them

JAVA_NUMBERS = [
    # (text, bits, value or None for an error)
    ("2147483647", 32, 2147483647),
    ("-2147483648", 32, -2147483648),
    ("2147483648", 32, None),
    ("+7", 32, 7),
    ("0000000000000000000000000000000000012", 32, 12),  # Java takes leading zeros
    ("9223372036854775807", 64, 9223372036854775807),
    ("-9223372036854775808", 64, -9223372036854775808),
    ("9223372036854775808", 64, None),
    ("1" * 5000, 64, None),
    ("1" * 100_000, 32, None),
    ("", 64, None),
    ("1.0", 64, None),
    ("0x10", 64, None),
    ("- 1", 64, None),
]


@pytest.mark.parametrize("text, bits, value", JAVA_NUMBERS, ids=lambda v: str(v)[:20])
def test_java_int_reads_numbers_as_java_does(text: str, bits: int, value: int | None) -> None:
    if value is not None:
        assert java_int(text, bits) == value
        return
    with pytest.raises(DataError) as info:
        java_int(text, bits, "line 3", "offset")
    assert len(str(info.value)) < MAX_LINE
    assert info.value.where == "line 3"


def test_a_line_at_the_bound_is_read_and_one_past_it_is_not() -> None:
    from kseg.companions.read import parse_leader_epoch_checkpoint

    with pytest.raises(DataError, match="start offset is not an integer"):
        parse_leader_epoch_checkpoint("0\n1\n0 " + "x" * (MAX_LINE_CHARS - 2) + "\n")
    with pytest.raises(DataError, match="line too long") as info:
        parse_leader_epoch_checkpoint("0\n1\n0 " + "x" * (MAX_LINE_CHARS - 1) + "\n")
    assert info.value.where == "line 3" and f"{MAX_LINE_CHARS + 1} characters in all" in str(info.value)


# --------------------------------------------------------------------------- bounded findings, MemoryError


def test_findings_of_one_file_stop_at_the_cap() -> None:
    entries = b"".join(struct.pack(">hqqqq", 0, 1, 10_000 - i, 10_000 - i, 0) for i in range(5000))
    findings = txn_index_findings(entries, "x.txnindex", 0)
    assert len(findings) == MAX_FINDINGS_PER_FILE + 1
    assert findings[-1].severity == "note" and "checking stopped after" in findings[-1].message
    assert "entries 101..4999 not checked" in findings[-1].message


def test_memory_error_is_one_line_and_exit_2() -> None:
    code = ("import sys\nfrom kseg.cli.common import guarded\n"
            "def boom():\n    raise MemoryError()\nguarded(boom)()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("kseg: error: out of memory (") and proc.stderr.count("\n") == 1, proc.stderr


def test_zz_report_peaks() -> None:
    """Not a check: the time and peak memory of each run above, printed with ``-s``."""
    for what, (seconds, kib) in sorted(PEAKS.items()):
        print(f"{what}: {seconds:.2f} s, peak {kib / 1024:.0f} MiB")


# --------------------------------------------------------------------------- pieces agree with the whole


def _fields(slots) -> tuple:
    return (slots.count, slots.zero_tail, slots.tail_is_zero, slots.partial_bytes, slots.first, slots.last,
            tuple(slots.rows()))


def _parsed(data: bytes, kind: str) -> tuple:
    """What the whole-file parser (the reference) says, in ``_fields``' shape."""
    from kseg.companions.read import parse_offset_index, parse_time_index

    idx = (parse_offset_index if kind == "index" else parse_time_index)(data, 0)
    rows = tuple(tuple(e) for e in idx.entries)
    return (len(rows), idx.zero_tail, idx.tail_is_zero, idx.partial_bytes, rows[0] if rows else None,
            rows[-1] if rows else None, rows)


@pytest.mark.parametrize("piece", [24, 48, 1 << 20])
def test_index_files_read_in_pieces_as_read_whole(tmp_path: Path, monkeypatch, piece: int) -> None:
    """Every shipped .index/.timeindex, and made-up ones (a stop inside a piece and on its edge, a
    zero tail with junk after holes, partial slots), scanned in pieces of ``piece`` bytes from the
    file agree with the scan of their bytes."""
    import random

    from kseg.companions import read

    monkeypatch.setattr(read, "READ_PIECE", piece)
    rng = random.Random(7)
    made = []
    for n in (0, 1, 2, 3, 5, 6, 7, 12, 13):
        rows = b"".join(struct.pack(">ii", i + 1 if i else 0, i * 10) for i in range(n))
        made.append(rows + bytes(8 * rng.randrange(0, 9)) + bytes(rng.randrange(0, 3)))
    junk = tmp_path / "00000000000000000000.index"
    sparse(junk, 8 << 20, struct.pack(">ii", 0, 0) + bytes(8))
    with open(junk, "r+b") as f:  # data after a hole, then a hole to the end
        f.seek(4 << 20)
        f.write(b"\x01")
    files = [p for p in (FIXTURES / "logdir").rglob("*") if p.suffix in (".index", ".timeindex")][:40]
    for i, data in enumerate(made):
        p = tmp_path / f"m{i}" / "00000000000000000000.index"
        p.parent.mkdir()
        p.write_bytes(data)
        files.append(p)
    files.append(junk)
    for path in files:
        kind = path.suffix.lstrip(".")
        data = path.read_bytes()
        assert _fields(read.read_index_slots(path, kind, 0)) == _parsed(data, kind), path
        assert _fields(read.index_slots(data, kind, 0)) == _parsed(data, kind), path
    assert read.read_index_slots(junk, "index", 0).tail_is_zero is False


@pytest.mark.parametrize("piece", [34, 100, 1 << 20])
def test_txnindex_read_in_pieces(tmp_path: Path, monkeypatch, piece: int) -> None:
    """Entries and findings of a .txnindex read in pieces are those of its bytes; an entry with a
    version other than 0 is named by its own position, whichever piece it falls in."""
    from kseg.companions import read
    from kseg.companions.check import check_txn_index

    monkeypatch.setattr(read, "READ_PIECE", piece)
    rows = [struct.pack(">hqqqq", 0, i, 10 * i, 10 * i + 5, 10 * i) for i in range(7)]
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(b"".join(rows) + b"\0" * 5)
    entries = read.read_txn_index(path).entries
    assert [e.producer_id for e in entries] == list(range(7))
    assert read.read_txn_index(path).partial_bytes == 5
    assert check_txn_index(path, None) == txn_index_findings(path.read_bytes(), str(path), 0)
    rows[5] = struct.pack(">h", 3) + rows[5][2:]
    path.write_bytes(b"".join(rows))
    with pytest.raises(DataError) as info:
        read.read_txn_slots(path)
    assert (info.value.position, info.value.found, info.value.file) == (5 * 34, 3, str(path))


class _Asked(io.RawIOBase):
    """A stream (no size) that returns at most ``short`` bytes a call and records what it is asked."""

    def __init__(self, data: bytes, short: int) -> None:
        self.data, self.at, self.short, self.asked = data, 0, short, []

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        self.asked.append(n)
        piece = self.data[self.at:self.at + min(n, self.short)]
        self.at += len(piece)
        return piece


@examples(60)
@given(size=st.integers(0, 3 << 20), n=st.integers(0, 4 << 20), short=st.integers(1, 5 << 20))
def test_read_up_to_asks_no_more_than_the_input_holds(tmp_path_factory, size: int, n: int, short: int) -> None:
    """``read_up_to`` returns the input's first ``n`` bytes, and asks a stream for at most
    ``STREAM_PIECE`` a call, whatever ``n`` (a regular file is asked for its size: the address-space
    test of ``tests/test_what_kafka_wrote.py`` holds that)."""
    from kseg.storage import STREAM_PIECE, read_up_to

    data = os.urandom(size)
    path = tmp_path_factory.mktemp("up_to") / "f"
    path.write_bytes(data)
    with open(path, "rb") as f:
        assert read_up_to(f, n) == data[:n]
    stream = _Asked(data, short)
    assert read_up_to(stream, n) == data[:n]
    assert max(stream.asked, default=0) <= STREAM_PIECE


RAW = ("\x1b", "\x07", "\u202e")  # what a terminal would act on
HOSTILE = "\x1b[31m\u202e\x07"
# Files of the names dump reads as text whose values may hold any text, with such a value.
HOSTILE_VALUES = {"meta.properties": f"version=1\nnode.id=1\ncluster.id={HOSTILE}\n",
                  "quorum-state": '{"leaderEpoch": 1, "votedId": -1, '
                                  '"currentVoters": [{"voterId": "\\u001b[31m\\u202e"}]}'}


def _hostile_cases() -> list[tuple[str, str]]:
    from kseg.log.listing import READ_BY_NAME

    cases = [(name, f"{HOSTILE}\n{HOSTILE} 0 1\n") for name in sorted(READ_BY_NAME)]
    return cases + [(name, text) for name, text in HOSTILE_VALUES.items()]


@pytest.mark.parametrize("name, content", _hostile_cases(), ids=lambda v: repr(v[:20]))
def test_no_raw_control_character_from_a_text_file(partition: Path, name: str, content: str) -> None:
    """Every file read by its name (``READ_BY_NAME``), holding control and reordering characters
    in a line it refuses or in a value it takes: dump in every format and verify say so escaped
    (JSON Lines with JSON's escapes, ``\\u202e``: the same text to a parser)."""
    path = partition / name
    path.write_text(content)
    runner = CliRunner()
    for args in (["dump", "--format", "text", path], ["dump", "--format", "jsonl", path],
                 ["dump", "--format", "kafka", path], ["verify", path]):
        res = runner.invoke(main, [str(a) for a in args])
        said = (res.stderr or "") + res.output
        assert res.exit_code in (0, 1), (args, said)
        assert not any(ch in said for ch in RAW), (args, said)
