#!/usr/bin/env python3
"""gzip reading: kseg's codec against the bare inflaters, on the same Kafka payloads.

kseg reads gzip with ISA-L's inflate (python-isal) and writes it with zlib (whose
level 6 gives Java's bytes). This times, in one process on the same payloads
(every compressed wrapper value or v2 records section of a generated segment):

  zlib          zlib.decompress(p, 31): what Python, kafka-python and Kafka's
                own GZIPInputStream (zlib inside) use
  isal          isal_zlib.decompress(p, 31): the bare library kseg uses
  kseg codec    kseg's GzipCodec.decompress (bounded, member by member)

and prints MB/s of output and the ratios.

    .venv/bin/python benchmarks/bench_gzip.py                      # v1 and v2 gzip, 100 MB each
    .venv/bin/python benchmarks/bench_gzip.py --size-mb 10 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_read import _payloads  # noqa: E402
from common import SegmentSpec, segment_for  # noqa: E402
from isal import isal_zlib  # noqa: E402

from kseg.codecs.gzip import GzipCodec  # noqa: E402


def best_cpu(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, out = float("inf"), 0
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    codec = GzipCodec()
    for magic in (1, 2):
        info = segment_for(SegmentSpec(magic, "gzip", int(args.size_mb * (1 << 20))))
        payloads, _ = _payloads(str(info.path), magic, "gzip")
        libs = {
            "zlib": lambda: sum(len(zlib.decompress(p, 31)) for p in payloads),
            "isal": lambda: sum(len(isal_zlib.decompress(p, 31)) for p in payloads),
            "kseg codec": lambda m=magic: sum(len(codec.decompress(p, magic=m)) for p in payloads),
        }
        times = {}
        for name, fn in libs.items():
            times[name], produced = best_cpu(fn, args.repeat)
            print(f"v{magic} gzip {len(payloads)} payloads  {name:<10} {produced / times[name] / 1e6:8.0f} MB/s")
        print(f"v{magic} gzip  kseg codec / zlib: {times['zlib'] / times['kseg codec']:.2f}x faster; "
              f"isal / zlib: {times['zlib'] / times['isal']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
