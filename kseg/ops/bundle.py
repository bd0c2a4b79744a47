"""The ``bundle`` operation: what a support case needs from a log directory, in one ``.tar.gz``.

Taken: the partitions of the named topics (every segment, or only those covering an offset
or time window, each with its companions), the ``__consumer_offsets`` partition holding a
named group and the ``__transaction_state`` partition of a transactional id (the
coordinator lookup ``kseg state --coordinator-of`` makes), the KRaft metadata log, and the
log directory's own files (checkpoints, ``meta.properties``). With no topic, group or
transactional id named, every partition. The archive holds ``<logdir name>/...`` as on
disk, so every kseg command reads it in place, and ``kseg-bundle.json`` beside it: what was
taken, from where, sizes, SHA-256, the kseg version, the selection and the redaction.

Redaction (``kseg.ops.redact``) applies to the records of ordinary topics: their segments
are rebuilt with redacted records and their ``.index``/``.timeindex`` rebuilt from the new
bytes; offsets, timestamps and counts do not move, so ``.txnindex`` and snapshots are kept.
Internal topics are kept as they are: their records are the broker's own bookkeeping
(group offsets, transaction states, cluster metadata) that the case is about; but the
metadata log's secrets (``kseg.decoders.secrets``: SCRAM keys, delegation token ids,
sensitive configuration values) are hidden unless ``show_secrets``, in its segments,
snapshots and ``bootstrap.checkpoint``, by rebuilding the batches that hold any.

Rules: the archive is written under a temporary name and published only when complete and
only if every input is still as it was read (``kseg.log.identity``); an existing output is
replaced only with ``force``, and never one kseg did not find at the start. Nothing prints.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from kseg.companions.build import Append, build_indexes
from kseg.decoders import FAMILY
from kseg.defaults import DEFAULT_COORDINATOR_PARTITIONS, DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import InputError
from kseg.log import identity
from kseg.log.atomic import TMP_SUFFIX, AtomicFile, check_output
from kseg.log.listing import (
    BOOTSTRAP_FILE,
    CHECKPOINT_SUFFIX,
    INDEX_SUFFIX,
    INDEX_SUFFIXES,
    LIVE,
    LOG_DIR,
    LOG_DIRS,
    LOG_SUFFIX,
    LOOSE,
    PARTITION,
    TIME_INDEX_SUFFIX,
    TRANSIENT_SUFFIXES,
    list_input,
    parse_partition_dir,
    replica_kind,
    writer_partition_folders,
)
from kseg.log.segment import Segment, base_offset_of, strict_batches
from kseg.ops.redact import METHOD, Redactor, hide_batch_secrets
from kseg.ops.state import coordinator_partition

MANIFEST = "kseg-bundle.json"
BUNDLE_SUFFIXES = (".tar.gz", ".tgz")
OFFSETS_TOPIC, TXN_TOPIC, METADATA_TOPIC = (FAMILY[f].topic for f in ("offsets", "transactions", "metadata"))
# Segment files and what is named after a segment (left out with their segment by a window).
SEGMENT_SUFFIXES = (LOG_SUFFIX, *INDEX_SUFFIXES)
# Names the broker gives files it is taking away, and kseg's own temporaries: never evidence.
SKIPPED_SUFFIXES = (*TRANSIENT_SUFFIXES, TMP_SUFFIX)
HIDDEN_SECRETS = ("hidden: SCRAM salts and keys, delegation token ids and sensitive configuration values in the "
                  "KRaft metadata log, its snapshots and bootstrap.checkpoint replaced by [hidden] (the files "
                  "holding any rebuilt and marked redacted)")
SHOWN = "kept: the metadata log taken as it is (--show-secrets)"
GZIP_LEVEL = 6


@dataclass(frozen=True)
class BundleOptions:
    topics: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()
    coordinator_partitions: int = DEFAULT_COORDINATOR_PARTITIONS
    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    redactor: Redactor | None = None
    key_given: bool = False
    show_secrets: bool = False
    force: bool = False
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES

    @property
    def window(self) -> bool:
        return any(v is not None for v in (self.from_offset, self.to_offset, self.from_time, self.to_time))


@dataclass
class Member:
    """One file of the bundle: its name in the archive, where it came from, what it holds."""

    name: str
    source: str
    size: int
    sha256: str
    source_size: int
    redacted: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "size": self.size, "sha256": self.sha256,
                "source_size": self.source_size, "redacted": self.redacted}


@dataclass
class BundleReport:
    output: str
    source: str
    selection: dict[str, Any]
    redaction: dict[str, Any] | None
    members: list[Member] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    size: int = 0  # the archive's
    secrets: str = ""  # what was done with the metadata log's secrets

    def manifest(self) -> dict[str, Any]:
        from importlib.metadata import version  # stdlib, late: only a bundle needs it

        return {"kseg_bundle": 1, "kseg_version": version("kseg"),
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "source": self.source,
                "selection": self.selection, "redaction": self.redaction, "secrets": self.secrets,
                "notes": self.notes,
                "files": [m.as_json() for m in self.members]}

    def as_json(self) -> dict[str, Any]:
        return {"output": self.output, "size": self.size, **self.manifest()}


# --------------------------------------------------------------------------- what is taken


@dataclass(frozen=True)
class Take:
    """A file to put in the bundle; ``redact``: a segment whose records are redacted;
    ``secrets``: a metadata-log file (segment, snapshot, bootstrap) whose secrets are hidden.
    A segment written anew gets its ``.index``/``.timeindex`` rebuilt from its new bytes."""

    source: Path
    name: str
    redact: bool = False
    secrets: bool = False


def _partition_folders(root: Path) -> tuple[dict[tuple[str, int], Path], bool]:
    """The live partition folders of a log directory (or the one folder ``root`` is), by
    (topic, partition), and whether ``root`` is itself a partition folder. The same refusals
    as every writer's (``writer_partition_folders``)."""
    shape = list_input(root).shape
    if not isinstance(root, Path) or shape not in (PARTITION, LOG_DIR, LOOSE, LOG_DIRS):
        raise InputError("bundle reads a local log directory (or one partition folder)", file=str(root))
    if shape == PARTITION:
        name = Path(os.path.abspath(root)).name
        return {parse_partition_dir(name) or (name, 0): root}, True
    out = {}
    for p in writer_partition_folders(root):
        tp = parse_partition_dir(p.name) if replica_kind(p.name) == LIVE else None
        if tp is not None:
            out[tp] = p
    return out, False


def _wanted(parts: dict[tuple[str, int], Path], o: BundleOptions, notes: list[str]
            ) -> tuple[dict[tuple[str, int], Path], dict[str, Any]]:
    """The partitions the options name, and the selection as the manifest states it."""
    named = bool(o.topics or o.groups or o.transactional_ids)
    chosen: dict[tuple[str, int], Path] = {}
    for topic in o.topics:
        found = {tp: p for tp, p in parts.items() if tp[0] == topic}
        if not found:
            raise InputError(f"no partition of topic {topic!r} in the log directory")
        chosen.update(found)
    coordinators: dict[str, dict[str, Any]] = {}
    for kind, topic, ids in (("groups", OFFSETS_TOPIC, o.groups), ("transactional_ids", TXN_TOPIC,
                                                                   o.transactional_ids)):
        coordinators[kind] = {}
        for key in ids:
            n = coordinator_partition(key, o.coordinator_partitions)
            coordinators[kind][key] = f"{topic}-{n}"
            if (topic, n) not in parts:
                raise InputError(f"{topic}-{n}, the partition holding {key!r}, is not in this log directory "
                                 f"(its leader's log directory holds it; or give --coordinator-partitions)")
            chosen[(topic, n)] = parts[(topic, n)]
    if not named:
        chosen = dict(parts)
    meta = (METADATA_TOPIC, 0)
    if meta in parts:
        chosen[meta] = parts[meta]
    elif named:
        notes.append(f"{METADATA_TOPIC}-0 is not in this log directory (a ZooKeeper cluster, or not a controller)")
    selection = {"topics": list(o.topics), **coordinators, "coordinator_partitions": o.coordinator_partitions,
                 "from_offset": o.from_offset, "to_offset": o.to_offset, "from_time": o.from_time,
                 "to_time": o.to_time, "partitions": sorted(f"{t}-{n}" for t, n in chosen)}
    return dict(sorted(chosen.items())), selection


def _time_range(log: Path) -> tuple[int, int] | None:
    """(earliest, latest) timestamp a segment's batch headers name, or None when it names none."""
    lo: int | None = None
    hi: int | None = None
    seg = Segment(log)
    for b in seg.batches():
        first = b.base_timestamp if b.magic >= 2 and not b.has_delete_horizon else b.max_timestamp
        for t in (first, b.max_timestamp):
            if t is not None and t >= 0:
                lo = t if lo is None else min(lo, t)
                hi = t if hi is None else max(hi, t)
    return None if lo is None or hi is None else (lo, hi)


def _segments_in_window(logs: list[Path], o: BundleOptions) -> set[Path]:
    """The segments holding offsets or times of the window (a segment holds offsets from its
    base up to the next segment's, Kafka's naming)."""
    kept = set()
    for i, log in enumerate(logs):
        base = base_offset_of(log) or 0
        nxt = base_offset_of(logs[i + 1]) if i + 1 < len(logs) else None
        if o.to_offset is not None and base > o.to_offset:
            continue
        if o.from_offset is not None and nxt is not None and nxt <= o.from_offset:
            continue
        if o.from_time is not None or o.to_time is not None:
            span = _time_range(log)
            if span is None or (o.from_time is not None and span[1] < o.from_time) or (
                    o.to_time is not None and span[0] > o.to_time):
                continue
        kept.add(log)
    return kept


def _skipped(p: Path) -> bool:
    return p.name.startswith(".") or p.name.endswith(SKIPPED_SUFFIXES) or not p.is_file()


def plan(root: Path, o: BundleOptions, notes: list[str]) -> tuple[list[Take], dict[str, Any]]:
    """Every file the bundle takes, in archive order, and the selection."""
    parts, single = _partition_folders(root)
    here = Path(os.path.abspath(root))
    prefix = (here.name if not single else here.parent.name) or "logdir"
    chosen, selection = _wanted(parts, o, notes)
    takes: list[Take] = []
    if not single:
        takes += [Take(p, f"{prefix}/{p.name}", secrets=p.name == BOOTSTRAP_FILE and not o.show_secrets)
                  for p in sorted(root.iterdir()) if not _skipped(p)]
    for (topic, n), folder in chosen.items():
        # Segments first: a redacted segment's indexes are rebuilt from its new bytes.
        files = sorted((p for p in folder.iterdir() if not _skipped(p)), key=lambda p: (p.suffix != LOG_SUFFIX, p.name))
        logs = sorted((p for p in files if p.suffix == LOG_SUFFIX and base_offset_of(p) is not None),
                      key=lambda p: base_offset_of(p) or 0)
        internal = topic.startswith("__")
        fname = Path(os.path.abspath(folder)).name
        kept = _segments_in_window(logs, o) if o.window and not internal else set(logs)
        if logs and not kept:
            notes.append(f"{fname}: no segment covers the window; left out")
            continue
        stems = {p.name.split(".", 1)[0] for p in logs if p not in kept}
        redact = bool(o.redactor) and not internal
        secrets = topic == METADATA_TOPIC and not o.show_secrets
        for p in files:
            if p.suffix in SEGMENT_SUFFIXES and p.name.split(".", 1)[0] in stems:
                continue
            takes.append(Take(p, f"{prefix}/{fname}/{p.name}", redact=redact and p.suffix == LOG_SUFFIX,
                              secrets=secrets and p.suffix in (LOG_SUFFIX, CHECKPOINT_SUFFIX)))
    return takes, selection


# --------------------------------------------------------------------------- writing


def _tarinfo(name: str, size: int, mtime: float) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = int(mtime)
    info.mode = 0o644
    return info


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> tuple[int, str]:
    tar.addfile(_tarinfo(name, len(data), mtime), io.BytesIO(data))
    return len(data), hashlib.sha256(data).hexdigest()


class _HashingReader(io.RawIOBase):
    """Reads ``size`` bytes of ``f``, hashing them on the way (a file that shrank is an error)."""

    def __init__(self, f: BinaryIO, size: int, path: Path) -> None:
        self.f, self.left, self.path = f, size, path
        self.sha = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        if len(data) < n:
            raise identity.InputChangedError(f"the file shrank during the run: {identity.NOTHING_WRITTEN}",
                                             file=str(self.path))
        self.left -= len(data)
        self.sha.update(data)
        return data


def _add_file(tar: tarfile.TarFile, name: str, f: BinaryIO, size: int, mtime: float, path: Path) -> str:
    """Stream ``size`` bytes of ``f`` into the archive as ``name``; their SHA-256."""
    reader = _HashingReader(f, size, path)
    tar.addfile(_tarinfo(name, size, mtime), reader)  # type: ignore[arg-type]
    return reader.sha.hexdigest()


def _copy(tar: tarfile.TarFile, take: Take) -> Member:
    with open(take.source, "rb") as f:
        st = os.fstat(f.fileno())
        identity.opened(take.source, st)
        sha = _add_file(tar, take.name, f, st.st_size, st.st_mtime, take.source)
    return Member(take.name, os.path.abspath(take.source), st.st_size, sha, st.st_size)


def bundle(root: Path, output: Path, o: BundleOptions) -> BundleReport:
    """Write the bundle of ``root`` to ``output`` (see the module comment)."""
    if not str(output).endswith(BUNDLE_SUFFIXES):
        raise InputError(f"the bundle's name must end in {' or '.join(BUNDLE_SUFFIXES)} (kseg reads it in place "
                         "by its name)", file=str(output))
    notes: list[str] = []
    takes, selection = plan(root, o, notes)
    check_output([root], output, force=o.force)
    r = o.redactor
    redaction = None if not r else {
        "fields": sorted(r.record_fields), "method": METHOD,
        "key": "given (--redact-key)" if o.key_given else "random, used for this bundle only and not stored",
        "applies_to": "records of ordinary topics; internal topics (__*) are kept as they are but for the "
                      "metadata log's secrets (see secrets)",
        "indexes": "rebuilt from the redacted segments"}
    report = BundleReport(str(output), os.path.abspath(root), selection, redaction, notes=notes,
                          secrets=SHOWN if o.show_secrets else HIDDEN_SECRETS)
    with identity.watching():
        out = AtomicFile(output)
        try:
            with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=GZIP_LEVEL, mtime=0) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                _write_members(tar, takes, o, report)
                manifest = json.dumps(report.manifest(), indent=2).encode() + b"\n"
                _add_bytes(tar, MANIFEST, manifest, time.time())
            identity.require_unchanged()  # what is in the bundle is what the inputs still hold
            out.commit()
        except BaseException:
            out.abort()
            raise
    report.size = out.size
    return report


def _write_members(tar: tarfile.TarFile, takes: list[Take], o: BundleOptions, report: BundleReport) -> None:
    rebuilt: dict[str, tuple[bytes, bytes]] = {}  # a rewritten segment's stem -> (.index, .timeindex)
    for take in takes:
        stem, suffix = take.name.rsplit(".", 1)[0], take.source.suffix
        source = os.path.abspath(take.source)
        try:
            if stem in rebuilt and suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                st = os.stat(take.source)
                size, sha = _add_bytes(tar, take.name, rebuilt[stem][suffix != INDEX_SUFFIX], st.st_mtime)
                report.members.append(Member(take.name, source, size, sha, st.st_size, True))
                continue
            with tempfile.TemporaryFile() as spool:  # anonymous: nothing left behind, whatever ends the run
                new = _rewrite(take, o, spool) if take.redact or take.secrets else None
                if new is None:
                    report.members.append(_copy(tar, take))
                    continue
                size, appends, st = new
                if suffix == LOG_SUFFIX:
                    rebuilt[stem] = build_indexes(appends, base_offset_of(take.source) or 0, o.index_interval_bytes)
                spool.seek(0)
                sha = _add_file(tar, take.name, spool, size, st.st_mtime, take.source)  # type: ignore[arg-type]
            report.members.append(Member(take.name, source, size, sha, st.st_size, True))
        except FileNotFoundError as e:
            raise identity.vanished(e, [take.source]) or e


def _rewrite(take: Take, o: BundleOptions, out: Any) -> tuple[int, list[Append], os.stat_result] | None:
    """A segment or snapshot written to ``out`` batch by batch with its records redacted or its
    secrets hidden: (its size, each batch as an append for the indexes, the source's stat);
    None when nothing in it changes (it is then copied as it is)."""
    st = os.stat(take.source)
    identity.opened(take.source, st)
    path, limit = str(take.source), o.max_decompressed_bytes
    size, appends, changed = 0, [], False
    for b in strict_batches(take.source):
        if take.redact:
            assert o.redactor is not None
            new: bytes | None = o.redactor.batch(b, path, limit)
        else:
            new = hide_batch_secrets(b, path, limit)
        changed |= new is not None
        data = bytes(b.raw) if new is None else new
        out.write(data)
        # As LogSegment.recover sees it: one append per batch, its header's offsets and times unchanged.
        appends.append(Append(size, len(data), b.last_offset, b.max_timestamp, b.last_offset))
        size += len(data)
    return (size, appends, st) if changed or take.redact else None


__all__ = ["BUNDLE_SUFFIXES", "MANIFEST", "BundleOptions", "BundleReport", "Member", "bundle", "plan"]
