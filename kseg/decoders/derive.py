"""Derives kseg's decoder tables (``kseg.decoders.generated``) from Kafka's own message
definitions, so that they cannot drift from Kafka.

Every record Kafka writes to its internal topics is described by a JSON file (with ``//``
comments) shipped inside its jars: ``common/message/*.json`` (KRaft control records and the
consumer protocol in ``kafka-clients``; the group, transaction and share coordinators'
records), ``common/metadata/*.json`` (``kafka-metadata``), ``message/Remote*.json``
(``kafka-storage``). ``make schemas`` fetches the jars of each supported release from Maven
Central into ``.cache/schemas/<release>`` (``mvn dependency:copy-dependencies``), reads the
definitions and writes one module per release, ``generated/kafka_<release>.py``, of
``M(...)``/``F(...)`` tables (``schema.py``), one per family. ``--check`` (and
tests/test_decoder_schemas.py) fails when a committed module differs from what the jars say.

This module does I/O and runs mvn; the decoders never import it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = HERE / "generated"
CACHE = REPO / ".cache" / "schemas"

#: the jars of a 4.x release's record definitions (the share coordinator has its own from 4.0)
_4X = ("kafka-clients", "kafka-metadata", "kafka-group-coordinator", "kafka-transaction-coordinator",
       "kafka-share-coordinator", "kafka-storage")
# release -> the artifacts (org.apache.kafka, jar) that hold its record definitions; the newest patch
# release of each supported line (the decoders name the ones they read: generated/__init__.py). Before
# 3.9 the transaction coordinator's records (and before 3.5 the group coordinator's) are defined in the
# broker's own jar, kafka_2.13 (kafka.internals.generated); 2.8 defines no remote log metadata records.
RELEASES: dict[str, tuple[str, ...]] = {
    "2.8.2": ("kafka-clients", "kafka-metadata", "kafka_2.13"),
    "3.6.2": ("kafka-clients", "kafka-metadata", "kafka-group-coordinator", "kafka_2.13", "kafka-storage"),
    "3.9.2": ("kafka-clients", "kafka-metadata", "kafka-group-coordinator", "kafka-transaction-coordinator",
              "kafka-storage"),
    "4.0.2": _4X,
    "4.1.2": _4X,
    "4.2.2": _4X,
    "4.3.1": _4X,
    "4.4.0": _4X,
}

# The KRaft control records and the consumer protocol (kafka-clients), by file name.
CONTROL = ("LeaderChangeMessage", "SnapshotHeaderRecord", "SnapshotFooterRecord", "KRaftVersionRecord",
           "VotersRecord")
CONSUMER_PROTOCOL = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment")
# jar -> family of its coordinator records; the broker's jar (kafka_2.13) held the transaction log's
# records and, before the group coordinator had its own jar, __consumer_offsets' too
COORDINATOR_FAMILY = {"kafka-group-coordinator": "OFFSETS", "kafka-transaction-coordinator": "TRANSACTIONS",
                      "kafka-share-coordinator": "SHARE_STATE"}
CORE = "kafka_2.13"
#: every family of a module, with what its records are (the docstring names those a release has no definitions for)
FAMILIES = {"OFFSETS": "__consumer_offsets", "TRANSACTIONS": "__transaction_state",
            "SHARE_STATE": "__share_group_state", "CONTROL": "KRaft control records",
            "METADATA": "KRaft metadata", "REMOTE_LOG": "__remote_log_metadata"}


def coordinator_definitions(found: dict[str, dict[str, dict]]) -> dict[str, dict[str, dict]]:
    """family -> the definitions of its coordinator records, from whichever jars hold them."""
    out: dict[str, dict[str, dict]] = {}
    for jar, defs in found.items():
        for name, spec in defs.items():
            if jar == CORE:
                family = "TRANSACTIONS" if name.startswith("TransactionLog") else "OFFSETS"
            elif jar in COORDINATOR_FAMILY:
                family = COORDINATOR_FAMILY[jar]
            else:
                continue
            out.setdefault(family, {})[name] = spec
    return out


class Unavailable(Exception):
    """The jars are not cached and cannot be fetched (no java or mvn, no network)."""


# --------------------------------------------------------------------------- fetching


def _pom(release: str) -> str:
    deps = "".join(f"<dependency><groupId>org.apache.kafka</groupId><artifactId>{a}</artifactId>"
                   f"<version>{release}</version></dependency>" for a in RELEASES[release])
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            f"<groupId>kseg.schemas</groupId><artifactId>kafka-{release}</artifactId><version>1</version>"
            f"<dependencies>{deps}</dependencies></project>\n")


def jars(release: str, cache: Path = CACHE, fetch: bool = True) -> dict[str, Path]:
    """artifact -> jar of ``release``, fetched by Maven into ``cache`` on first use."""
    lib = cache / release / "lib"
    pom = _pom(release)
    stamp = cache / release / "fetched"
    digest = hashlib.sha256(pom.encode()).hexdigest()
    if not (stamp.exists() and stamp.read_text() == digest):
        if not fetch:
            raise Unavailable(f"the jars of Kafka {release} are not in {cache}")
        if not (shutil.which("java") and shutil.which("mvn")):
            raise Unavailable("fetching Kafka's jars needs java and mvn")
        shutil.rmtree(lib, ignore_errors=True)
        (cache / release).mkdir(parents=True, exist_ok=True)
        (cache / release / "pom.xml").write_text(pom)
        proc = subprocess.run(["mvn", "-q", "-B", "-f", str(cache / release / "pom.xml"),
                               "dependency:copy-dependencies", "-DexcludeTransitive=true",
                               f"-DoutputDirectory={lib}"], capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-10:])
            raise Unavailable(f"mvn could not fetch Kafka {release}:\n{tail}")
        stamp.write_text(digest)
    return {a: lib / f"{a}-{release}.jar" for a in RELEASES[release]}


# --------------------------------------------------------------------------- reading


def strip_comments(text: str) -> str:
    """The JSON without its ``//`` comments (Kafka reads them with Jackson's ALLOW_COMMENTS);
    a ``//`` inside a string stays."""
    out: list[str] = []
    i, n, in_str = 0, len(text), False
    while i < n:
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def definitions(jar: Path) -> dict[str, dict]:
    """name -> the parsed definition of every record JSON in ``jar`` (not requests/responses)."""
    out: dict[str, dict] = {}
    with zipfile.ZipFile(jar) as z:
        for entry in sorted(z.namelist()):
            if not entry.endswith(".json") or entry.endswith(("Request.json", "Response.json")):
                continue
            if not entry.startswith(("common/message/", "common/metadata/", "message/")):
                continue
            spec = json.loads(strip_comments(z.read(entry).decode("utf-8")))
            if spec.get("type") == "header":
                continue
            spec["_source"] = f"{jar.name}!{entry}"
            out[spec["name"]] = spec
    return out


# --------------------------------------------------------------------------- writing


def _field(f: dict, structs: dict[str, dict], indent: str) -> str:
    args = [repr(f["name"]), repr(f["type"])]
    if "versions" in f:
        args.append(repr(f["versions"]))
    for key, kw in (("nullableVersions", "nullable"), ("taggedVersions", "tagged")):
        if key in f:
            args.append(f"{kw}={f[key]!r}")
    if "tag" in f:  # some files write it as a string; Jackson reads it as an Integer
        args.append(f"tag={int(f['tag'])}")
    if f.get("default") is not None:  # JSON null: no default (Kafka's FieldSpec)
        args.append(f"default={f['default']!r}")
    sub = f.get("fields")
    base = f["type"][2:] if f["type"].startswith("[]") else f["type"]
    if sub is None and base in structs:
        sub = structs[base]["fields"]
    if sub is not None:
        inner = "".join(f"{indent}    {_field(s, structs, indent + '    ')},\n" for s in sub)
        args.append(f"fields=(\n{inner}{indent})")
    return f"F({', '.join(args)})"


def _message(spec: dict, api_key: int | None = None) -> str:
    structs = {s["name"]: s for s in spec.get("commonStructs", ())}
    head = [repr(spec["name"]), repr(spec["validVersions"]), repr(spec.get("flexibleVersions", "none"))]
    body = "".join(f"    {_field(f, structs, '    ')},\n" for f in spec.get("fields", ()))
    key = "" if api_key is None else f"    api_key={api_key},\n"
    return f"M({', '.join(head)},\n{body}{key})"


def _versions(text: str) -> range:
    text = text.strip()
    lo, sep, hi = text.partition("-")
    return range(int(lo), int(hi) + 1 if sep else int(lo) + 1)


def coordinator_types(defs: dict[str, dict]) -> dict[int, tuple[str, str]]:
    """record type -> (key name, value name): 4.x gives it as ``apiKey``, 3.9 as the key's
    validVersions (the key's version was the record type)."""
    out: dict[int, tuple[str, str]] = {}
    for name, spec in defs.items():
        if not name.endswith("Key") or name[:-3] + "Value" not in defs:
            continue
        if "apiKey" in spec:
            out[spec["apiKey"]] = (name, name[:-3] + "Value")
        else:
            for t in _versions(spec["validVersions"]):
                out[t] = (name, name[:-3] + "Value")
    return dict(sorted(out.items()))


def render(release: str, found: dict[str, dict[str, dict]]) -> str:
    """The module for ``release`` from ``found``: artifact -> its definitions."""
    coordinators = coordinator_definitions(found)
    clients = found["kafka-clients"]
    remote = [s for s in found.get("kafka-storage", {}).values() if s["name"].startswith("Remote")]
    present = {*coordinators, "METADATA", *(("CONTROL",) if any(n in clients for n in CONTROL) else ()),
               *(("REMOTE_LOG",) if remote else ())}
    absent = [f"{name} ({what})" for name, what in FAMILIES.items() if name not in present]
    lines = [
        f'"""Kafka {release}\'s record schemas, GENERATED by ``python -m kseg.decoders.derive``',
        "(``make schemas``) from the JSON message definitions in these jars; do not edit:",
        "",
        *(f"    org.apache.kafka:{a}:{release}" for a in found),
        *(("", f"Kafka {release}'s jars define no records of these families, so this module has no table for",
           "them: " + ", ".join(absent) + ".") if absent else ()),
        '"""',
        "",
        "# fmt: off",
        "from kseg.decoders.schema import F, M, Message",
        "",
        f"RELEASE = {release!r}",
        "",
    ]

    def table(name: str, doc: str, entries: list[tuple[Any, str]], pairs: bool = False) -> None:
        kind = "tuple[Message, Message]" if pairs else "Message"
        key_t = "str" if entries and isinstance(entries[0][0], str) else "int"
        lines.append(f"# {doc}")
        lines.append(f"{name}: dict[{key_t}, {kind}] = {{")
        for k, text in entries:
            lines.append("    " + f"{k!r}: {text},".replace("\n", "\n    "))
        lines.append("}")
        lines.append("")

    for family in ("OFFSETS", "TRANSACTIONS", "SHARE_STATE"):
        defs = coordinators.get(family)
        if defs is None:
            continue
        entries = []
        for t, (k, v) in coordinator_types(defs).items():
            pair = ",\n".join(_message(defs[n]) for n in (k, v)).replace("\n", "\n    ")
            entries.append((t, f"(\n    {pair},\n)"))
        table(family, "record type (the key's int16) -> (key schema, value schema)", entries, pairs=True)
    table("CONTROL", "KRaft control records, by name (the control type is ControlRecordType's)",
          [(n, _message(clients[n])) for n in CONTROL if n in clients])
    table("CONSUMER_PROTOCOL", "the classic consumer protocol a GroupMetadataValue member carries",
          [(n, _message(clients[n])) for n in CONSUMER_PROTOCOL if n in clients])
    meta = found["kafka-metadata"]
    table("METADATA", "metadata record type (apiKey) -> schema",
          [(s["apiKey"], _message(s, s["apiKey"])) for s in sorted(meta.values(), key=lambda s: s["apiKey"])])
    if remote:
        table("REMOTE_LOG", "remote log metadata record type (apiKey) -> schema",
              [(s["apiKey"], _message(s, s["apiKey"])) for s in sorted(remote, key=lambda s: s["apiKey"])])
    return "\n".join(lines)


def module_name(release: str) -> str:
    return "kafka_" + release.replace(".", "_")


def generate(cache: Path = CACHE, fetch: bool = True) -> dict[str, str]:
    """file name -> text of every generated module."""
    out: dict[str, str] = {}
    for release in RELEASES:
        found = {a: definitions(j) for a, j in jars(release, cache, fetch).items()}
        out[module_name(release) + ".py"] = render(release, found)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed modules, write nothing")
    ap.add_argument("--out", type=Path, default=OUT, help="where to write (default: %(default)s)")
    args = ap.parse_args(argv)
    try:
        modules = generate()
    except Unavailable as e:
        print(f"derive: {e}", file=sys.stderr)
        return 2
    stale = [n for n, text in modules.items() if not (args.out / n).exists() or (args.out / n).read_text() != text]
    if args.check:
        for n in stale:
            print(f"derive: {args.out / n} differs from Kafka's definitions (run make schemas)", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for n, text in modules.items():
        (args.out / n).write_text(text)
        print("wrote", args.out / n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
