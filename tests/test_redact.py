"""The redaction rule (kseg.ops.redact): a keyed hash and the length, equal stays equal, null and
empty stay as they are, and a redacted batch keeps every header field and codec of the original
with valid CRCs; with nothing to redact, an uncompressed batch is rebuilt byte for byte."""

from __future__ import annotations

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
