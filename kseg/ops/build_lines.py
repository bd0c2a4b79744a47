"""Reading ``kseg build``'s input: dump's JSON lines (``kseg dump --format jsonl``) as batches
with their records.

Rules: a ``batch`` line, then its ``record`` lines; record lines before any batch line make
one v2 batch; ``error`` lines (``dump --keep-going``) carry their raw bytes and ``trailing``
lines none. Keys and values are read as the ``--payload`` they were written in
(``key_b64``/``value_b64`` always base64); a control record without key and value bytes is
made from dump's ``control`` object. Every problem is one ``InputError`` naming its line.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from kseg.errors import InputError
from kseg.formats.attributes import CONTROL_ABORT, CONTROL_COMMIT, CONTROL_TYPE_NAMES, CREATE_TIME, NO_TIMESTAMP
from kseg.layouts import CONTROL_KEY, END_TXN_MARKER
from kseg.model import Header, Record, make_record
from kseg.ops.fixture_spec import SPEC_WHERE

PAYLOADS = ("utf8", "hex", "base64")
_CONTROL_IDS = {name: t for t, name in CONTROL_TYPE_NAMES.items()}

Line = int | str  # a line's number in the input, or where a fixture spec said it ("batch 3, record 2")


def at_line(line: Line) -> str:
    return f"line {line}" if isinstance(line, int) else line


def line_error(line: Line, message: str, source: str | None) -> InputError:
    return InputError(message, file=source, where=at_line(line))


def int_field(d: dict, name: str, line: Line, source: str | None, default: Any = None) -> Any:
    v = d.get(name, default)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise line_error(line, f'"{name}" must be an integer, not {json.dumps(v)[:40]}', source)
    return v


def bool_field(d: dict, name: str, line: Line, source: str | None) -> bool:
    v = d.get(name)
    if v is not None and not isinstance(v, bool):
        raise line_error(line, f'"{name}" must be true or false, not {json.dumps(v)[:40]}', source)
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
        raise line_error(line, f'"{which}" is not {"base64" if b64 is not None else payload}: {e}', source) from None


def _headers(d: dict, payload: str, line: Line, source: str | None) -> tuple[Header, ...]:
    hs = d.get("headers") or []
    if isinstance(hs, dict):  # the fixture spec's shorthand: {"key": "value"}
        hs = [{"key": k, "value": v} for k, v in hs.items()]
    if not isinstance(hs, list):
        raise line_error(line, '"headers" must be a list of {"key", "value"}', source)
    out = []
    for h in hs:
        if not isinstance(h, dict):
            raise line_error(line, '"headers" must be a list of {"key", "value"}', source)
        key = _bytes_of(h, "key", "utf8", line, source)
        if key is None:
            raise line_error(line, "a header needs a key", source)
        out.append(Header(key.decode("utf-8", "surrogateescape"), _bytes_of(h, "value", payload, line, source)))
    return tuple(out)


def record_of(d: dict, line: Line, payload: str = "utf8", source: str | None = None, *,
              timestamp_type: int = CREATE_TIME, magic: int = 2) -> Record:
    """A record line as a record (its offset, timestamp, key, value and headers)."""
    offset = int_field(d, "offset", line, source)
    if offset is None:
        raise line_error(line, 'a record line needs an "offset"', source)
    ts = int_field(d, "timestamp", line, source, NO_TIMESTAMP)
    stored = int_field(d, "stored_timestamp", line, source, ts)
    key, value = _bytes_of(d, "key", payload, line, source), _bytes_of(d, "value", payload, line, source)
    if d.get("control") is not None and not ({"key", "key_b64", "value", "value_b64"} & d.keys()):
        key, value = _control_bytes(d["control"], line, source)
    return make_record(offset, ts, key, value, _headers(d, payload, line, source), stored_timestamp=stored,
                       magic=magic)


def _control_bytes(control: Any, line: Line, source: str | None) -> tuple[bytes, bytes | None]:
    """A control record's key (and a transaction marker's value) from dump's ``control`` object
    (``{"type": "COMMIT", "coordinator_epoch": 5}``), for lines that give no key and value."""
    if not isinstance(control, dict):
        raise line_error(line, '"control" must be an object such as {"type": "COMMIT", "coordinator_epoch": 0}', source)
    type_id = control.get("type_id", _CONTROL_IDS.get(control.get("type")))  # type: ignore[arg-type]
    if type_id not in (CONTROL_ABORT, CONTROL_COMMIT):
        raise line_error(line, f"a control record without key and value bytes is COMMIT or ABORT, not "
                          f"{json.dumps(control.get('type', type_id))[:40]}", source)
    key = CONTROL_KEY.struct.pack(int_field(control, "version", line, source, 0), type_id)
    return key, END_TXN_MARKER.struct.pack(0, int_field(control, "coordinator_epoch", line, source, 0))


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
                raise line_error(n, f"not a JSON line: {e}", source) from None
        if not isinstance(d, dict):
            raise line_error(n, "a line must be a JSON object", source)
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
                raise line_error(at, f"the record's batch_position {pos} is not that of the batch line before it "
                                f"({batch_pos})", source)
            current.record_fields.append(d)
            current.record_lines.append(at)
            current.records.append(record_of(d, at, payload, source, magic=int_field(current.fields, "magic", at,
                                                                                 source, 2)))
        elif kind == "error":
            if current is not None:
                yield current
                current = None
            try:
                raw = bytes.fromhex(d.get("raw") or "")
            except (TypeError, ValueError):
                raise line_error(at, 'an error line\'s "raw" must be hex', source) from None
            yield BatchLine(at, d, raw=raw)
        elif kind == "trailing":
            if current is not None:
                yield current
                current = None
            yield BatchLine(at, d, raw=b"")
        else:
            raise line_error(at, f"not a batch or record line (type {json.dumps(kind)[:40]})", source)
    if current is not None:
        yield current



__all__ = ["PAYLOADS", "BatchLine", "Line", "at_line", "bool_field", "int_field", "line_error", "parse_lines",
           "record_of"]
