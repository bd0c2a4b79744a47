"""From a batch to its records: picks the codec, decompresses (bounded), decodes.

This is the one place that joins ``decode`` (bytes -> objects) with ``codecs``
(bytes -> bytes), and the one place that maps an error inside a batch back to
a byte position in the file.
"""

from __future__ import annotations

import struct
from typing import Callable, NamedTuple

from kseg.codecs import DEFAULT_MAX_DECOMPRESSED_BYTES, Codec, get_codec
from kseg.codecs.plugins import plugin_codec
from kseg.errors import CorruptBatchError, KsegError
from kseg.facts.record_batch_v2 import RECORD_BATCH_OVERHEAD, RECORD_COUNT_POSITION
from kseg.checksums import crc32c
from kseg.facts.primitives import INT64_MAX, INT64_MIN
from kseg.formats.attributes import CODEC_LZ4, CODEC_MASK, CODEC_PLUGIN, CODEC_ZSTD, CONTROL_MASK, TIMESTAMP_TYPE_MASK
from kseg.log.decode import decode_v2_records as py_decode_v2_records
from kseg.log.decode import (
    KafkaLegacyLine,
    effective_log_append_time,
    kafka_legacy_line,
    kafka_legacy_read,
    kafka_wrapper_lines,
    legacy_value_region,
    records_region,
)
from kseg.log.fast import (
    ACCELERATED,
    bind_lz4,
    c_twin,
    check_v2_records,
    decode_legacy_wrapper,
    decode_v2_records,
    legacy_batch_record,
    legacy_crc_mismatches,
    legacy_record_spans,
    lz4_frame_bytes,
    plain_message_spans,
    v2_record_spans,
)
from kseg.model import Batch, Record

# kseg.plugins.plugin_codec, imported on the first plugin batch
_plugin_codec: Callable[[int | None], Codec] | None = None


def codec_for(batch: Batch) -> Codec:
    """The codec object that decodes this batch's payload (built-in or plugin)."""
    if batch.magic >= 2 and batch.codec == CODEC_PLUGIN:
        global _plugin_codec
        if _plugin_codec is None:

            _plugin_codec = plugin_codec
        return _plugin_codec(batch.plugin_id)
    return get_codec(batch.codec)


def decompress_payload(batch: Batch, payload: bytes | memoryview, limit: int) -> bytes:
    try:
        codec = codec_for(batch)
        if batch.codec == CODEC_LZ4:  # Kafka's own frames in C; anything else the codec decides
            out = lz4_frame_bytes(codec, payload, limit)
            if out is not None:
                return out
        return codec.decompress(payload, magic=batch.magic, limit=limit)
    except KsegError as e:
        e.position = None  # a position inside the compressed stream means little to a user
        raise e.located(position=batch.position, where=f"{batch.codec_name} payload")


def payload_bytes(batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> tuple[bytes, bool]:
    """The records bytes (v2) or inner message set (legacy wrapper), decompressed; and
    whether they were compressed. Legacy uncompressed messages have no payload."""
    if batch.magic >= 2:
        region = records_region(batch)
        if batch.codec == 0:
            return bytes(region), False
        return decompress_payload(batch, region, limit), True
    try:
        _, value = legacy_value_region(batch)
    except KsegError as e:
        raise e.shift(batch.position)
    if value is None:
        raise CorruptBatchError("compressed wrapper has a null value", position=batch.position)
    return decompress_payload(batch, value, limit), True


def batch_records(batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                  payload: bytes | None = None) -> list[Record]:
    """Every record of a batch with absolute offsets and effective timestamps. ``payload``: a
    compressed batch's ``payload_bytes``, when the caller has them already."""
    if batch.magic < 2:
        if not batch.attributes & CODEC_MASK:  # the hot case of legacy segments
            try:
                return [legacy_batch_record(batch)]
            except KsegError as e:
                raise e.shift(batch.position)
        data = payload if payload is not None else payload_bytes(batch, limit=limit)[0]
        try:
            return decode_legacy_wrapper(batch, data)
        except KsegError as e:
            raise _in_file(e, batch, True)
    data, compressed, base_timestamp, count = _v2_section(batch, limit, payload)
    try:
        return decode_v2_records(data, batch.base_offset, base_timestamp, count, effective_log_append_time(batch))
    except KsegError as e:
        raise _in_file(e, batch, compressed)


def kafka_reads_records(batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> tuple[list[Record], bool]:
    """A v2 batch's records as Kafka's reader (``DefaultRecordBatch.iterator``) gives them where
    kseg's reader refuses them, as kafka-dump-log.sh prints them: the records, and whether Kafka
    throws after them. A count of 0 gives none and no check of the bytes left; a key, value or
    header value length below -1 reads as null; a compressed batch is read whole before any of it
    is printed (none, if it fails); an uncompressed one up to the record that fails, or all but
    the last when all read and bytes are left over (the check follows the last record)."""
    count = batch.record_count or 0
    if count == 0:
        return [], False
    if count < 0:
        return [], True
    read: list[Record] = []
    try:
        data = records_region(batch) if not batch.is_compressed else payload_bytes(batch, limit=limit)[0]
        py_decode_v2_records(bytes(data), batch.base_offset, batch.base_timestamp or 0, count,
                             effective_log_append_time(batch), into=read, kafka_lengths=True)
    except KsegError:
        if batch.is_compressed:
            return [], True
        return (read[:-1] if len(read) == count else read), True
    return read, False


def kafka_legacy_lines(batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
                       ) -> tuple[list[KafkaLegacyLine], CorruptBatchError | None]:
    """A legacy message's record lines as Kafka reads them where kseg's reader refuses it, and the
    error the tool throws after them (None: it goes on): an uncompressed message's one line, a
    wrapper's inner messages (``kafka_wrapper_lines``) from its value as Kafka slices it."""
    if not batch.attributes & CODEC_MASK:
        return [kafka_legacy_line(batch.raw, batch.offset, batch.max_timestamp, batch.position)], None
    wrapper = kafka_legacy_read(batch.raw, batch.magic, batch.position)
    if wrapper.sizes is None or wrapper.stop is not None:
        return [], wrapper.stop
    if wrapper.value is None:
        return kafka_wrapper_lines(batch, None)
    try:
        data = decompress_payload(batch, wrapper.value, limit)
    except KsegError as e:
        return [], CorruptBatchError(e.message, position=batch.position, expected=e.expected, found=e.found)
    return kafka_wrapper_lines(batch, data)


# kseg/log/_spans.h: a record's span (eleven int64s: offset, timestamp, key at/len, value at/len,
# first header, header count, message at/end, stored CRC) and a header's (four: key at/len, value at/len).
RECORD_SPAN = struct.Struct("=11q")  # KsegRecordSpan
HEADER_SPAN = struct.Struct("=4q")  # KsegHeaderSpan


class RecordSpans(NamedTuple):
    """A batch's records as spans over its decompressed ``data`` (kseg/log/_spans.h), for
    writers that need no record objects: ``count`` records, the first at ``first_offset``."""

    data: bytes
    records: bytes
    headers: bytes
    count: int
    first_offset: int


_NO_HEADERS = b""


def batch_spans(batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> RecordSpans | None:
    """``batch_records`` as spans, with the same checks and errors; None without the C
    accelerator or for an uncompressed v0/v1 message (then ``batch_records`` is the way)."""
    if not ACCELERATED:  # spans come from the C reader only
        return None
    if batch.magic < 2:
        if not batch.attributes & CODEC_MASK:
            return None
        data, _ = payload_bytes(batch, limit=limit)
        try:
            found = legacy_record_spans(batch, data)
        except KsegError as e:
            raise _in_file(e, batch, True)
        if found is None:
            return None
        spans, count, first = found
        return RecordSpans(data, spans, _NO_HEADERS, count, first)
    # The records where they lie: spans are offsets into the data, and copying a batch of large
    # values out of the chunk was a tenth of a kafka dump of them.
    data, compressed, base_timestamp, count = _v2_section(batch, limit, view=True)
    try:
        v2 = v2_record_spans(data, batch.base_offset, base_timestamp, count, effective_log_append_time(batch))
    except KsegError as e:
        raise _in_file(e, batch, compressed)
    if v2 is None:
        return None
    return RecordSpans(data, v2[0], v2[1], count, v2[2])


class PlainRun(NamedTuple):
    """Uncompressed v0/v1 messages taken at once: ``batches``, one record each, as ``spans``;
    ``bad_crcs``: the indices of those whose CRC-32 does not match."""

    batches: list[Batch]
    spans: RecordSpans
    bad_crcs: list[int]

    def part(self, start: int, stop: int) -> PlainRun:
        """The messages ``start:stop`` of the run (``0 < stop - start``)."""
        s = self.spans
        size = len(s.records) // s.count
        batches = self.batches[start:stop]
        return PlainRun(batches, RecordSpans(s.data, s.records[start * size:stop * size], s.headers, len(batches),
                                             batches[0].base_offset),
                        [k - start for k in self.bad_crcs if start <= k < stop])


def plain_run(batches: list[Batch], start: int) -> PlainRun | None:
    """The run of uncompressed v0/v1 messages from ``batches[start]`` (the scanner's list, one
    chunk of the file) with their records as spans; None without the C accelerator or when
    ``batches[start]`` is not such a message or does not decode (the per-batch path then says why)."""
    found = plain_message_spans(batches, start)
    if found is None or found[2] == start:
        return None
    data, spans, stop, bad = found
    assert data is not None
    run = batches[start:stop]
    return PlainRun(run, RecordSpans(data, spans, _NO_HEADERS, len(run), run[0].base_offset), bad)


class HeaderRun(NamedTuple):
    """v2 batches taken at once for their lines (``kseg.ops.dump.HeaderRunEvent``): those before
    ``stop``; ``records``, their record counts summed; ``bad``, the CRC-32C computed of each whose
    stored CRC does not match, by its index in the list; ``spans``, their records when the dump
    shows them (``v2_record_run``), else None."""

    stop: int
    records: int
    bad: dict[int, int]
    spans: RecordSpans | None = None

    def rebased(self, start: int) -> HeaderRun:
        """The run with ``stop`` and ``bad`` counted from ``start`` (the event's own list)."""
        return self._replace(stop=self.stop - start, bad={k - start: crc for k, crc in self.bad.items()})


# The codecs a header run takes: those the lines name without a lookup (a plugin codec's name is
# its registry's, an unknown codec stops kafka-dump-log.sh: the per-batch path says those).
HEADER_RUN_MAX_CODEC = CODEC_ZSTD


def v2_header_run(batches: list[Batch], start: int) -> HeaderRun:
    """The v2 batches from ``batches[start]`` whose lines alone a dump shows, taken at once (C: one
    call for the run, no Python work per batch but its CRC-32C): a built-in codec, a whole header,
    a last offset an int64 holds. stop == start: take ``batches[start]`` the per-batch way."""
    run = c_twin("v2_header_run")
    if run is None:
        return v2_header_run_py(batches, start)
    return HeaderRun(*run(batches, start, crc32c, HEADER_RUN_MAX_CODEC))


def v2_header_run_py(batches: list[Batch], start: int, max_codec: int = HEADER_RUN_MAX_CODEC) -> HeaderRun:
    """The reference of ``v2_header_run``: batch after batch."""
    records, bad = 0, {}
    i = start
    while i < len(batches):
        b = batches[i]
        if b.magic != 2 or b.codec > max_codec or len(b.raw) < RECORD_BATCH_OVERHEAD:
            break
        assert b.last_offset_delta is not None and b.record_count is not None  # set on every v2 batch
        total = records + b.record_count
        if not (INT64_MIN <= b.base_offset + b.last_offset_delta <= INT64_MAX and INT64_MIN <= total <= INT64_MAX):
            break
        computed = b.computed_crc()
        if computed != b.crc:
            bad[i] = computed
        records = total
        i += 1
    return HeaderRun(i, records, bad)


# A record run's data at most: its batches' records sections, as stored or decompressed, one after
# another (the lines written of them are a few times that).
RECORD_RUN_BYTES = 4 << 20


def v2_record_run(batches: list[Batch], start: int, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                  max_bytes: int | None = None) -> HeaderRun:
    """The v2 batches from ``batches[start]`` whose lines and records a dump shows, taken at once
    (C: one call for the run, the records as spans over one buffer, no Python work per batch but
    its CRC-32C): those ``v2_header_run`` takes that are not control batches (their records are
    shown decoded) and whose records decompress within ``limit`` and decode. stop == start: take
    ``batches[start]`` the per-batch way, as every batch without the C reader (spans are C's).
    ``max_bytes``: the run's data at most (None: ``RECORD_RUN_BYTES``)."""
    run = c_twin("v2_record_run")
    if run is None:
        return HeaderRun(start, 0, {})
    stop, records, bad, data, spans, headers = run(batches, start, crc32c, HEADER_RUN_MAX_CODEC, CONTROL_MASK,
                                                   TIMESTAMP_TYPE_MASK, limit, run_decompressor(limit), KsegError,
                                                   RECORD_RUN_BYTES if max_bytes is None else max_bytes)
    first = batches[start].base_offset if stop > start else 0
    return HeaderRun(stop, records, bad, RecordSpans(data, spans, headers, len(spans) // RECORD_SPAN.size, first))


def v2_record_run_py(batches: list[Batch], start: int, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
                     max_bytes: int | None = None) -> HeaderRun:
    """The reference of ``v2_record_run``: ``batch_spans`` of each batch (the C reader's spans of one
    batch, themselves held to ``batch_records``), their data joined and their positions moved."""
    max_bytes = RECORD_RUN_BYTES if max_bytes is None else max_bytes
    heads = v2_header_run_py(batches, start)
    data, spans, headers = bytearray(), bytearray(), bytearray()
    records, bad = 0, {}
    i = start
    while i < heads.stop and len(data) < max_bytes:
        b = batches[i]
        if b.is_control or len(b.raw) - RECORD_BATCH_OVERHEAD > max_bytes - len(data) or (b.record_count or 0) < 0:
            break
        try:
            one = batch_spans(b, limit=limit)
        except KsegError:
            break
        if one is None:
            break
        moved = _moved_spans(one, len(data), len(headers) // HEADER_SPAN.size)
        data += one.data
        spans += moved[0]
        headers += moved[1]
        if i in heads.bad:
            bad[i] = heads.bad[i]
        records += b.record_count or 0
        i += 1
    first = batches[start].base_offset if i > start else 0
    return HeaderRun(i, records, bad, RecordSpans(bytes(data), bytes(spans), bytes(headers),
                                                  len(spans) // RECORD_SPAN.size, first))




def _moved_spans(s: RecordSpans, by: int, first_header: int) -> tuple[bytes, bytes]:
    """A batch's spans as they lie in a run whose data has ``by`` bytes and ``first_header``
    header spans before this batch's."""
    spans = b"".join(RECORD_SPAN.pack(off, ts, kat + by, klen, vat + by, vlen, fh + first_header, hc, mat, mend, crc)
                     for off, ts, kat, klen, vat, vlen, fh, hc, mat, mend, crc in RECORD_SPAN.iter_unpack(s.records))
    headers = b"".join(HEADER_SPAN.pack(kat + by, klen, vat + by, vlen)
                       for kat, klen, vat, vlen in HEADER_SPAN.iter_unpack(s.headers))
    return spans, headers


_decompressors: dict[int, Callable[[int, memoryview], bytes]] = {}


def run_decompressor(limit: int) -> Callable[[int, memoryview], bytes]:
    """What the C runs (verify's, stats', the dump's, the columns') call for a payload they do not
    decompress themselves: the codec's own ``decompress`` within ``limit``, as the per-batch path
    calls it. The first lz4 payload binds the C reader of Kafka's LZ4 frames."""
    found = _decompressors.get(limit)
    if found is not None:
        return found

    codecs: dict[int, Codec] = {}

    def decompress(codec_id: int, payload: memoryview) -> bytes:
        codec = codecs.get(codec_id)
        if codec is None:
            codec = codecs[codec_id] = get_codec(codec_id)
            if codec_id == CODEC_LZ4:
                bind_lz4(codec)
        out = codec.decompress_v2_whole(payload, limit)
        return codec.decompress(payload, magic=2, limit=limit) if out is None else out

    if len(_decompressors) > 8:
        _decompressors.clear()
    _decompressors[limit] = decompress
    return decompress


def check_v2_batch_records(
    batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> tuple[int | None, bool, int, int]:
    """Validate a v2 batch's records without building them (the verify path):
    (max stored timestamp, offset deltas increasing, min delta, max delta)."""
    data, compressed, base_timestamp, count = _v2_section(batch, limit)
    try:
        return check_v2_records(data, base_timestamp, count)
    except KsegError as e:
        raise _in_file(e, batch, compressed)


def _v2_section(batch: Batch, limit: int, payload: bytes | None = None, *,
                view: bool = False) -> tuple[bytes | memoryview, bool, int, int]:
    """A v2 batch's records section, decompressed (``payload``: already); whether it was
    compressed; base timestamp, count. ``view``: an uncompressed section as a view of the
    batch's bytes, not a copy (for readers that do not keep it)."""
    base_timestamp, count = batch.base_timestamp, batch.record_count
    assert base_timestamp is not None and count is not None  # set on every v2 batch
    if count < 0:
        raise _negative_count(batch, count)
    if view and batch.codec == 0:
        return records_region(batch), False, base_timestamp, count
    data, compressed = (payload, True) if payload is not None and batch.is_compressed else payload_bytes(batch,
                                                                                                       limit=limit)
    return data, compressed, base_timestamp, count


def _negative_count(batch: Batch, count: int) -> CorruptBatchError:
    return CorruptBatchError("negative record count", position=batch.position + RECORD_COUNT_POSITION,
                             expected=">= 0", found=count)


def _in_file(e: KsegError, batch: Batch, compressed: bool) -> KsegError:
    """Map a position inside the records to one in the file (or name the decompressed byte)."""
    if e.position is None:
        e.position = batch.position
        return e
    if compressed:
        inner = f"byte {e.position} of the decompressed payload" if e.position is not None else None
        e.where = ", ".join(x for x in (e.where, inner) if x)
        e.position = batch.position
        return e
    return e.shift(batch.position + RECORD_BATCH_OVERHEAD)


def wrapper_records(batch: Batch, *, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES
                    ) -> tuple[list[Record], list[tuple[int, int, int]]]:
    """A legacy wrapper's records and its inner CRC mismatches (index, stored, computed),
    decompressing once (the verify path)."""
    data, _ = payload_bytes(batch, limit=limit)
    try:
        records = decode_legacy_wrapper(batch, data)
    except KsegError as e:
        raise _in_file(e, batch, True)
    return records, legacy_crc_mismatches(data)
