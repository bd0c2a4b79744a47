"""Golden outputs of ``kseg dump --records`` on fixture partitions, in every format.

The CLI runs with the repository root as working folder and relative paths, so
the stored outputs name files as ``fixtures/logdir/<case>-0/<base>.log``.
``KSEG_UPDATE_GOLDEN=1 pytest tests/test_golden.py`` rewrites fixtures/golden/
(review the diff: a change there is a change in what users see).

The kafka format is kafka-dump-log.sh's text (spec §6.3): ``<case>.kafka.txt`` Kafka 3.x's
(``--kafka-version 3.9``), ``<case>.kafka4.txt`` Kafka 4's (the default); both equal what
the real tool prints for these files (3.9.2, and 4.3.1's kafka-tools). Its stderr report of
non-consecutive offsets names absolute paths; it is stored with the repository root
written as ``<REPO>`` in ``<case>.<format>.stderr.txt`` (only when non-empty).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.cli.main import main

from conftest import REPO

GOLDEN = REPO / "fixtures" / "golden"
UPDATE = os.environ.get("KSEG_UPDATE_GOLDEN") == "1"

# Partitions of fixtures/generate.py's CASES (v0; v0/v1/v2 mixed; a v1 gzip wrapper with holes;
# v2 headers; transactions with control batches; gaps, an empty batch and a delete horizon;
# idempotent sequences with a wrap).
CASES = ("v0-none", "mixed-magic", "compacted-v1-gzip", "v2-headers", "v2-txn", "compacted-v2", "v2-idempotent")

FORMATS = {
    "kafka": ("--format", "kafka", "--kafka-version", "3.9", "--payload", "utf8"),  # Kafka 3.x's lines
    "kafka4": ("--format", "kafka", "--payload", "utf8"),  # the default: Kafka 4's lines
    "jsonl": ("--format", "jsonl"),
    "text": ("--format", "text"),
}


def _args(case: str, fmt: str) -> list[str]:
    return ["dump", "--records", *FORMATS[fmt], f"fixtures/logdir/{case}-0"]


def _run(args: list[str]) -> tuple[int, bytes, bytes]:
    old = Path.cwd()
    os.chdir(REPO)
    try:
        result = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout_bytes, result.stderr_bytes


def _portable(stderr: bytes) -> bytes:
    """Paths relative to ``<REPO>``, one block per file in path order: kafka-dump-log.sh lists
    the files in the order of a hash map of their absolute paths, which depends on where
    the repository is."""
    text = stderr.replace(str(REPO).encode(), b"<REPO>").decode("utf-8", "replace")
    head = "Non-consecutive offsets in "
    blocks = [head + b for b in text.split(head)[1:]]
    rest = text.split(head)[0]
    return (rest + "".join(sorted(blocks))).encode()


def _check(path: Path, actual: bytes) -> None:
    if UPDATE:
        if actual:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(actual)
            os.replace(tmp, path)
        elif path.exists():
            path.unlink()
        return
    expected = path.read_bytes() if path.exists() else b""
    if actual != expected:
        a, e = actual.decode("utf-8", "replace").splitlines(), expected.decode("utf-8", "replace").splitlines()
        first = next((i for i, (x, y) in enumerate(zip(a, e)) if x != y), min(len(a), len(e)))
        got = a[first] if first < len(a) else "<end of output>"
        want = e[first] if first < len(e) else "<end of file>"
        pytest.fail(f"{path.name} differs at line {first + 1}:\n  expected: {want!r}\n  actual:   {got!r}\n"
                    "(KSEG_UPDATE_GOLDEN=1 rewrites the golden files)")


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("case", CASES)
def test_golden(case, fmt):
    code, out, err = _run(_args(case, fmt))
    assert code == 0, err.decode("utf-8", "replace")
    _check(GOLDEN / f"{case}.{fmt}.txt", out)
    if fmt.startswith("kafka"):
        _check(GOLDEN / f"{case}.{fmt}.stderr.txt", _portable(err))
    else:
        assert err == b""


def test_no_stray_golden_files():
    expected = {f"{c}.{f}.txt" for c in CASES for f in FORMATS}
    present = {p.name for p in GOLDEN.glob("*.txt")} if GOLDEN.is_dir() else set()
    stderr_files = {n for n in present if n.endswith(".stderr.txt")}
    assert present - stderr_files == expected
    assert {n.split(".")[0] for n in stderr_files} <= set(CASES)


def test_installed_script_matches_golden():
    """The real entry point (a subprocess, real stdout) prints the same bytes as CliRunner."""
    script = Path(sys.executable).with_name("kseg")
    if not script.exists():
        pytest.skip("the kseg script is not installed next to this interpreter")
    env = dict(os.environ, PYTHONUTF8="1")
    for fmt in FORMATS:
        proc = subprocess.run([str(script), *_args("v2-txn", fmt)], cwd=REPO, capture_output=True, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (GOLDEN / f"v2-txn.{fmt}.txt").read_bytes()


# --------------------------------------------------------------------------- kafka format: spec §6.3 line shapes


def _kafka_lines(case: str) -> list[str]:
    return (GOLDEN / f"{case}.kafka.txt").read_bytes().decode("utf-8").split("\n")


V2_BATCH_FIELDS = ("baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId", "producerEpoch",
                   "partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs", "position")
TAIL_FIELDS = ("size", "magic", "compresscodec", "crc", "isvalid")


def _field_names(line: str) -> list[str]:
    return [tok[:-1] for tok in line.split(" ") if tok.endswith(":") and tok[:-1].isalpha()]


@pytest.mark.parametrize("case", CASES)
def test_kafka_format_line_shapes(case):
    lines = _kafka_lines(case)
    for line in lines:
        if line.startswith("baseOffset: "):
            names = _field_names(line)
            assert tuple(names[:12]) == V2_BATCH_FIELDS
            assert names[12] in ("CreateTime", "LogAppendTime")
            assert tuple(names[13:]) == TAIL_FIELDS
            assert "deleteHorizonMs: OptionalLong.empty " in line or "deleteHorizonMs: OptionalLong[" in line
            assert line.split("compresscodec: ")[1].split(" ")[0] in ("none", "gzip", "snappy", "lz4", "zstd")
        elif line.startswith("offset: "):
            names = _field_names(line)
            assert tuple(names[:2]) == ("offset", "position")
            assert names[2] in ("CreateTime", "LogAppendTime", "NoTimestampType")
            assert tuple(names[3:]) == TAIL_FIELDS
            magic = int(line.split(" magic: ")[1].split(" ")[0])
            assert magic in (0, 1) and (names[2] == "NoTimestampType") == (magic == 0)
        elif line.startswith("| offset: "):
            head = line.split(" key: ")[0].split(" payload: ")[0]
            names = _field_names(head)
            assert names[:1] == ["offset"] and names[2:4] == ["keySize", "valueSize"]
            if "isValid: " in head:  # legacy record: the stray brace after the CRC (spec §6.3)
                assert names[4:6] == ["isValid", "crc"]
                assert head.split(" crc: ")[1].rstrip("}").isdigit() and head.endswith("}")
            else:
                assert names[4:6] == ["sequence", "headerKeys"]
                assert " headerKeys: [" in head and ", " not in head.split("headerKeys: ")[1].split("]")[0]
        else:
            assert line == "" or line.startswith(("Dumping fixtures/logdir/", "Log starting offset: ")), line


def test_kafka_format_transaction_markers():
    lines = _kafka_lines("v2-txn")
    markers = [line for line in lines if "endTxnMarker" in line]
    assert [m.split("endTxnMarker: ")[1] for m in markers] == [
        "ABORT coordinatorEpoch: 7", "COMMIT coordinatorEpoch: 7", "COMMIT coordinatorEpoch: 8"]
    # Control records print neither key nor payload.
    assert all(" key: " not in m and " payload: " not in m for m in markers)
    assert all(" sequence: -1 headerKeys: [] " in m for m in markers)


def test_kafka_format_empty_batch_and_horizon():
    lines = _kafka_lines("compacted-v2")
    empty = [line for line in lines if " count: 0 " in line]
    assert len(empty) == 1
    assert "baseOffset: 14 lastOffset: 18 count: 0 baseSequence: 10 lastSequence: 14 producerId: 42 " in empty[0]
    assert "deleteHorizonMs: OptionalLong[1700086400000]" in "\n".join(lines)


def test_kafka_format_sequence_wrap():
    lines = _kafka_lines("v2-idempotent")
    assert any("baseSequence: 2147483646 lastSequence: 0 " in line for line in lines)
    assert any("| offset: 13 " in line and " sequence: 2147483647 " in line for line in lines)
    assert any("| offset: 14 " in line and " sequence: 0 " in line for line in lines)
