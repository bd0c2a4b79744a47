"""Record lines with a choice of fields (``dump --fields``) or uncut values (``--no-truncate``).

Rules: the default lines' writers are not touched (they pay nothing for the choice). A batch's
plain records with built-in payload modes go to ``bulk.jsonl_fields``/``text_fields`` (C when
built, ``lines`` else); what those do not take (control records, ``--decode``, a user's
decoder) is written here record by record, from the default
lines' own pieces: the same key and value text (``payload_text``), the same JSON object
(``record_json``), projected.
"""

from __future__ import annotations

from dataclasses import dataclass

from kseg.errors import KsegError
from kseg.log.control import control_info
from kseg.model import Batch, Record
from kseg.render.lines import DEFAULT_TEXT_FIELDS, RECORD_FIELDS, TEXT_WIDTH, iso_utc, text_escape, text_head
from kseg.render.payload import Decoder
from kseg.render.values import header_key_bytes, payload_text

# jsonl: a field and the names it may take in a line (bytes that are not UTF-8 go as *_b64).
_JSON_NAMES = {"key": ("key", "key_b64"), "value": ("value", "value_b64")}


@dataclass(frozen=True)
class RecordView:
    """How the record lines are shaped: ``fields`` (None: the default lines' own) in the order
    given, and whether the text format cuts long keys and values (``truncate``)."""

    fields: tuple[str, ...] | None = None
    truncate: bool = True

    @property
    def width(self) -> int | None:
        return TEXT_WIDTH if self.truncate else None

    @property
    def codes(self) -> bytes:
        """The fields as the bulk writers take them: indexes into RECORD_FIELDS (no fields: the
        default text line's)."""
        if self.fields is None:
            return DEFAULT_TEXT_FIELDS
        return bytes(RECORD_FIELDS.index(f) for f in self.fields)


def parse_fields(text: str) -> tuple[str, ...]:
    """``offset,key,value`` as a tuple of record fields; ValueError naming the valid ones."""
    fields = tuple(f.strip() for f in text.split(","))
    unknown = [f for f in fields if f not in RECORD_FIELDS]
    if unknown or not fields:
        raise ValueError(f"unknown field(s) {', '.join(repr(f) for f in unknown)}; "
                         f"valid: {','.join(RECORD_FIELDS)}")
    return fields


def _control_text(r: Record) -> str:
    try:
        ctrl = control_info(r)
    except KsegError as e:
        return f"(control) <{e}>"
    return f"(control) {ctrl.type_name}" + (f" coordinator epoch {ctrl.coordinator_epoch}"
                                            if ctrl.coordinator_epoch is not None else "")


def text_line(b: Batch, r: Record, view: RecordView, kd: Decoder | None, vd: Decoder | None,
              decoded: str | None = None) -> str:
    """One record's text line: the default columns (uncut without ``truncate``), or the chosen fields."""
    width = view.width
    control = _control_text(r) if b.is_control else None
    if view.fields is None:
        if control is not None:
            return text_head(r.offset, r.timestamp) + control + "\n"
        line = text_head(r.offset, r.timestamp)
        if decoded is not None:
            return line + decoded + "\n"
        line += f"key {payload_text(r.key, kd, width)}  value {payload_text(r.value, vd, width)}"
        if r.headers:
            line += "  headers " + _headers(r, vd, width)
        return line + "\n"
    pieces = []
    aligned = True  # fixed columns keep their widths while only fixed columns came before
    for f in view.fields:
        if f == "offset":
            pieces.append(f"{r.offset:>8}" if aligned else str(r.offset))
        elif f == "timestamp":
            pieces.append(f"{r.timestamp:>13}  {iso_utc(r.timestamp):<24}" if aligned
                          else f"{r.timestamp}  {iso_utc(r.timestamp)}")
        else:
            aligned = False
            if f == "timestamp_type":
                pieces.append(b.timestamp_type_name)
            elif f == "key":
                pieces.append(f"key {payload_text(r.key, kd, width)}")
            elif f == "value":
                pieces.append(f"value {payload_text(r.value, vd, width)}")
            elif f == "headers":
                pieces.append("headers " + (_headers(r, vd, width) if r.headers else "-"))
            else:
                pieces.append(f"batch @{b.position}")
    pieces += [t for t in (control, decoded) if t is not None]
    return ("  " + "  ".join(pieces)).rstrip(" ") + "\n"


def _headers(r: Record, vd: Decoder | None, width: int | None) -> str:
    return ", ".join(f"{text_escape(header_key_bytes(h.key))}={payload_text(h.value, vd, width)}" for h in r.headers)


def json_fields(full: dict, fields: tuple[str, ...]) -> dict:
    """A record's jsonl object (``record_json``) cut to ``fields``, in their order, after its
    ``type``; what marks a record as more than data (``control``, ``*_decoded``) stays."""
    out = {"type": full["type"]}
    for f in fields:
        for name in _JSON_NAMES.get(f, (f,)):
            if name in full:
                out[name] = full[name]
    for extra in ("control", "key_decoded", "value_decoded"):
        if extra in full:
            out[extra] = full[extra]
    return out

