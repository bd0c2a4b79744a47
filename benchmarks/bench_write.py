"""Write-side speed: up-convert, down-convert, rebase and compact, next to what bounds them.

For every codec, on the same generated segments (see ``common.py``):
- up-convert v1 -> v2 and down-convert v2 -> v1, MB/s of input, next to the bare
  codec work those conversions cannot avoid (decompress + compress every payload);
- rebase of v2 (header patches, nothing decompressed) next to a plain file copy
  made durable the same way (fsync), and rebase of v0 wrappers (inner offsets are
  absolute: recompressed);
- compaction of a partition with many duplicate keys, MB/s and records/s, next to a
  read-only deep iteration of the same data.

    python benchmarks/bench_write.py [--size-mb 100] [--codecs none,gzip,...] [--quick-run] [--json FILE]

In-process, one core, best of ``--repeat`` runs; outputs go to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import SegmentSpec, best_of, machine_info, pin_to_one_core, segment_for  # noqa: E402

from kseg.codecs import get_codec  # noqa: E402
from kseg.ops.compact import CompactOptions  # noqa: E402
from kseg.ops.compact_split import CompactJob, compact_paths  # noqa: E402
from kseg.ops.convert import DownOptions, Summary, UpOptions, down_convert, rebase, up_convert  # noqa: E402
from kseg.ops.jobs import JobResult, WriteOptions, run_partition  # noqa: E402
from kseg.log.atomic import AtomicDir  # noqa: E402
from kseg.log.records import batch_records, payload_bytes  # noqa: E402
from kseg.log.segment import Segment, partition_segments  # noqa: E402

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def mb_s(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e6


def partition_of(info, root: Path) -> Path:
    """A partition folder holding the generated segment (a hard link or copy)."""
    folder = root / f"{info.spec.name}-0"
    if not folder.exists():
        folder.mkdir(parents=True)
        target = folder / info.path.name
        try:
            target.hardlink_to(info.path)
        except OSError:
            shutil.copyfile(info.path, target)
    return folder


def run_transform(src: Path, out: Path, make) -> Summary:
    """One partition folder through a transform, as a conversion's unit writes it (published whole)."""
    if out.exists():
        shutil.rmtree(out)
    result = JobResult()
    with AtomicDir(out) as d:
        run_partition(partition_segments(src), d.tmp, make, result, WriteOptions(index=True, force=True), copy=False)
    return result.summary


def durable_copy(src: Path, dst: Path) -> None:
    """A plain file copy made durable as kseg's outputs are (fsync before rename)."""
    shutil.copyfile(src, dst)
    with open(dst, "rb+") as f:
        os.fsync(f.fileno())


def bare_codec(path: Path, target_magic: int) -> None:
    """Decompress every payload and compress it again for the target magic: the floor of a conversion."""
    for b in Segment(path).batches():
        if not b.attributes & 7:
            continue
        plain, _ = payload_bytes(b)
        get_codec(b.attributes & 7).compress(plain, magic=max(target_magic, 1) if b.codec != 4 else 2)


def deep_read(path: Path) -> int:
    return sum(len(batch_records(b)) for b in Segment(path).batches())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=100)
    ap.add_argument("--codecs", default="none,gzip,snappy,lz4,zstd")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--quick-run", action="store_true", help="5 MB segments, one run: a smoke test")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    size = int((5 if args.quick_run else args.size_mb) * (1 << 20))
    repeat = 1 if args.quick_run else args.repeat
    codecs = [c.strip() for c in args.codecs.split(",") if c.strip()]
    cpu = pin_to_one_core()
    results: dict = {"machine": machine_info(), "cpu": cpu, "size_bytes": size, "rows": []}
    rows = []
    work = Path(tempfile.mkdtemp(prefix="kseg-bench-write-"))
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    try:
        for codec in codecs:
            # up-convert v1 -> v2 (zstd has no v1 form: start from v2-zstd's v1 gzip twin is meaningless; skip)
            if codec != "zstd":
                info = segment_for(SegmentSpec(magic=1, codec=codec, target_bytes=size), log=log)
                src = partition_of(info, work / "in")
                o = UpOptions(to_magic=2)
                t, s = best_of(lambda: run_transform(src, work / "out", lambda segs: (
                    lambda b, sm: up_convert(b, o, sm), 0)), repeat)
                tb, _ = best_of(lambda: bare_codec(info.path, 2), repeat) if codec != "none" else (None, None)
                rows.append(["up-convert v1->v2", codec, f"{mb_s(info.file_bytes, t):.1f}",
                             f"{info.records / t:,.0f}", "-" if tb is None else f"{mb_s(info.file_bytes, tb):.1f}",
                             "-" if tb is None else f"{tb / t:.2f}"])
            info = segment_for(SegmentSpec(magic=2, codec=codec, target_bytes=size), log=log)
            src = partition_of(info, work / "in")
            if codec != "zstd":
                o2 = DownOptions(to_magic=1)
                t, _ = best_of(lambda: run_transform(src, work / "out", lambda segs: (
                    lambda b, sm: down_convert(b, o2, sm), 0)), repeat)
                tb, _ = best_of(lambda: bare_codec(info.path, 1), repeat) if codec != "none" else (None, None)
                rows.append(["down-convert v2->v1", codec, f"{mb_s(info.file_bytes, t):.1f}",
                             f"{info.records / t:,.0f}", "-" if tb is None else f"{mb_s(info.file_bytes, tb):.1f}",
                             "-" if tb is None else f"{tb / t:.2f}"])
            # rebase v2: header patches only, next to a plain copy
            t, _ = best_of(lambda: run_transform(src, work / "out", lambda segs: (
                lambda b, sm: rebase(b, 1000, sm), 1000)), repeat)
            tc, _ = best_of(lambda: durable_copy(info.path, work / "copy.log"), repeat)
            rows.append(["rebase v2", codec, f"{mb_s(info.file_bytes, t):.1f}", f"{info.records / t:,.0f}",
                         f"{mb_s(info.file_bytes, tc):.1f} (copy+fsync)", f"{tc / t:.2f}"])
            if codec not in ("none", "zstd"):
                info0 = segment_for(SegmentSpec(magic=0, codec=codec, target_bytes=size), log=log)
                src0 = partition_of(info0, work / "in")
                t, _ = best_of(lambda: run_transform(src0, work / "out", lambda segs: (
                    lambda b, sm: rebase(b, 1000, sm), 1000)), repeat)
                tc, _ = best_of(lambda: durable_copy(info0.path, work / "copy.log"), repeat)
                rows.append(["rebase v0 (recompresses)", codec, f"{mb_s(info0.file_bytes, t):.1f}",
                             f"{info0.records / t:,.0f}", f"{mb_s(info0.file_bytes, tc):.1f} (copy+fsync)",
                             f"{tc / t:.2f}"])
            # compaction: 4099 distinct keys cycled, so almost every record is a duplicate
            o3 = CompactOptions(now_ms=1_800_000_000_000, include_active=True)

            def compact_once():
                out = work / "compacted"
                if out.exists():
                    shutil.rmtree(out)
                return compact_paths([src], CompactJob(o3, str(out)))

            t, res = best_of(compact_once, repeat)
            tr, n = best_of(lambda: deep_read(info.path), repeat)
            rows.append(["compact (4099 keys)", codec, f"{mb_s(info.file_bytes, t):.1f}", f"{info.records / t:,.0f}",
                         f"{mb_s(info.file_bytes, tr):.1f} (deep read)", f"{tr / t:.2f}"])
            results["rows"].append({"codec": codec, "compact_records_after": res.stats.records_after})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    headers = ["operation", "codec", "MB/s", "records/s", "reference MB/s", "kseg / reference"]
    print(tabulate(rows, headers=headers, disable_numparse=True))
    results["table"] = [dict(zip(headers, r)) for r in rows]
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
