"""The iteration orders of the JVM hash collections kafka-dump-log.sh prints from, so that
``--format kafka`` lists things in the order the real tool does.

    Java ``HashMap``:            buckets by ``(h ^ (h >>> 16)) & (capacity - 1)``, insertion order
                                 within a bucket; 16 buckets, doubled past 3/4 full
    Scala 2.13 ``mutable.Hash*``: the same spread and buckets, ordered by that hash within a
                                 bucket; doubled when an addition would reach 3/4 full

And how ``new String(bytes, UTF_8)`` reads malformed input (``java_utf8``), which is
how kafka-dump-log.sh shows keys, payloads and header keys.

Rules: pure functions of the elements (and their insertion order); no I/O.
"""

from __future__ import annotations

import codecs
from typing import Sequence

__all__ = ["JAVA_UTF8_ERRORS", "PATH_MAP_ORDERS", "java_hash_map_order", "java_string_hash", "java_utf8",
           "scala_hash_map_order", "scala_hash_set_order", "topic_partition_hash"]

# Java replaces each maximal invalid subpart with one U+FFFD, as Python's "replace" does, except
# for an encoded surrogate: ED A0..BF is one unit with the continuation byte after it, if any
# (Python: one U+FFFD per byte). Found by decoding byte strings with the JVM (tests/test_jvm_utf8.py).
JAVA_UTF8_ERRORS = "kseg-java-utf8"


def _java_replace(e: UnicodeError) -> tuple[str, int]:
    if not isinstance(e, UnicodeDecodeError):
        raise e
    data, at = e.object, e.start
    if data[at] == 0xED and at + 1 < len(data) and 0xA0 <= data[at + 1] <= 0xBF:
        end = at + 2
        if end < len(data) and 0x80 <= data[end] <= 0xBF:
            end += 1
        return "\ufffd", end
    return "\ufffd", e.end


codecs.register_error(JAVA_UTF8_ERRORS, _java_replace)


def java_utf8(b: bytes) -> str:
    """``new String(b, StandardCharsets.UTF_8)``: malformed input becomes U+FFFD, as the JVM counts it."""
    return b.decode("utf-8", JAVA_UTF8_ERRORS)


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _spread(h: int) -> int:
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 16))


def java_string_hash(s: str) -> int:
    """``String.hashCode`` (over UTF-16 code units)."""
    h = 0
    raw = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = _i32(31 * h + int.from_bytes(raw[i:i + 2], "big"))
    return h


def topic_partition_hash(topic: str, partition: int) -> int:
    """``TopicPartition.hashCode``."""
    return _i32(31 * _i32(31 + partition) + java_string_hash(topic))


def java_hash_map_order(keys: Sequence[str]) -> list[str]:
    """The order a ``java.util.HashMap<String, ?>`` filled with ``keys`` (in that order) iterates in."""
    unique = list(dict.fromkeys(keys))
    size = 16
    while len(unique) > size * 3 // 4:
        size *= 2
    index = {k: i for i, k in enumerate(unique)}
    return sorted(unique, key=lambda k: (_spread(java_string_hash(k)) & (size - 1), index[k]))


def scala_hash_map_order(keys: Sequence[str]) -> list[str]:
    """The order a Scala 2.13 ``mutable.HashMap[String, _]`` filled with ``keys`` iterates in."""
    unique = list(dict.fromkeys(keys))
    size = 16
    for n in range(len(unique)):
        if n + 1 >= int(size * 0.75):
            size *= 2
    hashes = {k: _spread(java_string_hash(k)) for k in unique}
    return sorted(unique, key=lambda k: (hashes[k] & (size - 1), hashes[k]))


#: a release row's path_map_order (kseg.kafka_releases) -> how its tool's map of file paths orders them
PATH_MAP_ORDERS = {"java": java_hash_map_order, "scala": scala_hash_map_order}


def scala_hash_set_order(groups: Sequence[Sequence[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` filled with ``++=`` once
    per group (Kafka 3.x's transaction partitions): the table starts at 16 buckets, is sized
    up front for each group (``sizeHint``) and doubles at 3/4 full while a group of at most 4
    (a small immutable set, added one by one) goes in."""
    size, count = 16, 0
    hashes: dict[tuple[str, int], int] = {}
    for group in groups:
        k = len(set(group))
        cap = max(int((k + 1) / 0.75) - 1, 4)
        size = max(size, min(1 << cap.bit_length(), 1 << 30))
        for tp in group:
            if tp in hashes:
                continue
            if k <= 4 and count + 1 >= int(size * 0.75):
                size *= 2
            hashes[tp] = _spread(topic_partition_hash(*tp))
            count += 1
    return sorted(hashes, key=lambda tp: (hashes[tp] & (size - 1), hashes[tp]))
