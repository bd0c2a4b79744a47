"""One encoder for keys, values and header values, shared by ``dump``, ``find`` and ``diff``.

Lossless: two different byte strings never print alike. JSON: with the utf8 payload a
string when the bytes are UTF-8, else ``name_b64``; a value its decoder could not decode
(``Undecodable``) as ``name_b64`` with ``name_error`` saying why. Text: quoted with dump's
escapes (``\\xNN`` for a byte that is not UTF-8, ``\\\\`` for a backslash), ``null`` for none.
"""

from __future__ import annotations

import base64
from typing import Any

from kseg.render import lines
from kseg.render.jsonout import dumps
from kseg.render.payload import BUILTIN, Decoder, Undecodable, printable

# The built-in payload decoders the bulk writers know, by mode; a user's decoder has none.
_MODES = {id(BUILTIN["utf8"]): lines.UTF8, id(BUILTIN["hex"]): lines.HEX, id(BUILTIN["base64"]): lines.BASE64,
          id(BUILTIN["java-string"]): lines.JAVA}


def payload_mode(decoder: Decoder | None) -> int | None:
    """The bulk writers' mode for a decoder, or None for a decoder shown record by record."""
    if decoder is None:
        return lines.NONE
    return _MODES.get(id(decoder))


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def put_payload(out: dict, name: str, value: bytes | None, decoder: Decoder | None) -> None:
    """``out[name]``; with the utf8 payload, bytes that are not UTF-8 go to ``name_b64`` instead;
    a value the decoder could not decode to ``name_b64`` and ``name_error``."""
    if value is None or decoder is None:
        out[name] = None
        return
    if decoder is BUILTIN["utf8"]:
        try:
            out[name] = value.decode("utf-8")
        except UnicodeDecodeError:
            out[name + "_b64"] = _b64(value)
        return
    shown = decoder(value)
    if isinstance(shown, Undecodable):
        out[name + "_b64"] = _b64(value)
        out[name + "_error"] = shown.note
        return
    out[name] = shown


def header_json(key: str, value: bytes | None, decoder: Decoder | None) -> dict:
    """A header as JSON: ``key`` (``key_b64`` when its bytes were not UTF-8) and the value as ``put_payload``."""
    out: dict = {}
    try:
        key.encode("utf-8")
        out["key"] = key
    except UnicodeEncodeError:  # bytes that were not UTF-8, kept as surrogates
        out["key_b64"] = _b64(key.encode("utf-8", "surrogateescape"))
    put_payload(out, "value", value, decoder)
    return out


def header_key_bytes(key: str) -> bytes:
    """A header key's bytes (bytes that were not UTF-8 are kept in the text as surrogates)."""
    return key.encode("utf-8", "surrogateescape")


def _raw_text(value: bytes, mode: int, width: int | None) -> str:
    if width is not None:
        return lines.text_value(value, mode)
    if mode == lines.NONE:
        return f"<{len(value)} bytes>"
    if mode == lines.UTF8:
        return f'"{lines.text_escape(value)}"'
    return value.hex() if mode == lines.HEX else _b64(value)


def payload_text(value: bytes | None, decoder: Decoder | None, width: int | None = lines.TEXT_WIDTH) -> str:
    """A key or value as the text format shows it; cut past ``width`` characters (None: whole).
    A decoder's value is its JSON; one it could not decode, ``<why>`` and the raw bytes escaped."""
    mode = payload_mode(decoder)
    if value is None:
        return "null"
    if mode is not None:
        return _raw_text(value, mode, width)
    shown = decoder(value)  # type: ignore[misc]  # a decoder shown value by value: its value as JSON
    if isinstance(shown, Undecodable):
        return f"<{printable(shown.note)}> {_raw_text(value, lines.UTF8, width)}"
    text = printable(dumps(shown, ensure_ascii=False))
    if width is not None and len(text) > width:
        text = text[: width - 1] + f"… ({len(value)} bytes)"
    return text


def payload_kafka(value: bytes, decoder: Decoder) -> str:
    """A decoder's value as kafka-dump-log.sh shows a decoded payload: text as it is, else compact JSON."""
    shown = decoder(value)
    if isinstance(shown, Undecodable):
        return value.decode("utf-8", "backslashreplace") if shown.kafka_raw else f"<{shown.note}>"
    if isinstance(shown, str):
        return shown
    return dumps(shown, ensure_ascii=False, separators=(",", ":"))


__all__: list[Any] = ["header_json", "header_key_bytes", "payload_kafka", "payload_mode", "payload_text",
                      "put_payload"]
