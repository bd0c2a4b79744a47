"""A long fuzzing campaign over every target, for running by hand in the background:

    nice -n 19 python tests/fuzz/campaign.py --cpu-seconds 3600 --until EPOCH --lanes 2 OUT

Targets take turns in slices (``--slice`` seconds of wall time each), ``--lanes`` at a
time, until the children have used ``--cpu-seconds`` of CPU in all or ``--until`` comes.
Each target keeps its growing corpus in OUT/corpus/<target> (seeded from
tests/fuzz/corpus/<target>) and its findings in OUT/findings/<target>/; a slice that
ends on a finding is restarted. OUT/summary.json holds executions, CPU seconds,
coverage and findings per target; OUT/logs/ the fuzzer output.
Environment: as for ``make fuzz-short`` (KSEG_SPEEDUPS_SO, LD_PRELOAD, ASAN_OPTIONS).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import targets  # noqa: E402  (tests/fuzz/targets.py: the one table of fuzz targets)

TARGET_NAMES = list(targets.TARGETS)  # every target of the table, as make fuzz-short runs them
MAX_LEN = {"log": 16384, "scan": 16384}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--cpu-seconds", type=float, default=3600)
    ap.add_argument("--until", type=float, default=time.time() + 7200)
    ap.add_argument("--slice", type=int, default=300)
    ap.add_argument("--lanes", type=int, default=2)
    ap.add_argument("--targets", default=",".join(TARGET_NAMES))
    a = ap.parse_args()
    names = a.targets.split(",")
    for sub in ("corpus", "findings", "logs"):
        for t in names:
            (a.out / sub / t).mkdir(parents=True, exist_ok=True)
    stats = {t: {"executions": 0, "cpu_seconds": 0.0, "slices": 0, "cov": 0, "ft": 0, "corpus": 0,
                 "findings": 0} for t in names}
    summary = a.out / "summary.json"
    if summary.exists():
        stats.update({k: v for k, v in json.loads(summary.read_text())["targets"].items() if k in stats})
    queue = list(names)
    running: dict[int, tuple[str, subprocess.Popen, Path]] = {}
    started = time.time()

    def cpu_total() -> float:
        return sum(s["cpu_seconds"] for s in stats.values())

    def launch(t: str) -> None:
        stats[t]["slices"] += 1
        log = a.out / "logs" / f"{t}-{stats[t]['slices']}.txt"
        left = int(min(a.slice, max(10, a.until - time.time())))
        cmd = [sys.executable, str(HERE / "run.py"), t, f"-max_total_time={left}", "-timeout=20",
               "-rss_limit_mb=4096", f"-max_len={MAX_LEN.get(t, 4096)}", "-print_final_stats=1",
               f"-artifact_prefix={a.out / 'findings' / t}/", str(a.out / "corpus" / t), str(HERE / "corpus" / t)]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        running[p.pid] = (t, p, log)

    def write() -> None:
        summary.write_text(json.dumps({"wall_seconds": round(time.time() - started), "cpu_seconds":
                                       round(cpu_total()), "targets": stats}, indent=1))

    while running or (queue and cpu_total() < a.cpu_seconds and time.time() < a.until - 10):
        while queue and len(running) < a.lanes and cpu_total() < a.cpu_seconds and time.time() < a.until - 10:
            launch(queue.pop(0))
        pid, status, usage = os.wait4(-1, 0)
        t, p, log = running.pop(pid)
        s = stats[t]
        s["cpu_seconds"] = round(s["cpu_seconds"] + usage.ru_utime + usage.ru_stime, 1)
        text = log.read_text(errors="replace")
        m = re.search(r"stat::number_of_executed_units:\s*(\d+)", text)
        runs = int(m.group(1)) if m else sum(int(x) for x in re.findall(r"^#(\d+)\s+(?:DONE|pulse)", text, re.M)[-1:])
        s["executions"] += runs
        covs = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)", text)
        if covs:
            s["cov"], s["ft"], s["corpus"] = (max(s["cov"], int(covs[-1][0])), max(s["ft"], int(covs[-1][1])),
                                              int(covs[-1][2]))
        s["findings"] = len([f for f in (a.out / "findings" / t).iterdir()])
        queue.append(t)
        write()
    write()


if __name__ == "__main__":
    main()
