"""Building a partition from JSON lines (``kseg build``): the inverse of ``dump --format jsonl``.

Rules: the lines are dump's contract (README, ``kseg dump``): a ``batch`` line, then its
``record`` lines; ``error`` lines (``dump --keep-going``) are written back as their raw bytes.
Keys and values are read as the ``--payload`` they were written in (``key_b64``/``value_b64``
always base64). The bytes come from the writers' own encoders (``kseg.log.encode``); the
indexes, the ``.txnindex`` and the ``leader-epoch-checkpoint`` from the same code as every
writer's. Fields a batch's bytes determine (CRC, size, record count, last offset, max
timestamp) are computed; a line that gives one is checked against it, and a disagreement is
an error (``derived="check"``), written as the line says (``"given"``: deliberately damaged
fixtures), or noted and replaced by the computed value (``"computed"``: a dump edited by hand).

What a dump does not carry cannot come back: the timestamps records stored under a
LogAppendTime batch (they are shown with the batch's), and a partial batch at the end of a
segment (a ``trailing`` line holds no bytes). Everything else gives the same records, and the
same bytes wherever the codec writes what Kafka writes.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from kseg.checksums import crc32c
from kseg.codecs import Codec, get_codec
from kseg.codecs.plugins import plugin_codec
from kseg.companions.build import build_txn_index
from kseg.defaults import DEFAULT_INDEX_INTERVAL_BYTES
from kseg.errors import DataError, InputError, KsegError
from kseg.facts.log_entry import LOG_OVERHEAD, SIZE_POSITION
from kseg.facts.message_v0v1 import CRC_POSITION as LEGACY_CRC_POSITION
from kseg.facts.record_batch_v2 import CRC_POSITION as V2_CRC_POSITION
from kseg.facts.record_batch_v2 import CRC_START as V2_CRC_START
from kseg.facts.record_batch_v2 import RECORD_COUNT_POSITION
from kseg.formats.attributes import (
    CODEC_NAMES,
    CODEC_PLUGIN,
    CONTROL_ABORT,
    CONTROL_COMMIT,
    CONTROL_TYPE_NAMES,
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPE_MASK,
    TIMESTAMP_TYPE_NAMES,
)
from kseg.layouts import CONTROL_KEY, END_TXN_MARKER
from kseg.log.atomic import AtomicDir, check_output, write_atomic
from kseg.log.encode import build_legacy_message, build_legacy_wrapper, build_v2_batch
from kseg.log.segment import Segment, base_offset_of, companion_path, partition_of, segment_file_name
from kseg.model import Header, Record, make_record
from kseg.ops.fixture_spec import SPEC_WHERE, input_items, spec_lines
from kseg.ops.jobs import SegmentSink, WriteOptions
from kseg.ops.logdir import finish_log_dir, finish_partition
from kseg.ops.repair import _TxnState as TxnState  # the one reckoning of open and aborted transactions

COMMAND = "build"
PAYLOADS = ("utf8", "hex", "base64")
DERIVED = ("check", "given", "computed")
_CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}
_TS_TYPES = {name: t for t, name in TIMESTAMP_TYPE_NAMES.items()}
_CONTROL_IDS = {name: t for t, name in CONTROL_TYPE_NAMES.items()}
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class BuildOptions:
    """How lines become a partition."""

    payload: str = "utf8"  # how keys and values were written (dump --payload)
    derived: str = "check"  # check | given | computed (see the module comment)
    segment_bytes: int | None = None  # roll segments by size instead of as the lines' file names say
    index: bool = True
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    force: bool = False


@dataclass(frozen=True)
class Disagreement:
    """A derived field a line gives that the batch's bytes do not."""

    line: Line
    base_offset: int
    field: str
    given: Any
    computed: Any
    checked: bool = True  # False: a CRC or size of bytes kseg cannot reproduce (compressed, LogAppendTime)

    def __str__(self) -> str:
        show = (lambda v: f"{v:#010x}") if self.field == "crc" else str
        return (f"{at_line(self.line)} (batch at offset {self.base_offset}): {self.field}: the line gives "
                f"{show(self.given)}, the batch's bytes give {show(self.computed)}")


@dataclass
class BuildResult:
    """What a build wrote, and what it found on the way."""

    output: Path
    partitions: int = 0
    segments: list[Path] = field(default_factory=list)
    batches: int = 0
    records: int = 0
    bytes: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        kept = ""
        if self.disagreements:
            kept = f"; {len(self.disagreements)} derived field(s) written as the lines give them"
        where = f"{self.partitions} partitions, " if self.partitions > 1 else ""
        return (f"kseg: built {self.output}: {where}{len(self.segments)} segment(s), {self.batches} batch(es), "
                f"{self.records} record(s), {self.bytes} bytes{kept}")


@dataclass
class BatchLine:
    """A batch line and the record lines under it (or a raw entry from an ``error`` line)."""

    line: Line
    fields: dict
    records: list[Record] = field(default_factory=list)
    record_fields: list[dict] = field(default_factory=list)
    raw: bytes | None = None
    record_lines: list[Line] = field(default_factory=list)

    @property
    def file(self) -> str | None:
        f = self.fields.get("file")
        return f if isinstance(f, str) else None


# --------------------------------------------------------------------------- reading lines


Line = int | str  # a line's number in the input, or where a fixture spec said it ("batch 3, record 2")


def at_line(line: Line) -> str:
    return f"line {line}" if isinstance(line, int) else line


def _fail(line: Line, message: str, source: str | None) -> InputError:
    return InputError(message, file=source, where=at_line(line))


def _int(d: dict, name: str, line: Line, source: str | None, default: Any = None) -> Any:
    v = d.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise _fail(line, f'"{name}" must be an integer, not {json.dumps(v)[:40]}', source)
    return v


def _bool(d: dict, name: str, line: Line, source: str | None) -> bool:
    v = d.get(name)
    if v is not None and not isinstance(v, bool):
        raise _fail(line, f'"{name}" must be true or false, not {json.dumps(v)[:40]}', source)
    return bool(v)


def _bytes_of(d: dict, name: str, payload: str, line: Line, source: str | None) -> bytes | None:
    """A key or value: ``name`` in the payload encoding, or ``name_b64``; absent or null is null."""
    b64 = d.get(name + "_b64")
    try:
        if b64 is not None:
            if not isinstance(b64, str):
                raise ValueError("not a string")
            return base64.b64decode(b64, validate=True)
        v = d.get(name)
        if v is None:
            return None
        if not isinstance(v, str):
            raise ValueError("not a string")
        if payload == "utf8":
            return v.encode("utf-8", "surrogatepass")
        if payload == "hex":
            return bytes.fromhex(v)
        return base64.b64decode(v, validate=True)
    except (ValueError, binascii.Error, UnicodeError) as e:
        which = name + "_b64" if b64 is not None else name
        raise _fail(line, f'"{which}" is not {"base64" if b64 is not None else payload}: {e}', source) from None


def _headers(d: dict, payload: str, line: Line, source: str | None) -> tuple[Header, ...]:
    hs = d.get("headers") or []
    if isinstance(hs, dict):  # the fixture spec's shorthand: {"key": "value"}
        hs = [{"key": k, "value": v} for k, v in hs.items()]
    if not isinstance(hs, list):
        raise _fail(line, '"headers" must be a list of {"key", "value"}', source)
    out = []
    for h in hs:
        if not isinstance(h, dict):
            raise _fail(line, '"headers" must be a list of {"key", "value"}', source)
        key = _bytes_of(h, "key", "utf8", line, source)
        if key is None:
            raise _fail(line, "a header needs a key", source)
        out.append(Header(key.decode("utf-8", "surrogateescape"), _bytes_of(h, "value", payload, line, source)))
    return tuple(out)


def record_of(d: dict, line: Line, payload: str = "utf8", source: str | None = None, *,
              timestamp_type: int = CREATE_TIME, magic: int = 2) -> Record:
    """A record line as a record (its offset, timestamp, key, value and headers)."""
    offset = _int(d, "offset", line, source)
    if offset is None:
        raise _fail(line, 'a record line needs an "offset"', source)
    ts = _int(d, "timestamp", line, source, NO_TIMESTAMP)
    stored = _int(d, "stored_timestamp", line, source, ts)
    key, value = _bytes_of(d, "key", payload, line, source), _bytes_of(d, "value", payload, line, source)
    if d.get("control") is not None and not ({"key", "key_b64", "value", "value_b64"} & d.keys()):
        key, value = _control_bytes(d["control"], line, source)
    return make_record(offset, ts, key, value, _headers(d, payload, line, source), stored_timestamp=stored,
                       magic=magic)


def _control_bytes(control: Any, line: Line, source: str | None) -> tuple[bytes, bytes | None]:
    """A control record's key (and a transaction marker's value) from dump's ``control`` object
    (``{"type": "COMMIT", "coordinator_epoch": 5}``), for lines that give no key and value."""
    if not isinstance(control, dict):
        raise _fail(line, '"control" must be an object such as {"type": "COMMIT", "coordinator_epoch": 0}', source)
    type_id = control.get("type_id", _CONTROL_IDS.get(control.get("type")))  # type: ignore[arg-type]
    if type_id not in (CONTROL_ABORT, CONTROL_COMMIT):
        raise _fail(line, f"a control record without key and value bytes is COMMIT or ABORT, not "
                          f"{json.dumps(control.get('type', type_id))[:40]}", source)
    key = CONTROL_KEY.struct.pack(_int(control, "version", line, source, 0), type_id)
    return key, END_TXN_MARKER.struct.pack(0, _int(control, "coordinator_epoch", line, source, 0))


def parse_lines(lines: Iterable[str | bytes | dict | BatchLine], payload: str = "utf8", source: str | None = None
                ) -> Iterator[BatchLine]:
    """The batches the lines describe, each with its records, in order. Record lines before any
    batch line make one v2 batch of their own (a list of records is enough)."""
    if payload not in PAYLOADS:
        raise InputError(f"--payload must be one of {', '.join(PAYLOADS)}, not {payload!r}")
    current: BatchLine | None = None
    for n, item in enumerate(lines, 1):
        if isinstance(item, BatchLine):  # made by code (build_records): records already decoded
            if current is not None:
                yield current
                current = None
            yield item
            continue
        if isinstance(item, dict):
            d = item
        else:
            text = item.decode("utf-8", "surrogateescape") if isinstance(item, bytes) else item
            if not text.strip():
                continue
            try:
                d = json.loads(text)
            except ValueError as e:
                raise _fail(n, f"not a JSON line: {e}", source) from None
        if not isinstance(d, dict):
            raise _fail(n, "a line must be a JSON object", source)
        label = d.get(SPEC_WHERE)
        at: Line = label if isinstance(label, str) else n
        kind = d.get("type")
        if kind == "batch":
            if current is not None:
                yield current
            current = BatchLine(at, d)
        elif kind == "record" or (kind is None and "offset" in d):
            if current is None:
                current = BatchLine(at, {"magic": 2})
            pos, batch_pos = d.get("batch_position"), current.fields.get("position")
            if pos is not None and batch_pos is not None and pos != batch_pos:
                raise _fail(at, f"the record's batch_position {pos} is not that of the batch line before it "
                                f"({batch_pos})", source)
            current.record_fields.append(d)
            current.record_lines.append(at)
            current.records.append(record_of(d, at, payload, source, magic=_int(current.fields, "magic", at,
                                                                                 source, 2)))
        elif kind == "error":
            if current is not None:
                yield current
                current = None
            try:
                raw = bytes.fromhex(d.get("raw") or "")
            except (TypeError, ValueError):
                raise _fail(at, 'an error line\'s "raw" must be hex', source) from None
            yield BatchLine(at, d, raw=raw)
        elif kind == "trailing":
            if current is not None:
                yield current
                current = None
            yield BatchLine(at, d, raw=b"")
        else:
            raise _fail(at, f"not a batch or record line (type {json.dumps(kind)[:40]})", source)
    if current is not None:
        yield current


# --------------------------------------------------------------------------- encoding a batch


def _codec(bl: BatchLine, source: str | None) -> tuple[int, int | None, Codec | None]:
    """(codec id, plugin id, codec object) of a batch line."""
    name = bl.fields.get("codec", "none")
    plugin_id = _int(bl.fields, "plugin_id", bl.line, source)
    if isinstance(name, str) and name.startswith("plugin:") or plugin_id is not None:
        if plugin_id is None:
            raise _fail(bl.line, f'codec {name} needs its "plugin_id"', source)
        try:
            return CODEC_PLUGIN, plugin_id, plugin_codec(plugin_id)
        except KsegError as e:
            raise e.located(file=source, where=at_line(bl.line))
    if name not in _CODEC_IDS:
        raise _fail(bl.line, f"unknown codec {json.dumps(name)[:40]} (none, gzip, snappy, lz4, zstd or plugin:ALIAS)",
                    source)
    cid = _CODEC_IDS[name]
    return cid, None, (get_codec(cid) if cid else None)


def _ts_type(bl: BatchLine, magic: int, source: str | None) -> int:
    name = bl.fields.get("timestamp_type")
    if name is None:
        return NO_TIMESTAMP_TYPE if magic == 0 else CREATE_TIME
    if name not in _TS_TYPES:
        raise _fail(bl.line, f"unknown timestamp_type {json.dumps(name)[:40]}", source)
    return _TS_TYPES[name]


@dataclass
class _Given:
    """The derived fields a batch line gives, checked against the bytes built."""

    bl: BatchLine
    out: list[Disagreement]
    exact: bool = True  # the bytes built are the bytes the line describes (checked: the CRC and size too)

    def check(self, name: str, computed: Any) -> Any:
        given = self.bl.fields.get(name)
        if given is None or given == computed:
            return computed
        # A line that says its CRC did not match (crc_valid false) is held to it whatever the codec.
        checked = self.exact or name not in ("crc", "size") or (name == "crc" and self.bl.fields.get("crc_valid") is False)
        self.out.append(Disagreement(self.bl.line, self.bl.fields.get("base_offset", -1), name, given, computed, checked))
        return given


def encode_batch(bl: BatchLine, source: str | None = None, derived: list[Disagreement] | None = None) -> bytes:
    """One batch line's entry bytes. Derived fields the line gives that disagree go to
    ``derived`` and are written as given (the caller decides what a disagreement means)."""
    if bl.raw is not None:
        return bl.raw
    found: list[Disagreement] = [] if derived is None else derived
    f, n = bl.fields, bl.line
    magic = _int(f, "magic", n, source, 2)
    if magic not in (0, 1, 2):
        raise _fail(n, f"magic must be 0, 1 or 2, not {magic}", source)
    codec, plugin_id, codec_impl = _codec(bl, source)
    ts_type = _ts_type(bl, magic, source)
    records = bl.records
    # Uncompressed bytes are the records' own; a codec's may differ from the writer's, and a
    # LogAppendTime v2 batch's records stored timestamps the lines do not show.
    given = _Given(bl, found, exact=codec == 0 and not (magic == 2 and ts_type == LOG_APPEND_TIME))
    try:
        if magic == 2:
            raw = _encode_v2(bl, records, codec, plugin_id, codec_impl, ts_type, given, source)
        else:
            raw = _encode_legacy(bl, records, magic, codec, codec_impl, ts_type, given, source)
    except KsegError as e:
        raise e.located(file=source, where=at_line(n))
    # The frame's own fields last: the count (legacy), size and CRC of what was built.
    if magic < 2:
        given.check("count", len(records))
    size = given.check("size", len(raw))  # dump's size: the whole entry, framing included
    crc_at = V2_CRC_POSITION if magic == 2 else LEGACY_CRC_POSITION
    crc = given.check("crc", _U32.unpack_from(raw, crc_at)[0])
    if not isinstance(crc, int) or not isinstance(size, int) or size < LOG_OVERHEAD:
        raise _fail(n, '"crc" and "size" must be integers', source)
    buf = bytearray(raw)
    _U32.pack_into(buf, crc_at, crc & 0xFFFFFFFF)
    _I32.pack_into(buf, SIZE_POSITION, size - LOG_OVERHEAD)
    return bytes(buf[:size])  # a smaller size: a truncated entry, as the line asks


def _encode_v2(bl: BatchLine, records: list[Record], codec: int, plugin_id: int | None, codec_impl: Codec | None,
               ts_type: int, given: _Given, source: str | None) -> bytes:
    f, n = bl.fields, bl.line
    base = _int(f, "base_offset", n, source, records[0].offset if records else None)
    if base is None:
        raise _fail(n, 'a batch without records needs its "base_offset"', source)
    if ts_type == NO_TIMESTAMP_TYPE:
        raise _fail(n, "a v2 batch has CreateTime or LogAppendTime", source)
    last = records[-1].offset if records else base
    last_given = _int(f, "last_offset", n, source)
    # The cleaner keeps a batch's last offset when it drops its last records: a later one is the line's.
    if last_given is not None and last_given >= last:
        last_offset = last_given
    else:
        last_offset = given.check("last_offset", last)
    computed_max = max((r.stored_timestamp for r in records), default=NO_TIMESTAMP)
    max_given = _int(f, "max_timestamp", n, source)
    if ts_type == LOG_APPEND_TIME or not records:
        max_ts = computed_max if max_given is None else max_given
        if ts_type == LOG_APPEND_TIME and max_given is not None:
            records = [r._replace(timestamp=max_given, stored_timestamp=max_given)
                       if "stored_timestamp" not in rf else r for r, rf in zip(records, bl.record_fields)]
    else:
        max_ts = given.check("max_timestamp", computed_max)
    count = given.check("count", len(records))
    raw = build_v2_batch(
        records, base_offset=base, codec=codec if plugin_id is None else 0, timestamp_type=ts_type,
        transactional=_bool(f, "is_transactional", n, source), control=_bool(f, "is_control", n, source),
        producer_id=_int(f, "producer_id", n, source, NO_PRODUCER_ID),
        producer_epoch=_int(f, "producer_epoch", n, source, NO_PRODUCER_EPOCH),
        base_sequence=_int(f, "base_sequence", n, source, NO_SEQUENCE),
        partition_leader_epoch=_int(f, "partition_leader_epoch", n, source, NO_PARTITION_LEADER_EPOCH),
        last_offset_delta=last_offset - base, delete_horizon_ms=_int(f, "delete_horizon_ms", n, source),
        max_timestamp=max_ts, plugin_id=plugin_id, codec_impl=codec_impl)
    if count != len(records):  # --derived given: the count as the line says (its CRC checked below)
        buf = bytearray(raw)
        _I32.pack_into(buf, RECORD_COUNT_POSITION, count)
        _U32.pack_into(buf, V2_CRC_POSITION, crc32c(memoryview(buf)[V2_CRC_START:]))
        raw = bytes(buf)
    return raw


def _encode_legacy(bl: BatchLine, records: list[Record], magic: int, codec: int, codec_impl: Codec | None,
                   ts_type: int, given: _Given, source: str | None) -> bytes:
    f, n = bl.fields, bl.line
    if magic == 0:
        ts_type = NO_TIMESTAMP_TYPE
    if not records:
        raise _fail(n, f"a v{magic} entry needs a record", source)
    if any(r.headers for r in records):
        raise _fail(n, f"v{magic} messages have no headers (magic 2 batches do)", source)
    if codec == 0:
        if len(records) != 1:
            raise _fail(n, f"an uncompressed v{magic} entry holds one record, not {len(records)}", source)
        r = records[0]
        offset = given.check("last_offset", r.offset)
        attrs = TIMESTAMP_TYPE_MASK if magic == 1 and ts_type == LOG_APPEND_TIME else 0
        ts = given.check("max_timestamp", r.stored_timestamp if magic == 1 else NO_TIMESTAMP)
        return build_legacy_message(offset, magic, attrs, ts, r.key, r.value)
    wrapper_ts = None
    max_given = _int(f, "max_timestamp", n, source)
    if magic == 1:
        computed = max(r.stored_timestamp for r in records)
        wrapper_ts = max_given if (ts_type == LOG_APPEND_TIME and max_given is not None) else \
            given.check("max_timestamp", computed)
    last = given.check("last_offset", records[-1].offset)
    inner = [r._replace(attributes=0) for r in records]
    raw = build_legacy_wrapper(inner, magic=magic, codec=codec, timestamp_type=ts_type, wrapper_timestamp=wrapper_ts,
                               codec_impl=codec_impl)
    if last != records[-1].offset:  # --derived given: a wrapper offset as the line says
        raw = struct.pack(">q", last) + raw[8:]
    return raw


# --------------------------------------------------------------------------- writing a partition


def _partition_name(file: str | None) -> str | None:
    """The partition folder a batch line's file sits in (``orders-0``), when it names one."""
    if not file:
        return None
    parent = Path(file).parent.name
    return parent if parent and partition_of(parent) is not None else None


class _PartitionWriter:
    """One output partition folder: segments rolled as the lines say (or by size), each with its
    indexes (``SegmentSink``), then the ``.txnindex`` files and the leader-epoch checkpoint."""

    def __init__(self, folder: Path, options: BuildOptions, result: BuildResult):
        self.folder, self.options, self.result = folder, options, result
        self.sink: SegmentSink | None = None
        self.file: str | None = None
        self.folder.mkdir(parents=True, exist_ok=True)
        self.logs: list[Path] = []

    def add(self, bl: BatchLine, raw: bytes) -> None:
        file = bl.file
        name = Path(file).name if file else None
        roll = self.sink is None
        if self.options.segment_bytes is not None:
            roll = roll or (self.sink is not None and self.sink.position > 0
                            and self.sink.position + len(raw) > self.options.segment_bytes)
        elif name is not None and name != self.file:  # another file: another segment
            roll = True
        if roll:
            base = None
            if self.options.segment_bytes is None and name is not None:
                base = base_offset_of(name)
            if base is None:
                base = _first_offset(bl, raw)
            self._close()
            log = self.folder / segment_file_name(base)
            if log in self.logs:
                raise InputError(f"segment {log.name} would be written twice (the lines' files are out of order)",
                                 where=at_line(bl.line))
            self.sink = SegmentSink(log, base, WriteOptions(index=self.options.index,
                                                            index_interval_bytes=self.options.index_interval_bytes))
            self.logs.append(log)
            self.file = name
        assert self.sink is not None
        if raw and len(raw) >= LOG_OVERHEAD and len(raw) == LOG_OVERHEAD + _I32.unpack_from(raw, SIZE_POSITION)[0]:
            self.sink.write(raw)
        else:  # a truncated or unframed entry: in the log, not in the indexes
            self.sink.file.write(raw)
            self.sink.position += len(raw)

    def _close(self) -> None:
        if self.sink is not None:
            self.sink.commit()
            self.sink = None

    def finish(self) -> None:
        self._close()
        _write_txn_indexes(self.logs)
        finish_partition(None, self.folder, COMMAND)
        self.result.partitions += 1

    def abort(self) -> None:
        if self.sink is not None:
            self.sink.abort()


def _first_offset(bl: BatchLine, raw: bytes) -> int:
    if bl.fields.get("base_offset") is not None and isinstance(bl.fields["base_offset"], int):
        return bl.fields["base_offset"]
    if bl.records:
        return bl.records[0].offset
    return struct.unpack_from(">q", raw)[0] if len(raw) >= 8 else 0


def _write_txn_indexes(logs: list[Path]) -> None:
    """A ``.txnindex`` beside each segment holding an aborted transaction's marker, as the
    broker's ProducerStateManager writes them (the repair command's reckoning)."""
    state = TxnState()
    for log in logs:
        entries = []
        for b in Segment(log).batches():
            if b.computed_crc() != b.crc:
                continue
            try:
                entry = state.on_batch(b, 1 << 62)
            except KsegError:
                continue
            if entry is not None:
                entries.append(entry)
        if entries:
            write_atomic(companion_path(log, ".txnindex"), build_txn_index(entries))


def build(lines: Iterable[str | bytes | dict | BatchLine], output: Path, options: BuildOptions = BuildOptions(), *,
          source: str | None = None) -> BuildResult:
    """Write the partition (or, when the lines name several partition folders, the log
    directory) the lines describe to ``output``, published whole or not at all."""
    if options.derived not in DERIVED:
        raise InputError(f"derived must be one of {', '.join(DERIVED)}, not {options.derived!r}")
    output = Path(output)
    check_output([], output, force=options.force)
    result = BuildResult(output)
    writers: dict[str | None, _PartitionWriter] = {}
    last_key: str | None = None
    with AtomicDir(output) as tmp:
        try:
            for bl in parse_lines(lines, options.payload, source):
                if bl.raw == b"" and bl.fields.get("type") == "trailing":
                    result.notes.append(f"{at_line(bl.line)}: a partial batch of {bl.fields.get('length')} bytes at the "
                                        "end of a segment: its bytes are not in the lines, it is not written")
                    continue
                found: list[Disagreement] = []
                raw = encode_batch(bl, source, found)
                if found and options.derived != "given":  # the computed values written
                    bl_fields = {k: v for k, v in bl.fields.items() if k not in {d.field for d in found}}
                    raw = encode_batch(BatchLine(bl.line, bl_fields, bl.records, bl.record_fields), source)
                    checked = [d for d in found if d.checked]
                    if options.derived == "computed":
                        result.notes.extend(f"{d} (the computed value written)" for d in checked)
                    else:
                        result.disagreements.extend(checked)
                else:
                    result.disagreements.extend(found)
                key = _partition_name(bl.file) or last_key  # a line without a file: with the one before
                w = writers.get(key)
                if w is None:
                    w = writers[key] = _PartitionWriter(tmp.tmp / key if key else tmp.tmp, options, result)
                last_key = key
                w.add(bl, raw)
                result.batches += 1
                result.records += len(bl.records)
                result.bytes += len(raw)
            if result.disagreements and options.derived == "check":
                first = result.disagreements[0]
                more = len(result.disagreements) - 1
                raise DataError(f"{first}{f' (and {more} more)' if more else ''}: the lines disagree with the "
                                "records they hold (--derived given writes them as given, --derived computed "
                                "writes the computed values)", file=source)
            if not writers:
                raise InputError("no batch or record lines", file=source)
            if len(writers) > 1 and None in writers:
                raise InputError("some lines name a partition folder and some do not", file=source)
            for w in writers.values():
                w.finish()
            if len(writers) == 1:  # one partition: the output is that partition's folder
                _move_into(tmp.tmp, next(iter(writers)))
            else:
                finish_log_dir(tmp.tmp, tmp.tmp, COMMAND)
        except BaseException:
            for w in writers.values():
                w.abort()
            raise
        result.segments = [output / log.relative_to(tmp.tmp) for log in sorted(tmp.tmp.rglob("*.log"))]
    return result


def _move_into(root: Path, name: str | None) -> None:
    """A single partition's files moved up from ``root/name`` to ``root``."""
    if not name:
        return
    sub = root / name
    for p in list(sub.iterdir()):
        p.rename(root / p.name)
    sub.rmdir()


def build_records(records: Iterable[Record], output: Path, *, batch_records: int = 1000, codec: str = "none",
                  force: bool = False) -> BuildResult:
    """A partition of v2 batches (``batch_records`` records each) from records: for tests'
    fixtures, with offsets and timestamps as the records give them."""
    def batches() -> Iterator[BatchLine]:
        batch: list[Record] = []
        for r in records:
            batch.append(r)
            if len(batch) >= batch_records:
                yield _records_batch(batch, codec)
                batch = []
        if batch:
            yield _records_batch(batch, codec)

    return build(batches(), output, BuildOptions(force=force))


def _records_batch(batch: list[Record], codec: str) -> BatchLine:
    return BatchLine(0, {"type": "batch", "magic": 2, "codec": codec, "base_offset": batch[0].offset}, batch,
                     [{} for _ in batch])


def build_partition(source: str | Path | Iterable[Any], output: str | Path, *, payload: str = "utf8",
                    derived: str = "check", segment_bytes: int | None = None, batch_records: int = 1000,
                    codec: str = "none", force: bool = False) -> BuildResult:
    """``kseg build`` as a function, for tests' fixtures: ``source`` is a JSON lines or fixture
    spec file, JSON lines (strings or parsed dicts), a fixture spec (a dict with ``batches``), or
    ``kseg.Record``s (v2 batches of ``batch_records``, ``codec``)."""
    options = BuildOptions(payload=payload, derived=derived, segment_bytes=segment_bytes, force=force)
    if isinstance(source, (str, Path)):
        with open(source, "rb") as f:
            return build(input_items(f, str(source)), Path(output), options, source=str(source))
    if isinstance(source, dict):
        return build(spec_lines(source), Path(output), options)
    items = list(source)
    if items and isinstance(items[0], Record):
        return build_records(items, Path(output), batch_records=batch_records, codec=codec, force=force)
    return build(items, Path(output), options)


__all__ = ["BuildOptions", "BuildResult", "Disagreement", "build", "build_partition", "build_records", "encode_batch",
           "parse_lines"]
