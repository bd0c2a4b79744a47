"""A plain ``kseg dump`` or ``kseg verify`` loads what it needs and nothing else (start-up time).

A short command's cost is nearly all interpreter and imports: construct (the schemas),
the crc32c package's ``__init__`` (importlib.metadata), tabulate, the archive modules,
the internal-topic decoders and the other commands' operations would each cost about as
much as the work itself. Each case runs the CLI in a fresh interpreter and lists what
it imported: a deterministic check, not a timing. The counterparts show that what is
left out is still loaded when it is needed (``--decode``, a text table, a codec).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kseg import checksums
from kseg.cli.main import COMMANDS, main

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
TXN_LOG = LOGDIR / "v2-txn-0" / "00000000000000000005.log"  # transaction markers (control records), an lz4 batch
TXN_PLAIN = LOGDIR / "v2-txn-0" / "00000000000000000000.log"  # transactional batches, nothing compressed
GZIP_LOG = LOGDIR / "v2-gzip-0" / "00000000000000000000.log"
LEGACY_LOG = LOGDIR / "v1-snappy-0" / "00000000000000000000.log"
OFFSETS = ROOT / "fixtures" / "internal" / "__consumer_offsets-0"

# Run the CLI as the console script does, then write the names of the loaded modules to a file.
_RUN = """
import json, sys
out, args = sys.argv[1], sys.argv[2:]
from kseg.cli import run
sys.argv = ["kseg", *args]
try:
    run()
except SystemExit as e:
    code = e.code
with open(out, "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""

# Never needed by a plain dump or verify of Kafka segments.
NEVER = (
    "construct", "kseg.formats.record_batch_v2", "kseg.formats.log_entry", "kseg.facts.derive",
    "tabulate", "tarfile", "zipfile", "importlib.metadata",
    "kseg.decoders.metadata", "kseg.decoders.schema", "kseg.decoders.offsets", "kseg.decoders.transactions",
    "kseg.ops.compact", "kseg.ops.convert", "kseg.ops.jobs", "kseg.ops.diff", "kseg.ops.find", "kseg.ops.repair",
    "kseg.ops.stats", "kseg.ops.state", "kseg.ops.txn", "kseg.ops.registry", "kseg.render.html_report",
    "kseg.render.tools",
    "kseg.cli.write", "kseg.cli.repair", "kseg.cli.diff", "kseg.cli.find", "kseg.cli.stats", "kseg.cli.internals", "kseg.cli.plugins", "kseg.spark", "pyspark",
    # a pool's futures (and the logging they load), a JUnit report's XML, redaction's HMAC: each a few ms
    "concurrent.futures", "logging", "xml.etree.ElementTree", "hmac",
)
# The companion files' readers, index checks and writers (a dump of .log files has no companion
# event to write); what a spool and a split dump's folder need (a run in one process has none).
NOT_FOR_DUMP = ("kseg.ops.verify", "kseg.cli.verify", "kseg.render.reports", "kseg.kafka07.read", "kseg.render.kafka07",
                "kseg.companions", "kseg.render.companions", "tempfile", "pickle")
# What only showing records needs (the internal-topic decoders and their option choices, redaction,
# Kafka's release table), what only Spark's plan and the Python API need, the 0.7 reader, and what
# makes a writer's temporaries.
NOT_FOR_VERIFY = ("kseg.cli.dump", "kseg.render.dump", "kseg.cli.record_options", "kseg.decoders",
                  "kseg.kafka_releases", "kseg.ops.redact", "kseg.ops.slices", "kseg.kafka07.read", "kseg.log.atomic")


def loaded(tmp_path: Path, *args: object) -> set[str]:
    out = tmp_path / "modules.json"
    env = {k: v for k, v in os.environ.items() if k != "KSEG_PURE_PYTHON"}
    r = subprocess.run([sys.executable, "-c", _RUN, str(out), *map(str, args)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert out.exists(), r.stderr
    result = json.loads(out.read_text())
    assert result["code"] in (0, None), (result["code"], r.stderr)
    return set(result["modules"])


def _absent(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules for n in names if m == n or m.startswith(n + "."))


SNAPPY_LZ4 = ("kseg.codecs.xerial", "cramjam", "kseg.codecs.kafka_lz4", "lz4", "xxhash")
GZIP_ZSTD = ("kseg.codecs.gzip", "isal", "kseg.codecs.zstd", "zstandard")
ZSTD = ("kseg.codecs.zstd", "zstandard")


@pytest.mark.parametrize("args,unused", [
    (("dump", "--format", "kafka", TXN_LOG), SNAPPY_LZ4 + GZIP_ZSTD),
    (("dump", "--format", "kafka", "--records", GZIP_LOG), SNAPPY_LZ4 + ZSTD),
    (("dump", "--records", TXN_PLAIN), SNAPPY_LZ4 + GZIP_ZSTD),
    (("dump", "--records", "--format", "kafka", TXN_LOG), ("kseg.codecs.xerial", "cramjam") + GZIP_ZSTD),
    (("dump", "--format", "jsonl", "--records", LEGACY_LOG), ("kseg.codecs.kafka_lz4", "lz4") + GZIP_ZSTD),
], ids=["kafka", "kafka-records-gzip", "text-records", "kafka-records-lz4", "jsonl-snappy"])
def test_a_plain_dump_loads_only_the_dump_path(tmp_path, args, unused) -> None:
    modules = loaded(tmp_path, *args)
    assert "kseg.cli.dump" in modules and "kseg.render.dump" in modules
    assert _absent(modules, NEVER + NOT_FOR_DUMP + unused) == []
    if checksums.ACCELERATED:  # else the crc32c package is the CRC-32C, and it loads importlib.metadata
        assert "crc32c" not in modules


@pytest.mark.parametrize("args", [
    ("verify", TXN_LOG),
    ("verify", "--quick", GZIP_LOG),
    ("verify", LOGDIR / "v2-txn-0"),
], ids=["log", "quick", "partition"])
def test_a_plain_verify_loads_only_the_verify_path(tmp_path, args) -> None:
    modules = loaded(tmp_path, *args)
    assert "kseg.cli.verify" in modules and "kseg.ops.verify" in modules
    assert _absent(modules, NEVER + NOT_FOR_VERIFY) == []
    if checksums.ACCELERATED:
        assert "crc32c" not in modules


# Each operator tool loads its own operation, not the others' (they once shared one module).
OPERATOR_TOOLS = {
    "stats": ("kseg.ops.stats", "kseg.render.tools"),
    "find": ("kseg.ops.find", "kseg.render.tools"),
    "diff": ("kseg.ops.diff", "kseg.render.tools"),
    "repair": ("kseg.ops.repair", "kseg.render.tools"),
}
NOT_FOR_A_TOOL = ("kseg.ops.stats", "kseg.ops.find", "kseg.ops.diff", "kseg.ops.repair", "kseg.ops.salvage",
                  "kseg.render.salvage", "kseg.render.html_report", "kseg.cli.stats", "kseg.cli.find",
                  "kseg.cli.diff", "kseg.cli.repair")


@pytest.mark.parametrize("name", sorted(OPERATOR_TOOLS))
def test_an_operator_tool_loads_only_its_own_operation(tmp_path, name) -> None:
    args = {"stats": ("stats", LOGDIR / "v2-txn-0"), "find": ("find", "--key", "k", LOGDIR / "v2-txn-0"),
            "diff": ("diff", LOGDIR / "v2-txn-0", LOGDIR / "v2-txn-0"),
            "repair": ("repair", "--dry-run", LOGDIR / "v2-txn-0")}[name]
    modules = loaded(tmp_path, *args)
    own = (f"kseg.cli.{name}", *OPERATOR_TOOLS[name])
    assert set(own) <= modules
    assert _absent(modules, tuple(m for m in NOT_FOR_A_TOOL if m not in own)) == []


def test_what_is_left_out_still_loads_when_needed(tmp_path) -> None:
    decoded = loaded(tmp_path, "dump", "--decode", "auto", OFFSETS)
    assert "kseg.decoders.offsets" in decoded and "kseg.decoders.metadata" not in decoded
    table = loaded(tmp_path, "dump", LOGDIR / "v2-txn-0" / "00000000000000000005.txnindex")
    assert "tabulate" in table and "kseg.render.companions" in table and "kseg.companions.read" in table
    seeking = loaded(tmp_path, "dump", "--records", "--from-offset", 7, TXN_LOG)
    assert "kseg.companions.read" in seeking and "kseg.render.companions" not in seeking
    assert "tempfile" in loaded(tmp_path, "dump", "-j", 2, LOGDIR / "v2-txn-0")
    assert "cramjam" in loaded(tmp_path, "dump", "--records", LEGACY_LOG)
    assert "lz4" in loaded(tmp_path, "verify", LOGDIR / "v2-lz4-0")
    assert "isal" in loaded(tmp_path, "dump", "--records", GZIP_LOG)
    assert "zstandard" in loaded(tmp_path, "verify", LOGDIR / "v2-zstd-0")


COMMAND_MODULES = tuple(sorted({c.where.partition(":")[0] for c in COMMANDS.values()}))


def test_help_lists_every_command_without_loading_one(tmp_path) -> None:
    """``kseg --help`` shows each command's line from the table, and imports no command's module."""
    from click.testing import CliRunner

    assert _absent(loaded(tmp_path, "--help"), COMMAND_MODULES + ("kseg.spark",)) == []
    r = CliRunner().invoke(main, ["--help"])
    assert r.exit_code == 0
    listed = r.output.split("Commands:\n", 1)[1]
    for name in COMMANDS:
        assert f"\n  {name} " in "\n" + listed and COMMANDS[name].summary in listed, name
    assert "\n  spark " in "\n" + listed
    ctx = main.make_context("kseg", ["--help"], resilient_parsing=True)
    for name in COMMANDS:  # a loaded command says the same in its own help and in the group's
        command = main.get_command(ctx, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(limit=80) == COMMANDS[name].summary


def test_kseg_spark_lists_each_command_with_the_plain_commands_line() -> None:
    """``kseg spark --help``: each command has the line of the plain command it runs on Spark."""
    from click.testing import CliRunner

    pytest.importorskip("pyspark", reason="kseg spark needs the spark extra")
    r = CliRunner().invoke(main, ["spark", "--help"])
    assert r.exit_code == 0, r.output
    listed = dict(line.split(None, 1) for line in r.output.split("Commands:\n", 1)[1].splitlines() if line.strip())
    assert listed and all(listed[name] == COMMANDS[name].summary for name in listed), listed


def test_shell_completion_of_a_command_name_loads_no_command(tmp_path) -> None:
    """Tab completion names the commands with their lines, as click's would, without importing them."""
    out = tmp_path / "modules.json"
    script = _RUN.replace("from kseg.cli import run", "import os; os.environ.update(_KSEG_COMPLETE='zsh_complete', "
                                                      "COMP_WORDS='kseg s', COMP_CWORD='1')\nfrom kseg.cli import run")
    r = subprocess.run([sys.executable, "-c", script, str(out)], capture_output=True, text=True, timeout=120)
    modules = set(json.loads(out.read_text())["modules"])
    assert _absent(modules, COMMAND_MODULES + ("kseg.spark",)) == []
    words = r.stdout.splitlines()
    offered = {words[i + 1]: words[i + 2] for i in range(0, len(words) - 2, 3) if words[i] == "plain"}
    assert offered == {name: COMMANDS[name].summary for name in COMMANDS if name.startswith("s")} | {
        "spark": main.commands["spark"].get_short_help_str()}, r.stdout


def test_version_says_whether_the_accelerator_is_in_use():
    import subprocess
    import sys
    from importlib.metadata import version

    from kseg.log import fast

    def run(env_extra):
        env = {k: v for k, v in os.environ.items() if k != "KSEG_PURE_PYTHON"} | env_extra
        return subprocess.run([sys.executable, "-c", "from kseg.cli import run; run()", "--version"],
                              capture_output=True, text=True, env=env, check=True).stdout.splitlines()

    head, accel = run({})
    assert head == f"kseg, version {version('kseg')}"
    assert accel.startswith("C accelerator: in use" if fast._speedups is not None else "C accelerator: not built")
    assert run({"KSEG_PURE_PYTHON": "1"})[1].startswith(
        "C accelerator: disabled" if fast._speedups is not None else "C accelerator: not built")
