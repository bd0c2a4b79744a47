"""Picks the C accelerator for the hot loops when it is built, else the Python reference.

``KSEG_PURE_PYTHON=1`` forces the Python code (used by the tests that prove
both give the same records and the same errors).
"""

from __future__ import annotations

import os
from typing import Any

from kseg.errors import CorruptBatchError, KsegError, TruncatedError, VarintError
from kseg.facts.message_v0v1 import CRC_START as LEGACY_CRC_START
from kseg.formats.attributes import TIMESTAMP_TYPE_MASK
from kseg.layouts import accelerator_layout
from kseg.log.decode import Scan, Tail
from kseg.log.decode import decode_legacy_wrapper as _legacy_set_py
from kseg.log.decode import decode_v2_records as _decode_v2_py
from kseg.log.decode import legacy_record as _legacy_record_py
from kseg.log.decode import scan_entries as _scan_py
from kseg.model import Batch, Header, Record

try:
    from kseg.log import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - exercised when the extension is not built
    _speedups = None
else:
    _speedups.configure(**accelerator_layout())
    _speedups.configure_fields(Batch._fields, Record._fields, Header._fields)

ACCELERATED = _speedups is not None and not os.environ.get("KSEG_PURE_PYTHON")


def c_encoder(name: str) -> Any:
    """The C encoder ``name`` (``encode_v2_records``, ``encode_legacy_messages``) for
    kseg.log.encode, or None when the accelerator is off (then it uses its Python twins)."""
    return getattr(_speedups, name) if ACCELERATED else None


def c_twin(name: str) -> Any:
    """The C twin ``name`` of a Python reference elsewhere in kseg.log (``resync`` for
    salvage_scan.find_candidate), or None when the accelerator is off or was built without it."""
    return getattr(_speedups, name, None) if ACCELERATED else None


_lz4_bound: list[Any] = []


def bind_lz4(codec: Any) -> None:
    """Once: let the C run of sound v2 batches decompress Kafka's LZ4 frames itself, with the
    liblz4 the lz4 codec uses (``codec.kafka_frame_layout()``; ``_speedups.configure_lz4``)."""
    if _lz4_bound or not ACCELERATED:
        return
    _lz4_bound.append(codec)
    layout = getattr(codec, "kafka_frame_layout", None)
    if layout is not None:
        _speedups.configure_lz4(*layout())


def lz4_frame_bytes(codec: Any, data: Any, limit: int) -> bytes | None:
    """A batch's payload of ``codec`` (the lz4 codec) decompressed in C straight into one bytes
    object when it is exactly a frame Kafka writes; None otherwise, or with the accelerator
    off: then ``codec.decompress`` (the twin) decodes it and words any error."""
    if not ACCELERATED:
        return None
    bind_lz4(codec)
    return _speedups.lz4_frame_bytes(data, limit)


_KINDS = {"varint": VarintError, "corrupt": CorruptBatchError, "truncated": TruncatedError}


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


def scan_entries(
    buf: bytes | memoryview, base: int = 0, *, final: bool = True, start: int = 0, max_entries: int = -1
) -> Scan:
    """Split .log bytes into entries (see ``decode.scan_entries``)."""
    if not ACCELERATED:
        return _scan_py(buf, base, final=final, start=start, max_entries=max_entries)
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    batches, consumed, tail = _speedups.scan(mv, base, final, Batch, start, max_entries)
    if tail is None:
        return Scan(batches, consumed, None)
    kind, message, position, expected, found = tail
    cls = TruncatedError if kind == "truncated" else CorruptBatchError
    err = cls(message, position=position, expected=expected, found=found)
    return Scan(batches, consumed, Tail(base + consumed, len(mv) - consumed, err))


def legacy_batch_record(batch: Batch) -> Record:
    """An uncompressed v0/v1 entry as its one record, with its own offset and timestamp."""
    if not ACCELERATED:
        return _legacy_record_py(batch, batch.base_offset, batch.max_timestamp)
    try:
        return _speedups.legacy_batch_record(batch, Record)
    except _speedups.DecodeError as e:
        raise _converted(e) from None


def legacy_record(batch: Batch, offset: int, timestamp: int) -> Record:
    """An uncompressed v0/v1 message as a record (see ``decode.legacy_record``)."""
    if not ACCELERATED:
        return _legacy_record_py(batch, offset, timestamp)
    try:
        return _speedups.legacy_record(batch.raw, batch.magic, offset, timestamp, batch.max_timestamp,
                                       batch.attributes, batch.crc, Record)
    except _speedups.DecodeError as e:
        raise _converted(e) from None


def decode_legacy_wrapper(wrapper: Batch, inner_bytes: bytes) -> list[Record]:
    """Inner records of a compressed v0/v1 wrapper (see ``decode.decode_legacy_wrapper``)."""
    if not ACCELERATED:
        return _legacy_set_py(wrapper, inner_bytes)
    try:
        return _speedups.legacy_set(inner_bytes, wrapper.magic, wrapper.base_offset, _wrapper_lat(wrapper), Record)
    except _speedups.DecodeError as e:
        raise _converted(e) from None


def _wrapper_lat(wrapper: Batch) -> int | None:
    """The LogAppendTime a v1 wrapper imposes on its inner messages, or None."""
    return wrapper.max_timestamp if wrapper.magic >= 1 and wrapper.attributes & TIMESTAMP_TYPE_MASK else None


def v2_record_spans(
    data: bytes, base_offset: int, base_timestamp: int, count: int, log_append_time: int | None
) -> tuple[bytes, bytes, int] | None:
    """Where the records and their headers lie in ``data`` (kseg/log/_spans.h) and the first
    record's offset, after the same checks and with the same errors as ``decode_v2_records``;
    None without the accelerator."""
    if not ACCELERATED:
        return None
    try:
        return _speedups.decode_v2(data, base_offset, base_timestamp, count, log_append_time, None, None, True)
    except _speedups.DecodeError as e:
        raise _converted(e) from None


def legacy_record_spans(wrapper: Batch, inner_bytes: bytes) -> tuple[bytes, int, int] | None:
    """Where a wrapper's inner messages lie in ``inner_bytes`` (kseg/log/_spans.h), their count
    and the first offset, after the checks of ``decode_legacy_wrapper``; None without the accelerator."""
    if not ACCELERATED:
        return None
    try:
        return _speedups.legacy_set(inner_bytes, wrapper.magic, wrapper.base_offset, _wrapper_lat(wrapper), Record,
                                    True)
    except _speedups.DecodeError as e:
        raise _converted(e) from None


def plain_message_spans(batches: list[Batch], start: int) -> tuple[bytes | None, bytes, int, list[int]] | None:
    """The spans (kseg/log/_spans.h) of the run of uncompressed v0/v1 messages from
    ``batches[start]`` that share one chunk of the file: (that chunk, spans, where the run
    stops, indices of bad CRCs); None without the accelerator."""
    if not ACCELERATED:
        return None
    return _speedups.plain_spans(batches, start)


def legacy_crc_mismatches(inner_bytes: bytes) -> list[tuple[int, int, int]]:
    """(index, stored, computed) for each inner message of a wrapper payload whose CRC-32 is wrong."""
    if not ACCELERATED:
        import zlib

        out = []
        for i, m in enumerate(_scan_py(inner_bytes, 0, final=True).batches):
            computed = zlib.crc32(m.raw[LEGACY_CRC_START:])
            if computed != m.crc:
                out.append((i, m.crc, computed))
        return out
    return _speedups.legacy_crc_mismatches(inner_bytes)


# The compiled extensions, each with what it speeds up (``kseg --version`` says which are in use).
EXTENSIONS = {
    "kseg.log._speedups": "scanning, record decoding, verify",
    "kseg._checksum": "CRC-32C and CRC-32",
    "kseg.render._format": "the dump line writers",
    "kseg.log._sketch": "the stats walk",
}


def accelerator_status() -> str:
    """Whether the C accelerator is in use: built and enabled, built and disabled, or not built."""
    import importlib.util

    built = [name for name in EXTENSIONS if importlib.util.find_spec(name) is not None]
    if not built:
        return "not built (pure Python)"
    state = "disabled by KSEG_PURE_PYTHON" if os.environ.get("KSEG_PURE_PYTHON") else "in use"
    missing = [n for n in EXTENSIONS if n not in built]
    return f"{state} ({len(built)} of {len(EXTENSIONS)} extensions built" + (
        f"; missing {', '.join(missing)})" if missing else ")")
