"""The table of kafka-dump-log.sh release lines (kseg.kafka_releases): one row per line, each held
to its own release's tool by a committed corpus, and the only place the lines' differences live."""

from __future__ import annotations

import re
import sys
from dataclasses import fields
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import brokers  # noqa: E402

from kseg.kafka_releases import KAFKA_VERSIONS, NEWEST_ALIAS, RELEASES, DumpLogRelease, kafka_release  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LINE_OF_TOOL = {line: release for release, line in brokers.LINES.items()}


def _key(line: str) -> tuple[int, ...]:
    return tuple(map(int, line.split(".")))


def test_rows_oldest_first_one_per_line() -> None:
    lines = [r.line for r in RELEASES]
    assert lines == sorted(set(lines), key=_key)


def test_every_line_is_a_kafka_version_and_4_is_the_newest() -> None:
    assert KAFKA_VERSIONS[0] == NEWEST_ALIAS
    assert set(KAFKA_VERSIONS) == {NEWEST_ALIAS, *(r.line for r in RELEASES)}
    newest = max((r for r in RELEASES if r.line.startswith(NEWEST_ALIAS + ".")), key=lambda r: _key(r.line))
    assert kafka_release(NEWEST_ALIAS) is newest
    with pytest.raises(KeyError):
        kafka_release("3.7")


@pytest.mark.parametrize("row", RELEASES, ids=lambda r: r.line)
def test_each_line_has_its_release_and_its_corpus(row: DumpLogRelease) -> None:
    """A new row fails here until the oracle runs its release: a pinned pom, a broker, and the
    committed corpus with the release's own DumpLogSegments outputs."""
    release = LINE_OF_TOOL.get(row.line)
    assert release is not None, f"{row.line}: not in tests/kafka/brokers.py RELEASES"
    assert brokers.version(release) == row.checked
    assert (REPO / "oracle" / f"kafka-{release}" / "pom.xml").is_file()
    assert (REPO / "fixtures" / f"kafka-{release}" / "golden" / "manifest.json").is_file()


def test_every_field_tells_two_lines_apart() -> None:
    """A field all rows agree on is no difference between lines: it belongs in the code."""
    for f in fields(DumpLogRelease):
        assert len({getattr(r, f.name) for r in RELEASES}) > 1, f.name


# a renderer or decoder comparing --kafka-version strings instead of reading the row's fields
_VERSION_COMPARISON = re.compile(r"""kafka_version\s*[!=]=|[!=]=\s*["'][0-9](\.[0-9]+)?["']""")


@pytest.mark.parametrize("package", ["render", "decoders"])
def test_renderers_read_fields_not_version_strings(package: str) -> None:
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()}"
            for p in sorted((REPO / "kseg" / package).rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1) if _VERSION_COMPARISON.search(line)]
    assert hits == []
