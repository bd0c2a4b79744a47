"""Rebuild an entry from its decoded parts: the proof that decode and encode agree.

``rebuild_entry`` decodes a batch, encodes the records again, checks that the
encoded records equal the (decompressed) payload, and reassembles the entry
around the original compressed bytes (no recompression: codecs are not
byte-reproducible across implementations, and the broker keeps them as produced).
For every valid entry the result must equal the input bytes.
"""

from __future__ import annotations

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES
from kseg.errors import CorruptBatchError
from kseg.log.decode import legacy_value_region, records_region
from kseg.log.encode import (
    assemble_v2,
    build_legacy_message,
    build_legacy_message_set,
    encode_v2_records,
    header_of,
    wrap_legacy,
)
from kseg.log.records import batch_records, payload_bytes
from kseg.model import Batch


def rebuild_entry(batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
    """The bytes of ``batch`` built again from its decoded fields and records."""
    records = batch_records(batch, limit=limit)
    if batch.magic >= 2:
        header = header_of(batch)
        encoded = encode_v2_records(records, batch.base_offset, header.base_timestamp)
        if batch.codec == 0:
            return assemble_v2(header, encoded)
        plain, _ = payload_bytes(batch, limit=limit)
        _require_same(batch, plain, encoded)
        return assemble_v2(header, bytes(records_region(batch)))
    if batch.codec == 0:
        (r,) = records
        return build_legacy_message(batch.base_offset, batch.magic, batch.attributes, batch.max_timestamp,
                                    r.key, r.value)
    if batch.magic == 1:
        relative_to = 0 if batch.base_offset == 0 else records[0].offset
    else:
        relative_to = None
    encoded = build_legacy_message_set(records, magic=records[0].magic, relative_to=relative_to)
    plain, _ = payload_bytes(batch, limit=limit)
    _require_same(batch, plain, encoded)
    _, value = legacy_value_region(batch)
    return wrap_legacy(batch.base_offset, batch.magic, batch.codec, bytes(value),  # type: ignore[arg-type]
                       timestamp_type=batch.timestamp_type, timestamp=batch.max_timestamp)


def _require_same(batch: Batch, plain: bytes, encoded: bytes) -> None:
    if plain != encoded:
        at = next((i for i, (a, b) in enumerate(zip(plain, encoded)) if a != b), min(len(plain), len(encoded)))
        raise CorruptBatchError(
            "re-encoded records differ from the decompressed payload", position=batch.position,
            where=f"byte {at} of the decompressed payload",
            expected=f"{len(plain)} bytes", found=f"{len(encoded)} bytes",
        )
