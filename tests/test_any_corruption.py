"""Any one file of a partition or log directory damaged, every writer of the failure matrix run on it.

The failure matrix damages batches in ways chosen by hand; this property damages any file a
broker keeps (segments, indexes, snapshots, checkpoints, partition.metadata, quorum-state,
KRaft snapshots, the bootstrap) anywhere, in the ways disks and people do (a bit flipped,
bytes zeroed or replaced, a cut, a tail appended, an empty file), on fixtures brokers of several
releases wrote, and holds every writer to what its verdict says:

- never a traceback, never an exit code outside 0, 1, 2;
- a writer that exits 0 (or repair and salvage, which exit 1 when they mended something)
  leaves an output that ``kseg verify`` passes: no damaged file is carried silently;
- a rewrite never exits 0 where ``kseg verify`` finds errors in the input's segments.

It found the damaged leader-epoch-checkpoint, quorum-state and bootstrap.checkpoint that repair,
salvage and the rewrites carried over as if they were sound.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from click.testing import CliRunner
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_failure_matrix import COMMANDS

from kseg.cli.main import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
INPUTS = [FIXTURES / "kafka-4.2" / "logdir", FIXTURES / "kafka-2.8" / "logdir" / "txn-0",
          FIXTURES / "kafka-4.2" / "logdir" / "__cluster_metadata-0", FIXTURES / "logdir" / "v1-gzip-0",
          FIXTURES / "logdir" / "mixed-magic-0", FIXTURES / "logdir" / "v2-txn-0"]
# The writers of the failure matrix that take segments (build reads JSON lines).
WRITERS = sorted(name for name, c in COMMANDS.items() if c.role == "writer" and name != "build")
MENDERS = {"repair", "salvage"}  # exit 1 when they cut, dropped or rebuilt something, with an output
REWRITES = {"up-convert", "down-convert", "recompress", "rebase", "compact"}
EXTRA = {"down-convert": ["--codec", "gzip"]}  # zstd batches cannot be held by magic 1


def damage(data: bytes, kind: str, at: float, size: int, junk: bytes) -> bytes:
    b = bytearray(data)
    i = int(at * len(b)) if b else 0
    if kind == "flip" and b:
        b[min(i, len(b) - 1)] ^= 1 << (size % 8)
    elif kind == "zero":
        b[i:i + size] = bytes(len(b[i:i + size]))
    elif kind == "junk":
        b[i:i + len(junk)] = junk[:len(b[i:i + len(junk)])]
    elif kind == "cut":
        del b[i:]
    elif kind == "append":
        b += junk or bytes(size)
    elif kind == "empty":
        b.clear()
    return bytes(b)


def run(*args: str) -> tuple[int, str, BaseException | None]:
    r = CliRunner().invoke(main, list(args))
    crashed = r.exception if r.exception is not None and not isinstance(r.exception, SystemExit) else None
    return r.exit_code, r.output, crashed


def log_errors(folder: Path) -> bool | None:
    """Whether verify finds errors in the segments, the .log files every rewrite reads (None: it
    cannot read the input)."""
    code, out, crashed = run("verify", "--format", "json", str(folder))
    assert crashed is None, crashed
    if code == 2:
        return None
    return any(p["severity"] == "error" for f in json.loads(out)["files"] if f["file"].endswith(".log")
               for p in f["problems"])


@given(source=st.sampled_from(INPUTS), pick=st.floats(0, 1, exclude_max=True),
       kind=st.sampled_from(["flip", "zero", "junk", "cut", "append", "empty"]), at=st.floats(0, 1, exclude_max=True),
       size=st.integers(1, 64), junk=st.binary(max_size=40))
@settings(examples(40))
def test_no_writer_carries_damage_silently(source, pick, kind, at, size, junk) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / source.name
        shutil.copytree(source, src)
        files = sorted(p for p in src.rglob("*") if p.is_file())
        target = files[int(pick * len(files))]
        target.write_bytes(damage(target.read_bytes(), kind, at, size, junk))
        what = f"{kind} of {target.relative_to(src.parent)}"
        bad_logs = log_errors(src)
        for writer in WRITERS:
            cmd = COMMANDS[writer]
            out = Path(tmp) / f"out-{writer}{cmd.output_suffix}"
            code, text, crashed = run(writer, *cmd.argv(str(src), str(out)), *EXTRA.get(writer, []))
            assert crashed is None, (what, writer, crashed)
            assert code in (0, 1, 2), (what, writer, code, text)
            if writer in REWRITES and bad_logs and code == 0:
                raise AssertionError(f"{what}: verify finds damaged segments, {writer} exits 0: {text}")
            written = code == 0 or (writer in MENDERS and code == 1 and out.exists())
            if written and cmd.output_check == "verify":
                vcode, vtext, vcrashed = run("verify", str(out))
                assert vcrashed is None and vcode == 0, f"{what}: {writer} exits {code}; its output: {vtext}"
