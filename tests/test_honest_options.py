"""Honest options: an option given where it cannot apply is a usage error (exit 2) naming the
option and why, never silently ignored; the same options where they apply still work."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
PART = LOGDIR / "v2-gzip-0"

# (case, args, exit code, a phrase of stderr when refused)
CASES = [
    ("dump kafka-only flag, text", ["dump", "--skip-record-metadata", PART], 2,
     "--skip-record-metadata shapes kafka-dump-log.sh's lines: it applies with --format kafka only"),
    ("dump kafka version, jsonl", ["dump", "--format", "jsonl", "--kafka-version", "3.9", PART], 2,
     "--kafka-version shapes kafka-dump-log.sh's lines"),
    ("dump index sanity, text", ["dump", "--index-sanity-check", PART / "00000000000000000000.index"], 2,
     "--index-sanity-check shapes"),
    ("dump verify-index-only, text", ["dump", "--verify-index-only", PART / "00000000000000000000.index"], 2,
     "--verify-index-only shapes"),
    ("dump kafka-only flags, kafka", ["dump", "--format", "kafka", "--kafka-version", "3.9", "--skip-record-metadata",
                                      PART], 0, None),
    ("state partitions alone", ["state", "--partitions", "10", ROOT / "fixtures" / "internal" / "__consumer_offsets-0"],
     2, "--partitions is the topic's partition count for --coordinator-of"),
    ("state coordinator with paths", ["state", "--coordinator-of", "g", ROOT / "fixtures" / "internal"], 2,
     "--coordinator-of reads no PATH"),
    ("state coordinator with a limit", ["state", "--coordinator-of", "g", "--at-time", "2023-11-14"], 2,
     "--at-time limits a replay; --coordinator-of replays nothing"),
    ("state coordinator", ["state", "--coordinator-of", "g", "--partitions", "10"], 0, None),
    ("state redact record fields", ["state", "--redact", "values", ROOT / "fixtures" / "internal"], 2,
     "--redact 'values': give ids, secrets"),
    ("state redact ids", ["state", "--redact", "ids", ROOT / "fixtures" / "internal"], 0, None),
    ("dump redact secrets shown", ["dump", "--redact", "secrets", "--show-secrets", PART], 2,
     "--redact secrets hides what --show-secrets shows"),
    ("diff max-records alone", ["diff", "--max-records", "3", PART, PART], 2,
     "--max-records caps the records --records lists"),
    ("diff max-records with records", ["diff", "--records", "--max-records", "3", PART, PART], 0, None),
    ("compact topics on one partition", ["compact", "--dry-run", "--topics", "v2-gzip", PART], 2,
     "--topics chooses which partitions of a log directory to compact; this input is one partition"),
    ("compact topic not there", ["compact", "--dry-run", "--topics", "v2-gzip,nope", LOGDIR], 2,
     "--topics: no partition of nope in this log directory (the topics there: compacted-v1-gzip, "),
    ("compact topic there", ["compact", "--dry-run", "--topics", "v2-gzip", LOGDIR], 0, None),
    ("find topic not there", ["find", "--key", "x", "--topic", "nope", LOGDIR], 2,
     "--topic nope: no partition of this topic under the paths given"),
    ("export arrow with a parquet-only codec", ["export", "--format", "arrow", "--compression", "brotli", PART,
                                                "-o", "/nonexistent/out.arrow"], 2,
     "--compression brotli: arrow files take none, lz4, zstd"),
    ("skip-unconvertible on one partition", ["recompress", "--codec", "zstd", "--skip-unconvertible", PART,
                                             "-o", "/nonexistent/out"], 2,
     "--skip-unconvertible leaves out partitions of a log directory; this input is one partition"),
    ("find partitions alone", ["find", "--key", "x", "--partitions", "3", LOGDIR], 2,
     "--partitions is the topic's partition count for --partitioner"),
]


@pytest.mark.parametrize("case,args,code,phrase", CASES, ids=[c[0] for c in CASES])
def test_options_that_cannot_apply_are_refused(case: str, args: list, code: int, phrase: str | None) -> None:
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == code, r.stderr
    if phrase is not None:
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("kseg: error: ") and phrase in lines[0]
        assert r.stdout == ""


def test_compact_of_an_only_active_segment_says_what_would_clean_it(tmp_path: Path) -> None:
    """The summary of a compaction that kept everything says why and names the option."""
    import shutil

    part = tmp_path / "t-0"
    part.mkdir()
    shutil.copy(PART / "00000000000000000000.log", part)
    r = CliRunner().invoke(main, ["compact", "--dry-run", str(part)])
    assert r.exit_code == 0
    assert ("segments cleaned 0, kept as they were 1 (1 the active (newest) segment, which the broker never "
            "cleans: --include-active cleans it too)") in r.output
    r = CliRunner().invoke(main, ["compact", "--dry-run", "--include-active", str(part)])
    assert "segments cleaned 1, kept as they were 0;" in r.output
