"""Fuzz targets: one function per entry point, bytes in, nothing out.

Each target takes any ``bytes`` and either returns or raises. A target fails (and
the fuzzer reports a finding) when:

- anything but a ``kseg.errors.KsegError`` escapes the code under test (a bare
  ``IndexError``, ``struct.error``, ``OverflowError``, ``MemoryError``, ...), or
- for the accelerated entry points, the C accelerator and its pure-Python twin
  disagree: other batches, consumed bytes, tail, records, encoded bytes, or another
  error (class, message, byte position, ``where``, expected, found);
- or a sanitizer stops the process (a C memory or undefined-behaviour error).

The same targets run under atheris (``tests/fuzz/run.py``) and, over the committed
corpus and every past finding, under pytest (``tests/test_fuzz_corpus.py``).
Targets cover every C entry point of ``kseg/log/_speedups.c``: ``scan``,
``decode_v2`` (records, the verify summary and the dump's spans), ``legacy_set`` (records
and spans), ``legacy_record``,
``legacy_batch_record``, ``legacy_crc_mismatches``, ``encode_v2_records``,
``encode_legacy_messages``, ``resync`` (salvage's scan), ``span_columns`` (spans to Arrow's
column buffers), ``sound_v2_run`` (verify's runs of sound v2 batches, ``configure_lz4``'s
LZ4 reader in them), ``lz4_frame_bytes`` (that reader into one bytes object), ``stats_v2_run`` (stats' runs), ``v2_header_run``
(dump's runs of batch lines), ``v2_record_run`` (dump's runs of batches with their records), ``index_sound`` (the index checks' C
pass), ``v2_column_run`` (runs of v2 batches as Arrow's column buffers) and ``entry_starts`` (the
walk by entries' lengths that cuts a log without its index, over a file); every record-line
writer of ``kseg/render/_format.c`` (``lines``); and the
pure-Python readers of internal topics
(``kseg.decoders``) and companion files (``kseg.companions.read``).
"""

from __future__ import annotations

import struct
import zlib
from typing import Callable

from kseg.errors import KsegError
from kseg.formats.attributes import CODEC_MASK
from kseg.log import decode, fast
from kseg.model import Batch, Header, Record

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
DECOMPRESSED_LIMIT = 1 << 20  # keep a fuzz input from inflating into hundreds of MiB


class Divergence(AssertionError):
    """The C accelerator and the Python reference disagree."""


# --------------------------------------------------------------------------- outcomes


def err_tuple(e: KsegError) -> tuple:
    return ("error", type(e).__name__, e.message, e.position, e.where, e.expected, e.found)


def outcome(fn: Callable, *args) -> tuple:
    try:
        return ("ok", fn(*args))
    except KsegError as e:
        return err_tuple(e)


def pure(fn: Callable, *args) -> tuple:
    """``fn``'s outcome with the accelerator off (nested calls run the reference too)."""
    saved = fast.ACCELERATED
    fast.ACCELERATED = False
    try:
        return outcome(fn, *args)
    finally:
        fast.ACCELERATED = saved


def accelerated(fn: Callable, *args) -> tuple:
    saved = fast.ACCELERATED
    fast.ACCELERATED = fast._speedups is not None
    try:
        return outcome(fn, *args)
    finally:
        fast.ACCELERATED = saved


def same(what: str, py, c) -> None:
    if py != c:
        raise Divergence(f"{what}:\npython: {py!r}\nC:      {c!r}")


def both(what: str, fn: Callable, *args) -> tuple:
    """Run ``fn`` both ways, fail on a difference, return the (common) outcome."""
    py = pure(fn, *args)
    if fast._speedups is not None:
        same(what, py, accelerated(fn, *args))
    return py


def scan_tuple(scan) -> tuple:
    batches = [(tuple(b[:7]), bytes(b.raw), tuple(b[8:])) for b in scan.batches]
    tail = None
    if scan.tail is not None:
        tail = (scan.tail.position, scan.tail.length, err_tuple(scan.tail.error))
    return batches, scan.consumed, tail


_RECORD_SPAN = struct.Struct("=11q")  # KsegRecordSpan, kseg/log/_spans.h
_HEADER_SPAN = struct.Struct("=4q")  # KsegHeaderSpan


def _from_spans(data: bytes, found: tuple) -> tuple:
    """What spans point at: per record (offset, timestamp, key, value, header keys and values, the CRC
    stored and computed over the message's span), and the first offset."""
    rspans, second, first = found  # v2: (records, headers, first); v0/v1: (records, count, first)
    hspans = second if isinstance(second, bytes) else b""
    headers = list(_HEADER_SPAN.iter_unpack(hspans))

    def part(at: int, n: int) -> bytes | None:
        return None if n < 0 else data[at:at + n]

    out = []
    for off, ts, ka, kl, va, vl, fh, hc, ma, me, crc in _RECORD_SPAN.iter_unpack(rspans):
        hs = tuple((data[a:a + b], part(c, d)) for a, b, c, d in headers[fh:fh + hc])
        checked = None if crc < 0 else (crc, zlib.crc32(data[ma:me]))
        out.append((off, ts, part(ka, kl), part(va, vl), hs, checked))
    return tuple(out), first


def _as_spans(records: list[Record]) -> tuple:
    from kseg.log.encode import legacy_message_crc

    out = tuple((r.offset, r.timestamp, r.key, r.value,
                 tuple((h.key.encode("utf-8", "surrogateescape"), h.value) for h in r.headers),
                 None if r.magic >= 2 else (r.crc, legacy_message_crc(r))) for r in records)
    return out, records[0].offset if records else None


def spans_match(what: str, data: bytes, records: tuple, spans_fn: Callable, *args) -> None:
    """The C reader's spans mode (``batch_spans``) fails as its records mode does, or points at
    the same records."""
    if fast._speedups is None:
        return
    got = accelerated(spans_fn, *args)
    if records[0] != "ok" or got[0] != "ok":
        same(f"{what} (spans)", records, got)
        return
    want, first = _as_spans(records[1])
    found, found_first = _from_spans(data, got[1])
    same(f"{what} (spans)", want, found)
    if first is not None:
        same(f"{what} (spans' first offset)", first, found_first)


def _scan(buf, base, final, start, max_entries):
    return scan_tuple(fast.scan_entries(buf, base, final=final, start=start, max_entries=max_entries))


class Reader:
    """Takes parameters off the front of a fuzz input, deterministically, never failing."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def u8(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def int(self, size: int) -> int:
        chunk = self.data[self.pos:self.pos + size].ljust(size, b"\0")
        self.pos += size
        return int.from_bytes(chunk, "big", signed=True)

    def blob(self, max_size: int) -> bytes | None:
        n = self.u8()
        if n == 255:
            return None
        n = min(n, max_size)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def rest(self) -> bytes:
        out = self.data[self.pos:]
        self.pos = len(self.data)
        return out


# --------------------------------------------------------------------------- C entry points


def fuzz_scan(data: bytes) -> None:
    """``scan``: split bytes into entries, final or not, from a start, a few at a time."""
    r = Reader(data)
    flags = r.u8()
    base = r.int(2) & 0xFFFF
    buf = r.rest()
    final = bool(flags & 1)
    start = min((flags >> 1) & 7, len(buf))
    max_entries = -1 if flags & 0x80 else (flags >> 4) & 7
    both("scan", _scan, buf, base, final, start, max_entries)
    # walking in steps, as Segment.batches does, gives what one walk gives
    whole = both("scan", _scan, buf, base, True, 0, -1)
    both("scan (memoryview)", _scan, memoryview(buf), base, True, 0, -1)
    stepped, pos = [], 0
    while True:
        got = both("scan (steps)", _scan, buf, base, True, pos, 2)[1]
        stepped += got[0]
        if got[2] is not None or got[1] == pos:
            tail = got[2] if got[2] is not None else both("scan", _scan, buf, base, True, got[1], 1)[1][2]
            break
        pos = got[1]
    if whole[0] == "ok":
        same("scan (steps vs whole)", (whole[1][0], whole[1][2]), (stepped, tail))


def _check_summary(data: bytes, base_ts: int, count: int) -> None:
    summary = both("check_v2_records", fast.check_v2_records, data, base_ts, count)
    implied = pure(decode.decode_v2_records, data, 0, base_ts, count, None)
    if implied[0] != "ok":
        same("check_v2_records vs decode", implied, summary)
        return
    records = implied[1]
    if not records:
        same("check_v2_records (empty)", ("ok", (None, True, 0, 0)), summary)
        return
    deltas = [rec.offset for rec in records]
    want = (max(rec.stored_timestamp for rec in records), all(a < b for a, b in zip(deltas, deltas[1:])),
            min(deltas), max(deltas))
    same("check_v2_records vs decode", ("ok", want), summary)


def fuzz_v2_records(data: bytes) -> None:
    """``decode_v2`` (records and the verify summary): a v2 records section."""
    r = Reader(data)
    count = r.int(1)  # -128..127: negative counts are an error both ways
    base_offset = r.int(8)
    base_ts = r.int(8)
    lat = r.int(8) if r.u8() & 1 else None
    section = r.rest()
    got = both("decode_v2_records", fast.decode_v2_records, section, base_offset, base_ts, count, lat)
    spans_match("decode_v2_records", section, got, fast.v2_record_spans, section, base_offset, base_ts, count, lat)
    _check_summary(section, base_ts, count)


def _payload(b: Batch):
    from kseg.log.records import payload_bytes

    return outcome(lambda: payload_bytes(b, limit=DECOMPRESSED_LIMIT))


def compare_log(buf: bytes) -> None:
    """A whole .log buffer: the scan, then every entry's records both ways."""
    scan = both("scan", _scan, buf, 0, True, 0, -1)
    for b in decode.scan_entries(buf).batches:
        if b.magic >= 2:
            got = _payload(b)
            if got[0] != "ok":
                continue
            section = got[1][0]
            args = (section, b.offset, b.base_timestamp, b.record_count, decode.effective_log_append_time(b))
            records = both("decode_v2_records", fast.decode_v2_records, *args)
            spans_match("decode_v2_records", section, records, fast.v2_record_spans, *args)
            _check_summary(section, b.base_timestamp, b.record_count)
        elif b.codec == 0:
            both("legacy_record", fast.legacy_record, b, b.offset, b.timestamp)
            both("legacy_batch_record", fast.legacy_batch_record, b)
        else:
            got = _payload(b)
            if got[0] != "ok":
                continue
            compare_wrapper(b, bytes(got[1][0]))
    del scan


def plain_runs_match(buf: bytes) -> None:
    """Runs of plain v0/v1 messages (``plain_message_spans``, what a dump takes at once) point at
    the records the per-message path makes, flag the CRCs it would, and stop only where that path
    would not take the next entry as a plain message."""
    if fast._speedups is None:
        return
    from kseg.log.encode import legacy_message_crc

    batches = fast._speedups.scan(memoryview(buf), 0, True, Batch, 0, -1)[0]
    i = 0
    while i < len(batches):
        data, spans, stop, bad = fast._speedups.plain_spans(batches, i)
        run = batches[i:stop]
        want = [outcome(lambda b=b: decode.legacy_record(b, b.offset, b.timestamp)) for b in run]
        same("plain_spans (records)", [("ok",)] * len(run), [w[:1] for w in want])
        if run:
            found, _ = _from_spans(data, (spans, len(run), run[0].offset))
            same("plain_spans", _as_spans([w[1] for w in want])[0], found)
            same("plain_spans (bad CRCs)", [k for k, w in enumerate(want) if w[1].crc != legacy_message_crc(w[1])],
                 bad)
        if stop < len(batches):
            b = batches[stop]
            plain = b.magic < 2 and not b.attributes & CODEC_MASK
            same("plain_spans (where a run stops)", True,
                 not plain or outcome(lambda: decode.legacy_record(b, b.offset, b.timestamp))[0] != "ok")
        i = stop + 1 if stop == i else stop


def compare_wrapper(wrapper: Batch, inner: bytes) -> None:
    both("scan (inner)", _scan, inner, 0, True, 0, -1)
    for m in decode.scan_entries(inner).batches:
        if m.magic < 2:  # kseg never asks for a v2 batch as a legacy message
            both("legacy_record (inner)", fast.legacy_record, m, m.offset, m.timestamp)
    got = both("decode_legacy_wrapper", fast.decode_legacy_wrapper, wrapper, inner)
    spans_match("decode_legacy_wrapper", inner, got, fast.legacy_record_spans, wrapper, inner)
    if got[0] == "ok":
        both("legacy_crc_mismatches", fast.legacy_crc_mismatches, inner)


def fuzz_log(data: bytes) -> None:
    """Every C reading entry point, reached the way kseg reaches them, from .log bytes."""
    compare_log(data)
    plain_runs_match(data)


def _legacy_wrapper(magic: int, offset: int, timestamp: int, attributes: int) -> Batch:
    """A stand-in wrapper Batch: only magic, offset, timestamp and attributes are read."""
    from kseg.log.encode import build_legacy_message

    raw = build_legacy_message(offset, magic, attributes & 0xFF, timestamp, None, b"")
    return decode.scan_entries(raw).batches[0]


def fuzz_legacy(data: bytes) -> None:
    """``legacy_set``, ``legacy_record``, ``legacy_batch_record``, ``legacy_crc_mismatches``:
    a decompressed wrapper's inner message set under a wrapper of either magic."""
    r = Reader(data)
    flags = r.u8()
    magic = flags & 1
    attributes = (flags & 0x08) | 1  # codec gzip (never read), timestamp type from the input
    offset = r.int(4) & 0x7FFFFFFF if flags & 2 else 0
    timestamp = r.int(8)
    inner = r.rest()
    wrapper = _legacy_wrapper(magic, offset, timestamp if magic else -1, attributes)
    compare_wrapper(wrapper, inner)  # legacy_crc_mismatches only where legacy_set accepts (its contract)
    for m in decode.scan_entries(inner).batches:
        if m.magic < 2:
            both("legacy_batch_record", fast.legacy_batch_record, m)


# --------------------------------------------------------------------------- encoders


def _records(r: Reader, magic: int) -> tuple[list[Record], int, int]:
    base_offset = r.int(8) >> (r.u8() & 63)
    base_ts = r.int(8) >> (r.u8() & 63)
    records = []
    for _ in range(r.u8() & 7):
        od = r.int(4)
        shift = r.u8()
        td = r.int(8) >> (shift & 63)
        attributes = r.u8()
        key = r.blob(64)
        value = r.blob(200)
        headers = []
        for _ in range(r.u8() & 3):
            hk = r.blob(16) or b""
            headers.append(Header(hk.decode("utf-8", "surrogateescape"), r.blob(32)))
        if magic == 2 and shift & 0x40:
            key = bytearray(key) if key is not None else None
        if magic == 2 and shift & 0x80:
            value = memoryview(value) if value is not None else None
        ts = base_ts + td
        records.append(Record(base_offset + od, ts, key, value, tuple(headers), ts, attributes, magic, None))
    return records, base_offset, base_ts


def _encode_v2_py(records, base_offset, base_ts):
    from kseg.errors import InputError
    from kseg.log.encode import encode_v2_records_py

    try:
        return encode_v2_records_py(records, base_offset, base_ts)
    except (OverflowError, struct.error) as e:  # the reference's own range checks
        raise InputError(str(e)) from None


def fuzz_encoders(data: bytes) -> None:
    """``encode_v2_records`` and ``encode_legacy_messages`` against their Python twins,
    and what they write decodes back to what they were given."""
    from kseg.log.encode import build_legacy_message_set, encode_v2_records

    r = Reader(data)
    kind = r.u8()
    if kind & 1 == 0:
        records, base_offset, base_ts = _records(r, 2)
        py = outcome(_encode_v2_py, records, base_offset, base_ts)
        c = accelerated(encode_v2_records, records, base_offset, base_ts)
        same("encode_v2_records", _kind(py), _kind(c))
        if py[0] == "ok":
            back = [rec._replace(key=_b(rec.key), value=_b(rec.value)) for rec in records]
            got = both("decode_v2_records (encoded)", fast.decode_v2_records, py[1], base_offset, base_ts,
                       len(records), None)
            same("encode/decode round trip", ("ok", back), got)
    else:
        magic = (kind >> 1) & 1
        records, base_offset, _ = _records(r, magic)
        records = [rec._replace(offset=rec.offset & INT64_MAX, stored_timestamp=rec.timestamp if magic else -1,
                                headers=()) for rec in records]
        rel = records[0].offset if records and kind & 4 else None
        py = pure(lambda: build_legacy_message_set(records, magic=magic, relative_to=rel))
        c = accelerated(lambda: build_legacy_message_set(records, magic=magic, relative_to=rel))
        same("encode_legacy_messages", _kind(py), _kind(c))
        if py[0] == "ok":
            both("scan (encoded)", _scan, py[1], 0, True, 0, -1)


def _b(v):
    return None if v is None else bytes(v)


def _kind(result: tuple) -> tuple:
    """Encoders are compared by bytes, or by error class (their messages come from
    different range checks)."""
    return result if result[0] == "ok" else (result[0], result[1])


# --------------------------------------------------------------------------- pure-Python readers


def fuzz_decoders(data: bytes) -> None:
    """``kseg.decoders``: any key and value of an internal topic decode or become raw."""
    from kseg.decoders import FAMILIES, decode_record

    r = Reader(data)
    flags = r.u8()
    family = FAMILIES[flags % 3]
    is_control = bool(flags & 4)
    key = r.blob(250)
    value = r.rest() if not flags & 8 else None
    record = Record(r.pos, 0, key, value, (), 0, 0, 2, None)
    try:
        decoded = decode_record(family, record, is_control)
    except KsegError:
        return
    if decoded is not None:
        repr(decoded)
        decoded.fallbacks


def fuzz_companions(data: bytes) -> None:
    """``kseg.companions.read``: every companion file parser."""
    from kseg.companions import read

    r = Reader(data)
    which = r.u8() % 6
    base = r.int(8)
    body = r.rest()
    parsers = (
        lambda: read.parse_offset_index(body, base),
        lambda: read.parse_time_index(body, base),
        lambda: read.parse_txn_index(body, base),
        lambda: read.parse_producer_snapshot(body),
        lambda: read.parse_leader_epoch_checkpoint(body),
        lambda: read.parse_partition_metadata(body),
    )
    try:
        result = parsers[which]()
    except KsegError:
        return
    repr(result)
    for name in ("entries", "producers"):
        for _ in getattr(result, name, ()) or ():
            pass


def fuzz_resync(data: bytes) -> None:
    """``resync`` (salvage's scan for the next plausible batch start) against
    ``salvage_scan.find_candidate``, from a start, final or not, under limits taken from the
    input; then a whole salvage walk both ways."""
    from kseg.log import salvage_scan as ss

    r = Reader(data)
    flags = r.u8()
    low = r.int(2) & 0xFFFF
    start = r.u8()
    buf = r.rest()
    high = (INT64_MAX, low + 100, low + 10, low)[(flags >> 4) & 3]
    lim = ss.Limits(low, high, (64 << 20, 1000, 200, 61)[(flags >> 6) & 3])
    final = bool(flags & 1)
    start = min(start, len(buf))
    c = fast.c_twin("resync")
    py = ss.find_candidate(buf, start, final, lim)
    if c is not None:
        same("resync", py, ss._c_find(buf, start, final, lim))
    walks = []
    for finder in [ss.find_candidate] + ([ss._c_find] if c is not None else []):
        pos, found = 0, []
        while True:
            status, p, total = ss.next_batch(buf, pos, ss.Limits(0, INT64_MAX, lim.max_size), finder=finder)
            if status != ss.FOUND:
                break
            found.append((p, total))
            pos = p + 1
        walks.append(found)
    if len(walks) == 2:
        same("resync (walk)", walks[0], walks[1])


def fuzz_entry_starts(data: bytes) -> None:
    """``entry_starts`` (where a log's entries start, by their lengths) against
    ``entry_walk.entry_starts_py``, over the bytes as a file (a memfd), every so many bytes, with
    the file's size as it is or claimed larger (the reads then come up short), reading as the walk
    does or a header's worth at a time."""
    import os

    from kseg.log import entry_walk

    r = Reader(data)
    flags = r.u8()
    every = max(1, r.int(2) & 0xFFFF)
    buf = r.rest()
    size = len(buf) + (0, 1, 17, 1 << 20)[flags & 3]
    reads = ((entry_walk.WALK_READ_BYTES, entry_walk.LARGE_ENTRY_BYTES), (17, 0), (40, 64), (1 << 10, 1 << 30))[
        flags >> 2 & 3]
    fd = os.memfd_create("kseg-fuzz-walk")
    try:
        os.write(fd, buf)
        py = outcome(entry_walk.entry_starts_py, fd, size, every, *reads)
        c = fast.c_twin("entry_starts")
        if c is not None:
            same("entry_starts", py, outcome(c, fd, size, every, *reads))
    finally:
        os.close(fd)


def _run_input(data: bytes) -> tuple[int, list[Batch]]:
    """A run target's input: a byte of flags, then .log bytes (their batches); the C reader of
    Kafka's LZ4 frames bound, as a run finds it."""
    from kseg.codecs import get_codec
    from kseg.formats.attributes import CODEC_LZ4

    r = Reader(data)
    flags = r.u8()
    batches = decode.scan_entries(r.rest()).batches
    if batches:
        fast.bind_lz4(get_codec(CODEC_LZ4))
    return flags, batches


def fuzz_sound_v2_run(data: bytes) -> None:
    """``sound_v2_run`` (verify's runs of v2 batches it finds nothing in: CRC-32C, header, records
    decompressed, Kafka's LZ4 frames in C, and walked, offsets) against ``sound_v2_run_py``, from
    every batch verify starts a run at, after an offset, under a base offset and a decompression
    limit the first byte picks, full or quick."""
    from kseg.log import checks

    flags, batches = _run_input(data)
    if not batches:
        return
    first = batches[0].base_offset
    last = (None, first - 1, first, INT64_MAX)[flags & 3]
    name_base = (None, first, first + 1, 1 << 64)[(flags >> 2) & 3]
    limit = (DECOMPRESSED_LIMIT, 100, 0, 1 << 16)[(flags >> 4) & 3]
    quick = bool(flags & 0x40)  # verify --quick's run: the records not read
    i = 0
    while i < len(batches):
        run = both("sound_v2_run", checks.sound_v2_run, batches, i, last, name_base, limit, "", quick)
        stop = run[1].stop
        i, last = max(stop, i + 1), run[1].last if stop > i else batches[i].base_offset


def fuzz_v2_header_run(data: bytes) -> None:
    """``v2_header_run`` (the v2 batches a dump shows by their lines alone, taken at once: CRC-32C,
    codec, last offset) against ``v2_header_run_py``, from every batch a dump starts a run at."""
    from kseg.log import records

    _, batches = _run_input(data)
    i = 0
    while i < len(batches):
        run = both("v2_header_run", records.v2_header_run, batches, i)
        i = max(run[1].stop, i + 1)


def fuzz_v2_record_run(data: bytes) -> None:
    """``v2_record_run`` (the v2 batches a dump shows with their records, taken at once: CRC-32C,
    records decompressed and walked into spans over one buffer) against its reference
    ``v2_record_run_py`` (``batch_spans`` of each batch, joined), from every batch a dump starts a
    run at, under a decompression limit and a byte budget the first byte picks; then the three
    writers of the run's lines over what it took."""
    from kseg.log import records
    from kseg.render import _format
    from kseg.render.dump import _RUN_CODECS, _RUN_CODECS_JSON, _TS_NAMES

    if fast.c_twin("v2_record_run") is None:
        return
    flags, batches = _run_input(data)
    limit = (DECOMPRESSED_LIMIT, 100, 0, 1 << 16)[flags & 3]
    budget = (1 << 22, 1, 64, 1 << 12)[(flags >> 2) & 3]
    i = 0
    while i < len(batches):
        c = outcome(lambda: records.v2_record_run(batches, i, limit=limit, max_bytes=budget))
        same("v2_record_run", outcome(lambda: records.v2_record_run_py(batches, i, limit=limit, max_bytes=budget)), c)
        run = c[1]
        if run.stop > i:
            taken, s = batches[i:run.stop], run.spans
            bad = run.rebased(i).bad
            _format.text_record_run(taken, bad, _TS_NAMES, _RUN_CODECS, s.data, s.records, s.headers, 1, 2)
            _format.jsonl_record_run(taken, bad, _TS_NAMES, _RUN_CODECS_JSON, b'"f"', s.data, s.records, s.headers,
                                     1, 3)
            _format.kafka_record_run(taken, bad, _TS_NAMES, _RUN_CODECS, s.data, s.records, s.headers, 4, 1, None, [])
        i = max(run.stop, i + 1)


def fuzz_stats_v2_run(data: bytes) -> None:
    """``stats_v2_run`` (stats' runs of v2 batches counted at once: CRC-32C, records decompressed
    and walked, keys into the HyperLogLog) through ``kseg.ops.stats.count_entries``: the same
    figures, registers, offsets, clean and dirty bytes and transaction states as counting every
    batch one by one (the reference, ``stats_v2_run_py`` taking none), under a decompression limit,
    an active segment or not and a cleaner checkpoint the first byte picks."""
    from kseg.ops import stats

    flags, batches = _run_input(data)
    if not batches:
        return
    limit = (DECOMPRESSED_LIMIT, 100, 0, 1 << 16)[flags & 3]
    active = bool(flags & 4)
    first_dirty = (None, batches[0].base_offset + 1)[(flags >> 3) & 1]

    def count() -> tuple:
        ss, part = stats.SegmentStats("fuzz", 0), stats.StatsPart()
        stats.count_entries(ss, part, batches, "fuzz", limit, active, first_dirty)
        return (ss.acc.as_json(), bytes(ss.acc.keys.registers), ss.first_offset, ss.last_offset,
                part.clean_bytes, part.dirty_bytes, part.txns.state)

    both("stats_v2_run", count)


def fuzz_index_sound(data: bytes) -> None:
    """``index_sound`` (the C pass deciding that an .index or .timeindex agrees with the log's
    batches) against ``index_sound_py`` (the checks' entry loops): never True where the loops
    find something. The input: a byte of kind and row count, a byte of base offset, two of log
    size, then the batch rows (five native int64s each) and the entries as stored."""
    from kseg.companions.check import index_sound_py

    c = fast._speedups
    if c is None:
        return
    r = Reader(data)
    head = r.u8()
    kind, nrows = head & 1, head >> 1
    base, log_size = r.u8(), r.u8() << 8 | r.u8()
    rest = r.rest()
    rows, entries = rest[:nrows * 40], rest[nrows * 40:]
    rows = rows[:len(rows) - len(rows) % 40]
    size = 8 if kind == 0 else 12
    entries = entries[:len(entries) - len(entries) % size]
    if c.index_sound(kind, entries, base, rows, log_size) and not index_sound_py(kind, entries, base, rows, log_size):
        raise Divergence(f"index_sound: C passes what the loops fault (kind {kind}, base {base}, log {log_size})")


def fuzz_lines(data: bytes) -> None:
    """The C record-line writer (``kseg.render._format``) against ``kseg.render.lines`` on the
    records of a .log buffer (after a byte choosing the key and value payload modes): jsonl,
    text and kafka lines from records, the same from the C reader's spans, and kafka batch lines."""
    from kseg.log.records import batch_records, batch_spans
    from kseg.render import bulk, lines

    if not bulk.ACCELERATED or not data:
        return
    c = bulk._format
    modes = (lines.NONE, lines.UTF8, lines.HEX, lines.BASE64, lines.JAVA)
    k, v = modes[data[0] % 5], modes[(data[0] // 5) % 5]
    kj, vj = (lines.UTF8 if m == lines.JAVA else m for m in (k, v))  # JAVA is for kafka lines only
    for b in decode.scan_entries(data[1:]).batches:
        for crc_valid in (True, False):
            same("kafka_batch_line", lines.kafka_batch_line(b, crc_valid, b.timestamp_type_name, b.codec_name),
                 c.kafka_batch_line(b, crc_valid, b.timestamp_type_name, b.codec_name))
        try:
            records = batch_records(b, limit=DECOMPRESSED_LIMIT)
        except KsegError:
            continue
        ts, seq = b.timestamp_type_name, -1 if b.base_sequence is None else b.base_sequence
        same("jsonl_records", lines.jsonl_records(records, ts, b.position, kj, vj),
             c.jsonl_records(records, ts, b.position, kj, vj))
        same("text_records", lines.text_records(records, kj, vj), c.text_records(records, kj, vj))
        gp: list = []
        gc: list = []
        want = lines.kafka_records(records, ts, b.magic, b.offset, seq, k, v, None, gp)
        same("kafka_records", want, c.kafka_records(records, ts, b.magic, b.offset, seq, k, v, None, gc))
        same("kafka_records (groups)", gp, gc)
        first = records[0].offset if records else b.offset
        fields = lines.kafka_batch_fields(b, first, b.codec_name.upper())  # Kafka 2.8's lines
        same("kafka_records (2.8)", lines.kafka_records(records, ts, b.magic, b.offset, seq, k, v, None, [], True, fields),
             c.kafka_records(records, ts, b.magic, b.offset, seq, k, v, None, [], True, fields))
        spans = batch_spans(b, limit=DECOMPRESSED_LIMIT)
        if spans is None:
            continue
        same("jsonl_spans", lines.jsonl_records(records, ts, b.position, kj, vj),
             c.jsonl_spans(spans.data, spans.records, spans.headers, ts, b.position, kj, vj))
        same("text_spans", lines.text_records(records, kj, vj),
             c.text_spans(spans.data, spans.records, spans.headers, kj, vj))
        gs: list = []
        got, _ = c.kafka_spans(spans.data, spans.records, spans.headers, ts, b.magic, b.offset, seq, k, v, None, gs,
                               True)
        same("kafka_spans", lines.kafka_records(records, ts, b.magic, b.offset, seq, k, v, None, [], True), got)
        got, _ = c.kafka_spans(spans.data, spans.records, spans.headers, ts, b.magic, b.offset, seq, k, v, None, [],
                               True, fields)
        same("kafka_spans (2.8)", lines.kafka_records(records, ts, b.magic, b.offset, seq, k, v, None, [], True,
                                                      fields), got)
def _columns_outcome(fn: Callable, parts: list) -> tuple:
    """span_columns' result, or the error it raises for spans outside their data (spans are
    kseg's own: a ValueError there is the contract, the same from both twins)."""
    try:
        return ("ok", tuple(fn(parts)))
    except (ValueError, OverflowError) as e:
        return ("error", type(e).__name__, str(e))


def fuzz_span_columns(data: bytes) -> None:
    """``span_columns``: flag bit 0 set, the rest is .log bytes whose batches' spans (C) and
    records (Python, as ``records_part``) must give the same columns both ways; clear, the
    rest is a data blob and spans over it taken from the input (small numbers, so many land
    inside it), which both twins must take or refuse alike."""
    from kseg.log import span_columns as sc
    from kseg.log.records import batch_records, batch_spans

    c = fast.c_twin("span_columns")
    r = Reader(data)
    flags = r.u8()
    parts: list = []
    if flags & 1:
        by_records: list = []
        for b in decode.scan_entries(r.rest()).batches:
            records = pure(lambda: batch_records(b, limit=DECOMPRESSED_LIMIT))
            if records[0] != "ok" or not records[1]:
                continue
            by_records.append(sc.records_part(records[1]))
            spans = accelerated(lambda: batch_spans(b, limit=DECOMPRESSED_LIMIT))
            found = spans[1] if spans[0] == "ok" else None
            parts.append((found.data, found.records, found.headers) if found is not None else by_records[-1])
        want = _columns_outcome(sc.span_columns_py, by_records)
        same("span_columns_py (spans vs records)", want, _columns_outcome(sc.span_columns_py, parts))
        if c is not None:
            same("span_columns", want, _columns_outcome(lambda p: sc.ColumnBuffers(*c(p)), parts))
        return
    for _ in range(r.u8() & 3):
        blob = r.blob(64) or b""
        size = len(blob)

        def at() -> int:
            return (r.u8() % (size + 3)) - 1  # -1 .. size + 1: null, inside, just past

        heads = b"".join(sc.HEADER_SPAN.pack(at(), at(), at(), at()) for _ in range(r.u8() & 3))
        recs = b"".join(sc.RECORD_SPAN.pack(r.int(8), r.int(8), at(), at(), at(), at(), (r.u8() % 5) - 1,
                                            (r.u8() % 5) - 1, -1, -1, -1) for _ in range(r.u8() & 7))
        parts.append((blob, recs, heads))
    want = _columns_outcome(sc.span_columns_py, parts)
    if c is not None:
        same("span_columns (raw spans)", want, _columns_outcome(lambda p: sc.ColumnBuffers(*c(p)), parts))


def fuzz_v2_column_run(data: bytes) -> None:
    """``v2_column_run`` (runs of v2 batches, CRC-32C checked or not, records decompressed by the
    codecs or not taken, and walked, as Arrow's column buffers with their header facts per record) against
    ``v2_column_run_py``, from every batch a reader starts a run at, under an offset range, a
    way with control batches, a row and a byte budget the first byte picks."""
    from kseg.log import span_columns as sc

    if fast.c_twin("v2_column_run") is None:
        return
    r = Reader(data)
    flags = r.u8()
    batches = decode.scan_entries(r.rest()).batches
    if not batches:
        return
    first = batches[0].base_offset
    lo = (None, first + 1, INT64_MIN, INT64_MAX)[flags & 3]
    hi = (None, first + 3, first - 1, INT64_MAX)[(flags >> 2) & 3]
    controls = ((flags >> 4) & 3) % 3
    check_crc = not flags & 0x40
    max_rows, max_bytes = (1 << 30, 1 << 30) if not flags & 0x80 else (2, 30)
    limit = (None, DECOMPRESSED_LIMIT, 100)[len(batches) % 3]  # compressed batches not taken, or within a limit
    i = 0
    while i < len(batches):
        py = sc.v2_column_run_py(batches, i, lo, hi, max_rows, max_bytes, controls, check_crc, limit)
        c = sc.v2_column_run(batches, i, lo, hi, max_rows, max_bytes, controls, check_crc, limit)
        same("v2_column_run", py, py if c is None and py.stop == i else c)
        i = max(i + 1, py.stop)


def fuzz_lz4_frame(data: bytes) -> None:
    """``lz4_frame_bytes`` (a batch's Kafka LZ4 frame decompressed in C straight into one bytes
    object) against its twin ``kafka_lz4._kafka_frame``: the same bytes, or None from both, under a
    limit the first byte's low bits pick; its bit 2 puts Kafka's frame header before the rest."""
    from kseg.codecs import get_codec
    from kseg.codecs.kafka_lz4 import KAFKA_LZ4_HEADER, _kafka_frame
    from kseg.formats.attributes import CODEC_LZ4

    if fast._speedups is None:
        return
    r = Reader(data)
    flags = r.u8()
    frame = (KAFKA_LZ4_HEADER if flags & 4 else b"") + r.rest()
    limit = (DECOMPRESSED_LIMIT, 100, 0, 1 << 16)[flags & 3]
    fast.bind_lz4(get_codec(CODEC_LZ4))
    same("lz4_frame", _kafka_frame(memoryview(frame), 2, limit), fast._speedups.lz4_frame_bytes(frame, limit))


TARGETS: dict[str, Callable[[bytes], None]] = {
    "scan": fuzz_scan,
    "v2_records": fuzz_v2_records,
    "log": fuzz_log,
    "legacy": fuzz_legacy,
    "encoders": fuzz_encoders,
    "decoders": fuzz_decoders,
    "companions": fuzz_companions,
    "resync": fuzz_resync,
    "lines": fuzz_lines,
    "span_columns": fuzz_span_columns,
    "sound_v2_run": fuzz_sound_v2_run,
    "lz4_frame": fuzz_lz4_frame,
    "stats_v2_run": fuzz_stats_v2_run,
    "v2_header_run": fuzz_v2_header_run,
    "v2_record_run": fuzz_v2_record_run,
    "index_sound": fuzz_index_sound,
    "v2_column_run": fuzz_v2_column_run,
    "entry_starts": fuzz_entry_starts,
}
