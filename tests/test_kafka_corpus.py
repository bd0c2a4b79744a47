"""kseg against Kafka's own output, on files real brokers wrote (no Java needed).

``fixtures/kafka-<release>/`` holds a log directory written by a real Kafka
broker of that release, the records its consumers received, and what the
release's ``kafka-dump-log.sh`` (DumpLogSegments) printed for every file and
flag combination (``oracle/generate.py`` writes them; ``--check`` re-runs Kafka
to confirm them). Here kseg must

* verify every file (``kseg verify``, ``kseg index --check``: no error; the 2.8 and 3.6
  brokers' time-index entries inside batches and the running segments' preallocated
  indexes are healthy),
* give exactly the records the consumers received (``kseg dump --records --format jsonl``),
* print byte for byte what DumpLogSegments printed (``kseg dump --format kafka``),
  the release's own and, in ``golden-kafka-4/``, Kafka 4's on the 3.9 broker's files and the 2.8 broker's indexes
  (index verdicts on stderr and exit codes included),
* rebuild each rolled segment's ``.index`` and ``.timeindex`` to the broker's bytes.

Where kseg differs today the case is marked ``xfail(strict=True)`` from the one
table ``tests/kafka/checks.py:KNOWN_DIFFERENCES``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import checks  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RELEASES = sorted(p.name.removeprefix("kafka-") for p in FIXTURES.glob("kafka-*") if (p / "golden").is_dir())


def _root(release: str) -> Path:
    return FIXTURES / f"kafka-{release}"


def _golden_sets() -> list[tuple[str, Path, dict]]:
    """(corpus release, golden folder, manifest): the release's own tool, and newer tools on its files."""
    out = []
    for release in RELEASES:
        for golden in sorted(_root(release).glob("golden*")):
            out.append((release, golden, json.loads((golden / "manifest.json").read_text())))
    return out


def _dump_cases() -> list:
    cases = []
    for release, golden, manifest in _golden_sets():
        tool = manifest["release"]
        for e in manifest["entries"]:
            reason = checks.known_difference(tool, e["file"], e["combo"], broker=release)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(release, golden.name, tool, e, marks=marks,
                                      id=f"{release}:{tool}:{e['file']}:{e['combo']}"))
    return cases


@pytest.mark.parametrize("release", RELEASES)
def test_verify(release: str) -> None:
    proc = subprocess.run([checks.KSEG, "verify", str(_root(release) / "logdir")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "error" not in proc.stdout.replace("0 with errors, 0 error(s)", ""), proc.stdout[-3000:]


@pytest.mark.parametrize("release", RELEASES)
def test_index_check(release: str) -> None:
    """``kseg index --check`` finds no error in any segment's indexes: the broker's rules of each
    release (time-index entries inside a batch for 2.8/3.6, a running segment's zero-filled indexes)."""
    rc, out, err = checks.run_kseg(["index", "--check", "logdir"], cwd=_root(release))
    assert rc == 0 and b"error" not in out, (out + err).decode(errors="replace")[-3000:]


def test_corpora_show_the_cases() -> None:
    """The corpora hold what the index checks above are about: time-index entries that point inside
    a batch (2.8, 3.6), a running segment's preallocated indexes with no entry yet, and Kafka's
    index-walk verdicts on stderr (its own false alarms, which ``kseg dump --format kafka`` reproduces)."""
    for release in ("2.8", "3.6"):
        if release not in RELEASES:
            pytest.fail(f"fixtures/kafka-{release} is missing")
        golden = _root(release) / "golden"
        stderr = b"".join(p.read_bytes() for p in golden.rglob("*.timeindex.plain.stderr"))
        assert b"The following indexed offsets are not found in the log." in stderr, release
        zero = _root(release) / "logdir" / "preallocated-0" / "00000000000000000000.index"
        assert zero.stat().st_size > 8 and not zero.read_bytes().strip(b"\0"), release
        sanity = (golden / "log-append-0" / "00000000000000000000.timeindex.index-sanity.stderr").read_bytes()
        assert sanity.startswith(checks.JAVA_EXCEPTION), release


def _record_cases() -> list:
    cases = []
    for release in RELEASES:
        received = json.loads((_root(release) / "records.json").read_text())
        for partition in sorted(received):
            reason = checks.known_difference(release, f"{partition}/*", "records")
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(release, partition, marks=marks, id=f"{release}:{partition}"))
    return cases


@pytest.mark.parametrize("release,partition", _record_cases())
def test_records_as_consumed(release: str, partition: str) -> None:
    received = json.loads((_root(release) / "records.json").read_text())[partition]
    assert received, "the consumer received nothing"
    assert checks.kseg_records(_root(release) / "logdir" / partition) == received


@pytest.mark.parametrize("release,golden,tool,entry", _dump_cases())
def test_dump_like_kafka(release: str, golden: str, tool: str, entry: dict) -> None:
    """Files of the ``release`` broker, as the ``tool`` release's DumpLogSegments prints them."""
    folder = _root(release) / golden
    checks.compare_dump(tool, entry["file"], entry["combo"], _root(release) / "logdir",
                        (folder / entry["stdout"]).read_bytes(), (folder / entry["stderr"]).read_bytes(), entry["exit"])


def _rolled_segments() -> list:
    cases = []
    for release in RELEASES:
        logdir = _root(release) / "logdir"
        for part in sorted(p for p in logdir.iterdir() if p.is_dir()):
            logs = sorted(part.glob("*.log"))
            for log in logs[:-1]:  # every segment but the active one
                rel = str(log.relative_to(logdir))
                reason = checks.known_difference(release, rel, "index-rebuild")
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                cases.append(pytest.param(release, rel, marks=marks, id=f"{release}:{rel}"))
    return cases


@pytest.mark.parametrize("release,rel", _rolled_segments())
def test_index_rebuild_like_broker(release: str, rel: str, tmp_path: Path) -> None:
    checks.compare_index_rebuild(_root(release) / "logdir" / rel, tmp_path)
