"""Resynchronising after damage: where the next batch that passes every check starts.

Rules: sans-IO (bytes in, positions out); positions are indices into the buffer given.
``find_candidate`` is the reference of ``_speedups.resync`` (held equal by
tests/test_salvage.py): the first position from ``start`` where the framing is plausible —
a known magic byte, a length between the magic's minimum and ``max_size``, attributes with
no unknown bit and a codec Kafka has, offsets inside ``[min_offset, max_offset]``, and for
v2 a lastOffsetDelta and record count that agree, for v0/v1 a key and value length that add
up to the message exactly. ``next_batch`` then requires the CRC (v2: CRC-32C of the batch;
v0/v1: CRC-32 of the message, a compressed wrapper's included) and moves on past a
candidate that fails it. A zero-filled stretch is skipped without looking at each byte:
a length of zero is never plausible.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from kseg.checksums import crc32, crc32c
from kseg.facts.log_entry import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MIN_SIZE_BY_MAGIC
from kseg.facts.message_v0v1 import ATTRIBUTES_POSITION as LEGACY_ATTRIBUTES_POSITION
from kseg.facts.message_v0v1 import CRC_POSITION as LEGACY_CRC_POSITION
from kseg.facts.message_v0v1 import CRC_START as LEGACY_CRC_START
from kseg.facts.message_v0v1 import KEY_LENGTH_POSITION
from kseg.facts.primitives import INT64_MAX
from kseg.facts.record_batch_v2 import (
    ATTRIBUTES_POSITION,
    CRC_POSITION,
    CRC_START,
    LAST_OFFSET_DELTA_POSITION,
    RECORD_BATCH_OVERHEAD,
    RECORD_COUNT_POSITION,
)
from kseg.formats.attributes import (
    CODEC_LZ4,
    CODEC_MASK,
    CODEC_PLUGIN,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    PLUGIN_ID_MASK,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kseg.log import fast

__all__ = ["FOUND", "MORE", "NONE", "Limits", "find", "find_candidate", "next_batch", "resync_args"]

# What a search ends with.
FOUND = 0  # a candidate at the position, whole in the buffer
MORE = 1  # the buffer ends before the position's checks could finish: read on from there
NONE = 2  # no candidate from start to the end of the (final) buffer

# The attribute bits each magic may set (anything else is not a batch a Kafka wrote).
V0_ATTRIBUTES = CODEC_MASK
V1_ATTRIBUTES = CODEC_MASK | TIMESTAMP_TYPE_MASK
V2_ATTRIBUTES = (CODEC_MASK | TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK | DELETE_HORIZON_MASK
                 | PLUGIN_ID_MASK)
MAX_LEGACY_CODEC = CODEC_LZ4
MAX_V2_CODEC = CODEC_PLUGIN
LEADER_EPOCH_POSITION = 12  # partitionLeaderEpoch: -1 (none) or an epoch
NO_EPOCH = -1

_MAGIC = re.compile(rb"[\x00-\x02]")
_NONZERO = re.compile(rb"[^\x00]")


class Limits(NamedTuple):
    """What a batch found here may claim: its offsets (inclusive) and its whole size."""

    min_offset: int = 0
    max_offset: int = INT64_MAX
    max_size: int = 64 << 20


def _i32(b: bytes | memoryview, at: int) -> int:
    return int.from_bytes(b[at:at + 4], "big", signed=True)


def _check_at(mv: memoryview, p: int, end: int, magic: int, final: bool, lim: Limits) -> tuple[int, int]:
    """(status, total) for position ``p`` whose magic byte is ``magic`` and whose prefix is
    whole: FOUND, MORE (checks need bytes past ``end``), or NONE (not plausible)."""
    size = _i32(mv, p + 8)
    if size < MIN_SIZE_BY_MAGIC[magic]:
        return NONE, 0
    total = size + LOG_OVERHEAD
    if total > lim.max_size:
        return NONE, 0
    offset = int.from_bytes(mv[p:p + 8], "big", signed=True)
    if offset < lim.min_offset or offset > lim.max_offset:
        return NONE, 0
    left = end - p
    if magic == 2:
        if left < RECORD_BATCH_OVERHEAD:
            return (NONE, 0) if final else (MORE, 0)
        attrs = int.from_bytes(mv[p + ATTRIBUTES_POSITION:p + ATTRIBUTES_POSITION + 2], "big")
        if attrs & ~V2_ATTRIBUTES or attrs & CODEC_MASK > MAX_V2_CODEC:
            return NONE, 0
        lod = _i32(mv, p + LAST_OFFSET_DELTA_POSITION)
        count = _i32(mv, p + RECORD_COUNT_POSITION)
        if lod < 0 or count < 0 or count > lod + 1 or offset + lod > lim.max_offset:
            return NONE, 0
        if _i32(mv, p + LEADER_EPOCH_POSITION) < NO_EPOCH:
            return NONE, 0
    else:
        key_at = KEY_LENGTH_POSITION[magic]
        if left < key_at + 4:
            return (NONE, 0) if final else (MORE, 0)
        attrs = mv[p + LEGACY_ATTRIBUTES_POSITION]
        if attrs & ~(V1_ATTRIBUTES if magic == 1 else V0_ATTRIBUTES) or attrs & CODEC_MASK > MAX_LEGACY_CODEC:
            return NONE, 0
        klen = _i32(mv, p + key_at)
        if klen < -1:
            return NONE, 0
        value_at = key_at + 4 + max(klen, 0)
        if value_at + 4 > total:
            return NONE, 0
        if left < value_at + 4:
            return (NONE, 0) if final else (MORE, total)
        vlen = _i32(mv, p + value_at)
        if vlen < -1 or value_at + 4 + max(vlen, 0) != total:
            return NONE, 0
    if total > left:
        return (NONE, 0) if final else (MORE, total)
    return FOUND, total


def find_candidate(buf: bytes | memoryview, start: int, final: bool, lim: Limits) -> tuple[int, int, int]:
    """(status, position, total): the first position from ``start`` whose framing passes the
    checks (FOUND, with the entry's total size), the first one whose checks need bytes past the
    buffer (MORE, with the size it claims when known, else 0), or NONE at the buffer's end."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    pos = start
    last_whole = end - HEADER_SIZE_UP_TO_MAGIC  # the last position whose prefix is whole
    while True:
        if pos > last_whole:
            return (NONE, end, 0) if final else (MORE, pos, 0)
        m = _MAGIC.search(mv, pos + 16)
        if m is None:
            pos = last_whole + 1
            continue
        p = m.start() - 16
        if p > last_whole:
            pos = p
            continue
        if not any(mv[p + 8:p + 12]):
            # A zero length: so is every length read inside the zeros that follow.
            nz = _NONZERO.search(mv, p + 8)
            q = nz.start() if nz is not None else end
            pos = max(p + 1, min(q - 11, last_whole + 1))
            continue
        status, total = _check_at(mv, p, end, mv[p + 16], final, lim)
        if status != NONE:
            return status, p, total
        pos = p + 1


def _crc_ok(mv: memoryview, p: int, total: int) -> bool:
    raw = mv[p:p + total]
    if raw[16] >= 2:
        return crc32c(raw[CRC_START:]) == int.from_bytes(raw[CRC_POSITION:CRC_POSITION + 4], "big")
    return crc32(raw[LEGACY_CRC_START:]) == int.from_bytes(raw[LEGACY_CRC_POSITION:LEGACY_CRC_POSITION + 4], "big")


def resync_args(lim: Limits) -> tuple[int, ...]:
    """The limits and attribute rules as the C twin takes them."""
    return (lim.min_offset, lim.max_offset, lim.max_size, V0_ATTRIBUTES, V1_ATTRIBUTES, V2_ATTRIBUTES,
            MAX_LEGACY_CODEC, MAX_V2_CODEC)


_RESYNC = fast.c_twin("resync")


def _c_find(buf: bytes | memoryview, start: int, final: bool, lim: Limits) -> tuple[int, int, int]:
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    return _RESYNC(mv, start, final, *resync_args(lim))  # type: ignore[no-any-return]


def default_finder() -> object:
    """The C twin when the accelerator is in use (and has it), else the reference."""
    return _c_find if _RESYNC is not None else find_candidate


def next_batch(buf: bytes | memoryview, start: int, lim: Limits, *, final: bool = True,
               finder: object = None) -> tuple[int, int, int]:
    """(status, position, total) of the next batch from ``start`` that passes every check, CRC
    included; MORE asks for the buffer read on from the position (``total``: bytes it needs)."""
    find = finder or _FINDER
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    pos = start
    while True:
        status, p, total = find(mv, pos, final, lim)  # type: ignore[operator]
        if status != FOUND or _crc_ok(mv, p, total):
            return status, p, total
        pos = p + 1


_FINDER = default_finder()
find = _FINDER  # the finder in use: ``find(buf, start, final, limits)``, as find_candidate
