"""Kafka's message-schema language, as compact Python tables, and a reader for its bytes.

Kafka describes every record it writes to its internal topics in JSON files
(``group-coordinator/.../common/message/*.json``, ``metadata/.../common/metadata/*.json``,
``clients/.../common/message/*.json``). ``derive`` turns those of each supported release
into ``Message``/``Field`` tables (``generated/kafka_<release>.py``, ``make schemas``),
which the family modules (``offsets``, ``transactions``, ``metadata``, ...) use; this
module knows only the encoding rules (spec §6.1, Kafka's ``MessageDataGenerator``):

    int8/int16/int32/int64/uint16/uint32/float64 big-endian; bool one byte; uuid 16 bytes
    non-flexible version:  string int16 length (-1 null) | bytes int32 length (-1 null) |
                           array int32 count (-1 null)
    flexible version:      string/bytes/array: unsigned varint length + 1 (0 = null);
                           every struct ends with tagged fields:
                           uvarint count, then count x (uvarint tag, uvarint size, value)
    nullable struct:       int8 marker (-1 null, 1 present) before the struct; as a tagged
                           field, an unsigned varint (0 null, 1 present)

The decoded form is what Kafka's generated ``*JsonConverter.write`` produces:
camelCase field names in schema order, fields absent from the version left out,
tagged fields only when they differ from their default (a struct's default is an
instance with its fields' defaults; a JSON ``null`` default is no default: an array's is
empty), bytes as base64, uuids as Kafka's ``Uuid.toString`` (URL-safe base64 without
padding).

Rules: no I/O; bytes in, plain dicts out. Only ``SchemaError`` (a ``DataError``)
escapes, with the byte position inside the buffer given.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from kseg.errors import DataError

__all__ = [
    "EMPTY_STRUCT",
    "Decoded",
    "F",
    "Field",
    "M",
    "Message",
    "SchemaError",
    "UnknownVersionError",
    "Versions",
    "decode",
    "empty_struct",
    "field_default",
    "encode",
    "kafka_json",
    "read_int16_version",
    "read_uvarint",
    "to_snake_upper",
    "uuid_str",
    "written_at",
]


class SchemaError(DataError):
    """Bytes that do not follow the record's schema."""


class UnknownVersionError(SchemaError):
    """A record version (or type) that kseg's tables do not describe."""


# --------------------------------------------------------------------------- versions


class Versions(NamedTuple):
    """A version range: ``0+``, ``3``, ``1-2``; ``none`` is empty (lo > hi)."""

    lo: int
    hi: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str) -> "Versions":
        text = text.strip()
        if text in ("", "none"):
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        lo, sep, hi = text.partition("-")
        return cls(int(lo), int(hi) if sep else int(lo))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return version >= self.lo and (self.hi is None or version <= self.hi)

    def __str__(self) -> str:
        if self.hi is None:
            return f"{self.lo}+"
        if self.hi < self.lo:
            return "none"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(1, 0)
PRIMITIVES = ("int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid", "string", "bytes")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
_UNSET: Any = object()


class _EmptyStruct:
    """The default of a struct field: an instance with its fields' defaults (``empty_struct``)."""

    def __repr__(self) -> str:
        return "EMPTY_STRUCT"


EMPTY_STRUCT: Any = _EmptyStruct()


# --------------------------------------------------------------------------- schema tables


@dataclass(frozen=True)
class Field:
    name: str  # Kafka's name (PascalCase or camelCase, as in the JSON file)
    type: str  # a primitive, "[]<primitive>", "[]<Struct>" or "<Struct>" (with ``fields``)
    versions: Versions
    nullable: Versions = NONE
    tagged: Versions = NONE
    tag: int | None = None
    default: Any = None  # in the decoded (JSON) form
    fields: tuple["Field", ...] | None = None

    @property
    def json_name(self) -> str:
        """Kafka's ``camelCaseName``: the first letter in lower case."""
        return self.name[:1].lower() + self.name[1:]

    def is_tagged_in(self, version: int, flexible: bool) -> bool:
        return flexible and self.tag is not None and version in self.tagged


def _default_for(type_: str, given: Any) -> Any:
    """The decoded form of a field's default (Kafka's rules: 0, false, "", empty, or as given)."""
    if type_.startswith("[]"):
        return None if given == "null" else []
    if given == "null":
        return None
    if given is None:  # JSON null: Kafka's FieldSpec reads it as no default
        given = _UNSET
    if type_ in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return 0 if given is _UNSET else int(given)
    if type_ == "float64":
        return 0.0 if given is _UNSET else float(given)
    if type_ == "bool":
        return False if given is _UNSET else given in (True, "true")
    if type_ == "string":
        return "" if given is _UNSET else str(given)
    if type_ == "bytes":
        return ""
    if type_ == "uuid":
        return ZERO_UUID
    return EMPTY_STRUCT  # a struct: Kafka's default instance


def F(name: str, type_: str, versions: str | None = None, *, nullable: str = "none", tagged: str = "none",
      tag: int | None = None, default: Any = _UNSET, fields: tuple[Field, ...] | list[Field] | None = None) -> Field:
    """One field of a schema, written the way Kafka's JSON files write it; as there, a
    field given only ``taggedVersions`` exists in those versions only."""
    if fields is None and type_.lstrip("[]") not in PRIMITIVES:
        raise ValueError(f"{name}: struct type {type_} needs its fields")
    if versions is None:
        versions = tagged if tag is not None else "0+"
    return Field(name, type_, Versions.parse(versions), Versions.parse(nullable), Versions.parse(tagged),
                 None if tag is None else int(tag),
                 _default_for(type_, default),
                 tuple(fields) if fields is not None else None)


@dataclass(frozen=True)
class Message:
    name: str
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...]
    api_key: int | None = None

    @property
    def highest(self) -> int:
        return self.valid.hi if self.valid.hi is not None else self.valid.lo


def M(name: str, valid: str, flexible: str, *fields: Field, api_key: int | None = None) -> Message:
    """One message (record) schema: name, validVersions, flexibleVersions, fields."""
    return Message(name, Versions.parse(valid), Versions.parse(flexible), tuple(fields), api_key)


# --------------------------------------------------------------------------- reading


_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_U16, _U32, _F64 = struct.Struct(">H"), struct.Struct(">I"), struct.Struct(">d")
_FIXED = {"int8": _I8, "int16": _I16, "int32": _I32, "int64": _I64, "uint16": _U16, "uint32": _U32,
          "float64": _F64}


def uuid_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def read_uvarint(data: bytes | memoryview, pos: int, end: int | None = None, what: str = "varint") -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's ``readUnsignedVarint``): (value, next position)."""
    end = len(data) if end is None else end
    value = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise SchemaError(f"{what} cut short", position=start, expected="more bytes", found="end of data")
        b = data[pos]
        pos += 1
        if shift == 28 and b & 0x80:
            # Kafka's words, with the value its 32-bit int had collected (the 5th byte sign-extended)
            converted = (value | ((b - 256) << 28)) & 0xFFFFFFFF
            raise SchemaError(f"Varint is too long, the most significant bit in the 5th byte is set, "
                              f"converted value: {converted:x}", position=start)
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def read_int16_version(data: bytes, what: str) -> int:
    """The int16 version in front of a coordinator record's key or value."""
    if len(data) < 2:
        raise SchemaError(f"{what} shorter than its int16 version", position=0,
                          expected="at least 2 bytes", found=f"{len(data)} bytes")
    return _I16.unpack_from(data)[0]


class _Reader:
    __slots__ = ("data", "pos", "end", "notes", "top")

    def __init__(self, data: bytes | memoryview, pos: int, end: int, notes: list[str], top: int | None = None):
        self.data, self.pos, self.end, self.notes = data, pos, end, notes
        # reading a version above the message's highest (``decode(above=True)``): that highest,
        # which a nested struct's reader refuses to go past, as Java's generated readers do
        self.top = top

    def need(self, n: int, what: str) -> int:
        at = self.pos
        if n < 0 or at + n > self.end:
            raise SchemaError(f"{what} runs past the end of the data", position=at,
                              expected=f"{n} bytes", found=f"{self.end - at} bytes")
        self.pos = at + n
        return at

    def fixed(self, s: struct.Struct, what: str) -> Any:
        at = self.need(s.size, what)
        return s.unpack_from(self.data, at)[0]

    def uvarint(self, what: str) -> int:
        value, self.pos = read_uvarint(self.data, self.pos, self.end, what)
        return value

    def length(self, flexible: bool, wide: bool, what: str) -> int:
        """A string/bytes/array length; -1 is null."""
        if flexible:
            return self.uvarint(f"{what} length") - 1
        return self.fixed(_I32 if wide else _I16, f"{what} length")

    def raw(self, n: int, what: str) -> bytes:
        at = self.need(n, what)
        return bytes(self.data[at:at + n])

    def array(self, n: int, what: str) -> bytes:
        """A string's or bytes field's bytes: past the end, in the words of Kafka's readArray."""
        if n > self.end - self.pos:
            raise SchemaError(f"Error reading byte array of {n} byte(s): only {self.end - self.pos} byte(s) "
                              "available", position=self.pos, expected=f"{n} bytes", found=f"{self.end - self.pos} bytes")
        return self.raw(n, what)


def _null_or_fail(f: Field, version: int, r: _Reader, at: int) -> None:
    if version not in f.nullable:
        # Kafka's reader's words (its generated classes), which kafka-dump-log.sh prints
        raise SchemaError(f"non-nullable field {f.json_name} was serialized as null", position=at)


def empty_struct(fields: tuple[Field, ...], version: int) -> dict:
    """The decoded form of a struct whose fields all hold their defaults (tagged ones left out)."""
    out: dict[str, Any] = {}
    for f in fields:
        if version in f.versions and not (f.tag is not None and version in f.tagged):
            out[f.json_name] = field_default(f, version)
    return out


def field_default(f: Field, version: int) -> Any:
    """``f``'s default in its decoded form at ``version``."""
    if f.default is EMPTY_STRUCT:
        assert f.fields is not None
        return empty_struct(f.fields, version)
    return f.default


def _read_value(r: _Reader, f: Field, type_: str, version: int, flexible: bool, tagged: bool = False) -> Any:
    if type_ in _FIXED:
        v = r.fixed(_FIXED[type_], f.name)
        if type_ == "float64" and not math.isfinite(v):
            return str(v)  # JSON has no NaN/Infinity; keep the value visible
        return v
    if type_ == "bool":
        return r.fixed(_I8, f.name) != 0
    if type_ == "uuid":
        return uuid_str(r.raw(16, f.name))
    if type_ in ("string", "bytes"):
        at = r.pos
        n = r.length(flexible, type_ == "bytes", f.name)
        if n < 0:
            _null_or_fail(f, version, r, at)
            return None
        raw = r.array(n, f.name)
        if type_ == "bytes":
            return base64.b64encode(raw).decode("ascii")
        return raw.decode("utf-8", "replace")  # Java's new String(bytes, UTF_8)
    if type_.startswith("[]"):
        at = r.pos
        n = r.length(flexible, True, f.name)
        if n < 0:
            _null_or_fail(f, version, r, at)
            return None
        if n > r.end - r.pos:
            # every element takes at least one byte; Kafka's reader's words
            raise SchemaError(f"Tried to allocate a collection of size {n}, but there are only {r.end - r.pos} "
                              "bytes remaining.", position=at)
        elem = type_[2:]
        return [_read_value(r, f, elem, version, flexible) for _ in range(n)]
    # a struct (an array's element or a single struct field)
    assert f.fields is not None
    if r.top is not None and version > r.top:
        raise SchemaError(f"Can't read version {version} of {type_.lstrip('[]')}", position=r.pos)
    if type_ == f.type and version in f.nullable:  # a nullable struct field has a presence marker
        if tagged:
            if r.uvarint(f"{f.name} presence") == 0:
                return None
        elif r.fixed(_I8, f.name) < 0:
            return None
    return _read_struct(r, f.fields, version, flexible, f.name)


def _read_struct(r: _Reader, fields: tuple[Field, ...], version: int, flexible: bool, where: str) -> dict:
    values: dict[str, Any] = {}
    for f in fields:
        if f.is_tagged_in(version, flexible) or version not in f.versions:
            continue
        values[f.name] = _read_value(r, f, f.type, version, flexible)
    if flexible:
        by_tag = {f.tag: f for f in fields if f.is_tagged_in(version, flexible)}
        count = r.uvarint(f"{where} tagged field count")
        for _ in range(count):
            tag = r.uvarint(f"{where} tag")
            size = r.uvarint(f"{where} tagged field size")
            tf = by_tag.get(tag)
            if tf is None:  # kept aside by Kafka's reader (readArray of its size)
                r.array(size, f"{where} tagged field {tag}")
                r.notes.append(f"unknown tagged field {tag} ({size} bytes) in {where} skipped")
                continue
            # read where it is, as Kafka's generated reader reads a known tag (its size unchecked)
            values[tf.name] = _read_value(r, tf, tf.type, version, flexible, tagged=True)
    out: dict[str, Any] = {}
    for f in fields:
        if f.is_tagged_in(version, flexible):
            if f.name in values and values[f.name] != field_default(f, version):
                out[f.json_name] = values[f.name]
        elif version in f.versions:
            out[f.json_name] = values[f.name]
    return out


@dataclass(frozen=True)
class Decoded:
    """A decoded message: its JSON form, where its bytes ended, and what was skipped."""

    message: Message
    version: int
    data: dict
    end: int
    notes: list[str] = field(default_factory=list)


def decode(message: Message, data: bytes | memoryview, version: int, *, start: int = 0,
           end: int | None = None, exact: bool = True, above: bool = False) -> Decoded:
    """Decode ``message`` at ``version`` from ``data[start:end]``.

    ``exact``: bytes left after the message are an error (Kafka's metadata reader says
    "garbage after"); without it they are allowed and ``Decoded.end`` says where it stopped.
    ``above``: a version above the message's highest is read as Java's generated reader reads
    it (a metadata record an older release's tool meets): each field by its version range, a
    nested struct refusing it.
    """
    top = None
    if version not in message.valid:
        if not (above and version > message.highest):
            raise UnknownVersionError(f"{message.name} version {version} is not one kseg knows",
                                      expected=str(message.valid), found=version)
        top = message.highest
    end = len(data) if end is None else end
    notes: list[str] = []
    r = _Reader(data, start, end, notes, top)
    out = _read_struct(r, message.fields, version, version in message.flexible, message.name)
    if exact and r.pos != end:
        raise SchemaError(f"{end - r.pos} bytes after the end of {message.name}", position=r.pos,
                          expected=f"{r.pos - start} bytes", found=f"{end - start} bytes")
    return Decoded(message, version, out, r.pos, notes)


# --------------------------------------------------------------------------- writing


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _write_length(n: int, flexible: bool, wide: bool) -> bytes:
    if flexible:
        return _uvarint(n + 1)
    return (_I32 if wide else _I16).pack(n)


def _write_value(f: Field, type_: str, value: Any, version: int, flexible: bool, tagged: bool = False) -> bytes:
    if type_ in _FIXED:
        return _FIXED[type_].pack(value)
    if type_ == "bool":
        return b"\x01" if value else b"\x00"
    if type_ == "uuid":  # Kafka's base64 form, or the usual 8-4-4-4-12 hex one
        raw = (bytes.fromhex(value.replace("-", "")) if len(value) == 36 and value.count("-") == 4
               else base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
        if len(raw) != 16:
            raise ValueError(f"{f.name}: a uuid is 16 bytes, not {len(raw)}")
        return raw
    if type_ in ("string", "bytes"):
        if value is None:
            if version not in f.nullable:
                raise ValueError(f"non-nullable field {f.name} is null")
            return _write_length(-1, flexible, type_ == "bytes")
        raw = base64.b64decode(value) if type_ == "bytes" else value.encode("utf-8")
        return _write_length(len(raw), flexible, type_ == "bytes") + raw
    if type_.startswith("[]"):
        if value is None:
            if version not in f.nullable:
                raise ValueError(f"non-nullable field {f.name} is null")
            return _write_length(-1, flexible, True)
        elem = type_[2:]
        return _write_length(len(value), flexible, True) + b"".join(
            _write_value(f, elem, v, version, flexible) for v in value)
    assert f.fields is not None
    prefix = b""
    if type_ == f.type and version in f.nullable:
        if value is None:
            return b"\x00" if tagged else b"\xff"
        prefix = b"\x01"
    return prefix + _write_struct(f.fields, value, version, flexible)


def _write_struct(fields: tuple[Field, ...], values: dict, version: int, flexible: bool) -> bytes:
    out = []
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        if version not in f.versions and not f.is_tagged_in(version, flexible):
            continue
        default = field_default(f, version)
        value = values.get(f.json_name, default)
        if f.is_tagged_in(version, flexible):
            if value != default:
                assert f.tag is not None
                tagged.append((f.tag, _write_value(f, f.type, value, version, flexible, tagged=True)))
            continue
        if value is None and f.fields is not None and not f.type.startswith("[]") and version not in f.nullable:
            value = {}  # a struct left out: its fields' defaults
        out.append(_write_value(f, f.type, value, version, flexible))
    if flexible:
        out.append(_uvarint(len(tagged)))
        for tag, raw in sorted(tagged, key=lambda t: t[0]):
            out.append(_uvarint(tag) + _uvarint(len(raw)) + raw)
    return b"".join(out)


def encode(message: Message, data: dict, version: int) -> bytes:
    """The bytes of ``message`` at ``version`` for ``data`` in its decoded (JSON) form: the
    mirror of ``decode`` (fields left out take their defaults). Raises ``ValueError`` for
    values the schema cannot carry; used to build test records and fixtures."""
    if version not in message.valid:
        raise ValueError(f"{message.name} has no version {version}")
    return _write_struct(message.fields, data, version, version in message.flexible)


# --------------------------------------------------------------------------- rendering

_TOP = 0x7FFF  # Kafka's open-ended version range ends at Short.MAX_VALUE


def _written(f: Field, cur: Versions, version: int) -> bool:
    """Whether Kafka's ``*JsonConverter.write(message, version)`` writes ``f``: it tests the version
    only against the bounds of ``f``'s versions that are narrower than those of the enclosing
    struct (``cur``), and does not check that ``version`` is valid at all."""
    f_hi = _TOP if f.versions.hi is None else f.versions.hi
    cur_hi = _TOP if cur.hi is None else cur.hi
    return ((f.versions.lo <= cur.lo or version >= f.versions.lo)
            and (f_hi >= cur_hi or version <= f_hi))


def _within(a: Versions, b: Versions) -> Versions:
    his = [h for h in (a.hi, b.hi) if h is not None]
    return Versions(max(a.lo, b.lo), min(his) if his else None)


def written_at(message: Message, data: dict, version: int) -> dict:
    """``data`` (decoded at the version on disk) as ``*JsonConverter.write`` prints it when
    asked for another ``version``: kafka-dump-log.sh prints KRaft control messages at the
    version their own ``Version`` field holds (any int16), which can add fields at their
    defaults (a LeaderChange's ``voterDirectoryId``) or leave some out."""
    return _written_struct(message.fields, data, version, message.valid)


def _written_struct(fields: tuple[Field, ...], data: dict, version: int, cur: Versions) -> dict:
    out: dict[str, Any] = {}
    for f in fields:
        if not _written(f, cur, version):
            continue
        if f.tag is not None and f.tagged.lo <= f.versions.lo:  # tagged: written when not the default
            if f.json_name in data:
                out[f.json_name] = data[f.json_name]
            continue
        value = data[f.json_name] if f.json_name in data else field_default(f, f.versions.lo)
        if f.fields is not None and value is not None:
            inner = _within(f.versions, cur)
            if f.type.startswith("[]"):
                value = [_written_struct(f.fields, v, version, inner) for v in value]
            else:
                value = _written_struct(f.fields, value, version, inner)
        out[f.json_name] = value
    return out



def to_snake_upper(name: str) -> str:
    """Kafka's ``MessageGenerator.toSnakeCase(...).toUpperCase()``: ``TopicRecord`` -> ``TOPIC_RECORD``."""
    out = []
    prev_capital = True
    for c in name:
        if c.isupper():
            if not prev_capital:
                out.append("_")
            out.append(c.lower())
            prev_capital = True
        else:
            out.append(c)
            prev_capital = False
    return "".join(out).upper()


def _java_double(v: float) -> str:
    """Java's ``Double.toString`` (what Jackson prints for a DoubleNode): plain in [1e-3, 1e7),
    else ``d.dddE<n>``; the shortest digits that round-trip, as Python's ``repr``."""
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    a = abs(v)
    sign = "-" if v < 0 else ""
    if 1e-3 <= a < 1e7:
        text = repr(a)
        return sign + (text if "." in text else text + ".0")
    digits_t, exp = Decimal(repr(a)).as_tuple()[1:]
    digits = "".join(map(str, digits_t)).rstrip("0") or "0"
    sci = len(digits_t) - 1 + int(exp)
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


# a \\uXXXX escape (not an escaped backslash followed by "u"): Jackson writes its hex digits in upper case
_U_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-f]{4})")


def _json_str(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    if "\\u" not in out:
        return out
    return _U_ESCAPE.sub(lambda m: m.group(1) + "\\u" + m.group(2).upper(), out)


def kafka_json(value: Any) -> str:
    """Compact JSON as Jackson's ``JsonNode.toString`` writes it (Java double text, upper-case
    ``\\uXXXX`` escapes)."""
    if isinstance(value, str):
        return _json_str(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, dict):
        return "{" + ",".join(_json_str(str(k)) + ":" + kafka_json(v)
                              for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(kafka_json(v) for v in value) + "]"
    return _json_str(str(value))
