"""kseg diff: replicas and backups of one partition compared from batch headers and CRCs."""

from __future__ import annotations

import json
import struct
import shutil

import pytest
from click.testing import CliRunner

from conftest import FIXTURES_LOGDIR, REALDATA
from kseg.cli.main import main
from kseg.log.encode import build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record
from kseg.ops import diff as diff_mod
from kseg.ops.diff import DiffOptions, diff_paths

T0 = 1_700_000_000_000


def batch(base: int, per: int = 10, epoch: int = 0, tag: bytes = b"v") -> bytes:
    recs = [make_record(base + i, T0 + base + i, f"k{base + i}".encode(), tag * 20) for i in range(per)]
    return build_v2_batch(recs, partition_leader_epoch=epoch)


def write(folder, segments: list[list[bytes]], epochs: list[tuple[int, int]], first: int = 0):
    folder.mkdir(parents=True)
    off = first
    for seg in segments:
        (folder / segment_file_name(off)).write_bytes(b"".join(seg))
        off += 10 * len(seg)
    (folder / "leader-epoch-checkpoint").write_text(
        f"0\n{len(epochs)}\n" + "".join(f"{e} {o}\n" for e, o in epochs))
    return folder


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def leader(tmp_path, name="a"):
    return write(tmp_path / name / "t-0", [[batch(o) for o in range(0, 100, 10)],
                                           [batch(o, epoch=1) for o in range(100, 200, 10)]], [(0, 0), (1, 100)])


def test_identical_even_with_other_segment_rolls(tmp_path):
    a = leader(tmp_path)
    b = write(tmp_path / "b" / "t-0", [[batch(o) for o in range(0, 50, 10)],
                                       [batch(o) for o in range(50, 100, 10)] + [batch(o, epoch=1) for o in
                                                                                  range(100, 200, 10)]],
              [(0, 0), (1, 100)])
    res = run("diff", a, b)
    assert res.exit_code == 0, res.output
    assert "identical (20 equal batches, 200 equal records)" in res.output


def test_truncated_follower(tmp_path):
    a = leader(tmp_path)
    b = write(tmp_path / "b" / "t-0", [[batch(o) for o in range(0, 100, 10)], [batch(100, epoch=1)]],
              [(0, 0), (1, 100)])
    res = run("diff", a, b, "--format", "json")
    assert res.exit_code == 1
    p = json.loads(res.output)["partitions"][0]
    assert p["kind"] == "behind" and p["diverge_offset"] == 110
    assert p["a"]["only"] == [{"first": 110, "last": 199, "batches": 9, "records": 90}]
    assert p["b"]["only"] == []
    assert "B stops at offset 110" in p["explanation"]


def test_unclean_leader_election(tmp_path):
    a = leader(tmp_path)
    # B became leader in epoch 2 at offset 150 without A's offsets 150..199, and wrote others.
    b = write(tmp_path / "b" / "t-0", [[batch(o) for o in range(0, 100, 10)],
                                       [batch(o, epoch=1) for o in range(100, 150, 10)]
                                       + [batch(o, epoch=2, tag=b"w") for o in range(150, 180, 10)]],
              [(0, 0), (1, 100), (2, 150)])
    res = run("diff", a, b, "--format", "json", "--records", "--max-records", "5")
    assert res.exit_code == 1
    p = json.loads(res.output)["partitions"][0]
    assert p["kind"] == "diverged" and p["diverge_offset"] == 150
    assert p["a"]["epoch_at_divergence"] == 1 and p["b"]["epoch_at_divergence"] == 2
    assert p["a"]["checkpoint_epoch_at_divergence"] == 1 and p["b"]["checkpoint_epoch_at_divergence"] == 2
    assert "unclean leader election" in p["explanation"]
    assert p["a"]["only"][0]["first"] == 150 and p["a"]["only"][0]["records"] == 50
    assert p["b"]["only"][0]["last"] == 179 and p["b"]["only"][0]["records"] == 30
    assert p["records_differing"] == 50  # 30 changed, 20 only on A
    assert len(p["records"]) == 5
    first = p["records"][0]
    assert first["offset"] == 150 and first["a"]["value"] == "v" * 20 and first["b"]["value"] == "w" * 20
    text = run("diff", a, b, "--records", "--max-records", "5").output
    assert "offset 150: A timestamp" in text and "... 45 more differing records" in text


def test_retention_start_and_log_dirs(tmp_path):
    leader(tmp_path)
    write(tmp_path / "b" / "t-0", [[batch(o) for o in range(50, 100, 10)],
                                       [batch(o, epoch=1) for o in range(100, 200, 10)]], [(0, 50), (1, 100)],
              first=50)
    write(tmp_path / "b" / "u-0", [[batch(0)]], [(0, 0)])
    res = run("diff", tmp_path / "a", tmp_path / "b", "--format", "json")
    assert res.exit_code == 1
    doc = json.loads(res.output)
    t, u = doc["partitions"]
    assert t["kind"] == "start" and t["a"]["only"][0] == {"first": 0, "last": 49, "batches": 5, "records": 50}
    assert u["kind"] == "missing" and u["explanation"] == "only in B"


def test_equal_batches_are_not_decompressed(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(diff_mod, "batch_records", lambda *a, **k: calls.append(1) or [])
    a = leader(tmp_path)
    b = tmp_path / "b" / "t-0"
    shutil.copytree(a, b)
    assert diff_paths(a, b, DiffOptions(records=True)).identical
    assert not calls


def test_fixtures_against_themselves_and_a_damaged_copy(tmp_path):
    res = run("diff", FIXTURES_LOGDIR, FIXTURES_LOGDIR)
    assert res.exit_code == 0 and "22 identical, 0 different" in res.output
    copy = tmp_path / "v2-gzip-0"
    shutil.copytree(FIXTURES_LOGDIR / "v2-gzip-0", copy)
    log = sorted(copy.glob("*.log"))[-1]
    data = bytearray(log.read_bytes())
    data[-3] ^= 1
    log.write_bytes(bytes(data))
    # Stored CRCs equal: only --check-crc sees the damage.
    assert run("diff", FIXTURES_LOGDIR / "v2-gzip-0", copy).exit_code == 0
    res = run("diff", "--check-crc", FIXTURES_LOGDIR / "v2-gzip-0", copy)
    assert res.exit_code == 1 and "same leader epoch" in res.output and "fails its crc" in res.output


@pytest.mark.parametrize("src,writer", [
    ("v2-lz4-0", ["recompress", "--codec", "gzip"]),
    ("v1-none-0", ["up-convert", "--to-magic", "2"]),
    # v1 messages into gzip wrappers, whose header names only their last offset
    ("v1-none-0", ["recompress", "--codec", "gzip"]),
    ("v1-logappendtime-0", ["recompress", "--codec", "gzip"]),
])
def test_the_same_records_written_anew(tmp_path, src, writer):
    """A copy whose batches differ but whose records are the same (recompressed, converted) is
    still a different copy (exit 1), diverging at its first offset, and --records says every
    record is the same."""
    out = tmp_path / "out" / src
    assert run(*writer, FIXTURES_LOGDIR / src, "-o", out).exit_code == 0
    res = run("diff", "--records", "--format", "json", FIXTURES_LOGDIR / src, out)
    (p,) = json.loads(res.output)["partitions"]
    assert res.exit_code == 1 and p["kind"] == "diverged" and p["records_differing"] == 0, res.output
    assert p["diverge_offset"] == 0 and not p["a"]["only"][1:] and p["a"]["records"] == p["b"]["records"], p
    assert "every record from there on is the same on both sides" in p["explanation"]


def test_a_legacy_wrapper_is_decompressed_once(tmp_path, monkeypatch):
    """A legacy wrapper's inner messages, read for its first offset, serve the record comparison."""
    out = tmp_path / "out" / "v1-none-0"
    assert run("recompress", "--codec", "gzip", FIXTURES_LOGDIR / "v1-none-0", "-o", out).exit_code == 0
    read = diff_mod.batch_records
    seen: list[int] = []
    monkeypatch.setattr(diff_mod, "batch_records",
                        lambda b, **k: (seen.append(b.offset) if b.is_compressed else None) or read(b, **k))
    pd = diff_paths(FIXTURES_LOGDIR / "v1-none-0", out, DiffOptions(records=True)).partitions[0]
    assert pd.records_compared and not pd.records_differing
    assert seen and len(seen) == len(set(seen)), seen  # each wrapper (B's side) once


def test_one_record_differs(tmp_path):
    a = write(tmp_path / "a" / "t-0", [[batch(0), batch(10)]], [(0, 0)])
    b = write(tmp_path / "b" / "t-0", [[batch(0), batch(10, tag=b"w")]], [(0, 0)])
    res = run("diff", "--records", "--format", "json", a, b)
    (p,) = json.loads(res.output)["partitions"]
    assert res.exit_code == 1 and p["records_differing"] == 10 and p["diverge_offset"] == 10, res.output
    assert "every record" not in p["explanation"] and "same leader epoch 0" in p["explanation"]
    (q,) = json.loads(run("diff", "--format", "json", a, b).output)["partitions"]
    assert "records_differing" not in q  # not compared without --records


def test_real_data_copy(tmp_path):
    root = REALDATA / "Experts-in-team-innovation" / "kafka" / "data"
    if not root.is_dir():
        pytest.skip(f"{root} not present")
    shutil.copytree(root, tmp_path / "copy")
    assert run("diff", root, tmp_path / "copy").exit_code == 0
    part = tmp_path / "copy" / "sensor-data-topic-0"
    log = next(part.glob("*.log"))
    log.write_bytes(log.read_bytes()[:-40])
    res = run("diff", root / "sensor-data-topic-0", part, "--format", "json")
    assert res.exit_code == 1
    p = json.loads(res.output)["partitions"][0]
    # the cut batch ends the partition's newest segment: one still being written, a note (tests/test_tails.py)
    assert p["kind"] == "behind" and not p["b"]["problems"]
    assert any("incomplete tail" in n for n in p["b"]["notes"]), p["b"]


def test_bad_usage_and_single_files(tmp_path):
    a = leader(tmp_path)
    assert run("diff", tmp_path / "a", a).exit_code == 2  # a log directory against a partition
    assert run("diff", a, tmp_path / "nope").exit_code == 2
    log = sorted(a.glob("*.log"))[0]
    res = run("diff", log, log, "--format", "json")
    assert res.exit_code == 0 and json.loads(res.output)["identical"]


# --------------------------------------------------------------------------- reading headers only

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import examples  # noqa: E402
from kseg.log.encode import build_legacy_wrapper  # noqa: E402

KINDS = ("v2", "v2-large", "v1-large", "v1-wrapper-large", "v0-wrapper")
TAILS = ("", "partial", "zeros", "junk", "bad-magic-large")


def _entry_bytes(kind: str, offset: int, seed: int) -> tuple[bytes, int]:
    """An entry of the kind at ``offset``, and how many offsets it holds."""
    big = bytes((seed * 7 + i) % 251 for i in range(9000))  # past LARGE_ENTRY_BYTES, not compressible to nothing
    if kind == "v2":
        return build_v2_batch([make_record(offset, T0, b"k", b"v" * (seed % 50))], partition_leader_epoch=0), 1
    if kind == "v2-large":
        recs = [make_record(offset + i, T0 + i, b"k", big[i:] + big[:i]) for i in range(1 + seed % 3)]
        return build_v2_batch(recs, partition_leader_epoch=0), len(recs)
    if kind == "v1-large":
        return build_legacy_wrapper([make_record(offset, T0, b"k", big, magic=1)], magic=1, codec=0), 1
    n = 2 + seed % 3
    recs = [make_record(offset + i, T0 + i, b"k", big, magic=1 if kind.startswith("v1") else 0) for i in range(n)]
    return build_legacy_wrapper(recs, magic=1 if kind.startswith("v1") else 0, codec=1), n


@settings(examples(40), deadline=None)
@given(kinds=st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1000)), min_size=0, max_size=12),
       tail=st.sampled_from(TAILS))
def test_the_header_walk_finds_what_the_full_walk_finds(tmp_path_factory, kinds, tail):
    """diff reads only the headers of large batches when it compares headers (no --records, no
    --check-crc): the batches it finds (every header field, positions and sizes), and what it
    says of the segment's end, are the full read's."""
    folder = tmp_path_factory.mktemp("walk")
    data, offset = b"", 0
    for kind, seed in kinds:
        entry, n = _entry_bytes(kind, offset, seed)
        data += entry
        offset += n
    data += {"": b"", "partial": _entry_bytes("v2-large", offset, 1)[0][:5000], "zeros": bytes(9000),
             "junk": b"\x07" * 100, "bad-magic-large": struct.pack(">qiib", offset, 20000, 0, 9) + bytes(19991)}[tail]
    log = folder / segment_file_name(0)
    log.write_bytes(data)
    seen = []
    for headers in (False, True):
        side = diff_mod.Side(str(log))
        batches = [(b.position, b.size, b.magic, b.offset, b.crc, b.attributes, b.max_timestamp,
                    b.partition_leader_epoch, b.last_offset_delta, b.record_count, b.producer_id)
                   for b in diff_mod._entries(log, side, False, headers)]
        seen.append((batches, side.problems, side.notes))
    assert seen[0] == seen[1]
    assert len(seen[0][0]) == len(kinds)
