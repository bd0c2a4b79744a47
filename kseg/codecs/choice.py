"""``--codec NAME [--level N]``: which codec a writing command uses, built-in or plugin."""

from __future__ import annotations

from dataclasses import dataclass

from kseg.codecs import codec_by_name
from kseg.codecs.base import Codec
from kseg.codecs.plugins import (
    _NO_REGISTRY,
    ENTRY_POINT_GROUP,
    PluginCodec,
    _Active,
    _ensure,
    entry_point_codecs,
    plugin_codec,
)
from kseg.errors import InputError, UnsupportedCodecError
from kseg.formats.attributes import CODEC_PLUGIN

__all__ = ["CodecChoice", "choose", "plugin_choice"]


@dataclass(frozen=True)
class CodecChoice:
    """``--codec``: keep each batch's own codec (None), or one codec for everything written."""

    codec: Codec | None = None
    level: int | None = None
    plugin_id: int | None = None  # set when ``codec`` is a registered plugin

    @property
    def keep(self) -> bool:
        return self.codec is None

    def id_for(self, batch_codec: int) -> int:
        if self.codec is None:
            return batch_codec
        return CODEC_PLUGIN if self.plugin_id is not None else self.codec.id


def choose(name: str, level: int | None = None, *, keep_allowed: bool = True) -> CodecChoice:
    """The choice for ``--codec name --level level``: ``keep``, a built-in name or a plugin alias."""
    if name == "keep":
        if not keep_allowed:
            raise InputError("--codec keep is not allowed here")
        if level is not None:
            raise InputError("--level needs a --codec")
        return CodecChoice()
    try:
        return CodecChoice(codec_by_name(name), level)
    except UnsupportedCodecError:
        choice = plugin_choice(name, level)
        if choice is None:
            raise InputError(f"Unknown compression name: {name}") from None
        return choice


def plugin_choice(alias: str, level: int | None = None) -> CodecChoice | None:
    """A ``CodecChoice`` writing with the plugin registered as ``alias``; None if no
    registry or entry point knows the alias. InputError if it is known but cannot be used."""
    _ensure()
    reg = _Active.registry
    found = reg.current.get(alias) if not _Active.error else None
    if found is None:
        if _Active.error:
            raise InputError(f"--codec {alias}: {_Active.error}")
        if alias in entry_point_codecs():
            where = f"in {reg.name}" if reg.source else f"({_NO_REGISTRY})"
            raise InputError(f"plugin {alias!r} is installed (entry point {ENTRY_POINT_GROUP}) but has no plugin "
                             f"id {where}: register it with kseg plugins register --alias {alias}")
        return None
    try:
        codec = plugin_codec(found.plugin_id)
    except UnsupportedCodecError as e:
        raise InputError(str(e)) from None
    if not isinstance(codec, PluginCodec) or codec.name != alias:  # pragma: no cover - defensive
        raise InputError(f"plugin {alias!r}: plugin id {found.plugin_id} resolves to another codec")
    codec.check_level(level)
    return CodecChoice(codec, level, plugin_id=found.plugin_id)


