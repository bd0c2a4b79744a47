"""How keys, values and header values are shown: ``--payload`` encodings and decoders.

A decoder turns bytes into something JSON can hold (str, int, or a parsed
JSON value), or an ``Undecodable`` saying why it could not: a writer then shows
the raw bytes with that note, and the run goes on. ``module:function`` loads a
user's own decoder, the counterpart of kafka-dump-log.sh's ``--key-decoder-class``;
whatever it raises (SystemExit too) or returns that JSON cannot hold is such a
per-value note. Only KeyboardInterrupt (Ctrl-C, SIGTERM) goes through: it ends
the run as kseg's own interrupt.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any, Callable

from kseg.codecs.plugins import import_path
from kseg.decoders.jsonvalue import MAX_DEPTH, TooDeep, json_problem, loads_bounded
from kseg.decoders.jvm import java_utf8
from kseg.errors import InputError
from kseg.printable import excerpt

Decoder = Callable[[bytes], Any]


@dataclass(frozen=True)
class Undecodable:
    """What a decoder gives for a value it could not decode: the note says which decoder and why."""

    note: str
    kafka_raw: bool = False  # --format kafka shows the bytes as text (\xNN) as Kafka would, not the note


def _utf8(b: bytes) -> str:
    return b.decode("utf-8", "backslashreplace")


def _int(b: bytes) -> int | str:
    if len(b) != 4:
        return f"<{len(b)} bytes, not an int>"
    return struct.unpack(">i", b)[0]


def _long(b: bytes) -> int | str:
    if len(b) != 8:
        return f"<{len(b)} bytes, not a long>"
    return struct.unpack(">q", b)[0]


def _json(b: bytes) -> Any:
    """The parsed value; UTF-8 text that is not JSON as text; JSON nested past MAX_DEPTH, or bytes
    that are neither JSON nor UTF-8, an Undecodable (shown raw: two such values never print alike)."""
    try:
        return loads_bounded(b)
    except TooDeep:
        return Undecodable(f"json decoder: nested deeper than {MAX_DEPTH} levels")
    except ValueError:
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            return Undecodable("json decoder: neither JSON nor UTF-8 text", kafka_raw=True)


BUILTIN: dict[str, Decoder] = {
    "utf8": _utf8,
    "hex": lambda b: b.hex(),
    "base64": lambda b: base64.b64encode(b).decode("ascii"),
    "int": _int,
    "long": _long,
    "json": _json,
    "java-string": java_utf8,
}

PAYLOAD_CHOICES = ("none", "utf8", "hex", "base64")
DECODER_CHOICES = ("utf8", "hex", "base64", "int", "long", "json")


def load_decoder(spec: str) -> Decoder:
    """A built-in decoder by name, or ``module:function`` for a user's own."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    if ":" not in spec:
        raise InputError(f"unknown decoder {spec!r}: use one of {', '.join(DECODER_CHOICES)} or module:function")
    try:
        obj: Any = import_path(spec)  # the current directory too, as python -m
    except (ImportError, AttributeError) as e:
        raise InputError(f"cannot load decoder {spec!r}: {e}") from None
    if not callable(obj):
        raise InputError(f"decoder {spec!r} is not callable")
    return _guarded(obj, spec)


class _Guarded:
    """A user's decoder, guarded: what it raises or returns that JSON cannot hold is an
    Undecodable (counted in ``failures``, for the one note at the end of a run)."""

    def __init__(self, fn: Callable[[bytes], Any], spec: str):
        self.fn, self.spec, self.failures = fn, spec, 0

    def __call__(self, b: bytes) -> Any:
        try:
            value = self.fn(b)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the run ends as kseg's own interrupt
            raise
        except BaseException as e:  # SystemExit too: a user's decoder failing must not end the dump
            self.failures += 1
            return Undecodable(f"decoder {self.spec} failed: {type(e).__name__}: {_message(e)}")
        problem = json_problem(value)
        if problem is not None:
            self.failures += 1
            return Undecodable(f"decoder {self.spec} returned {problem}")
        return value


def _guarded(fn: Callable[[bytes], Any], spec: str) -> Decoder:
    return _Guarded(fn, spec)


def decoder_notes(*decoders: Decoder | None) -> list[str]:
    """One stderr note per user decoder that could not decode some values (the run still exits 0:
    the data is fine, the values are shown raw and marked)."""
    notes, seen = [], set()
    for d in decoders:
        if isinstance(d, _Guarded) and d.failures and id(d) not in seen:
            seen.add(id(d))
            notes.append(f"kseg: note: decoder {d.spec} could not decode {d.failures} value(s); "
                         "shown raw (JSON: *_b64 with *_error)")
    return notes


def _distinct(decoders: tuple[Decoder | None, ...]) -> list[Decoder | None]:
    """The decoders, each once (the key's and the value's may be one object)."""
    out: list[Decoder | None] = []
    for d in decoders:
        if not any(d is seen for seen in out):
            out.append(d)
    return out


def decoder_failures(*decoders: Decoder | None) -> tuple[int, ...]:
    """Each distinct decoder's failures so far (a split run's unit hands them to merge)."""
    return tuple(d.failures if isinstance(d, _Guarded) else 0 for d in _distinct(decoders))


def add_decoder_failures(decoders: tuple[Decoder | None, ...], failures: tuple[int, ...]) -> None:
    """A unit's ``decoder_failures`` added to these decoders' (the same specs, in the same order)."""
    for d, n in zip(_distinct(decoders), failures):
        if isinstance(d, _Guarded):
            d.failures += n


def _message(e: BaseException) -> str:
    try:
        return excerpt(str(e))
    except Exception:  # an exception whose str() fails too
        return "(no message)"


_CONTROLS = {i: f"\\x{i:02x}" for i in list(range(0x20)) + list(range(0x7F, 0xA0))}
_CONTROLS.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def printable(text: str) -> str:
    """One line of text for a terminal: control characters (C0, C1, line separators) as escapes."""
    return text.translate(_CONTROLS)


def header_key_text(key: str) -> str:
    """A header key for output: bytes that were not UTF-8 (kept as surrogates) shown as \\xNN."""
    if key.isascii():
        return key
    return key.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
