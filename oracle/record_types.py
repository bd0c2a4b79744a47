"""Every internal record type at every version, written and dumped by Kafka itself.

For each supported release (the generated modules: 4.4.0 to 4.0.2, 3.9.2, 3.6.2, 2.8.2) and each family of records
the broker writes about itself (the KRaft metadata log with its control records, ``__consumer_offsets``,
``__transaction_state``, ``__share_group_state``, ``__remote_log_metadata``), this writes one
segment holding every record type at every version the release defines (the tables kseg
generated from the release's own message definitions, ``kseg/decoders/generated``), each in a few
variants: nullable fields null and set, tagged fields unset and set, nullable structs absent,
present and empty, arrays empty and not, negative and extreme numbers, non-ASCII and control
characters in strings, and a tombstone per coordinator key.

Python only describes the values, as JSON in the form Kafka's ``*JsonConverter`` reads;
``oracle/java/RecordTypes.java``, compiled against the release's jars, reads each with that
converter (or, for the classes a release generated no converter for, the coordinators' records
before 3.7, with the message's own setters), serialises it with the message class's own ``write``
at the version, frames it as the broker does and appends it with ``MemoryRecordsBuilder``. The
framing, per family:

    metadata, remote-log-metadata   value: MetadataRecordSerde (uvarint frame 1, apiKey, version,
                                    the record); no key. KRaft control records: a control batch
                                    of one record, MemoryRecordsBuilder.append*Message
    offsets, transactions,          key:   int16 record type | key message (at version 0 in 4.x;
    share-group-state                      at the record type in 3.x, where the type was the key's version)
                                    value: int16 version | value message at that version; null: tombstone

The release's ``DumpLogSegments --deep-iteration`` with the family's decoder flag then prints
each segment (a family its tool has no flag for, 3.6's remote log metadata, only Kafka 4.3's
does); its stdout and stderr are the goldens (``fixtures/record-types/<release>/``, with
``manifest.json`` naming each command), which ``tests/test_record_types_corpus.py`` holds
``kseg dump --format kafka`` to without Java.

    python oracle/record_types.py            # (re)write the corpus
    python oracle/record_types.py --check    # DumpLogSegments still prints the committed goldens
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "kafka"))

import brokers  # noqa: E402

from kseg.decoders.generated import MODULES, NEWEST  # noqa: E402
from kseg.decoders.schema import Field, Message, encode, uuid_str  # noqa: E402

CORPUS = REPO / "fixtures" / "record-types"
JAVA = REPO / "oracle" / "java" / "RecordTypes.java"
BUILD = REPO / ".cache" / "record-types"
TIMESTAMP = 1_700_000_000_000

#: release -> its generated schema module
RELEASES = {brokers.NAMES[m.RELEASE]: m for m in reversed(MODULES)}
#: family -> (partition folder, DumpLogSegments flag, the generated table it comes from)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "metadata": ("__cluster_metadata-0", "--cluster-metadata-decoder", "METADATA"),
    "offsets": ("__consumer_offsets-0", "--offsets-decoder", "OFFSETS"),
    "transactions": ("__transaction_state-0", "--transaction-log-decoder", "TRANSACTIONS"),
    "share-group-state": ("__share_group_state-0", "--share-group-state-decoder", "SHARE_STATE"),
    "remote-log-metadata": ("__remote_log_metadata-0", "--remote-log-metadata-decoder", "REMOTE_LOG"),
}
#: KRaft control message -> its ControlRecordType name (MemoryRecordsBuilder.append*Message). The
#: value carries no version: the broker writes ControlRecordUtils.*_CURRENT_VERSION, 0 in both releases.
CONTROL_TYPES = {"LeaderChangeMessage": "LEADER_CHANGE", "SnapshotHeaderRecord": "SNAPSHOT_HEADER",
                 "SnapshotFooterRecord": "SNAPSHOT_FOOTER", "KRaftVersionRecord": "KRAFT_VERSION",
                 "VotersRecord": "KRAFT_VOTERS"}
CONTROL_VERSION = 0
#: 0 the emptiest, 1 the fullest, 2 in between (tagged structs present but empty), 3 as 2 with
#: tagged nullable fields null
VARIANTS = 4

# --------------------------------------------------------------------------- values

# Per primitive type, one value per variant: defaults, extremes and negatives, non-ASCII text.
PRIMITIVE_VALUES: dict[str, tuple[Any, ...]] = {
    "int8": (0, -7, 127),
    "int16": (0, -300, 32767),
    "int32": (0, -70000, 2147483647),
    "int64": (0, -5000000000, 9007199254740993),
    "uint16": (0, 65535, 8080),
    "uint32": (0, 4294967295, 7),
    "float64": (0.0, -1.5e-05, 12345678.9),
    "bool": (False, True, True),
    "uuid": (uuid_str(bytes(16)), uuid_str(bytes(range(1, 17))), uuid_str(bytes(range(255, 239, -1)))),
    "string": ("", "ünï-cødé ✓ \x01\x1f\"\\/ \U0001d11e\u2028", "x"),
    "bytes": ("", base64.b64encode(bytes(range(0, 256, 7))).decode(), base64.b64encode(b"\x00\xff").decode()),
}


def _primitive(type_: str, variant: int, salt: int) -> Any:
    value = PRIMITIVE_VALUES[type_][variant]
    if type_ == "string" and variant == 2:
        return f"x{salt}"
    return value


def field_value(f: Field, version: int, flexible: bool, variant: int, salt: int = 0) -> Any:
    """The value of field ``f`` in ``variant``: 0 the emptiest (nulls, empty arrays), 1 the fullest,
    2 in between (single elements, structs present but empty), 3 as 2 with tagged nullable fields null."""
    if version in f.nullable and variant == 0:
        return None
    if f.type.startswith("[]"):
        elem = f.type[2:]
        if variant == 0:
            return []
        count = 2 if variant == 1 else 1
        out = []
        for i in range(count):
            # elements 1 and 2; one emptiest element; one with tagged nulls
            v = 1 + i if variant == 1 else (0 if variant == 2 else 3)
            if f.fields is not None:
                out.append(struct_value(f.fields, version, flexible, v, salt + i))
            else:
                out.append(_primitive(elem, min(v, 2) if elem != "string" else (1 if i == 0 else 2), salt + i))
        return out
    if f.fields is not None:
        return struct_value(f.fields, version, flexible, 0 if variant == 2 else variant, salt)
    return _primitive(f.type, min(variant, 2), salt)


def struct_value(fields: tuple[Field, ...], version: int, flexible: bool, variant: int, salt: int = 0) -> dict:
    """A struct's JSON in the form Kafka's JsonConverter reads: every field of the version, tagged
    fields only in the variants that set them."""
    out: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if f.is_tagged_in(version, flexible):
            if variant == 0:
                continue
            if variant == 3 and version in f.nullable:
                out[f.json_name] = None  # a tagged null: written (and printed) when null is not the default
            else:
                out[f.json_name] = field_value(f, version, flexible, variant, salt + i)
        elif version in f.versions:
            out[f.json_name] = field_value(f, version, flexible, variant, salt + i)
    return out


def message_values(m: Message, version: int, readable_assignments: bool = False) -> list[dict]:
    flexible = version in m.flexible
    return [fixup(m, version, struct_value(m.fields, version, flexible, v, 10 * v), v, readable_assignments)
            for v in range(VARIANTS)]


#: the releases whose offsets decoder reads a classic consumer group's assignments by the consumer
#: protocol and stops (an exception) at one it cannot read: their corpus gives every such member a
#: readable assignment and holds one unreadable one, in the segment's last record
ASSIGNMENT_READERS = ("2.8", "3.6")


def fixup(m: Message, version: int, data: dict, variant: int, readable_assignments: bool = False) -> dict:
    """Values a field's meaning restricts, where a generic value would only exercise one error
    line: a transaction's state, a classic consumer group's protocol bytes, tiered storage's states."""
    if m.name == "TransactionLogValue":
        data["transactionStatus"] = (0, 1, 4, 2)[variant]  # Empty, Ongoing, CompleteCommit
    if m.name == "GroupMetadataValue":
        data["protocolType"] = ("", "consumer", "consumer", "other")[variant]
        if variant == 1:  # what a classic consumer sends: the consumer protocol's own messages
            sub, asg = NEWEST.CONSUMER_PROTOCOL["ConsumerProtocolSubscription"], NEWEST.CONSUMER_PROTOCOL[
                "ConsumerProtocolAssignment"]
            for i, member in enumerate(data["members"]):
                sv, av = (sub.highest, asg.highest) if i == 0 else (0, 0)
                member["subscription"] = _b64(sv.to_bytes(2, "big") + encode(sub, struct_value(
                    sub.fields, sv, sv in sub.flexible, 1), sv))
                member["assignment"] = _b64(av.to_bytes(2, "big") + encode(asg, struct_value(
                    asg.fields, av, av in asg.flexible, 1), av))
        elif readable_assignments and data["protocolType"] == "consumer":  # version 0, nothing assigned
            asg = NEWEST.CONSUMER_PROTOCOL["ConsumerProtocolAssignment"]
            for member in data["members"]:
                member["assignment"] = _b64(bytes(2) + encode(asg, struct_value(asg.fields, 0, False, 0), 0))
    if m.name.startswith("Remote"):
        if variant == 1 and "startOffset" in data:  # one valid segment with every field set
            data["startOffset"], data["endOffset"] = 5, 9
        for key in ("remoteLogSegmentState", "remotePartitionDeleteState"):
            if key in data:
                data[key] = (0, 1, 2, 3 if key == "remoteLogSegmentState" else 1)[variant]
    return data


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# --------------------------------------------------------------------------- the specs


def class_index(release: str) -> dict[str, str]:
    """Message name -> the fully-qualified name of its generated class in the release's jars: one
    with a JsonConverter, else (a release that generated none for it) the class of that name in a
    package of generated messages."""
    names = {m.name for table in _tables(RELEASES[release]) for value in table.values()
             for m in (value if isinstance(value, tuple) else (value,))}
    out: dict[str, str] = {}
    plain: dict[str, str] = {}
    for jar in sorted(brokers.fetch(release).glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if "$" in name or not name.endswith(".class"):
                    continue
                fq = name[: -len(".class")].replace("/", ".")
                if fq.endswith("JsonConverter"):
                    fq = fq[: -len("JsonConverter")]
                    out.setdefault(fq.rsplit(".", 1)[1], fq)
                elif fq.rsplit(".", 1)[1] in names and (".generated." in fq or ".common.message." in fq):
                    plain.setdefault(fq.rsplit(".", 1)[1], fq)
    return {**plain, **out}


def _tables(module: Any) -> list[dict]:
    return [getattr(module, t) for t in (*(f[2] for f in FAMILIES.values()), "CONTROL") if hasattr(module, t)]


def family_spec(release: str, family: str, classes: dict[str, str]) -> dict | None:
    """The batches of one family's segment for RecordTypes.java; None if the release has no such family."""
    module = RELEASES[release]
    table = getattr(module, FAMILIES[family][2], None)
    if table is None:
        return None
    batches: list[dict] = []
    if family in ("metadata", "remote-log-metadata"):
        for api_key, m in table.items():
            for version in range(m.valid.lo, m.highest + 1):
                batches.append({"records": [{"key": None, "value": [
                    {"metadata": classes[m.name], "version": version, "json": data}]}
                    for data in message_values(m, version)]})
        if family == "metadata":
            for name, control in CONTROL_TYPES.items():
                if name not in module.CONTROL:  # 2.8 has the leader change only, 3.x the snapshots' too
                    continue
                m = module.CONTROL[name]
                for data in message_values(m, CONTROL_VERSION):
                    batches.append({"control": control, "class": classes[name], "json": data})
        return {"timestamp": TIMESTAMP, "batches": batches}
    readable = family == "offsets" and release in ASSIGNMENT_READERS
    last = None
    for rtype, (key, value) in table.items():
        kv = rtype if rtype in key.valid else 0
        keys = [[{"int16": rtype}, {"class": classes[key.name], "version": kv, "json": data}]
                for data in message_values(key, kv)]
        records = []
        for version in range(value.valid.lo, value.highest + 1):
            for i, data in enumerate(message_values(value, version, readable)):
                records.append({"key": keys[i], "value": [{"int16": version},
                                                          {"class": classes[value.name], "version": version,
                                                           "json": data}]})
        records.append({"key": keys[1], "value": None})  # a tombstone
        batches.append({"records": records})
        if readable and value.name == "GroupMetadataValue":  # a member's empty assignment (before the first sync)
            data = message_values(value, value.highest)[2]
            last = {"records": [{"key": keys[2], "value": [{"int16": value.highest}, {
                "class": classes[value.name], "version": value.highest, "json": data}]}]}
    return {"timestamp": TIMESTAMP, "batches": batches + ([last] if last else [])}


# --------------------------------------------------------------------------- running Kafka


def compile_writer(release: str) -> Path:
    """RecordTypes.java compiled against the release's jars (cached under .cache/record-types)."""
    out = BUILD / release
    line = tuple(map(int, brokers.version(release).split(".")[:2]))
    package = "org.apache.kafka.common.record.internal" if line >= (4, 3) else "org.apache.kafka.common.record"
    compression = "org.apache.kafka.common.compress.Compression.NONE" if line >= (3, 8) else "CompressionType.NONE"
    source = JAVA.read_text().replace("RECORD_PACKAGE", package).replace("COMPRESSION_NONE", compression)
    stamp = out / "source.java"
    if stamp.is_file() and stamp.read_text() == source and (out / "RecordTypes.class").is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "RecordTypes.java").write_text(source)
    lib = brokers.fetch(release)
    subprocess.run(["javac", "-nowarn", "-cp", f"{lib}/*", "-d", str(out), str(out / "RecordTypes.java")], check=True)
    stamp.write_text(source)
    return out


def write_segment(release: str, spec: dict, log: Path) -> None:
    classes = compile_writer(release)
    lib = brokers.fetch(release)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(spec, f, ensure_ascii=False)
        f.flush()
        log.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["java", *brokers.QUICK_START_OPTS, "-cp", f"{lib}/*:{classes}", "RecordTypes",
                               f.name, str(log)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"RecordTypes failed for {log}:\n{proc.stdout}{proc.stderr}")


def dump_command(family: str, rel: str) -> list[str]:
    return ["--files", rel, "--deep-iteration", FAMILIES[family][1]]


def dump(tool: str, family: str, root: Path, rel: str) -> dict:
    """Run the ``tool`` release's DumpLogSegments on ``rel`` with the family's decoder."""
    args = dump_command(family, rel)
    rc, out, err = brokers.dump_log_segments(tool, *args, cwd=root)
    return {"exit": rc, "command": ["kafka-dump-log.sh", *args], "stdout": out, "stderr": err}


LOG = "00000000000000000000.log"


#: the older tools that print a newer release's records too (what each makes of the records and fields
#: later releases added, which ``--kafka-version`` reproduces from that release's definitions; 2.8's on
#: 3.6's: metadata records of a frame version it does not read, control types it does not know)
OLDER_TOOLS = {"4.4": ["4.0", "4.1", "4.2"], "3.6": ["2.8"]}


#: the release whose corpus only its own tool prints (4.3.1's, the "4" whose tool prints the others')
OWN_TOOL_ONLY = ("4",)
#: release -> the families its DumpLogSegments has no decoder flag for (3.6 defines remote log metadata
#: records but its tool has no --remote-log-metadata-decoder: only Kafka 4.3's prints that segment)
NO_FLAG = {"3.6": ("remote-log-metadata",)}


def tools_for(release: str, family: str) -> list[str]:
    """The releases whose DumpLogSegments prints a release's segment of ``family``: its own (unless
    it has no flag for the family), Kafka 4.3's on the others' records (what a newer tool makes of an
    upgraded cluster's old records; what an older tool makes of the records and fields a newer
    release added), and ``OLDER_TOOLS``'."""
    if family in NO_FLAG.get(release, ()):
        return ["4"]
    return [release] if release in OWN_TOOL_ONLY else [release, "4", *OLDER_TOOLS.get(release, [])]


def golden_name(release: str, tool: str, family: str, kind: str) -> str:
    folder = "golden" if tool == release else f"golden-kafka-{tool}"
    return f"{folder}/{family}.{kind}"


def generate(releases: list[str]) -> None:
    for release in releases:
        root = CORPUS / release
        shutil.rmtree(root, ignore_errors=True)
        classes = class_index(release)
        entries = []
        for family, (folder, _flag, _table) in FAMILIES.items():
            spec = family_spec(release, family, classes)
            if spec is None:
                continue
            rel = f"{folder}/{LOG}"
            write_segment(release, spec, root / rel)
            for tool in tools_for(release, family):
                entries.append(golden_entry(release, tool, family, rel))
                print(f"{release} {family} (tool {tool}): {len(spec['batches'])} batches, exit {entries[-1]['exit']}")
        _write_manifest(release, entries)


def golden_entry(release: str, tool: str, family: str, rel: str) -> dict:
    """The ``tool`` release's DumpLogSegments on the corpus's segment ``rel``, kept as goldens."""
    root = CORPUS / release
    result = dump(tool, family, root, rel)
    entry = {"family": family, "file": rel, "release": tool, "kafka_version": brokers.version(tool),
             "main_class": brokers.RELEASES[tool][1], "command": result["command"], "exit": result["exit"]}
    for kind in ("stdout", "stderr"):
        path = root / golden_name(release, tool, family, kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(result[kind])
        entry[kind] = golden_name(release, tool, family, kind)
    return entry


def _write_manifest(release: str, entries: list[dict]) -> None:
    manifest = {"release": release, "kafka_version": brokers.version(release),
                "generator": "oracle/record_types.py", "entries": entries}
    (CORPUS / release / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def add_tools(releases: list[str]) -> None:
    """The goldens of ``tools_for``'s tools a committed corpus does not have yet, its segments kept."""
    for release in releases:
        entries = json.loads((CORPUS / release / "manifest.json").read_text())["entries"]
        have = {(e["release"], e["family"]) for e in entries}
        for e in list({e["family"]: e for e in entries}.values()):
            for tool in tools_for(release, e["family"]):
                if (tool, e["family"]) not in have:
                    entries.append(golden_entry(release, tool, e["family"], e["file"]))
                    print(f"{release} {e['family']} (tool {tool}): exit {entries[-1]['exit']}")
        _write_manifest(release, entries)


def _untimed(output: bytes) -> bytes:
    """The output without the time of the warnings the tool logs (2.8 and 3.6's offsets decoder logs
    the subscriptions it cannot read)."""
    return re.sub(rb"(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] ", b"[time] ", output)


def check(releases: list[str]) -> list[str]:
    """Re-run DumpLogSegments on the committed segments; the goldens that no longer match."""
    problems = []
    for release in releases:
        root = CORPUS / release
        manifest = json.loads((root / "manifest.json").read_text())
        for e in manifest["entries"]:
            result = dump(e["release"], e["family"], root, e["file"])
            for kind in ("stdout", "stderr"):
                if _untimed(result[kind]) != _untimed((root / e[kind]).read_bytes()):
                    problems.append(f"{release} {e['file']} (Kafka {e['kafka_version']}): {kind} differs")
            if result["exit"] != e["exit"]:
                problems.append(f"{release} {e['file']} (Kafka {e['kafka_version']}): exit {result['exit']}, "
                                f"expected {e['exit']}")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="re-run DumpLogSegments on the committed corpus")
    p.add_argument("--add-tools", action="store_true",
                   help="add the goldens of tools_for's tools that a committed corpus lacks, its segments kept")
    p.add_argument("releases", nargs="*", default=list(RELEASES))
    args = p.parse_args(argv)
    if args.check:
        problems = check(args.releases)
        print("\n".join(problems) or "the committed goldens are what DumpLogSegments prints")
        return 1 if problems else 0
    if args.add_tools:
        add_tools(args.releases)
        return 0
    generate(args.releases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
