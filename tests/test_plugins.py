"""Pluggable codecs (KIP-984, spec §9.1) end to end through the `kseg` command.

A plugin class defined in this module is registered with `kseg plugins register`,
recompresses a segment, and every command then works on the result; the errors
(unknown alias, unknown id, broken class, registry conflicts) are each checked.
The example plugins under examples/ are used from their source folders (or as
installed, when `make test` installed them).
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import sys
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from kseg.codecs import plugins
from kseg.ops.registry import RegistryUse, load_registry, registry_use, reload_registry, use_registry
from kseg.cli.main import main
from kseg.codecs import SNAPPY
from kseg.log.encode import build_v2_batch
from kseg.errors import DecompressionError, DecompressionLimitError, UnsupportedCodecError
from kseg.model import make_record
from kseg.log.records import batch_records
from kseg.log.segment import Segment, partition_segments, segment_file_name

sys.path.insert(0, str(Path(__file__).parent))
from builders import T0, folder_records, write_partition  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
ME = __name__  # the import path of this module, for pluginClassName


# --------------------------------------------------------------------------- plugin classes under test


class ReverseZlib:
    """Raw deflate, bytes reversed: a codec nothing but this class can read. The bare contract."""

    def compress(self, data: bytes) -> bytes:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        return (c.compress(data) + c.flush())[::-1]

    def decompress(self, data: bytes) -> bytes:
        return zlib.decompress(data[::-1], -15)


class LevelledZlib:
    """The optional parts: compress(data, level) with a range, decompress(data, max_length)."""

    min_level = 1
    max_level = 9
    seen: list = []

    def compress(self, data: bytes, level: int | None = None) -> bytes:
        LevelledZlib.seen.append(("compress", level))
        return zlib.compress(data, 6 if level is None else level)

    def decompress(self, data: bytes, max_length: int | None = None) -> bytes:
        LevelledZlib.seen.append(("decompress", max_length))
        d = zlib.decompressobj()
        return d.decompress(data, 0 if max_length is None else max_length + 1)


class BrokenDecompress(ReverseZlib):
    def decompress(self, data: bytes) -> bytes:
        raise RuntimeError("boom")


class BrokenInit:
    def __init__(self) -> None:
        raise OSError("no licence key")


class NotACodec:
    def squeeze(self, data: bytes) -> bytes:
        return data


class Inflating(ReverseZlib):
    """Ignores any limit: returns its output whole, however long."""


class ReturnsText(ReverseZlib):
    def decompress(self, data: bytes):  # type: ignore[override]
        return "not bytes"


# --------------------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def _clean_plugin_state(monkeypatch):
    monkeypatch.delenv(plugins.REGISTRY_ENV, raising=False)
    yield
    plugins._Active.path = plugins._UNSET
    plugins._reset()


def run(*args, env: dict | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def register(registry: Path, alias: str, cls: str, version: str = "1.0", *extra) -> tuple[int, str, str]:
    return run("plugins", "register", "--registry", registry, "--alias", alias, "--class", cls,
               "--version", version, *extra)


def kseg_records(folder: Path, registry: Path | None) -> list[tuple]:
    """(offset, timestamp, key, value, headers) read by kseg, with ``registry`` active."""
    use_registry(registry)
    out = []
    for seg in partition_segments(folder):
        for b in Segment(seg).batches():
            for r in batch_records(b):
                out.append((r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers)))
    return out


def batches_jsonl(folder: Path, registry: Path) -> list[dict]:
    code, out, err = run("--plugin-registry", registry, "dump", "--format", "jsonl", folder)
    assert code == 0, err
    return [json.loads(line) for line in out.splitlines() if json.loads(line)["type"] == "batch"]


def registry_folder(folder: Path, records: list[tuple[str | None, object]]) -> Path:
    """A registry partition folder holding these (key, value) records; a value that is a
    dict is JSON-encoded, bytes are stored as they are, None is a tombstone."""
    folder.mkdir(parents=True, exist_ok=True)
    data = bytearray()
    for offset, (key, value) in enumerate(records):
        v = json.dumps(value).encode() if isinstance(value, dict) else value
        k = None if key is None else key.encode()
        data += build_v2_batch([make_record(offset, T0 + offset, k, v)], partition_leader_epoch=0)
    (folder / segment_file_name(0)).write_bytes(bytes(data))
    return folder


def record(pid: int, alias: str, cls: str, version: str = "1.0") -> dict:
    return {"pluginID": pid, "pluginAlias": alias, "pluginClassName": cls, "pluginVersion": version}


def plugin_segment(folder: Path, plugin_id: int, impl=ReverseZlib()) -> Path:
    """A one-segment partition whose batches carry codec 5 and this plugin id."""
    codec = plugins.PluginCodec(plugins.Registration(plugin_id, "x", f"{ME}:ReverseZlib", "1"), impl)
    folder.mkdir(parents=True, exist_ok=True)
    recs = [make_record(i, T0 + i, f"k{i}".encode(), f"v{i}".encode() * 5) for i in range(6)]
    data = build_v2_batch(recs[:3], plugin_id=plugin_id, codec_impl=codec, partition_leader_epoch=0)
    data += build_v2_batch(recs[3:], plugin_id=plugin_id, codec_impl=codec, partition_leader_epoch=0)
    (folder / segment_file_name(0)).write_bytes(data)
    return folder


@pytest.fixture
def registry(tmp_path) -> Path:
    return tmp_path / "registry" / "plugin-python-topic-0"


@pytest.fixture
def source(tmp_path) -> Path:
    """A v2 partition (gzip, headers, nulls, two segments) to recompress."""
    return write_partition(tmp_path / "src" / "t-0", 2, "gzip")


# --------------------------------------------------------------------------- the registry


def test_register_writes_registration_records(registry):
    code, out, err = run("--plugin-registry", registry, "plugins", "register", "--alias", "rev",
                         "--class", f"{ME}:ReverseZlib", "--version", "1.0")
    assert code == 0, err
    assert "as id 1" in out
    # the second one through the environment variable, as every command reads it
    code, out, err = run("plugins", "register", "--alias", "lvl", "--class", f"{ME}:LevelledZlib",
                         "--version", "2.0", env={plugins.REGISTRY_ENV: str(registry)})
    assert code == 0, err
    assert "as id 2" in out
    # the records are what the proposal describes: key = alias, value = JSON, in a topic partition
    code, out, err = run("dump", "--records", "--format", "jsonl", registry)
    assert code == 0, err
    recs = [json.loads(line) for line in out.splitlines() if json.loads(line)["type"] == "record"]
    assert [r["key"] for r in recs] == ["rev", "lvl"]
    assert [json.loads(r["value"]) for r in recs] == [record(1, "rev", f"{ME}:ReverseZlib", "1.0"),
                                                      record(2, "lvl", f"{ME}:LevelledZlib", "2.0")]
    code, out, err = run("verify", registry)  # with its indexes, like any partition folder
    assert code == 0, out
    # registering the same thing again writes nothing
    code, out, err = register(registry, "rev", f"{ME}:ReverseZlib", "1.0")
    assert code == 0 and "nothing written" in out
    assert len(load_registry(registry).records) == 2


def test_list_shows_whether_classes_import(registry):
    register(registry, "rev", f"{ME}:ReverseZlib")
    register(registry, "lvl", f"{ME}:LevelledZlib")
    code, out, err = register(registry, "gone", "no_such_module_kseg:Codec")
    assert code == 0 and "warning" in err and "no_such_module_kseg" in err
    code, out, err = run("--plugin-registry", registry, "plugins", "list")
    assert code == 0, err
    lines = {line.split()[1]: line for line in out.splitlines()[2:] if line.strip()}
    assert "yes" in lines["rev"].split()
    assert "levels 1..9" in lines["lvl"] and "bounded decompress" in lines["lvl"]
    assert " no " in lines["gone"] and "ModuleNotFoundError" in lines["gone"]
    code, out, err = run("plugins", "list", "--registry", registry, "--format", "json")
    rows = {r["alias"]: r for r in json.loads(out)["plugins"]}
    assert rows["rev"]["id"] == 1 and rows["rev"]["imports"] is True
    assert rows["gone"]["imports"] is False


def test_ids_are_never_reused_and_aliases_keep_theirs(registry):
    assert register(registry, "a", f"{ME}:ReverseZlib")[0] == 0
    assert register(registry, "b", f"{ME}:ReverseZlib", "1.0", "--id", "7")[0] == 0
    code, out, err = register(registry, "c", f"{ME}:ReverseZlib", "1.0", "--id", "7")
    assert code == 2 and "plugin id 7 is already registered for alias 'b'" in err
    code, out, err = register(registry, "a", f"{ME}:ReverseZlib", "2.0", "--id", "3")
    assert code == 2 and "alias 'a' is registered with plugin id 1: an alias keeps its id" in err
    # a new version keeps the id without being told
    code, out, err = register(registry, "a", f"{ME}:LevelledZlib", "2.0")
    assert code == 0 and "as id 1" in out
    # the next automatic id skips those taken
    code, out, err = register(registry, "c", f"{ME}:ReverseZlib")
    assert code == 0 and "as id 2" in out
    code, out, err = run("plugins", "check", "--registry", registry)
    assert code == 0, out


def test_ids_run_out_after_fifteen(tmp_path):
    reg = tmp_path / "reg.json"
    for i in range(15):
        assert register(reg, f"p{i}", f"{ME}:ReverseZlib")[0] == 0
    code, out, err = register(reg, "p15", f"{ME}:ReverseZlib")
    assert code == 2 and "every plugin id (1..15) is taken" in err
    code, out, err = register(reg, "p16", f"{ME}:ReverseZlib", "1.0", "--id", "16")
    assert code == 2  # click's range check


@pytest.mark.parametrize("alias,cls,message", [
    ("gzip", f"{ME}:ReverseZlib", "built-in compression name"),
    ("has space", f"{ME}:ReverseZlib", "is not valid"),
    ("ok", "no-colon-here", "module:attribute"),
])
def test_register_refuses_bad_records(registry, alias, cls, message):
    code, out, err = register(registry, alias, cls)
    assert code == 2 and message in err
    assert not registry.exists()


def test_register_needs_a_registry_and_a_class(tmp_path):
    code, out, err = run("plugins", "register", "--alias", "a", "--class", f"{ME}:ReverseZlib", "--version", "1")
    assert code == 2 and "no plugin registry" in err
    code, out, err = run("plugins", "register", "--registry", tmp_path / "r", "--alias", "zz-none",
                         "--version", "1")
    assert code == 2 and "give --class" in err


def test_latest_record_per_alias_wins(tmp_path, source):
    reg = registry_folder(tmp_path / "plugin-python-topic-0", [
        ("rev", record(1, "rev", f"{ME}:BrokenDecompress", "0.9")),
        ("old", record(2, "old", f"{ME}:ReverseZlib")),
        ("rev", record(1, "rev", f"{ME}:ReverseZlib", "1.0")),  # fixes the class: wins
        ("old", None),  # a tombstone: 'old' is gone
    ])
    code, out, err = run("--plugin-registry", reg, "plugins", "list", "--format", "json")
    rows = json.loads(out)["plugins"]
    assert [(r["alias"], r["version"], r["class"]) for r in rows if r["source"] == "registry"] == [
        ("rev", "1.0", f"{ME}:ReverseZlib")]
    out_dir = tmp_path / "out" / "t-0"
    assert run("--plugin-registry", reg, "recompress", "--codec", "rev", source, "-o", out_dir)[0] == 0
    assert run("--plugin-registry", reg, "verify", out_dir)[0] == 0
    code, _, err = run("--plugin-registry", reg, "recompress", "--codec", "old", source, "-o", tmp_path / "x")
    assert code == 2 and "Unknown compression name: old" in err
    # the id of a removed alias is not given to another one
    code, out, err = register(reg, "new", f"{ME}:ReverseZlib")
    assert code == 0 and "as id 3" in out


def test_json_file_registry(tmp_path, source):
    reg = tmp_path / "plugins.json"
    code, out, err = register(reg, "rev", f"{ME}:ReverseZlib")
    assert code == 0, err
    assert json.loads(reg.read_text()) == [record(1, "rev", f"{ME}:ReverseZlib", "1.0")]
    out_dir = tmp_path / "out" / "t-0"
    code, _, err = run("--plugin-registry", reg, "recompress", "--codec", "rev", source, "-o", out_dir)
    assert code == 0, err
    assert {b["codec"] for b in batches_jsonl(out_dir, reg)} == {"plugin:rev"}
    assert kseg_records(out_dir, reg) == kseg_records(source, None)
    # the topic's key -> value form, with a tombstone
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps({"rev": record(1, "rev", f"{ME}:ReverseZlib"), "old": None}))
    assert run("--plugin-registry", mapping, "verify", out_dir)[0] == 0
    assert run("plugins", "check", "--registry", mapping)[0] == 0


# --------------------------------------------------------------------------- every command on plugin data


def test_plugin_end_to_end(tmp_path, registry, source):
    """Register, recompress, then dump, verify, up-convert, down-convert, and back to lz4."""
    assert register(registry, "rev", f"{ME}:ReverseZlib")[0] == 0
    original = kseg_records(source, None)
    plug = tmp_path / "plug" / "t-0"
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "rev", source, "-o", plug)
    assert code == 0, err

    # the wire format: codec bits 5, plugin id in bits 8-11, bit 7 free
    for seg in partition_segments(plug):
        for b in Segment(seg).batches():
            assert b.attributes & 0x07 == 5 and (b.attributes >> 8) & 0x0F == 1 and not b.attributes & 0x80
    batches = batches_jsonl(plug, registry)
    assert {(b["codec"], b["plugin_id"]) for b in batches} == {("plugin:rev", 1)}
    assert kseg_records(plug, registry) == original
    code, out, err = run("--plugin-registry", registry, "dump", "--records", plug)
    assert code == 0 and "plugin:rev" in out
    code, out, err = run("--plugin-registry", registry, "dump", "--records", "--format", "kafka", plug)
    assert code == 0 and "compresscodec: plugin:rev" in out
    code, out, err = run("--plugin-registry", registry, "verify", plug)
    assert code == 0, out

    # up-convert to v2: already v2, copied byte for byte
    up = tmp_path / "up" / "t-0"
    assert run("--plugin-registry", registry, "up-convert", "--to-magic", "2", plug, "-o", up)[0] == 0
    assert [p.read_bytes() for p in partition_segments(up)] == [p.read_bytes() for p in partition_segments(plug)]

    # down-convert: v1 has no room for a plugin id
    code, out, err = run("--plugin-registry", registry, "down-convert", "--to-magic", "1", plug,
                         "-o", tmp_path / "down1" / "t-0")
    assert code == 2 and "plugin:rev cannot be carried by magic 1" in err and "--codec" in err
    down = tmp_path / "down" / "t-0"
    code, _, err = run("--plugin-registry", registry, "down-convert", "--to-magic", "1", "--codec", "gzip",
                       plug, "-o", down)
    assert code == 0, err
    want = [(o, ts, k, v, ()) for o, ts, k, v, _ in original]
    assert folder_records(down) == want  # kafka-python reads it (v1 has no headers)

    # back to a built-in codec: kafka-python reads the same records
    lz4 = tmp_path / "lz4" / "t-0"
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "lz4", plug, "-o", lz4)
    assert code == 0, err
    assert folder_records(lz4) == folder_records(source)
    assert run("verify", lz4)[0] == 0  # no registry needed any more


def test_compact_keeps_the_plugin_codec(tmp_path, registry, source):
    assert register(registry, "rev", f"{ME}:ReverseZlib")[0] == 0
    plug = tmp_path / "plug" / "t-0"
    assert run("--plugin-registry", registry, "recompress", "--codec", "rev", source, "-o", plug)[0] == 0
    args = ("compact", "--now-ms", 1_800_000_000_000, "--include-active")
    code, _, err = run("--plugin-registry", registry, *args, plug, "-o", tmp_path / "c-plug" / "t-0")
    assert code == 0, err
    code, _, err = run(*args, source, "-o", tmp_path / "c-gzip" / "t-0")
    assert code == 0, err
    compacted = kseg_records(tmp_path / "c-plug" / "t-0", registry)
    assert compacted == kseg_records(tmp_path / "c-gzip" / "t-0", None)
    assert 0 < len(compacted) < len(kseg_records(source, None))
    assert {b["codec"] for b in batches_jsonl(tmp_path / "c-plug" / "t-0", registry)} == {"plugin:rev"}
    assert run("--plugin-registry", registry, "verify", tmp_path / "c-plug" / "t-0")[0] == 0


def test_levels_are_discovered(tmp_path, registry, source):
    register(registry, "rev", f"{ME}:ReverseZlib")
    register(registry, "lvl", f"{ME}:LevelledZlib")
    LevelledZlib.seen.clear()
    out = tmp_path / "lvl" / "t-0"
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "lvl", "--level", "9",
                       source, "-o", out)
    assert code == 0, err
    assert ("compress", 9) in LevelledZlib.seen
    code, _, err = run("--plugin-registry", registry, "verify", "--max-decompressed-bytes", "5000", out)
    assert code == 0
    assert ("decompress", 5000) in LevelledZlib.seen  # the limit reaches a plugin that takes it
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "lvl", "--level", "12",
                       source, "-o", tmp_path / "x")
    assert code == 2 and "level must be in 1..9" in err
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "rev", "--level", "3",
                       source, "-o", tmp_path / "y")
    assert code == 2 and "has no compression level" in err


# --------------------------------------------------------------------------- errors


def test_unknown_alias(tmp_path, registry, source):
    register(registry, "rev", f"{ME}:ReverseZlib")
    for command in (("recompress",), ("up-convert", "--to-magic", "2"), ("down-convert", "--to-magic", "1")):
        code, _, err = run("--plugin-registry", registry, *command, "--codec", "nope", source,
                           "-o", tmp_path / "o" / "t-0")
        assert code == 2 and "Unknown compression name: nope" in err
    code, _, err = run("recompress", "--codec", "rev", source, "-o", tmp_path / "o" / "t-0")  # no registry
    assert code == 2 and "Unknown compression name: rev" in err


def test_unknown_plugin_id(tmp_path, registry):
    register(registry, "rev", f"{ME}:ReverseZlib")
    seg = plugin_segment(tmp_path / "t-0", 7)
    code, out, err = run("--plugin-registry", registry, "verify", seg)
    assert code == 1
    problems = [line for line in out.splitlines() if "error:" in line]
    assert len(problems) == 2  # one per batch, reported like any other problem
    assert "at byte 0" in problems[0] and "plugin id 7 is not registered" in problems[0]
    assert str(registry) in problems[0]
    code, out, err = run("--plugin-registry", registry, "dump", "--records", seg)
    assert code == 1 and "plugin id 7 is not registered" in err and str(registry) in err and "at byte 0" in err
    # the batch level still shows what it can
    code, out, err = run("--plugin-registry", registry, "dump", "--format", "jsonl", seg)
    assert code == 0 and '"codec": "plugin:7"' in out and '"plugin_id": 7' in out
    code, out, err = run("verify", seg)
    assert code == 1 and "no plugin registry was given" in out


@pytest.mark.parametrize("cls,message", [
    ("no_such_module_kseg:Codec", "cannot import no_such_module_kseg:Codec: ModuleNotFoundError"),
    (f"{ME}:Missing", "has no attribute 'Missing'"),
    (f"{ME}:BrokenInit", "BrokenInit() fails: OSError: no licence key"),
    (f"{ME}:NotACodec", "instances have no compress(data) method"),
    (f"{ME}:BrokenDecompress", "fails to decompress: RuntimeError: boom"),
    (f"{ME}:ReturnsText", "decompress() returned str, not bytes"),
])
def test_broken_plugin_class(tmp_path, cls, message):
    reg = registry_folder(tmp_path / "plugin-python-topic-0", [("bad", record(3, "bad", cls))])
    seg = plugin_segment(tmp_path / "t-0", 3)
    code, out, err = run("--plugin-registry", reg, "verify", seg)
    assert code == 1, out
    assert message in out and "plugin id 3" in out and "at byte 0" in out and str(reg) in out
    code, out, err = run("--plugin-registry", reg, "dump", "--records", seg)
    assert code == 1 and message in err
    code, out, err = run("--plugin-registry", reg, "plugins", "check")
    assert code == 1 and message in out


def test_broken_class_cannot_be_written_with(tmp_path, source):
    reg = registry_folder(tmp_path / "plugin-python-topic-0", [("bad", record(3, "bad", "no_such_module_kseg:C"))])
    code, _, err = run("--plugin-registry", reg, "recompress", "--codec", "bad", source, "-o", tmp_path / "o")
    assert code == 2 and "plugin id 3 ('bad', version 1.0) cannot be loaded" in err
    assert not (tmp_path / "o").exists()


def test_decompression_limit_applies_to_plugins(tmp_path, registry, source):
    register(registry, "rev", f"{ME}:ReverseZlib")
    plug = tmp_path / "plug" / "t-0"
    assert run("--plugin-registry", registry, "recompress", "--codec", "rev", source, "-o", plug)[0] == 0
    code, out, err = run("--plugin-registry", registry, "verify", "--max-decompressed-bytes", "20", plug)
    assert code == 1 and "exceeds the decompression limit of 20 bytes" in out


def test_registry_conflicts_are_reported(tmp_path):
    two_aliases = registry_folder(tmp_path / "a" / "plugin-python-topic-0", [
        ("x", record(1, "x", f"{ME}:ReverseZlib")),
        ("y", record(1, "y", f"{ME}:ReverseZlib")),
    ])
    code, out, err = run("plugins", "check", "--registry", two_aliases)
    assert code == 1
    assert "plugin id 1 is registered for two aliases, 'x' and 'y'" in out
    assert "plugin id 1 of alias 'y'" in out and "already registered for alias 'x'" in out
    # reading a batch with that id is refused, not guessed
    seg = plugin_segment(tmp_path / "t-0", 1)
    code, out, err = run("--plugin-registry", two_aliases, "verify", seg)
    assert code == 1 and "registered for several aliases ('x', 'y')" in out

    changed = registry_folder(tmp_path / "b" / "plugin-python-topic-0", [
        ("x", record(1, "x", f"{ME}:ReverseZlib")),
        ("x", record(2, "x", f"{ME}:ReverseZlib", "2.0")),
    ])
    code, out, err = run("plugins", "check", "--registry", changed, "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert not report["ok"]
    assert any("alias 'x' changes its plugin id from 1" in p and "to 2" in p for p in report["problems"])

    reused = registry_folder(tmp_path / "c" / "plugin-python-topic-0", [
        ("x", record(4, "x", f"{ME}:ReverseZlib")),
        ("x", None),
        ("y", record(4, "y", f"{ME}:ReverseZlib")),
    ])
    code, out, err = run("plugins", "check", "--registry", reused)
    assert code == 1 and "never reused" in out

    malformed = registry_folder(tmp_path / "d" / "plugin-python-topic-0", [
        ("x", b"{not json"),
        ("y", record(1, "z", f"{ME}:ReverseZlib")),
        ("w", {"pluginID": 0, "pluginAlias": "w", "pluginClassName": f"{ME}:ReverseZlib", "pluginVersion": "1"}),
        ("v", {"pluginAlias": "v"}),
        ("ok", record(2, "ok", f"{ME}:ReverseZlib")),
    ])
    code, out, err = run("plugins", "check", "--registry", malformed)
    assert code == 1
    assert "the value is not JSON" in out
    assert "the record key 'y' is not its pluginAlias 'z'" in out
    assert "pluginID 0 is out of range 1..15" in out
    assert "the value lacks pluginID, pluginClassName, pluginVersion" in out
    code, out, err = run("plugins", "list", "--registry", malformed)
    assert code == 0 and "4 problem(s)" in out and " ok " in out

    # a registration whose bytes changed (its batch fails its CRC) is not read: no codec from it
    flipped = registry_folder(tmp_path / "e" / "plugin-python-topic-0", [
        ("x", record(1, "x", f"{ME}:ReverseZlib")),
        ("y", record(2, "y", f"{ME}:ReverseZlib")),
    ])
    log = next(flipped.glob("*.log"))
    data = bytearray(log.read_bytes())
    data[-1] ^= 0x01  # inside the last registration's value
    log.write_bytes(bytes(data))
    code, out, err = run("plugins", "check", "--registry", flipped)
    assert code == 1 and "crc mismatch" in out and "its registrations are not read" in out
    code, out, err = run("plugins", "list", "--registry", flipped)
    assert " x " in out and " y " not in out


def test_unreadable_registry(tmp_path, source):
    bad = tmp_path / "plugins.json"
    bad.write_text("{nope")
    code, out, err = run("plugins", "check", "--registry", bad)
    assert code == 2 and "not valid JSON" in err
    code, _, err = run("--plugin-registry", bad, "recompress", "--codec", "rev", source, "-o", tmp_path / "o")
    assert code == 2 and "cannot be read" in err
    seg = plugin_segment(tmp_path / "t-0", 1)
    code, out, err = run("--plugin-registry", bad, "verify", seg)
    assert code == 1 and "plugin id 1 cannot be resolved" in out and "not valid JSON" in out
    code, out, err = run("--plugin-registry", tmp_path / "missing", "verify", seg)
    assert code == 1 and "plugin registry not found" in out
    # commands that meet no plugin do not care
    assert run("--plugin-registry", bad, "verify", source)[0] == 0


# --------------------------------------------------------------------------- a registry handed to workers


def _values(folder: str) -> list[bytes]:
    """The record values of a partition, read with whatever registry this process has."""
    return [r.value for seg in partition_segments(Path(folder)) for b in Segment(seg).batches()
            for r in batch_records(b)]


def test_registry_use_is_a_value_a_worker_calls_once_for_many_tasks(tmp_path, monkeypatch):
    """``RegistryUse`` pickles, names its registry absolutely and, called again in the same process
    (a worker's next task), keeps the codecs loaded; ``reload_registry`` drops them."""
    reg = registry_folder(tmp_path / "plugin-python-topic-0", [("rev", record(3, "rev", f"{ME}:ReverseZlib"))])
    plugin_segment(tmp_path / "t-0", 3)
    monkeypatch.chdir(tmp_path)
    use = registry_use("plugin-python-topic-0")
    assert Path(use.path).is_absolute() and Path(use.path).samefile(reg)
    assert pickle.loads(pickle.dumps(use)) == use
    use()
    codec = plugins.plugin_codec(3)
    use()
    pickle.loads(pickle.dumps(use))()
    assert plugins.plugin_codec(3) is codec  # nothing read again
    reload_registry()
    assert plugins.plugin_codec(3) is not codec
    use_registry("plugin-python-topic-0")  # as the command activates it: relative, another reader
    codec = plugins.plugin_codec(3)
    use()
    assert plugins.plugin_codec(3) is codec
    RegistryUse(None)()
    with pytest.raises(UnsupportedCodecError, match="plugin id 3 is not registered"):
        plugins.plugin_codec(3)


def test_registry_use_of_a_process_that_activated_none_is_the_environments(tmp_path, monkeypatch):
    """A library program's registry is $KSEG_PLUGIN_REGISTRY: its ``RegistryUse`` names it, and
    activates it with the reader of registry files (which the environment alone does not give)."""
    reg = registry_folder(tmp_path / "plugin-python-topic-0", [("rev", record(3, "rev", f"{ME}:ReverseZlib"))])
    part = plugin_segment(tmp_path / "t-0", 3)
    monkeypatch.setenv(plugins.REGISTRY_ENV, str(reg))
    use = registry_use()
    assert use == RegistryUse(str(reg))
    use()
    assert len(_values(str(part))) == 6


def test_a_fresh_process_reads_plugin_batches_with_the_registry_it_is_given(tmp_path):
    """A worker that is not forked shares nothing with its parent: the ``RegistryUse`` it is
    given as its initializer is all it knows of the registry."""
    reg = registry_folder(tmp_path / "plugin-python-topic-0", [("rev", record(3, "rev", f"{ME}:ReverseZlib"))])
    part = plugin_segment(tmp_path / "t-0", 3)
    use_registry(reg)
    expected = _values(str(part))
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=registry_use()) as pool:
        assert pool.submit(_values, str(part)).result() == expected
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        with pytest.raises(UnsupportedCodecError, match="plugin id 3 is not registered"):
            pool.submit(_values, str(part)).result()


# --------------------------------------------------------------------------- the codec adapter


def test_plugin_codec_adapter():
    reg = plugins.Registration(2, "rev", f"{ME}:ReverseZlib", "1")
    codec = plugins.PluginCodec(reg, ReverseZlib())
    data = b"hello plugin " * 50
    packed = codec.compress(memoryview(data))
    assert codec.decompress(memoryview(packed)) == data
    assert codec.id == 5 and codec.name == "rev" and codec.min_magic == 2
    with pytest.raises(UnsupportedCodecError, match="not allowed with magic 1"):
        codec.compress(data, magic=1)
    with pytest.raises(UnsupportedCodecError, match="not allowed with magic 0"):
        codec.decompress(packed, magic=0)
    with pytest.raises(DecompressionLimitError):
        codec.decompress(packed, limit=len(data) - 1)
    assert codec.decompress(packed, limit=len(data)) == data
    with pytest.raises(DecompressionError, match="plugin id 2 .'rev'.* fails to decompress: error"):
        codec.decompress(b"garbage")
    bounded = plugins.PluginCodec(reg, LevelledZlib())
    bomb = zlib.compress(bytes(10 << 20))
    with pytest.raises(DecompressionLimitError):
        bounded.decompress(bomb, limit=1000)


def test_plugin_ids_in_attribute_bits():
    codec = plugins.PluginCodec(plugins.Registration(15, "rev", f"{ME}:ReverseZlib", "1"), ReverseZlib())
    raw = build_v2_batch([make_record(0, T0, b"k", b"v")], plugin_id=15, codec_impl=codec)
    from kseg.log.fast import scan_entries

    batch = scan_entries(raw, 0, final=True).batches[0]
    assert batch.attributes == 5 | (15 << 8)
    assert batch.plugin_id == 15 and batch.codec == 5


# --------------------------------------------------------------------------- the example plugins


def _example_path(monkeypatch, name: str) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES / name))


def test_example_snappy_plugin(tmp_path, registry, monkeypatch):
    _example_path(monkeypatch, "kseg-snappy-plugin")
    code, _, err = register(registry, "snappyPlugin", "kseg_snappy_plugin:SnappyPlugin", "1.0.0")
    assert code == 0, err
    src = write_partition(tmp_path / "src" / "t-0", 2, "snappy")
    out = tmp_path / "plug" / "t-0"
    assert run("--plugin-registry", registry, "recompress", "--codec", "snappyPlugin", src, "-o", out)[0] == 0
    assert run("--plugin-registry", registry, "verify", out)[0] == 0
    # the same payload bytes as the built-in snappy: only the codec bits differ
    for a, b in zip(Segment(partition_segments(src)[0]).batches(), Segment(partition_segments(out)[0]).batches()):
        assert bytes(a.raw[61:]) == bytes(b.raw[61:])
        assert b.plugin_id == 1 and a.codec == 2
    assert kseg_records(out, registry) == kseg_records(src, None)
    assert run("plugins", "check", "--registry", registry)[0] == 0
    # it honours the limit the way the built-in does (a bomb is refused before inflating)
    use_registry(registry)
    codec = plugins.plugin_codec(1)
    with pytest.raises(DecompressionLimitError):
        codec.decompress(SNAPPY.compress(bytes(1 << 20)), limit=1000)


def test_example_brotli_plugin(tmp_path, registry, monkeypatch, source):
    pytest.importorskip("brotli")
    _example_path(monkeypatch, "kseg-brotli-plugin")
    code, _, err = register(registry, "brotli", "kseg_brotli_plugin:BrotliPlugin", "1.0.0")
    assert code == 0, err
    out = tmp_path / "brotli" / "t-0"
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "brotli", "--level", "9",
                       source, "-o", out)
    assert code == 0, err
    assert {b["codec"] for b in batches_jsonl(out, registry)} == {"plugin:brotli"}
    assert run("--plugin-registry", registry, "verify", out)[0] == 0
    assert kseg_records(out, registry) == kseg_records(source, None)
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "brotli", "--level", "12",
                       source, "-o", tmp_path / "x")
    assert code == 2 and "level must be in 0..11" in err
    back = tmp_path / "zstd" / "t-0"
    assert run("--plugin-registry", registry, "recompress", "--codec", "zstd", out, "-o", back)[0] == 0
    assert folder_records(back) == folder_records(source)
    code, out_text, _ = run("--plugin-registry", registry, "verify", "--max-decompressed-bytes", "50", out)
    assert code == 1 and "exceeds the decompression limit of 50 bytes" in out_text


# --------------------------------------------------------------------------- entry points


def _fake_distribution(root: Path, entries: dict[str, str]) -> Path:
    """A distribution on sys.path that declares kseg.codecs entry points (no install needed)."""
    dist = root / "kseg_test_codecs-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kseg-test-codecs\nVersion: 1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entries.items())
    (dist / "entry_points.txt").write_text(f"[{plugins.ENTRY_POINT_GROUP}]\n{lines}")
    return root


def test_entry_point_codecs(tmp_path, monkeypatch, registry, source):
    monkeypatch.syspath_prepend(str(_fake_distribution(tmp_path / "site", {"revzlib": f"{ME}:ReverseZlib"})))
    assert register(registry, "other", f"{ME}:LevelledZlib")[0] == 0
    assert plugins.entry_point_codecs()["revzlib"] == f"{ME}:ReverseZlib"
    # installed but without a plugin id: listed, not usable
    code, out, err = run("plugins", "list")
    assert code == 0 and "revzlib" in out and "not registered" in out
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "revzlib", source,
                       "-o", tmp_path / "o" / "t-0")
    assert code == 2 and "has no plugin id" in err and "kseg plugins register --alias revzlib" in err
    # register takes the class from the entry point
    code, out, err = run("--plugin-registry", registry, "plugins", "register", "--alias", "revzlib",
                         "--version", "1.0")
    assert code == 0 and f"{ME}:ReverseZlib" in out
    code, _, err = run("--plugin-registry", registry, "recompress", "--codec", "revzlib", source,
                       "-o", tmp_path / "o" / "t-0")
    assert code == 0, err
    assert run("--plugin-registry", registry, "verify", tmp_path / "o" / "t-0")[0] == 0


def test_installed_examples_declare_entry_points():
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("kseg-snappy-plugin")
    except PackageNotFoundError:
        pytest.skip("the example plugins are not installed (make test installs them)")
    names = {ep.name: ep.value for ep in dist.entry_points if ep.group == plugins.ENTRY_POINT_GROUP}
    assert names == {"snappyPlugin": "kseg_snappy_plugin:SnappyPlugin"}
    assert plugins.self_test("kseg_snappy_plugin:SnappyPlugin") is None
