"""Live tier: the broker's own LogCleaner judges ``kseg compact``.

Per release one broker writes compacted topics with its cleaner off
(``cleaning.py``: duplicate keys, tombstones, an idempotent producer,
transactions that commit and abort; on 3.9 a v1 topic too), is stopped and
copied, then cleans them (cleaner on, aggressive settings) and is stopped and
copied again. ``kseg compact --single-pass`` of the first copy, told the
topic's settings and a clock inside the cleaning's window, must give the
second: same segment files, batches, records and index bytes; with the
cleaner's own clock, byte-identical ``.log`` files.

Needs ``java`` and ``mvn``; skipped otherwise.
"""

from __future__ import annotations

from pathlib import Path

import brokers
import pytest

_why = brokers.unavailable(*brokers.LIVE_DEFAULT)
if _why:
    pytest.skip(f"live Kafka cleaner tier skipped: {_why}", allow_module_level=True)

import cleaning  # noqa: E402  (needs kafka-python, which the test extra installs)

RELEASES = list(brokers.LIVE_DEFAULT)
_runs: dict[str, tuple[Path, dict]] = {}


@pytest.fixture(scope="session", params=RELEASES, ids=[f"kafka-{r}" for r in RELEASES])
def cleaned(request, tmp_path_factory) -> tuple[Path, dict]:
    release = request.param
    if release not in _runs:
        workdir = tmp_path_factory.mktemp(f"kafka-cleaner-{release}")
        _runs[release] = (workdir, cleaning.run_scenario(release, workdir))
    return _runs[release]


@pytest.mark.parametrize("clock", ["window-start", "window-end", "cleaner"])
def test_live_compact_like_the_broker_cleaner(cleaned: tuple[Path, dict], clock: str, tmp_path: Path) -> None:
    workdir, manifest = cleaned
    now = {"window-start": manifest["window_ms"][0], "window-end": manifest["window_ms"][1],
           "cleaner": "cleaner"}[clock]
    diffs = cleaning.compare(workdir / "before", workdir / "after", tmp_path, manifest, now)
    problems = [d for part in sorted(diffs) for d in diffs[part]]
    assert not problems, f"{len(problems)} differences from Kafka {manifest['kafka_version']}'s cleaner:\n" + \
        "\n".join(problems)
