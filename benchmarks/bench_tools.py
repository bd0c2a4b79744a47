"""Speed and memory of the operator tools (repair, diff, find, stats) against the commands
they are measured by, in one run, on one generated partition (default 200 MB, v2).

    python benchmarks/bench_tools.py [--mb 200] [--codec none] [--repeat 3] [--json out.json]

Every figure is the time of the ``kseg`` command in its own process, wall and CPU (best of
``--repeat``; ratios by ``--clock``, CPU by default), start-up included, and its peak RSS
(from ``wait4``; for ``diff`` it counts the memory-mapped windows). Targets (issue 15):

- ``diff`` of two identical copies >= 0.8x the speed of ``verify --quick`` of one copy
- ``find --key`` >= the speed of ``dump -r --format jsonl | grep``; 5x when indexes narrow it
- ``stats`` within 1.5x of full ``verify``
- memory flat (peak RSS independent of the data size)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_DATA_DIR, KSEG_COMMAND, SegmentSpec, compile_kseg, segment_for  # noqa: E402

KSEG = KSEG_COMMAND


def run(cmd: list[str] | str, repeat: int, shell: bool = False) -> dict:
    """Best wall time, best CPU time (user+sys, the children of a pipeline included) and the
    peak RSS of a command (a pipeline with shell=True)."""
    best, cpu, rss = float("inf"), float("inf"), 0
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        best = min(best, time.perf_counter() - t)
        cpu = min(cpu, usage.ru_utime + usage.ru_stime)
        rss = max(rss, usage.ru_maxrss)
    return {"seconds": round(best, 3), "cpu_seconds": round(cpu, 3), "peak_rss_mb": round(rss / 1024, 1),
            "exit": p.returncode}


def partition(mb: int, codec: str, name: str) -> Path:
    info = segment_for(SegmentSpec(magic=2, codec=codec, target_bytes=mb << 20))
    root = DEFAULT_DATA_DIR / f"tools-{codec}-{mb}"
    folder = root / name
    if not (folder / info.path.name).exists():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(info.path, folder / info.path.name)
        subprocess.run(KSEG + ["index", str(folder / info.path.name), "--rebuild", "--force"], check=True,
                       stderr=subprocess.DEVNULL)
    return folder


def main() -> int:
    compile_kseg()  # kseg as installed: bytecode cached
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="cpu",
                    help="rank by CPU time (default: robust on a shared machine) or wall time")
    args = ap.parse_args()
    a = partition(args.mb, args.codec, "bench-0")
    b_root = DEFAULT_DATA_DIR / f"tools-{args.codec}-{args.mb}-copy"
    b = b_root / "bench-0"
    if not b.exists():
        shutil.copytree(a, b)
    small = partition(max(args.mb // 8, 1), args.codec, "bench-0")
    log = next(a.glob("*.log"))
    # A key that occurs (the generator cycles 4099 keys) and an offset window of ~1% of the data.
    first = json.loads(subprocess.run(KSEG + ["dump", "-r", "--format", "jsonl", "--max-bytes", "100000", str(log)],
                                      capture_output=True, text=True).stdout.splitlines()[1])
    key = first["key"]
    last = int(json.loads(subprocess.run(KSEG + ["stats", "--format", "json", str(a)], capture_output=True,
                                         text=True).stdout)["topics"][0]["partitions"][0]["segments"][0]["last_offset"])
    lo, hi = last // 2, last // 2 + last // 100
    r = args.repeat
    m = {}
    m["verify_quick"] = run(KSEG + ["verify", "--quick", str(a)], r)
    m["diff_identical"] = run(KSEG + ["diff", str(a), str(b)], r)
    m["verify_full"] = run(KSEG + ["verify", str(a)], r)
    m["stats"] = run(KSEG + ["stats", str(a)], r)
    m["stats_small"] = run(KSEG + ["stats", str(small)], 1)
    grep = f"{shlex.join(KSEG)} dump -r --format jsonl {a} | grep -F '\"key\": \"{key}\"' > /dev/null"
    m["dump_jsonl_grep"] = run(grep, 1, shell=True)
    m["find_key"] = run(KSEG + ["find", str(a), "--key", key], r)
    grep_range = (f"{shlex.join(KSEG)} dump -r --format jsonl --from-offset {lo} --to-offset {hi} {a} "
                  f"| grep -F '\"key\": \"{key}\"' > /dev/null")
    m["dump_jsonl_grep_range"] = run(grep_range, 1, shell=True)
    m["find_key_range"] = run(KSEG + ["find", str(a), "--key", key, "--from-offset", str(lo), "--to-offset",
                                      str(hi)], r)
    m["repair_dry_run"] = run(KSEG + ["repair", "--dry-run", str(a)], 1)
    size_mb = log.stat().st_size / 1e6
    m["startup"] = run(KSEG + ["--version"], r)
    failed = [name for name, x in m.items() if x["exit"] != 0]
    if failed:  # a ratio over a command that failed would be a figure of nothing
        print(f"bench_tools: these runs failed, no ratios: {', '.join(failed)}", file=sys.stderr)
        return 1
    clock = "cpu_seconds" if args.clock == "cpu" else "seconds"
    ratios = {
        "diff_vs_verify_quick_speed": m["verify_quick"][clock] / m["diff_identical"][clock],
        "find_key_vs_dump_grep_speed": m["dump_jsonl_grep"][clock] / m["find_key"][clock],
        "find_key_range_vs_dump_grep_speed": m["dump_jsonl_grep"][clock] / m["find_key_range"][clock],
        "find_key_range_vs_dump_grep_range_speed": (m["dump_jsonl_grep_range"][clock]
                                                    / m["find_key_range"][clock]),
        "stats_time_vs_verify_full": m["stats"][clock] / m["verify_full"][clock],
        "stats_rss_large_vs_small": m["stats"]["peak_rss_mb"] / m["stats_small"]["peak_rss_mb"],
    }
    out = {"size_mb": round(size_mb, 1), "codec": args.codec, "clock": args.clock, "key": key, "range": [lo, hi], "runs": m,
           "ratios": {k: round(v, 2) for k, v in ratios.items()}}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
