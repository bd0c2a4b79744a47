"""Edges that real files and real habits showed: standard input and pipes, what a
folder holds, formats told by their content, error lines and exit codes.

Each test fails without the behaviour it names. Real broker files come from the
shared read-only data folder (copied into tmp_path when a test changes them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main
from kseg.log.listing import OFFSET_CHECKPOINTS
from kseg.log.segment import Segment, base_offset_of

from conftest import FIXTURES_LOGDIR, REALDATA

REAL_LOG = REALDATA / "LDI-POC" / "__consumer_offsets-6" / "00000000000000000000.log"
GZIP_LOG = FIXTURES_LOGDIR / "v2-gzip-0" / "00000000000000000000.log"

needs_real = pytest.mark.skipif(not REAL_LOG.exists(), reason="no real data")


def cli(*args, input=None):
    r = CliRunner().invoke(main, [str(a) for a in args], input=input)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise AssertionError(f"kseg {args} raised {r.exception!r}") from r.exception
    return r


def kseg_proc(*args, stdin=None, input=None, **kw):
    """kseg in a child process (for real pipes and /dev/stdin)."""
    return subprocess.run([sys.executable, "-m", "kseg.cli.main", *map(str, args)], stdin=stdin, input=input,
                          capture_output=True, **kw)


# --------------------------------------------------------------------------- standard input and pipes


def _pipe_segment(data: bytes, chunk_size: int) -> tuple[list, Segment]:
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as out:
            for i in range(0, len(data), 7):  # short writes: the reader sees short reads
                out.write(data[i:i + 7])
                out.flush()

    t = threading.Thread(target=feed)
    t.start()
    seg = Segment(Path(f"/dev/fd/{r}"))
    try:
        batches = [(b.position, b.offset, bytes(b.raw)) for b in seg.batches(chunk_size=chunk_size)]
    finally:
        t.join()
        os.close(r)
    return batches, seg


@needs_real
@pytest.mark.parametrize("chunk_size", [16, 100, 1 << 20])
def test_a_pipe_reads_as_the_file_does_whatever_the_chunk_size(chunk_size) -> None:
    data = REAL_LOG.read_bytes()
    expected = [(b.position, b.offset, bytes(b.raw)) for b in Segment(REAL_LOG).batches()]
    got, seg = _pipe_segment(data, chunk_size)
    assert got == expected and seg.tail is None and seg.size == len(data)
    assert seg.base_offset is None  # /dev/fd/N names no offset


@needs_real
def test_a_truncated_pipe_has_a_tail() -> None:
    data = REAL_LOG.read_bytes()[:-5]
    got, seg = _pipe_segment(data, 64)
    assert seg.tail is not None and got


def test_no_base_offset_from_a_name_that_is_not_the_brokers() -> None:
    assert base_offset_of("/dev/fd/63") is None
    assert base_offset_of("5.log") is None
    assert base_offset_of("00000000000000000042.log") == 42


@needs_real
def test_dump_and_verify_read_dash_as_standard_input() -> None:
    data = REAL_LOG.read_bytes()
    from_file = cli("dump", "-r", "--format", "jsonl", REAL_LOG).output
    r = cli("dump", "-r", "--format", "jsonl", "-", input=data)
    assert r.exit_code == 0 and r.output.replace('"-"', str(REAL_LOG).join('""')) == from_file
    r = cli("verify", "-", input=data)
    assert r.exit_code == 0 and "(13 batches, 13 records)" in r.output


@needs_real
def test_dump_and_verify_of_dev_stdin_from_a_pipe() -> None:
    data = REAL_LOG.read_bytes()
    r = kseg_proc("dump", "-r", "/dev/stdin", input=data)
    assert r.returncode == 0 and "offsets 0.." in r.stdout.decode(), r.stderr
    r = kseg_proc("verify", "/dev/stdin", input=data)
    assert r.returncode == 0 and b"Traceback" not in r.stderr and b"(13 batches, 13 records)" in r.stdout, r.stderr
    r = kseg_proc("verify", "/dev/stdin", input=data[:-3])
    assert r.returncode == 1 and b"do not form a complete batch" in r.stdout


@needs_real
def test_verify_reads_a_fifo(tmp_path) -> None:
    fifo = tmp_path / "seg.fifo"
    os.mkfifo(fifo)
    data = REAL_LOG.read_bytes()
    t = threading.Thread(target=lambda: fifo.write_bytes(data))
    t.start()
    r = kseg_proc("verify", fifo, timeout=60)
    t.join()
    assert r.returncode == 0 and b"(13 batches, 13 records)" in r.stdout, r.stderr


# --------------------------------------------------------------------------- errors and exit codes

BAD_CRC = REALDATA / "kafka-rust" / "derived" / "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.log"


@pytest.mark.parametrize("args", [["dump", "--bogus", "x"], ["dump"], ["nosuch"], ["verify", "--format", "xml", "x"]])
def test_click_usage_errors_read_like_kseg_errors(args) -> None:
    r = cli(*args)
    assert r.exit_code == 2
    assert r.stderr.startswith("kseg: error: ") and "Usage:" not in r.stderr and len(r.stderr.splitlines()) == 1


@pytest.mark.skipif(not BAD_CRC.exists(), reason="no real data")
def test_dump_exits_1_when_it_printed_a_batch_with_a_bad_crc() -> None:
    r = cli("dump", BAD_CRC)
    assert "crc" in r.output and r.exit_code == 1


def test_negative_offsets_are_errors_whatever_the_name(tmp_path) -> None:
    from kseg.log.encode import build_v2_batch
    from kseg.model import make_record

    raw = build_v2_batch([make_record(-5, 1700000000000, b"k", b"v")])
    for name in ("00000000000000000000.log", "data.bin", "seg.checkpoint"):
        (tmp_path / name).write_bytes(raw)
        r = cli("verify", tmp_path / name)
        assert r.exit_code == 1 and "negative offset" in r.output, (name, r.output)


def test_ctrl_c_exits_130_without_a_traceback(monkeypatch) -> None:
    import kseg.cli.verify as m

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(m, "verify_paths", interrupted)
    r = cli("verify", GZIP_LOG)
    assert r.exit_code == 130 and "Traceback" not in r.output + r.stderr


# --------------------------------------------------------------------------- module paths


@pytest.mark.parametrize("kind", ["decoder", "plugin"])
def test_module_paths_are_found_in_the_current_directory(tmp_path, monkeypatch, kind) -> None:
    name = f"kseg_edges_here_{kind}"
    (tmp_path / f"{name}.py").write_text(
        "import zlib\n"
        "def shout(b):\n    return b.decode().upper()\n"
        "class Deflate:\n"
        "    def compress(self, data):\n        return zlib.compress(data)\n"
        "    def decompress(self, data):\n        return zlib.decompress(data)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", os.getcwd(), str(tmp_path))])
    if kind == "decoder":
        r = cli("dump", "-r", "--value-decoder", f"{name}:shout", GZIP_LOG)
        assert r.exit_code == 0, r.stderr
        assert "VALUE-0" in r.output
    else:
        from kseg.codecs.plugins import import_path

        assert import_path(f"{name}:Deflate")().decompress(zlib_compress(b"x")) == b"x"


def zlib_compress(b: bytes) -> bytes:
    import zlib

    return zlib.compress(b)


# --------------------------------------------------------------------------- what a folder holds

LDI = REALDATA / "LDI-POC"
TWO_LOG_DIRS = REALDATA / "Experts-in-team-innovation"
ODD_NAMES = REALDATA / "kafka-rust" / "derived"

META_V1 = "#\n#Mon Nov 23 10:00:00 UTC 2026\nnode.id=1\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n"
CHECKPOINT = "0\n2\nTestTopicPatient 0 3\n__consumer_offsets 6 13\n"


@pytest.fixture
def ldi_copy(tmp_path):
    if not LDI.exists():
        pytest.skip("no real data")
    d = tmp_path / "logs"
    shutil.copytree(LDI, d)
    (d / "meta.properties").write_text(META_V1)
    for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint", "cleaner-offset-checkpoint"):
        (d / name).write_text(CHECKPOINT if name != "log-start-offset-checkpoint" else "0\n0\n")
    return d


def test_verify_checks_a_log_directorys_own_files(ldi_copy) -> None:
    r = cli("verify", "-v", ldi_copy)
    assert r.exit_code == 0, r.output
    for name in ("meta.properties", "recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                 "replication-offset-checkpoint", "cleaner-offset-checkpoint", "bootstrap.checkpoint",
                 "__cluster_metadata-0/quorum-state"):
        assert f"{ldi_copy / name}: ok" in r.output, name


@pytest.mark.parametrize("name, text, message", [
    ("replication-offset-checkpoint", "0\n3\nt 0 1\n", "the entry count does not match"),
    ("recovery-point-offset-checkpoint", "1\n0\n", "unrecognized checkpoint version"),
    ("cleaner-offset-checkpoint", "0\n1\nt x 1\n", "partition is not an integer"),
    ("log-start-offset-checkpoint", "0\n1\nt 0 -7\n", "negative offset"),
    ("meta.properties", "version=1\nnode.id=1\n", "version 1 needs cluster.id"),
    ("meta.properties", "broker.id=1\n", "no version"),
    ("__cluster_metadata-0/quorum-state", "{not json", "not JSON"),
])
def test_a_broken_log_directory_file_is_a_data_problem(ldi_copy, name, text, message) -> None:
    (ldi_copy / name).write_text(text)
    r = cli("verify", ldi_copy)
    assert r.exit_code == 1 and message in r.output and name.split("/")[-1] in r.output, r.output


def test_verify_checks_kraft_snapshots_in_a_partition_folder(ldi_copy) -> None:
    snap = ldi_copy / "__cluster_metadata-0" / "00000000000000004929-0000000001.checkpoint"
    shutil.copy(ldi_copy / "bootstrap.checkpoint", snap)
    r = cli("verify", "-v", ldi_copy / "__cluster_metadata-0")
    assert r.exit_code == 0 and f"{snap}: ok (3 batches" in r.output, r.output
    snap.write_bytes(snap.read_bytes()[:-4])
    assert cli("verify", ldi_copy / "__cluster_metadata-0").exit_code == 1


def test_verbose_lists_index_files_and_the_summary_counts_them() -> None:
    if not LDI.exists():
        pytest.skip("no real data")
    part = LDI / "__consumer_offsets-6"
    r = cli("verify", "-v", part)
    assert f"{part / '00000000000000000000.index'}: ok (index)" in r.output
    assert f"{part / '00000000000000000000.timeindex'}: ok (timeindex)" in r.output
    assert "5 file(s) checked" in r.output  # log, index, timeindex, snapshot, leader-epoch-checkpoint


def test_a_broken_index_is_reported_on_the_index_file(tmp_path) -> None:
    if not LDI.exists():
        pytest.skip("no real data")
    part = tmp_path / "__consumer_offsets-6"
    shutil.copytree(LDI / "__consumer_offsets-6", part)
    (part / "00000000000000000000.index").write_bytes(b"\0\0\0\x63\0\0\xff\xff")
    r = cli("verify", part)
    assert r.exit_code == 1 and f"{part / '00000000000000000000.index'}: 1 error(s)" in r.output, r.output


def test_a_folder_of_log_directories_is_searched_for_them() -> None:
    if not TWO_LOG_DIRS.exists():
        pytest.skip("no real data")
    r = cli("verify", "-v", TWO_LOG_DIRS)
    assert r.exit_code == 0, r.output
    assert str(TWO_LOG_DIRS / "kafka" / "data" / "sensor-data-0") in r.output
    assert str(TWO_LOG_DIRS / "kafka_logs" / "sensor-data-0") in r.output


def test_a_folder_of_logs_not_named_by_offset_is_a_set_of_segments() -> None:
    if not ODD_NAMES.exists():
        pytest.skip("no real data")
    r = cli("verify", "-v", ODD_NAMES)
    logs = sorted(ODD_NAMES.glob("*.log"))
    assert f"{len(logs)} file(s) checked, 1 with errors" in r.output, r.output
    assert r.exit_code == 1 and "offsets do not increase" not in r.output  # each checked on its own


def test_a_folder_with_nothing_kafka_in_it_is_unusable_input(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    r = cli("verify", tmp_path)
    assert r.exit_code == 2 and r.stderr.startswith("kseg: error: ")


# --------------------------------------------------------------------------- formats by content

KAFKA07_FILE = Path(__file__).resolve().parent.parent / "fixtures" / "kafka07" / "00000000000000000000.kafka07"


def test_pre_08_files_and_folders_are_recognised_without_the_option(tmp_path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    shutil.copy(KAFKA07_FILE, part / "00000000000000000000.kafka")
    for target in (part / "00000000000000000000.kafka", part, KAFKA07_FILE):
        r = cli("verify", "-v", target)
        assert r.exit_code == 0 and "(kafka07)" in r.output and "(5 batches, 7 records)" in r.output, r.output
    for fmt in ("text", "kafka"):
        r = cli("dump", "--format", fmt, part)
        assert r.exit_code == 0 and "compresscodec: gzip" in r.output, r.output
    out = tmp_path / "v2-0"
    r = cli("up-convert", "--to-magic", "2", part, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert cli("verify", out).exit_code == 0


def test_a_file_in_one_format_read_as_another_gets_a_hint(tmp_path) -> None:
    as_log = tmp_path / "00000000000000000000.log"
    shutil.copy(KAFKA07_FILE, as_log)
    r = cli("verify", as_log)
    assert r.exit_code == 1 and "--input-format kafka07" in r.output
    r = cli("dump", as_log)
    assert r.exit_code == 1 and "--input-format kafka07" in r.stderr
    r = cli("verify", "--input-format", "kafka07", GZIP_LOG)
    assert r.exit_code == 1 and "--input-format kafka (the default)" in r.output


def test_a_readme_passed_by_mistake_is_unusable_input(tmp_path) -> None:
    readme = tmp_path / "README"
    readme.write_text("# My Kafka notes\n\nThese are not segments, and this file is long enough to sniff.\n")
    for cmd in ("verify", "dump"):
        r = cli(cmd, readme)
        assert r.exit_code == 2 and r.stderr.startswith("kseg: error: ") and "not a Kafka file" in r.stderr


# --------------------------------------------------------------------------- kseg index


def test_index_check_takes_partition_folders_and_log_directories(tmp_path) -> None:
    logdir = tmp_path / "logs"
    shutil.copytree(FIXTURES_LOGDIR, logdir)
    r = cli("index", "--check", logdir)
    assert r.exit_code == 0 and f"{logdir / 'v2-txn-0' / '00000000000000000005.log'}: ok" in r.output, r.output
    bad = logdir / "v2-gzip-0" / "00000000000000000000.index"
    raw = bytearray(bad.read_bytes())
    raw[4:8] = (int.from_bytes(raw[4:8], "big") + 1).to_bytes(4, "big")
    bad.write_bytes(bytes(raw))
    assert cli("index", "--check", logdir / "v2-gzip-0").exit_code == 1


def test_index_check_without_index_files_says_there_was_nothing_to_check() -> None:
    if not LDI.exists():
        pytest.skip("no real data")
    seg = LDI / "TestTopicPatient-0" / "00000000000000000000.log"
    r = cli("index", "--check", seg)
    assert r.exit_code == 0 and "nothing to check" in r.output and ": ok" not in r.output


def test_index_rebuild_into_an_existing_output_needs_force(tmp_path) -> None:
    out = tmp_path / "out"
    r = cli("index", "--rebuild", "--index-interval-bytes", 128, FIXTURES_LOGDIR, "-o", out)
    assert r.exit_code == 0, r.stderr
    fresh = out / "v2-gzip-0" / "00000000000000000000.index"
    assert fresh.read_bytes() == (FIXTURES_LOGDIR / "v2-gzip-0" / "00000000000000000000.index").read_bytes()
    r = cli("index", "--rebuild", FIXTURES_LOGDIR / "v2-gzip-0", "-o", out)
    assert r.exit_code == 2 and "--force" in r.stderr
    assert cli("index", "--rebuild", FIXTURES_LOGDIR / "v2-gzip-0", "-o", out, "--force").exit_code == 0


def test_down_converting_zstd_without_codec_is_a_usage_error(tmp_path) -> None:
    out = tmp_path / "old-0"
    r = cli("down-convert", "--to-magic", 1, FIXTURES_LOGDIR / "v2-zstd-0", "-o", out)
    assert r.exit_code == 2 and r.stderr.startswith("kseg: error: ") and "--codec" in r.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- honest summaries


def test_recompress_with_topics_counts_only_those_topics(tmp_path) -> None:
    r = cli("recompress", "--codec", "lz4", "--topics", "v2-gzip", FIXTURES_LOGDIR, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.stderr
    assert "10 batches / 29 records in" in r.stderr
    assert "partition(s) copied as they are (other topics, a KRaft log)" in r.stderr


def test_compact_with_topics_counts_only_those_topics(tmp_path) -> None:
    r = cli("compact", "--dry-run", "--topics", "v2-headers", "--now-ms", 1800000000000, FIXTURES_LOGDIR)
    assert r.exit_code == 0, r.stderr
    assert "(dry run, 1 partition(s), " in r.stderr and "copied as they are (other topics, a KRaft log)" in r.stderr


def test_up_convert_applies_codec_to_data_already_at_the_target_magic(tmp_path) -> None:
    out = tmp_path / "out"
    r = cli("up-convert", "--to-magic", 2, "--codec", "gzip", FIXTURES_LOGDIR / "v2-none-0", "-o", out)
    assert r.exit_code == 0 and "recompressed 10" in r.stderr, r.stderr
    dumped = cli("dump", "--format", "jsonl", out).output
    assert '"codec": "gzip"' in dumped and '"codec": "none"' not in dumped
    assert cli("verify", out).exit_code == 0


def test_a_rewrite_that_grows_the_data_says_so(tmp_path) -> None:
    r = cli("recompress", "--codec", "none", FIXTURES_LOGDIR / "v2-gzip-0", "-o", tmp_path / "out")
    assert r.exit_code == 0 and "the output is larger than the input by" in r.stderr, r.stderr
    r = cli("recompress", "--codec", "gzip", FIXTURES_LOGDIR / "v2-none-0", "-o", tmp_path / "out2")
    assert r.exit_code == 0 and "larger" not in r.stderr, r.stderr


# --------------------------------------------------------------------------- drop-in outputs


def _checkpoint(path: Path) -> dict:
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    return {tuple(line.split()[:-1]): int(line.split()[-1]) for line in lines[2:]}


def test_a_recompressed_log_directory_is_drop_in(ldi_copy, tmp_path) -> None:
    out = tmp_path / "out"
    r = cli("recompress", "--codec", "lz4", ldi_copy, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert (out / "meta.properties").read_text() == META_V1
    assert (out / "bootstrap.checkpoint").read_bytes() == (ldi_copy / "bootstrap.checkpoint").read_bytes()
    ends = {("TestTopicPatient", "0"): 3, ("__consumer_offsets", "6"): 13}  # not the KRaft metadata log's
    assert _checkpoint(out / "recovery-point-offset-checkpoint") == ends
    assert _checkpoint(out / "replication-offset-checkpoint") == ends
    assert _checkpoint(out / "log-start-offset-checkpoint") == {}  # every log starts at its first segment
    assert _checkpoint(out / "cleaner-offset-checkpoint") == {("__consumer_offsets", "6"): 13,
                                                               ("TestTopicPatient", "0"): 3}
    part = out / "__consumer_offsets-6"
    assert (part / "00000000000000000013.snapshot").read_bytes() == \
        (ldi_copy / "__consumer_offsets-6" / "00000000000000000013.snapshot").read_bytes()
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert (out / "__cluster_metadata-0" / "quorum-state").is_file()
    r = cli("verify", "-v", out)
    assert r.exit_code == 0 and "meta.properties: ok" in r.output, r.output


@pytest.mark.parametrize("command", ["repair", "salvage"])
def test_a_repaired_log_directory_is_drop_in(ldi_copy, tmp_path, command) -> None:
    """repair and salvage of a log directory: its own files carried over (a KRaft broker does not
    start without meta.properties), its checkpoints at the ends recovery left."""
    log = ldi_copy / "__consumer_offsets-6" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[-5] ^= 0xFF  # the last batch's CRC no longer matches: recovery cuts it
    log.write_bytes(bytes(data))
    out = tmp_path / "out"
    r = cli(command, "--format", "json", ldi_copy, "-o", out)
    assert r.exit_code == 1, r.stderr
    ends = {(p["topic"], str(p["partition"])): p["log_end_offset"] for p in json.loads(r.stdout)["partitions"]
            if p["topic"] != "__cluster_metadata"}
    assert ends[("__consumer_offsets", "6")] < 13 and ends[("TestTopicPatient", "0")] == 3
    assert (out / "meta.properties").read_text() == META_V1
    assert (out / "bootstrap.checkpoint").read_bytes() == (ldi_copy / "bootstrap.checkpoint").read_bytes()
    assert _checkpoint(out / "recovery-point-offset-checkpoint") == ends
    assert _checkpoint(out / "replication-offset-checkpoint") == ends
    assert _checkpoint(out / "cleaner-offset-checkpoint")[("__consumer_offsets", "6")] == ends[("__consumer_offsets", "6")]
    assert cli("verify", out).exit_code == 0


@pytest.mark.parametrize("command", ["repair", "salvage"])
def test_a_dry_run_checks_the_log_directorys_own_files(ldi_copy, command) -> None:
    """A dry run says what the run would: a log directory's meta.properties that fails its checks
    stops it as it stops the run, or is said under --on-damage skip."""
    meta = ldi_copy / "meta.properties"
    meta.write_text("broker.id=1\n")
    r = cli(command, "--dry-run", ldi_copy)
    assert r.exit_code == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert f"{meta}: " in r.stderr and "no version" in r.stderr and "--on-damage skip" in r.stderr, r.stderr
    r = cli(command, "--dry-run", "--on-damage", "skip", "--format", "json", ldi_copy)
    assert r.exit_code == 1, r.stderr
    assert [d["file"] for d in json.loads(r.stdout)["damaged_files"]] == [str(meta)]


def test_a_rebased_partition_drops_producer_state_and_moves_its_checkpoints(ldi_copy, tmp_path) -> None:
    out = tmp_path / "out"
    assert cli("rebase", "--base-offset", 100, ldi_copy, "-o", out).exit_code == 0
    part = out / "__consumer_offsets-6"
    assert not list(part.glob("*.snapshot"))  # offsets moved: the broker rebuilds producer state
    assert (part / "leader-epoch-checkpoint").read_text() == "0\n1\n0 100\n"
    assert _checkpoint(out / "log-start-offset-checkpoint") == {}  # the first segment's base, 100, is the log start
    assert _checkpoint(out / "recovery-point-offset-checkpoint")[("__consumer_offsets", "6")] == 113
    assert _checkpoint(out / "cleaner-offset-checkpoint") == {}
    assert cli("verify", out).exit_code == 0


RELEASE_LOG_DIRS = sorted(p for p in FIXTURES_LOGDIR.parent.glob("kafka-*/**/logdir")
                          if (p / "recovery-point-offset-checkpoint").is_file())


def test_every_release_line_has_a_broker_written_log_directory() -> None:
    assert {p.parent.name for p in RELEASE_LOG_DIRS} >= {"kafka-2.8", "kafka-3.6", "kafka-3.9", "kafka-4.0", "kafka-4.1",
                                                         "kafka-4.2", "kafka-4", "kafka-4.4"}


@pytest.mark.parametrize("command", ["repair", "salvage", "recompress"])
@pytest.mark.parametrize("logdir", RELEASE_LOG_DIRS, ids=lambda p: str(p.parent.relative_to(FIXTURES_LOGDIR.parent)))
def test_a_rewritten_log_directory_has_the_brokers_checkpoints(tmp_path, logdir, command) -> None:
    """Each release's broker wrote these log directories' checkpoints as it stopped cleanly; a
    rewrite that keeps offsets writes the same entries: the KRaft metadata log left out, a log
    start only where one is above the first segment."""
    out = tmp_path / "out"
    r = cli(command, *(["--codec", "gzip"] if command == "recompress" else []), logdir, "-o", out)
    assert r.exit_code == 0, r.stderr
    compared = [name for name in OFFSET_CHECKPOINTS if (logdir / name).is_file()]
    assert len(compared) >= 3
    for name in compared:
        assert _checkpoint(out / name) == _checkpoint(logdir / name), name


def test_a_log_start_above_the_first_segment_is_carried(ldi_copy, tmp_path) -> None:
    """As the broker's LogManager: an entry only where the log start is above the first segment
    (records deleted below it stay deleted); rebase moves every offset and names none."""
    (ldi_copy / "log-start-offset-checkpoint").write_text("0\n2\n__consumer_offsets 6 5\nTestTopicPatient 0 9\n")
    out = tmp_path / "out"
    assert cli("recompress", "--codec", "gzip", ldi_copy, "-o", out).exit_code == 0
    assert _checkpoint(out / "log-start-offset-checkpoint") == {("__consumer_offsets", "6"): 5}  # 9: past its end
    assert _checkpoint(out / "cleaner-offset-checkpoint")[("__consumer_offsets", "6")] == 13
    assert cli("rebase", "--base-offset", 100, ldi_copy, "-o", tmp_path / "moved").exit_code == 0
    assert _checkpoint(tmp_path / "moved" / "log-start-offset-checkpoint") == {}


def test_compacted_and_down_converted_partitions_get_their_files(tmp_path) -> None:
    src = FIXTURES_LOGDIR / "v2-txn-0"
    out = tmp_path / "c-0"
    assert cli("compact", "--now-ms", 1800000000000, src, "-o", out).exit_code == 0
    assert (out / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    down = tmp_path / "d-0"
    assert cli("down-convert", "--to-magic", 1, src, "-o", down).exit_code == 0
    assert (down / "leader-epoch-checkpoint").read_text() == "0\n0\n"  # v0/v1 batches carry no epoch
    assert cli("verify", out).exit_code == 0 and cli("verify", down).exit_code == 0


def test_a_transient_segment_in_a_partition_folder_is_checked_on_its_own(tmp_path) -> None:
    part = tmp_path / "t-0"
    shutil.copytree(FIXTURES_LOGDIR / "v2-gzip-0", part)
    gone = part / "00000000000000000000.log.deleted"
    gone.write_bytes((part / "00000000000000000000.log").read_bytes()[:-3])
    r = cli("verify", "-v", part)
    assert r.exit_code == 1 and f"{gone}: 1 error(s)" in r.output, r.output
