"""Where kafka-dump-log.sh stops with an exception instead of printing on, and what it has printed
by then: Kafka's reader's rules (``kseg.log.decode.kafka_entry_at``, ``printBatchLevel``) applied to
what kseg read, so that ``--format kafka`` ends where the tool's output ends (the exception
itself is one kseg error line, exit 1). Held to the real tool on damaged copies of broker-written
segments by ``tests/test_kafka_damaged_corpora.py``.
"""

from __future__ import annotations

from kseg.errors import CorruptBatchError
from kseg.facts.log_entry import MAGIC_POSITION, SIZE_POSITION
from kseg.facts.message_v0v1 import RECORD_OVERHEAD_V0
from kseg.log.decode import kafka_entry_at
from kseg.model import CODEC_NAMES, Batch

#: where the batch line's second half starts: Kafka builds each half whole, then prints it
SECOND_HALF = b" position: "


def tail_stop(head: bytes, length: int, position: int) -> tuple[str, CorruptBatchError | None]:
    """What the tool prints for the ``length`` bytes after the last batch kseg read (``head``: their
    first bytes, at ``position``), and the error it stops with there; None: it prints its "Found N
    invalid bytes" line instead. Kafka reads an entry whose size is below its minimum as an error,
    one that runs past the end as trailing bytes, and one that fits as a batch: a negative magic as
    a legacy message's, whose line stops after its offset (the others kseg passes over are known
    differences: ``tests/test_kafka_damaged_corpora.py``)."""
    entry = kafka_entry_at(head, length)
    if entry.found == "undersized":
        return "", CorruptBatchError("entry size below Kafka's minimum record overhead",
                                     position=position + SIZE_POSITION, expected=f">= {RECORD_OVERHEAD_V0}",
                                     found=entry.size)
    if entry.found != "legacy" or entry.magic >= 0:
        return "", None
    return f"offset: {entry.offset}", CorruptBatchError("negative magic", position=position + MAGIC_POSITION,
                                                        expected="0, 1 or 2", found=entry.magic)


def codec_stop(batch: Batch) -> CorruptBatchError | None:
    """The error the tool stops with in a batch's line, after its first half, when it cannot name
    the batch's codec (an id past zstd that is not a plugin kseg has registered); None if it can."""
    if batch.codec in CODEC_NAMES or batch.plugin_alias:
        return None
    return CorruptBatchError("unknown compression type id", position=batch.position, expected="0..4",
                             found=batch.codec)
