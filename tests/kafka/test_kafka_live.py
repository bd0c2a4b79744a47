"""Live tier: real Kafka brokers (2.8, 3.6 and 3.9 with ZooKeeper, 4.x KRaft) write, kseg reads, Kafka judges.

3.9 and 4 by default; ``KSEG_KAFKA_RELEASES="2.8 3.6 3.9 4.0 4.1 4.2 4 4.4"`` (or ``all``) picks the
releases (names of ``brokers.RELEASES``; each is compared with its release line's ``--kafka-version``).

One broker per release per session (``brokers.py``), the traffic of
``traffic.py``, a clean stop, then for every file the broker wrote:

* ``kseg verify`` passes on the whole log dir;
* ``kseg dump --records --format jsonl`` gives exactly the records the consumer received;
* ``kseg dump --format kafka`` prints what the release's own DumpLogSegments prints,
  stdout and stderr, for every flag combination (``checks.COMBOS``);
* ``kseg index --rebuild`` of every rolled segment writes the broker's index bytes.

Files are only known once the broker ran, so each check is one test per release
that lists every unexpected mismatch, and every entry of
``checks.KNOWN_DIFFERENCES`` that no longer differs (so a fix flips it).

Needs ``java`` and ``mvn`` (the jars come from Maven Central into
``.cache/kafka``, once); skipped otherwise.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import brokers
import checks
import pytest

_why = brokers.unavailable()
if _why:
    pytest.skip(f"live Kafka tier skipped: {_why}", allow_module_level=True)

import traffic  # noqa: E402  (needs kafka-python, which the test extra installs)

RELEASES = list(brokers.live_releases())


class Run:
    """One release's broker run: its log dir, the records received, Kafka's dumps (lazily)."""

    def __init__(self, release: str, workdir: Path):
        self.release = release
        self.logdir, self.received = traffic.run_release(release, workdir)
        (workdir / "records.json").write_text(json.dumps(self.received, indent=0))
        self._dumps: list[dict] | None = None

    @property
    def dumps(self) -> list[dict]:
        if self._dumps is None:
            self._dumps = checks.kafka_dumps(self.release, self.logdir)
        return self._dumps


_runs: dict[str, Run] = {}


@pytest.fixture(scope="session", params=RELEASES, ids=[f"kafka-{r}" for r in RELEASES])
def run(request, tmp_path_factory) -> Run:
    release = request.param
    if release not in _runs:
        _runs[release] = Run(release, tmp_path_factory.mktemp(f"kafka-{release}"))
    return _runs[release]


def _expect(problems: list[str], release: str, rel: str, combo: str, ok: bool, detail: str) -> None:
    known = checks.known_difference(release, rel, combo)
    if not ok and not known:
        problems.append(f"{rel} [{combo}]: {detail}")
    elif ok and known:
        problems.append(f"{rel} [{combo}]: matches now, remove from KNOWN_DIFFERENCES: {known}")


def test_live_verify(run: Run) -> None:
    proc = subprocess.run([checks.KSEG, "verify", str(run.logdir)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_live_records_as_consumed(run: Run) -> None:
    problems: list[str] = []
    for partition, received in sorted(run.received.items()):
        assert received, f"{partition}: the consumer received nothing"
        got = checks.kseg_records(run.logdir / partition)
        first = next((i for i, (a, b) in enumerate(zip(received, got)) if a != b), min(len(received), len(got)))
        detail = (f"{len(got)} records from kseg, {len(received)} received; first difference at index {first}: "
                  f"consumer {received[first:first + 1]} kseg {got[first:first + 1]}")
        _expect(problems, run.release, f"{partition}/*", "records", got == received, detail)
    assert not problems, "\n".join(problems)


def test_live_dump_like_kafka(run: Run) -> None:
    problems: list[str] = []
    for r in run.dumps:
        detail = checks.dump_mismatch(run.release, r["file"], r["combo"], run.logdir, r["stdout"], r["stderr"],
                                      r["exit"])
        _expect(problems, run.release, r["file"], r["combo"], detail is None, detail or "")
    assert not problems, f"{len(problems)} unexpected results:\n" + "\n".join(problems)


def test_live_index_rebuild_like_broker(run: Run, tmp_path: Path) -> None:
    problems: list[str] = []
    for part in sorted(p for p in run.logdir.iterdir() if p.is_dir()):
        for i, log in enumerate(sorted(part.glob("*.log"))[:-1]):  # rolled segments only
            rel = str(log.relative_to(run.logdir))
            try:
                checks.compare_index_rebuild(log, tmp_path / f"{part.name}-{i}")
                ok, detail = True, ""
            except AssertionError as exc:
                ok, detail = False, str(exc).splitlines()[0]
            _expect(problems, run.release, rel, "index-rebuild", ok, detail)
    assert not problems, "\n".join(problems)
