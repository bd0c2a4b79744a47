"""Pluggable codecs (KIP-984, spec §9.1): codec id 5 with a plugin id in v2 attribute bits 8-11.

A plugin is any class that kseg can instantiate with no arguments and whose
instances have ``compress(data: bytes) -> bytes`` and
``decompress(data: bytes) -> bytes``. Optional, discovered, never required:

* ``compress(data, level=...)``: a ``level`` parameter means the plugin takes
  ``--level``; int attributes ``min_level``/``max_level`` bound it.
* ``decompress(data, max_length=...)``: kseg passes the decompression limit;
  the plugin may stop once its output passes ``max_length`` bytes (returning
  more than ``max_length`` bytes, or raising ``kseg.errors.DecompressionLimitError``).
* ``accepts_buffers = True``: ``data`` may be any bytes-like object (a
  memoryview into the segment) instead of ``bytes``, which saves a copy.

``PluginCodec`` adapts such an object to kseg's ``Codec`` interface, so that a
plugin goes through exactly the path of a built-in codec.

Which plugin id means which class comes from a registry, as the proposal
describes it: registration records (key = alias, value = JSON
``{"pluginID", "pluginAlias", "pluginClassName", "pluginVersion"}``) in the
segments of a ``plugin-python-topic-0`` partition folder (latest record per
alias wins, a null value removes the alias, as in a compacted topic), or a
JSON file of the same records. Installed packages can offer codec classes
through the ``kseg.codecs`` entry-point group (name = alias); the registry
still gives them their plugin id, since only the id is on the wire.

The registry is read lazily, on the first plugin batch or plugin alias, from
the path given to ``activate`` (the CLI's --plugin-registry or
$KSEG_PLUGIN_REGISTRY) with the reader given beside it; the public API
(``kseg.<name>``) activates $KSEG_PLUGIN_REGISTRY for library code that never
calls ``activate``. This module holds the registry as data and the codec
objects; reading and writing registry files is ``kseg.ops.registry``'s job
(``RegistryUse`` activates a path with its reader), since a registry kept as a
topic partition is read with the log layer, which sits above codecs: whoever
activates a registry passes the reader down, nothing is installed here by an import.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kseg import model
from kseg.codecs.base import DEFAULT_MAX_DECOMPRESSED_BYTES, Buffer, Codec, check_level
from kseg.errors import (
    DecompressionError,
    DecompressionLimitError,
    InputError,
    KsegError,
    UnsupportedCodecError,
)
from kseg.formats.attributes import CODEC_NAMES, CODEC_PLUGIN, MAGIC_V2, MAX_PLUGIN_ID

REGISTRY_ENV = "KSEG_PLUGIN_REGISTRY"
ENTRY_POINT_GROUP = "kseg.codecs"
# Id 0 is kept out: a writer that sets codec 5 without knowing any plugin id leaves bits 8-11 at 0.
MIN_PLUGIN_ID = 1
RESERVED_NAMES = frozenset(CODEC_NAMES.values()) | {"keep", "plugin"}
_ALIAS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CLASS = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_NO_REGISTRY = "no plugin registry was given (--plugin-registry or KSEG_PLUGIN_REGISTRY)"


# =========================================================================== registry records


@dataclass(frozen=True)
class Registration:
    """One valid registration: what a plugin id means."""

    plugin_id: int
    alias: str
    class_name: str
    version: str
    origin: str = ""  # where it was read: "<file> offset N" or "<file> record #N"

    def as_json(self) -> dict[str, Any]:
        """The record value, in the proposal's field names."""
        return {"pluginID": self.plugin_id, "pluginAlias": self.alias,
                "pluginClassName": self.class_name, "pluginVersion": self.version}


@dataclass(frozen=True)
class RegistryRecord:
    """One record as read: a registration, a tombstone (``registration`` None, ``problem``
    None) or a record that is not valid (``problem`` says why; it is ignored)."""

    key: str | None
    registration: Registration | None
    origin: str
    problem: str | None = None


def check_alias(alias: str) -> str | None:
    """Why ``alias`` cannot be a plugin alias, or None."""
    if not isinstance(alias, str) or not _ALIAS.match(alias):
        return (f"alias {alias!r} is not valid (1-64 characters: letters, digits, '.', '_', '-', "
                "starting with a letter or digit)")
    if alias.lower() in RESERVED_NAMES:
        return f"alias {alias!r} is a built-in compression name"
    return None


def check_class_name(name: str) -> str | None:
    """Why ``name`` is not a ``module:attribute`` import path, or None."""
    if not isinstance(name, str) or not _CLASS.match(name):
        return f"pluginClassName {name!r} is not a Python import path module:attribute"
    return None


def check_plugin_id(plugin_id: Any) -> str | None:
    if isinstance(plugin_id, bool) or not isinstance(plugin_id, int):
        return f"pluginID {plugin_id!r} is not an integer"
    if not MIN_PLUGIN_ID <= plugin_id <= MAX_PLUGIN_ID:
        return f"pluginID {plugin_id} is out of range {MIN_PLUGIN_ID}..{MAX_PLUGIN_ID} (4 attribute bits; 0 is reserved)"
    return None


def parse_record(key: str | None, value: Any, origin: str) -> RegistryRecord:
    """Validate one record: ``value`` is the decoded JSON (None: a tombstone)."""
    if value is None:
        if key is None:
            return RegistryRecord(None, None, origin, "a record with neither key nor value")
        return RegistryRecord(key, None, origin)
    if not isinstance(value, dict):
        return RegistryRecord(key, None, origin, f"the value is not a JSON object: {_short(value)}")
    missing = [f for f in ("pluginID", "pluginAlias", "pluginClassName", "pluginVersion") if f not in value]
    if missing:
        return RegistryRecord(key, None, origin, f"the value lacks {', '.join(missing)}")
    alias, pid, cls, version = (value["pluginAlias"], value["pluginID"], value["pluginClassName"],
                                value["pluginVersion"])
    problem = (check_plugin_id(pid) or check_alias(alias) or check_class_name(cls)
               or (None if isinstance(version, str) else f"pluginVersion {version!r} is not a string"))
    if problem is None and key is not None and key != alias:
        problem = f"the record key {key!r} is not its pluginAlias {alias!r}"
    if problem:
        return RegistryRecord(key if key is not None else alias if isinstance(alias, str) else None, None,
                              origin, problem)
    return RegistryRecord(alias, Registration(pid, alias, cls, version, origin), origin)


def _short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


@dataclass
class Registry:
    """Every record of a registry in order, and what they add up to (latest per alias)."""

    source: str | None  # the path as given; None: no file registry
    kind: str = "none"  # "folder", "json" or "none"
    records: list[RegistryRecord] = field(default_factory=list)
    read_problems: list[str] = field(default_factory=list)  # unreadable bytes, bad JSON, ...
    next_offset: int = 0  # folder registries: the offset the next record gets

    @property
    def name(self) -> str:
        return f"registry {self.source}" if self.source else _NO_REGISTRY

    @property
    def current(self) -> dict[str, Registration]:
        """Alias -> its latest registration (a tombstone removes it)."""
        out: dict[str, Registration] = {}
        for r in self.records:
            if r.problem is not None:
                continue
            if r.registration is None:
                out.pop(r.key, None)  # type: ignore[arg-type]
            else:
                out[r.registration.alias] = r.registration
        return out

    def by_id(self, plugin_id: int) -> list[Registration]:
        return [reg for reg in self.current.values() if reg.plugin_id == plugin_id]

    def history_ids(self) -> dict[int, Registration]:
        """Each plugin id and the first registration that took it."""
        out: dict[int, Registration] = {}
        for r in self.records:
            if r.registration is not None:
                out.setdefault(r.registration.plugin_id, r.registration)
        return out

    def history_alias_id(self, alias: str) -> int | None:
        """The id an alias was first registered with (it keeps it)."""
        for r in self.records:
            if r.registration is not None and r.registration.alias == alias:
                return r.registration.plugin_id
        return None

    def problems(self) -> list[str]:
        """What breaks the proposal's constraints: one id per alias for good, one alias per id."""
        out = list(self.read_problems)
        first_id: dict[str, Registration] = {}
        first_alias: dict[int, Registration] = {}
        for r in self.records:
            if r.problem is not None:
                out.append(f"{r.origin}: {r.problem} (record ignored)")
                continue
            reg = r.registration
            if reg is None:
                continue
            was = first_id.setdefault(reg.alias, reg)
            if was.plugin_id != reg.plugin_id:
                out.append(f"{reg.origin}: alias {reg.alias!r} changes its plugin id from {was.plugin_id} "
                           f"({was.origin}) to {reg.plugin_id}: an alias keeps its id")
            owner = first_alias.setdefault(reg.plugin_id, reg)
            if owner.alias != reg.alias:
                out.append(f"{reg.origin}: plugin id {reg.plugin_id} of alias {reg.alias!r} is already "
                           f"registered for alias {owner.alias!r} ({owner.origin}): ids are unique and never reused")
        seen: dict[int, str] = {}
        for reg in self.current.values():
            if reg.plugin_id in seen:
                out.append(f"plugin id {reg.plugin_id} is registered for two aliases, {seen[reg.plugin_id]!r} "
                           f"and {reg.alias!r}: batches with that id cannot be read")
            else:
                seen[reg.plugin_id] = reg.alias
        return out


# =========================================================================== plugin objects


def _accepts(fn: Any, name: str) -> bool:
    """Whether ``fn`` takes a keyword argument ``name`` (declared, not via **kwargs)."""
    import inspect  # late: only when a plugin is loaded

    try:
        param = inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):
        return False
    return param is not None and param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)


def import_path(class_name: str) -> Any:
    """The object a ``module:attribute`` path names (attribute may be dotted)."""
    module_name, _, attr = class_name.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        # As ``python -m`` does, the current directory is searched too (after installed
        # modules, which it never shadows).
        here = os.getcwd()
        if e.name != module_name.split(".")[0] or here in sys.path or "" in sys.path:
            raise
        sys.path.append(here)
        importlib.invalidate_caches()
        obj = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def instantiate(class_name: str) -> Any:
    """Import and instantiate a plugin class with no arguments; check the contract.

    Raises ``_LoadFailure`` (with a one-line reason) on any problem.
    """
    if check_class_name(class_name):
        raise _LoadFailure(check_class_name(class_name))
    try:
        factory = import_path(class_name)
    except Exception as e:  # anything the module's import raises
        raise _LoadFailure(f"cannot import {class_name}: {type(e).__name__}: {e}") from e
    try:
        obj = factory()
    except Exception as e:
        raise _LoadFailure(f"{class_name}() fails: {type(e).__name__}: {e}") from e
    for method in ("compress", "decompress"):
        if not callable(getattr(obj, method, None)):
            raise _LoadFailure(f"{class_name} instances have no {method}(data) method")
    return obj


class _LoadFailure(Exception):
    """A plugin class that cannot be used (the message says why)."""


class PluginCodec(Codec):
    """A plugin object behind kseg's ``Codec`` interface (id 5, name = alias, v2 only).

    Thin on purpose: one call into the plugin per batch, plus a length check
    for the decompression limit and error wrapping that costs nothing unless
    the plugin raises.
    """

    id = CODEC_PLUGIN
    min_magic = MAGIC_V2

    def __init__(self, registration: Registration, impl: Any, registry: str = "") -> None:
        self.name = registration.alias
        self.plugin_id = registration.plugin_id
        self.registration = registration
        self.registry = registry
        self._where = f" ({registry})" if registry else ""
        self.impl = impl
        self._compress = impl.compress
        self._decompress = impl.decompress
        # bytes-like objects (memoryviews into the segment) are passed without a copy
        self.copy = getattr(impl, "accepts_buffers", False) is not True
        self.takes_level = _accepts(impl.compress, "level")
        self.bounded = _accepts(impl.decompress, "max_length")
        lo, hi = getattr(impl, "min_level", None), getattr(impl, "max_level", None)
        self.level_range = (lo, hi) if isinstance(lo, int) and isinstance(hi, int) else None

    @property
    def label(self) -> str:
        r = self.registration
        return f"plugin id {r.plugin_id} ({r.alias!r}, {r.class_name}, version {r.version})"

    def check_level(self, level: int | None) -> None:
        if level is None:
            return
        if not self.takes_level:
            raise InputError(f"{self.label} has no compression level (its compress() takes no level)")
        if self.level_range is not None:
            check_level(f"plugin {self.name!r}", level, *self.level_range)

    def compress(self, data: Buffer, *, magic: int = 2, level: int | None = None) -> bytes:
        if magic < 2:
            self.check_magic(magic)
        if self.copy and type(data) is not bytes:
            data = bytes(data)
        try:
            if level is None:
                out = self._compress(data)
            else:
                self.check_level(level)
                out = self._compress(data, level=level)
        except KsegError:
            raise
        except Exception as e:
            raise UnsupportedCodecError(f"{self.label} fails to compress: {type(e).__name__}: {e}"
                                        f"{self._where}") from e
        if type(out) is not bytes:
            out = self._bytes(out, "compress", UnsupportedCodecError)
        return out

    def decompress(self, data: Buffer, *, magic: int = 2, limit: int = DEFAULT_MAX_DECOMPRESSED_BYTES) -> bytes:
        if magic < 2:
            self.check_magic(magic)
        if self.copy and type(data) is not bytes:
            data = bytes(data)
        try:
            out = self._decompress(data, max_length=limit) if self.bounded else self._decompress(data)
        except KsegError:
            raise
        except Exception as e:
            raise DecompressionError(f"{self.label} fails to decompress: {type(e).__name__}: {e}"
                                     f"{self._where}") from e
        if type(out) is not bytes:
            out = self._bytes(out, "decompress", DecompressionError)
        if len(out) > limit:
            raise DecompressionLimitError(
                f"plugin:{self.name} output exceeds the decompression limit of {limit} bytes")
        return out

    def _bytes(self, out: Any, what: str, error: type[KsegError]) -> bytes:
        if isinstance(out, (bytearray, memoryview)):
            return bytes(out)
        raise error(f"{self.label}: {what}() returned {type(out).__name__}, not bytes{self._where}")

    def __repr__(self) -> str:
        return f"<PluginCodec id=5 plugin_id={self.plugin_id} alias={self.name!r} class={self.registration.class_name!r}>"


# =========================================================================== entry points


def entry_point_codecs() -> dict[str, str]:
    """Codec classes that installed packages offer: entry point name (alias) -> module:attr."""
    from importlib.metadata import entry_points

    try:
        eps = entry_points(group=ENTRY_POINT_GROUP)
    except Exception:  # a broken distribution's metadata must not break kseg
        return {}
    return {ep.name: ep.value for ep in eps}


# =========================================================================== the active registry

_UNSET: Any = object()


class _Active:
    path: Any = _UNSET  # Path | None once activated
    reader: Any = None  # the RegistryReader activate was given
    loaded = False
    registry: Registry = Registry(None)
    error: str | None = None  # why the registry could not be read
    aliases: dict[int, str] = {}  # unambiguous id -> alias
    codecs: dict[int, PluginCodec] = {}
    failures: dict[int, str] = {}  # id -> why it cannot be used (message, not the exception)


_CODECS: dict[int, PluginCodec] = _Active.codecs  # the hot-path lookup


RegistryReader = Callable[["str | os.PathLike"], Registry]


def activate(registry_path: str | os.PathLike | None = None, reader: RegistryReader | None = None) -> None:
    """Use this registry from now on (None: no file registry; entry points still count), read
    with ``reader`` (``kseg.ops.registry.load_registry``: a registry kept as a topic partition
    is read with the log layer, above the codecs, so the caller passes it down).

    Nothing is read until a plugin is needed.
    """
    _Active.path = None if registry_path is None else Path(registry_path)
    _Active.reader = reader
    _reset()


def activate_default(reader: RegistryReader) -> None:
    """For library use, which never calls ``activate``: $KSEG_PLUGIN_REGISTRY, read with
    ``reader``. A registry activated before is kept."""
    if _Active.path is _UNSET:
        activate(active_registry_path(), reader)


def is_active(registry_path: str | os.PathLike | None) -> bool:
    """Whether this registry was activated (with a reader) and is still the one in use:
    activating it again would only drop the records and codecs read from it."""
    if _Active.path is _UNSET:
        return False
    if registry_path is None or _Active.path is None:
        return registry_path is None and _Active.path is None
    return _Active.reader is not None and Path(registry_path).absolute() == _Active.path.absolute()


def _reset() -> None:
    _Active.loaded = False
    _Active.registry = Registry(None)
    _Active.error = None
    _Active.aliases = {}
    _Active.failures = {}
    _CODECS.clear()


def active_registry_path() -> Path | None:
    """The registry path in use (the CLI's, or $KSEG_PLUGIN_REGISTRY when never activated)."""
    if _Active.path is _UNSET:
        env = os.environ.get(REGISTRY_ENV)
        return Path(env) if env else None
    return _Active.path


def _read(path: Path | None) -> Registry:
    if path is None:
        return Registry(None)
    if _Active.reader is None:
        raise InputError("no plugin registry reader was given (kseg.codecs.plugins.activate, or "
                         "kseg.ops.registry.use_registry)", file=str(path))
    return _Active.reader(path)


def _ensure() -> None:
    if _Active.loaded:
        return
    path = active_registry_path()
    _Active.loaded = True
    try:
        reg = _read(path)
    except KsegError as e:
        _Active.error = f"plugin registry {path} cannot be read: {e.message}"
        _Active.registry = Registry(str(path) if path else None)
        return
    _Active.registry = reg
    ids: dict[int, list[str]] = {}
    for r in reg.current.values():
        ids.setdefault(r.plugin_id, []).append(r.alias)
    _Active.aliases = {pid: names[0] for pid, names in ids.items() if len(names) == 1}


def plugin_alias(plugin_id: int) -> str | None:
    """The registered alias of a plugin id, or None (never raises: it only names things)."""
    _ensure()
    return _Active.aliases.get(plugin_id)


def plugin_codec(plugin_id: int | None) -> Codec:
    """The codec registered under a plugin id; UnsupportedCodecError naming the id and the
    registry if there is none or its class cannot be used (the caller adds the position)."""
    codec = _CODECS.get(plugin_id)  # type: ignore[arg-type]
    if codec is not None:
        return codec
    _ensure()
    if plugin_id not in _Active.failures:
        try:
            _CODECS[plugin_id] = _load_by_id(plugin_id)  # type: ignore[index]
            return _CODECS[plugin_id]  # type: ignore[index]
        except _LoadFailure as e:
            _Active.failures[plugin_id] = str(e)  # type: ignore[index]
    raise UnsupportedCodecError(_Active.failures[plugin_id])  # type: ignore[index]


def _load_by_id(plugin_id: int | None) -> PluginCodec:
    reg = _Active.registry
    if _Active.error:
        raise _LoadFailure(f"plugin id {plugin_id} cannot be resolved: {_Active.error}")
    if plugin_id is None:
        raise _LoadFailure(f"a plugin batch without a plugin id ({reg.name})")
    if reg.source is None:
        raise _LoadFailure(f"plugin id {plugin_id} is not registered: {_NO_REGISTRY}")
    found = reg.by_id(plugin_id)
    if not found:
        extra = f" ({len(reg.read_problems)} problem(s) reading it: run kseg plugins check)" if reg.read_problems else ""
        raise _LoadFailure(f"plugin id {plugin_id} is not registered in {reg.name}{extra}")
    if len(found) > 1:
        names = ", ".join(repr(r.alias) for r in found)
        raise _LoadFailure(f"plugin id {plugin_id} is registered for several aliases ({names}) in {reg.name}: "
                           "run kseg plugins check")
    r = found[0]
    try:
        impl = instantiate(r.class_name)
    except _LoadFailure as e:
        raise _LoadFailure(f"plugin id {plugin_id} ({r.alias!r}, version {r.version}) cannot be loaded: {e} "
                           f"({reg.name})") from None
    return PluginCodec(r, impl, reg.name)


def describe(reg: Registry, *, try_import: bool = True) -> list[dict[str, Any]]:
    """Rows for ``kseg plugins list``: every current registration, then the entry-point
    codecs that have no registration. ``status`` is "ok" or why the class cannot be used."""
    eps = entry_point_codecs()
    rows: list[dict[str, Any]] = []
    for r in sorted(reg.current.values(), key=lambda r: (r.plugin_id, r.alias)):
        row: dict[str, Any] = {"id": r.plugin_id, "alias": r.alias, "class": r.class_name, "version": r.version,
                               "source": "registry", "entry_point": eps.get(r.alias)}
        row.update(_import_status(r.class_name) if try_import else {"status": "not checked"})
        rows.append(row)
    for alias, value in sorted(eps.items()):
        if alias in reg.current:
            continue
        row = {"id": None, "alias": alias, "class": value, "version": None, "source": "entry point",
               "entry_point": value}
        row.update(_import_status(value) if try_import else {"status": "not checked"})
        row["status"] = "not registered (no plugin id)" + ("" if row["status"] == "ok" else f"; {row['status']}")
        rows.append(row)
    return rows


def _import_status(class_name: str) -> dict[str, Any]:
    try:
        impl = instantiate(class_name)
    except _LoadFailure as e:
        return {"imports": False, "status": str(e)}
    codec = PluginCodec(Registration(0, "check", class_name, ""), impl)
    features = []
    if codec.takes_level:
        features.append("levels" + (f" {codec.level_range[0]}..{codec.level_range[1]}" if codec.level_range else ""))
    if codec.bounded:
        features.append("bounded decompress")
    return {"imports": True, "status": "ok", "features": features}


def self_test(class_name: str) -> str | None:
    """Import the class, round-trip a sample through it; why it fails, or None."""
    try:
        impl = instantiate(class_name)
    except _LoadFailure as e:
        return str(e)
    codec = PluginCodec(Registration(0, "check", class_name, ""), impl)
    sample = b"".join(b"kseg plugin self-test %d " % i for i in range(200))
    try:
        back = codec.decompress(codec.compress(sample), limit=len(sample))
    except KsegError as e:
        return f"{class_name}: round trip fails: {e}"
    if back != sample:
        return f"{class_name}: round trip gives other bytes than it was given"
    return None


def check_registry(reg: Registry, *, try_import: bool = True) -> list[str]:
    """Every problem of a registry (``kseg plugins check``): its records, the proposal's
    constraints, and (``try_import``) each current class importing and round-tripping."""
    out = reg.problems()
    if try_import:
        for r in sorted(reg.current.values(), key=lambda r: r.plugin_id):
            why = self_test(r.class_name)
            if why:
                out.append(f"plugin id {r.plugin_id} ({r.alias!r}): {why}")
    return out


model.set_plugin_namer(plugin_alias)
