#!/usr/bin/env python3
"""Write (or check) the Kafka corpus: files real brokers wrote and what Kafka's own tool prints for them.

For each pinned release (``oracle/kafka-<release>/pom.xml``) this starts a real
broker on loopback (see ``tests/kafka/brokers.py``), sends the traffic of
``tests/kafka/traffic.py``, reads every data topic back with a consumer, stops
the broker cleanly and copies its log directory into ``fixtures/kafka-<release>/``:

    logdir/                  the broker's files (no .lock, meta.properties or shutdown marker); the
                             partitions traffic.RUNNING_COPIES as copied before the clean stop
    records.json             partition -> the records the consumer received
    golden/manifest.json     one entry per file x kafka-dump-log.sh flag combination:
                             the command, its exit code and output file names
    golden/<file>.<combo>.stdout / .stderr
    golden-kafka-<tool>/     the same for a newer release's DumpLogSegments on these files
                             (Kafka 4's tool on the 2.8 and 3.9 brokers' v0/v1/v2 segments)

Brokers are not deterministic (ids, timings), so a new run writes a new
corpus; ``--check`` instead re-runs the release's DumpLogSegments on the
committed files and asserts every committed output is unchanged, which is.

    .venv/bin/python oracle/generate.py                 # every release, new corpus
    .venv/bin/python oracle/generate.py --release 4     # one release
    .venv/bin/python oracle/generate.py --check         # re-run DumpLogSegments, compare
    .venv/bin/python oracle/generate.py --goldens-only  # keep logdir, rewrite golden/
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "kafka"))

import brokers  # noqa: E402
import checks  # noqa: E402
import traffic  # noqa: E402

FIXTURES = REPO / "fixtures"
SKIPPED_NAMES = {".lock", "meta.properties", ".kafka_cleanshutdown"}


def corpus_dir(release: str) -> Path:
    return FIXTURES / f"kafka-{release}"


def copy_logdir(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=lambda _d, names: [n for n in names if n in SKIPPED_NAMES])


def run_broker(release: str, dst: Path) -> dict:
    """Start a broker, send the traffic, consume, stop it; copy its log dir to ``dst``."""
    with tempfile.TemporaryDirectory(prefix=f"kseg-kafka-{release}-") as tmp:
        logdir, received = traffic.run_release(release, Path(tmp))
        copy_logdir(logdir, dst)
        for name in traffic.RUNNING_COPIES:  # as the running broker had them: preallocated indexes
            shutil.rmtree(dst / name)
            shutil.copytree(traffic.running_copy_dir(Path(tmp)) / name, dst / name)
    return received


def golden_name(rel: str, combo: str) -> str:
    return f"{rel}.{combo}"


#: (corpus release, DumpLogSegments release): which tool's outputs are kept for which files
GOLDEN_SETS = (("2.8", "2.8"), ("3.6", "3.6"), ("3.9", "3.9"), ("4.0", "4.0"), ("4.1", "4.1"), ("4.2", "4.2"),
               ("4", "4"), ("4.4", "4.4"), ("3.9", "4"), ("2.8", "4"))
#: (corpus, tool) -> the only suffixes dumped (all otherwise): Kafka 4 on the 2.8 broker's files is kept for
#: its index verdicts (the 2.8 indexes are the ones its walk reports on), which keeps the corpus small
GOLDEN_SUFFIXES = {("2.8", "4"): (".index", ".timeindex")}


def golden_dir(corpus: str, tool: str) -> Path:
    return corpus_dir(corpus) / ("golden" if corpus == tool else f"golden-kafka-{tool}")


def write_goldens(corpus: str, tool: str) -> None:
    root = corpus_dir(corpus)
    golden = golden_dir(corpus, tool)
    if golden.exists():
        shutil.rmtree(golden)
    manifest = []
    for r in checks.kafka_dumps(tool, root / "logdir", suffixes=GOLDEN_SUFFIXES.get((corpus, tool))):
        name = golden_name(r["file"], r["combo"])
        for stream in ("stdout", "stderr"):
            path = golden / f"{name}.{stream}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(r[stream])
        manifest.append({"file": r["file"], "combo": r["combo"], "command": r["command"], "exit": r["exit"],
                         "stdout": f"{name}.stdout", "stderr": f"{name}.stderr"})
    doc = {"release": tool, "kafka_version": brokers.version(tool), "main_class": brokers.RELEASES[tool][1],
           "written_by": f"Kafka {brokers.version(corpus)} broker", "cwd": "logdir",
           "note": f"absolute paths under the log dir are written as {checks.LOGDIR}/", "entries": manifest}
    (golden / "manifest.json").write_text(json.dumps(doc, indent=1) + "\n")


def check_goldens(corpus: str, tool: str) -> list[str]:
    root = corpus_dir(corpus)
    golden = golden_dir(corpus, tool)
    doc = json.loads((golden / "manifest.json").read_text())
    assert doc["kafka_version"] == brokers.version(tool), "outputs of another Kafka version"
    expected = {(e["file"], e["combo"]): e for e in doc["entries"]}
    problems = []
    for r in checks.kafka_dumps(tool, root / "logdir", suffixes=GOLDEN_SUFFIXES.get((corpus, tool))):
        e = expected.pop((r["file"], r["combo"]), None)
        if e is None:
            problems.append(f"{r['file']} {r['combo']}: not in the manifest")
            continue
        for stream in ("stdout", "stderr"):
            if (golden / e[stream]).read_bytes() != r[stream]:
                problems.append(f"{r['file']} {r['combo']}: {stream} differs")
        if e["exit"] != r["exit"]:
            problems.append(f"{r['file']} {r['combo']}: exit {r['exit']}, manifest says {e['exit']}")
    problems += [f"{f} {c}: in the manifest, not dumped" for f, c in expected]
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", action="append", choices=sorted(brokers.RELEASES))
    ap.add_argument("--check", action="store_true", help="re-run DumpLogSegments on the committed corpus")
    ap.add_argument("--goldens-only", action="store_true", help="keep the log dirs, rewrite golden/")
    args = ap.parse_args()
    failed = False
    for release in args.release or sorted(brokers.RELEASES):
        t0 = time.monotonic()
        sets = [(c, t) for c, t in GOLDEN_SETS if c == release]
        for _, tool in sets:
            brokers.fetch(tool)
        if args.check:
            for corpus, tool in sets:
                problems = check_goldens(corpus, tool)
                for p in problems:
                    print(f"{golden_dir(corpus, tool).relative_to(REPO)}: {p}", file=sys.stderr)
                failed |= bool(problems)
                print(f"{golden_dir(corpus, tool).relative_to(REPO)}: {'FAIL' if problems else 'ok'} "
                      f"({time.monotonic() - t0:.0f}s)")
            continue
        root = corpus_dir(release)
        if not args.goldens_only:
            received = run_broker(release, root / "logdir")
            (root / "records.json").write_text(json.dumps(received, indent=0, sort_keys=True) + "\n")
        for corpus, tool in sets:
            write_goldens(corpus, tool)
        print(f"kafka-{release}: written to {root.relative_to(REPO)} ({time.monotonic() - t0:.0f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
