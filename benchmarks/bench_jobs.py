"""``kseg verify`` and ``kseg stats`` with ``-j 1`` against ``-j N`` (default 2) on a generated
log directory of 8 partitions (default 64 MiB each in 32 MiB segments, with indexes), and a
check that every run printed the same bytes.

    python benchmarks/bench_jobs.py [--jobs 2] [--mib-per-partition 64] [--repeat 3] [--json out.json]

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
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_spark import generate, warm  # noqa: E402
from common import DEFAULT_DATA_DIR, machine_info  # noqa: E402

GOAL = 1.7
PARTITIONS = 8
COMMANDS = {"verify": ["verify"], "stats": ["stats"]}


def kseg(args: list[str]) -> tuple[float, int, str]:
    """Wall seconds, exit code and a digest of stdout of one ``kseg`` run."""
    env = {**os.environ, "PYTHONPATH": str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", "from kseg.cli import run; run()", *args], capture_output=True,
                       env=env)
    return time.perf_counter() - t0, p.returncode, hashlib.sha256(p.stdout).hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="2", help="the -j to compare with -j 1 (a count or auto)")
    ap.add_argument("--mib-per-partition", type=int, default=64)
    ap.add_argument("--segment-mib", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--commands", default="verify,stats")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    root = args.data_dir / f"jobs-logdir-{PARTITIONS}p-{args.mib_per_partition}m-{args.segment_mib}m"
    meta = generate(root, PARTITIONS * (args.mib_per_partition << 20), PARTITIONS, args.segment_mib << 20)
    warm(root)
    print(f"{root}: {meta['bytes'] / 1e6:.0f} MB, {meta['records']:,} records, {PARTITIONS} partitions, "
          f"{len(list(root.rglob('*.log')))} segments; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    out: dict = {"machine": machine_info(), "data": meta, "jobs": args.jobs, "runs": {}}
    failed = False
    for name in args.commands.split(","):
        best: dict[str, float] = {}
        outputs = set()
        for _ in range(args.repeat):
            for j in ("1", args.jobs):
                seconds, code, digest = kseg([*COMMANDS[name], "-j", j, str(root)])
                outputs.add((code, digest))
                best[j] = min(best.get(j, float("inf")), seconds)
        ratio = best["1"] / best[args.jobs]
        same = len(outputs) == 1
        failed |= not same
        out["runs"][name] = {"j1_seconds": round(best["1"], 3), f"j{args.jobs}_seconds": round(best[args.jobs], 3),
                             "ratio": round(ratio, 2), "same_output": same, "exit": sorted(c for c, _ in outputs)}
        goal = f" (goal >= {GOAL}x)" if name == "verify" else ""
        print(f"{name:7} -j 1 {best['1']:7.2f} s  -j {args.jobs} {best[args.jobs]:7.2f} s  "
              f"{meta['bytes'] / 1e6 / best[args.jobs]:6.0f} MB/s  ratio {ratio:.2f}x{goal}  "
              f"{'same output' if same else 'OUTPUT DIFFERS'}", flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f} (a shared machine makes these noisy)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
