"""Every internal record type at every version, against what Kafka's own tool prints (no Java needed).

``fixtures/record-types/<release>/`` (``oracle/record_types.py``) holds, per family of records the
broker writes about itself, one segment Kafka's own message classes wrote: every record type of
the release at every version, in variants (nulls and values, tagged fields unset and set, empty
and absent optional structs, non-ASCII text, negative numbers, empty and full arrays, tombstones),
and what that release's DumpLogSegments printed for it with the family's decoder flag. Here:

* ``kseg dump --format kafka --decode FAMILY --kafka-version X`` prints those bytes exactly (2.8.2 to
  4.4.0; where the tool stopped with a stack trace, kseg stops at the same record with one line), and
  what Kafka 4.3's tool printed for the other releases' records (``golden-kafka-4/``) with
  ``--kafka-version 4.3``, and 4.0's, 4.1's and 4.2's for 4.4's, 2.8's for 3.6's (``golden-kafka-X/``:
  records and versions those releases do not define, read by their own definitions as Java reads them);
* ``kseg dump --format jsonl --decode auto`` decodes every record, none shown raw or with a note;
* the corpus holds every type and version the release's definitions list (the generated schema
  modules), so a type or version new to Kafka without its corpus entry fails;
* ``kseg state`` applies every record of the families it replays without an error.

Where kseg differs from Kafka the case is an ``xfail(strict=True)`` from
``tests/kafka/checks.py:KNOWN_DIFFERENCES`` (combination ``record-types``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "kafka"))

import brokers  # noqa: E402
import checks  # noqa: E402

from kseg.decoders.generated import MODULES  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "record-types"
#: corpus folder (the release that defines its records) -> the release's generated schemas
RELEASES = {brokers.NAMES[m.RELEASE]: m for m in reversed(MODULES)}
#: family -> the generated table its records come from (the KRaft control messages: CONTROL)
TABLES = {"metadata": "METADATA", "offsets": "OFFSETS", "transactions": "TRANSACTIONS",
          "share-group-state": "SHARE_STATE", "remote-log-metadata": "REMOTE_LOG"}
#: (release, family) -> {(record type, value version or None for all)} kseg leaves raw, as Kafka 4.3.1
#: does (golden-kafka-4/): kseg decodes __consumer_offsets by Kafka 4's definitions, and
#: * Kafka 3.9 defined early-access share-group records 9-11 that its own --offsets-decoder did not
#:   read either ("Unknown record type"); Kafka 4 dropped 9 and redefined 10 and 11;
#: * Kafka 3.9 read a record-type-0 key (OffsetCommitKey v0) with any OffsetCommitValue version;
#:   Kafka 4's LegacyOffsetCommitValue has v0 only ("Found an unknown record version 1 for 0 type").
#: * Kafka 4.0's share groups were early access: 4.1 dropped record type 9 again, and changed 11
#:   (ShareGroupMetadataValue) and 15 (ShareGroupStatePartitionMetadataValue) and the share-group
#:   state's values incompatibly; ``--kafka-version 4.0`` prints them by 4.0's definitions
#:   (definitions-4.0), the decoded parts are the newest's.
#: * Kafka 3.6's consumer-group records (4, 5, 7, 8: KIP-848 before its early access, which no 3.6
#:   broker wrote) have layouts later releases changed without a version; 3.6's own tool reads no
#:   record type above 2 ("unknown::version=N"), so nothing prints them by 3.6's definitions.
NOT_DECODED = {("3.6", "offsets"): {(4, None), (5, None), (7, None), (8, None)},
               ("3.9", "offsets"): {(9, None), (10, None), (11, None), (0, 1), (0, 2), (0, 3), (0, 4)},
               ("4.0", "offsets"): {(9, None), (11, None), (15, None), (0, 1), (0, 2), (0, 3), (0, 4)},
               ("4.0", "share-group-state"): {(0, None), (1, None)}}
#: (release, partition) -> what kseg state may decline, and why: records the corpus holds because
#: the release defines them, which the coordinator's own replay would not accept either
NOT_APPLIED = {
    # a ShareUpdate is a delta on a snapshot; the share coordinator deletes a share-partition's
    # state by a ShareSnapshot tombstone, never a ShareUpdate one (the corpus has a tombstone per type)
    **{(release, "__share_group_state-0"): ("a ShareUpdate tombstone (the coordinator writes none)",)
       for release, module in RELEASES.items() if hasattr(module, "SHARE_STATE")},
    # Kafka 2.8's KRaft preview records whose layouts later releases changed (no later release reads them)
    ("2.8", "__cluster_metadata-0"): ("of Kafka 2.8.2's KRaft preview",),
    # the records of NOT_DECODED
    ("3.6", "__consumer_offsets-0"): ("value not decoded", "bytes after the end of ConsumerGroupMemberMetadataValue"),
    ("3.9", "__consumer_offsets-0"): ("unknown record type 9", "MetadataHash runs past the end",
                                      "LegacyOffsetCommitValue version"),
    ("4.0", "__consumer_offsets-0"): ("unknown record type 9", "MetadataHash runs past the end",
                                      "LegacyOffsetCommitValue version", "was serialized as null"),
    ("4.0", "__share_group_state-0"): ("a ShareUpdate tombstone", "value not decoded"),
}
COMBO = "record-types"
#: the note of a tiered-storage record that decodes but that Kafka's objects refuse (an empty
#: segmentLeaderEpochs, a negative start offset): the golden holds Kafka's error line for it
KAFKA_REFUSES = "Kafka refuses this record"


def _manifest(release: str) -> dict:
    return json.loads((CORPUS / release / "manifest.json").read_text())


def _entries() -> list:
    """One case per segment and tool: the release's own DumpLogSegments, Kafka 4.3's on 3.9's and 4.4's,
    and the older 4.x tools' on 4.4's (``oracle/record_types.py:tools_for``)."""
    cases = []
    for release in RELEASES:
        if not (CORPUS / release / "manifest.json").is_file():
            continue
        for e in _manifest(release)["entries"]:
            reason = checks.known_difference(e["release"], e["file"], COMBO, broker=release)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(release, e, marks=marks, id=f"{release}:{e['family']}:kafka-{e['release']}"))
    return cases


def _segments() -> list:
    """One case per segment (its first entry: the release's own tool's, or Kafka 4.3's where the release's
    tool has no flag for the family)."""
    return [pytest.param(release, e, id=f"{release}:{e['family']}") for release in RELEASES
            if (CORPUS / release / "manifest.json").is_file()
            for e in {e["file"]: e for e in reversed(_manifest(release)["entries"])}.values()]


def _kseg(args: list[str], release: str) -> tuple[int, bytes, bytes]:
    return checks.run_kseg(args, cwd=CORPUS / release, in_process=True)


@pytest.mark.parametrize("release,entry", _entries())
def test_kafka_lines(release: str, entry: dict) -> None:
    root = CORPUS / release
    version = checks.KSEG_KAFKA_VERSION[entry["release"]]  # "4" (4.3.1's outputs) is the 4.3 line
    rc, out, err = _kseg(["dump", "--format", "kafka", "--kafka-version", version, "--decode", entry["family"],
                          entry["file"]], release)
    expected_out, expected_err = (root / entry["stdout"]).read_bytes(), (root / entry["stderr"]).read_bytes()
    got, want = out.decode(errors="replace").splitlines(), expected_out.decode(errors="replace").splitlines()
    diffs = [f"line {i}:\n  kseg:  {g}\n  kafka: {w}" for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not diffs and len(got) == len(want), f"{len(diffs)} lines differ\n" + "\n".join(diffs[:5])
    assert out == expected_out
    if checks.JAVA_EXCEPTION in expected_err:  # where the tool stopped with a stack trace (after any
        # warnings it logged): one line
        assert err.startswith(b"kseg: error: ") and err.count(b"\n") == 1, err
        assert rc == entry["exit"]
    else:
        assert err == expected_err
    assert rc == 0 or entry["exit"] != 0, err.decode()


def _decoded(release: str, rel: str) -> list[dict]:
    rc, out, err = _kseg(["dump", "--format", "jsonl", "--decode", "auto", rel], release)
    assert rc == 0, err.decode()
    return [r for r in map(json.loads, out.splitlines()) if r.get("type") == "record"]


def _expected(release: str, family: str) -> set[tuple]:
    """What the release's definitions (its generated schema modules) say the family's segment must
    hold: ("record", record type, value version) for every type and version, and for the metadata
    log ("control", message, 0) for every KRaft control message (the version the broker writes)."""
    module = RELEASES[release]
    table = getattr(module, TABLES[family], None)
    out: set[tuple] = set()
    for rtype, schemas in (table or {}).items():
        value = schemas[1] if isinstance(schemas, tuple) else schemas
        out.update(("record", rtype, v) for v in range(value.valid.lo, value.highest + 1))
    if family == "metadata":
        out.update(("control", name, 0) for name in module.CONTROL)
    return out


def _held(r: dict) -> tuple | None:
    """What a record of the segment is, in _expected's terms (None for a tombstone)."""
    key, value = r.get("key_decoded"), r.get("value_decoded")
    if value is None:
        return None
    if r.get("control"):
        return ("control", value["schema"], value["version"])
    if key is not None:  # a coordinator record: the key's version is its record type
        version = value["version"]
        if version is None and value.get("raw"):  # not read: the value's own int16 version
            version = int.from_bytes(bytes.fromhex(value["raw"][:4]), "big", signed=True)
        return ("record", key["version"], version)
    return ("record", value["type_id"], value["version"])


@pytest.mark.parametrize("release,entry", _segments())
def test_every_record_decodes(release: str, entry: dict) -> None:
    """Every record decodes (no raw part, no note), and the segment holds every type and version the
    release defines."""
    held: set[tuple] = set()
    skip = NOT_DECODED.get((release, entry["family"]), set())
    problems = []
    for r in _decoded(release, entry["file"]):
        what = _held(r)
        if what is not None:
            held.add(what)
        rtype = (r.get("key_decoded") or {}).get("version")
        vversion = (r.get("value_decoded") or {}).get("version")
        if r.get("key_decoded") is not None and ((rtype, None) in skip or (rtype, vversion) in skip):
            continue
        parts = [p for p in (r.get("key_decoded"), r.get("value_decoded")) if p is not None]
        if not parts and not r.get("control"):
            problems.append(f"offset {r['offset']}: not decoded")
        for p in parts:
            notes = [n for n in p.get("notes") or () if not n.startswith(KAFKA_REFUSES)]
            if "raw" in p or notes:
                problems.append(f"offset {r['offset']}: {p.get('schema')} v{p.get('version')}: "
                                f"{p.get('note') or notes}")
    assert problems == []
    missing = _expected(release, entry["family"]) - held
    assert not missing, f"types/versions without a corpus record: {sorted(missing)}"


def test_every_family_has_a_segment() -> None:
    """A family a release defines records for has its segment in the corpus."""
    for release, module in RELEASES.items():
        families = {e["family"] for e in _manifest(release)["entries"]}
        assert families == {f for f, t in TABLES.items() if hasattr(module, t)}, release


@pytest.mark.parametrize("release", list(RELEASES))
def test_state_applies_every_record(release: str) -> None:
    from kseg.ops.state import replay

    root = CORPUS / release
    folders = sorted({root / Path(e["file"]).parent for e in _manifest(release)["entries"]})
    report = replay(folders)
    assert {Path(p.path).name for p in report.partitions} == {f.name for f in folders}
    for ps in report.partitions:
        allowed = NOT_APPLIED.get((release, Path(ps.path).name), ())
        declined = [n for n in ps.notes if n.startswith("offset ")]  # PartitionState.skip's notes
        assert len(declined) == ps.not_applied, ps.notes
        unexpected = [n for n in declined if not any(a in n for a in allowed)]
        assert unexpected == [], ps.path
        assert ps.records > 0, ps.path
