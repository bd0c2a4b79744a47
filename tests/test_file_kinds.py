"""The names a log directory holds, in one table (``kseg.log.listing``): every suffix and whole
name, what a listing groups it as, how dump reads it, whether the name says Kafka, whether
verify checks it by itself. Each row is a name built from the table's own constants; a
constant no row names fails ``test_every_name_of_the_table_has_a_row``, so a new kind of file
needs its row here. And no module spells a suffix or a file name the table holds."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kseg.log import listing as L
from kseg.ops.sniff import KAFKA, KAFKA07, name_format
from kseg.ops.verify import is_companion

SEG = f"{0:020d}"
UUID = "AAAAAAAAAAAAAAAAAAAAAA"

# name -> (listing kind, dump's kind strict (kafka-dump-log.sh), dump's kind, the name says, verify alone)
ROWS: dict[str, tuple[str, str, str, str | None, bool]] = {
    SEG + L.LOG_SUFFIX: (L.SEGMENT, "log", "log", KAFKA, False),
    f"5-{UUID}{L.LOG_SUFFIX}": (L.SEGMENT, "log", "log", KAFKA, False),
    **{SEG + L.LOG_SUFFIX + t: (L.TRANSIENT, "log", "log", KAFKA, False) for t in L.TRANSIENT_SUFFIXES},
    "5" + L.LOG_SUFFIX: (L.LOOSE_LOG, "log", "log", KAFKA, False),
    SEG + L.INDEX_SUFFIX: (L.INDEX, "index", "index", KAFKA, True),
    SEG + L.TIME_INDEX_SUFFIX: (L.INDEX, "timeindex", "timeindex", KAFKA, True),
    SEG + L.TXN_INDEX_SUFFIX: (L.INDEX, "txnindex", "txnindex", KAFKA, True),
    # an index renamed with its segment is read as what it was, and never listed
    SEG + L.INDEX_SUFFIX + L.DELETED_SUFFIX: (L.OTHER, "index", "index", KAFKA, False),
    SEG + L.PRODUCER_SNAPSHOT_SUFFIX: (L.PRODUCER_SNAPSHOT, "snapshot", "snapshot", KAFKA, True),
    L.BOOTSTRAP_SNAPSHOT: (L.KRAFT_SNAPSHOT, "checkpoint", "checkpoint", KAFKA, False),
    f"{100:020d}-{3:010d}{L.CHECKPOINT_SUFFIX}": (L.KRAFT_SNAPSHOT, "checkpoint", "checkpoint", KAFKA, False),
    L.BOOTSTRAP_FILE: (L.LOG_DIR_TEXT, "checkpoint", "checkpoint", KAFKA, False),
    **{"old" + s: (L.KAFKA07, "unknown", "log", KAFKA07, False) for s in L.KAFKA07_SUFFIXES},
    **{f"5-{UUID}{s}": (L.TIERED_EPOCH, "leader_epoch", "leader_epoch", KAFKA, True)
       for s in L.TIERED_EPOCH_SUFFIXES},
    L.LEADER_EPOCH_FILE: (L.PARTITION_TEXT, "leader_epoch", "leader_epoch", KAFKA, True),
    L.PARTITION_METADATA_FILE: (L.PARTITION_TEXT, "partition_metadata", "partition_metadata", KAFKA, True),
    L.QUORUM_STATE_FILE: (L.PARTITION_TEXT, "quorum_state", "quorum_state", KAFKA, True),
    **{n: (L.LOG_DIR_TEXT, "offset_checkpoint", "offset_checkpoint", KAFKA, True) for n in L.OFFSET_CHECKPOINTS},
    L.META_PROPERTIES: (L.LOG_DIR_TEXT, "meta_properties", "meta_properties", KAFKA, True),
    "README": (L.OTHER, "unknown", "log", None, False),
}

# Every suffix and whole name the table holds.
TABLE_NAMES = (L.LOG_SUFFIX, *L.COMPANION_SUFFIXES, L.CHECKPOINT_SUFFIX, *L.TRANSIENT_SUFFIXES,
               *L.KAFKA07_SUFFIXES, *L.TIERED_EPOCH_SUFFIXES, *L.PARTITION_TEXT_FILES, L.BOOTSTRAP_FILE,
               *L.LOG_DIR_TEXT_FILES)


@pytest.mark.parametrize("name", sorted(ROWS))
def test_a_name_is_what_its_row_says(name: str) -> None:
    path = Path("logs") / "t-0" / name
    found = (L.file_kind(name), L.read_kind(path, strict=True), L.read_kind(path), name_format(path),
             is_companion(path))
    assert found == ROWS[name]


@pytest.mark.parametrize("name", sorted(set(TABLE_NAMES)))
def test_every_name_of_the_table_has_a_row(name: str) -> None:
    assert any(row.endswith(name) for row in ROWS), name


def test_kafka_dump_log_reads_its_own_six_suffixes() -> None:
    """DumpLogSegments' dispatch: .log and .checkpoint as logs, the three indexes, producer snapshots."""
    assert sorted(L.DUMP_LOG_SUFFIXES) == sorted([".log", ".checkpoint", ".index", ".timeindex", ".txnindex",
                                                  ".snapshot"])


def test_a_segments_files_are_named_by_its_base_offset() -> None:
    assert L.SEGMENT_SUFFIXES == (L.LOG_SUFFIX, *L.INDEX_SUFFIXES, L.PRODUCER_SNAPSHOT_SUFFIX)
    for s in L.SEGMENT_SUFFIXES:
        assert L.base_offset_of(f"{42:020d}{s}") == 42


# --------------------------------------------------------------------------- spelled once

PACKAGE = Path(__file__).resolve().parent.parent / "kseg"
# Modules that spell one of the table's names for a file that is not a log directory's, and why.
# Strict: a module here that no longer spells one fails, so the entry goes.
NOT_KAFKAS: dict[str, str] = {
    "kseg/spark/session.py": "the JVM's console logs, <time>-<pid>.log in kseg-spark-<uid>/: Spark's files, "
                             "named as they are whatever Kafka calls its segments",
}


def _spelled(path: Path) -> list[str]:
    """The table's suffixes and names written as string literals in a module (docstrings aside)."""
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [f"line {n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in TABLE_NAMES and id(n) not in docs]


MODULES = sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py")
                 if "generated" not in p.parts and p.name != "listing.py")


@pytest.mark.parametrize("module", MODULES)
def test_suffixes_are_spelled_only_in_the_table(module: str) -> None:
    spelled = _spelled(PACKAGE.parent / module)
    if module in NOT_KAFKAS:
        assert spelled, f"{module} spells no suffix any more: take it out of NOT_KAFKAS"
    else:
        assert not spelled, f"{module} spells what kseg.log.listing names: {spelled}"
