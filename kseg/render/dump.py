"""Renderers for ``dump`` events: ``jsonl`` (a contract), ``text`` (for people), ``kafka``
(the exact lines of kafka-dump-log.sh, Kafka 3.x, spec §6.3-6.4).

Each renderer writes to the streams it is given and knows nothing about files.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, TextIO

from kseg.decoders import DecodedRecord, control_kafka_text
from kseg.decoders.jvm import PATH_MAP_ORDERS
from kseg.defaults import KAFKA_MAX_MESSAGE_SIZE
from kseg.errors import DataError, KsegError, OlderToolStopsError
from kseg.kafka_releases import DEFAULT, DumpLogRelease, as_release
from kseg.lazy import load
from kseg.formats.attributes import CODEC_NONE, NO_SEQUENCE, TIMESTAMP_TYPE_NAMES
from kseg.log.control import ControlInfo, control_info
from kseg.log.encode import legacy_message_crc
from kseg.log.listing import BOOTSTRAP_FILE
from kseg.log.records import HEADER_RUN_MAX_CODEC
from kseg.model import CODEC_NAMES, Batch, Record, record_sequence
from kseg.printable import printable as printable_text
from kseg.ops.companion_events import CompanionEvent, IndexEntries
from kseg.ops.dump import (
    BadBatchEvent,
    BatchEvent,
    Event,
    FileStart,
    HeaderRunEvent,
    PlainRunEvent,
    SkippedEvent,
    SliceStart,
    TailEvent,
)
from kseg.printable import printable as safe
from kseg.render import bulk, lines as line_writers
from kseg.render.fields import RecordView, json_fields, text_line
from kseg.render.lines import bool_text, iso_utc, text_escape, text_head
from kseg.render.jsonout import dumps, encoder
from kseg.render.kafka_stops import SECOND_HALF, codec_stop, tail_stop
from kseg.render.payload import (BUILTIN, Decoder, add_decoder_failures, decoder_failures, decoder_notes,
                                 header_key_text)
from kseg.render.tables import tabulate
from kseg.render.values import header_json, payload_kafka, payload_mode, payload_text, put_payload

# What writes the companion files' lines (and the readers and index checks below it), loaded
# where a companion file's event is written: a dump of .log files does not load it.
COMPANION_INDEX_CHUNK = "kseg.render.companions:INDEX_CHUNK"
COMPANION_INDEX_LINES = "kseg.render.companions:INDEX_LINES"
COMPANION_INDEX_TEXT = "kseg.render.companions:index_text"
COMPANION_KAFKA_LINES = "kseg.render.companions:kafka_lines"
COMPANION_INDEX_FINDINGS = "kseg.render.companions:index_findings_of"
COMPANION_FINDINGS_LINES = "kseg.render.companions:index_findings_lines"
COMPANION_SNAPSHOT_STOP = "kseg.render.companions:snapshot_stop"

if TYPE_CHECKING:
    from kseg.companions.check import DumpIndexFindings


# What the plain-run writers print per message, from the facts: the timestamp type names by
# magic 0, CreateTime, LogAppendTime; the codec of an uncompressed message.
_TS_NAMES = (TIMESTAMP_TYPE_NAMES[-1], TIMESTAMP_TYPE_NAMES[0], TIMESTAMP_TYPE_NAMES[1])
_PLAIN_CODEC = CODEC_NAMES[CODEC_NONE]
_RUN_CODECS = tuple(CODEC_NAMES[c] for c in range(HEADER_RUN_MAX_CODEC + 1))  # a header run's, by number
# The offset "before" a later slice's first record (SliceStart): the gap the writers then report
# names that record, which merge compares with the slice before's last (KafkaRenderer.absorb).
_SLICE_HEAD = -(1 << 62)


def binary_writer(out: IO) -> Callable[[bytes], Any]:
    """Where a renderer writes its UTF-8 bytes: a binary stream itself; a UTF-8 text stream's
    buffer (its text flushed first); any other text stream through its text layer."""
    if not hasattr(out, "encoding"):
        return out.write
    buffer = getattr(out, "buffer", None)
    encoding = (getattr(out, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if buffer is not None and encoding == "utf8":
        out.flush()
        return buffer.write
    return lambda data: out.write(data.decode("utf-8"))


class ChunkedWriter:
    """Collects output and hands it on in large chunks: one write call per ``size`` bytes."""

    def __init__(self, target: IO[bytes], size: int = 1 << 20):
        self.target, self.size = target, size
        self._parts: list[bytes] = []
        self._pending = 0

    def write(self, data: bytes) -> None:
        if len(data) >= self.size:  # a chunk already (a batch of large values): joined, it would only be copied
            self._drain()
            self.target.write(data)
            return
        self._parts.append(data)
        self._pending += len(data)
        if self._pending >= self.size:
            self._drain()

    def _drain(self) -> None:
        if self._parts:
            data = b"".join(self._parts)
            self._parts, self._pending = [], 0
            self.target.write(data)

    def flush(self) -> None:
        self._drain()
        self.target.flush()


def batch_json(ev: BatchEvent) -> dict:
    b = ev.batch
    out = {
        "type": "batch",
        "file": str(ev.path),
        "position": b.position,
        "base_offset": ev.base_offset,
        "last_offset": ev.last_offset,
        "count": ev.count,
        "magic": b.magic,
        "codec": b.codec_name,
        "timestamp_type": b.timestamp_type_name,
        "max_timestamp": b.timestamp,
        "size": b.size,
        "crc": b.crc,
        "crc_valid": ev.crc_valid,
    }
    if b.magic >= 2:
        out.update(
            partition_leader_epoch=b.partition_leader_epoch,
            producer_id=b.producer_id,
            producer_epoch=b.producer_epoch,
            base_sequence=b.base_sequence,
            is_transactional=b.is_transactional,
            is_control=b.is_control,
            delete_horizon_ms=b.delete_horizon_ms,
        )
        if b.plugin_id is not None:
            out["plugin_id"] = b.plugin_id
    return out


def _json_str(v: str) -> str:
    return f'"{v}"' if v.isalnum() and v.isascii() else dumps(v, ensure_ascii=False)


def _json_int(v: int | None) -> str:
    return "null" if v is None else str(v)


_RUN_CODECS_JSON = tuple(_json_str(name) for name in _RUN_CODECS)


def batch_line(ev: BatchEvent, file_json: str) -> str:
    """``batch_json(ev)`` as its JSON line, without building the dict (one per batch of a dump);
    ``file_json`` is the file name already in JSON."""
    b = ev.batch
    name = b.codec_name
    line = (f'{{"type": "batch", "file": {file_json}, "position": {b.position}, "base_offset": {ev.base_offset}, '
            f'"last_offset": {ev.last_offset}, "count": {ev.count}, "magic": {b.magic}, '
            f'"codec": {_json_str(name)}, '
            f'"timestamp_type": "{b.timestamp_type_name}", "max_timestamp": {b.timestamp}, "size": {b.size}, '
            f'"crc": {b.crc}, "crc_valid": {bool_text(ev.crc_valid)}')
    if b.magic >= 2:
        line += (f', "partition_leader_epoch": {b.partition_leader_epoch}, "producer_id": {b.producer_id}, '
                 f'"producer_epoch": {b.producer_epoch}, "base_sequence": {b.base_sequence}, '
                 f'"is_transactional": {bool_text(b.is_transactional)}, "is_control": {bool_text(b.is_control)}, '
                 f'"delete_horizon_ms": {_json_int(b.delete_horizon_ms)}')
        if b.plugin_id is not None:
            line += f', "plugin_id": {b.plugin_id}'
    return line + "}\n"


def record_json(b: Batch, r: Record, key_decoder: Decoder | None, value_decoder: Decoder | None) -> dict:
    out: dict = {"type": "record", "offset": r.offset, "timestamp": r.timestamp,
                 "timestamp_type": b.timestamp_type_name}
    put_payload(out, "key", r.key, key_decoder)
    put_payload(out, "value", r.value, value_decoder)
    out["headers"] = [header_json(h.key, h.value, value_decoder) for h in r.headers]
    out["batch_position"] = b.position
    if b.is_control:
        try:
            out["control"] = control_info(r).as_json()
        except KsegError as e:
            out["control"] = {"error": str(e)}
    return out


def decoded_json(d: "DecodedRecord") -> dict:
    """``key_decoded``/``value_decoded`` of a record of an internal topic (``--decode``):
    ``{"schema", "version", [type, type_id, state], "data"[, "notes"]}``, or
    ``{"schema", "version", "raw", "note"}`` when kseg cannot decode it; null for no key
    (metadata and control records) and for a tombstone's value."""
    return {"key_decoded": None if d.key is None else d.key.as_json(),
            "value_decoded": None if d.value is None else d.value.as_json()}


class JsonlRenderer:
    """One JSON object per line; a batch's plain records are written in one bulk call."""

    def __init__(self, out: IO, err: TextIO, key_decoder: Decoder | None, value_decoder: Decoder | None,
                 view: RecordView | None = None):
        self.out, self.err = out, err
        self.write = binary_writer(out)
        self.key_decoder, self.value_decoder = key_decoder, value_decoder
        self.kmode, self.vmode = payload_mode(key_decoder), payload_mode(value_decoder)
        # --fields: record lines cut to the chosen fields (None: the default lines)
        self.fields = view.fields if view is not None else None
        self.codes = view.codes if view is not None else b""
        self._dumps = encoder(ensure_ascii=False, separators=(", ", ": "))
        self._file: tuple[object, str] = (None, "")  # the current file and its name in JSON

    def emit(self, obj: dict) -> None:
        self.write((self._dumps(obj) + "\n").encode("utf-8", "backslashreplace"))

    def _file_json(self, path: object) -> str:
        if self._file[0] is not path:
            self._file = (path, dumps(str(path), ensure_ascii=False))
        return self._file[1]

    def __call__(self, ev: Event) -> None:
        if isinstance(ev, PlainRunEvent):  # what takes_plain_runs asked for
            r, s = ev.run, ev.run.spans
            file_json = self._file_json(ev.path).encode("utf-8", "backslashreplace")
            self.write(bulk.jsonl_plain_run(r.batches, s.data, s.records, _TS_NAMES, _json_str(_PLAIN_CODEC),
                                            ev.records, self.kmode, self.vmode, file_json))
        elif isinstance(ev, HeaderRunEvent):  # what takes_header_runs asked for
            file_json = self._file_json(ev.path).encode("utf-8", "backslashreplace")
            s = ev.run.spans
            if s is None:
                self.write(bulk.jsonl_header_run(ev.batches, ev.run.bad, _TS_NAMES, _RUN_CODECS_JSON, file_json))
            else:
                self.write(bulk.jsonl_record_run(ev.batches, ev.run.bad, _TS_NAMES, _RUN_CODECS_JSON, file_json,
                                                 s.data, s.records, s.headers, self.kmode, self.vmode))
        elif isinstance(ev, BatchEvent):
            self.write(batch_line(ev, self._file_json(ev.path)).encode("utf-8", "backslashreplace"))
            if ev.spans is not None:  # what takes_spans asked for
                s = ev.spans
                self.write(bulk.jsonl_spans(s.data, s.records, s.headers, ev.batch.timestamp_type_name,
                                            ev.batch.position, self.kmode, self.vmode))
            elif ev.records is not None:
                b = ev.batch
                kd, vd = self.key_decoder, self.value_decoder
                decoded = ev.decoded
                if (decoded is None and not b.is_control and self.kmode is not None
                        and self.vmode is not None):
                    if self.fields is None:
                        self.write(bulk.jsonl_records(ev.records, b.timestamp_type_name, b.position,
                                                      self.kmode, self.vmode))
                    else:
                        self.write(bulk.jsonl_fields(ev.records, b.timestamp_type_name, b.position,
                                                     self.kmode, self.vmode, self.codes))
                    return
                for i, r in enumerate(ev.records):
                    out = record_json(b, r, kd, vd)
                    if decoded is not None and decoded[i] is not None:
                        out.update(decoded_json(decoded[i]))
                    self.emit(out if self.fields is None else json_fields(out, self.fields))
        elif isinstance(ev, TailEvent):
            if ev.reported:
                self.emit({"type": "trailing", "file": str(ev.path), "position": ev.tail.position,
                           "length": ev.tail.length, "error": str(ev.tail.error)})
        elif isinstance(ev, BadBatchEvent):
            self.emit({"type": "error", "file": str(ev.path), "position": ev.batch.position,
                       "size": ev.batch.size, "error": str(ev.error), "raw": bytes(ev.batch.raw).hex()})
        elif isinstance(ev, CompanionEvent):
            if isinstance(ev.entries, IndexEntries):  # in pieces, not a dict each
                a, b = ev.entries.names
                head = f'{{"type": "{ev.kind}_entry", "file": {self._file_json(ev.path)}, "{a}": '
                line = head.replace("%", "%%") + f'%d, "{b}": %d}}\n'  # (a file name may hold a %)
                for text in load(COMPANION_INDEX_TEXT)(ev.entries.slots, line):
                    self.write(text.encode("utf-8", "backslashreplace"))
            else:
                for entry in ev.entries:
                    self.emit({"type": ev.kind + "_entry", "file": str(ev.path), **entry})
            info = ev.info
            if info:
                self.emit({"type": ev.kind, "file": str(ev.path), **info})
        elif isinstance(ev, SkippedEvent):
            self.err.write(f"Ignoring {ev.reason}: {safe(ev.path)}\n")

    @property
    def takes_spans(self) -> bool:
        return self.fields is None and _takes_spans(bulk.jsonl_spans, self.kmode, self.vmode)

    @property
    def takes_plain_runs(self) -> bool:
        return self.fields is None and _takes_spans(bulk.jsonl_plain_run, self.kmode, self.vmode)

    @property
    def takes_header_runs(self) -> bool:
        return bulk.jsonl_header_run is not None

    def state(self) -> tuple[int, ...]:
        """What ``close`` reports, for a split dump's merge (``kseg.ops.dump_split``)."""
        return decoder_failures(self.key_decoder, self.value_decoder)

    def absorb(self, state: tuple[int, ...]) -> None:
        add_decoder_failures((self.key_decoder, self.value_decoder), state)

    def close(self) -> None:
        for note in decoder_notes(self.key_decoder, self.value_decoder):
            self.err.write(note + "\n")


def _takes_spans(writer: Callable | None, kmode: int | None, vmode: int | None) -> bool:
    """Whether a renderer's record lines can come from spans (``DumpOptions.record_spans``): the C
    writer is there and keys and values are shown in a built-in mode (not by a user's decoder)."""
    return writer is not None and kmode is not None and vmode is not None


class TextRenderer:
    """Readable output: a line per batch, then one line per record in fixed columns
    (offset, milliseconds, ISO-8601 UTC, key, value, headers), streamed batch by batch."""

    def __init__(self, out: IO, err: TextIO, key_decoder: Decoder | None, value_decoder: Decoder | None,
                 view: RecordView | None = None):
        self.out, self.err = out, err
        self.write = binary_writer(out)
        self.kd, self.vd = key_decoder, value_decoder
        self.kmode, self.vmode = payload_mode(key_decoder), payload_mode(value_decoder)
        # --fields or --no-truncate: the shaped record lines (None: the default lines)
        self.view = view if view is not None and view != RecordView() else None

    def w(self, text: str) -> None:
        self.write(text.encode("utf-8", "backslashreplace"))

    @property
    def takes_spans(self) -> bool:
        return self.view is None and _takes_spans(bulk.text_spans, self.kmode, self.vmode)

    @property
    def takes_plain_runs(self) -> bool:
        return self.view is None and _takes_spans(bulk.text_plain_run, self.kmode, self.vmode)

    @property
    def takes_header_runs(self) -> bool:
        return bulk.text_header_run is not None

    def _show(self, value: bytes | None, decoder: Decoder | None) -> str:
        return payload_text(value, decoder)

    def __call__(self, ev: Event) -> None:
        w = self.w
        if isinstance(ev, FileStart):
            label = "end offset" if ev.kind == "snapshot" else "base offset"
            base = "" if ev.base_offset is None else f", {label} {ev.base_offset}"
            w(f"== {safe(ev.path)} ({ev.kind}{base})\n")
        elif isinstance(ev, PlainRunEvent):  # what takes_plain_runs asked for
            r, s = ev.run, ev.run.spans
            self.write(bulk.text_plain_run(r.batches, s.data, s.records, _TS_NAMES, _PLAIN_CODEC, ev.records,
                                           self.kmode, self.vmode))
        elif isinstance(ev, HeaderRunEvent):  # what takes_header_runs asked for
            s = ev.run.spans
            if s is None:
                self.write(bulk.text_header_run(ev.batches, ev.run.bad, _TS_NAMES, _RUN_CODECS))
            else:
                self.write(bulk.text_record_run(ev.batches, ev.run.bad, _TS_NAMES, _RUN_CODECS, s.data, s.records,
                                                s.headers, self.kmode, self.vmode))
        elif isinstance(ev, BatchEvent):
            b = ev.batch
            crc = "ok" if ev.crc_valid else f"BAD (computed {b.computed_crc():#010x})"
            iso = iso_utc(b.timestamp)
            w(
                f"batch @{b.position}  offsets {ev.base_offset}..{ev.last_offset}  count {ev.count}  "
                f"magic {b.magic}  {b.codec_name}  {b.timestamp_type_name} {b.timestamp}"
                f"{'' if iso == '-' else f' {iso}'}  size {b.size}  crc {b.crc:#010x} {crc}\n"
            )
            if b.magic >= 2:
                flags = [f for f, on in (("transactional", b.is_transactional), ("control", b.is_control)) if on]
                horizon = "" if b.delete_horizon_ms is None else f"  delete horizon {b.delete_horizon_ms}"
                w(
                    f"  producer {b.producer_id} epoch {b.producer_epoch} sequence {b.base_sequence}.."
                    f"{b.last_sequence}  leader epoch {b.partition_leader_epoch}"
                    f"{'  ' + ' '.join(flags) if flags else ''}{horizon}\n"
                )
            if ev.spans is not None:  # what takes_spans asked for
                s = ev.spans
                self.write(bulk.text_spans(s.data, s.records, s.headers, self.kmode, self.vmode))
            elif (ev.records and self.view is not None and ev.decoded is None
                    and not b.is_control and self.kmode is not None and self.vmode is not None):
                view = self.view
                self.write(bulk.text_fields(ev.records, b.timestamp_type_name, b.position, self.kmode, self.vmode,
                                           view.codes, -1 if view.width is None else view.width))
            elif ev.records and self.view is not None:
                view, kd, vd = self.view, self.kd, self.vd
                decoded = ev.decoded or [None] * len(ev.records)
                w("".join(text_line(b, r, view, kd, vd, _decoded_text(d)) for r, d in zip(ev.records, decoded)))
            elif ev.records and ev.decoded is not None:
                self._decoded_lines(ev)
            elif ev.records and b.is_control:
                for r in ev.records:
                    try:
                        ctrl = control_info(r)
                        shown = ctrl.type_name + (f" coordinator epoch {ctrl.coordinator_epoch}"
                                                  if ctrl.coordinator_epoch is not None else "")
                    except KsegError as e:
                        shown = f"<{e}>"
                    w(text_head(r.offset, r.timestamp) + f"(control) {shown}\n")
            elif ev.records and self.kmode is not None and self.vmode is not None:
                self.write(bulk.text_records(ev.records, self.kmode, self.vmode))
            elif ev.records:
                for r in ev.records:
                    line = (text_head(r.offset, r.timestamp) + f"key {self._show(r.key, self.kd)}  "
                            f"value {self._show(r.value, self.vd)}")
                    if r.headers:
                        line += "  headers " + ", ".join(
                            f"{text_escape(h.key.encode('utf-8', 'surrogateescape'))}={self._show(h.value, self.vd)}"
                            for h in r.headers)
                    w(line + "\n")
        elif isinstance(ev, TailEvent):
            if ev.reported:
                w(f"!! {ev.tail.length} bytes at the end do not form a complete batch: {safe(ev.tail.error)}\n")
        elif isinstance(ev, BadBatchEvent):
            w(f"!! batch @{ev.batch.position} (size {ev.batch.size}) does not decode: {safe(ev.error)}\n")
            shown = ev.batch.size if self.view is not None and not self.view.truncate else 64
            w(f"   raw: {bytes(ev.batch.raw[:shown]).hex()}{'...' if ev.batch.size > shown else ''}\n")
        elif isinstance(ev, CompanionEvent):
            info = ev.info
            if info:
                w("  " + "  ".join(f"{k} {_info_text(v)}" for k, v in info.items()) + "\n")
            if isinstance(ev.entries, IndexEntries) and ev.entries:  # fixed columns, streamed
                a, b = ev.entries.names
                w(f"  {a:>{_INDEX_WIDTHS[a]}}  {b:>{_INDEX_WIDTHS[b]}}\n")
                line = f"  %{_INDEX_WIDTHS[a]}d  %{_INDEX_WIDTHS[b]}d\n"
                for text in load(COMPANION_INDEX_TEXT)(ev.entries.slots, line):
                    w(text)
            elif ev.entries:
                # A table of INDEX_CHUNK rows at a time (a .txnindex is read as it is printed).
                headers, rows = list(ev.entries[0].keys()), iter(ev.entries)
                while chunk := [list(e.values()) for e in islice(rows, load(COMPANION_INDEX_CHUNK))]:
                    table = tabulate(chunk, headers=headers, disable_numparse=True)
                    w("".join("  " + line + "\n" for line in table.split("\n")))
            elif not info:
                w("  (no entries)\n")
        elif isinstance(ev, SkippedEvent):
            self.err.write(f"Ignoring {ev.reason}: {safe(ev.path)}\n")

    def _decoded_lines(self, ev: BatchEvent) -> None:
        """Records of an internal topic, one per line: the fixed columns, then decoded key => value."""
        w = self.w
        b = ev.batch
        assert ev.records is not None and ev.decoded is not None
        for r, d in zip(ev.records, ev.decoded):
            head = text_head(r.offset, r.timestamp)
            if d is None:
                if b.is_control:
                    try:
                        shown = f"(control) {control_info(r).type_name}"
                    except KsegError as e:
                        shown = f"(control) <{e}>"
                else:
                    shown = f"key {self._show(r.key, self.kd)}  value {self._show(r.value, self.vd)}"
                w(head + shown + "\n")
                continue
            parts = []
            if b.is_control:
                parts.append("(control)")
            if d.key is not None:
                parts.append(d.key.describe())
            value = "<tombstone>" if d.value is None else d.value.describe()
            parts.append(("=> " if d.key is not None else "") + value)
            w(head + " ".join(parts) + "\n")

    def state(self) -> tuple[int, ...]:
        """What ``close`` reports, for a split dump's merge (``kseg.ops.dump_split``)."""
        return decoder_failures(self.kd, self.vd)

    def absorb(self, state: tuple[int, ...]) -> None:
        add_decoder_failures((self.kd, self.vd), state)

    def close(self) -> None:
        for note in decoder_notes(self.kd, self.vd):
            self.err.write(note + "\n")


def _decoded_text(d: "DecodedRecord | None") -> str | None:
    """A decoded record of an internal topic as the text lines show it: key => value."""
    if d is None:
        return None
    value = "<tombstone>" if d.value is None else d.value.describe()
    return value if d.key is None else f"{d.key.describe()} => {value}"


# The text format's index columns: at least as wide as the record lines' offsets (8) and
# milliseconds (13), wider where a value needs it; a position fits in 10.
_INDEX_WIDTHS = {"offset": 8, "position": 10, "timestamp": 13}


def _info_text(v: Any) -> str:
    if v is None:
        return "null"
    if v == "":
        return '""'
    return printable_text(v)  # a companion's value (quorum-state's JSON) is text from the data


class KafkaRenderer:
    """kafka-dump-log.sh's lines, quirks included (the stray ``}``, OptionalLong, reversed lists)."""

    def __init__(self, out: IO, err: TextIO, key_decoder: Decoder | None, value_decoder: Decoder | None,
                 deep: bool = False, kafka_version: "str | DumpLogRelease" = DEFAULT, skip_record_metadata: bool = False,
                 index_sanity: bool = False, verify_index: bool = False):
        self.out, self.err = out, err
        self.write = binary_writer(out)
        self.kd, self.vd = key_decoder, value_decoder
        self.kmode, self.vmode = payload_mode(key_decoder), payload_mode(value_decoder)
        self.deep = deep
        self.release = as_release(kafka_version)  # whose lines to print (kseg.kafka_releases)
        self.skip_record_metadata = skip_record_metadata
        self.index_sanity, self.verify_index = index_sanity, verify_index  # --index-sanity-check & co.
        self.non_consecutive: dict[str, list[tuple[int, int]]] = {}
        self.index_findings: dict[str, DumpIndexFindings] = {}  # absolute path -> Kafka's index walk
        self._last_offset: int | None = None
        self._gaps: tuple[object, list[tuple[int, int]]] | None = None  # (path, its list) of the current file
        # A unit's file for a split dump's merge: (absolute path, a later slice?, its first record's
        # offset, when a later slice); and by absolute path, the last record offset the units merged
        # so far showed (absorb).
        self._unit: tuple[Path, bool, int | None] | None = None
        self._ends: dict[str, int | None] = {}
        # Lines written after a log or snapshot file's "Dumping" line, before its contents: Kafka 3.x
        # announces there, each time it loads one, a deprecated decoder class it swaps (kseg-dump-log).
        self.log_preamble: tuple[str, ...] = ()
        # kseg-dump-log: stop where the tool stops with an exception (kseg.render.kafka_stops) at a
        # tail it cannot read and at a codec it cannot name; kseg dump judges those itself.
        self.as_the_tool = False
        self.max_message_size = KAFKA_MAX_MESSAGE_SIZE  # kseg-dump-log's --max-message-size

    def w(self, text: str) -> None:
        self.write(text.encode("utf-8", "backslashreplace"))

    def _text(self, value: bytes, decoder: Decoder) -> str:
        return payload_kafka(value, decoder)

    def __call__(self, ev: Event) -> None:
        w = self.w
        if isinstance(ev, SliceStart):  # the file's header, and its offsets before, are other units'
            self._last_offset = _SLICE_HEAD
            self._unit = (ev.path, True, None)
        elif isinstance(ev, FileStart):
            w(f"Dumping {safe(ev.path)}\n")
            self._last_offset = None
            self._unit = (ev.path, False, None)
            if ev.kind in ("log", "checkpoint"):
                for line in self.log_preamble:
                    w(line + "\n")
            if ev.kind == "log":
                w(f"{self.release.log_start_label}: {ev.base_offset}\n")
            elif ev.kind == "checkpoint":
                name = ev.path.name
                if name == BOOTSTRAP_FILE:
                    w("KRaft bootstrap snapshot\n")
                else:
                    end, _, epoch = name.split(".")[0].partition("-")
                    w(f"Snapshot end offset: {int(end)}, epoch: {int(epoch) if epoch else 0}\n")
        elif isinstance(ev, PlainRunEvent):  # what takes_plain_runs asked for
            r, s = ev.run, ev.run.spans
            gaps: list[tuple[int, int]] = []
            text, last = bulk.kafka_plain_run(r.batches, s.data, s.records, _TS_NAMES, _PLAIN_CODEC, ev.records,
                                              self.kmode, self.vmode, self._last_or_start(), gaps,
                                              self.release.legacy_crc_brace)
            self.write(text)
            self._note_gaps(ev, gaps)
            if last is not None:
                self._last_offset = last
        elif isinstance(ev, BatchEvent) and ev.stops is not None:  # the tool's exception after these lines
            self(replace(ev, stops=None))
            raise ev.stops
        elif isinstance(ev, HeaderRunEvent):  # what takes_header_runs asked for
            s = ev.run.spans
            if s is None:
                self.write(bulk.kafka_header_run(ev.batches, ev.run.bad, _TS_NAMES, _RUN_CODECS))
                return
            gaps = []
            text, last = bulk.kafka_record_run(ev.batches, ev.run.bad, _TS_NAMES, _RUN_CODECS, s.data, s.records,
                                               s.headers, self.kmode, self.vmode, self._last_or_start(), gaps)
            self.write(text)
            self._note_gaps(ev, gaps)
            if last is not None:
                self._last_offset = last
        elif isinstance(ev, BatchEvent):
            b = ev.batch
            if self._older_batch_lines:
                codec = b.codec_name.upper() if self.release.codec_names_upper else b.codec_name
                line = line_writers.kafka_batch_line(b, ev.crc_valid, b.timestamp_type_name, codec,
                                                     delete_horizon=self.release.delete_horizon)
            else:
                line = bulk.kafka_batch_line(b, ev.crc_valid, b.timestamp_type_name, b.codec_name)
            stop = codec_stop(b) if self.as_the_tool else None
            if stop is not None:  # the tool cannot name the codec: its line stops after the first half
                self.write(line[:line.index(SECOND_HALF)])
                raise stop.located(file=str(ev.path))
            self.write(line)
            if ev.kafka_lines is not None:
                self._kafka_lines(ev)
                return
            if ev.spans is not None:  # what takes_spans asked for
                s = ev.spans
                gaps: list[tuple[int, int]] = []
                text, last = bulk.kafka_spans(s.data, s.records, s.headers, *self._bulk_args(ev, gaps, s.first_offset))
                self.write(text)
                self._note_gaps(ev, gaps)
                if last is not None:
                    self._last_offset = last
                return
            if ev.records is not None:
                decoded = ev.decoded
                if (decoded is None and not b.is_control and ev.records and self.kmode is not None
                        and self.vmode is not None and not self.skip_record_metadata):
                    gaps = []
                    self.write(bulk.kafka_records(ev.records, *self._bulk_args(ev, gaps, ev.records[0].offset)))
                    self._note_gaps(ev, gaps)
                    self._last_offset = ev.records[-1].offset
                    return
                first = ev.records[0].offset if ev.records else b.offset
                try:
                    for i, r in enumerate(ev.records):
                        self._track(ev, r.offset)
                        w(self._record_line(b, r, None if decoded is None else decoded[i], first))
                except OlderToolStopsError as e:
                    raise e.located(file=str(ev.path)) from None
        elif isinstance(ev, TailEvent):
            if ev.reported:
                text, stop = tail_stop(ev.head, ev.tail.length, ev.tail.position) if self.as_the_tool else ("", None)
                if stop is not None:
                    w(text)
                    raise stop.located(file=str(ev.path))
                w(f"Found {ev.tail.length} invalid bytes at the end of {safe(ev.path.name)}\n")
        elif isinstance(ev, BadBatchEvent):
            self.err.write(f"kseg: error: {ev.error}\n")
        elif isinstance(ev, CompanionEvent) and (problem := load(COMPANION_SNAPSHOT_STOP)(ev, self.release)):
            self.err.write(problem + "\n")  # the tool's message for a snapshot it cannot read: no entry, exit 0
        elif isinstance(ev, CompanionEvent) and isinstance(ev.parsed, KsegError):
            raise ev.parsed  # only kseg finds fault with it: the tool would print its entries
        elif isinstance(ev, CompanionEvent) and ev.kind == "txnindex" and ev.parsed.stop is not None:
            raise ev.parsed.stop.located(file=str(ev.path))  # Kafka's reader throws before the tool prints an entry
        elif isinstance(ev, CompanionEvent):
            index_lines = load(COMPANION_INDEX_LINES)
            if ev.kind in index_lines and not self.index_sanity:
                found = load(COMPANION_INDEX_FINDINGS)(ev, self.max_message_size)
                if found and found.stop is not None and self.as_the_tool:  # it dies at that entry
                    at, why = found.stop
                    if not self.verify_index:
                        for text in load(COMPANION_INDEX_TEXT)(ev.entries.slots, index_lines[ev.kind], at):
                            self.write(text.encode())
                    raise DataError(why, file=str(ev.path), where=f"entry {at}")
                if found:
                    self.index_findings[str(ev.path.resolve())] = found
            if isinstance(ev.entries, IndexEntries) and ev.entries and not (self.index_sanity or self.verify_index):
                # in pieces, not a line each
                for text in load(COMPANION_INDEX_TEXT)(ev.entries.slots, index_lines[ev.kind]):
                    self.write(text.encode())
                return
            try:
                lines = load(COMPANION_KAFKA_LINES)(ev, index_sanity=self.index_sanity,
                                                    verify_index=self.verify_index, release=self.release)
            except KsegError as e:
                if self.index_sanity and ev.kind in index_lines:
                    raise  # the sanity check failed: the tool stops there and exits 1
                self.err.write(f"kseg: error: {e}\n")
                lines = []
            for line in lines:
                w(line + "\n")
        elif isinstance(ev, SkippedEvent):
            self.err.write(f"Ignoring unknown file {safe(ev.path)}\n")

    @property
    def takes_spans(self) -> bool:
        return _takes_spans(bulk.kafka_spans, self.kmode, self.vmode) and not self.skip_record_metadata

    @property
    def takes_plain_runs(self) -> bool:
        return (_takes_spans(bulk.kafka_plain_run, self.kmode, self.vmode) and not self.skip_record_metadata
                and not self.release.record_batch_fields)

    @property
    def takes_header_runs(self) -> bool:
        """Where the batch lines are the bulk writer's (the lines of the releases before 3.0 and
        2.8's record fields are Python's alone)."""
        return bulk.kafka_header_run is not None and not self._older_batch_lines

    @property
    def _older_batch_lines(self) -> bool:
        r = self.release
        return r.record_batch_fields or not r.delete_horizon or r.codec_names_upper

    def _last_or_start(self) -> int | None:
        """The offset before the next record, for the gap report: the last one shown, or (Kafka 4
        compares a file's first record with -1 too) -1 at a file's start."""
        last = self._last_offset
        if last is None and self.release.gap_from_file_start:
            return -1
        return last

    def _bulk_args(self, ev: BatchEvent, gaps: list[tuple[int, int]], first_offset: int) -> tuple:
        """The bulk writers' arguments after the records: the batch's facts, the offset before its first
        record, where to put the gaps found, and (Kafka 2.8) the batch fields each record line repeats."""
        b = ev.batch
        seq = NO_SEQUENCE if b.base_sequence is None else b.base_sequence
        fields = self._batch_fields(b, first_offset) if self.release.record_batch_fields else None
        return (b.timestamp_type_name, b.magic, b.offset, seq, self.kmode, self.vmode, self._last_or_start(), gaps,
                self.release.legacy_crc_brace, fields)

    def _batch_fields(self, b: Batch, first_offset: int) -> str:
        return line_writers.kafka_batch_fields(b, first_offset, b.codec_name.upper() if self.release.codec_names_upper
                                               else b.codec_name)

    def _note_gaps(self, ev: BatchEvent | PlainRunEvent | HeaderRunEvent, gaps: list[tuple[int, int]]) -> None:
        if gaps and gaps[0][0] == _SLICE_HEAD:
            self._slice_head(gaps.pop(0)[1])
        if gaps:  # a file is listed in the report only when it has a gap
            self._gap_list(ev).extend(gaps)

    def _slice_head(self, offset: int) -> None:
        assert self._unit is not None
        self._unit = (self._unit[0], True, offset)

    def _gap_list(self, ev: BatchEvent | PlainRunEvent | HeaderRunEvent) -> list[tuple[int, int]]:
        if self._gaps is None or self._gaps[0] is not ev.path:
            self._gaps = (ev.path, self.non_consecutive.setdefault(str(ev.path.resolve()), []))
        return self._gaps[1]

    def _track(self, ev: BatchEvent, offset: int) -> None:
        last = self._last_or_start()
        if last == _SLICE_HEAD:
            self._slice_head(offset)
        elif last is not None and offset != last + 1:
            self._gap_list(ev).append((last, offset))
        self._last_offset = offset

    def _kafka_lines(self, ev: BatchEvent) -> None:
        """The record lines of a legacy message kseg refuses, as Kafka reads it (``BatchEvent.kafka_lines``):
        each from its raw lengths; the tool dies where its reader throws (before a line: the value's
        length field; after its metadata: the bytes, where the contents are printed)."""
        b = ev.batch
        assert ev.kafka_lines is not None
        ts_name = TIMESTAMP_TYPE_NAMES[b.timestamp_type]
        contents = self.kd is not None or self.vd is not None
        first = ev.kafka_lines[0].offset if ev.kafka_lines else b.offset
        for line in ev.kafka_lines:
            read = line.read
            if read.sizes is None:  # reading the value's length throws before the line is built
                assert read.stop is not None
                raise read.stop.located(file=str(ev.path))
            self._track(ev, line.offset)
            fields = self._batch_fields(b, first) if self.release.record_batch_fields else None
            metadata = "" if self.skip_record_metadata else line_writers.legacy_record_metadata(
                line.offset, ts_name, line.timestamp, read.sizes, line.valid, line.crc, self.release.legacy_crc_brace,
                fields)
            if read.stop is not None and contents:
                self.w(metadata)  # the parser reads key and value before printing either
                raise read.stop.located(file=str(ev.path))
            r = Record(line.offset, line.timestamp, read.key, read.value, (), line.timestamp, b.attributes, b.magic,
                       line.crc)
            self.w(self._record_line(b, r, metadata=metadata))

    def _record_line(self, b: Batch, r: Record, decoded: "DecodedRecord | None" = None,
                     first_offset: int | None = None, metadata: str | None = None) -> str:
        if self.skip_record_metadata:
            parts = []
        elif metadata is not None:
            parts = [metadata]
        elif self.release.record_batch_fields:
            parts = [self._record_and_batch_metadata(b, r, b.offset if first_offset is None else first_offset)]
        else:
            parts = [self._record_metadata(b, r)]
        if b.is_control:
            return "".join(parts) + "\n"
        if decoded is not None:
            # --offsets-decoder / --transaction-log-decoder / --cluster-metadata-decoder & co.
            try:
                key, payload = decoded.kafka_text(self.release)
            except OlderToolStopsError as e:
                self.w("".join(parts))  # the older tool printed the line's metadata, then stopped
                raise e.located(position=b.position) from None
        else:
            key = None if self.kd is None or r.key is None else self._text(r.key, self.kd)
            payload = None if self.vd is None or r.value is None else self._text(r.value, self.vd)
        # --skip-record-metadata: the contents start with "| "; Kafka 3.x did so for the key only.
        prefix = "| " if self.skip_record_metadata else " "
        if key is not None:
            parts.append(f"{prefix}key: {key}")
            prefix = " "
        if payload is not None:
            parts.append(f"{' ' if self.release.payload_space_without_metadata else prefix}payload: {payload}")
        return "".join(parts) + "\n"

    def _record_and_batch_metadata(self, b: Batch, r: Record, first_offset: int) -> str:
        """Kafka 2.8's record metadata: the record's fields, then its batch's, then the sequence or
        the message's CRC again (the bulk writers' lines, one record at a time)."""
        line = line_writers.kafka_records([r], TIMESTAMP_TYPE_NAMES[b.timestamp_type], b.magic, b.offset,
                                          NO_SEQUENCE if b.base_sequence is None else b.base_sequence,
                                          line_writers.NONE, line_writers.NONE, None, [], batch_fields=self._batch_fields(b, first_offset))
        line = line.decode("utf-8")[:-1]
        if b.is_control:
            try:
                info = control_info(r)
                shown = self.release.control_type_text(_control_type_id(r, info), info.type_name)
                line += (f" endTxnMarker: {info.type_name} coordinatorEpoch: {info.coordinator_epoch}"
                         if info.is_txn_marker else f" controlType: {shown}")
            except KsegError as e:
                if self.as_the_tool:  # ControlRecordType.parse throws: the tool dies after the line's metadata
                    self.w(line)
                    raise e.located(position=b.position) from None
                line += " controlType: UNKNOWN(-1)"
        return line

    def _record_metadata(self, b: Batch, r: Record) -> str:
        ts_name = TIMESTAMP_TYPE_NAMES[b.timestamp_type]
        sizes = (-1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value))
        if b.magic < 2:
            parts = [line_writers.legacy_record_metadata(r.offset, ts_name, r.timestamp, sizes, _legacy_crc_valid(b, r),
                                                         r.crc, self.release.legacy_crc_brace)]
        else:
            keys = ",".join(header_key_text(h.key) for h in r.headers)
            parts = [f"| offset: {r.offset} {ts_name}: {r.timestamp} keySize: {sizes[0]} valueSize: {sizes[1]}"
                     f" sequence: {record_sequence(b, r)} headerKeys: [{keys}]"]
        if b.is_control:
            try:
                info = control_info(r)
                if info.is_txn_marker:
                    parts.append(f" endTxnMarker: {info.type_name} coordinatorEpoch: {info.coordinator_epoch}")
                else:

                    # SnapshotHeader {...}, SnapshotFooter, KRaftVersion, KRaftVoters (Kafka 4: LeaderChange too)
                    kraft = None if self.release.control_types else control_kafka_text(r, self.release)
                    shown = self.release.control_type_text(_control_type_id(r, info), info.type_name)
                    parts.append(f" {kraft}" if kraft else f" controlType: {shown}")
            except OlderToolStopsError as e:
                self.w("".join(parts))  # the tool printed the line's metadata, then stopped
                raise e.located(position=b.position) from None
            except KsegError as e:
                if self.as_the_tool:  # ControlRecordType.parse throws: the tool dies after the line's metadata
                    self.w("".join(parts))
                    raise e.located(position=b.position) from None
                parts.append(" controlType: UNKNOWN(-1)")
        return "".join(parts)

    def state(self) -> tuple:
        """What ``close`` reports, for a split dump's merge (``kseg.ops.dump_split``): the offset
        gaps and index findings by file, the decoders' failures; and the unit's file, for the gap
        between the slices of a log (its path, whether a later slice, its first record's offset
        then, the last record's)."""
        last = None if self._last_offset == _SLICE_HEAD else self._last_offset
        unit = None
        if self._unit is not None:
            path, later_slice, head = self._unit
            unit = (str(path.resolve()), later_slice, head, last)
        return self.non_consecutive, self.index_findings, decoder_failures(self.kd, self.vd), unit

    def absorb(self, state: tuple) -> None:
        """A unit's ``state``, in the dump's order: what it found, and where a later slice of a log
        starts, the gap a whole read finds there."""
        non_consecutive, index_findings, failures, unit = state
        if unit is not None:
            path, later_slice, head, last = unit
            if later_slice and head is not None:
                before = self._ends.get(path)
                if before is None and self.release.gap_from_file_start:
                    before = -1
                if before is not None and head != before + 1:
                    self.non_consecutive.setdefault(path, []).append((before, head))
            if last is not None or not later_slice:
                self._ends[path] = last
        for path, gaps in non_consecutive.items():
            self.non_consecutive.setdefault(path, []).extend(gaps)
        self.index_findings.update(index_findings)
        add_decoder_failures((self.kd, self.vd), failures)

    def close(self) -> None:
        if self.index_findings:
            for line in load(COMPANION_FINDINGS_LINES)(self.index_findings, self.release):
                self.err.write(line + "\n")
        for line in non_consecutive_lines(self.non_consecutive, self.release):
            self.err.write(line + "\n")
        for note in decoder_notes(self.kd, self.vd):
            self.err.write(note + "\n")


def _control_type_id(r: Record, info: ControlInfo) -> int:
    """The type id the tool prints beside a control record's type: the key's, an unknown one's too
    (``ControlRecordType.parseTypeId``), where ``control_info`` calls every unknown type -1."""
    if info.type_name != "UNKNOWN" or r.key is None or len(r.key) < 4:
        return info.type_id
    return int.from_bytes(r.key[2:4], "big", signed=True)


def non_consecutive_lines(non_consecutive: dict[str, list[tuple[int, int]]],
                          release: "str | DumpLogRelease" = DEFAULT) -> list[str]:
    """kafka-dump-log.sh's stderr report of offset gaps, per file (absolute path): the files in
    the order of the release's hash map of paths; the pairs as older tools prepend them to a list
    (reverse order) or as newer ones keep them, in a map sorted by offset."""
    release = as_release(release)
    order = PATH_MAP_ORDERS[release.path_map_order]
    lines = []
    for path in order(list(non_consecutive)):
        pairs = non_consecutive[path]
        lines.append(f"Non-consecutive offsets in {path}")
        shown = sorted(dict(pairs).items()) if release.gaps_sorted else list(reversed(pairs))
        lines.extend(f"  {a} is followed by {b}" for a, b in shown)
    return lines


def _legacy_crc_valid(batch: Batch, r: Record) -> bool:

    return legacy_message_crc(r) == r.crc


RENDERERS: dict[str, Callable[..., Any]] = {"jsonl": JsonlRenderer, "text": TextRenderer, "kafka": KafkaRenderer}


def payload_decoder(payload: str, fmt: str) -> Decoder | None:
    if payload == "none":
        return None
    if fmt == "kafka" and payload == "utf8":
        return BUILTIN["java-string"]
    return BUILTIN[payload]
