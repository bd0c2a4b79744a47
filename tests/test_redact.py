"""The redaction rule (kseg.ops.redact): a keyed hash and the length, equal stays equal, null and
empty stay as they are, and a redacted batch keeps every header field and codec of the original
with valid CRCs; with nothing to redact, an uncompressed batch is rebuilt byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import FIXTURES_LOGDIR, REPO
from kseg.errors import CorruptBatchError
from kseg.log.checks import batch_damage
from kseg.log.decode import scan_entries
from kseg.log.records import batch_records
from kseg.log.segment import partition_segments, strict_batches
from kseg.ops.redact import FIELDS, Redactor, parse_fields

CORPORA = [FIXTURES_LOGDIR, REPO / "fixtures" / "kafka-3.9" / "logdir", REPO / "fixtures" / "kafka-4" / "logdir",
           REPO / "fixtures" / "kafka-clients" / "4" / "logdir"]
SEGMENTS = sorted(log for root in CORPORA for p in sorted(root.iterdir()) if p.is_dir()
                  and not p.name.startswith("__") for log in partition_segments(p))
KEY = b"test key"


def test_parse_fields() -> None:
    assert parse_fields(["keys", "values,headers"]) == frozenset(FIELDS)
    assert parse_fields(["keys,", " values "]) == {"keys", "values"}
    with pytest.raises(ValueError):
        parse_fields(["key"])


@given(st.binary(max_size=200), st.binary(max_size=200))
def test_token_rule(a: bytes, b: bytes) -> None:
    r = Redactor.make(frozenset(FIELDS), KEY)
    ta, tb = r.token(a), r.token(b)
    assert (ta == tb) == (a == b)
    if a:
        head, length, mac = ta.split(b":")
        assert (head, int(length), len(mac)) == (b"redacted", len(a), 32) and int(mac, 16) >= 0
    else:
        assert ta == a
    assert r.token(None) is None


def test_the_key_changes_the_hash() -> None:
    a, b = Redactor.make(frozenset(FIELDS), b"one"), Redactor.make(frozenset(FIELDS), b"two")
    assert a.token(b"secret") != b.token(b"secret")
    assert Redactor.make(frozenset(FIELDS)).token(b"secret") != Redactor.make(frozenset(FIELDS)).token(b"secret")


@pytest.mark.parametrize("log", SEGMENTS, ids=lambda p: f"{p.parent.parent.parent.name}/{p.parent.name}/{p.name}")
def test_redacted_segment(log: Path) -> None:
    """Every batch of the corpora, redacted: same header fields, codec, offsets, timestamps and
    counts; sound (verify's batch checks); the fields redacted by the rule; unredacted ones kept."""
    originals = list(strict_batches(log))
    for fields in (frozenset(FIELDS), frozenset({"values"})):
        r = Redactor.make(fields, KEY)
        out = scan_entries(r.segment(originals, str(log)), 0, final=True).batches
        assert len(out) == len(originals)
        for before, after in zip(originals, out):
            assert batch_damage(after, "redacted") == []
            same = ("magic", "base_offset", "attributes", "max_timestamp", "partition_leader_epoch",
                    "last_offset_delta", "base_timestamp", "producer_id", "producer_epoch", "base_sequence",
                    "record_count")
            assert [getattr(after, f) for f in same] == [getattr(before, f) for f in same]
            old, new = batch_records(before), batch_records(after)
            assert [(x.offset, x.timestamp, x.attributes) for x in new] == [(x.offset, x.timestamp, x.attributes)
                                                                             for x in old]
            if before.is_v2 and before.is_control:
                assert bytes(after.raw) == bytes(before.raw)
                continue
            for x, y in zip(old, new):
                assert y.key == (r.token(x.key) if "keys" in fields else x.key)
                assert y.value == r.token(x.value)
                assert [h.key for h in y.headers] == [h.key for h in x.headers]
                assert [h.value for h in y.headers] == [r.token(h.value) if "headers" in fields else h.value
                                                        for h in x.headers]


@pytest.mark.parametrize("log", SEGMENTS[:40], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_nothing_to_redact_rebuilds_uncompressed_batches_byte_for_byte(log: Path) -> None:
    r = Redactor.make(frozenset(), KEY)
    for b in strict_batches(log):
        if not b.is_compressed:
            assert r.batch(b, str(log)) == bytes(b.raw)


def test_a_damaged_batch_is_not_redacted(tmp_path: Path) -> None:
    log = partition_segments(FIXTURES_LOGDIR / "v2-none-0")[0]
    data = bytearray(log.read_bytes())
    data[len(data) - 3] ^= 0x5A  # the last record of the last batch: its CRC no longer matches
    bad = tmp_path / log.name
    bad.write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError, match="cannot redact a damaged batch"):
        Redactor.make(frozenset(FIELDS), KEY).segment(strict_batches(bad), str(bad))


# --------------------------------------------------------------------------- kseg dump --redact


def _originals(root: Path) -> set[bytes]:
    found = set()
    for log in (s for s in SEGMENTS if s.is_relative_to(root)):
        for b in strict_batches(log):
            if not (b.is_v2 and b.is_control):
                for r in batch_records(b):
                    found.update(x for x in (r.key, r.value, *(h.value for h in r.headers)) if x and len(x) >= 4)
    return found


def _dump(*args: object) -> tuple[int, bytes]:
    from click.testing import CliRunner

    from kseg.cli.main import main

    res = CliRunner().invoke(main, ["dump", *map(str, args)])
    return res.exit_code, res.stdout_bytes


@pytest.mark.parametrize("root", CORPORA, ids=lambda p: str(p.relative_to(REPO)))
@pytest.mark.parametrize("fmt", [["--format", "text", "--no-truncate"], ["--format", "jsonl", "--payload", "hex"],
                                 ["--format", "kafka", "--payload", "utf8"]], ids=lambda a: a[1])
def test_dump_redact_shows_no_original(root: Path, fmt: list[str]) -> None:
    originals = _originals(root)
    hexed = "hex" in fmt
    code, plain = _dump(*fmt, "-r", root)
    code_r, redacted = _dump(*fmt, "-r", "--redact", "keys,values,headers", "--redact-key", "k", root)
    assert code == code_r == 0
    _, batches = _dump(*fmt[:2], root)  # names and paths, which are not record data
    searched = [v.hex().encode() if hexed else v for v in originals]
    searched = [v for v in searched if v not in batches]
    # The search finds them unredacted (text shows binary bytes escaped: the hex form searches every one).
    found = [v for v in searched if v in plain]
    assert found and (not hexed or len(found) == len(searched))
    assert [v for v in searched if v in redacted] == []
    # As many records (a value holding a newline makes more lines of kafka text than its token does).
    marker = {"text": b"  key ", "jsonl": b'"type": "record"', "kafka": b"| offset: "}[fmt[1]]
    assert plain.count(marker) == redacted.count(marker) > 0
    assert (b"redacted:".hex().encode() if hexed else b"redacted:") in redacted


def test_dump_redact_of_an_undecodable_batch_shows_its_header_only(tmp_path: Path) -> None:
    import shutil

    from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD

    src = FIXTURES_LOGDIR / "v2-gzip-0"
    shutil.copytree(src, tmp_path / "v2-gzip-0")
    log = partition_segments(tmp_path / "v2-gzip-0")[0]
    data = bytearray(log.read_bytes())
    first = next(strict_batches(log))
    data[first.size - 8:first.size] = b"\xff" * 8  # the gzip stream's trailer: it no longer inflates
    log.write_bytes(bytes(data))
    code, out = _dump("-r", "--keep-going", "--format", "jsonl", "--redact", "values", log)
    assert code == 1
    bad = next(json.loads(line) for line in out.splitlines() if b'"raw"' in line)
    assert bad["raw"] == bytes(data[:RECORD_BATCH_OVERHEAD]).hex()


def test_dump_redact_usage() -> None:
    code, _ = _dump("--redact-key", "k", FIXTURES_LOGDIR / "v2-none-0")
    assert code == 2
    code, _ = _dump("--redact", "everything", FIXTURES_LOGDIR / "v2-none-0")
    assert code == 2


def test_kafka_lines_before_a_bad_record_are_redacted(tmp_path: Path) -> None:
    """--format kafka prints the records of an uncompressed batch read before its bad one, as the tool
    does (kseg.render.kafka_stops): redacted like every other record line."""
    import shutil

    src = REPO / "fixtures" / "kafka-4" / "logdir" / "v2-0"
    shutil.copytree(src, tmp_path / "v2-0")
    log = partition_segments(tmp_path / "v2-0")[0]
    data = bytearray(log.read_bytes())
    second = list(strict_batches(log))[1]
    data[second.position + 11] ^= 0xFF  # its size's low byte: its records no longer end where it does
    log.write_bytes(bytes(data))
    records = batch_records(second)
    code, plain = _dump("--format", "kafka", "--payload", "utf8", "-r", log)
    code_r, redacted = _dump("--format", "kafka", "--payload", "utf8", "-r", "--redact", "values", log)
    assert code == code_r == 1
    shown = [r.value for r in records[:-1] if r.value and r.value in plain]
    assert shown and [v for v in shown if v in redacted] == []
    assert redacted.count(b"| offset: ") == plain.count(b"| offset: ") > len(shown)
