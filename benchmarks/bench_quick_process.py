#!/usr/bin/env python3
"""``kseg verify --quick`` as a user runs it (a whole process, start-up included) against the
bare walk a user could write instead, in a process of its own: mmap the file, one struct
call and one CRC call (the ``crc32c`` package, zlib for v0/v1) per entry, compare.

Both read the same generated v2 segment (``common.py``; 100 records per batch, 16-byte keys,
100-byte values), warmed into the page cache first; each figure is the best of ``--repeat``
runs, wall and CPU (user+sys from ``wait4``). The target (issue 27): kseg at least 0.8x the
bare walk's speed, whole process. Start-up (about 0.1 s of kseg's, 0.02 s of the walk's) is a
fixed cost, so the ratio grows with the segment: ``--sizes 100,600`` shows both ends.

    .venv/bin/python benchmarks/bench_quick_process.py                       # 600 MB, v2 none,lz4,zstd,gzip
    .venv/bin/python benchmarks/bench_quick_process.py --sizes 100,600 --codecs none,lz4
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import KSEG_COMMAND, SegmentSpec, segment_for, warm_file  # noqa: E402

TARGET = 0.8

BARE_WALK = r"""
import mmap, struct, sys, zlib
from crc32c import crc32c
head = struct.Struct(">qiIbI").unpack_from  # offset, length, v0/v1 crc | v2 leader epoch, magic, v2 crc
with open(sys.argv[1], "rb") as f:
    mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
mv = memoryview(mm)
size, pos, bad = len(mm), 0, 0
while pos + 21 <= size:
    _, length, legacy_crc, magic, v2_crc = head(mm, pos)
    end = pos + 12 + length
    if end > size:
        break
    ok = crc32c(mv[pos + 21:end]) == v2_crc if magic >= 2 else zlib.crc32(mv[pos + 16:end]) == legacy_crc
    bad += not ok
    pos = end
mv.release()
mm.close()
sys.exit(1 if bad or pos != size else 0)
"""


def best(argv: list[str], repeat: int) -> dict:
    """The best wall and the best CPU seconds of ``repeat`` runs of ``argv`` (each must exit 0)."""
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(argv[:3])}... failed: {p.stderr.read().decode()[-1000:]}")
        wall = min(wall, time.perf_counter() - t)
        cpu = min(cpu, ru.ru_utime + ru.ru_stime)
    return {"wall": wall, "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="600", help="segment sizes in MB, comma-separated (default 600)")
    ap.add_argument("--codecs", default="none,lz4,zstd,gzip")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    kseg = KSEG_COMMAND
    rows = []
    for mb in (int(s) for s in args.sizes.split(",")):
        for codec in args.codecs.split(","):
            info = segment_for(SegmentSpec(magic=2, codec=codec, target_bytes=mb << 20))
            path = str(info.path)
            warm_file(path)
            bare = best([sys.executable, "-c", BARE_WALK, path], args.repeat)
            ours = best([*kseg, "verify", "--quick", path], args.repeat)
            rows.append({"mb": info.file_bytes / 1e6, "codec": codec, "bare": bare, "kseg": ours})
    print(f"\nverify --quick, whole process, against a bare mmap + CRC walk (best of {args.repeat}; s)")
    print(f"{'segment':18} {'bare wall':>10} {'kseg wall':>10} {'ratio':>7} {'bare cpu':>10} {'kseg cpu':>10} {'ratio':>7}")
    for r in rows:
        b, k = r["bare"], r["kseg"]
        r["ratio_wall"], r["ratio_cpu"] = b["wall"] / k["wall"], b["cpu"] / k["cpu"]
        name = f"v2 {r['codec']} {r['mb']:.0f} MB"
        print(f"{name:18} {b['wall']:10.3f} {k['wall']:10.3f} "
              f"{r['ratio_wall']:6.2f}x {b['cpu']:10.3f} {k['cpu']:10.3f} {r['ratio_cpu']:6.2f}x")
    for r in rows:
        verdict = "PASS" if r["ratio_wall"] >= TARGET else "FAIL"
        print(f"  {verdict}  v2 {r['codec']} {r['mb']:.0f} MB: {r['ratio_wall']:.2f}x the bare walk's speed "
              f"(wall; goal {TARGET}x)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
