#!/usr/bin/env python3
"""kseg dump against the real kafka-dump-log.sh on the same segments.

Both are timed from outside as a user runs them, output to /dev/null: Kafka's
DumpLogSegments with the JVM options kafka-run-class.sh uses (JVM start-up
included), ``kseg dump --format kafka`` (interpreter start-up included). The
segments come from ``common.py``'s generator (v2 none, v2 lz4, v2 zstd, v1 gzip, v1 none,
100 MB each by default; ``--segments`` picks some), one per payload kind of ``--payloads``
(ascii, accented, binary, large; all by default); the jars from ``tests/kafka/brokers.py``
(Maven Central; ``KSEG_KAFKA_CACHE`` points at another checkout's ``.cache/kafka``).

Every row also compares the two outputs (SHA-256, column 'same'); where they differ, the
first differing line of each is printed (and saved with ``--json``).

    modes:  batches    kafka-dump-log.sh --files F            kseg dump --format kafka F
            deep       ... --deep-iteration                   ... --records
            deep-data  ... --deep-iteration --print-data-log  ... --records --payload utf8

    .venv/bin/python benchmarks/bench_kafka_dump.py                   # 100 MB segments, Kafka 4.x
    .venv/bin/python benchmarks/bench_kafka_dump.py --size-mb 5 --release 3.9 --repeat 1
    .venv/bin/python benchmarks/bench_kafka_dump.py --size-mb 20 --segments 2:none,2:lz4 --modes deep-data
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "kafka"))

import brokers  # noqa: E402
from common import PAYLOADS, compile_kseg, parse_payloads, segment_for, spec_for  # noqa: E402

KSEG = str(Path(sys.executable).with_name("kseg"))
SEGMENTS = ((2, "none"), (2, "lz4"), (2, "zstd"), (1, "gzip"), (1, "none"))
MODES = {
    "batches": ([], []),
    "deep": (["--deep-iteration"], ["--records"]),
    "deep-data": (["--deep-iteration", "--print-data-log"], ["--records", "--payload", "utf8"]),
}


def timed(cmd: list[str], repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds (the child's user + system) over ``repeat`` runs, output to /dev/null."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as null:
            proc = subprocess.run(cmd, stdout=null, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[-6:])} failed ({proc.returncode}): {proc.stderr[-500:]!r}")
        best_wall = min(best_wall, wall)
        best_cpu = min(best_cpu, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best_wall, best_cpu


def compare_outputs(kafka_cmd: list[str], kseg_cmd: list[str]) -> dict:
    """Both commands' standard outputs, read line by line as they come (a dump of 100 MB prints
    0.5 GB): their SHA-256 and, where they differ, the first differing line of each (1-based
    number, byte column, both lines)."""
    digests = [hashlib.sha256(), hashlib.sha256()]
    first_diff = None
    with subprocess.Popen(kafka_cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as a, \
            subprocess.Popen(kseg_cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as b:
        assert a.stdout is not None and b.stdout is not None
        number = 0
        while True:
            lines = a.stdout.readline(), b.stdout.readline()
            if not lines[0] and not lines[1]:
                break
            number += 1
            for h, line in zip(digests, lines):
                h.update(line)
            if first_diff is None and lines[0] != lines[1]:
                column = next((i for i, (x, y) in enumerate(zip(*lines)) if x != y), min(map(len, lines)))
                first_diff = {"line": number, "column": column,
                              "kafka_excerpt": excerpt(lines[0], column), "kseg_excerpt": excerpt(lines[1], column),
                              "kafka": lines[0].decode("utf-8", "backslashreplace"),
                              "kseg": lines[1].decode("utf-8", "backslashreplace")}
    kafka_sha, kseg_sha = (h.hexdigest() for h in digests)
    return {"same": kafka_sha == kseg_sha, "kafka_sha256": kafka_sha, "kseg_sha256": kseg_sha,
            "first_diff": first_diff}


def excerpt(line: bytes, column: int, width: int = 100) -> str:
    """The bytes of a (long) line around ``column``, as repr."""
    start = max(0, column - width // 2)
    return ("..." if start else "") + repr(line[start:start + width]) + ("..." if len(line) > start + width else "")


def main() -> int:
    compile_kseg()  # kseg as installed: bytecode cached
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default="4", choices=sorted(brokers.RELEASES))
    ap.add_argument("--size-mb", type=float, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--segments", default=",".join(f"{m}:{c}" for m, c in SEGMENTS),
                    help="magic:codec,... (default: %(default)s)")
    ap.add_argument("--payloads", default=",".join(PAYLOADS), help="payload kinds (default: %(default)s)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    try:
        payloads = parse_payloads(args.payloads)
    except ValueError as exc:
        ap.error(str(exc))
    segments = [(int(m), c) for m, c in (s.split(":") for s in args.segments.split(",") if s)]
    brokers.fetch(args.release)
    results = []
    print(f"Kafka {brokers.version(args.release)} DumpLogSegments vs kseg dump --format kafka; "
          f"best of {args.repeat}, wall s (cpu s)")
    print(f"{'segment':<34} {'payload':<9} {'mode':<10} {'kafka':>16} {'kseg':>16} {'kafka/kseg wall':>15} "
          f"{'cpu':>7} {'same':>5}")
    failed = False
    for (magic, codec), payload in ((s, p) for s in segments for p in payloads):
        info = segment_for(spec_for(magic, codec, int(args.size_mb * (1 << 20)), payload),
                           log=lambda m: print(m, file=sys.stderr))
        for mode in args.modes.split(","):
            kafka_flags, kseg_flags = MODES[mode]
            kafka_cmd = brokers.dump_log_segments_command(args.release, "--files", str(info.path), *kafka_flags,
                                                          as_kafka_run_class=True)
            kseg_cmd = [KSEG, "dump", "--format", "kafka", "--kafka-version", args.release, *kseg_flags,
                        str(info.path)]
            kafka, kseg = timed(kafka_cmd, args.repeat), timed(kseg_cmd, args.repeat)
            cmp = compare_outputs(kafka_cmd, kseg_cmd)  # what is timed is the same text
            same = cmp["same"]
            name = f"v{magic} {codec} ({info.file_bytes / 1e6:.0f} MB)"
            print(f"{name:<34} {payload:<9} {mode:<10} {kafka[0]:7.2f} ({kafka[1]:6.2f}) {kseg[0]:7.2f} "
                  f"({kseg[1]:6.2f}) {kafka[0] / kseg[0]:14.2f}x {kafka[1] / kseg[1]:6.2f}x "
                  f"{'yes' if same else 'NO':>5}", flush=True)
            diff = cmp["first_diff"]
            if diff is not None:
                print(f"  first difference: line {diff['line']}, byte {diff['column']}\n"
                      f"    kafka: {diff['kafka_excerpt']}\n    kseg:  {diff['kseg_excerpt']}", flush=True)
            results.append({"segment": info.spec.name, "payload": payload, "file_bytes": info.file_bytes,
                            "records": info.records, "mode": mode, "kafka_wall": kafka[0], "kafka_cpu": kafka[1],
                            "kseg_wall": kseg[0], "kseg_cpu": kseg[1], "same_output": same,
                            "kafka_sha256": cmp["kafka_sha256"], "kseg_sha256": cmp["kseg_sha256"],
                            "first_diff": diff})
            failed = failed or not same
    if args.json:
        args.json.write_text(json.dumps({"release": args.release, "kafka_version": brokers.version(args.release),
                                         "results": results}, indent=1) + "\n")
    if failed:
        print("kseg's output differs from DumpLogSegments' where 'same' says NO", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
