"""A tiered store against ``__remote_log_metadata``: does the store hold what the metadata says?

The topic-based remote log metadata manager records every segment a broker copies to the
remote store (``RemoteLogSegmentMetadataRecord``: topic id and partition, segment id, start
and end offset, size) and each step of its life (``...UpdateRecord``: COPY_SEGMENT_FINISHED,
DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED). :func:`check_remote_store` replays those
records (``kseg.ops.state``) and compares the result with the segment files found in the store
(``<start offset>-<segment id>.log`` in LocalTieredStorage's or Aiven's layout):

- errors: a segment the metadata says was copied (COPY_SEGMENT_FINISHED) and not deleted
  that the store lacks; a ``.log`` in the store that no metadata record names although its
  partition's metadata is among the inputs; a segment whose start offset (by its name), end
  offset (its last batch), size in bytes, topic, partition or topic id (by its folder)
  differ from the metadata's; a segment deleted (DELETE_SEGMENT_FINISHED) that is still there;
- notes: a copy not finished (COPY_SEGMENT_STARTED: in progress, or abandoned and left for
  the broker to clean up) or a deletion in progress, whether or not its file is there; store
  partitions whose metadata is not among the inputs (the metadata topic has 50 partitions by
  default; give the log directory to read them all).

The result is one verify :class:`FileReport` (kind ``remote-log-metadata``) so that
``kseg verify --remote-metadata`` reports it with the files' own checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kseg.errors import KsegError
from kseg.findings import ERROR, NOTE, Finding
from kseg.log.listing import LOG_SUFFIX
from kseg.log.segment import Segment, base_offset_of, expand_inputs, partition_of, tiered_segment_id, tiered_topic_id
from kseg.ops.state import replay
from kseg.ops.verify import FileReport

__all__ = ["StoreSegment", "check_remote_store", "metadata_segments", "store_segments"]

KIND = "remote-log-metadata"


class StoreSegment:
    """A ``<start offset>-<segment id>.log`` in a remote store, with what its name and folder say."""

    def __init__(self, path: Path):
        self.path = path
        self.segment_id = tiered_segment_id(path)
        self.start_offset = base_offset_of(path)
        parsed = partition_of(path.parent)
        self.topic, self.partition = parsed if parsed else (None, None)
        self.topic_id = tiered_topic_id(path.parent)

    def size(self) -> int:
        return self.path.stat().st_size

    def last_offset(self) -> int | None:
        last = None
        for batch in Segment(self.path).batches():
            last = batch.last_offset
        return last


def store_segments(paths: list[Path]) -> list[StoreSegment]:
    """Every tiered ``.log`` under ``paths`` (files, partition folders, the store's root)."""
    return [StoreSegment(p) for p in expand_inputs(list(paths))
            if p.suffix == LOG_SUFFIX and tiered_segment_id(p) is not None]


def metadata_segments(paths: list[Path]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The ``__remote_log_metadata`` partitions under ``paths`` replayed: (their folders,
    ``<topic>-<n>`` -> the partition's topic id, delete state and segments by id)."""
    report = replay(list(paths))
    folders = [ps.path for ps in report.partitions if ps.family == "remote-log-metadata"]
    merged: dict[str, dict[str, Any]] = {}
    for ps in report.partitions:
        for name, p in ps.state.get("remote_partitions", {}).items():
            into = merged.setdefault(name, {**p, "segments": {}})
            into["segments"].update(p["segments"])
    return folders, merged


def check_remote_store(metadata_paths: list[Path], store_paths: list[Path]) -> FileReport:
    """Compare the store under ``store_paths`` with the metadata under ``metadata_paths``."""
    folders, partitions = metadata_segments(metadata_paths)
    report = FileReport(", ".join(folders) or ", ".join(str(p) for p in metadata_paths), kind=KIND)
    if not folders:
        report.problems.append(Finding(ERROR, KIND, report.path, None,
                                       "no __remote_log_metadata partition among the --remote-metadata inputs"))
        return report

    def problem(severity: str, file: Path | str, message: str, **kw: Any) -> None:
        report.problems.append(Finding(severity, KIND, str(file), None, message, **kw))

    by_id = {sid: (name, p, seg) for name, p in partitions.items() for sid, seg in p["segments"].items()}
    found = store_segments(store_paths)
    seen: set[str] = set()
    unknown_partitions: dict[str, int] = {}
    for s in found:
        entry = by_id.get(s.segment_id or "")
        name = f"{s.topic}-{s.partition}"
        if entry is None:
            if name in partitions:
                problem(ERROR, s.path, f"segment {s.segment_id} of {name} is in the store but no "
                        "__remote_log_metadata record names it")
            else:
                unknown_partitions[name] = unknown_partitions.get(name, 0) + 1
            continue
        seen.add(s.segment_id or "")
        meta_name, p, seg = entry
        _compare(problem, s, meta_name, p, seg)
    for name, n in sorted(unknown_partitions.items()):
        problem(NOTE, ", ".join(str(p) for p in store_paths),
                f"{n} segment(s) of {name}: no metadata for this partition among the inputs")
    for sid, (name, _p, seg) in by_id.items():
        if sid in seen:
            continue
        where = f"segment {sid} of {name} (offsets {seg['startOffset']}..{seg['endOffset']})"
        if seg["state"] == "COPY_SEGMENT_FINISHED":
            problem(ERROR, report.path, f"{where} was copied (COPY_SEGMENT_FINISHED, metadata offset "
                    f"{seg['record_offset']}) but is not in the store")
        elif seg["state"] in ("COPY_SEGMENT_STARTED", "DELETE_SEGMENT_STARTED"):
            problem(NOTE, report.path, f"{where}: {seg['state']} and not in the store")
    return report


def _compare(problem: Any, s: StoreSegment, meta_name: str, p: dict[str, Any], seg: dict[str, Any]) -> None:
    state = seg["state"]
    if state == "DELETE_SEGMENT_FINISHED":
        problem(ERROR, s.path, f"deleted from the store per the metadata (DELETE_SEGMENT_FINISHED, metadata "
                f"offset {seg['record_offset']}) but still there")
    elif state != "COPY_SEGMENT_FINISHED":
        problem(NOTE, s.path, f"{state} (metadata offset {seg['record_offset']}): the copy or the "
                "deletion is not finished")
    if s.topic is not None and f"{s.topic}-{s.partition}" != meta_name:
        problem(ERROR, s.path, "in the wrong partition's folder", expected=meta_name,
                found=f"{s.topic}-{s.partition}")
    if s.topic_id is not None and s.topic_id != p["topicId"]:
        problem(ERROR, s.path, "topic id of the folder differs from the metadata's", expected=p["topicId"],
                found=s.topic_id)
    if s.start_offset != seg["startOffset"]:
        problem(ERROR, s.path, "start offset (by the name) differs from the metadata's",
                expected=seg["startOffset"], found=s.start_offset)
    try:
        size = s.size()
        last = s.last_offset()
    except (OSError, KsegError) as e:
        problem(ERROR, s.path, f"not readable: {e}")
        return
    if size != seg["segmentSizeInBytes"]:
        problem(ERROR, s.path, "size differs from the metadata's segmentSizeInBytes",
                expected=seg["segmentSizeInBytes"], found=size)
    if last != seg["endOffset"]:
        problem(ERROR, s.path, "last offset differs from the metadata's endOffset", expected=seg["endOffset"],
                found=last)
