"""What kseg is compared with, file by file: shared by the live tier and the corpus test.

* :data:`COMBOS`: the ``kafka-dump-log.sh`` flag combinations a user runs, by id,
  and :func:`kseg_args` the ``kseg dump --format kafka`` equivalent (None where
  kseg has no such option yet).
* :func:`combos_for`: which combinations make sense for a file (by suffix and
  topic: the decoders only for their internal topic).
* :func:`kseg_records`: a partition's records as ``kseg dump --records --format
  jsonl`` gives them, in the shape :func:`traffic.consume_all` records them.
* :func:`kafka_dumps`: the real DumpLogSegments on every file x combination;
  :func:`run_kseg`: kseg's CLI (in-process through click, or a subprocess).
* :data:`KNOWN_DIFFERENCES`: every comparison where kseg currently differs from
  Kafka, in one place; :func:`known_difference` looks one up.
"""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import brokers

REPO = Path(__file__).resolve().parents[2]
KSEG = str(Path(sys.executable).with_name("kseg"))

#: codec -> why the compressed bytes kseg writes may differ from the broker's, the one tolerated
#: difference of the comparisons that rewrite batches (conversions, compaction): such batches are held
#: to every field but size and CRC and to their decompressed payload, byte for byte
CODEC_OUTPUT_MAY_DIFFER = {
    "snappy": "kseg compresses with cramjam (a Rust port of snappy), the broker with snappy-java (Google's "
              "C++ snappy 1.1.10): both write valid raw snappy blocks in the same xerial framing, often the "
              "same ones, but for some inputs their matchers choose different copies; no maintained Python "
              "binding of snappy 1.1.10 exists (pysnappy 0.8.2 wraps another C++ snappy release and gives the "
              "broker's bytes for fewer blocks than cramjam)",
}

MAX_BYTES = "1500"
#: index.interval.bytes of the data topics (traffic.py); internal topics keep Kafka's default, 4096
DATA_INDEX_INTERVAL = 512

#: combination id -> kafka-dump-log.sh flags (``--files FILE`` comes first)
COMBOS: dict[str, list[str]] = {
    "plain": [],
    "deep": ["--deep-iteration"],
    "data": ["--print-data-log"],
    "deep-data": ["--deep-iteration", "--print-data-log"],
    "max-bytes": ["--max-bytes", MAX_BYTES],
    "deep-data-max-bytes": ["--deep-iteration", "--print-data-log", "--max-bytes", MAX_BYTES],
    "offsets": ["--offsets-decoder"],
    "transactions": ["--transaction-log-decoder"],
    "metadata": ["--cluster-metadata-decoder"],
    "share-state": ["--share-group-state-decoder"],
    "index-sanity": ["--index-sanity-check"],
    "verify-index": ["--verify-index-only"],
}

#: combination id -> the kseg dump options that should print the same (None: no equivalent)
KSEG_OPTIONS: dict[str, list[str] | None] = {
    "plain": [],
    "deep": ["--records"],
    "data": ["--records", "--payload", "utf8"],
    "deep-data": ["--records", "--payload", "utf8"],
    "max-bytes": ["--max-bytes", MAX_BYTES],
    "deep-data-max-bytes": ["--records", "--payload", "utf8", "--max-bytes", MAX_BYTES],
    "offsets": ["--decode", "offsets"],
    "transactions": ["--decode", "transactions"],
    "metadata": ["--decode", "metadata"],
    "share-state": ["--decode", "share-group-state"],
    "index-sanity": ["--index-sanity-check"],
    "verify-index": ["--verify-index-only"],
}

DUMPED_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", ".checkpoint")


def dumped_files(logdir: Path) -> list[str]:
    """Every file under ``logdir`` kafka-dump-log.sh reads, relative, sorted."""
    return sorted(str(p.relative_to(logdir)) for p in logdir.rglob("*")
                  if p.is_file() and p.suffix in DUMPED_SUFFIXES)


#: release -> the COMBOS its kafka-dump-log.sh does not know (--max-bytes came in 3.0)
UNKNOWN_COMBOS: dict[str, frozenset[str]] = {
    "2.8": frozenset({"max-bytes", "deep-data-max-bytes"}),
}


def combos_for(rel: str, release: str = "4") -> list[str]:
    """The combinations that make sense for a file, of those the ``release``'s tool knows."""
    return [c for c in _combos_for(rel) if c not in UNKNOWN_COMBOS.get(release, ())]


def _combos_for(rel: str) -> list[str]:
    suffix = Path(rel).suffix
    partition = Path(rel).parent.name
    if suffix == ".log":
        out = ["plain", "deep", "data", "deep-data", "max-bytes", "deep-data-max-bytes"]
        if partition.startswith("__consumer_offsets-"):
            out.append("offsets")
        elif partition.startswith("__transaction_state-"):
            out.append("transactions")
        elif partition.startswith("__cluster_metadata-"):
            out.append("metadata")
        elif partition.startswith("__share_group_state-"):
            out.append("share-state")
        return out
    if suffix in (".index", ".timeindex"):
        return ["plain", "deep", "index-sanity", "verify-index"]
    if suffix == ".checkpoint":
        return ["plain", "metadata"]
    return ["plain"]


def kafka_args(rel: str, combo: str) -> list[str]:
    return ["--files", rel, *COMBOS[combo]]


#: tool release (tests/kafka/brokers.py) -> the ``kseg dump --kafka-version`` whose lines are compared with
#: its outputs: its release line ("4", the 4.3.1 corpus, is the 4.3 line)
KSEG_KAFKA_VERSION = brokers.LINES


def kseg_args(rel: str, combo: str, tool: str = "4") -> list[str] | None:
    """The kseg command that prints what the ``tool`` release's kafka-dump-log.sh prints."""
    opts = KSEG_OPTIONS[combo]
    version = KSEG_KAFKA_VERSION[tool]
    return None if opts is None else ["dump", "--format", "kafka", "--kafka-version", version, *opts, rel]


def _entry_point():
    """The ``kseg`` command group (the console script ``kseg.cli:run`` loads and calls it)."""
    from kseg.cli.main import main

    return main


def kafka_dumps(release: str, logdir: Path, jobs: int = 2, suffixes: tuple[str, ...] | None = None) -> list[dict]:
    """Run the release's DumpLogSegments for every file x combination of ``logdir`` (``jobs`` at a time;
    only the files ending in ``suffixes`` if given).

    One dict per run: file, combo, command, exit, stdout, stderr (paths as ``$LOGDIR/``).
    """

    def one(job: tuple[str, str]) -> dict:
        rel, combo = job
        args = kafka_args(rel, combo)
        rc, out, err = brokers.dump_log_segments(release, *args, cwd=logdir)
        return {"file": rel, "combo": combo, "command": ["kafka-dump-log.sh", *args], "exit": rc,
                "stdout": placeholder_paths(out, logdir), "stderr": placeholder_paths(err, logdir)}

    todo = [(rel, combo) for rel in dumped_files(logdir) if suffixes is None or rel.endswith(suffixes)
            for combo in combos_for(rel, release)]
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, todo))


def run_kseg(args: list[str], cwd: Path, in_process: bool | None = None) -> tuple[int, bytes, bytes]:
    """Run ``kseg ARGS`` in ``cwd``: exit code, stdout, stderr.

    In-process through click's test runner by default (hundreds of runs a
    second instead of a few); ``KSEG_ORACLE_SUBPROCESS=1`` runs the installed
    script in a subprocess instead.
    """
    if in_process is None:
        in_process = not os.environ.get("KSEG_ORACLE_SUBPROCESS")
    if not in_process:
        proc = subprocess.run([KSEG, *args], capture_output=True, cwd=cwd)
        return proc.returncode, proc.stdout, proc.stderr
    from click.testing import CliRunner

    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(_entry_point(), args, prog_name="kseg", catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout_bytes, result.stderr_bytes


LOGDIR = "$LOGDIR"
#: how a Java tool's uncaught exception starts on stderr
JAVA_EXCEPTION = b"Exception in thread "


def placeholder_paths(output: bytes, logdir: Path) -> bytes:
    """Absolute paths under ``logdir`` (Kafka prints some) as ``$LOGDIR/...``: outputs compare across machines."""
    return output.replace(str(logdir.resolve()).encode() + b"/", LOGDIR.encode() + b"/")


def _latin1(b64: str | None) -> str | None:
    return None if b64 is None else base64.b64decode(b64).decode("latin-1")


def kseg_records(partition: Path) -> list[dict[str, Any]]:
    """The data records of a partition folder per kseg (control records left out, as consumers do)."""
    rc, out, err = run_kseg(["dump", "--records", "--format", "jsonl", "--payload", "base64", str(partition)],
                            cwd=partition.parent)
    assert rc == 0, err.decode()
    records = []
    for line in out.splitlines():
        obj = json.loads(line)
        if obj.get("type") != "record" or obj.get("control"):
            continue
        records.append({
            "offset": obj["offset"], "timestamp": obj["timestamp"], "timestamp_type": obj["timestamp_type"],
            "key": _latin1(obj["key"]), "value": _latin1(obj["value"]),
            "headers": [{"key": h["key"], "value": _latin1(h["value"])} for h in obj.get("headers") or []],
        })
    return records


# --------------------------------------------------------------------------- known differences

#: (releases, file pattern, combination id) -> why kseg differs. ``releases`` is matched (fnmatch) against
#: "BROKER>TOOL": the release whose broker wrote the file and the release whose DumpLogSegments printed it
#: ("4>4", "3.9>3.9", and "3.9>4" for Kafka 4's tool on the 3.9 broker's files). The file pattern is
#: matched against the path relative to the log dir (``*`` crosses ``/``). A follow-up fix in kseg removes
#: its entry; the xfail(strict=True) marks make a stale entry fail.
_APPEND_INDEXED = ("kseg index --rebuild indexes as Kafka 3.7+ brokers do (an entry per batch, the time index at the "
                   "batch's last offset); this release's broker indexed each append (one entry for a produce request's "
                   "whole message set, at its largest offset) and put a time-index entry at the offset of the first "
                   "record holding the largest timestamp, inside the batch")

# kseg-dump-log on damaged companion files and internal-topic records (fixtures/kafka-damaged-companions,
# tests/kafka/damaged_companions.py): the file pattern is damaged-companions/<case>; "*>3.9": Kafka 3.9.2's tool only
_COMPANIONS = "damaged-companions"
_COMPANION_DIFFERENCES: dict[tuple[str, str, str], str] = {}

# kseg repair against the broker's recovery (tests/kafka/test_repair_live.py): the file pattern is
# repair/<case>, the combination the aspect compared
_REPAIR_MAGIC = ("a v2 batch whose magic byte is damaged (3): the CRC does not cover the magic, so Kafka's recovery "
                 "(FileLogInputStream.nextBatch reads any magic >= 2 as v2, DefaultRecordBatch.ensureValid checks "
                 "size and CRC) keeps it and the broker serves it, though Kafka's own Java client refuses it "
                 "(ByteBufferLogInputStream: 'Invalid magic found in record'); kseg repair cuts the segment there, "
                 "writing no batch that failed a check")
_REPAIR_DIFFERENCES: dict[tuple[str, str, str], str] = {
    ("4>4", "repair/magic-active", aspect): _REPAIR_MAGIC for aspect in ("logs", "records", "indexes")}

KNOWN_DIFFERENCES: dict[tuple[str, str, str], str] = {
    # the rolled segments of several messages per produce request (v0/v1), and of batches whose first record
    # holds the largest timestamp (v2)
    **{(f"{release}>{release}", rel, "index-rebuild"): _APPEND_INDEXED
       for release in ("2.8", "3.6")
       for rel in ("v0-0/00000000000000000000.log", "v1-0/00000000000000000000.log", "v2-0/00000000000000000256.log")},
    **_COMPANION_DIFFERENCES,
    **_REPAIR_DIFFERENCES,
}


def known_difference(tool: str, rel: str, combo: str, broker: str | None = None) -> str | None:
    """Every known difference for these releases, file and combination, joined; None if kseg should match."""
    releases = f"{broker or tool}>{tool}"
    reasons = [reason for (rel_pat, file_pat, combo_pat), reason in KNOWN_DIFFERENCES.items()
               if fnmatch.fnmatchcase(releases, rel_pat) and fnmatch.fnmatchcase(rel, file_pat)
               and fnmatch.fnmatchcase(combo, combo_pat)]
    return "; ".join(reasons) or None


def _first_diff(expected: bytes, got: bytes) -> str:
    e, g = expected.decode(errors="replace").splitlines(), got.decode(errors="replace").splitlines()
    for i, (a, b) in enumerate(zip(e, g)):
        if a != b:
            return f"line {i + 1}: kafka {a[:200]!r} kseg {b[:200]!r}"
    return f"kafka {len(e)} lines, kseg {len(g)} lines"


def dump_mismatch(release: str, rel: str, combo: str, logdir: Path,
                  expected_out: bytes, expected_err: bytes, expected_exit: int = 0) -> str | None:
    """How kseg's output differs from what DumpLogSegments printed (stdout, stderr, exit code), None if
    it does not. Where the tool stopped with a Java stack trace (a failed --index-sanity-check) kseg
    prints one error line instead and exits as the tool did."""
    args = kseg_args(rel, combo, release)
    if args is None:
        return f"no kseg equivalent of kafka-dump-log.sh {' '.join(COMBOS[combo])}"
    rc, out, err = run_kseg(args, cwd=logdir)
    out, err = placeholder_paths(out, logdir), placeholder_paths(err, logdir)
    if out != expected_out:
        return "stdout " + _first_diff(expected_out, out)
    if expected_err.startswith(JAVA_EXCEPTION):
        if not (err.startswith(b"kseg: error: ") and err.count(b"\n") == 1):
            return f"stderr: one kseg error line expected for the tool's exception, got {err[:300]!r}"
    elif err != expected_err:
        return "stderr " + _first_diff(expected_err, err)
    if rc != expected_exit:
        return f"kseg exited {rc}, kafka-dump-log.sh {expected_exit}"
    return None


def compare_dump(release: str, rel: str, combo: str, logdir: Path,
                 expected_out: bytes, expected_err: bytes, expected_exit: int = 0) -> None:
    """Assert kseg prints what DumpLogSegments printed (stdout and stderr) and exits as it did."""
    problem = dump_mismatch(release, rel, combo, logdir, expected_out, expected_err, expected_exit)
    assert problem is None, problem


def index_interval(partition: str) -> int:
    return 4096 if partition.startswith("__") else DATA_INDEX_INTERVAL


def compare_index_rebuild(log: Path, out_dir: Path) -> None:
    """``kseg index --rebuild`` of a rolled segment writes the broker's .index and .timeindex bytes."""
    out_dir = out_dir / "rebuilt"  # a new folder: kseg refuses to write into an existing output
    rc, out, err = run_kseg(["index", "--rebuild", "-o", str(out_dir), "--index-interval-bytes",
                             str(index_interval(log.parent.name)), str(log)], cwd=log.parent)
    assert rc == 0, err.decode()
    for suffix in (".index", ".timeindex"):
        broker = log.with_suffix(suffix).read_bytes()
        rebuilt = (out_dir / log.with_suffix(suffix).name).read_bytes()
        assert rebuilt == broker, f"{suffix}: kseg wrote {len(rebuilt)} bytes, the broker {len(broker)}"
