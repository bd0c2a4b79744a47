#!/usr/bin/env python3
"""kseg on Spark against kseg in one process, on a generated log directory (default 1 GiB, 8 partitions).

Measures, on the same (page-cached) log directory:

  verify            ``kseg verify DIR`` (one process) against
                    ``kseg spark verify --master local[N] --timings DIR``: wall time, and the
                    Spark job's own time with Spark's start-up shown apart
  deep read         every record of every batch through the data source
                    (``spark.read.format("kseg").load(DIR)`` written to Spark's ``noop`` sink, so
                    every column of every row reaches the JVM) against one process doing the same
                    decoding: (a) kseg's record iteration touching every field, (b) the data
                    source's own conversion to Arrow batches, without Spark
  tuples vs Arrow   the data source with ``option("arrow", "false")`` (rows as Python tuples)

and prints records/s, the speed-up once Spark has started, and PASS/FAIL against the goal
(>= 1.6x the single-process throughput on 2 cores).

    .venv/bin/python benchmarks/bench_spark.py                       # 1 GiB, 8 partitions, local[2]
    .venv/bin/python benchmarks/bench_spark.py --gib 0.25 --quick    # a smoke run
    .venv/bin/python benchmarks/bench_spark.py --master 'local[4]' --json out.json

The log directory is generated once under ``bench-data/`` (``KSEG_BENCH_DATA``) and reused:
8 topic-partitions, one per message format and codec (v2 none/gzip/snappy/lz4/zstd,
v1 gzip/none, v0 snappy), 64 MiB segments with consecutive offsets and Kafka's indexes.
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

from common import DEFAULT_DATA_DIR, SegmentSpec, _Pool, _legacy_entries, _v2_batch, machine_info  # noqa: E402

GENERATOR_VERSION = 1
GOAL = 1.6
PARTITIONS = [(2, "none"), (2, "gzip"), (2, "snappy"), (2, "lz4"), (2, "zstd"), (1, "gzip"), (1, "none"),
              (0, "snappy")]
PY = sys.executable
KSEG = str(Path(sys.executable).with_name("kseg"))


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data


def generate(root: Path, total_bytes: int, partitions: int, segment_bytes: int,
             kinds: list[tuple[int, str]] | None = None) -> dict:
    """A log directory of ``partitions`` topic-partitions of about total/partitions bytes each, their
    (magic, codec) taken in turn from ``kinds`` (default ``PARTITIONS``)."""
    kinds = kinds or PARTITIONS
    from kseg.codecs import get_codec
    from kseg.companions.build import build_indexes
    from kseg.log.segment import Segment, segment_file_name

    meta_path = root / "meta.json"
    wanted = {"generator": GENERATOR_VERSION, "total_bytes": total_bytes, "partitions": partitions,
              "segment_bytes": segment_bytes}
    if kinds is not PARTITIONS:
        wanted["kinds"] = [list(k) for k in kinds]
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if {k: meta.get(k) for k in wanted} == wanted:
            return meta
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    per_partition = total_bytes // partitions
    records = 0
    t0 = time.perf_counter()
    for i in range(partitions):
        magic, codec = kinds[i % len(kinds)]
        spec = SegmentSpec(magic, codec, per_partition, headers=1 if magic >= 2 else 0)
        pool = _Pool(spec)
        impl = get_codec(spec.codec_id)
        folder = root / f"bench-v{magic}-{codec}-{i}"
        folder.mkdir()
        offset = written = 0
        while written < per_partition:
            base = offset
            path = folder / segment_file_name(base)
            size = 0
            with open(path, "wb", buffering=4 << 20) as f:
                while size < segment_bytes and written + size < per_partition:
                    n = spec.records_per_batch
                    data, _ = (_v2_batch(pool, spec, offset, n, impl) if magic >= 2
                               else _legacy_entries(pool, spec, offset, n, impl))
                    f.write(data)
                    size += len(data)
                    offset += n
            written += size
            heads = [b._replace(raw=memoryview(b"")) for b in Segment(path).batches()]
            index, timeindex = build_indexes(heads, base, 4096)
            path.with_suffix(".index").write_bytes(index)
            path.with_suffix(".timeindex").write_bytes(timeindex)
        records += offset
        log(f"  {folder.name}: {offset:,} records, {written / 1e6:.0f} MB ({time.perf_counter() - t0:.0f} s)")
    meta = dict(wanted, records=records, bytes=sum(p.stat().st_size for p in root.rglob("*.log")),
                generated_seconds=round(time.perf_counter() - t0, 1))
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def warm(root: Path) -> None:
    """Flush what generating wrote, then read every file once, so every run reads from the page cache."""
    if hasattr(os, "sync"):
        os.sync()
    for p in root.rglob("*"):
        if p.is_file():
            with open(p, "rb") as f:
                while f.read(16 << 20):
                    pass


# --------------------------------------------------------------------------- runs


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, p


def run_verify(root: Path, master: str, repeat: int) -> dict:
    """Best of ``repeat`` runs of each (the machine may be shared)."""
    plain_s, plain = float("inf"), None
    for i in range(repeat):
        log(f"  kseg verify (one process), run {i + 1} ...")
        s, p = timed([KSEG, "verify", str(root)])
        log(f"    {s:.1f} s, exit {p.returncode}")
        if s < plain_s:
            plain_s, plain = s, p
    m = re.search(r"\((\d+) batches, (\d+) records\)", plain.stdout)
    records = int(m.group(2)) if m else None
    best = None
    for i in range(repeat):
        log(f"  kseg spark verify --master {master}, run {i + 1} ...")
        s, dist = timed([KSEG, "spark", "verify", "--master", master, "--timings", str(root)])
        t = re.search(r"start-up ([\d.]+) s .*, job ([\d.]+) s", dist.stderr)
        startup, job = (float(t.group(1)), float(t.group(2))) if t else (None, None)
        log(f"    {s:.1f} s wall (start-up {startup} s, job {job} s), exit {dist.returncode}")
        if job is not None and (best is None or job < best[2]):
            best = (s, startup, job, dist)
    spark_s, startup, job, dist = best
    same = plain.stdout == dist.stdout and plain.returncode == dist.returncode
    return {
        "records": records, "plain_s": plain_s, "spark_wall_s": spark_s, "spark_startup_s": startup,
        "spark_job_s": job, "same_output": same, "repeat": repeat,
        "plain_rps": records / plain_s if records else None,
        "spark_rps": records / job if records and job else None,
        "speedup_started": plain_s / job if job else None,
        "speedup_wall": plain_s / spark_s,
    }


SINGLE_DEEP = r"""
import sys, time, json
import kseg
from kseg.ops.slices import ReadOptions, plan_slices
from kseg.ops.columns import read_slice, arrow_schema
root, kind = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
n = 0
if kind == "iterate":
    records_of = kseg.batch_records
    for part in kseg.open_log_dir(root):
        for seg in part.segments():
            for batch in seg.batches():
                for r in records_of(batch):
                    o, t, k, v, h = r.offset, r.timestamp, r.key, r.value, r.headers
                    n += 1
else:
    opts = ReadOptions(paths=[root])
    schema = arrow_schema()
    for s in plan_slices([root], 0):
        for b in read_slice(s, None, opts, schema):
            n += b.num_rows
print(json.dumps({"records": n, "seconds": time.perf_counter() - t0}))
"""

SPARK_DEEP = r"""
import sys, time, json
t0 = time.perf_counter()
from kseg.spark import get_session
spark = get_session(sys.argv[2], warm=True)
startup = time.perf_counter() - t0
out = {"startup_s": startup}
for name, opts, repeat in json.loads(sys.argv[3]):
    reader = spark.read.format("kseg")
    for k, v in opts.items():
        reader = reader.option(k, v)
    df = reader.load(sys.argv[1])
    for _ in range(repeat):
        t1 = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        out[name + "_s"] = min(out.get(name + "_s", 1e9), time.perf_counter() - t1)
    out[name + "_partitions"] = df.rdd.getNumPartitions()
t1 = time.perf_counter()
out["count"] = spark.read.format("kseg").load(sys.argv[1]).count()
out["count_s"] = time.perf_counter() - t1
print(json.dumps(out))
"""


def run_deep(root: Path, master: str, records: int, tuples: bool, repeat: int) -> dict:
    res: dict = {"records": records}
    for kind in ("iterate", "arrow"):
        log(f"  one process, {kind} ...")
        s, p = timed([PY, "-c", SINGLE_DEEP, str(root), kind])
        if p.returncode:
            raise SystemExit(p.stderr)
        d = json.loads(p.stdout)
        assert d["records"] == records, (d, records)
        res[f"single_{kind}_s"] = d["seconds"]
        res[f"single_{kind}_rps"] = records / d["seconds"]
        log(f"    {d['seconds']:.1f} s, {records / d['seconds']:,.0f} records/s")
    runs = [["arrow", {}, repeat], ["projected", {"columns": "topic,partition,offset,timestamp,key,value"}, repeat]]
    if tuples:
        runs.append(["tuples", {"arrow": "false"}, 1])
    log(f"  Spark data source, {master} ({', '.join(r[0] for r in runs)}; best of {repeat}) ...")
    s, p = timed([PY, "-c", SPARK_DEEP, str(root), master, json.dumps(runs)])
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    d = json.loads(p.stdout.strip().splitlines()[-1])
    assert d["count"] == records, (d, records)
    res["spark_startup_s"] = d["startup_s"]
    for name, _, _ in runs:
        res[f"spark_{name}_s"] = d[f"{name}_s"]
        res[f"spark_{name}_rps"] = records / d[f"{name}_s"]
        res[f"spark_{name}_partitions"] = d[f"{name}_partitions"]
        log(f"    {name}: {d[f'{name}_s']:.1f} s, {records / d[f'{name}_s']:,.0f} records/s "
            f"({d[f'{name}_partitions']} tasks)")
    res["spark_count_s"] = d["count_s"]
    res["speedup_vs_iterate"] = res["single_iterate_s"] / res["spark_arrow_s"]
    res["speedup_vs_arrow"] = res["single_arrow_s"] / res["spark_arrow_s"]
    if tuples:
        res["arrow_vs_tuples"] = res["spark_tuples_s"] / res["spark_arrow_s"]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=1.0, help="Size of the log directory [1].")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--segment-mib", type=int, default=64)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    ap.add_argument("--skip", default="", help="Comma list of verify,deep,tuples to leave out.")
    ap.add_argument("--quick", action="store_true", help="Leave out the (slow) tuples run.")
    ap.add_argument("--repeat", type=int, default=2, help="Best of this many runs of each [2].")
    ap.add_argument("--json", type=Path, default=None, help="Write the figures here too.")
    args = ap.parse_args()
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.quick:
        skip.add("tuples")
    total = int(args.gib * (1 << 30))
    root = args.data_dir / f"spark-logdir-{args.gib:g}g-{args.partitions}p-{args.segment_mib}m"
    log(f"log directory {root} ...")
    meta = generate(root, total, args.partitions, args.segment_mib << 20)
    log(f"  {meta['records']:,} records, {meta['bytes'] / 1e9:.2f} GB, "
        f"{len(list(root.rglob('*.log')))} segments in {args.partitions} partitions")
    warm(root)
    out: dict = {"machine": machine_info(), "data": meta, "master": args.master}
    out["loadavg_before"] = os.getloadavg()
    if "verify" not in skip:
        out["verify"] = run_verify(root, args.master, args.repeat)
    if "deep" not in skip:
        out["deep"] = run_deep(root, args.master, meta["records"], "tuples" not in skip, args.repeat)

    print(f"\nkseg on Spark ({args.master}) vs one process; {meta['bytes'] / 1e9:.2f} GB, "
          f"{meta['records']:,} records, {args.partitions} partitions; {out['machine']['nproc']} cores")
    results = []
    if "verify" in out:
        v = out["verify"]
        print(f"  verify           one process {v['plain_s']:7.1f} s  {v['plain_rps']:>12,.0f} rec/s")
        print(f"                   spark       {v['spark_wall_s']:7.1f} s wall = start-up {v['spark_startup_s']:.1f} s"
              f" + job {v['spark_job_s']:.1f} s  {v['spark_rps']:>12,.0f} rec/s (once started)")
        print(f"                   speed-up once started {v['speedup_started']:.2f}x, wall {v['speedup_wall']:.2f}x; "
              f"same output: {v['same_output']}")
        results.append(("verify: spark job vs one process", v["speedup_started"]))
    if "deep" in out:
        d = out["deep"]
        print(f"  deep read        one process, records  {d['single_iterate_s']:7.1f} s  "
              f"{d['single_iterate_rps']:>12,.0f} rec/s")
        print(f"                   one process, Arrow    {d['single_arrow_s']:7.1f} s  "
              f"{d['single_arrow_rps']:>12,.0f} rec/s")
        print(f"                   spark data source     {d['spark_arrow_s']:7.1f} s  "
              f"{d['spark_arrow_rps']:>12,.0f} rec/s (start-up {d['spark_startup_s']:.1f} s apart)")
        print(f"                   spark, 6 of 18 columns {d['spark_projected_s']:7.1f} s  "
              f"{d['spark_projected_rps']:>12,.0f} rec/s (option columns=topic,partition,offset,timestamp,key,value)")
        if "spark_tuples_s" in d:
            print(f"                   spark, Python tuples  {d['spark_tuples_s']:7.1f} s  "
                  f"{d['spark_tuples_rps']:>12,.0f} rec/s (Arrow is {d['arrow_vs_tuples']:.2f}x faster)")
        print(f"                   speed-up once started {d['speedup_vs_iterate']:.2f}x vs record iteration, "
              f"{d['speedup_vs_arrow']:.2f}x vs the same Arrow conversion in one process")
        results.append(("deep read: data source vs one process (records)", d["speedup_vs_iterate"]))
    for name, value in results:
        print(f"{'PASS' if value >= GOAL else 'FAIL'}  {name}: {value:.2f}x (goal {GOAL}x)")
    out["loadavg_after"] = os.getloadavg()
    print(f"load average before {out['loadavg_before'][0]:.2f}, after {out['loadavg_after'][0]:.2f} "
          "(other work on the machine makes the figures worse)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
