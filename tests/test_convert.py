"""The write side end to end: every command's output is read by kafka-python (CRCs
validated) with the same data, and passes `kseg verify` including its indexes."""

from __future__ import annotations

import hashlib
import shutil
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from conftest import examples

from kseg.cli.main import main
from kseg.codecs import get_codec
from kseg.formats.attributes import LOG_APPEND_TIME
from kseg.log import records as log_records
from kseg.log.records import batch_records
from kseg.log.segment import strict_batches

sys.path.insert(0, str(Path(__file__).parent))
from builders import CASES, T0, folder_records, write_partition  # noqa: E402


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def verify_ok(path: Path) -> None:
    code, out = run("verify", path)
    assert code == 0, out
    assert "0 with errors" in out


def data(records, *, timestamps=True, headers=True):
    out = []
    for off, ts, key, value, hdrs in records:
        out.append((off, ts if timestamps else None, key, value, hdrs if headers else ()))
    return out


@pytest.mark.parametrize("magic,codec", CASES)
@pytest.mark.parametrize("to_magic", [1, 2])
def test_up_convert_keeps_records(tmp_path, magic, codec, to_magic):
    src = write_partition(tmp_path / "t-0", magic, codec)
    out = tmp_path / "out" / "t-0"
    code, text = run("up-convert", src, "-o", out, "--to-magic", to_magic, "--index-interval-bytes", 64)
    assert code == 0, text
    before, after = folder_records(src), folder_records(out)
    assert [r[0] for r in after] == [r[0] for r in before]
    assert [(r[2], r[3]) for r in after] == [(r[2], r[3]) for r in before]
    if magic >= 1:
        assert [r[1] for r in after] == [r[1] for r in before]
    else:  # v0 has no timestamps: they become -1 (kafka-python shows v0 as None)
        assert {r[1] for r in after} == ({-1} if to_magic >= 1 else {None})
    verify_ok(out)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [p.name for p in src.iterdir()] + [p.name.replace(".log", s) for p in src.iterdir() for s in
                                           (".index", ".timeindex")] + ["leader-epoch-checkpoint"])
    if magic >= to_magic:  # nothing to do: byte for byte
        for p in src.iterdir():
            assert (out / p.name).read_bytes() == p.read_bytes()


@pytest.mark.parametrize("magic,codec", [c for c in CASES if c[0] == 2 or c[0] == 1])
@pytest.mark.parametrize("to_magic", [0, 1])
def test_down_convert(tmp_path, magic, codec, to_magic):
    src = write_partition(tmp_path / "t-0", magic, codec)
    out = tmp_path / "out"
    args = ["down-convert", src, "-o", out, "--to-magic", to_magic]
    code, text = run(*args)
    if codec == "zstd":
        assert code == 2 and "zstd cannot be carried by magic" in text  # a usage error: --codec is missing
        assert not out.exists()
        code, text = run(*args, "--codec", "gzip")
    assert code == 0, text
    before, after = folder_records(src), folder_records(out)
    assert [(r[0], r[2], r[3]) for r in after] == [(r[0], r[2], r[3]) for r in before]
    if to_magic == 1 and magic >= 1:
        assert [r[1] for r in after] == [r[1] for r in before]
    if magic == 2 and to_magic < 2:
        assert "headers" in text  # counted, never silently lost
    verify_ok(out)


def test_down_convert_drops_control_batches_and_counts_them(tmp_path):
    from kseg.log.encode import build_v2_batch
    from kseg.model import make_record

    part = tmp_path / "t-0"
    part.mkdir()
    data_batch = build_v2_batch([make_record(0, T0, b"k", b"v")], producer_id=7, producer_epoch=0,
                                base_sequence=0, transactional=True)
    marker = build_v2_batch([make_record(1, T0, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")],
                            producer_id=7, producer_epoch=0, transactional=True, control=True)
    empty = build_v2_batch([], base_offset=2, last_offset_delta=0)
    (part / "00000000000000000000.log").write_bytes(data_batch + marker + empty)
    code, text = run("down-convert", part, "-o", tmp_path / "out", "--to-magic", 1)
    assert code == 0, text
    assert "1 control batches" in text and "1 empty batches" in text and "1 producer states" in text
    assert [r[0] for r in folder_records(tmp_path / "out")] == [0]


def test_round_trip_v0_v1_v2_v1_v0(tmp_path):
    src = write_partition(tmp_path / "t-0", 0, "gzip")
    steps = [("up-convert", 1), ("up-convert", 2), ("down-convert", 1), ("down-convert", 0)]
    cur = src
    for i, (cmd, magic) in enumerate(steps):
        nxt = tmp_path / f"s{i}"
        code, text = run(cmd, cur, "-o", nxt, "--to-magic", magic)
        assert code == 0, text
        verify_ok(nxt)
        cur = nxt
    assert [(r[0], r[2], r[3]) for r in folder_records(cur)] == [(r[0], r[2], r[3]) for r in folder_records(src)]


def test_up_convert_v2_changes_nothing(tmp_path):
    src = write_partition(tmp_path / "t-0", 2, "lz4")
    code, _ = run("up-convert", src, "-o", tmp_path / "out", "--to-magic", 2)
    assert code == 0
    for p in src.iterdir():
        assert (tmp_path / "out" / p.name).read_bytes() == p.read_bytes()


def test_up_convert_log_append_time(tmp_path):
    src = write_partition(tmp_path / "t-0", 0, "none")
    out = tmp_path / "out"
    code, text = run("up-convert", src, "-o", out, "--to-magic", 2, "--timestamp-type", "log-append",
                     "--log-append-time", T0)
    assert code == 0, text
    assert {r[1] for r in folder_records(out)} == {T0}
    code, _ = run("up-convert", src, "-o", tmp_path / "x", "--to-magic", 2, "--timestamp-type", "log-append")
    assert code == 2


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_up_convert_log_append_time_stamps_v1_entries(tmp_path, codec):
    """As Kafka 3.9 writes v1 messages produced to a LogAppendTime v2 topic (LogValidator;
    tests/kafka/test_kafka_convert_live.py): the v2 batch is LogAppendTime with maxTimestamp the
    append time, and its records keep their own CreateTime values (base timestamp, deltas)."""
    src = write_partition(tmp_path / "t-0", 1, codec, segments=1)
    out = tmp_path / "out"
    code, text = run("up-convert", src, "-o", out, "--to-magic", 2, "--timestamp-type", "log-append",
                     "--log-append-time", T0 + 5)
    assert code == 0, text
    [seg] = out.glob("*.log")
    before = [r for b in strict_batches(next(src.glob("*.log"))) for r in batch_records(b)]
    batches = list(strict_batches(seg))
    assert batches and all(b.timestamp_type == LOG_APPEND_TIME and b.max_timestamp == T0 + 5 for b in batches)
    after = [r for b in batches for r in batch_records(b)]
    assert [r.stored_timestamp for r in after] == [r.stored_timestamp for r in before]
    assert {r.timestamp for r in after} == {T0 + 5}
    assert [b.base_timestamp for b in batches][0] == before[0].stored_timestamp


@pytest.mark.parametrize("magic,codec", [(0, "none"), (1, "snappy")])
def test_up_convert_partition_leader_epoch(tmp_path, magic, codec):
    """New v2 batches carry --partition-leader-epoch (a broker writes its leader epoch there;
    the default -1 is "none"), and the leader-epoch-checkpoint follows it."""
    src = write_partition(tmp_path / "t-0", magic, codec, segments=1)
    for epoch in (-1, 7):
        out = tmp_path / f"out{epoch}" / "t-0"
        code, text = run("up-convert", src, "-o", out, "--to-magic", 2, "--partition-leader-epoch", epoch)
        assert code == 0, text
        assert {b.partition_leader_epoch for seg in out.glob("*.log") for b in strict_batches(seg)} == {epoch}
        checkpoint = (out / "leader-epoch-checkpoint").read_text().split("\n")
        assert checkpoint[1] == ("1" if epoch >= 0 else "0")
    code, text = run("up-convert", src, "-o", tmp_path / "bad", "--to-magic", 2, "--partition-leader-epoch", -2)
    assert code == 2


def test_up_convert_groups_uncompressed_messages(tmp_path):
    src = write_partition(tmp_path / "t-0", 1, "none", segments=1, n_batches=5, per=5)
    out = tmp_path / "out"
    code, text = run("up-convert", src, "-o", out, "--to-magic", 2, "--batch-records", 10)
    assert code == 0
    assert "25 batches / 25 records in; 3 batches / 25 records" in text


@pytest.mark.parametrize("magic,codec", CASES)
@pytest.mark.parametrize("target", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_recompress(tmp_path, magic, codec, target):
    src = write_partition(tmp_path / "t-0", magic, codec)
    out = tmp_path / "out"
    code, text = run("recompress", src, "-o", out, "--codec", target)
    if target == "zstd" and magic < 2:
        assert code == 2 and "zstd" in text  # impossible: a usage error
        return
    assert code == 0, text
    before, after = folder_records(src), folder_records(out)
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in after] == [(r[0], r[1], r[2], r[3], r[4]) for r in before]
    verify_ok(out)
    code, dumped = run("dump", "--format", "jsonl", out)
    import json

    codecs = {json.loads(line)["codec"] for line in dumped.splitlines() if line.startswith("{")}
    assert codecs == {target}


def test_recompress_topics_filter(tmp_path):
    logdir = tmp_path / "logs"
    write_partition(logdir / "a-0", 2, "none")
    write_partition(logdir / "b-0", 2, "none")
    out = tmp_path / "out"
    code, text = run("recompress", logdir, "-o", out, "--codec", "gzip", "--topics", "a")
    assert code == 0, text
    assert (out / "b-0" / "00000000000000000000.log").read_bytes() == (
        logdir / "b-0" / "00000000000000000000.log").read_bytes()
    assert (out / "a-0" / "00000000000000000000.log").read_bytes() != (
        logdir / "a-0" / "00000000000000000000.log").read_bytes()
    verify_ok(out)


class CountingCodecs:
    """Counts decompress/compress calls on the real codecs (a spy, not a mock)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        self.by_name = {"compress": 0, "decompress": 0}
        for cid in range(5):
            codec = get_codec(cid)
            for name in ("compress", "decompress"):
                real = getattr(codec, name)

                def spy(*a, _real=real, _name=name, **kw):
                    self.calls += 1
                    self.by_name[_name] += 1
                    return _real(*a, **kw)

                monkeypatch.setattr(codec, name, spy)
        real_frame = log_records.lz4_frame_bytes  # Kafka's LZ4 frames, decompressed in C past the codec object

        def frame_spy(*a, **kw):
            out = real_frame(*a, **kw)
            if out is not None:
                self.calls += 1
                self.by_name["decompress"] += 1
            return out

        monkeypatch.setattr(log_records, "lz4_frame_bytes", frame_spy)


@pytest.mark.parametrize("magic,codec", CASES)
def test_rebase(tmp_path, monkeypatch, magic, codec):
    src = write_partition(tmp_path / "t-0", magic, codec, first_offset=100)
    out = tmp_path / "out"
    spy = CountingCodecs(monkeypatch)
    code, text = run("rebase", src, "-o", out, "--base-offset", 5000)
    assert code == 0, text
    if magic >= 1 or codec == "none":
        # Never re-encoded; decompressed only by the damage check (--on-damage), once a compressed batch.
        assert spy.by_name["compress"] == 0, "rebase of v1/v2 must not compress"
        assert spy.by_name["decompress"] == (0 if codec == "none" else 6)
        assert "recompressed 0" in text
    else:
        assert spy.calls > 0 and "recompressed 6" in text  # v0 wrappers hold absolute inner offsets
    before, after = folder_records(src), folder_records(out)
    assert [r[0] for r in after] == [r[0] + 4900 for r in before]
    assert [(r[2], r[3]) for r in after] == [(r[2], r[3]) for r in before]
    assert sorted(p.name for p in out.glob("*.log")) == ["00000000000000005000.log", "00000000000000005012.log"]
    verify_ok(out)


def test_outputs_are_refused_and_inputs_untouched(tmp_path):
    src = write_partition(tmp_path / "t-0", 2, "gzip")
    digest = {p.name: p.read_bytes() for p in src.iterdir()}
    code, text = run("recompress", src, "-o", src, "--codec", "lz4")
    assert code == 2 and "must not be an input" in text
    out = tmp_path / "out"
    out.mkdir()
    code, text = run("recompress", src, "-o", out, "--codec", "lz4")
    assert code == 2 and "--force" in text
    code, text = run("recompress", src, "-o", out, "--codec", "lz4", "--force")
    assert code == 0
    assert {p.name: p.read_bytes() for p in src.iterdir()} == digest


def test_unknown_codec_name(tmp_path):
    src = write_partition(tmp_path / "t-0", 2, "none")
    code, text = run("recompress", src, "-o", tmp_path / "o", "--codec", "brotli-x")
    assert code == 2 and "Unknown compression name: brotli-x" in text


def test_killed_write_leaves_no_output(tmp_path):
    """SIGKILL in the middle of a write: the input is intact and nothing is at the output name."""
    src = tmp_path / "big-0"
    src.mkdir()
    from kseg.log.encode import build_v2_batch
    from kseg.model import make_record

    batch = build_v2_batch([make_record(i, T0, b"k%d" % i, os.urandom(200)) for i in range(500)])
    import struct

    with open(src / "00000000000000000000.log", "wb") as f:
        for n in range(400):
            b = bytearray(batch)
            struct.pack_into(">q", b, 0, n * 500)
            f.write(b)
    before = hashlib.sha256((src / "00000000000000000000.log").read_bytes()).hexdigest()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "kseg.cli.main", "recompress", str(src), "-o", str(out),
                             "--codec", "gzip", "--level", "9"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline and not any(tmp_path.glob(".out*")):
        time.sleep(0.02)
    time.sleep(0.3)
    assert proc.poll() is None, "the job finished before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    assert hashlib.sha256((src / "00000000000000000000.log").read_bytes()).hexdigest() == before


@examples(25)
@given(case=st.sampled_from([c for c in CASES if c[0] < 2]), n=st.integers(1, 4), per=st.integers(1, 6),
       first=st.integers(0, 10**9))
def test_property_up_then_down_keeps_offsets_keys_values(tmp_path_factory, case, n, per, first):
    tmp = tmp_path_factory.mktemp("p")
    magic, codec = case
    src = write_partition(tmp / "t-0", magic, codec, segments=1, n_batches=n, per=per, first_offset=first)
    up, down = tmp / "up", tmp / "down"
    assert run("up-convert", src, "-o", up, "--to-magic", 2)[0] == 0
    assert run("down-convert", up, "-o", down, "--to-magic", magic)[0] == 0
    want = [(r[0], r[2], r[3]) for r in folder_records(src)]
    assert [(r[0], r[2], r[3]) for r in folder_records(up)] == want
    assert [(r[0], r[2], r[3]) for r in folder_records(down)] == want


def test_index_check_and_rebuild(tmp_path):
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "logdir" / "v2-gzip-0"
    part = tmp_path / "t-0"
    shutil.copytree(fixture, part)
    seg = part / "00000000000000000000.log"
    code, text = run("index", seg, "--check")
    assert code == 0, text
    original = (part / "00000000000000000000.index").read_bytes()
    assert original, "the fixture has index entries"
    # a wrong position is found
    bad = bytearray(original)
    bad[4:8] = (int.from_bytes(bad[4:8], "big") + 1).to_bytes(4, "big")
    (part / "00000000000000000000.index").write_bytes(bytes(bad))
    code, text = run("index", seg, "--check")
    assert code == 1 and "error" in text
    # rebuilding with the fixture's interval gives back Kafka's bytes
    code, text = run("index", seg, "--rebuild", "--force", "--index-interval-bytes", 128)
    assert code == 0, text
    assert (part / "00000000000000000000.index").read_bytes() == original
    assert run("index", seg, "--check")[0] == 0


# Each conversion with its options, on fixtures/logdir (magic 0, 1 and 2 partitions).
CONVERSION_RUNS = {
    "up-convert": ("up-convert", "--to-magic", "2"),
    "down-convert": ("down-convert", "--to-magic", "1", "--skip-unconvertible"),
    "recompress": ("recompress", "--codec", "lz4"),
    "rebase": ("rebase", "--base-offset", "1000"),
}


def test_every_conversion_has_a_times_row():
    from kseg.ops.convert_split import CONVERSIONS
    assert set(CONVERSION_RUNS) == set(CONVERSIONS)


@pytest.mark.parametrize("command", sorted(CONVERSION_RUNS))
def test_converted_segments_keep_their_inputs_times(tmp_path, command):
    """A broker's time-based retention reads a segment's modification time where its batches hold
    no timestamps (magic 0); a converted segment keeps its input's, as Kafka's cleaner does."""
    src = tmp_path / "in"
    shutil.copytree(Path(__file__).parent.parent / "fixtures" / "logdir", src)
    old = {}
    for i, seg in enumerate(sorted(src.rglob("*.log"))):
        when = 1_000_000_000 + 3600 * i  # 2001, an hour apart: no run can land there by chance
        os.utime(seg, (when, when))
        old[seg.relative_to(src)] = when
    args = CONVERSION_RUNS[command]
    if command == "rebase":
        src, old = src / "v2-txn-0", {k.relative_to("v2-txn-0"): v for k, v in old.items() if k.parts[0] == "v2-txn-0"}
    res = CliRunner().invoke(main, [*args, str(src), "-o", str(tmp_path / "out")])
    assert res.exit_code in (0, 1), res.output
    written = sorted((tmp_path / "out").rglob("*.log"))
    assert written
    inputs_by_position = {}
    for rel, when in old.items():
        inputs_by_position.setdefault(rel.parent, []).append(when)
    for out in written:
        rel = out.relative_to(tmp_path / "out")
        times = sorted(inputs_by_position[rel.parent])
        assert out.stat().st_mtime in times, f"{rel}: {out.stat().st_mtime} not an input's time {times}"


# --------------------------------------------------------------------------- aborted transactions

TXN_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "logdir" / "v2-txn-0"
# Every writer of the click group that rewrites segments: what it does with a segment's aborted
# transactions (the .txnindex a broker reads them from; it rebuilds it only when it recovers the
# segment), as (arguments, the offsets' shift), None where the output holds no transactions,
# or why this table does not judge it.
TXN_WRITERS: dict[str, tuple[list[str], int] | None | str] = {
    "recompress": (["recompress", "--codec", "zstd"], 0),
    "up-convert": (["up-convert", "--to-magic", "2", "--codec", "lz4"], 0),
    "rebase": (["rebase", "--base-offset", "1000"], 1000),
    "down-convert": None,  # below magic 2 there are no transactions: control batches are dropped
    "compact": "removes aborted data and writes the .txnindex Kafka's cleaner writes "
               "(tests/test_kafka_cleaner_corpus.py compares the bytes)",
    "repair": "cuts segments as recovery does and writes the .txnindex of the markers it keeps "
              "(tests/test_tools_repair.py)",
    "salvage": "recovers around damage and writes the .txnindex of the markers it keeps",
    "bundle": "takes every file as it is, .txnindex included",
    "build": "writes the .txnindex of the transactions it is given (tests/kafka/test_build_accepted_live.py)",
    "export": "writes records into Parquet or Arrow, not segments",
}


def _aborted(folder: Path) -> list[tuple[str, tuple]]:
    from kseg.companions.read import read_txn_index

    return [(p.name, (e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset))
            for p in sorted(folder.glob("*.txnindex")) for e in read_txn_index(p).entries]


def test_every_writer_has_its_txn_row() -> None:
    """The writers are the failure matrix's (every command of the click group has its role there)."""
    from test_failure_matrix import COMMANDS

    assert {name for name, c in COMMANDS.items() if c.role == "writer"} == set(TXN_WRITERS)


@pytest.mark.parametrize("writer", [w for w, row in TXN_WRITERS.items() if not isinstance(row, str)])
def test_aborted_transactions_go_with_their_segments(tmp_path: Path, writer: str) -> None:
    """The output's .txnindex files hold the input's aborted transactions (shifted with the
    offsets), each beside the segment of its ABORT marker, and verify checks them against the
    markers; kseg txn reads the same transactions from the output."""
    before = _aborted(TXN_FIXTURE)
    assert before, "the fixture has an aborted transaction"
    out = tmp_path / "out"
    row = TXN_WRITERS[writer]
    assert not isinstance(row, str)
    args = row[0] if row else ["down-convert", "--to-magic", "1"]
    code, text = run(*args, str(TXN_FIXTURE), "-o", str(out))
    assert code == 0, text
    verify_ok(out)
    if row is None:
        assert _aborted(out) == []
        return
    shift = row[1]
    moved = lambda name: f"{int(name.split('.')[0]) + shift:020d}.txnindex"  # noqa: E731
    assert _aborted(out) == [(moved(name), (pid, first + shift, last + shift, lso + shift))
                             for name, (pid, first, last, lso) in before]


def _unknown_version(txn: Path) -> None:
    txn.write_bytes((7).to_bytes(2, "big") + txn.read_bytes()[2:])  # a version Kafka does not know


def _marker_gone(txn: Path) -> None:
    txn.with_suffix(".log").write_bytes(b"")  # an empty segment: its ABORT marker is no longer there


TXN_DAMAGES = {"unknown version": _unknown_version, "ABORT marker gone": _marker_gone}


@pytest.mark.parametrize("mode", ["stop", "skip", "carry"])
@pytest.mark.parametrize("damage", list(TXN_DAMAGES))
@pytest.mark.parametrize("writer", [w for w, row in TXN_WRITERS.items() if isinstance(row, tuple)])
def test_a_damaged_txn_index_follows_the_policy(tmp_path: Path, writer: str, damage: str, mode: str) -> None:
    """A .txnindex that fails its checks (alone, or against its segment's markers) is not
    carried silently: stop names it and writes nothing; skip writes it anew from the partition's
    ABORT markers (leaving it out would have a broker serve the aborted records): the sound
    file's entries, those of markers still there; carry copies it as it is. Both say so, exit 1."""
    before = _aborted(TXN_FIXTURE)
    src = tmp_path / "in" / "v2-txn-0"
    shutil.copytree(TXN_FIXTURE, src)
    txn = next(src.glob("*.txnindex"))
    TXN_DAMAGES[damage](txn)
    data = txn.read_bytes()
    out = tmp_path / "out"
    args, shift = TXN_WRITERS[writer]  # type: ignore[misc]
    code, text = run(*args, str(src), "-o", str(out), "--on-damage", mode)
    assert code == 1 and str(txn) in text, text
    if mode == "stop":
        assert not out.exists() and "--on-damage skip" in text, text
        return
    written = out / f"{int(txn.name.split('.')[0]) + shift:020d}.txnindex"
    if mode == "carry":
        assert written.read_bytes() == data and f"carried {txn} as it is (" in text, text
        return
    assert f"wrote {txn} anew from the log (" in text, text
    moved = lambda name: f"{int(name.split('.')[0]) + shift:020d}.txnindex"  # noqa: E731
    assert _aborted(out) == ([] if damage == "ABORT marker gone" else
                             [(moved(name), (pid, first + shift, last + shift, lso + shift))
                              for name, (pid, first, last, lso) in before])
    verify_ok(out)

BROKER_TXN = sorted(Path(__file__).resolve().parent.parent.glob("fixtures/kafka-*/logdir/txn-0"))


@pytest.mark.parametrize("folder", BROKER_TXN, ids=[p.parent.parent.name for p in BROKER_TXN])
def test_a_txn_index_written_anew_is_the_brokers_own(tmp_path: Path, folder: Path) -> None:
    """``--on-damage skip`` writes a damaged .txnindex anew from the ABORT markers: on every
    release's transactional partition, byte for byte the file that release's broker wrote."""
    src = tmp_path / "in" / folder.name
    shutil.copytree(folder, src)
    written = {p.name: p.read_bytes() for p in src.glob("*.txnindex")}
    assert written
    for name in written:
        (src / name).write_bytes(b"\x00\x07" + written[name][2:])  # a version Kafka does not know
    out = tmp_path / "out"
    code, text = run("recompress", "--codec", "zstd", str(src), "-o", str(out), "--on-damage", "skip")
    assert code == 1 and "anew from the log" in text, text
    assert {p.name: p.read_bytes() for p in out.glob("*.txnindex")} == written
