"""The public reading objects: a segment, a partition folder and a log directory, each able to
give its records (``records()``) and its rows as Arrow (``to_batches()``, ``to_arrow()``) or pandas.

They extend the log layer's ``Segment`` and ``Partition`` (which know files, not filters or
Arrow) with the operations layer's reading (``kseg.ops.read``: the dump operation's records
and the Spark data source's record schema), so they live above both. Every reading method
takes the same filters as keywords: ``from_offset``, ``to_offset``, ``from_time``,
``to_time`` (inclusive, as ``kseg dump``'s options; times in epoch milliseconds),
``include_control`` (control records are left out unless True) and ``on_damage``
(``"stop"``, the default, raises a ``kseg.KsegError`` naming the file and byte; ``"skip"``
leaves damaged batches out). A partition's newest segment may end in a batch still being
written (a live broker's folder): its records end before it, as ``kseg dump`` reads it
(``kseg.log.tails``); zeros a broker preallocated end any segment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator, NamedTuple

from kseg.log import segment as _log
from kseg.model import Header, Record
from kseg.ops.read import DEFAULT_BATCH_ROWS, ReadFilter, arrow_batches, pyarrow, record_schema, segment_records

__all__ = ["LogDir", "Partition", "Segment", "TopicRecord", "open_log_dir", "open_partition", "open_segment"]


class TopicRecord(NamedTuple):
    """A record of a log directory, with the topic and partition its folder names."""

    topic: str | None
    partition: int | None
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


def _filter(from_offset: int | None, to_offset: int | None, from_time: int | None, to_time: int | None,
            include_control: bool, on_damage: str) -> ReadFilter:
    return ReadFilter(from_offset, to_offset, from_time, to_time, include_control, on_damage)


class _Rows:
    """``to_batches``, ``to_arrow`` and ``to_pandas`` over ``_listed()``'s segment files."""

    def _listed(self) -> tuple[list[Path], list[Path]]:
        """The segment files in order, and those of them that are their partition's newest
        segment, listed from its folder (one listing: a broker may roll a segment meanwhile)."""
        raise NotImplementedError

    def to_batches(self, *, columns: list[str] | None = None, from_offset: int | None = None,
                   to_offset: int | None = None, from_time: int | None = None, to_time: int | None = None,
                   include_control: bool = False, on_damage: str = "stop",
                   batch_rows: int = DEFAULT_BATCH_ROWS) -> Any:
        """A ``pyarrow.RecordBatchReader`` over the rows, read as it is consumed (bounded memory):
        the Spark data source's record schema, or the ``columns`` of it (in the schema's order)."""
        f = _filter(from_offset, to_offset, from_time, to_time, include_control, on_damage)
        schema = record_schema(columns)
        paths, newest = self._listed()
        return pyarrow().RecordBatchReader.from_batches(schema, arrow_batches(paths, f, columns, batch_rows,
                                                                              newest=newest))

    def to_arrow(self, *, columns: list[str] | None = None, from_offset: int | None = None,
                 to_offset: int | None = None, from_time: int | None = None, to_time: int | None = None,
                 include_control: bool = False, on_damage: str = "stop") -> Any:
        """All the rows as one ``pyarrow.Table`` (see ``to_batches``)."""
        return self.to_batches(columns=columns, from_offset=from_offset, to_offset=to_offset, from_time=from_time,
                               to_time=to_time, include_control=include_control, on_damage=on_damage).read_all()

    def to_pandas(self, *, columns: list[str] | None = None, from_offset: int | None = None,
                  to_offset: int | None = None, from_time: int | None = None, to_time: int | None = None,
                  include_control: bool = False, on_damage: str = "stop") -> Any:
        """``to_arrow()`` as a pandas DataFrame (needs pandas)."""
        return self.to_arrow(columns=columns, from_offset=from_offset, to_offset=to_offset, from_time=from_time,
                             to_time=to_time, include_control=include_control, on_damage=on_damage).to_pandas()


class Segment(_Rows, _log.Segment):
    """One ``.log`` file: ``batches()`` as it is stored, ``records()`` and the Arrow rows as read."""

    def _listed(self) -> tuple[list[Path], list[Path]]:
        return [Path(self.path)], []  # named on its own: not listed from a folder

    def records(self, *, from_offset: int | None = None, to_offset: int | None = None, from_time: int | None = None,
                to_time: int | None = None, include_control: bool = False,
                on_damage: str = "stop") -> Iterator[Record]:
        """The records, in file order, that ``kseg dump --records`` shows with the same filters."""
        return segment_records(self.path, _filter(from_offset, to_offset, from_time, to_time, include_control,
                                                  on_damage))


class Partition(_Rows, _log.Partition):
    """A ``<topic>-<n>`` folder: its segments in offset order, read one after another."""

    def _listed(self) -> tuple[list[Path], list[Path]]:
        paths = self.segment_paths
        return paths, paths[-1:]

    def segments(self) -> list[Segment]:  # type: ignore[override]
        return [Segment(p) for p in self.segment_paths]

    def records(self, *, from_offset: int | None = None, to_offset: int | None = None, from_time: int | None = None,
                to_time: int | None = None, include_control: bool = False,
                on_damage: str = "stop") -> Iterator[Record]:
        """The records of every segment, in offset order (see ``Segment.records``)."""
        f = _filter(from_offset, to_offset, from_time, to_time, include_control, on_damage)
        paths = self.segment_paths  # listed once: the last one is the newest
        for path in paths:
            yield from segment_records(path, f, newest=path == paths[-1])


class LogDir(_Rows, list):
    """A broker's log directory: a list of its ``Partition`` folders, sorted by topic and
    partition, that also reads all their records at once."""

    def __init__(self, path: str | os.PathLike, partitions: list[Partition]) -> None:
        super().__init__(partitions)
        self.path = Path(path)

    def _listed(self) -> tuple[list[Path], list[Path]]:
        listed = [part.segment_paths for part in self]
        return [p for paths in listed for p in paths], [p for paths in listed for p in paths[-1:]]

    def records(self, *, from_offset: int | None = None, to_offset: int | None = None, from_time: int | None = None,
                to_time: int | None = None, include_control: bool = False,
                on_damage: str = "stop") -> Iterator[TopicRecord]:
        """Every partition's records, partition after partition, each with its topic and partition."""
        f = _filter(from_offset, to_offset, from_time, to_time, include_control, on_damage)
        for part in self:
            topic, partition = part.topic, part.partition
            paths = part.segment_paths  # listed once: the last one is the newest
            for path in paths:
                for r in segment_records(path, f, newest=path == paths[-1]):
                    yield TopicRecord(topic, partition, r.offset, r.timestamp, r.key, r.value, r.headers)


def open_segment(path: str | os.PathLike) -> Segment:
    """Open one segment file for reading (an InputError if there is no such file)."""
    return Segment(_log.open_segment(path).path)


def open_partition(path: str | os.PathLike) -> Partition:
    """Open a topic-partition folder (an InputError if it is not a folder)."""
    return Partition(_log.open_partition(path).path)


def open_log_dir(path: str | os.PathLike) -> LogDir:
    """Open a broker's log directory: its partition folders (an InputError if it holds none)."""
    return LogDir(path, [Partition(p.path) for p in _log.open_log_dir(path)])
