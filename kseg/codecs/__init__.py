"""Compression codecs by attribute id and by Kafka name (spec §4, §2.4, §9.1).

The five built-ins are registered here, in code; all but none (``gzip``: ISA-L and zlib,
``xerial``: cramjam, ``kafka_lz4``: lz4 and xxhash, ``zstd``: zstandard) are imported with
the first batch, name or listing that needs them, so that reading other data does not
load their libraries.
Plugin codecs (KIP-984,
codec id 5 plus a plugin id) are looked up by plugin id in the plugin
registry; ``register_codec`` makes them known by name as well, so that
``codec_by_name`` finds an alias. Codec ids other than 5 are unique.
"""

from __future__ import annotations

from typing import Any

from kseg.codecs.base import DEFAULT_MAX_DECOMPRESSED_BYTES, Codec
from kseg.codecs.builtin import NoneCodec
from kseg.errors import InputError, UnsupportedCodecError
from kseg.formats.attributes import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NAMES,
    CODEC_PLUGIN,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    KAFKA07_CODEC_MASK,
)
from kseg.lazy import load

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_BYTES",
    "GZIP",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "Codec",
    "codec_by_name",
    "get_codec",
    "get_kafka07_codec",
    "register_codec",
    "registered_codecs",
    "unregister_codec",
]

_BY_ID: dict[int, Codec] = {}
_BY_NAME: dict[str, Codec] = {}

# Built-ins registered when first needed: codec id -> "module:class" (its name is CODEC_NAMES[id]).
LAZY_BUILTINS = {CODEC_GZIP: "kseg.codecs.gzip:GzipCodec", CODEC_SNAPPY: "kseg.codecs.xerial:SnappyCodec",
                 CODEC_LZ4: "kseg.codecs.kafka_lz4:Lz4Codec", CODEC_ZSTD: "kseg.codecs.zstd:ZstdCodec"}
_BY_CONSTANT = {"GZIP": CODEC_GZIP, "SNAPPY": CODEC_SNAPPY, "LZ4": CODEC_LZ4, "ZSTD": CODEC_ZSTD}
_LAZY_BY_NAME = {CODEC_NAMES[i]: i for i in LAZY_BUILTINS}
_lazy_pending = set(LAZY_BUILTINS)


def _builtin(codec_id: int) -> Codec | None:
    """Register the lazily loaded built-in with this id now (None: there is none, or it is loaded)."""
    if codec_id not in _lazy_pending:
        return None
    _lazy_pending.discard(codec_id)
    codec: Codec = load(LAZY_BUILTINS[codec_id])()
    register_codec(codec)
    return codec


def _all_builtins() -> None:
    for codec_id in sorted(_lazy_pending):
        _builtin(codec_id)


def register_codec(codec: Codec, *, replace: bool = False) -> None:
    """Make ``codec`` known by name and, unless it is a plugin (id 5), by id.

    Taking a name or id that another codec holds is an InputError unless
    ``replace`` is true.
    """
    if not isinstance(codec, Codec):
        raise TypeError(f"not a kseg Codec: {codec!r}")
    for pending in sorted(i for i in _lazy_pending if codec.id == i or codec.name == CODEC_NAMES[i]):
        _builtin(pending)  # what a built-in holds is taken, loaded or not
    by_id = codec.id != CODEC_PLUGIN
    if not replace:
        held = _BY_NAME.get(codec.name)
        if held is not None and held is not codec:
            raise InputError(f"compression name {codec.name!r} is already taken by {held!r}")
        held = _BY_ID.get(codec.id) if by_id else None
        if held is not None and held is not codec:
            raise InputError(f"compression codec id {codec.id} is already taken by {held!r}")
    _BY_NAME[codec.name] = codec
    if by_id:
        _BY_ID[codec.id] = codec


def unregister_codec(codec: Codec) -> None:
    """Forget ``codec`` under every name and id it is registered with."""
    tables: tuple[dict[Any, Codec], ...] = (_BY_ID, _BY_NAME)
    for table in tables:
        for key in [key for key, value in table.items() if value is codec]:
            del table[key]


def get_codec(codec_id: int) -> Codec:
    """The codec for an attribute codec id (bits 0-2; bits 0-1 before 0.8)."""
    codec = _BY_ID.get(codec_id)
    if codec is None:
        codec = _builtin(codec_id)
    if codec is not None:
        return codec
    if codec_id == CODEC_PLUGIN:
        raise UnsupportedCodecError(
            "compression codec id 5 is a plugin codec (KIP-984): "
            "look it up by its plugin id in the plugin registry"
        )
    raise UnsupportedCodecError(f"unknown compression codec id {codec_id}")


def get_kafka07_codec(attributes: int) -> Codec:
    """The codec of a pre-0.8 (Kafka 0.7) message with an attributes byte.

    Its codec bits are 0-1 with the same ids (0 none, 1 gzip, 2 snappy,
    3 lz4). Use magic 0 with the codec: the pre-0.8 framings are those of
    magic 0, and reading lz4 with magic 0 accepts either header checksum.
    """
    return get_codec(attributes & KAFKA07_CODEC_MASK)


def codec_by_name(name: str) -> Codec:
    """The codec for a ``compression.type`` name ("gzip", ...) or plugin alias."""
    codec = _BY_NAME.get(name)
    if codec is None and name in _LAZY_BY_NAME:
        codec = _builtin(_LAZY_BY_NAME[name])
    if codec is None:
        raise UnsupportedCodecError(f"Unknown compression name: {name}")
    return codec


def registered_codecs() -> list[Codec]:
    """Every registered codec, built-ins first in id order."""
    _all_builtins()
    seen: dict[int, Codec] = {}
    for codec in sorted(_BY_ID.values(), key=lambda c: c.id):
        seen[id(codec)] = codec
    for codec in _BY_NAME.values():
        seen.setdefault(id(codec), codec)
    return list(seen.values())


NONE: Codec = NoneCodec()
register_codec(NONE)


def __getattr__(name: str) -> Codec:
    """``GZIP``, ``SNAPPY``, ``LZ4`` and ``ZSTD``, loaded on first use like the rest of their codecs."""
    if name in _BY_CONSTANT:
        return get_codec(_BY_CONSTANT[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
