"""What Kafka's ``ProducerStateManager.readSnapshot`` says of a producer snapshot's bytes.

kafka-dump-log.sh prints the message of the ``CorruptSnapshotException`` that method throws on
stderr, instead of the entries, and goes on (exit 0). Two readers have been Kafka's: up to 3.9
the file is read whole by a ``Schema`` (a field that cannot be read is named, nested as the
schema nests it), then its version and CRC are checked; from 4.0 the version is checked first
and the rest read by the generated ``ProducerSnapshot`` message, whose failures carry its own
texts (a buffer underflow has none: "null"). Both check the CRC over every byte after it,
bytes after the entries included. Held to the real tool by ``fixtures/kafka-damaged-companions``.
"""

from __future__ import annotations

import struct

from kseg.checksums import crc32c
from kseg.facts.producer_snapshot import LAYOUTS, SNAPSHOT_CRC_START

__all__ = ["kafka_snapshot_problem"]

VERSION = 1  # ProducerSnapshot's only version, then and now
_HEADER = struct.Struct(LAYOUTS["ProducerSnapshotHeader"][0])  # version, crc, entry count
_FORMAT, _NAMES, _POSITIONS = LAYOUTS["ProducerSnapshotEntry"]  # the names are the 3.x schema's fields
_ENTRY_SIZE = struct.calcsize(_FORMAT)
_FIELD_ENDS = [(name, _POSITIONS[name] + struct.calcsize(">" + code))
               for name, code in zip(_NAMES, _FORMAT.lstrip("<>!=@"))]
_ENTRIES_FIELD = "producer_entries"  # the 3.x schema's name of the counted array
_UNDERFLOW = "java.nio.BufferUnderflowException"  # what a Schema field names when its exception has no message
_INVALID = "Snapshot failed schema validation: "


def kafka_snapshot_problem(data: bytes | memoryview, generated_reader: bool) -> str | None:
    """The CorruptSnapshotException message Kafka's reader throws for a snapshot's bytes (``generated_reader``:
    Kafka 4's, else 3.x's), None where it reads the file and takes its entries."""
    problem = (_generated_problem if generated_reader else _schema_problem)(data)
    if problem is not None:
        return problem
    stored = _HEADER.unpack_from(data, 0)[1]
    computed = crc32c(data[SNAPSHOT_CRC_START:])
    if stored != computed:
        return f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. Computed crc: {computed}"
    return None


def _generated_problem(data: bytes | memoryview) -> str | None:
    n = len(data)
    if n < 2:
        return _INVALID + "null"
    version = int.from_bytes(data[:2], "big", signed=True)
    if version != VERSION:
        return _INVALID + f"Snapshot contained an unknown file version {version}"
    if n < _HEADER.size:
        return _INVALID + "null"
    count = _HEADER.unpack_from(data, 0)[2]
    remaining = n - _HEADER.size
    if count < 0:
        return _INVALID + "non-nullable field producerEntries was serialized as null"
    if count > remaining:
        return _INVALID + f"Tried to allocate a collection of size {count}, but there are only {remaining} bytes remaining."
    if count * _ENTRY_SIZE > remaining:
        return _INVALID + "null"
    return None


def _schema_problem(data: bytes | memoryview) -> str | None:
    n = len(data)
    for name, end in (("version", 2), ("crc", 6), (_ENTRIES_FIELD, _HEADER.size)):
        if n < end:
            return _INVALID + f"Error reading field '{name}': {_UNDERFLOW}"
    version, _, count = _HEADER.unpack_from(data, 0)
    remaining = n - _HEADER.size
    if count < 0:
        return _INVALID + f"Error reading field '{_ENTRIES_FIELD}': Array size {count} cannot be negative"
    if count > remaining:
        return _INVALID + (f"Error reading field '{_ENTRIES_FIELD}': Error reading array of size {count}, "
                           f"only {remaining} bytes available")
    if count * _ENTRY_SIZE > remaining:
        cut = remaining % _ENTRY_SIZE  # where the bytes end inside the first entry they do not hold
        name = next(name for name, end in _FIELD_ENDS if end > cut)
        return _INVALID + f"Error reading field '{_ENTRIES_FIELD}': Error reading field '{name}': {_UNDERFLOW}"
    if version != VERSION:
        return f"Snapshot contained an unknown file version {version}"
    return None
