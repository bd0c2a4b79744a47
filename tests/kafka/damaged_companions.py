#!/usr/bin/env python3
"""What the real kafka-dump-log.sh prints on damaged companion files and damaged internal-topic records.

Why: ``tests/kafka/damaged.py`` damages the batch framing of data segments; DumpLogSegments reads more
than that. This corpus, kept apart from that one (``fixtures/kafka-damaged-companions/<release>/``, the
same machinery: :mod:`damaged`'s runner, golden rows and manifest), covers the two other ways its code
meets bad bytes:

* the companion files (:data:`COMPANIONS`, written by Kafka 4.3.1 and 2.8 brokers): offset and time
  indexes (with ``--index-sanity-check`` and ``--verify-index-only`` too: the tool reads the ``.log``
  beside them, so each case gets a copy of the whole partition folder with only the damaged file
  replaced), a producer snapshot, a transaction index, a KRaft snapshot and ``bootstrap.checkpoint``
  (with ``--cluster-metadata-decoder`` too). Each is damaged in each way of :data:`COMPANION_DAMAGE`: a
  byte flipped at each of its first 32 positions, in its middle and at its end, its first byte made 1,
  cuts, garbage after it;
* the internal topics' segments with their decoders (:data:`INTERNAL`: ``--offsets-decoder``,
  ``--transaction-log-decoder``, ``--cluster-metadata-decoder``; and ``--deep-iteration
  --print-data-log`` alone). The damages keep the batch framing whole, so that the decoder meets the bad
  bytes: each byte of the first record's key and value flipped, in the first uncompressed batch of the
  kind :func:`target` picks, and the value's first two bytes (a schema version) set to 0x7fff and
  0xffff. The CRC is left as it is: the tool does not check it when dumping.

Cases are ``<source>-<damage>``; each case's flag combinations are :func:`combos_of` (ids of
``checks.COMBOS``). Each run reads a fresh copy of its case (``damaged.kafka_runs(fresh=True)``): Kafka
4.3.1's tool writes to an offset index it dumps (it cuts the file to whole 8-byte entries when it closes
it, whatever the flags), so a run on a shared copy would see what an earlier run left. The variants are
not stored: :func:`variants` makes them again from the fixtures and each golden row keeps the SHA-256 of
the damaged file.

    python tests/kafka/damaged_companions.py --release 4 --write fixtures/kafka-damaged-companions/4
    python tests/kafka/damaged_companions.py --release 3.9 --write fixtures/kafka-damaged-companions/3.9
    python tests/kafka/damaged_companions.py --release 3.6 --write fixtures/kafka-damaged-companions/3.6
    python tests/kafka/damaged_companions.py --release 2.8 --write fixtures/kafka-damaged-companions/2.8
    python tests/kafka/damaged_companions.py --check fixtures/kafka-damaged-companions/4

``tests/test_kafka_damaged_corpora.py`` holds ``kseg-dump-log`` to the goldens without Java;
``tests/kafka/test_kafka_damaged_live.py`` runs a sample of ``--check`` on the live tier's releases.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402
import checks  # noqa: E402
import clients  # noqa: E402
import damaged  # noqa: E402

FIXTURES = brokers.REPO / "fixtures" / "kafka-damaged-companions"
DEFAULT_RELEASE = damaged.DEFAULT_RELEASE

#: source name -> a companion file a broker wrote (path relative to the repository), non-empty
COMPANIONS: dict[str, str] = {
    "index": "fixtures/kafka-4/logdir/v2-0/00000000000000000040.index",
    "timeindex": "fixtures/kafka-4/logdir/v2-0/00000000000000000040.timeindex",
    "index28": "fixtures/kafka-2.8/logdir/v1-0/00000000000000000042.index",
    "timeindex28": "fixtures/kafka-2.8/logdir/v1-0/00000000000000000042.timeindex",
    "snapshot": "fixtures/kafka-4/logdir/v2-0/00000000000000000104.snapshot",
    "txnindex": "fixtures/kafka-4/logdir/txn-0/00000000000000000015.txnindex",
    "checkpoint": "fixtures/kafka-4/logdir/__cluster_metadata-0/00000000000000000037-0000000001.checkpoint",
    "bootstrap": "fixtures/kafka-4/logdir/bootstrap.checkpoint",
}
#: the suffixes whose dump reads the partition's other files (the .log, and for a time index the .index)
WITH_FOLDER = (".index", ".timeindex")


class Internal(NamedTuple):
    """An internal topic's segment and which batch's first record is damaged."""
    path: str
    control: bool = False  # a control batch's (LeaderChange) instead of a data batch's
    # where in the value its record's version is, where it is not the value's first two bytes (a metadata
    # record's one-byte varint after its frame version and type): set to versions above the record's highest
    record_version_at: int | None = None


#: source name -> an internal topic's segment a Kafka 4.3.1 broker wrote
INTERNAL: dict[str, Internal] = {
    "offsets": Internal("fixtures/kafka-4/logdir/__consumer_offsets-0/00000000000000000000.log"),
    "txnlog": Internal("fixtures/kafka-4/logdir/__transaction_state-0/00000000000000000000.log"),
    # KRaft records have no key: only the value's bytes are flipped
    "metadata": Internal("fixtures/kafka-4/logdir/__cluster_metadata-0/00000000000000000000.log",
                         record_version_at=2),
    # its first batch, a LeaderChange control record (key: version and type), decoded by the same flag
    "leaderchange": Internal("fixtures/kafka-4/logdir/__cluster_metadata-0/00000000000000000000.log", control=True),
}
SOURCES: dict[str, str] = {**COMPANIONS, **{name: internal.path for name, internal in INTERNAL.items()}}

GARBAGE = damaged.GARBAGE
FIRST_BYTES = 32  # a byte flipped at each of these positions


def _flip_at(data: bytes, i: int) -> bytes:
    out = bytearray(data)
    out[i] ^= 0xFF
    return bytes(out)


def _flip(at: Callable[[int], int], only_past: int = 0) -> Callable[[bytes], bytes | None]:
    """xor 0xFF at ``at(len(data))``; None past the end or before ``only_past`` (a position flipped already)."""
    def damage(data: bytes) -> bytes | None:
        i = at(len(data))
        return _flip_at(data, i) if only_past <= i < len(data) else None
    return damage


def _cut(at: Callable[[int], int]) -> Callable[[bytes], bytes]:
    return lambda data: data[:at(len(data))]


#: damage name -> how, for the companion files; the cases are ``<source>-<name>`` where it applies
COMPANION_DAMAGE: dict[str, Callable[[bytes], bytes | None]] = {
    **{f"flip-{i:02d}": _flip(lambda n, i=i: i) for i in range(FIRST_BYTES)},
    # a version's first byte (txnindex, snapshot) or an entry's offset made 1: flips give 0xff, which Kafka
    # reads as a negative version byte; at 1 its readers throw
    "one-00": lambda data: None if not data or data[0] == 1 else b"\x01" + data[1:],
    "flip-middle": _flip(lambda n: n // 2, only_past=FIRST_BYTES),
    "flip-last": _flip(lambda n: n - 1, only_past=FIRST_BYTES),
    "cut-0": _cut(lambda n: 0),
    "cut-odd": _cut(lambda n: n - 1 if n % 2 == 0 else n - 2),  # the largest odd length below the file's
    "cut-half": _cut(lambda n: n // 2),
    "tail-7": lambda data: data + GARBAGE[:7],
    "tail-8": lambda data: data + GARBAGE[:8],
}
#: the value's first two bytes (an offsets or transaction-log value's schema version) set to these
VERSIONS = (0x7FFF, 0xFFFF)


def source_bytes(source: str) -> bytes:
    return (brokers.REPO / SOURCES[source]).read_bytes()


def _uvarint(data: bytes, p: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[p]
        p += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, p
        shift += 7


def _varint(data: bytes, p: int) -> tuple[int, int]:
    raw, p = _uvarint(data, p)
    return (raw >> 1) ^ -(raw & 1), p


class Target(NamedTuple):
    """Where the damaged record's key and value are in the segment (key_at -1: a null key)."""
    batch: int
    key_at: int
    key_len: int
    value_at: int
    value_len: int


def target(data: bytes, control: bool = False) -> Target:
    """The first record of the first uncompressed v2 batch (a control batch if ``control``, else a data
    batch) that has records, its value not null; the record read as v2 lays it out (varints: length,
    attributes, timestampDelta, offsetDelta, keyLength, key, valueLength, value, headers)."""
    for pos, _ in damaged.batches(data):
        attributes = int.from_bytes(data[pos + 21:pos + 23], "big")
        count = int.from_bytes(data[pos + 57:pos + 61], "big")
        if data[pos + 16] != 2 or attributes & 0x07 or bool(attributes & 0x20) != control or count <= 0:
            continue
        _, p = _varint(data, pos + 61)  # length
        p += 1  # attributes
        _, p = _varint(data, p)  # timestampDelta
        _, p = _varint(data, p)  # offsetDelta
        key_len, p = _varint(data, p)
        key_at = p if key_len >= 0 else -1
        p += max(key_len, 0)
        value_len, p = _varint(data, p)
        if value_len >= 2:
            return Target(pos, key_at, max(key_len, 0), p, value_len)
    raise ValueError("no uncompressed batch whose first record has a value")


#: a record version (one varint byte) above any record's highest, which Kafka's reader reads all the same
RECORD_VERSIONS = (1, 100)


def internal_damages(data: bytes, control: bool = False, record_version_at: int | None = None) -> dict[str, bytes]:
    """Damage name -> the damaged segment: each key byte and value byte of :func:`target`'s record flipped
    (``key-NN``, ``value-NN``), its value's first two bytes set to each of :data:`VERSIONS`, and where
    ``record_version_at`` says where its record version is, that set to each of :data:`RECORD_VERSIONS`."""
    t = target(data, control)
    out = {f"key-{i:02d}": _flip_at(data, t.key_at + i) for i in range(t.key_len)}
    out.update({f"value-{i:02d}": _flip_at(data, t.value_at + i) for i in range(t.value_len)})
    for version in VERSIONS:
        out[f"version-{version:04x}"] = data[:t.value_at] + version.to_bytes(2, "big") + data[t.value_at + 2:]
    if record_version_at is not None:
        at = t.value_at + record_version_at
        out.update({f"record-version-{v}": data[:at] + bytes((v,)) + data[at + 1:] for v in RECORD_VERSIONS})
    return out


def variants() -> dict[str, bytes]:
    """``<source>-<damage>`` -> the damaged file, for every source and damage that applies to it."""
    out = {}
    for source in COMPANIONS:
        data = source_bytes(source)
        for name, damage in COMPANION_DAMAGE.items():
            damaged_data = damage(data)
            if damaged_data is not None:
                out[f"{source}-{name}"] = damaged_data
    for source, internal in INTERNAL.items():
        out.update({f"{source}-{name}": d for name, d in internal_damages(
            source_bytes(source), internal.control, internal.record_version_at).items()})
    return out


def source_of(case: str) -> str:
    return case.split("-", 1)[0]


def case_file(case: str) -> str:
    """Where a case is written, relative to the tool's working directory: the file keeps its name and its
    folder's (a partition's, or the log dir's for bootstrap.checkpoint), under a folder of the case's."""
    path = Path(SOURCES[source_of(case)])
    return f"{case}/{path.parent.name}/{path.name}"


def materialise(root: Path, cases: dict[str, bytes] | None = None) -> dict[str, str]:
    """Write the cases (all of :func:`variants` unless given) under ``root``: an index's partition folder is
    copied whole first (the tool reads the .log beside it), then the damaged file written over its own.
    Case -> its file, relative."""
    cases = variants() if cases is None else cases
    for case in cases:
        source = brokers.REPO / SOURCES[source_of(case)]
        if source.suffix in WITH_FOLDER:
            shutil.copytree(source.parent, root / Path(case_file(case)).parent, dirs_exist_ok=True)
    return damaged.materialise(root, cases, file_of=case_file)


def combos_of(case: str) -> list[str]:
    """The flag combinations (ids of ``checks.COMBOS``) a case runs with: those ``checks.combos_for`` gives
    its file but --deep-iteration alone; an internal topic's segment: its decoder and --deep-iteration
    --print-data-log."""
    source = source_of(case)
    if source in INTERNAL:
        return [checks.combos_for(SOURCES[source])[-1], "deep-data"]
    return [c for c in checks.combos_for(SOURCES[source]) if c != "deep"]


def command(case: str, combo: str) -> list[str]:
    """The command line of a run, as stored (the tool's working directory: :func:`materialise`'s root)."""
    return damaged.command(case, combo, file_of=case_file, combos=checks.COMBOS)


def damage_names(cases: dict[str, bytes]) -> list[str]:
    """Every damage name of the cases, in the order they were made."""
    return list(dict.fromkeys(case.split("-", 1)[1] for case in cases))


def sampled(cases: dict[str, bytes]) -> list[tuple[str, str]]:
    """The live tier's sample: one run per damage (:func:`damaged.sampled`), of the flips of an internal
    record only every third byte (those are many: each byte of a key and of a value)."""
    def kept(name: str) -> bool:
        kind, _, at = name.partition("-")
        return kind not in ("key", "value") or int(at) % 3 == 0
    names = [name for name in damage_names(cases) if kept(name)]
    return damaged.sampled(cases, names, SOURCES, combos_of)


def all_runs(cases: dict[str, bytes], sample: bool = False) -> list[tuple[str, str]]:
    """(case, combination) of every run (``sample``: those :func:`sampled` picks)."""
    return sampled(cases) if sample else [(case, combo) for case in sorted(cases) for combo in combos_of(case)]


def about(release: str) -> dict[str, Any]:
    """What ``manifest.json`` says of this corpus."""
    version = brokers.version(release)
    return {
        "made_by": (f"tests/kafka/damaged_companions.py: Kafka {version}'s DumpLogSegments (run as "
                    "kafka-dump-log.sh runs it, tests/kafka/brokers.py) on every variant of variants() with each "
                    "combination of combos_of(), in the folder materialise() wrote them in"),
        "remake": (f"python tests/kafka/damaged_companions.py --release {release} "
                   f"--write fixtures/kafka-damaged-companions/{release}"),
        "check": f"python tests/kafka/damaged_companions.py --check fixtures/kafka-damaged-companions/{release}",
        "sources": {name: {"path": path, "sha256": damaged.sha256(source_bytes(name))}
                    for name, path in SOURCES.items()},
        "damages": {"companions": list(COMPANION_DAMAGE),
                    "internal": ["key-NN", "value-NN", *(f"version-{v:04x}" for v in VERSIONS)]},
        "combos": {combo: checks.COMBOS[combo] for combo in sorted({c for s in SOURCES for c in combos_of(s)})},
        "note": ("the variants are not stored: variants() makes them from the sources; each row's sha256 is its "
                 "damaged file's (an index's partition folder is the source's, copied). Each run read a copy of "
                 "its own (Kafka 4.3.1's tool cuts an offset index it dumps to whole entries). Of a Java stack "
                 f"trace only the first line of stderr is kept. Absolute paths are written as {checks.LOGDIR}/"),
    }


def write(folder: Path, workdir: Path, release: str = DEFAULT_RELEASE) -> list[dict[str, Any]]:
    """Run the release's tool on every variant (written under ``workdir``), keep the goldens in ``folder``."""
    cases = variants()
    rows = damaged.kafka_runs(release, workdir, cases, runs=all_runs(cases), argv_of=command,
                              write_cases=materialise, fresh=True)
    damaged.write_goldens(folder, release, rows, about(release), SOURCES)
    return rows


def check_goldens(folder: Path, workdir: Path | None = None, sample: bool = False) -> list[str]:
    """Run the release of ``folder``'s manifest on every case and combination again (``sample``: those of
    :func:`sampled`) and compare with its goldens."""
    return damaged.check_goldens(folder, workdir, sample, make=variants, runs_of=all_runs, argv_of=command,
                                 write_cases=materialise, fresh=True)


if __name__ == "__main__":
    sys.exit(clients.main(write, check_goldens, __doc__ or "", "kseg-kafka-damaged-companions-",
                          tuple(brokers.RELEASES), DEFAULT_RELEASE))
