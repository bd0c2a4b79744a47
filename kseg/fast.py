"""Picks the C accelerator for the hot loops when it is built, else the Python reference.

``KSEG_PURE_PYTHON=1`` forces the Python code (used by the tests that prove
both give the same records and the same errors).
"""

from __future__ import annotations

import os

from .decode import decode_v2_records as _decode_v2_py
from .errors import CorruptBatchError, KsegError, VarintError
from .model import Header, Record

try:
    from . import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised when the extension is not built
    _speedups = None

ACCELERATED = _speedups is not None and not os.environ.get("KSEG_PURE_PYTHON")

_KINDS = {"varint": VarintError, "corrupt": CorruptBatchError}


def _converted(e: Exception) -> KsegError:
    kind, message, position, index, expected, found = e.args
    return _KINDS[kind](
        message,
        position=None if position < 0 else position,
        where=None if index < 0 else f"record {index}",
        expected=expected,
        found=found,
    )


def decode_v2_records(
    data: bytes, base_offset: int, base_timestamp: int, count: int, log_append_time: int | None
) -> list[Record]:
    """Decode a v2 records section (see ``decode.decode_v2_records``)."""
    if not ACCELERATED:
        return _decode_v2_py(data, base_offset, base_timestamp, count, log_append_time)
    try:
        return _speedups.decode_v2(data, base_offset, base_timestamp, count, log_append_time, Record, Header)
    except _speedups.DecodeError as e:
        raise _converted(e) from None


def check_v2_records(
    data: bytes, base_timestamp: int, count: int
) -> tuple[int | None, bool, int, int]:
    """Validate a v2 records section without building records.

    Returns (max stored timestamp or None, offset deltas strictly increasing,
    smallest delta, largest delta).
    """
    if not ACCELERATED:
        records = _decode_v2_py(data, 0, base_timestamp, count, None)
        if not records:
            return None, True, 0, 0
        deltas = [r.offset for r in records]
        ordered = all(a < b for a, b in zip(deltas, deltas[1:]))
        return max(r.stored_timestamp for r in records), ordered, min(deltas), max(deltas)
    try:
        return _speedups.decode_v2(data, 0, base_timestamp, count, None, None, None)
    except _speedups.DecodeError as e:
        raise _converted(e) from None
