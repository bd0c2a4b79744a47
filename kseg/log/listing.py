"""Which files an input holds and how they group: one rule for every command.

Every suffix and whole name a log directory holds is named here once (``LOG_SUFFIX``,
``INDEX_SUFFIXES``, ``TRANSIENT_SUFFIXES``, ``PARTITION_TEXT_FILES``, ...), beside the segment
naming rules, with how a file is read (``read_kind``: dump's dispatch). A file's kind in a
listing comes from its name (``FILE_KINDS``, first match wins); a folder's shape from
the kinds of the files in it (``folder_listing``), and each shape is read as:

=============  ==========================================================================
file           a file named on the command line (or ``-``): read as it is
partition      a folder with offset-named segments: the segments in offset order, read as
               one run; a ``.log`` not named by offset, a transient segment (``.log.deleted``
               ...) or a KRaft snapshot beside them is a side file (verify checks it alone)
log-dir        a folder of ``<topic>-<n>`` partition folders (or its own checkpoint files;
               those and log-like files beside the partitions are side files); the
               broker's renamed replicas (``<topic>-<n>.<id>-delete``, ``-future``,
               ``-stray``: ``REPLICA_KINDS``) are listed after the live one of their
               topic-partition, each run marked with its kind
log-dirs       a folder holding log directories or partition folders (one per broker or
               disk), searched LOG_DIR_SEARCH_DEPTH levels down
loose          a folder of ``.log`` files not named by offset (or only transient segments
               or KRaft snapshots): every file read on its own, in name order
kafka07        a folder of pre-0.8 ``.kafka`` files: each file on its own, in name order
=============  ==========================================================================

Reading commands (verify, dump, stats, find, txn, diff) read the ``RUN`` and ``ALONE``
groups; verify also checks the ``SIDE`` files (indexes are checked with their segment).
Writers need segments named by offset to name what they write: a ``loose`` folder or a
folder of log directories is an InputError for them (``writer_partition_folders``). A folder
with nothing Kafka in it is the same InputError (``NO_FILES``) for every command.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from kseg.errors import InputError
from kseg.storage import as_path

# Segment naming rules.
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
# Tiered storage (KIP-405). A Kafka Uuid as text: 16 bytes in URL-safe base64, no padding.
KAFKA_UUID = r"[A-Za-z0-9_-]{22}"
# A segment's files in a remote store: ``<start offset>-<segment id>.<suffix>``; the offset is
# bare in Kafka's LocalTieredStorage, 20 digits in Aiven's plugin.
TIERED_STEM = re.compile(rf"^(?P<offset>\d{{1,20}})-(?P<segment_id>{KAFKA_UUID})$")
# LocalTieredStorage's partition folder: ``<topic>-<partition>-<topic id>``.
TIERED_PARTITION_DIR = re.compile(rf"^(?P<topic>.+)-(?P<partition>\d+)-(?P<topic_id>{KAFKA_UUID})$")
# Aiven's plugin: ``<topic>-<topic id>/<partition>/``.
TIERED_TOPIC_DIR = re.compile(rf"^(?P<topic>.+)-(?P<topic_id>{KAFKA_UUID})$")

# Partition folder kinds: the live replica, and the names the broker (LocalLog) renames a
# replica's folder to, ``<topic>-<n>.<id>-<suffix>`` with ``<id>`` a random UUID's 32 hex
# digits (dashes removed). Kafka parses them by cutting the name at its last ``.``, then at
# the last ``-``; a ``-delete`` or ``-stray`` name may have its topic cut short so that the
# whole name stays within 255 characters.
LIVE = "live"
DELETING, FUTURE, STRAY = "delete", "future", "stray"
# kind -> what it is (and what the broker does with it), in listing order after the live one.
REPLICA_KINDS: dict[str, str] = {
    DELETING: ("a partition being deleted (its topic was deleted, or its replica moved to another log "
               "directory or broker): the broker removes it after file.delete.delay.ms and never reads it"),
    FUTURE: ("a future replica: the copy being moved into this log directory (kafka-reassign-partitions "
             "with log_dirs); it replaces the live replica once it has caught up"),
    STRAY: ("a stray replica: a partition this broker no longer hosts (not in the cluster metadata), "
            "set aside at start-up; the broker removes it"),
}
REPLICA_DIR = re.compile(rf"^(?P<topic>.+)-(?P<partition>\d+)\.(?P<id>[^.]+)-(?P<kind>{'|'.join(REPLICA_KINDS)})$")
STDIN = "-"
OFFSET_DIGITS = 20


def base_offset_of(path: str | os.PathLike) -> int | None:
    """The offset a segment file's name starts with (the broker's 20 digits up to the
    first dot, or tiered storage's ``<start offset>-<segment id>``), if any. Other names
    (``/dev/fd/63``, ``5.log``) carry no offset."""
    name = os.path.basename(path) if isinstance(path, str) else Path(path).name
    head = name.split(".", 1)[0]
    if len(head) == OFFSET_DIGITS and head.isdigit():
        return int(head)
    m = TIERED_STEM.match(head)
    return int(m.group("offset")) if m else None


def is_stdin(path: str | os.PathLike) -> bool:
    """``-``: standard input."""
    return str(path) == STDIN


def not_a_file(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as a file (a folder, a FIFO, a device, a symlink loop:
    opening some of them would block or never end), or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a symlink loop, not a file"
        return None  # missing or not permitted: opening it says so
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder where a file is expected"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    return "not a regular file"


def replica_kind(name: str) -> str:
    """What a partition folder's name says it holds: ``LIVE``, or a ``REPLICA_KINDS`` key."""
    m = REPLICA_DIR.match(name)
    return m.group("kind") if m else LIVE


def replica_note(folder: str | os.PathLike) -> str | None:
    """What a renamed replica's folder is, in words (None for a live one)."""
    name = os.path.basename(str(folder).rstrip("/"))
    kind = replica_kind(name)
    return None if kind == LIVE else f"{name}: {REPLICA_KINDS[kind]}"


def parse_partition_dir(name: str, parent: str | None = None) -> tuple[str, int] | None:
    """(topic, partition) of a partition folder's name: the broker's ``<topic>-<n>`` (or
    a replica it renamed, ``<topic>-<n>.<id>-delete|future|stray``), LocalTieredStorage's
    ``<topic>-<n>-<topic id>``, or a bare ``<n>`` inside Aiven's ``<topic>-<topic id>``
    (``parent``, the name of the folder above)."""
    m = REPLICA_DIR.match(name) or TIERED_PARTITION_DIR.match(name) or PARTITION_DIR.match(name)
    if m:
        return m.group("topic"), int(m.group("partition"))
    if parent is not None and name.isdigit():
        t = TIERED_TOPIC_DIR.match(parent)
        if t:
            return t.group("topic"), int(name)
    return None



# File names: every suffix and name a log directory holds, once. Commands ask these (and
# ``read_kind``, ``bare_name``) instead of spelling a suffix; tests/test_file_kinds.py walks them.
LOG_SUFFIX = ".log"
INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX = ".index", ".timeindex", ".txnindex"
PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
CHECKPOINT_SUFFIX = ".checkpoint"  # a KRaft snapshot, and the bootstrap
# A segment's indexes: named after it (its base offset), checked against it.
INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
# Named by a segment's base offset and verified by themselves: its indexes and the producer snapshot.
COMPANION_SUFFIXES = (*INDEX_SUFFIXES, PRODUCER_SNAPSHOT_SUFFIX)
SEGMENT_SUFFIXES = (LOG_SUFFIX, *COMPANION_SUFFIXES)  # every file named by a segment's base offset
# Names the broker gives a segment (and its companions) on the way out or in: deleted,
# cleaned, or being swapped in by the cleaner. The file is still what it was.
DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX = ".deleted", ".cleaned", ".swap"
TRANSIENT_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
KAFKA07_SUFFIXES = (".kafka", ".kafka07")  # pre-0.8 segment files
# A segment's leader epoch checkpoint in a remote store (LocalTieredStorage, Aiven's plugin):
# the text of the broker's ``leader-epoch-checkpoint`` as it was when the segment was copied.
TIERED_EPOCH_SUFFIXES = (".leader_epoch_checkpoint", ".leader-epoch-checkpoint")
LEADER_EPOCH_FILE, PARTITION_METADATA_FILE, QUORUM_STATE_FILE = (
    "leader-epoch-checkpoint", "partition.metadata", "quorum-state")
# A partition folder's text files (quorum-state sits in a KRaft controller's log directory too).
PARTITION_TEXT_FILES = (LEADER_EPOCH_FILE, PARTITION_METADATA_FILE, QUORUM_STATE_FILE)

# KRaft's bootstrap: the log directory's file (BootstrapDirectory), and the snapshot at offset 0,
# epoch 0 (Snapshots.BOOTSTRAP_SNAPSHOT_ID) the format command writes into __cluster_metadata-0:
# the quorum's first voters, and in newer releases the bootstrap records too. Neither is a
# snapshot of the log: the controller writes the bootstrap records into the log when it first
# becomes active.
BOOTSTRAP_FILE = "bootstrap.checkpoint"
BOOTSTRAP_SNAPSHOT = f"{0:020d}-{0:010d}.checkpoint"

META_PROPERTIES = "meta.properties"
RECOVERY_POINT_CHECKPOINT, LOG_START_CHECKPOINT, REPLICATION_CHECKPOINT, CLEANER_CHECKPOINT = (
    "recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "replication-offset-checkpoint",
    "cleaner-offset-checkpoint")
OFFSET_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, LOG_START_CHECKPOINT, REPLICATION_CHECKPOINT, CLEANER_CHECKPOINT)
# A log directory's own text files, checked by themselves.
LOG_DIR_TEXT_FILES = (*OFFSET_CHECKPOINTS, META_PROPERTIES)

# How a file is read, by its suffix (once a transient one is taken off) or, for the text files
# of a partition and of a log directory, its whole name: kafka-dump-log.sh's dispatch (spec
# §6.2), and kseg's own kinds.
READ_BY_SUFFIX = {
    LOG_SUFFIX: "log",
    CHECKPOINT_SUFFIX: "checkpoint",
    INDEX_SUFFIX: "index",
    TIME_INDEX_SUFFIX: "timeindex",
    TXN_INDEX_SUFFIX: "txnindex",
    PRODUCER_SNAPSHOT_SUFFIX: "snapshot",
    **dict.fromkeys(TIERED_EPOCH_SUFFIXES, "leader_epoch"),
}
READ_BY_NAME = {LEADER_EPOCH_FILE: "leader_epoch", PARTITION_METADATA_FILE: "partition_metadata",
                QUORUM_STATE_FILE: "quorum_state", **dict.fromkeys(OFFSET_CHECKPOINTS, "offset_checkpoint"),
                META_PROPERTIES: "meta_properties"}
# The suffixes kafka-dump-log.sh itself reads (``.log`` and ``.checkpoint`` as logs); it passes
# over other names with a line.
DUMP_LOG_SUFFIXES = tuple(s for s in READ_BY_SUFFIX if s not in TIERED_EPOCH_SUFFIXES)


def bare_name(name: str) -> str:
    """A file's name without the transient suffixes the broker adds (``X.log.deleted`` -> ``X.log``)."""
    for t in TRANSIENT_SUFFIXES:
        if name.endswith(t):
            name = name[: -len(t)]
    return name


def read_kind(path: str | os.PathLike, *, strict: bool = False) -> str:
    """How a file is read (``READ_BY_SUFFIX``, ``READ_BY_NAME``); ``0.log.deleted`` is a log.
    With ``strict`` (kafka-dump-log.sh's rule) other names are "unknown", else read as logs."""
    whole = Path(path).name if isinstance(path, str) else path.name  # type: ignore[union-attr]
    name = bare_name(whole)
    if name in READ_BY_NAME:
        return READ_BY_NAME[name]
    kind = READ_BY_SUFFIX.get(Path(name).suffix)
    if kind is None:
        return "unknown" if strict or Path(whole).suffix in TRANSIENT_SUFFIXES else "log"
    return kind


# File kinds: how a listing groups a file.
SEGMENT = "segment"  # <20 digits>.log, or tiered storage's <offset>-<segment id>.log
TRANSIENT = "transient"  # a segment on its way out or in: .log.deleted, .log.cleaned, .log.swap
KRAFT_SNAPSHOT = "kraft-snapshot"  # <end offset>-<epoch>.checkpoint in __cluster_metadata-0
LOOSE_LOG = "loose-log"  # any other .log: a copy, a sample, a file renamed by hand
KAFKA07 = "kafka07"  # pre-0.8 segment files
INDEX = "index"  # checked with their segment
PRODUCER_SNAPSHOT = "producer-snapshot"
TIERED_EPOCH = "tiered-epoch"  # a remote segment's leader epoch checkpoint
PARTITION_TEXT = "partition-text"  # leader-epoch-checkpoint, partition.metadata, quorum-state
LOG_DIR_TEXT = "log-dir-text"  # the log directory's checkpoints, meta.properties, bootstrap.checkpoint
OTHER = "other"  # not Kafka's: never read


def _any(names: tuple[str, ...]) -> str:
    return "(?:" + "|".join(re.escape(n) for n in names) + ")"


_LOG = re.escape(LOG_SUFFIX)
# name pattern -> kind; the first that matches the whole name wins.
FILE_KINDS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.S), k) for p, k in (
    (rf"\d{{20}}{_LOG}", SEGMENT),
    (rf"\d{{1,20}}-{KAFKA_UUID}{_LOG}", SEGMENT),
    (rf"\d{{20}}{_LOG}{_any(TRANSIENT_SUFFIXES)}", TRANSIENT),
    (rf"\d{{20}}-\d{{10}}{re.escape(CHECKPOINT_SUFFIX)}", KRAFT_SNAPSHOT),
    (rf".*{_LOG}", LOOSE_LOG),
    (rf".*{_any(KAFKA07_SUFFIXES)}", KAFKA07),
    (rf".*{_any(INDEX_SUFFIXES)}", INDEX),
    (rf".*{re.escape(PRODUCER_SNAPSHOT_SUFFIX)}", PRODUCER_SNAPSHOT),
    (rf".*{_any(TIERED_EPOCH_SUFFIXES)}", TIERED_EPOCH),
    (_any(PARTITION_TEXT_FILES), PARTITION_TEXT),
    (_any(LOG_DIR_TEXT_FILES + (BOOTSTRAP_FILE,)), LOG_DIR_TEXT),
))

# Kinds read as log entries on their own when not part of a partition's run.
ALONE_KINDS = (TRANSIENT, KRAFT_SNAPSHOT, LOOSE_LOG)
# A log directory's own files (quorum-state sits in a KRaft controller's log directory too).
LOG_DIR_OWN = (LOG_DIR_TEXT,)

# Group kinds.
RUN = "run"  # a partition's segments in offset order: offsets run on from one to the next
ALONE = "alone"  # one log-like file read on its own
SIDE = "side"  # a file verify checks by itself (a log directory's checkpoints ...)

# Folder shapes.
FILE, PARTITION, LOG_DIR, LOG_DIRS, LOOSE, KAFKA07_FOLDER = (
    "file", "partition", "log-dir", "log-dirs", "loose", "kafka07")

# How deep a folder of log directories (one per broker or disk) is searched for them.
LOG_DIR_SEARCH_DEPTH = 3

NO_FILES = "no Kafka files found (expected .log files, <topic>-<n> folders or log directories)"
WRITE_LOOSE = ("the .log files in this folder are not named by offset (<20 digits>.log), so the output "
               "segments cannot be named: give them one at a time")
WRITE_LOG_DIRS = "a folder of log directories: give one log directory (or partition folder) at a time"


def file_kind(name: str) -> str:
    """The kind of a file, by its name (``FILE_KINDS``)."""
    for pattern, kind in FILE_KINDS:
        if pattern.fullmatch(name):
            return kind
    return OTHER


@dataclass(frozen=True)
class Group:
    """Files read together: a partition's run (with the files verify checks beside it in
    ``side``), one file on its own, or one side file."""

    kind: str
    files: tuple[Path, ...]
    folder: Path | None = None  # the partition folder of a run (None: not in one)
    side: tuple[Path, ...] = ()
    name: str = "."  # where it is under the input: ``.`` the input itself, else a relative path
    replica: str = LIVE  # a run's partition folder kind: LIVE or a REPLICA_KINDS key

    @property
    def newest(self) -> Path | None:
        """The segment a broker may still be writing (``kseg.log.tails``): the last of a
        partition's run, listed from its folder. None for files named on their own, loose files
        and streams: what they end in is taken as it is. Every reading command asks this."""
        return self.files[-1] if self.kind == RUN and self.files else None

    @property
    def note(self) -> str | None:
        """What a run of a renamed replica is (None for a live one or a file)."""
        return replica_note(self.folder) if self.folder is not None and self.replica != LIVE else None


@dataclass
class Listing:
    """One input: its shape and its groups, in reading order."""

    path: Path
    shape: str
    groups: list[Group] = field(default_factory=list)

    @property
    def reading(self) -> list[Group]:
        """The groups reading commands read (runs and files on their own)."""
        return [g for g in self.groups if g.kind != SIDE]



def _files(folder: Path) -> list[tuple[Path, str]]:
    """The entries of a folder that Kafka names, with their kinds, in name order. An entry
    named as a Kafka file is listed whatever it is (a folder, a FIFO, a symlink loop), so
    that reading it says what is wrong instead of passing over it."""
    if isinstance(folder, Path):
        names = os.listdir(folder)
    else:  # an object store or an archive
        names = [c.name for c in folder.iterdir() if c.is_file()]
    names.sort()
    out = []
    for name in names:
        kind = file_kind(name)
        if kind != OTHER:
            out.append((folder / name, kind))
    return out


def _rel(p: Path, root: Path) -> str:
    """Where ``p`` is under ``root`` (``.`` for root itself), for any kind of path."""
    whole, top = str(p), str(root).rstrip("/")
    if whole == top:
        return "."
    return whole[len(top) + 1:] if whole.startswith(top + "/") else p.name


def partition_listing(folder: Path, root: Path, files: list[tuple[Path, str]] | None = None) -> list[Group]:
    """A partition folder: its segments in offset order (the run, with its snapshots, text
    files and tiered epoch checkpoints beside), then its transient segments, KRaft snapshots
    and ``.log`` files not named by offset: side files beside a run, else each read alone."""
    files = _files(folder) if files is None else files
    segs = sorted((p for p, k in files if k == SEGMENT), key=lambda p: base_offset_of(p.name))  # type: ignore[arg-type,return-value]
    side = ([p for p, k in files if k == PRODUCER_SNAPSHOT]
            + [folder / n for n in PARTITION_TEXT_FILES if any(p.name == n for p, _ in files)]
            + [p for p, k in files if k == TIERED_EPOCH])
    groups = [Group(RUN, tuple(segs), folder, tuple(side), _rel(folder, root), replica_kind(folder.name))] if segs else []
    # Beside a run, the others are the partition's side files (verify checks each on its own;
    # a KRaft snapshot is not a segment of the log); without one, each is read on its own.
    extra = SIDE if segs else ALONE
    groups.extend(Group(extra, (p,), None, (), _rel(p, root)) for p, k in files if k in ALONE_KINDS)
    return groups


def _folder_order(p: Path) -> tuple[str, int, int, str]:
    """Topic, partition, then the live replica before the renamed ones (``REPLICA_KINDS``' order)."""
    topic, partition = parse_partition_dir(p.name, p.parent.name) or ("", 0)
    kind = replica_kind(p.name)
    return topic, partition, 0 if kind == LIVE else 1 + list(REPLICA_KINDS).index(kind), p.name


def _log_dir_partitions(root: Path) -> list[Path]:
    """Partition folders directly under a log directory (Aiven's ``<topic>-<topic id>/<n>``
    one level deeper), by topic and partition, each live replica before its renamed ones."""
    found = []
    for child in root.iterdir():
        if not child.is_dir():
            continue
        if parse_partition_dir(child.name) and any(p.suffix == LOG_SUFFIX for p in child.iterdir()):
            found.append(child)
        elif TIERED_TOPIC_DIR.match(child.name):  # Aiven's <topic>-<topic id>/<partition>/
            found.extend(g for g in child.iterdir() if g.is_dir() and g.name.isdigit()
                         and any(p.suffix == LOG_SUFFIX for p in g.iterdir()))
    return sorted(found, key=_folder_order)


def folder_listing(folder: Path, root: Path | None = None, depth: int = 0) -> tuple[str | None, list[Group]]:
    """(shape, groups) of a folder; (None, []) when nothing Kafka is in it."""
    root = folder if root is None else root
    files = _files(folder)
    kinds = {k for _, k in files}
    if SEGMENT in kinds:
        return PARTITION, partition_listing(folder, root, files)
    parts = _log_dir_partitions(folder)
    own = [p for p, k in files if k in LOG_DIR_OWN or p.name == QUORUM_STATE_FILE]
    extras = [p for p, k in files if k in ALONE_KINDS]
    if parts or own:  # a log directory: files beside its partitions are checked by verify only
        groups = [Group(SIDE, (p,), None, (), _rel(p, root)) for p in own + extras]
        for part in parts:
            groups.extend(partition_listing(part, root))
        return LOG_DIR, groups
    if extras:
        return LOOSE, [Group(ALONE, (p,), None, (), _rel(p, root)) for p in extras]
    if KAFKA07 in kinds:
        return KAFKA07_FOLDER, [Group(ALONE, (p,), None, (), _rel(p, root)) for p, k in files if k == KAFKA07]
    if depth >= LOG_DIR_SEARCH_DEPTH:
        return None, []
    groups = []
    for child in sorted(c for c in folder.iterdir() if c.is_dir()):
        groups.extend(folder_listing(child, root, depth + 1)[1])
    return (LOG_DIRS, groups) if groups else (None, [])


def list_input(raw: str | os.PathLike) -> Listing:
    """One input's listing; InputError when it is missing or holds nothing Kafka."""
    p = as_path(raw)
    if is_stdin(p):
        return Listing(p, FILE, [Group(ALONE, (p,))])  # type: ignore[arg-type]
    if not p.exists():
        problem = not_a_file(p) if isinstance(p, Path) else None  # a symlink loop
        raise InputError(f"cannot read: {problem}" if problem else "no such file or directory", file=str(p))
    if not p.is_dir():  # a file, or a stream (/dev/stdin, a FIFO, <(zcat ...)): said when read
        return Listing(p, FILE, [Group(ALONE, (p,))])  # type: ignore[arg-type]
    shape, groups = folder_listing(p)  # type: ignore[arg-type]
    if shape is None:
        raise InputError(NO_FILES, file=str(p))
    return Listing(p, shape, groups)  # type: ignore[arg-type]


def list_inputs(paths: Iterable[str | os.PathLike]) -> list[Listing]:
    """Every input's listing; every input is checked usable before any is read."""
    return [list_input(raw) for raw in paths]


def reading_groups(paths: Iterable[str | os.PathLike]) -> list[Group]:
    """The groups reading commands read, over all inputs, in order."""
    return [g for listing in list_inputs(paths) for g in listing.reading]


def expand_inputs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The files reading commands read, in order: files named directly, then each folder's
    (a partition's segments in offset order, then the files read on their own)."""
    return [f for g in reading_groups(paths) for f in g.files]


def newest_segments(groups: Iterable[Group]) -> frozenset[Path]:
    """The segments of ``groups`` a broker may still be writing (``Group.newest``)."""
    return frozenset(g.newest for g in groups if g.newest is not None)


def writer_partition_folders(root: str | os.PathLike) -> list[Path]:
    """A log directory's partition folders for a writer; InputError for a folder whose
    segments a writer cannot name (``.log`` files not named by offset), a folder of log
    directories, or one with nothing Kafka in it."""
    p = as_path(root)
    shape, _ = folder_listing(p)  # type: ignore[arg-type]
    if shape == LOOSE:
        raise InputError(WRITE_LOOSE, file=str(p))
    if shape == LOG_DIRS:
        raise InputError(WRITE_LOG_DIRS, file=str(p))
    if shape is None:
        raise InputError(NO_FILES, file=str(p))
    return _log_dir_partitions(p)  # type: ignore[arg-type]
