"""kseg salvage: damaged copies of the Kafka corpora's partitions and of generated ones, each
damage kind at many positions; what comes back is the truth minus exactly the batches the
damage touched, the output passes verify, every lost region is named with its byte and offset
range, the input is left as it was, and the scanner's C twin agrees with its reference."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import FIXTURES_LOGDIR, REPO, examples
from kseg.cli.main import main
from kseg.log import fast
from kseg.log.encode import build_v2_batch
from kseg.log.records import batch_records
from kseg.log.salvage_scan import FOUND, MORE, NONE, Limits, find_candidate, next_batch
from kseg.log.segment import Segment, partition_segments, segment_file_name
from kseg.model import make_record
from kseg.ops.salvage import SalvageOptions, salvage
from kseg.ops.verify import verify_paths

CORPORA = [REPO / "fixtures" / "kafka-3.9" / "logdir", REPO / "fixtures" / "kafka-4" / "logdir"]
PARTITIONS = sorted(p for root in CORPORA + [FIXTURES_LOGDIR] for p in root.iterdir()
                    if p.is_dir() and partition_segments(p))
EPOCH_FIELD = range(12, 16)  # v2 partitionLeaderEpoch: outside the CRC, any epoch >= -1 is plausible
T0 = 1_700_000_000_000
EXAMPLES = examples(25)


def generated(folder: Path, segments: int = 3, n: int = 12, per: int = 5) -> Path:
    """A partition of several segments of uncompressed v2 batches, offsets dense."""
    folder.mkdir(parents=True)
    off = 0
    for _ in range(segments):
        data = b""
        for _ in range(n):
            recs = [make_record(off + i, T0 + off + i, f"k{off + i}".encode(), b"v" * 40) for i in range(per)]
            data += build_v2_batch(recs, partition_leader_epoch=1)
            off += per
        (folder / segment_file_name(off - n * per)).write_bytes(data)
    (folder / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")
    return folder


@dataclass
class Truth:
    """A segment's batches before the damage: (position, size, magic, records)."""

    batches: list[tuple[int, int, int, list]]


def truth_of(folder: Path) -> dict[str, Truth]:
    out = {}
    for log in partition_segments(folder):
        out[log.name] = Truth([(b.position, b.size, b.magic, batch_records(b)) for b in Segment(log).batches()])
    return out


def records_of(folder: Path) -> list:
    return [r for log in partition_segments(folder) for b in Segment(log).batches() for r in batch_records(b)]


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


# --------------------------------------------------------------------------- damage kinds


def zero(data: bytes, at: int, n: int) -> tuple[bytes, set[int]]:
    """Bytes at..at+n zeroed; the changed positions."""
    n = min(n, len(data) - at)
    changed = {i for i in range(at, at + n) if data[i]}
    return data[:at] + bytes(n) + data[at + n:], changed


def touched_by_change(t: Truth, changed: set[int]) -> set[int]:
    """Batches with a changed byte (a v2 batch's leader epoch alone does not count: no CRC covers it)."""
    out = set()
    for i, (pos, size, magic, _) in enumerate(t.batches):
        rel = {c - pos for c in changed if pos <= c < pos + size}
        if magic >= 2:
            rel -= set(EPOCH_FIELD)
        if rel:
            out.add(i)
    return out


def damage(data: bytes, t: Truth, kind: str, pick: int, frac: float, garbage: bytes, length: int
           ) -> tuple[bytes, set[int]]:
    """The damaged bytes and the indices of the batches the damage touched."""
    i = pick % len(t.batches)
    pos, size, _, _ = t.batches[i]
    if kind == "zeros":
        at = int(frac * len(data))
        out, changed = zero(data, at, length)
        # Zeros that reach into a batch only in its offset field (outside every checksum) may leave
        # offsets that still read as a gap, as compaction leaves (a v1 wrapper's inner offsets then
        # read as absolute, as Kafka reads them), even after batches the same zeros destroyed:
        # that batch cannot be told from a sound one, as in "garbage" below.
        assume(not any((inside := [c for c in changed if pos <= c < pos + size]) and all(c < pos + 8 for c in inside)
                       for pos, size, *_ in t.batches))
        return out, touched_by_change(t, changed)
    if kind in ("huge", "negative"):
        value = 0x7FFFFFF0 if kind == "huge" else -1 - length
        new = data[:pos + 8] + struct.pack(">i", value) + data[pos + 12:]
        return new, {i} if new != data else set()
    if kind == "torn":
        cut = pos + 1 + int(frac * (size - 2))  # the batch ends early; what follows is intact
        # Unless the byte after the cut is the byte that was there: then it is the next batch
        # that lost its first byte (the bytes cannot tell the two apart).
        assume(pos + size == len(data) or data[cut] != data[pos + size])
        return data[:cut] + data[pos + size:], {i}
    if kind == "garbage":
        at = int(frac * len(data))
        # A batch's offset field lies outside every checksum (magic 0, 1 and 2): bytes put into it
        # that leave a batch which parses are caught only by the next batch's offsets, and a
        # segment's last batch has none after it. That case cannot be told from a gap in the
        # offsets (compaction leaves such gaps), so salvage keeps the batch, as a broker would. Bytes
        # put right after the field count too: the entry is then found one byte on, its offset
        # field ending in the byte put in (0x14 read as 0x1400), its size and checksummed bytes whole.
        last = t.batches[-1][0]
        assume(not last <= at <= last + 8)
        new = data[:at] + garbage + data[at:]
        # A batch the bytes went into is touched, unless they only repeat its neighbouring bytes
        # (a zero byte put among an offset field's leading zeros leaves the batch whole, moved).
        inside = {k for k, (p, s, _, _) in enumerate(t.batches) if p < at < p + s
                  and data[p:p + s] not in (new[p:p + s], new[p + len(garbage):p + len(garbage) + s])}
        return new, inside
    raise AssertionError(kind)


KINDS = ["zeros", "huge", "negative", "torn", "garbage"]


def copy_and_pick(tmp: Path, src: Path, seg_pick: int) -> tuple[Path, dict[str, Truth], Path, Truth]:
    """A copy of ``src`` under ``tmp``, its batches before any damage, and the segment picked."""
    work = tmp / "in" / src.name
    shutil.copytree(src, work)
    truth = truth_of(work)
    logs = partition_segments(work)
    log = logs[seg_pick % len(logs)]
    assume(truth[log.name].batches)
    return work, truth, log, truth[log.name]


def check_salvage(tmp: Path, src: Path, kind: str, seg_pick: int, pick: int, frac: float, garbage: bytes,
                  length: int) -> None:
    shutil.rmtree(tmp, ignore_errors=True)
    work, truth, log, t = copy_and_pick(tmp, src, seg_pick)
    damaged, touched = damage(log.read_bytes(), t, kind, pick, frac, garbage, length)
    log.write_bytes(damaged)
    before = digest(work)

    rep = salvage(work, tmp / "out" / src.name, SalvageOptions())

    assert digest(work) == before, "the input changed"
    expected = [r for name, tt in truth.items() for k, b in enumerate(tt.batches)
                if not (name == log.name and k in touched) for r in b[3]]
    assert records_of(tmp / "out" / src.name) == expected
    assert verify_paths([tmp / "out" / src.name]).ok
    lost = [r for r in rep.lost]
    if touched:
        assert not rep.ok and lost
        for k in touched:
            first = t.batches[k][3][0].offset if t.batches[k][3] else None
            if first is not None:  # its offsets lie in a range reported lost
                assert any(r.first_offset is not None and r.first_offset <= first
                           and (r.last_offset is None or first <= r.last_offset) for r in lost), (first, lost)
    if not touched and kind != "garbage" and damaged == log.read_bytes():
        assert rep.ok


@pytest.mark.parametrize("kind", KINDS)
@EXAMPLES
@given(part=st.sampled_from(PARTITIONS), seg=st.integers(0, 10), pick=st.integers(0, 1000),
       frac=st.floats(0, 0.999), garbage=st.binary(min_size=1, max_size=300), length=st.integers(1, 600))
def test_salvage_recovers_all_but_the_touched_batches(tmp_path, kind, part, seg, pick, frac, garbage, length):
    check_salvage(tmp_path / "case", part, kind, seg, pick, frac, garbage, length)


@pytest.mark.parametrize("kind", KINDS)
@examples(10)
@given(seg=st.integers(0, 2), pick=st.integers(0, 1000), frac=st.floats(0, 0.999),
       garbage=st.binary(min_size=1, max_size=300), length=st.integers(1, 2000))
def test_salvage_in_any_segment_of_a_generated_partition(tmp_path, kind, seg, pick, frac, garbage, length):
    src = tmp_path / "gen" / "g-0"
    if not src.exists():
        generated(src)
    check_salvage(tmp_path / "case", src, kind, seg, pick, frac, garbage, length)


# --------------------------------------------------------------------------- the report and the command


def run(*args: object):
    return CliRunner().invoke(main, ["salvage", *[str(a) for a in args]], catch_exceptions=False)


def test_lost_range_named_with_bytes_and_offsets(tmp_path):
    src = generated(tmp_path / "g-0")
    log = partition_segments(src)[1]
    bs = list(Segment(log).batches())
    data = bytearray(log.read_bytes())
    a, b = bs[3].position + 20, bs[5].position + 30  # batches 3, 4 and 5 touched
    data[a:b] = bytes(b - a)
    log.write_bytes(bytes(data))
    res = run(src, "-o", tmp_path / "out", "--format", "json")
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    (seg,) = [s for p in doc["partitions"] for s in p["segments"] if s["lost"]]
    (r,) = seg["lost"]
    assert (r["start"], r["end"]) == (bs[3].position, bs[6].position)
    assert (r["first_offset"], r["last_offset"]) == (bs[3].offset, bs[6].offset - 1)
    assert r["bytes"] == bs[6].position - bs[3].position and r["offsets"] == bs[6].offset - bs[3].offset
    text = run(src, "--dry-run").output
    assert (f"offsets {bs[3].offset}–{bs[6].offset - 1} lost, bytes {bs[3].position}–{bs[6].position - 1}"
            in text), text


def test_exit_codes_and_existing_output(tmp_path):
    src = generated(tmp_path / "g-0", segments=1)
    assert run(src, "-o", tmp_path / "out").exit_code == 0
    res = run(src, "-o", tmp_path / "out")
    assert res.exit_code == 2 and "exists" in res.output
    assert run(src).exit_code == 2  # neither -o nor --dry-run
    assert run(tmp_path / "nothing-here", "--dry-run").exit_code == 2
    log = partition_segments(src)[0]
    log.write_bytes(log.read_bytes() + b"\x07" * 100)
    assert run(src, "-o", tmp_path / "out", "--force").exit_code == 1


def test_repair_salvage_is_salvage(tmp_path):
    src = generated(tmp_path / "g-0", segments=2)
    log = partition_segments(src)[0]
    data = bytearray(log.read_bytes())
    data[500:900] = bytes(400)
    log.write_bytes(bytes(data))
    a = CliRunner().invoke(main, ["repair", "--salvage", "--dry-run", "--format", "json", str(src)])
    b = run(src, "--dry-run", "--format", "json")
    assert a.exit_code == b.exit_code == 1 and json.loads(a.output) == json.loads(b.output)


def test_zeros_after_the_last_batch_are_named_as_such(tmp_path):
    src = generated(tmp_path / "g-0", segments=2)
    log = partition_segments(src)[-1]
    size = log.stat().st_size
    log.write_bytes(log.read_bytes() + bytes(5000))  # preallocated, or the last batches zeroed: no telling
    rep = salvage(src, None, SalvageOptions(dry_run=True))
    (r,) = rep.lost
    assert (r.start, r.end, r.reason, r.at_end, r.last_offset) == (size, size + 5000, "zeros", True, None)
    assert "preallocated" in run(src, "--dry-run").output


def test_a_crc_failure_is_reported_and_not_kept(tmp_path):
    src = generated(tmp_path / "g-0", segments=1)
    log = partition_segments(src)[0]
    bs = list(Segment(log).batches())
    data = bytearray(log.read_bytes())
    data[bs[2].position + 70] ^= 0xFF  # a record byte: the batch frames and decompresses, its CRC fails
    log.write_bytes(bytes(data))
    rep = salvage(src, None, SalvageOptions(dry_run=True))
    (r,) = rep.lost
    assert r.reason == "crc" and (r.start, r.end) == (bs[2].position, bs[3].position)
    assert r.claimed == (bs[2].offset, bs[2].last_offset) and "crc mismatch" in r.message


# --------------------------------------------------------------------------- the scanner and its twin


def test_scanner_walks_every_real_segment_batch_by_batch():
    for part in PARTITIONS:
        for log in partition_segments(part):
            data = log.read_bytes()
            want = [(b.position, b.size) for b in Segment(log).batches()]
            got, pos, low = [], 0, 0
            while True:
                status, p, total = next_batch(data, pos, Limits(low), finder=find_candidate)
                if status != FOUND:
                    break
                got.append((p, total))
                low = int.from_bytes(data[p:p + 8], "big") + (
                    int.from_bytes(data[p + 23:p + 27], "big") if data[p + 16] == 2 else 0) + 1
                pos = p + total
            assert got == want, log


def _pieces() -> list[bytes]:
    out = []
    for part in PARTITIONS[:12]:
        for log in partition_segments(part)[:1]:
            out += [bytes(b.raw) for b in list(Segment(log).batches())[:3]]
    return out


PIECES = _pieces()
piece = st.one_of(st.sampled_from(PIECES), st.binary(max_size=80), st.integers(1, 400).map(bytes),
                  st.tuples(st.sampled_from(PIECES), st.integers(0, 200), st.integers(0, 255)).map(
                      lambda t: t[0][:t[1] % len(t[0])] + bytes([t[2]]) + t[0][t[1] % len(t[0]) + 1:]),
                  st.sampled_from(PIECES).map(lambda p: p[:len(p) // 2]))


@pytest.mark.skipif(fast.c_twin("resync") is None, reason="C accelerator not built (or KSEG_PURE_PYTHON)")
@examples(300)
@given(parts=st.lists(piece, max_size=8), start=st.integers(0, 300), final=st.booleans(),
       low=st.integers(0, 200), high=st.sampled_from([2**63 - 1, 100, 40]),
       max_size=st.sampled_from([64 << 20, 500, 100]))
def test_c_twin_equals_the_reference(parts, start, final, low, high, max_size):
    from kseg.log.salvage_scan import _c_find

    data = b"".join(parts)
    start = min(start, len(data))
    lim = Limits(low, high, max_size)
    assert _c_find(data, start, final, lim) == find_candidate(data, start, final, lim)
    assert next_batch(data, start, lim, final=final, finder=_c_find) == next_batch(
        data, start, lim, final=final, finder=find_candidate)


def test_zero_and_short_buffers():
    lim = Limits()
    assert find_candidate(bytes(10_000), 0, True, lim) == (NONE, 10_000, 0)
    status, p, _ = find_candidate(bytes(10_000), 0, False, lim)
    assert status == MORE and p == 10_000 - 16
    assert find_candidate(b"", 0, True, lim) == (NONE, 0, 0)
    assert find_candidate(b"", 0, False, lim) == (MORE, 0, 0)


def test_input_is_never_modified_even_when_everything_is_lost(tmp_path):
    src = tmp_path / "t-0"
    src.mkdir()
    (src / segment_file_name(0)).write_bytes(os.urandom(5000))
    before = digest(src)
    res = run(src, "-o", tmp_path / "out")
    assert res.exit_code == 1 and digest(src) == before
    assert (tmp_path / "out" / segment_file_name(0)).read_bytes() == b""


def test_the_text_of_a_damaged_copy_speaks_no_python(tmp_path):
    from test_text_output import LEAKS

    src = generated(tmp_path / "g-0")
    for k, log in enumerate(partition_segments(src)):
        data = bytearray(log.read_bytes())
        data[100 + k * 300:400 + k * 300] = bytes(300) if k != 1 else os.urandom(300)
        log.write_bytes(bytes(data) + (b"\x00\x00\x00\x00" if k == 2 else b""))
    text = run(src, "--dry-run").output
    assert "lost, bytes" in text and "(612 bytes, crc)" in text and "zeros" in text, text
    for what, pattern in LEAKS.items():
        assert pattern.search(text) is None, (what, text)


# --------------------------------------------------------------------------- --keep-crc-failed


@EXAMPLES
@given(part=st.sampled_from(PARTITIONS), seg=st.integers(0, 10), pick=st.integers(0, 1000), at=st.floats(0, 0.999),
       flip=st.integers(1, 255))
def test_keep_crc_failed_holds_exactly_the_records_of_the_crc_failed_batches(tmp_path_factory, part, seg, pick, at,
                                                                             flip):
    """One byte of a batch changed past its framing (size, magic): the batch fails its CRC; the
    file holds its records exactly when they still read, each marked, and the partition never."""
    tmp = tmp_path_factory.mktemp("crc")
    work, truth, log, t = copy_and_pick(tmp, part, seg)
    i = pick % len(t.batches)
    pos, size, _, _ = t.batches[i]
    k = pos + 17 + int(at * (size - 17))  # past the offset, size and magic fields
    data = bytearray(log.read_bytes())
    data[k] ^= flip
    log.write_bytes(bytes(data))
    damaged = next(b for b in Segment(log).batches() if b.position == pos)
    try:
        expected = [(r.offset, r.key, r.value) for r in batch_records(damaged)]
        reads = True  # (a batch emptied by compaction reads too: counted, with no records)
    except Exception:  # noqa: BLE001 - whatever does not read is not kept apart either
        expected, reads = [], False
    kept = tmp / "crc.jsonl"
    res = run(work, "-o", tmp / "out", "--keep-crc-failed", kept, "--format", "json")
    code, text = res.exit_code, res.output
    assert code == 1, text
    lines = [json.loads(x) for x in kept.read_text().splitlines()]
    assert [(x["offset"], x["batch_position"], x["crc_failed"], x["file"]) for x in lines] == [
        (o, pos, True, str(log)) for o, _, _ in expected]
    assert all(x["crc_stored"] == damaged.crc != x["crc_computed"] == damaged.computed_crc() for x in lines)
    doc = json.loads(text)
    assert (doc["crc_failed_batches"], doc["crc_failed_records"]) == (1 if reads else 0, len(expected))
    # the partition holds the truth minus that batch, whatever the file holds
    assert records_of(tmp / "out") == [r for name, tt in truth.items() for j, b in enumerate(tt.batches)
                                       if not (name == log.name and j == i) for r in b[3]]


def _run(*args: object) -> tuple[int, str]:
    res = run(*args)
    return res.exit_code, res.output


def test_keep_crc_failed_usage(tmp_path):
    src = FIXTURES_LOGDIR / "v2-none-0"
    code, text = _run(src, "--dry-run", "--keep-crc-failed", tmp_path / "k.jsonl")
    assert code == 2 and "--dry-run writes nothing" in text
    code, text = _run(src, "-o", tmp_path / "o", "--keep-crc-failed", src / "k.jsonl")
    assert code == 2 and "must not be an input" in text
    (tmp_path / "k.jsonl").write_text("")
    code, text = _run(src, "-o", tmp_path / "o", "--keep-crc-failed", tmp_path / "k.jsonl")
    assert code == 2 and "exists" in text
    code, text = _run(src, "-o", tmp_path / "o2", "--keep-crc-failed", tmp_path / "k2.jsonl")
    assert code == 0 and (tmp_path / "k2.jsonl").read_text() == ""
