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
$KSEG_PLUGIN_REGISTRY); library code that never calls ``activate`` gets
$KSEG_PLUGIN_REGISTRY.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .codecs import DEFAULT_MAX_DECOMPRESSED_BYTES, Codec
from .codecs.base import Buffer, check_level
from .errors import (
    DecompressionError,
    DecompressionLimitError,
    InputError,
    KsegError,
    UnsupportedCodecError,
)
from .formats.attributes import CODEC_NAMES, CODEC_PLUGIN, MAGIC_V2, MAX_PLUGIN_ID

__all__ = [
    "ENTRY_POINT_GROUP",
    "MIN_PLUGIN_ID",
    "REGISTRY_ENV",
    "REGISTRY_TOPIC",
    "PluginCodec",
    "Registration",
    "Registry",
    "RegistryRecord",
    "activate",
    "active_registry",
    "active_registry_path",
    "check_registry",
    "describe",
    "entry_point_codecs",
    "instantiate",
    "load_registry",
    "plugin_alias",
    "plugin_choice",
    "plugin_codec",
    "register",
    "self_test",
]

REGISTRY_ENV = "KSEG_PLUGIN_REGISTRY"
ENTRY_POINT_GROUP = "kseg.codecs"
REGISTRY_TOPIC = "plugin-python-topic"
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

    @property
    def is_tombstone(self) -> bool:
        return self.registration is None and self.problem is None


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


# --------------------------------------------------------------------------- reading


def load_registry(path: str | os.PathLike | None) -> Registry:
    """Read a registry: a partition folder of registration records, or a JSON file.

    Records that are not valid are kept with their problem (and ignored);
    a missing path or a file that cannot be read at all is an InputError.
    """
    if path is None:
        return Registry(None)
    p = Path(path)
    if p.is_dir():
        return _load_folder(p)
    if p.is_file():
        return _load_json(p)
    raise InputError("plugin registry not found (a plugin-python-topic-0 folder or a JSON file)", file=str(p))


def _load_folder(folder: Path) -> Registry:
    from .records import batch_records
    from .segment import Segment, partition_segments

    reg = Registry(str(folder), "folder")
    for seg_path in partition_segments(folder):
        seg = Segment(seg_path)
        try:
            for batch in seg.batches():
                reg.next_offset = max(reg.next_offset, batch.next_offset)
                where = f"{seg_path} offset {batch.offset}"
                if batch.is_control:
                    continue
                if batch.plugin_id is not None:
                    reg.read_problems.append(f"{where}: a registry batch compressed with a plugin codec "
                                             f"(plugin:{batch.plugin_id}) cannot be read")
                    continue
                try:
                    records = batch_records(batch)
                except KsegError as e:
                    reg.read_problems.append(f"{seg_path}: batch not readable: {e}")
                    continue
                for r in records:
                    reg.records.append(_folder_record(r, f"{seg_path} offset {r.offset}"))
        except KsegError as e:
            reg.read_problems.append(f"{seg_path}: {e}")
        if seg.tail is not None:
            reg.read_problems.append(f"{seg.tail.error} ({seg.tail.length} bytes at the end not read)")
    return reg


def _folder_record(r: Any, origin: str) -> RegistryRecord:
    try:
        key = None if r.key is None else r.key.decode("utf-8")
    except UnicodeDecodeError:
        return RegistryRecord(None, None, origin, f"the key is not UTF-8: {r.key!r}")
    if r.value is None:
        return parse_record(key, None, origin)
    try:
        value = json.loads(r.value)
    except (UnicodeDecodeError, ValueError) as e:
        return RegistryRecord(key, None, origin, f"the value is not JSON ({e}): {_short(r.value)}")
    if value is None:
        return RegistryRecord(key, None, origin, "the value is JSON null (a tombstone has no value at all)")
    return parse_record(key, value, origin)


def _load_json(path: Path) -> Registry:
    reg = Registry(str(path), "json")
    try:
        data = json.loads(path.read_bytes())
    except OSError as e:
        raise InputError(f"cannot read the plugin registry: {e.strerror}", file=str(path)) from None
    except ValueError as e:
        raise InputError(f"the plugin registry is not valid JSON: {e}", file=str(path)) from None
    if isinstance(data, dict) and "plugins" in data:
        data = data["plugins"]
    if isinstance(data, list):
        for i, item in enumerate(data):
            key = item.get("pluginAlias") if isinstance(item, dict) else None
            if not isinstance(key, str):
                key = None
            reg.records.append(parse_record(key, item, f"{path} record #{i}"))
    elif isinstance(data, dict):
        # key -> value, as the topic holds them (null: a tombstone)
        for key, item in data.items():
            reg.records.append(parse_record(key, item, f"{path} key {key!r}"))
    else:
        raise InputError("the plugin registry must be a JSON list of registration records, "
                         "or an object mapping aliases to them", file=str(path))
    return reg


# --------------------------------------------------------------------------- writing


def register(
    path: str | os.PathLike,
    alias: str,
    class_name: str,
    version: str,
    plugin_id: int | None = None,
    *,
    timestamp_ms: int | None = None,
) -> tuple[Registration, bool]:
    """Append a registration record to a registry (created if missing); returns the
    registration and whether a record was written (False: already registered as is).

    An alias keeps its id; an id belongs to one alias for good; ids not given are
    the smallest free one in 1..15. A path ending in .json is a JSON-file registry,
    anything else a partition folder.
    """
    p = Path(path)
    for problem in (check_alias(alias), check_class_name(class_name),
                    None if plugin_id is None else check_plugin_id(plugin_id)):
        if problem:
            raise InputError(problem)
    if not isinstance(version, str) or not version:
        raise InputError("the plugin version must be a non-empty string")
    if p.exists():
        reg = load_registry(p)
    else:
        reg = Registry(str(p), "json" if p.suffix.lower() == ".json" else "folder")
    if reg.kind == "folder" and reg.read_problems:
        raise InputError("the registry cannot be appended to: " + "; ".join(reg.read_problems), file=str(p))
    kept = reg.history_alias_id(alias)
    taken = reg.history_ids()
    if kept is not None:
        if plugin_id is not None and plugin_id != kept:
            raise InputError(f"alias {alias!r} is registered with plugin id {kept}: an alias keeps its id")
        plugin_id = kept
        owner = taken.get(kept)
        if owner is not None and owner.alias != alias:
            raise InputError(f"plugin id {kept} of alias {alias!r} was taken by alias {owner.alias!r} "
                             f"({owner.origin}): run kseg plugins check")
    elif plugin_id is not None:
        owner = taken.get(plugin_id)
        if owner is not None:
            raise InputError(f"plugin id {plugin_id} is already registered for alias {owner.alias!r} "
                             f"({owner.origin}): ids are never reused for another alias")
    else:
        free = [i for i in range(MIN_PLUGIN_ID, MAX_PLUGIN_ID + 1) if i not in taken]
        if not free:
            raise InputError(f"every plugin id ({MIN_PLUGIN_ID}..{MAX_PLUGIN_ID}) is taken in {reg.name}")
        plugin_id = free[0]
    new = Registration(plugin_id, alias, class_name, version)
    now = reg.current.get(alias)
    if now is not None and (now.plugin_id, now.class_name, now.version) == (plugin_id, class_name, version):
        return now, False
    value = json.dumps(new.as_json()).encode()
    if reg.kind == "json":
        origin = _append_json(p, new)
    else:
        origin = _append_folder(p, reg.next_offset, alias.encode(), value, timestamp_ms)
    return Registration(plugin_id, alias, class_name, version, origin), True


def _append_json(path: Path, reg: Registration) -> str:
    from .output import write_atomic

    data: Any = []
    if path.exists():
        data = json.loads(path.read_bytes())
    if isinstance(data, dict) and isinstance(data.get("plugins"), list):
        data["plugins"].append(reg.as_json())
        origin = f"{path} record #{len(data['plugins']) - 1}"
    elif isinstance(data, list):
        data.append(reg.as_json())
        origin = f"{path} record #{len(data) - 1}"
    else:
        data[reg.alias] = reg.as_json()
        origin = f"{path} key {reg.alias!r}"
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode())
    return origin


def _append_folder(folder: Path, offset: int, key: bytes, value: bytes, timestamp_ms: int | None) -> str:
    """Append one record as a v2 batch to the folder's last segment (written anew under a
    temporary name, then renamed), and rewrite that segment's indexes."""
    from .encode import build_v2_batch
    from .fast import scan_entries
    from .index_build import build_indexes
    from .model import make_record
    from .output import write_atomic
    from .segment import base_offset_of, partition_segments, segment_file_name

    folder.mkdir(parents=True, exist_ok=True)
    segs = partition_segments(folder)
    if segs:
        log = segs[-1]
        old = log.read_bytes()
    else:
        log, old = folder / segment_file_name(offset), b""
    ts = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    batch = build_v2_batch([make_record(offset, ts, key, value)], base_offset=offset, partition_leader_epoch=0)
    data = old + batch
    base = base_offset_of(log) or 0
    entries = [b._replace(raw=memoryview(b"")) for b in scan_entries(data, 0, final=True).batches]
    index, timeindex = build_indexes(entries, base)
    write_atomic(log, data)
    stem = log.name.split(".")[0]
    write_atomic(folder / f"{stem}.index", index)
    write_atomic(folder / f"{stem}.timeindex", timeindex)
    return f"{log} offset {offset}"


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
    obj: Any = importlib.import_module(module_name)
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
    loaded = False
    registry: Registry = Registry(None)
    error: str | None = None  # why the registry could not be read
    aliases: dict[int, str] = {}  # unambiguous id -> alias
    codecs: dict[int, PluginCodec] = {}
    failures: dict[int, str] = {}  # id -> why it cannot be used (message, not the exception)


_CODECS: dict[int, PluginCodec] = _Active.codecs  # the hot-path lookup


def activate(registry_path: str | os.PathLike | None = None) -> None:
    """Use this registry from now on (None: no file registry; entry points still count).

    Nothing is read until a plugin is needed.
    """
    _Active.path = None if registry_path is None else Path(registry_path)
    _reset()


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


def _ensure() -> None:
    if _Active.loaded:
        return
    path = active_registry_path()
    _Active.loaded = True
    try:
        reg = load_registry(path)
    except KsegError as e:
        _Active.error = f"plugin registry {path} cannot be read: {e.message}"
        _Active.registry = Registry(str(path) if path else None)
        return
    _Active.registry = reg
    ids: dict[int, list[str]] = {}
    for r in reg.current.values():
        ids.setdefault(r.plugin_id, []).append(r.alias)
    _Active.aliases = {pid: names[0] for pid, names in ids.items() if len(names) == 1}


def active_registry() -> Registry:
    """The active registry, read now if it was not yet; InputError if it cannot be read."""
    _ensure()
    if _Active.error:
        raise InputError(_Active.error)
    return _Active.registry


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


def plugin_choice(alias: str, level: int | None = None):
    """A ``CodecChoice`` writing with the plugin registered as ``alias``; None if no
    registry or entry point knows the alias. InputError if it is known but cannot be used."""
    from .convert import CodecChoice

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
