"""The failure matrix: every command x every input kind x every fault -> the verdict kseg owes.

docs/guides/robustness.md states the policy; this file holds kseg to it on every path, not only on
the ones other tests walk. Three tables, each listed once:

- ``COMMANDS``: a row per command of the click group (``kseg`` and ``kseg spark``), its role
  and how it is called. A command added to the group without a row fails
  ``test_every_command_has_a_row``.
- ``KINDS``: the input kinds (a segment file, a partition folder, a log directory, a
  ``.tar``, a ``.zip``, a prefix in each object store on its real server or emulator (``STORES``:
  ``s3://`` on SeaweedFS, ``gs://`` on fake-gcs-server, ``abfs://`` on Azurite), stdin).
- ``FAULTS``: what goes wrong (damaged bytes, an unreadable archive member, a file that
  vanishes, is renamed by retention, is overwritten, appended to or shrinks during the run,
  a full disk, SIGTERM, SIGINT, a second writer to the same output, a huge sparse companion,
  hostile names) and the verdict it must give for each role: the exit code, at most one
  error line and never a traceback, the input unchanged, no leftovers, and for writers an
  output that is absent or complete and honest.
- ``PUBLISH_FAULTS`` and ``READ_FAULTS``: the object store failing under a writer's
  ``s3://`` output (refusing writes, down, its server killed mid-publish) and under a
  reader's ``s3://`` input (its server killed mid-read); tests/store_faults.py makes the
  child's store fail on cue.
- ``DECODER_FAULTS``: a user's ``--value-decoder module:function`` raising, exiting, being
  interrupted or returning what JSON cannot hold, on every command that takes one (``DECODING``).

Every cell runs the real ``kseg`` in a child process. Faults that happen *during* a run are
made deterministic by stopping the child (SIGSTOP) once it has the input open or its
temporary output made, changing the world, and letting it go on (SIGCONT).
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import hashlib
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import click
import pytest
import store_faults
from children import KSEG_STOPPING, restore_signals, stop_when, stopped_itself
from strict_outputs import check_strict_output, strict_json
from verify_text import with_paths

from kseg.checksums import crc32c
from kseg.companions.build import build_indexes
from kseg.facts.record_batch_v2 import CRC_POSITION, CRC_START, RECORD_COUNT_POSITION
from kseg.log.encode import build_legacy_message, build_v2_batch
from kseg.log.segment import segment_file_name
from kseg.model import make_record
from kseg.ops.jobs import entry_facts

KSEG = [sys.executable, "-c", "import sys; from kseg.cli.main import main; sys.argv[0] = 'kseg'; main()"]
T0 = 1_700_000_000_000
IS_ROOT = os.geteuid() == 0
NOW_MS = "1800000000000"
HOSTILE_TOPIC = "t\x1b]0;pwned\x07\x1b[2J\u202eevil"

# --------------------------------------------------------------------------- the commands


@dataclass(frozen=True)
class Command:
    """How one command is called on an input (``inp``) with an output (``out``), and its role:
    ``checker`` gives a verdict on the data (exit 1 when it is bad), ``reader`` shows or
    summarises it (exit 1 when it met bad data on the way), ``writer`` makes a new output
    (``-o``), ``meta`` takes no data input."""

    role: str
    argv: Callable[[str, str], list[str]]
    kinds: frozenset[str] = frozenset({"file", "partition", "logdir", "tar", "zip", "s3", "gs", "abfs"})
    # Faults this command is not subject to, each with the reason.
    exempt: dict[str, str] = field(default_factory=dict)
    # Faults in the data on which this command owes another verdict than its role's, each with the reason.
    data_verdicts: dict[str, tuple[set[int], str, str]] = field(default_factory=dict)
    spark: bool = False
    # A writer's check of a complete output: "verify" (kseg verify passes on it: segments),
    # "export" (Parquet files that pyarrow reads back, each marked as kseg's export), or "bundle"
    # (a .tar.gz whose manifest names every member's SHA-256, read in place by kseg verify).
    output_check: str = "verify"
    # What the output's name ends in (a bundle is read in place by its name).
    output_suffix: str = ""


def _writer(*extra: str) -> Callable[[str, str], list[str]]:
    return lambda inp, out: [inp, "-o", out, *extra]


def _from_dump(inp: str, out: str) -> list[str]:
    """``kseg build`` reads JSON lines: the input's ``dump --format jsonl``, made beside it first."""
    from click.testing import CliRunner

    from kseg.cli.main import main

    lines = Path(inp).parent / (Path(inp).name + ".jsonl")
    if not lines.exists():
        res = CliRunner().invoke(main, ["dump", "-r", "--format", "jsonl", inp], catch_exceptions=False)
        lines.write_bytes(res.stdout_bytes)
    return [str(lines), "-o", out]


_NOT_SEGMENTS = "build reads JSON lines, not segment files: faults made on the input's segments do not reach it"


LOCAL = frozenset({"file", "partition", "logdir"})
# The object stores an input may be in, each on a real server on loopback (tests/servers.py).
STORES = ("s3", "gs", "abfs")
COMMANDS: dict[str, Command] = {
    "verify": Command("checker", lambda inp, out: [inp], kinds=LOCAL | {"tar", "zip", "stdin", *STORES}),
    "dump": Command("reader", lambda inp, out: ["--records", inp], kinds=LOCAL | {"tar", "zip", "stdin", *STORES}),
    "stats": Command("reader", lambda inp, out: [inp]),
    "find": Command("reader", lambda inp, out: ["--key", "key-1", inp]),
    "txn": Command("reader", lambda inp, out: ["--all", "--now-ms", NOW_MS, inp]),
    "diff": Command("checker", lambda inp, out: [inp, inp], exempt={
        "appended": "diff reads its two sides in turn: the side read after the append is longer, and "
                    "'behind' (exit 1) is then the true answer",
        "renamed_open": "diff reads its two sides in turn: the side read after the rename lacks the segment, "
                        "and 'different' (exit 1) is then the true answer",
        "crc": "a copy compared with itself is equal whatever its bytes (diff --check-crc is the checker)",
        "contents": "a copy compared with itself is equal whatever its bytes",
        "truncated": "diff's verdict is equality (a copy is identical to itself); the damage is named in its output"}),
    "state": Command("reader", lambda inp, out: ["--format", "json", inp], exempt={
        "none": "state replays internal topics only: an ordinary topic is refused (exit 2), its own rows below",
        "crc": "idem", "contents": "idem", "truncated": "idem", "store_killed_reading": "idem"}),
    "index": Command("checker", lambda inp, out: ["--check", inp], kinds=LOCAL, exempt={
        "crc": "index --check judges the index files, which are right about a batch whose bytes are damaged "
               "(verify judges the batches)",
        "contents": "idem"}),
    "repair": Command("writer", lambda inp, out: [inp, "-o", out], exempt={
        "crc": "repair's purpose is to cut at the first bad batch: it writes what is before it (exit 0)",
        "contents": "idem", "truncated": "idem"}),
    "salvage": Command("writer", lambda inp, out: [inp, "-o", out], data_verdicts={
        f: ({1}, "complete", "salvage's purpose is to recover around the damage: it writes every batch the damage "
                             "did not touch (the output passes verify) and exits 1, something was lost")
        for f in ("crc", "contents", "truncated")}),
    # Records into Parquet: a writer whose output is not segments (its check reads the files back);
    # in parts of twenty records (two batches of the small inputs, 1,200 files from the large log
    # directory), so that a fault finds parts already written (tests/test_export.py holds the
    # one-file output to the same rules on damage).
    "export": Command("writer", _writer("--max-file-rows", "20"), output_check="export"),
    # A support bundle takes the files as they are, damage included (the evidence), from a local
    # log directory or partition folder.
    "bundle": Command("writer", _writer(), kinds=frozenset({"partition", "logdir"}), output_check="bundle",
                      output_suffix=".tar.gz", data_verdicts={
                          f: ({0}, "complete", "a bundle is the evidence: it takes the files byte for byte, "
                                               "damage included, and its manifest says what it took")
                          for f in ("crc", "contents", "truncated")}),
    "compact": Command("writer", _writer("--include-active", "--now-ms", NOW_MS)),
    "up-convert": Command("writer", _writer("--to-magic", "2", "--codec", "lz4")),
    "down-convert": Command("writer", _writer("--to-magic", "1")),
    "recompress": Command("writer", _writer("--codec", "gzip")),
    "rebase": Command("writer", _writer("--base-offset", "1000")),
    "plugins": Command("meta", lambda inp, out: ["list"], kinds=frozenset()),
    # Its data faults (a line that is not JSON, a CRC the records do not give) are tests/test_build.py's rows.
    "build": Command("writer", _from_dump, kinds=frozenset(), exempt={
        f: _NOT_SEGMENTS for f in ("vanish", "renamed", "renamed_open", "overwrite", "appended", "shrink", "sparse", "hostile",
                                   "sigterm", "sigint")}),
}
# kseg spark runs the same operations on Spark: a row each, on the local kinds, for the faults
# in the data (a JVM start per cell makes the timing faults the plain commands' job).
SPARK_FAULTS = ("none", "crc")
SPARK_COMMANDS: dict[str, Command] = {
    "spark verify": Command("checker", lambda inp, out: [inp], kinds=frozenset({"logdir"}), spark=True),
    "spark dump": Command("reader", lambda inp, out: ["--records", inp, "-o", out], kinds=frozenset({"logdir"}),
                          spark=True),
    "spark stats": Command("reader", lambda inp, out: [inp], kinds=frozenset({"logdir"}), spark=True),
    "spark find": Command("reader", lambda inp, out: ["--key", "key-1", inp], kinds=frozenset({"logdir"}),
                          spark=True),
    "spark diff": Command("checker", lambda inp, out: [inp, inp], kinds=frozenset({"logdir"}), spark=True,
                          exempt={"crc": "a copy compared with itself is equal"}),
    "spark compact": Command("writer", _writer("--include-active", "--now-ms", NOW_MS), kinds=frozenset({"logdir"}),
                             spark=True),
    "spark up-convert": Command("writer", _writer("--to-magic", "2", "--codec", "lz4"), kinds=frozenset({"logdir"}),
                                spark=True),
    "spark down-convert": Command("writer", _writer("--to-magic", "1"), kinds=frozenset({"logdir"}), spark=True),
    "spark recompress": Command("writer", _writer("--codec", "gzip"), kinds=frozenset({"logdir"}), spark=True),
    "spark rebase": Command("writer", _writer("--base-offset", "1000"), kinds=frozenset({"logdir"}), spark=True),
    "spark salvage": Command("writer", lambda inp, out: [inp, "-o", out], kinds=frozenset({"logdir"}), spark=True,
                             data_verdicts={"crc": ({1}, "complete", "as kseg salvage: every batch the damage did not "
                                                                     "touch written, exit 1, something was lost")}),
}


def test_every_command_has_a_row() -> None:
    """The rows are the click group's commands, no more, no fewer: a new command fails here
    until the matrix says what it owes on every input kind and fault."""
    from kseg.cli.main import main

    ctx = click.Context(main)
    names = set(main.list_commands(ctx)) - {"spark"}
    assert names == set(COMMANDS), f"commands without a row: {names - set(COMMANDS)}; rows without a command: " \
                                   f"{set(COMMANDS) - names}"
    try:
        spark = main.get_command(ctx, "spark")
        spark_names = {f"spark {n}" for n in spark.list_commands(click.Context(spark))}
    except ImportError:  # the spark extra is not installed: its rows cannot be checked
        pytest.skip("kseg spark needs the spark extra (pip install 'kseg[spark]')")
    assert spark_names == set(SPARK_COMMANDS)


# --------------------------------------------------------------------------- the inputs


def _batch(first: int, n: int, *, value_size: int = 40) -> bytes:
    recs = [make_record(first + i, T0 + first + i, f"key-{(first + i) % 5}".encode(),
                        (f"value-{first + i}-" + "x" * value_size).encode()) for i in range(n)]
    return build_v2_batch(recs, partition_leader_epoch=0)


def _legacy(first: int, n: int) -> bytes:
    return b"".join(build_legacy_message(first + i, 1, 0, T0 + first + i, f"key-{i % 5}".encode(),
                                         f"legacy-{first + i}".encode()) for i in range(n))


def _write_segment(folder: Path, base: int, raw: bytes) -> Path:
    log = folder / segment_file_name(base)
    log.write_bytes(raw)
    index, timeindex = build_indexes(list(entry_facts(raw, 0)), base, 4096)
    log.with_suffix(".index").write_bytes(index)
    log.with_suffix(".timeindex").write_bytes(timeindex)
    return log


def _partition(folder: Path, *, batches: int = 6, per: int = 10, value_size: int = 40, legacy: bool = False) -> None:
    """Two segments of ``batches`` batches each (v2; ``legacy``: v1 messages)."""
    folder.mkdir(parents=True)
    off = 0
    for _ in range(2):
        raw = b"".join((_legacy if legacy else _batch)(off + b * per, per, **({} if legacy else
                                                                                {"value_size": value_size}))
                       for b in range(batches))
        _write_segment(folder, off, raw)
        off += batches * per


def make_logdir(root: Path, topic: str = "orders") -> Path:
    _partition(root / f"{topic}-0")
    _partition(root / f"{topic}-1", legacy=True)
    return root


FIRST_SEGMENT = Path("orders-0") / segment_file_name(0)


def _damage_crc(log: Path) -> None:
    """A byte of the third batch's last record flipped: its CRC-32C no longer matches."""
    data = bytearray(log.read_bytes())
    at = _batch_starts(data)[2]
    end = at + 12 + struct.unpack_from(">i", data, at + 8)[0]
    data[end - 3] ^= 0x5A
    log.write_bytes(bytes(data))


def _damage_contents(log: Path) -> None:
    """The third batch claims 2^31-1 records under a CRC-32C recomputed to match: impossible
    contents that no checksum catches."""
    data = bytearray(log.read_bytes())
    at = _batch_starts(data)[2]
    end = at + 12 + struct.unpack_from(">i", data, at + 8)[0]
    struct.pack_into(">i", data, at + RECORD_COUNT_POSITION, 2**31 - 1)
    struct.pack_into(">I", data, at + CRC_POSITION, crc32c(bytes(data[at + CRC_START:end])))
    log.write_bytes(bytes(data))


def _truncate(log: Path) -> None:
    """The segment cut in the middle of its last batch (an older segment: not a live tail)."""
    data = log.read_bytes()
    last = _batch_starts(data)[-1]
    log.write_bytes(data[: last + 30])


def _batch_starts(data: bytes | bytearray) -> list[int]:
    out, at = [], 0
    while at + 12 <= len(data):
        out.append(at)
        at += 12 + struct.unpack_from(">i", data, at + 8)[0]
    return out


DATA_FAULTS: dict[str, Callable[[Path], None]] = {
    "crc": _damage_crc, "contents": _damage_contents, "truncated": _truncate}


def _pack(logdir: Path, archive: Path) -> Path:
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
            for p in sorted(logdir.rglob("*")):
                if p.is_file():
                    z.write(p, str(Path("kafka-logs") / p.relative_to(logdir)))
    else:
        with tarfile.open(archive, "w") as t:
            t.add(logdir, arcname="kafka-logs")
    return archive


def _bad_member(archive: Path) -> None:
    """An archive member that cannot be read: a zip member's bytes changed under its CRC-32;
    a tar cut in the middle of the first segment's data."""
    data = bytearray(archive.read_bytes())
    name = str(Path("kafka-logs") / FIRST_SEGMENT).encode()
    if archive.suffix == ".zip":
        at = data.index(name) + len(name) + 200  # inside the member's stored bytes
        data[at] ^= 0xFF
        archive.write_bytes(bytes(data))
    else:
        at = data.index(name) + 512 + 300
        archive.write_bytes(bytes(data[:at]))


@dataclass
class Inputs:
    """Every (kind, fault) input, made once per module."""

    root: Path
    stores: dict[str, Any] = field(default_factory=dict)  # kind -> its running server
    unavailable: dict[str, str] = field(default_factory=dict)  # kind -> why its server is not running

    @property
    def s3(self) -> Any:
        return self.stores.get("s3")

    @property
    def s3_reason(self) -> str:
        return self.unavailable.get("s3", "")

    def local_logdir(self, fault: str) -> Path:
        where = self.root / "logdirs" / fault
        if not where.exists():
            make_logdir(where)
            if fault in DATA_FAULTS:
                DATA_FAULTS[fault](where / FIRST_SEGMENT)
        return where

    def path(self, kind: str, fault: str) -> str:
        logdir = self.local_logdir(fault if fault in DATA_FAULTS else "none")
        if kind == "logdir":
            return str(logdir)
        if kind == "partition":
            return str(logdir / "orders-0")
        if kind in ("file", "stdin"):
            return str(logdir / FIRST_SEGMENT)
        if kind in ("tar", "zip"):
            archive = self.root / "archives" / f"{fault}.{kind}"
            if not archive.exists():
                archive.parent.mkdir(parents=True, exist_ok=True)
                _pack(logdir, archive)
                if fault == "member":
                    _bad_member(archive)
            return str(archive)
        if kind in STORES:
            server = self.stores.get(kind)
            if server is None:
                pytest.skip(f"no {kind}:// server: {self.unavailable.get(kind)}")
            uploaded = self.root / "uploaded" / kind / f"in-{fault}"
            if not uploaded.exists():
                server.upload(logdir, "matrix", uploaded.name)
                uploaded.mkdir(parents=True)
            return f"{kind}://matrix/{uploaded.name}"
        raise AssertionError(kind)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory):
    from servers import Azurite, FakeGcs, SeaweedFS, ServerUnavailable

    root = tmp_path_factory.mktemp("matrix")
    made = Inputs(root)
    with contextlib.ExitStack() as running:
        for kind, server in zip(STORES, (SeaweedFS, FakeGcs, Azurite)):
            try:
                made.stores[kind] = running.enter_context(server(root / kind))
            except ServerUnavailable as e:
                made.unavailable[kind] = str(e)
        yield made


# --------------------------------------------------------------------------- running a cell


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("kseg: error:")]


def finished(args: list[str], code: int, stdout: bytes, stderr: bytes) -> Run:
    """A child's run from its output read by hand (files, pipes): a JSON output is strict JSON."""
    check_strict_output(args, code, stdout)
    return Run(code, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


def _child_env(inputs: Inputs, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    for server in inputs.stores.values():
        env.update(server.env)
    env["TMPDIR"] = str(inputs.root / "tmp")
    (inputs.root / "tmp").mkdir(exist_ok=True)
    env.update(extra or {})
    return env


def kseg(args: list[str], inputs: Inputs, *, stdin: bytes | None = None, timeout: float = 300,
         preexec: Callable[[], None] | None = None, env: dict[str, str] | None = None) -> Run:
    def setup() -> None:
        restore_signals()
        if preexec:
            preexec()

    r = subprocess.run([*KSEG, *args], input=stdin, capture_output=True, timeout=timeout, env=_child_env(inputs, env),
                       preexec_fn=setup)
    return finished(args, r.returncode, r.stdout, r.stderr)


def argv(name: str, cmd: Command, inp: str, out: str) -> list[str]:
    return [*name.split(), *cmd.argv(inp, out)]


def digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` and its content digest (the input must not change)."""
    if root.is_file():
        return {root.name: hashlib.sha256(root.read_bytes()).hexdigest()}
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def leftovers(*folders: Path) -> list[str]:
    """kseg's temporary names under these folders (a run must not leave any)."""
    found = []
    for folder in folders:
        if folder.exists():
            found += [str(p) for p in folder.rglob("*") if ".kseg-tmp" in p.name or p.name.startswith("kseg-out-")]
    return found


def clean_run(run: Run) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert run.code >= 0, f"killed by signal {-run.code}: {run.stderr}"
    assert len(run.error_lines) <= 1, run.stderr
    for line in run.error_lines:
        assert len(line) < 1000, line


# --------------------------------------------------------------------------- faults in the data


# What each role owes on damaged data: (exit codes allowed, output "absent" | "complete").
DATA_VERDICTS: dict[str, dict[str, tuple[set[int], str]]] = {
    "none": {"checker": ({0}, ""), "reader": ({0}, ""), "writer": ({0}, "complete")},
    "crc": {"checker": ({1}, ""), "reader": ({1}, ""), "writer": ({1}, "absent")},
    "contents": {"checker": ({1}, ""), "reader": ({1}, ""), "writer": ({1}, "absent")},
    "truncated": {"checker": ({1}, ""), "reader": ({1}, ""), "writer": ({1}, "absent")},
    # An archive member that cannot be read is unreadable input, never "went away".
    "member": {"checker": ({2}, ""), "reader": ({2}, ""), "writer": ({2}, "absent")},
}
DATA_KINDS = ("file", "partition", "logdir", "tar", "zip", *STORES, "stdin")


def _data_cells() -> list:
    cells = []
    for name, cmd in {**COMMANDS, **SPARK_COMMANDS}.items():
        for fault in DATA_VERDICTS:
            if cmd.spark and fault not in SPARK_FAULTS:
                continue
            for kind in DATA_KINDS:
                if kind not in cmd.kinds or (fault == "member") != (kind in ("tar", "zip")):
                    continue
                marks = [pytest.mark.skip(reason=cmd.exempt[fault])] if fault in cmd.exempt else []
                cells.append(pytest.param(name, kind, fault, id=f"{name}-{kind}-{fault}", marks=marks))
    return cells


@pytest.mark.parametrize("name,kind,fault", _data_cells())
def test_damaged_data(inputs: Inputs, tmp_path: Path, name: str, kind: str, fault: str) -> None:
    cmd = {**COMMANDS, **SPARK_COMMANDS}[name]
    if cmd.spark:
        pytest.importorskip("pyspark", reason="kseg spark needs the spark extra")
    inp = src = inputs.path(kind, fault)
    before = digest(Path(src)) if kind not in STORES else None
    out = tmp_path / f"out{cmd.output_suffix}"
    stdin = None
    if kind == "stdin":
        stdin, inp = Path(inp).read_bytes(), "-"
    run = kseg(argv(name, cmd, inp, str(out)), inputs, stdin=stdin)
    codes, output = cmd.data_verdicts[fault][:2] if fault in cmd.data_verdicts else DATA_VERDICTS[fault][cmd.role]
    clean_run(run)
    assert run.code in codes, f"exit {run.code}, expected {codes}\n{run.stderr[-3000:]}"
    if run.code == 2 or (cmd.role == "writer" and run.code and output == "absent"):
        # verify reports an unreadable file in its report and checks the rest (docs/guides/robustness.md)
        reported = name == "verify" and "cannot read" in run.stdout
        assert len(run.error_lines) == 1 or reported, run.stdout + run.stderr
    if before is not None:
        assert digest(Path(src)) == before, "the input changed"
    if cmd.role == "writer":
        if output == "absent":
            assert not out.exists(), f"{name} wrote an output from damaged input:\n{run.stderr}"
        else:
            assert out.exists()
            check_output(cmd, out, inputs)
    assert leftovers(tmp_path, inputs.root / "tmp") == []


def check_output(cmd: Command, out: Path, inputs: Inputs) -> None:
    """A complete output is what its writer promises: segments that verify passes, or
    Parquet files that read back, each marked as kseg's export."""
    if cmd.output_check == "verify":
        check = kseg(["verify", str(out)], inputs)
        assert check.code == 0, check.stdout + check.stderr
        return
    if cmd.output_check == "bundle":
        import json

        with tarfile.open(out, "r:gz") as t:
            files = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]
        manifest = json.loads(files.pop("kseg-bundle.json"))
        assert {f["name"]: f["sha256"] for f in manifest["files"]} == {
            n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
        check = kseg(["verify", str(out)], inputs)  # read in place; damage taken as it is is reported
        assert check.code in (0, 1) and "Traceback" not in check.stderr, check.stdout + check.stderr
        return
    import pyarrow.parquet as pq

    from kseg.ops.export import EXPORT_KEY

    files = sorted(out.iterdir()) if out.is_dir() else [out]
    assert files and all(f.suffix == ".parquet" for f in files), files
    for f in files:
        table = pq.read_table(f)
        assert EXPORT_KEY in (table.schema.metadata or {}) and table.num_rows > 0, f


def test_state_refuses_an_ordinary_topic(inputs: Inputs) -> None:
    """state's own rows: an ordinary topic is not an internal one (exit 2, one line)."""
    run = kseg(["state", inputs.path("logdir", "none")], inputs)
    clean_run(run)
    assert run.code == 2 and len(run.error_lines) == 1, run.stderr


# --------------------------------------------------------------------------- faults during the run


def _big_logdir(root: Path) -> Path:
    """A log directory that takes a while to read: two partitions of two ~6 MB segments."""
    if not root.exists():
        _partition(root / "orders-0", batches=600, per=20, value_size=500)
        _partition(root / "orders-1", batches=600, per=20, value_size=500)
    return root


RUN_FAULTS = ("vanish", "renamed", "renamed_open", "overwrite", "appended", "shrink", "sigterm", "sigint", "sparse", "hostile",
              "concurrent", "full_disk")
# What each role owes (exit codes allowed) when the fault is made during its run.
RUN_VERDICTS: dict[str, dict[str, set[int]]] = {
    # A later segment deleted as retention does: readers note it and go on; a writer's output
    # would silently lack it, so it stops (the input changed) and publishes nothing.
    "vanish": {"checker": {0}, "reader": {0}, "writer": {2}},
    # A later segment renamed to .deleted as retention does: readers follow it or note it; writers stop.
    "renamed": {"checker": {0}, "reader": {0}, "writer": {2}},
    # The segment being read renamed to .deleted: readers go on reading it; writers stop.
    "renamed_open": {"checker": {0}, "reader": {0}, "writer": {2}},
    # 64 bytes written into the middle of the segment being read: a reader that meets them finds
    # the damage (1), one that had read past them notes the change (0); a writer publishes nothing.
    "overwrite": {"checker": {0, 1}, "reader": {0, 1}, "writer": {1, 2}},
    # A batch appended to the newest segment while it is read (a broker writing): readers are
    # fine (at most a note); a writer's output would not match its input, so it publishes nothing.
    "appended": {"checker": {0}, "reader": {0}, "writer": {2}},
    # The segment being read cut short mid-batch: an error (damaged or changed input), never a signal death.
    "shrink": {"checker": {1, 2}, "reader": {1, 2}, "writer": {1, 2}},
    "sigterm": {"checker": {143}, "reader": {143}, "writer": {143}},
    "sigint": {"checker": {130}, "reader": {130}, "writer": {130}},
    # A 3 GiB sparse .index beside a segment, read under a 1.5 GiB address-space limit.
    "sparse": {"checker": {0, 1}, "reader": {0, 1}, "writer": {0}},
    "hostile": {"checker": {0}, "reader": {0}, "writer": {0}},
    "concurrent": {"writer": {0, 2}},
    "full_disk": {"writer": {2}},
}


# The readers that follow a segment renamed by retention under its new name (the others note it went away).
FOLLOWERS = ("dump", "stats", "find", "txn")


def _run_cells() -> list:
    cells = []
    for name, cmd in COMMANDS.items():
        if cmd.role == "meta":
            continue
        for fault in RUN_FAULTS:
            if cmd.role not in RUN_VERDICTS[fault] or fault in cmd.exempt:
                continue
            if name == "state":
                continue  # its input must be an internal topic: test_state_* rows
            cells.append(pytest.param(name, fault, id=f"{name}-{fault}"))
    return cells


@pytest.mark.parametrize("name,fault", _run_cells())
def test_faults_during_the_run(inputs: Inputs, tmp_path: Path, name: str, fault: str) -> None:
    cmd = COMMANDS[name]
    logdir = _big_logdir(inputs.root / "big")
    work = tmp_path / "logdir"
    shutil.copytree(logdir, work)
    out = tmp_path / f"out{cmd.output_suffix}"
    first = work / FIRST_SEGMENT
    second = work / "orders-0" / segment_file_name(12000)
    expected = RUN_VERDICTS[fault][cmd.role]
    if fault in ("vanish", "renamed", "renamed_open", "overwrite", "appended", "shrink", "sigterm", "sigint"):
        before = digest(work)
        target = second if fault == "appended" else first

        def act(p: subprocess.Popen) -> None:
            if fault == "vanish":
                second.unlink()
                for suffix in (".index", ".timeindex"):
                    second.with_suffix(suffix).unlink()
            elif fault in ("renamed", "renamed_open"):
                for suffix in (".log", ".index", ".timeindex"):
                    part = (second if fault == "renamed" else first).with_suffix(suffix)
                    os.rename(part, part.with_name(part.name + ".deleted"))
            elif fault == "overwrite":
                fd = os.open(first, os.O_WRONLY)
                try:
                    os.pwrite(fd, b"\xab" * 64, first.stat().st_size // 2)
                finally:
                    os.close(fd)
            elif fault == "appended":
                recs = [make_record(24000 + i, T0 + 24000 + i, b"new", b"v") for i in range(3)]
                with open(second, "ab") as f:
                    f.write(build_v2_batch(recs, partition_leader_epoch=0))
            elif fault == "shrink":
                size = first.stat().st_size
                os.truncate(first, size // 3)
            else:
                p.send_signal(signal.SIGTERM if fault == "sigterm" else signal.SIGINT)

        run = _during(argv(name, cmd, str(work), str(out)), inputs, target, act)
        clean_run(run)
        assert run.code in expected, f"exit {run.code}, expected {expected}\n{run.stdout[-2000:]}{run.stderr[-3000:]}"
        if fault in ("sigterm", "sigint"):
            assert digest(work) == before, "the input changed"
            assert len(run.stderr.strip().splitlines()) <= 1, run.stderr
        if cmd.role == "writer" and run.code != 0:
            assert not out.exists(), f"an output was published by a run that failed:\n{run.stderr}"
        said = run.stderr + with_paths(run.stdout)  # verify's findings with their file put back
        if fault == "vanish" and cmd.role != "writer":
            assert f"{second}: the file went away during the run (deleted by retention or renamed by the broker)" \
                in said, said[-3000:]
        if fault == "renamed" and cmd.role != "writer":
            # followed under its new name and said so; verify and diff note that the file went away
            assert f"renamed to {second.name}.deleted during the run (retention)" in said or (
                name not in FOLLOWERS and f"{second}: the file went away" in said), said[-3000:]
            if name == "dump":  # what the renamed segment holds is there
                assert "offsets 12000..12019" in run.stdout
            if name == "find":
                assert "offset 12001 " in run.stdout, run.stdout[-2000:]
        if fault in ("renamed", "renamed_open", "appended") and cmd.role != "writer":
            assert run.error_lines == [], run.stderr
        if fault in ("renamed", "renamed_open", "overwrite", "appended") and cmd.role == "writer":
            assert len(run.error_lines) == 1, run.stderr
            [line] = run.error_lines
            changed = {"renamed": f"kseg: error: {second}: renamed to {second.name}.deleted during the run (retention)",
                       "renamed_open": f"kseg: error: {first}: renamed to {first.name}.deleted during the run "
                                       "(retention)",
                       "overwrite": f"kseg: error: {first}: the file changed during the run (modified ",
                       "appended": f"kseg: error: {second}: the file changed during the run (size "}[fault]
            if fault in ("renamed", "renamed_open") and name == "bundle":
                # bundle takes the companions too: the first of the segment's files it meets renamed
                seg = second if fault == "renamed" else first
                changed = tuple(f"kseg: error: {seg.with_suffix(x)}: renamed to {seg.with_suffix(x).name}.deleted "
                                "during the run (retention)" for x in (".log", ".index", ".timeindex"))
            assert (line.startswith(changed) and line.endswith(
                "nothing was written; run again when the broker is done with it")) or (
                fault == "overwrite" and run.code == 1 and line.startswith(f"kseg: error: {first}: ")), line
        assert leftovers(tmp_path, inputs.root / "tmp") == []
        return
    if fault == "sparse":
        index = first.with_suffix(".index")
        with open(index, "r+b") as f:
            f.truncate(3 << 30)
        limit = 1536 << 20
        run = kseg(argv(name, cmd, str(work), str(out)), inputs,
                   preexec=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
        clean_run(run)
        assert run.code in expected, f"exit {run.code}, expected {expected}\n{run.stderr[-3000:]}"
        return
    if fault == "hostile":
        hostile = tmp_path / "hostile"
        hostile.mkdir()
        os.rename(work / "orders-0", hostile / f"{HOSTILE_TOPIC}-0")
        run = kseg(argv(name, cmd, str(hostile), str(out)), inputs)
        clean_run(run)
        assert run.code in expected, f"exit {run.code}, expected {expected}\n{run.stderr[-3000:]}"
        for stream in (run.stdout, run.stderr):
            assert not any(ch in stream for ch in "\x1b\x07\u202e"), f"raw control characters printed: {stream!r}"
        return
    if fault == "concurrent":
        procs = [subprocess.Popen([*KSEG, *argv(name, cmd, str(work), str(out))], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=_child_env(inputs), preexec_fn=restore_signals)
                 for _ in range(2)]
        runs = [finished(p.args, p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
        for r in runs:
            clean_run(r)
        codes = sorted(r.code for r in runs)
        assert codes == [0, 2], [(r.code, r.stderr) for r in runs]
        loser = next(r for r in runs if r.code == 2)
        assert len(loser.error_lines) == 1
        check_output(cmd, out, inputs)
        assert leftovers(tmp_path, inputs.root / "tmp") == []
        return
    if fault == "full_disk":
        if not IS_ROOT:
            pytest.skip("mounting a small tmpfs to fill up needs root")
        disk = tmp_path / "disk"
        disk.mkdir()
        # One page: the first file written fits, the next does not (compact's output is small).
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(disk)], capture_output=True,
                           text=True)
        if r.returncode:
            pytest.skip(f"cannot mount a small tmpfs to fill up: {r.stderr.strip()}")
        try:
            run = kseg(argv(name, cmd, str(work), str(disk / f"out{cmd.output_suffix}")), inputs)
            clean_run(run)
            assert run.code in expected, f"exit {run.code}, expected {expected}\n{run.stderr[-3000:]}"
            assert len(run.error_lines) == 1, run.stderr
            assert list(disk.iterdir()) == [], list(disk.iterdir())
        finally:
            subprocess.run(["umount", "-l", str(disk)], check=False)
        return
    raise AssertionError(fault)


def _during(args: list[str], inputs: Inputs, target: Path, act: Callable[[subprocess.Popen], None]) -> Run:
    """Run kseg stopped by itself right after it first opens ``target`` (tests/stop_at_open.py),
    ``act``, continue it: the fault is made while the child has the file open, every time. Its
    output goes to files, not pipes: a child blocked on a full pipe would never reach a later
    segment."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([*KSEG_STOPPING, *args], stdout=out, stderr=err,
                                env=_child_env(inputs, {"KSEG_TEST_STOP_AT": str(target)}), preexec_fn=restore_signals)
        if not stopped_itself(proc):
            proc.wait()
            err.seek(0)
            pytest.fail(f"kseg ended without opening {target}: exit {proc.returncode}: "
                        f"{err.read().decode('utf-8', 'replace')[-2000:]}")
        try:
            act(proc)
        finally:
            proc.send_signal(signal.SIGCONT)
        proc.wait(timeout=300)
        out.seek(0)
        err.seek(0)
        return finished(args, proc.returncode, out.read(), err.read())


def test_a_folder_created_at_the_output_during_the_run_is_kept(inputs: Inputs, tmp_path: Path) -> None:
    """An output that appears while a writer runs is never replaced (without --force)."""
    logdir = _big_logdir(inputs.root / "big")
    out = tmp_path / "out"

    def act(p: subprocess.Popen) -> None:
        out.mkdir()
        (out / "precious").write_text("mine")

    run = _during(["recompress", str(logdir), "-o", str(out), "--codec", "zstd"], inputs, logdir / FIRST_SEGMENT, act)
    clean_run(run)
    assert run.code == 2 and len(run.error_lines) == 1, run.stderr
    assert (out / "precious").read_text() == "mine" and sorted(os.listdir(out)) == ["precious"]
    assert leftovers(tmp_path, inputs.root / "tmp") == []


def test_index_rebuild_in_place_needs_force(inputs: Inputs, tmp_path: Path) -> None:
    """No input is modified without --force: index --rebuild beside the segments replaces the
    partition's own indexes, so it is refused without it (exit 2, nothing changed)."""
    work = tmp_path / "orders-0"
    shutil.copytree(Path(inputs.path("partition", "none")), work)
    before = digest(work)
    run = kseg(["index", "--rebuild", "--index-interval-bytes", "1", str(work)], inputs)
    clean_run(run)
    assert run.code == 2 and len(run.error_lines) == 1 and "--force" in run.error_lines[0], run.stderr
    assert digest(work) == before
    run = kseg(["index", "--rebuild", "--index-interval-bytes", "1", "--force", str(work)], inputs)
    assert run.code == 0 and digest(work) != before, run.stderr


# --------------------------------------------------------------------------- user decoders failing

# A user's ``--value-decoder module:function`` (tests/store_faults.py's neighbour, written to the
# cell's folder) fails on the value ``odd`` each way a plugin can; every other value decodes.
DECODER_MODULE = """
class Thing:
    pass

def bytes_(b):
    return b"x" if b == b"odd" else b.decode()

def set_(b):
    return {1} if b == b"odd" else b.decode()

def object_(b):
    return Thing() if b == b"odd" else b.decode()

def nan(b):
    return float("nan") if b == b"odd" else b.decode()

def raises(b):
    if b == b"odd":
        raise ValueError("no \\x1b[31m")
    return b.decode()

def exits(b):
    if b == b"odd":
        raise SystemExit(3)
    return b.decode()

def interrupts(b):
    if b == b"odd":
        raise KeyboardInterrupt
    return b.decode()

def deep(b):
    v = []
    for _ in range(100000):
        v = [v]
    return v if b == b"odd" else b.decode()

def huge(b):
    return 10 ** 5000 if b == b"odd" else b.decode()

def cycle(b):
    v = []
    v.append(v)
    return v if b == b"odd" else b.decode()
"""
# The fault (the decoder's function) -> what the odd value's mark says ("" for the two that are
# not marks: ``nan`` is written as the string "NaN", ``interrupts`` is kseg's Ctrl-C, exit 130).
DECODER_FAULTS: dict[str, str] = {
    "bytes_": "returned a value of type bytes, which JSON cannot hold",
    "set_": "returned a value of type set, which JSON cannot hold",
    "object_": "returned a value of type Thing, which JSON cannot hold",
    "raises": "failed: ValueError: no \\x1b[31m",
    "exits": "failed: SystemExit: 3",
    "deep": "returned a value nested deeper than 500 levels",
    "cycle": "returned a value nested deeper than 500 levels",
    "huge": "returned an integer too large to write as text",
    "nan": "",
    "interrupts": "",
}
DECODER_VALUES = [b"first", b"odd", b"last"]
# The commands that take ``--value-decoder``: their JSON call on the odd partition (``inp``; diff
# compares it with a copy whose odd value is another, so that the record is shown) and the text
# formats also checked. Input kinds: one, the partition folder; a decoder sees values after
# reading, whatever held them (the containers are the data cells' dimension).
DECODING: dict[str, tuple[Callable[[str, str], list[str]], tuple[str, ...]]] = {
    "dump": (lambda inp, other: ["dump", "--records", "--format", "jsonl", inp], ("text", "kafka")),
    "find": (lambda inp, other: ["find", "--from-offset", "0", "--format", "json", inp], ()),
    "diff": (lambda inp, other: ["diff", "--records", "--format", "json", inp, other], ()),
}
DECODING_EXEMPT: dict[str, str] = {
    "spark dump": "a JVM start per cell; its executors render values with dump's code (kseg.render.payload)",
    "spark find": "idem",
    "spark diff": "idem",
}


def _decoder_partitions(root: Path) -> tuple[Path, Path, Path]:
    """(the folder of the decoder module, the odd partition, a copy whose odd value is ``odd2``)."""
    mods = root / "mods"
    if not mods.exists():
        mods.mkdir(parents=True)
        (mods / "userdec.py").write_text(DECODER_MODULE)
        for name, odd in (("a", b"odd"), ("b", b"odd2")):
            folder = root / name / "t-0"
            folder.mkdir(parents=True)
            recs = [make_record(i, T0 + i, b"k%d" % i, v, [("h", v)])
                    for i, v in enumerate([DECODER_VALUES[0], odd, DECODER_VALUES[2]])]
            (folder / segment_file_name(0)).write_bytes(build_v2_batch(recs, base_offset=0))
    return mods, root / "a" / "t-0", root / "b" / "t-0"


def test_every_decoding_command_has_decoder_cells() -> None:
    """A command with ``--value-decoder`` has decoder cells or a written exemption."""
    from kseg.cli.main import main

    def walk(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
        out = []
        for n in group.list_commands(click.Context(group)):
            c = group.get_command(click.Context(group), n)
            out += walk(c, f"{prefix}{n} ") if isinstance(c, click.Group) else [(f"{prefix}{n}", c)]
        return out

    try:
        commands = walk(main)
    except ImportError:
        pytest.skip("kseg spark needs the spark extra")
    decoding = {n for n, c in commands if any(p.name == "value_decoder" for p in c.params)}
    assert decoding == set(DECODING) | set(DECODING_EXEMPT)


def _odd_record(name: str, stdout: str) -> list[dict]:
    """The records the cell's JSON shows: (first, odd, last), or diff's side A of the odd one."""
    docs = [strict_json(x) for x in stdout.splitlines()] if name != "diff" else [strict_json(stdout)]
    if name == "dump":
        return [d for d in docs if d.get("type") == "record"]
    if name == "find":
        return docs
    [part] = docs[0]["partitions"]
    return [r["a"] for r in part["records"]]


@pytest.mark.parametrize("name,fault", [pytest.param(n, f, id=f"{n}-decoder-{f}") for n in DECODING
                                        for f in DECODER_FAULTS])
def test_a_user_decoder_failing(inputs: Inputs, name: str, fault: str) -> None:
    """A user decoder that raises, exits or returns what JSON cannot hold: the odd value is a
    marked per-value error (raw bytes + the reason) and the run goes on; NaN is written as a
    string; Ctrl-C inside it is kseg's interrupt (130); never a traceback."""
    mods, inp, other = _decoder_partitions(inputs.root / "decoders")
    make, formats = DECODING[name]
    args = [*make(str(inp), str(other)), "--value-decoder", f"userdec:{fault}"]
    env = {"PYTHONPATH": os.pathsep.join([str(mods), os.environ.get("PYTHONPATH", "")])}
    run = kseg(args, inputs, env=env)
    clean_run(run)
    if fault == "interrupts":
        # (dump ends silently, find says so: the matrix's sigint cells allow both)
        assert run.code == 130 and set(run.stderr.splitlines()) <= {"kseg: interrupted"}, run.stderr
        return
    assert run.code == (1 if name == "diff" else 0), run.stderr
    recs = _odd_record(name, run.stdout)
    if fault == "nan":
        assert [r["value"] for r in recs] == (["NaN"] if name == "diff" else ["first", "NaN", "last"])
        return
    mark = f"decoder userdec:{fault} {DECODER_FAULTS[fault]}"
    odd = recs[0] if name == "diff" else recs[1]
    if name != "diff":
        assert [r.get("value") for r in recs] == ["first", None, "last"]
    assert base64.b64decode(odd["value_b64"]) == b"odd" and odd["value_error"] == mark, odd
    assert odd["headers"][0]["value_error"] == mark
    if name == "dump":
        assert run.stderr.splitlines() == [f"kseg: note: decoder userdec:{fault} could not decode 2 value(s); "
                                           "shown raw (JSON: *_b64 with *_error)"]
    for fmt in formats:
        text = kseg([a for a in args if a not in ("--format", "jsonl")] + ["--format", fmt], inputs, env=env)
        clean_run(text)
        assert text.code == 0 and "first" in text.stdout and "last" in text.stdout, text.stderr
        assert f"<{mark}>" in text.stdout and "\x1b" not in text.stdout


# --------------------------------------------------------------------------- the object store failing

# How a writer's ``s3://`` output meets the store (tests/store_faults.py makes the child's store
# fail on cue; ``killed`` kills the real server, one started for the cell, mid-publish).
PUBLISH_FAULTS: dict[str, str] = {
    "published": "",  # no fault: the output, its manifest last, and the summary after it
    "store_refuses": "refuse:copy:1",  # copies refused after the first; deletes work: nothing is left
    "store_down": "down:copy:1",  # copies and deletes refused after the first: what is left is named
    "store_killed": "stop:copy:1",  # the server killed after the first copy
}
# How a reader's ``s3://`` input meets the store: the server killed after the second read.
READ_FAULTS: dict[str, str] = {"store_killed_reading": "stop:read:2"}
# Writers whose output cannot be an object store, each with the reason (none today: every
# writer's -o goes through kseg.cli.storage.remote_output). kseg spark's writers stage through
# their own prefix: test_publish.py's test_spark_staging_left_is_named, in-process (a JVM per
# cell is the reason the spark rows take the data faults only).
PUBLISH_EXEMPT: dict[str, str] = {
    "bundle": "one local .tar.gz file: an object-store output is a usage error (tests/test_bundle.py)",
}
MANIFEST = ".kseg-manifest.json"
PUBLISH_LINE = re.compile(r"^kseg: error: (?P<out>s3://\S+): cannot publish: (?P<why>.+); "
                          r"(?P<rest>left: .*|nothing was left behind)$")
FAULTY = [sys.executable, "-c", "import store_faults; store_faults.main()"]


def _publish_cells() -> list:
    return [pytest.param(name, fault, id=f"{name}-s3out-{fault}",
                         marks=[pytest.mark.skip(reason=PUBLISH_EXEMPT[name])] if name in PUBLISH_EXEMPT else [])
            for name, cmd in COMMANDS.items() if cmd.role == "writer" for fault in PUBLISH_FAULTS]


def _read_cells() -> list:
    return [pytest.param(name, fault, id=f"{name}-s3-{fault}", marks=[pytest.mark.skip(reason=cmd.exempt[fault])]
                         if fault in cmd.exempt else [])
            for name, cmd in COMMANDS.items() if cmd.role in ("checker", "reader") and "s3" in cmd.kinds
            for fault in READ_FAULTS]


class Victim:
    """A SeaweedFS server of the cell's own, to be killed (the module's server serves every other cell)."""

    def __init__(self, root: Path):
        from servers import SeaweedFS

        self.server = SeaweedFS(root)
        self.server.__enter__()

    def kill(self) -> None:
        proc = self.server.proc
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


class Victims:
    """Servers to kill, one per cell, the next one started in the background while a cell runs
    (a server's start is most of a cell's time)."""

    def __init__(self, root: Path):
        self.root, self.n = root, 0
        self.next: concurrent.futures.Future | None = None
        self.pool = concurrent.futures.ThreadPoolExecutor(1)

    def _start(self) -> concurrent.futures.Future:
        self.n += 1
        return self.pool.submit(Victim, self.root / f"victim-{self.n}")

    def take(self) -> Victim:
        from servers import ServerUnavailable

        current, self.next = self.next or self._start(), self._start()
        try:
            return current.result()
        except ServerUnavailable as e:
            pytest.skip(f"no S3-compatible server: {e}")

    def close(self) -> None:
        if self.next is not None:
            try:
                self.next.result().kill()
            except Exception:  # noqa: BLE001 - it never started: nothing to stop
                pass
        self.pool.shutdown()


@pytest.fixture(scope="module")
def victims(tmp_path_factory: pytest.TempPathFactory):
    made = Victims(tmp_path_factory.mktemp("victims"))
    yield made
    made.close()


def _faulty_run(args: list[str], env: dict[str, str], spec: str, victim: Victim | None) -> Run:
    """Run kseg with its store failing as ``spec`` says; with a victim, kill it when the child
    stops itself, and let the child go on against the dead server."""
    env = dict(env, KSEG_TEST_STORE_FAULT=spec, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).parent), env.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([*FAULTY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=restore_signals)
    if victim is not None:
        try:
            assert stop_when(proc, lambda: store_faults.stopped(proc.pid), timeout=120), \
                "the run ended before the store could be killed:\n" + proc.communicate()[1].decode()
        finally:
            victim.kill()
            proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    return finished(args, proc.returncode, out, err)


def _takes_json(name: str) -> bool:
    """Whether the command has ``--format json`` (its summary as a JSON document)."""
    from kseg.cli.main import main

    command = main.get_command(click.Context(main), name)
    return any("--format" in p.opts and "json" in getattr(p.type, "choices", ()) for p in command.params)


def _published_run(args: list[str], env: dict[str, str], fs: object, out: str) -> tuple[Run, dict[str, int] | None]:
    """Run kseg publishing to the store, stopped by itself right after its first bytes on stdout
    or stderr (tests/store_faults.py): the run, and the objects under ``out`` at that moment
    (None: it said nothing)."""
    env = dict(env, KSEG_TEST_STOP_AT_OUTPUT="1", PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).parent), env.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([*FAULTY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            preexec_fn=restore_signals)
    there = None
    try:
        if stopped_itself(proc):
            there = _keys(fs, out)
    finally:
        proc.send_signal(signal.SIGCONT)
    stdout, stderr = proc.communicate(timeout=300)
    return finished(args, proc.returncode, stdout, stderr), there


def _keys(fs: object, prefix: str) -> dict[str, int]:
    """Every object under ``prefix`` (relative key -> size)."""
    from pyarrow import fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))  # type: ignore[attr-defined]
    return {i.path[len(prefix) + 1:]: i.size for i in infos if i.type == pafs.FileType.File}


@pytest.mark.parametrize("name,fault", _publish_cells())
def test_publishing_to_an_object_store(inputs: Inputs, victims: Victims, tmp_path: Path, name: str,
                                       fault: str) -> None:
    """A writer's ``s3://`` output: complete with its manifest written last and the summary after
    it; or, the store failing mid-publish, exit 2, nothing on stdout, one line naming what is left
    (output and staging prefixes) and the command that removes it, and no manifest."""
    cmd = COMMANDS[name]
    logdir = inputs.path("logdir", "none")
    victim = victims.take() if fault == "store_killed" else None
    if victim is None and inputs.s3 is None:
        pytest.skip(f"no S3-compatible server: {inputs.s3_reason}")
    store = victim.server if victim else inputs.s3
    fs = store.fs()  # type: ignore[attr-defined]
    fs.create_dir("matrix-out")
    prefix = f"matrix-out/{name}-{fault}"
    fs.delete_dir_contents(prefix, missing_dir_ok=True)
    env = dict(_child_env(inputs), **store.env)  # type: ignore[attr-defined]
    args = argv(name, cmd, logdir, f"s3://{prefix}/out")
    try:
        if fault == "published":
            json_summary = _takes_json(name)
            run, first_said = _published_run([*args, "--format", "json"] if json_summary else args, env, fs,
                                             f"{prefix}/out")
        else:
            run = _faulty_run(args, env, PUBLISH_FAULTS[fault], victim)
    finally:
        if victim:
            victim.kill()
    clean_run(run)
    assert leftovers(tmp_path, inputs.root / "tmp") == []
    if fault == "published":
        assert run.code == 0, run.stderr
        # the child stopped itself at its first word: the output was complete, its manifest there
        assert first_said is None or MANIFEST in first_said, (run.stdout, run.stderr, first_said)
        if json_summary:  # the summary on stdout, strict JSON, printed after the publish (above)
            assert first_said is not None and isinstance(strict_json(run.stdout), dict), run.stdout
        there = _keys(fs, f"{prefix}/out")
        assert MANIFEST in there and set(_keys(fs, prefix)) == {f"out/{k}" for k in there}, there  # no staging
        if cmd.output_check == "verify":
            check = kseg(["verify", f"s3://{prefix}/out"], inputs)
            assert check.code == 0 and f"{MANIFEST}: ok (manifest)" in kseg(
                ["verify", "-v", f"s3://{prefix}/out"], inputs).stdout, check.stdout + check.stderr
        return
    assert run.code == 2 and run.stdout == "", (run.code, run.stdout, run.stderr)
    [line] = run.stderr.splitlines()
    m = PUBLISH_LINE.match(line)
    assert m and m["out"] == f"s3://{prefix}/out", line
    if fault == "store_refuses":
        assert m["rest"] == "nothing was left behind" and _keys(fs, prefix) == {}, (line, _keys(fs, prefix))
        return
    endpoint = store.env["AWS_ENDPOINT_URL_S3"]  # type: ignore[attr-defined]
    urls = re.findall(rf"aws s3 rm --recursive --endpoint-url {re.escape(endpoint)} s3://(\S+)/", m["rest"])
    assert m["rest"].startswith("left: ") and urls, line
    assert all(u == f"{prefix}/out" or re.fullmatch(rf"{re.escape(prefix)}/\.out\.kseg-tmp-[0-9a-f]{{12}}", u)
               for u in urls), urls
    if fault == "store_killed":
        return  # the server is gone: what it holds cannot be listed (the manifest comes last, after every copy)
    assert m["rest"].startswith(f"left: s3://{prefix}/out/ (1 of "), line
    assert MANIFEST not in _keys(fs, f"{prefix}/out")  # what is left cannot pass for complete
    for url in urls:  # the command named removes everything the run left
        fs.delete_dir(url)
    assert _keys(fs, prefix) == {}


@pytest.mark.parametrize("name,fault", _read_cells())
def test_store_killed_while_reading(inputs: Inputs, victims: Victims, tmp_path: Path, name: str, fault: str) -> None:
    """An ``s3://`` input whose server dies mid-run: one read error naming the object (exit 2),
    never "went away" (an object store that stops answering is not retention)."""
    cmd = COMMANDS[name]
    victim = victims.take()
    try:
        url = victim.server.upload(Path(inputs.path("logdir", "none")), "victim", "in")
        env = dict(_child_env(inputs), **victim.server.env)
        run = _faulty_run(argv(name, cmd, url, str(tmp_path / "out")), env, READ_FAULTS[fault], victim)
    finally:
        victim.kill()
    clean_run(run)
    assert run.code == 2, (run.code, run.stderr)
    assert "went away" not in run.stderr + run.stdout
    if name == "verify":  # verify reports each unreadable file in its report and checks the rest
        unread = [x for x in with_paths(run.stdout).splitlines()
                  if x.startswith(f"  error: {url}/") and ": cannot read: " in x]
        assert unread and not run.error_lines, run.stdout + run.stderr
        return
    [line] = run.error_lines
    assert line.startswith(f"kseg: error: {url}/") and ": cannot read: " in line, line


def test_every_fault_has_a_verdict_for_every_role() -> None:
    """The fault tables cover each other: a fault listed without a verdict, or a verdict for
    a fault nobody makes, fails here."""
    assert set(DATA_VERDICTS) | set(RUN_VERDICTS) == {"none", *DATA_FAULTS, "member", *RUN_FAULTS}
    for fault, verdicts in DATA_VERDICTS.items():
        assert set(verdicts) == {"checker", "reader", "writer"}, fault


if __name__ == "__main__":  # pragma: no cover - python tests/test_failure_matrix.py -> pytest on this file
    raise SystemExit(pytest.main([__file__, *sys.argv[1:]]))
