#!/usr/bin/env python3
"""How fast salvage resynchronises: the scanner over a damaged region, C and Python, and a
whole ``salvage`` of a damaged segment.

  scan      ``next_batch`` from the start of a damaged region to the next real batch after
            it, the limits those of a real segment (offsets above the last kept batch, inside
            the segment's int range): zeros (a zeroed or preallocated stretch), random bytes
            (garbage), and both halves in turn; C (``_speedups.resync``) and the Python reference
  salvage   ``kseg.ops.salvage`` (dry run) of a generated v2 segment with a stretch of zeros
            and one of random bytes in the middle, against ``verify`` of the same file
            (salvage checks every kept batch as verify does, and scans the rest)

    .venv/bin/python benchmarks/bench_salvage.py                  # 128 MB regions
    .venv/bin/python benchmarks/bench_salvage.py --mb 16 --no-python
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import SegmentSpec, measure, segment_for  # noqa: E402

from kseg.facts.primitives import INT32_MAX  # noqa: E402
from kseg.log import salvage_scan  # noqa: E402
from kseg.log.salvage_scan import FOUND, Limits, find_candidate, next_batch  # noqa: E402
from kseg.log.segment import Segment  # noqa: E402


def region(kind: str, n: int, seed: int = 7) -> bytes:
    if kind == "zeros":
        return bytes(n)
    if kind == "garbage":
        return os.urandom(n) if seed is None else __import__("random").Random(seed).randbytes(n)
    half = n // 2
    return region("zeros", half) + region("garbage", n - half)


def scan_rate(data: bytes, finder: object, lim: Limits, clock: str) -> tuple[float, float]:
    """MB/s of scanning ``data`` to its end (nothing in it passes), and the seconds."""
    def run() -> None:
        status, _, _ = next_batch(data, 0, lim, final=True, finder=finder)
        assert status != FOUND

    t = measure(run, repeat=3, budget=20, clock=clock)
    return len(data) / 1e6 / t.seconds, t.seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=128, help="size of each damaged region (MiB)")
    ap.add_argument("--no-python", action="store_true", help="skip the (slow) Python reference")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="cpu")
    args = ap.parse_args()
    n = args.mb << 20
    lim = Limits(1_000_000, 1_000_000 + INT32_MAX, 64 << 20)
    c_find = salvage_scan._c_find if salvage_scan._FINDER is salvage_scan._c_find else None
    print(f"scan of a damaged region of {n / 1e6:.0f} MB ({args.clock} time)")
    for kind in ("zeros", "garbage", "mixed"):
        data = region(kind, n)
        if c_find is not None:
            rate, secs = scan_rate(data, c_find, lim, args.clock)
            print(f"  {kind:8} C       {rate:9.0f} MB/s  ({secs:.3f} s)")
        if not args.no_python:
            rate, secs = scan_rate(data, find_candidate, lim, args.clock)
            print(f"  {kind:8} Python  {rate:9.0f} MB/s  ({secs:.3f} s)")

    from kseg.ops.salvage import SalvageOptions, salvage
    from kseg.ops.verify import verify_paths

    info = segment_for(SegmentSpec(magic=2, codec="none", target_bytes=max(args.mb, 8) << 20))
    raw = bytearray(info.path.read_bytes())
    third = len(raw) // 3
    raw[third:third + len(raw) // 10] = bytes(len(raw) // 10)
    raw[2 * third:2 * third + len(raw) // 10] = region("garbage", len(raw) // 10)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "t-0"
        folder.mkdir()
        log = folder / "00000000000000000000.log"
        log.write_bytes(bytes(raw))
        t = measure(lambda: salvage(folder, None, SalvageOptions(dry_run=True)), repeat=1, clock=args.clock)
        rep = t.result
        clean = Path(tmp) / "clean-0"
        clean.mkdir()
        (clean / log.name).write_bytes(info.path.read_bytes())
        v = measure(lambda: verify_paths([clean]), repeat=1, clock=args.clock)
    kept = sum(s.kept_batches for p in rep.partitions for s in p.segments)
    print(f"salvage (dry run) of a {len(raw) / 1e6:.0f} MB v2 segment, 20% damaged in two regions: "
          f"{len(raw) / 1e6 / t.seconds:.0f} MB/s ({t.seconds:.2f} s; {kept} of "
          f"{sum(1 for _ in Segment(info.path).batches())} batches kept, {len(rep.lost)} ranges lost); "
          f"verify of the clean file {len(raw) / 1e6 / v.seconds:.0f} MB/s ({v.seconds:.2f} s)")


if __name__ == "__main__":
    main()
