"""Plugin codec registries on disk: read and append registration records (KIP-984, spec §9.1).

A registry is a ``plugin-python-topic-0`` partition folder (records read with
the log layer, latest per alias wins, a null value removes the alias) or a JSON
file of the same records. What the records mean lives in ``kseg.codecs.plugins``;
``use_registry`` activates a registry there with ``load_registry`` as its reader, and
``RegistryUse`` is that activation as a value a driver hands to its workers (Spark tasks,
worker processes that do not share its memory), which call it before they read.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kseg.codecs.plugins import (
    MIN_PLUGIN_ID,
    Registration,
    Registry,
    RegistryRecord,
    _short,
    check_alias,
    check_class_name,
    check_plugin_id,
    activate,
    activate_default,
    active_registry_path,
    is_active,
    parse_record,
)
from kseg.companions.build import build_indexes
from kseg.decoders.jsonvalue import loads_bounded
from kseg.errors import InputError, KsegError
from kseg.formats.attributes import MAX_PLUGIN_ID
from kseg.log.atomic import write_atomic
from kseg.log.encode import build_v2_batch
from kseg.log.checks import header_errors
from kseg.log.fast import scan_entries
from kseg.log.records import batch_records
from kseg.log.listing import INDEX_SUFFIX, TIME_INDEX_SUFFIX
from kseg.log.segment import Segment, base_offset_of, companion_path, partition_segments, segment_file_name
from kseg.model import make_record

__all__ = ["RegistryUse", "load_registry", "register", "registry_use", "reload_registry",
           "use_environment_registry", "use_registry"]


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

    reg = Registry(str(folder), "folder")
    for seg_path in partition_segments(folder):
        seg = Segment(seg_path)
        try:
            for batch in seg.batches():
                reg.next_offset = max(reg.next_offset, batch.next_offset)
                where = f"{seg_path} offset {batch.base_offset}"
                if batch.is_control:
                    continue
                if batch.plugin_id is not None:
                    reg.read_problems.append(f"{where}: a registry batch compressed with a plugin codec "
                                             f"(plugin:{batch.plugin_id}) cannot be read")
                    continue
                damage = header_errors(batch, str(seg_path))
                if damage:  # a registration whose bytes changed is not one to load a codec from
                    reg.read_problems.append(f"{damage[0]}: its registrations are not read")
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
        value = loads_bounded(r.value)
    except (UnicodeDecodeError, ValueError) as e:
        return RegistryRecord(key, None, origin, f"the value is not JSON ({e}): {_short(r.value)}")
    if value is None:
        return RegistryRecord(key, None, origin, "the value is JSON null (a tombstone has no value at all)")
    return parse_record(key, value, origin)


def _load_json(path: Path) -> Registry:
    reg = Registry(str(path), "json")
    try:
        data = loads_bounded(path.read_bytes())
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

    data: Any = []
    if path.exists():
        data = loads_bounded(path.read_bytes())
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
    write_atomic(companion_path(log, INDEX_SUFFIX), index)
    write_atomic(companion_path(log, TIME_INDEX_SUFFIX), timeindex)
    return f"{log} offset {offset}"


def use_registry(path: str | os.PathLike | None) -> None:
    """Read plugin batches with this registry from now on (``kseg.codecs.plugins.activate``
    with the reader of registry files)."""
    activate(path, load_registry)


def reload_registry() -> None:
    """Read the active registry anew at its next use (its records and the codecs loaded from it
    are dropped): for a process that has just written a record to it."""
    activate(active_registry_path(), load_registry)


@dataclass(frozen=True)
class RegistryUse:
    """A registry to read plugin batches with (None: none), as a picklable value: calling it
    activates the registry in the calling process. A driver gives it to its workers, which share
    none of its memory; calling it again keeps what was read (a Spark worker runs many tasks)."""

    path: str | None

    def __call__(self) -> None:
        if not is_active(self.path):
            activate(self.path, load_registry)


def registry_use(path: str | os.PathLike | None = None) -> RegistryUse:
    """``path``, else the registry active in this process (the CLI's --plugin-registry, or
    $KSEG_PLUGIN_REGISTRY), made absolute: a worker may start in another folder."""
    chosen = path or active_registry_path()
    return RegistryUse(None if chosen is None else os.path.abspath(chosen))


def use_environment_registry() -> None:
    """$KSEG_PLUGIN_REGISTRY for library code that never activated a registry (the public API
    calls this with its first name)."""
    activate_default(load_registry)
