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


def _first_record_28_lacks(log: Path) -> tuple[int, int, str] | None:
    """(offset, batch position, what) of the first record Kafka 2.8's offsets formatter cannot read: a key
    version (record type) it does not have, or an offset-commit or group metadata value past version 3
    (its definitions' highest); None if it reads them all."""
    from kseg.decoders.offsets import decode_offsets_record
    from kseg.log.records import batch_records
    from kseg.log.segment import Segment

    for batch in Segment(log).batches():
        for r in batch_records(batch):
            d = decode_offsets_record(r, batch.is_control)
            if d is None or d.key is None:
                continue
            if d.key.version not in (0, 1, 2):
                return r.offset, batch.position, "key version"
            if d.value is not None and d.value.version > 3:
                what = "group metadata" if d.key.version == 2 else "offset-commit"
                return r.offset, batch.position, f"{what} value version"
    return None


@pytest.mark.parametrize("log", sorted(REPO.glob("fixtures/kafka-*/logdir/__consumer_offsets-0/*.log")),
                         ids=lambda p: p.parts[-4])
def test_an_older_tool_stops_where_it_cannot_decode(log: Path) -> None:
    """Kafka 2.8's offsets formatter knows record types 0 to 2 and their values up to version 3, and stops
    (an exception, exit 1) at another; `--kafka-version 2.8` stops at the same record, its metadata
    printed, with one error line (held to the real tool on damaged records by the damaged companions
    corpus); 3.6 reads every record a broker wrote and never stops."""
    import subprocess

    first = _first_record_28_lacks(log)
    args = [str(Path(sys.executable).with_name("kseg")), "dump", "--format", "kafka", "--records", "--decode", "offsets", str(log)]
    old = subprocess.run([*args, "--kafka-version", "2.8"], capture_output=True)
    newer = subprocess.run([*args, "--kafka-version", "3.6"], capture_output=True)
    assert newer.returncode == 0 and newer.stderr == b""
    if first is None:
        assert old.returncode == 0 and old.stderr == b""
        return
    offset, position, what = first
    assert old.returncode == 1
    assert old.stderr.decode().splitlines() == [old.stderr.decode().rstrip("\n")]
    assert f"at byte {position}: {what}" in old.stderr.decode()
    last = old.stdout.decode().rsplit("\n", 1)[-1]
    assert last.startswith(f"| offset: {offset} ") and last.endswith("headerKeys: []") and " key: " not in last
