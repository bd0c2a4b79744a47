"""``kseg dump`` speed in every format against kafka-python + json.dumps, in one run.

For each case (v2 none/lz4/zstd, v1 gzip/none and v0 none by default, ``--size-mb`` each) and
each payload kind of ``--payloads`` (ascii, accented, binary, large: common.PAYLOADS; all by
default) it times, with stdout to /dev/null and interpreter start-up included:

  jsonl   kseg dump --records --format jsonl FILE
  kafka   kseg dump --records --format kafka --payload utf8 FILE
  text    kseg dump --records FILE
  python  a kafka-python script printing json.dumps of the same record fields
          (bench_read._kafka_dump)

and, with ``--pure``, the same kseg commands with KSEG_PURE_PYTHON=1 (the Python twins).
Then on a ``--seek-gb`` partition (one v2 lz4 segment with its .index/.timeindex) the wall
time until the first line of ``dump --from-offset <middle>`` arrives, and the peak RSS of a
whole jsonl dump. CPU time (user+sys of the child) by default: the machine is shared.

    .venv/bin/python benchmarks/bench_dump.py                       # 100 MB cases, 1 GB seek
    .venv/bin/python benchmarks/bench_dump.py --size-mb 10 --seek-gb 0.1 --repeat 1
    .venv/bin/python benchmarks/bench_dump.py --size-mb 20 --cases 2:none,2:lz4 --payloads binary,large --seek-gb 0
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

from bench_read import kafka_dump_cmd, kseg_command  # noqa: E402
from common import (DEFAULT_DATA_DIR, PAYLOADS, compile_kseg, generate_segment, machine_info, measure,  # noqa: E402
                    parse_payloads, segment_for, spec_for, warm_file)

FORMATS = {
    "jsonl": ["--records", "--format", "jsonl"],
    "kafka": ["--records", "--format", "kafka", "--payload", "utf8"],
    "text": ["--records"],
}
TARGETS = {"jsonl": 5.0, "kafka": 5.0}  # x kafka-python + json.dumps
TEXT_VS_JSONL = 1.5
KAFKA_VS_JSONL = 1.5  # kafka lines with --payload utf8 within 1.5x of jsonl's time (issue 27)
SEEK_TARGET_S = 0.1
RSS_TARGET_MB = 100


def run_timed(cmd: list[str], args: argparse.Namespace, file: str, env: dict | None = None) -> dict:
    def run() -> None:
        with open(os.devnull, "wb") as devnull:
            proc = subprocess.run(cmd, stdout=devnull, stderr=subprocess.PIPE, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')}")

    t = measure(run, repeat=args.repeat, budget=args.budget, clock=args.clock, children=True,
                before=lambda: warm_file(file))
    return {"seconds": t.seconds, "wall": t.wall, "cpu": t.cpu, "runs": t.runs}


def peak_rss_mb(cmd: list[str]) -> float:
    """Peak RSS of one run of ``cmd`` (stdout to /dev/null), in MB, from a fresh helper process."""
    code = ("import resource, subprocess, sys; "
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def first_line_seconds(cmd: list[str], repeat: int) -> float:
    """Best wall time from start to the first output line (the process is then stopped)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - t0
        proc.kill()
        proc.wait()
        if not line:
            raise SystemExit(f"{' '.join(cmd)} printed nothing")
        best = min(best, elapsed)
    return best


def startup_seconds(args: argparse.Namespace) -> float:
    empty = Path(args.data_dir) / "empty" / "00000000000000000000.log"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_bytes(b"")
    return first_or_run(kseg_command() + ["dump", "--records", "--format", "jsonl", str(empty)], args)


def first_or_run(cmd: list[str], args: argparse.Namespace) -> float:
    best = float("inf")
    for _ in range(max(3, args.repeat)):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def measure_case(magic: int, codec: str, payload: str, args: argparse.Namespace, log) -> dict:
    info = segment_for(spec_for(magic, codec, int(args.size_mb * (1 << 20)), payload), data_dir=args.data_dir, log=log)
    path = str(info.path)
    res: dict = {"case": f"v{magic} {codec} {payload}", "payload": payload, "records": info.records,
                 "file_mb": info.file_bytes / 1e6}
    log(f"v{magic} {codec} {payload}: {info.records:,} records, {info.file_bytes / 1e6:.0f} MB")
    res["python"] = run_timed(kafka_dump_cmd(info), args, path)
    for fmt, opts in FORMATS.items():
        log(f"  {fmt} ...")
        res[fmt] = run_timed(kseg_command() + ["dump", *opts, path], args, path)
        if args.pure:
            env = dict(os.environ, KSEG_PURE_PYTHON="1")
            res[f"{fmt}_pure"] = run_timed(kseg_command() + ["dump", *opts, path], args, path, env=env)
    py = res["python"]["seconds"]
    for fmt in FORMATS:
        res[f"{fmt}_rps"] = info.records / res[fmt]["seconds"]
        res[f"{fmt}_ratio"] = py / res[fmt]["seconds"]
    res["python_rps"] = info.records / py
    res["text_vs_jsonl"] = res["text"]["seconds"] / res["jsonl"]["seconds"]
    res["kafka_vs_jsonl"] = res["kafka"]["seconds"] / res["jsonl"]["seconds"]
    return res


def seek_case(args: argparse.Namespace, log) -> dict:
    """A one-segment partition of --seek-gb (v2 lz4) with its indexes; the first line of a dump
    from its middle offset, and the peak RSS of a whole jsonl dump of it."""
    info = generate_segment(None, 2, "lz4", int(args.seek_gb * (1 << 30)), data_dir=args.data_dir, log=log)
    path = info.path
    index = path.with_suffix(".index")
    if not index.exists() or index.stat().st_mtime < path.stat().st_mtime:
        log(f"  building {index.name} and .timeindex ...")
        subprocess.run(kseg_command() + ["index", "--rebuild", str(path)], check=True,
                       stderr=subprocess.DEVNULL)
    middle = info.records // 2
    res: dict = {"file_mb": info.file_bytes / 1e6, "records": info.records, "from_offset": middle}
    cmd = kseg_command() + ["dump", "--records", "--format", "jsonl", "--from-offset", str(middle), str(path)]
    warm_file(path)
    res["first_line_s"] = first_line_seconds(cmd, max(3, args.repeat))
    code = ("import sys, time; from pathlib import Path; "
            "from kseg.ops.dump import BatchEvent, DumpOptions, dump_paths; "
            "t0 = time.perf_counter(); "
            "ev = next(e for e in dump_paths([Path(sys.argv[1])], DumpOptions(records=True, "
            "from_offset=int(sys.argv[2]))) if isinstance(e, BatchEvent)); "
            "print(time.perf_counter() - t0, ev.records[0].offset)")
    best = float("inf")
    for _ in range(max(3, args.repeat)):
        out = subprocess.run([sys.executable, "-c", code, str(path), str(middle)], capture_output=True, text=True,
                             check=True).stdout.split()
        if int(out[1]) > middle:
            raise SystemExit(f"seek test: first record {out[1]}, wanted {middle}")
        best = min(best, float(out[0]))
    res["first_record_inproc_s"] = best  # kseg imported: the seek and the first batch only
    ts = 1_700_000_000_000 + middle // 4  # common.RECORDS_PER_MS
    cmd_t = kseg_command() + ["dump", "--records", "--format", "jsonl", "--from-time", str(ts), str(path)]
    res["first_line_time_s"] = first_line_seconds(cmd_t, max(3, args.repeat))
    log("  peak RSS of a whole jsonl dump ...")
    res["rss_mb"] = peak_rss_mb(kseg_command() + ["dump", "--records", "--format", "jsonl", str(path)])
    return res


def report(results: list[dict], seek: dict | None, startup: float, args: argparse.Namespace) -> list[tuple]:
    clock = "CPU" if args.clock == "cpu" else "wall"
    print(f"\n`kseg dump` vs kafka-python + json.dumps ({clock} seconds, best of {args.repeat}, stdout to "
          f"/dev/null, start-up {startup * 1000:.0f} ms included)\n")
    head = ["case", "records", "kafka-python+json", "jsonl", "kafka", "text", "jsonl x", "kafka x", "text/jsonl",
            "kafka/jsonl"]
    if args.pure:
        head += ["jsonl (pure)", "kafka (pure)", "text (pure)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        row = [r["case"], f"{r['records']:,}", f"{r['python']['seconds']:.2f} s"]
        row += [f"{r[f]['seconds']:.2f} s ({r[f + '_rps'] / 1e6:.2f}M/s)" for f in FORMATS]
        row += [f"{r['jsonl_ratio']:.1f}x", f"{r['kafka_ratio']:.1f}x", f"{r['text_vs_jsonl']:.2f}",
                f"{r['kafka_vs_jsonl']:.2f}"]
        if args.pure:
            row += [f"{r[f + '_pure']['seconds']:.2f} s" for f in FORMATS]
        print("| " + " | ".join(row) + " |")
    verdicts = []
    for r in results:
        for fmt, want in TARGETS.items():
            verdicts.append((r[f"{fmt}_ratio"] >= want, f"{r['case']} {fmt} >= {want:g}x kafka-python+json",
                             f"{r[f'{fmt}_ratio']:.1f}x"))
        verdicts.append((r["text_vs_jsonl"] <= TEXT_VS_JSONL, f"{r['case']} text within {TEXT_VS_JSONL}x of jsonl",
                         f"{r['text_vs_jsonl']:.2f}x"))
        verdicts.append((r["kafka_vs_jsonl"] <= KAFKA_VS_JSONL,
                         f"{r['case']} kafka --payload utf8 within {KAFKA_VS_JSONL}x of jsonl",
                         f"{r['kafka_vs_jsonl']:.2f}x"))
    if seek is not None:
        print(f"\nSeek: {seek['file_mb']:.0f} MB segment, {seek['records']:,} records: first line of "
              f"--from-offset {seek['from_offset']} after {seek['first_line_s'] * 1000:.0f} ms, of --from-time "
              f"after {seek['first_line_time_s'] * 1000:.0f} ms (wall, start-up included; start-up alone "
              f"{startup * 1000:.0f} ms); first record in-process (kseg imported) after "
              f"{seek['first_record_inproc_s'] * 1000:.1f} ms; "
              f"peak RSS of a whole jsonl dump {seek['rss_mb']:.0f} MB")
        verdicts.append((seek["first_record_inproc_s"] < SEEK_TARGET_S,
                         f"first record from the middle < {SEEK_TARGET_S} s (after start-up)",
                         f"{seek['first_record_inproc_s'] * 1000:.1f} ms; "
                         f"{seek['first_line_s'] * 1000:.0f} ms with the CLI's start-up"))
        verdicts.append((seek["rss_mb"] < RSS_TARGET_MB, f"peak RSS < {RSS_TARGET_MB} MB", f"{seek['rss_mb']:.0f} MB"))
    print("\nTargets")
    for ok, what, got in verdicts:
        print(f"  {'PASS' if ok else 'FAIL'}  {what}: {got}")
    return verdicts


def main(argv: list[str] | None = None) -> int:
    compile_kseg()  # kseg as installed: bytecode cached
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mb", type=float, default=100)
    p.add_argument("--cases", default="2:none,2:lz4,2:zstd,1:gzip,1:none,0:none", help="magic:codec,... (default: %(default)s)")
    p.add_argument("--payloads", default=",".join(PAYLOADS), help="payload kinds (default: %(default)s)")
    p.add_argument("--seek-gb", type=float, default=1.0, help="partition size for the seek test (0: skip)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--budget", type=float, default=60.0, help="stop repeating a measurement after this many s")
    p.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    p.add_argument("--pure", action="store_true", help="also time the Python twins (KSEG_PURE_PYTHON=1)")
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--json", metavar="FILE", help="also save every figure as JSON")
    args = p.parse_args(argv)
    try:
        payloads = parse_payloads(args.payloads)
    except ValueError as exc:
        p.error(str(exc))
    t_start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    machine = machine_info()
    startup = startup_seconds(args)
    results = []
    for case in filter(None, args.cases.split(",")):
        magic, codec = case.split(":")
        for payload in payloads:
            results.append(measure_case(int(magic), codec, payload, args, log))
    seek = seek_case(args, log) if args.seek_gb > 0 else None
    print(f"\nkseg dump benchmark: {machine['date']}, {machine['cpu_model']} (nproc {machine['nproc']}), "
          f"Python {machine['python']}; {args.size_mb:g} MB segments")
    verdicts = report(results, seek, startup, args)
    print(f"\n{sum(v[0] for v in verdicts)}/{len(verdicts)} targets met; "
          f"total run time {time.perf_counter() - t_start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine, "args": vars(args), "startup_s": startup,
                                               "results": results, "seek": seek}, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
