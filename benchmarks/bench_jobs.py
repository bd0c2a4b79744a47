"""``kseg verify``, ``kseg stats``, ``kseg dump --format jsonl --records``, ``kseg find`` and two writers,
``kseg recompress --codec lz4`` and ``kseg export`` (Parquet), with ``-j 1`` against ``-j N`` (default 2) on a generated log
directory of 8 partitions (default 64 MiB each in 32 MiB segments, with indexes), and a check that
every run printed (the writer: wrote) the same bytes.

    python benchmarks/bench_jobs.py [--jobs 2] [--mib-per-partition 64] [--repeat 3] [--json out.json]
    python benchmarks/bench_jobs.py --partitions 1 --mib-per-partition 512 --segment-mib 512 --kind v2-lz4 \
        --commands verify,find,stats,dump

With ``--spark`` each command also runs as ``kseg spark <command> --master local[N]`` (the same
plan / run / merge on Spark's executors; its JVM start-up, several seconds, is in its wall time).

The second form is one large partition of one segment: ``verify``, ``find``, ``stats`` and
``dump`` cut it into slices at boundaries its offset index names and read them on the workers
(their ``plan``); with ``--no-index`` (the .log files alone) at entries found by following their
lengths from the start.

Figures are wall seconds of the ``kseg`` command in its own process (start-up included; best of
``--repeat``, the machine may be shared), the data read from the page cache. The goal (issue:
one operation, many executors): ``verify -j 2`` >= 1.7x ``-j 1`` on 2 cores, the same report.
The data is the Spark benchmark's (``bench_spark.generate``: v2 none/gzip/snappy/lz4/zstd,
v1 gzip/none, v0 snappy), generated once under ``bench-data/`` (``KSEG_BENCH_DATA``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_spark import generate, warm  # noqa: E402
from common import DEFAULT_DATA_DIR, machine_info  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from kseg.ops.executors import Operation, execute, parse_jobs  # noqa: E402

GOAL = 1.7
PARTITIONS = 8
COMMANDS = {"verify": ["verify"], "stats": ["stats"], "dump": ["dump", "--format", "jsonl", "--records"],
            "find": ["find", "--value-regex", "^no such value$"], "recompress": ["recompress", "--codec", "lz4"],
            "export": ["export"]}
WRITERS = {"recompress", "export"}  # their output is a folder (-o), compared by the digest of its files
NOT_ON_SPARK = {"export"}  # no ``kseg spark`` command


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            digest.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return digest.hexdigest()


def kseg(args: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + sys, its workers included), exit code and a digest of
    stdout of one ``kseg`` run."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", "from kseg.cli import run; run()", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    digest = hashlib.sha256()
    assert p.stdout is not None
    for chunk in iter(lambda: p.stdout.read(1 << 16), b""):
        digest.update(chunk)
    _, status, usage = os.wait4(p.pid, 0)  # the child's usage includes its reaped workers
    return (time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status),
            digest.hexdigest())


@dataclass(frozen=True)
class _Spin:
    i: int
    weight: int = 1


def _spin_plan(n: int, _: None) -> list[_Spin]:
    return [_Spin(i) for i in range(n)]


def _spin_run(unit: _Spin, _: None) -> int:
    x = 0
    for k in range(2_000_000):
        x += k
    return x


def _spin_merge(partials: Iterable[int], _: None) -> int:
    return sum(partials)


def ceiling(jobs: int) -> float:
    """What the machine gives a pool right now: pure-Python busy work (no I/O, nothing of
    kseg's) through the same executors, serial time over pool time. On a busy machine with
    the kernel's autogroup scheduling (one CPU share per session, however many processes),
    this falls towards 1x and no pool can do better."""
    op = Operation("spin", _spin_plan, _spin_run, _spin_merge)
    times = []
    for j in (1, jobs):
        t0 = time.perf_counter()
        execute(op, 4 * jobs, None, j)
        times.append(time.perf_counter() - t0)
    return times[0] / times[1]


def logs_only(root: Path) -> Path:
    """A tree of symlinks to ``root``'s .log files alone, as when segments are copied without
    their companions."""
    alone = root.with_name(root.name + "-logs-only")
    shutil.rmtree(alone, ignore_errors=True)
    for log in root.rglob("*.log"):
        link = alone / log.relative_to(root)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(log)
    return alone


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="2", help="the -j to compare with -j 1 (a count or auto)")
    ap.add_argument("--partitions", type=int, default=PARTITIONS)
    ap.add_argument("--mib-per-partition", type=int, default=64)
    ap.add_argument("--segment-mib", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--commands", default="verify,stats,dump,find,recompress,export")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--spark", action="store_true", help="also kseg spark <command> --master local[N]")
    ap.add_argument("--no-index", action="store_true", help="the .log files alone (symlinked beside the data, "
                    "no .index/.timeindex): a large log is cut where its entries' lengths lead")
    ap.add_argument("--kind", default=None, help="every partition of this kind, as v2-lz4 (default: the "
                    "Spark benchmark's eight kinds in turn)")
    args = ap.parse_args()
    n = args.partitions
    kinds = None
    if args.kind:
        magic, codec = args.kind.split("-", 1)
        kinds = [(int(magic.lstrip("v")), codec)]
    kind = f"-{args.kind}" if args.kind else ""
    root = args.data_dir / f"jobs-logdir-{n}p-{args.mib_per_partition}m-{args.segment_mib}m{kind}"
    meta = generate(root, n * (args.mib_per_partition << 20), n, args.segment_mib << 20, kinds)
    warm(root)
    if args.no_index:
        root = logs_only(root)
    print(f"{root}: {meta['bytes'] / 1e6:.0f} MB, {meta['records']:,} records, {n} partitions, "
          f"{len(list(root.rglob('*.log')))} segments; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    out: dict = {"machine": machine_info(), "data": meta, "jobs": args.jobs, "runs": {}}
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    before = ceiling(parse_jobs(args.jobs))
    print(f"machine ceiling now: {before:.2f}x for -j {args.jobs} on busy work"
          + (" (autogroup scheduling on)" if autogroup.is_file() and autogroup.read_text().strip() == "1" else ""),
          flush=True)
    failed = False
    for name in args.commands.split(","):
        best: dict[str, float] = {}
        cpu: dict[str, float] = {}
        outputs = set()
        on_spark_too = args.spark and name not in NOT_ON_SPARK
        variants = ("1", args.jobs, "spark") if on_spark_too else ("1", args.jobs)
        for _ in range(args.repeat):
            for j in variants:
                out_dir = root.parent / f".bench-jobs-{name}-{j}"
                writes = ["-o", str(out_dir)] if name in WRITERS else []
                shutil.rmtree(out_dir, ignore_errors=True)
                how = (["spark", *COMMANDS[name], "--master", f"local[{parse_jobs(args.jobs)}]"] if j == "spark"
                       else [*COMMANDS[name], "-j", j])
                seconds, cpu_seconds, code, digest = kseg([*how, str(root), *writes])
                if writes:
                    digest = tree_digest(out_dir)
                    shutil.rmtree(out_dir, ignore_errors=True)
                outputs.add((code, digest))
                if seconds < best.get(j, float("inf")):
                    best[j], cpu[j] = seconds, cpu_seconds
        ratio = best["1"] / best[args.jobs]
        same = len(outputs) == 1
        failed |= not same
        out["runs"][name] = {"j1_seconds": round(best["1"], 3), f"j{args.jobs}_seconds": round(best[args.jobs], 3),
                             "j1_cpu_seconds": round(cpu["1"], 3), f"j{args.jobs}_cpu_seconds": round(cpu[args.jobs], 3),
                             "ratio": round(ratio, 2), "same_output": same, "exit": sorted(c for c, _ in outputs)}
        goal = f" (goal >= {GOAL}x)" if name == "verify" else ""
        # CPU / wall: the cores a run actually had (under 2 on a machine busy with other work)
        on_spark = ""
        if on_spark_too:
            out["runs"][name]["spark_seconds"] = round(best["spark"], 3)
            on_spark = (f"  spark local[{parse_jobs(args.jobs)}] {best['spark']:7.2f} s "
                        f"(-j {args.jobs} is {best['spark'] / best[args.jobs]:.2f}x faster)")
        print(f"{name:7} -j 1 {best['1']:7.2f} s ({cpu['1'] / best['1']:.2f} cores)  "
              f"-j {args.jobs} {best[args.jobs]:7.2f} s ({cpu[args.jobs] / best[args.jobs]:.2f} cores)  "
              f"ratio {ratio:.2f}x{goal}{on_spark}  {'same output' if same else 'OUTPUT DIFFERS'}", flush=True)
    after = ceiling(parse_jobs(args.jobs))
    out["ceiling"] = [round(before, 2), round(after, 2)]
    print(f"machine ceiling after: {after:.2f}x; load {os.getloadavg()[0]:.2f} (a shared machine makes these noisy)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
