"""Defaults kseg shares with the broker, and the size units its options accept.

Each default is defined here once; commands, the library and the Spark layer
take them from here. The names after ``#`` are the broker settings they mirror.
"""

from __future__ import annotations

from kseg.errors import InputError

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_RECORDS",
    "DEFAULT_DELETE_RETENTION_MS",
    "DEFAULT_INDEX_INTERVAL_BYTES",
    "DEFAULT_KEY_MAP_BYTES",
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "DEFAULT_PRODUCER_EXPIRATION_MS",
    "DEFAULT_SEGMENT_BYTES",
    "DEFAULT_SEGMENT_INDEX_BYTES",
    "KAFKA_MAX_MESSAGE_SIZE",
    "KAFKA_TOOL_HEAP_BYTES",
    "RANGE_READ_BYTES",
    "READ_CHUNK_BYTES",
    "parse_size",
]

# Files are read in chunks of this size (memory stays flat whatever the file's size). 2 MiB
# reads as fast as 4 or 8 (a read call per 2 MiB is nothing; verify, dump and export of 629 MB
# timed the same) and holds less: a reader holds up to two chunks, and an export of 100 MB
# peaked at 110 MB RSS with 8 MiB, 94 with 4; a Parquet export of 629 MB 96 MB with 2, 100 with 4.
READ_CHUNK_BYTES = 2 * 1024 * 1024
# Objects in a store are read in ranges of this size: a request costs a round trip, not bytes.
RANGE_READ_BYTES = 8 * 1024 * 1024
# A batch that inflates past this is an error, not an out-of-memory crash.
DEFAULT_MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024
DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes
# Grouping of uncompressed legacy messages into v2 batches (or wrappers): at most
# this many records and bytes, so every batch stays under the broker's default
# max.message.bytes (1 MiB) and consumers with default fetch sizes read it.
DEFAULT_BATCH_RECORDS = 1000
DEFAULT_BATCH_BYTES = 1000 * 1024
DEFAULT_DELETE_RETENTION_MS = 86_400_000  # delete.retention.ms
# offsets.topic.num.partitions and transaction.state.log.num.partitions
DEFAULT_COORDINATOR_PARTITIONS = 50
DEFAULT_PRODUCER_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms
DEFAULT_KEY_MAP_BYTES = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024  # segment.bytes
DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes

_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: int | str) -> int:
    """Bytes from ``1048576``, ``64MiB``, ``64m``, ``1g``...; InputError if it is not a size."""
    if isinstance(value, int):
        return value
    text = str(value).strip().lower().rstrip("ib").rstrip("b")
    mult = 1
    if text and text[-1] in _UNITS:
        mult, text = _UNITS[text[-1]], text[:-1]
    try:
        return int(text) * mult
    except ValueError:
        raise InputError(f"not a size: {value!r} (e.g. 1048576, 64MiB, 1g)") from None

#: kafka-dump-log.sh's --max-message-size default: how far past an .index entry's position it reads a batch
KAFKA_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
# kafka-run-class.sh's heap for a tool (KAFKA_HEAP_OPTS=-Xmx256M): kafka-dump-log.sh dies of an
# OutOfMemoryError where its reader allocates a buffer of a claimed size larger than this (an inner
# message's size in a legacy wrapper), where a smaller claim that the bytes do not hold ends quietly.
# (The boundary is the heap that is free, a little less than this.)
KAFKA_TOOL_HEAP_BYTES = 256 * 1024 * 1024
