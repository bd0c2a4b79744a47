#!/usr/bin/env python3
"""Per-core throughput of verifying a log directory in object storage (SeaweedFS on loopback).

Generates a log directory (default 256 MB, 4 partitions: v2 none/gzip/snappy/lz4, 64 MiB
segments, Kafka's indexes; ``bench_spark.generate``), uploads it to a SeaweedFS bucket started
here (``tests/servers.py``), then times, over ``s3://``:

  kseg verify [--quick] s3://...                       one process
  kseg spark verify [--quick] --master local[N] s3://...   N = 1, 2 (Spark's start-up shown apart)

and prints MB/s and records/s, per run and per core (the job's own time: start-up excluded).
The object store runs on the same machine: its CPU competes with kseg's, so the per-core
figures are a floor for a store that lives elsewhere.

    .venv/bin/python benchmarks/bench_remote.py                     # 256 MB
    .venv/bin/python benchmarks/bench_remote.py --mb 64 --repeat 1  # a smoke run
    .venv/bin/python benchmarks/bench_remote.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from bench_spark import generate  # noqa: E402
from common import DEFAULT_DATA_DIR, machine_info  # noqa: E402

KSEG = str(Path(sys.executable).with_name("kseg"))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def timed(cmd: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, p


def best(cmd: list[str], env: dict, repeat: int) -> dict:
    """Best of ``repeat`` runs: wall seconds, and for Spark the start-up and job seconds."""
    out = None
    for i in range(repeat):
        s, p = timed(cmd, env)
        t = re.search(r"start-up ([\d.]+) s .*, job ([\d.]+) s", p.stderr)
        run = {"wall_s": s, "startup_s": float(t.group(1)) if t else None,
               "job_s": float(t.group(2)) if t else s, "exit": p.returncode}
        log(f"    run {i + 1}: {s:.1f} s wall" + (f" (start-up {run['startup_s']} s, job {run['job_s']} s)" if t else "")
            + f", exit {p.returncode}")
        if p.returncode not in (0, 1):
            log(p.stderr[-2000:])
        if out is None or run["job_s"] < out["job_s"]:
            out = dict(run, stdout=p.stdout)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=256, help="size of the generated log directory (MB)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()

    from servers import SeaweedFS

    total = int(a.mb * 1e6)
    data = Path(os.environ.get("KSEG_BENCH_DATA", DEFAULT_DATA_DIR)) / f"remote-{a.partitions}p-{total // 1_000_000}MB"
    log(f"generating {a.mb:.0f} MB in {data} (reused when present) ...")
    meta = generate(data, total, a.partitions, 64 << 20)
    mb = meta["bytes"] / 1e6
    records = meta["records"]
    log(f"  {mb:.0f} MB, {records:,} records")

    results: dict = {"machine": machine_info(), "mb": mb, "records": records, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="kseg-bench-s3-") as tmp, SeaweedFS(Path(tmp)) as store:
        t0 = time.perf_counter()
        url = store.upload(data, "kseg-bench", "logdir")
        upload_s = time.perf_counter() - t0
        log(f"uploaded to {url} in {upload_s:.1f} s ({mb / upload_s:.0f} MB/s)")
        results["upload_s"] = upload_s
        env = dict(os.environ, **store.env)
        for k in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            env.pop(k, None)
        plans = []
        for quick in (True, False):
            q = ["--quick"] if quick else []
            name = "quick" if quick else "full"
            plans.append((f"kseg verify {name}", 1, [KSEG, "verify", *q, url]))
            for n in (1, 2):
                plans.append((f"kseg spark verify {name} local[{n}]", n,
                              [KSEG, "spark", "verify", *q, "--master", f"local[{n}]", "--timings", url]))
        outputs = {}
        for name, cores, cmd in plans:
            log(f"  {name} ...")
            r = best(cmd, env, a.repeat)
            outputs.setdefault(name.split(" local")[0].replace("spark ", ""), set()).add(r.pop("stdout"))
            r.update(cores=cores, mb_s=mb / r["job_s"], records_s=records / r["job_s"],
                     mb_s_per_core=mb / r["job_s"] / cores, records_s_per_core=records / r["job_s"] / cores)
            results["runs"][name] = r
        results["same_output"] = all(len(v) == 1 for v in outputs.values())

    print(f"\n{mb:.0f} MB, {records:,} records in s3:// (SeaweedFS on this machine, {os.cpu_count()} cores)")
    print(f"{'run':42} {'wall s':>7} {'start s':>7} {'job s':>7} {'MB/s':>7} {'MB/s/core':>9} {'rec/s/core':>11}")
    for name, r in results["runs"].items():
        start = f"{r['startup_s']:.1f}" if r["startup_s"] is not None else "-"
        print(f"{name:42} {r['wall_s']:7.1f} {start:>7} {r['job_s']:7.1f} {r['mb_s']:7.1f} "
              f"{r['mb_s_per_core']:9.1f} {r['records_s_per_core']:11,.0f}")
    print(f"same report from every run: {results['same_output']}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
