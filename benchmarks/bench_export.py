#!/usr/bin/env python3
"""``kseg export`` and ``to_arrow()`` against what a user would otherwise write: kafka-python
reading the records into lists and building a pyarrow table from them.

Each measurement runs in a child process of its own; its peak RSS comes from ``wait4``.

  kafka-python  ``MemoryRecords`` over the file read whole, offset, timestamp, key, value and
                headers appended to lists, then ``pa.table`` (timed after imports)
  to_arrow      ``kseg.open_segment(path).to_arrow()`` (all 18 columns; timed after a warm-up call that
                makes every import), and again in the same process (the result's pages reused)
  before        the same ``to_arrow`` from another kseg tree (``--before PATH``, e.g. the
                main branch's checkout), to see what the span columns changed
  export pq     the whole ``kseg export --format parquet`` command (start-up included), zstd; and
                with ``-j 2`` (a lone partition read on one core while the writer encodes on the other)
  export arrow  the whole ``kseg export --format arrow`` command, and with ``-j 2``
  parts         with ``--max-file-rows N``: the Parquet export again in files of at most N records
                (``-j 1`` and ``-j 2``), for its peak RSS against one file's (a Parquet writer keeps
                every row group's footer entry until its file closes)
  in process    ``kseg.ops.export.export`` of each format in one process after its imports (no
                start-up), with the CPU time inside the writer's ``write_batch`` measured apart
                (the rest is kseg reading the records into Arrow batches, and the file's close);
                with ``--before``, the other tree's too

    .venv/bin/python benchmarks/bench_export.py                          # v2 none and zstd, 100 MB
    .venv/bin/python benchmarks/bench_export.py --cases 2:none --size-mb 400 --before ../main
    .venv/bin/python benchmarks/bench_export.py --size-mb 600 --no-kafka-python --max-file-rows 2000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from common import KSEG_COMMAND, SegmentSpec, segment_for  # noqa: E402

KAFKA_PYTHON = r"""
import json, sys, time
import pyarrow as pa
from kafka.record.memory_records import MemoryRecords
t0, c0 = time.perf_counter(), time.process_time()
with open(sys.argv[1], "rb") as f:
    records = MemoryRecords(f.read())
offsets, timestamps, keys, values, headers = [], [], [], [], []
while True:
    batch = records.next_batch()
    if batch is None:
        break
    for r in batch:
        offsets.append(r.offset); timestamps.append(r.timestamp); keys.append(r.key); values.append(r.value)
        headers.append([{"key": k, "value": v} for k, v in r.headers])
t = pa.table({"offset": pa.array(offsets, pa.int64()), "timestamp": pa.array(timestamps, pa.int64()),
              "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
              "headers": pa.array(headers, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))})
print(json.dumps({"rows": t.num_rows, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
"""

TO_ARROW = r"""
import json, sys, time
import kseg
kseg.open_segment(sys.argv[2]).to_arrow()  # warm-up on a small fixture: every import made
t0, c0 = time.perf_counter(), time.process_time()
t = kseg.open_segment(sys.argv[1]).to_arrow()
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
del t  # a second call in the same process: the result's memory comes back from the allocator
t0, c0 = time.perf_counter(), time.process_time()
t = kseg.open_segment(sys.argv[1]).to_arrow()
print(json.dumps({"rows": t.num_rows, "wall": wall, "cpu": cpu, "again": {"wall": time.perf_counter() - t0,
                                                                         "cpu": time.process_time() - c0}}))
"""

EXPORT_IN_PROCESS = r"""
import json, sys, tempfile, time
from pathlib import Path
import pyarrow as pa, pyarrow.ipc, pyarrow.parquet as pq
from kseg.ops.export import ExportOptions, export
fmt = sys.argv[3]
spent = [0.0]
def timed(cls):
    write = cls.write_batch
    def write_batch(self, *a, **k):
        c = time.process_time()
        try:
            return write(self, *a, **k)
        finally:
            spent[0] += time.process_time() - c
    cls.write_batch = write_batch
timed(pq.ParquetWriter)
timed(pa.ipc.RecordBatchFileWriter)
with tempfile.TemporaryDirectory() as tmp:
    out = Path(tmp) / ("out.parquet" if fmt == "parquet" else "out.arrow")
    t0, c0 = time.perf_counter(), time.process_time()
    report = export(Path(sys.argv[1]), out, ExportOptions(fmt=fmt))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
rows = sum(p.records for p in report.partitions)
print(json.dumps({"rows": rows, "wall": wall, "cpu": cpu, "writer": spent[0]}))
"""

WARM_UP = ROOT / "fixtures" / "logdir" / "v2-headers-0" / "00000000000000000000.log"


def child(argv: list[str], env: dict[str, str]) -> dict:
    """Run ``argv`` in the tree PYTHONPATH names (``-c`` puts the working folder first on the path):
    its wall seconds and the timings it printed as JSON (peak RSS: ``peak``)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=env["PYTHONPATH"])
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{' '.join(argv[:4])}... failed ({p.returncode}): {err.decode()[-2000:]}")
    text = out.decode().strip().splitlines()
    doc = json.loads(text[-1]) if text and text[-1].startswith("{") else {}
    return {"wall_total": wall, **doc}


def peak(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one run of ``argv``, from wait4."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=env["PYTHONPATH"])
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"{' '.join(argv[:4])}... failed ({p.returncode}): {p.stderr.read().decode()[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def best(runs: list[dict], clock: str) -> dict:
    return min(runs, key=lambda r: r[clock])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="2:none,2:zstd", help="magic:codec,... (default 2:none,2:zstd)")
    ap.add_argument("--size-mb", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="cpu")
    ap.add_argument("--before", type=Path, default=None, help="another kseg source tree, for to_arrow before")
    ap.add_argument("--no-kafka-python", action="store_true")
    ap.add_argument("--max-file-rows", type=int, default=None,
                    help="also export Parquet in parts of at most this many records (its peak RSS against one file's)")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows = []
    for case in args.cases.split(","):
        magic, codec = case.split(":")
        info = segment_for(SegmentSpec(magic=int(magic), codec=codec, target_bytes=args.size_mb << 20))
        n, path = info.records, str(info.path)
        res: dict = {"case": f"v{magic} {codec}", "records": n, "mb": info.file_bytes / 1e6}

        def timed(code: str, tree: Path = ROOT, *extra: str) -> dict:
            e = dict(env, PYTHONPATH=str(tree))
            argv = [sys.executable, "-c", code, path, str(WARM_UP), *extra]
            runs = [child(argv, e) for _ in range(args.repeat)]
            b = best(runs, args.clock)
            assert b["rows"] == n, (b, n)
            _, _, rss = peak(argv, e)
            return {**b, "rss": rss}

        if not args.no_kafka_python:
            res["kafka_python"] = timed(KAFKA_PYTHON)
        res["to_arrow"] = timed(TO_ARROW)
        if args.before is not None:
            res["before"] = timed(TO_ARROW, args.before.resolve())
        for fmt in ("parquet", "arrow"):
            res[f"in_process_{fmt}"] = timed(EXPORT_IN_PROCESS, ROOT, fmt)
            if args.before is not None:
                res[f"in_process_{fmt}_before"] = timed(EXPORT_IN_PROCESS, args.before.resolve(), fmt)
        exports = [(fmt, jobs, []) for fmt in ("parquet", "arrow") for jobs in ("1", "2")]
        if args.max_file_rows:
            exports += [("parquet", jobs, ["--max-file-rows", str(args.max_file_rows)]) for jobs in ("1", "2")]
        with tempfile.TemporaryDirectory() as tmp:
            for fmt, jobs, more in exports:
                runs = []
                for i in range(args.repeat):
                    out = Path(tmp) / f"{fmt}-{jobs}-{i}"
                    os.sync()  # the last run's output on disk: its writeback would slow this run
                    w, c, rss = peak([*KSEG_COMMAND, "export", "--format", fmt, "-j", jobs,
                                      path, "-o", str(out), *more], env)
                    runs.append({"wall": w, "cpu": c, "rss": rss, "bytes": sum(f.stat().st_size
                                                                                 for f in out.iterdir())})
                    shutil.rmtree(out)  # gigabytes of Arrow files would crowd the input out of the cache
                res[f"export_{fmt}" + ("_parts" if more else "") + ("" if jobs == "1" else "_j2")] = \
                    best(runs, args.clock)
        rows.append(res)

    clock = args.clock
    print(f"\nrecords into Arrow and Parquet ({clock} seconds, best of {args.repeat}; M rec/s; peak RSS MB)")
    for r in rows:
        n = r["records"]
        print(f"\n{r['case']}: {n} records, {r['mb']:.0f} MB")

        def line(name: str, d: dict, base: dict | None) -> None:
            ratio = f"  {base[clock] / d[clock]:5.1f}x kafka-python" if base else ""
            print(f"  {name:14} {d[clock]:7.3f} s  {n / d[clock] / 1e6:6.2f} M rec/s  {d['rss']:6.0f} MB{ratio}")

        base = r.get("kafka_python")
        if base:
            line("kafka-python", base, None)
        line("to_arrow", r["to_arrow"], base)
        # the first call's time is half the kernel's page faults on the result's fresh memory
        print(f"  {'  again':14} {r['to_arrow']['again'][clock]:7.3f} s  "
              f"{n / r['to_arrow']['again'][clock] / 1e6:6.2f} M rec/s  (a second call in the same process)")
        if "before" in r:
            line("to_arrow before", r["before"], base)
            print(f"  {'':14} to_arrow {r['before'][clock] / r['to_arrow'][clock]:.1f}x faster than before")
        for fmt in ("parquet", "arrow"):
            line(f"export {fmt}", r[f"export_{fmt}"], base)
            j2 = r[f"export_{fmt}_j2"]
            line("  -j 2", j2, base)
            # -j 2 reads on one core while the writer encodes on the other: its gain is in wall time
            print(f"  {'':14} wall {r[f'export_{fmt}']['wall']:.3f} s -> {j2['wall']:.3f} s with -j 2 "
                  f"({n / j2['wall'] / 1e6:.2f} M rec/s)")
        if "export_parquet_parts" in r:
            line(f"parquet parts of {args.max_file_rows}", r["export_parquet_parts"], base)
            line("  -j 2", r["export_parquet_parts_j2"], base)
        for fmt in ("parquet", "arrow"):
            for key, name in ((f"in_process_{fmt}", f"{fmt} in proc"), (f"in_process_{fmt}_before", "  before")):
                if key in r:
                    d = r[key]
                    print(f"  {name:14} {d[clock]:7.3f} s  {n / d[clock] / 1e6:6.2f} M rec/s  {d['rss']:6.0f} MB"
                          f"  (writer {d['writer']:.3f} s CPU, the rest {d['cpu'] - d['writer']:.3f} s)")
        print(f"  {'':14} parquet file {r['export_parquet']['bytes'] / 1e6:.1f} MB, arrow file "
              f"{r['export_arrow']['bytes'] / 1e6:.1f} MB")
    if os.environ.get("BENCH_JSON"):
        Path(os.environ["BENCH_JSON"]).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
