#!/usr/bin/env python3
"""kseg read speed against kafka-python and the bare codec/CRC speed, on the same segments.

For each message format (magic) and codec it generates (or reuses) one segment
(see ``common.py``) and measures, each in a fresh process pinned to one core:

  deep iteration   every record of every batch, touching offset, timestamp, key,
                   value and headers: kseg (C accelerator), kseg pure Python
                   (KSEG_PURE_PYTHON=1) and kafka-python (MemoryRecords)
  dump jsonl       the real ``kseg dump --records --format jsonl FILE > /dev/null``
                   against a kafka-python script printing json.dumps of the same
                   fields (offset, timestamp, key, value as utf8, headers) to /dev/null;
                   both timed from outside (interpreter start-up included)
  verify --quick   kseg's quick verify (framing + CRC) against a bare walk
                   (mmap, 12-byte framing, crc32c / zlib.crc32 per entry, compare)
  verify           kseg's full verify (decompress and check every record)
  bare verify      the work a full verify of v2 cannot avoid: CRC-32C of every batch and
                   its records decompressed, by the libraries kseg uses, from a tight loop
  codec            the codec library alone decompressing every batch payload

and prints the figures side by side with ratios, then one PASS/FAIL line per target.

    .venv/bin/python benchmarks/bench_read.py                 # the full matrix, 100 MB each
    .venv/bin/python benchmarks/bench_read.py --quick-run     # 5 MB each, a smoke test
    .venv/bin/python benchmarks/bench_read.py --magics 2 --codecs none,gzip --json out.json
    .venv/bin/python benchmarks/bench_read.py --quick-run --magics 2 --codecs gzip --profile deep_kseg
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import (  # noqa: E402
    CODECS,
    DEFAULT_DATA_DIR,
    KSEG_COMMAND,
    measure,
    warm_file,
    codec_allowed,
    compile_kseg,
    generate_segment,
    machine_info,
    pin_to_one_core,
)

DEEP_TARGET = {0: 2.5, 1: 2.5, 2: 2.0}  # kseg / kafka-python, deep iteration
QUICK_TARGET = 0.5  # verify --quick / bare walk
FULL_VERIFY_TARGET = 2_000_000  # records/s, uncompressed v2
FULL_VS_BARE_TARGET = 0.8  # full verify of v2 / (CRC-32C + decompression alone), by time
BARE_VERIFY_CODECS = ("none", "gzip", "lz4", "zstd")
SHORT_REPEAT = 7  # runs for verify --quick and the bare walk (cheap, so noisy with few runs)
PURE_KINDS = ("deep", "verify_quick", "verify_full")
INTERNAL_ARGS = ("worker", "file", "magic", "codec", "profile_worker")

# =========================================================================== workers
# Each runs in its own process (``--worker KIND``) so that KSEG_PURE_PYTHON can be
# set per run, and so that no run inherits another's heap. Each returns a dict with
# at least "seconds" (best of the runs) and "records".


def w_deep_kseg(path: str, magic: int, codec: str) -> dict:
    import kseg
    from kseg.log import fast

    def run() -> int:
        n = 0
        records_of = kseg.batch_records
        for batch in kseg.open_segment(path).batches():
            for r in records_of(batch):
                o = r.offset  # noqa: F841
                t = r.timestamp  # noqa: F841
                k = r.key  # noqa: F841
                v = r.value  # noqa: F841
                h = r.headers  # noqa: F841
                n += 1
        return n

    return {"run": run, "accelerated": fast.ACCELERATED}


def w_deep_kafka(path: str, magic: int, codec: str) -> dict:
    from kafka.record.memory_records import MemoryRecords

    def run() -> int:
        with open(path, "rb") as f:
            data = f.read()
        records = MemoryRecords(data)
        next_batch = records.next_batch
        n = 0
        while True:
            batch = next_batch()
            if batch is None:
                break
            for r in batch:
                o = r.offset  # noqa: F841
                t = r.timestamp  # noqa: F841
                k = r.key  # noqa: F841
                v = r.value  # noqa: F841
                h = r.headers  # noqa: F841
                n += 1
        return n

    return {"run": run}


def _kafka_dump(path: str, out) -> int:
    """kafka-python's records as JSON lines with the fields kseg's jsonl has."""
    from kafka.record.memory_records import MemoryRecords

    dumps = json.JSONEncoder(ensure_ascii=False).encode
    write = out.write
    with open(path, "rb") as f:
        data = f.read()
    records = MemoryRecords(data)
    n = 0
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        for r in batch:
            key, value = r.key, r.value
            write(dumps({
                "offset": r.offset,
                "timestamp": r.timestamp,
                "key": None if key is None else key.decode("utf-8", "backslashreplace"),
                "value": None if value is None else value.decode("utf-8", "backslashreplace"),
                "headers": [{"key": hk, "value": None if hv is None else hv.decode("utf-8", "backslashreplace")}
                            for hk, hv in r.headers],
            }))
            write("\n")
            n += 1
    return n


def w_dump_kafka(path: str, magic: int, codec: str) -> dict:
    def run() -> int:
        with open(os.devnull, "w", encoding="utf-8") as out:
            return _kafka_dump(path, out)

    return {"run": run}


def w_dump_kseg(path: str, magic: int, codec: str) -> dict:
    """kseg's dump in-process (what the CLI does, minus start-up and argument parsing)."""
    from kseg.ops.dump import BatchEvent, DumpOptions, dump_paths
    from kseg.render.payload import BUILTIN
    from kseg.render.dump import JsonlRenderer

    def run() -> int:
        n = 0
        with open(os.devnull, "w", encoding="utf-8") as out:
            renderer = JsonlRenderer(out, sys.stderr, BUILTIN["utf8"], BUILTIN["utf8"])
            for ev in dump_paths([Path(path)], DumpOptions(records=True)):
                renderer(ev)
                if isinstance(ev, BatchEvent) and ev.records:
                    n += len(ev.records)
            renderer.close()
        return n

    return {"run": run}


def _verify(path: str, quick: bool) -> dict:
    from kseg.log import fast
    from kseg.ops.verify import VerifyOptions, verify_paths

    def run() -> int:
        report = verify_paths([path], VerifyOptions(quick=quick))
        if not report.ok:
            raise SystemExit(f"verify finds errors in {path}: {report.files[0].errors[:3]}")
        return report.files[0].records

    return {"run": run, "accelerated": fast.ACCELERATED}


def w_verify_quick(path: str, magic: int, codec: str) -> dict:
    return _verify(path, True)


def w_verify_full(path: str, magic: int, codec: str) -> dict:
    return _verify(path, False)


def w_bare_walk(path: str, magic: int, codec: str) -> dict:
    """The floor for a framing + CRC check in Python: mmap, one struct call and one
    CRC call per entry, compare. Counts entries (not records)."""
    import mmap
    import struct
    import zlib

    from crc32c import crc32c

    # offset, length, v2 partitionLeaderEpoch | legacy crc, magic, v2 crc | legacy attrs+...
    head = struct.Struct(">qiIbI").unpack_from

    def run() -> int:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        mv = memoryview(mm)
        size = len(mm)
        pos = entries = bad = 0
        while pos + 21 <= size:
            _, length, legacy_crc, mgc, v2_crc = head(mm, pos)
            end = pos + 12 + length
            if end > size:
                break
            if mgc >= 2:
                ok = crc32c(mv[pos + 21:end]) == v2_crc
            else:
                ok = zlib.crc32(mv[pos + 16:end]) == legacy_crc
            if not ok:
                bad += 1
            entries += 1
            pos = end
        mv.release()
        mm.close()
        if bad or pos != size:
            raise SystemExit(f"bare walk: {bad} bad CRCs, stopped at {pos} of {size}")
        return entries

    return {"run": run}


def w_bare_verify(path: str, magic: int, codec: str) -> dict:
    """What a full verify of a v2 segment cannot avoid: mmap the file, then per batch its
    CRC-32C and its records decompressed, each by one library call (kseg's CRC-32C; ISA-L
    for gzip, liblz4's frame decoder for lz4, a zstandard stream per batch as Kafka's frames
    carry no content size). Counts batches; fails on a bad CRC."""
    import mmap
    import struct

    from kseg.checksums import crc32c
    from kseg.facts.record_batch_v2 import CRC_START, RECORD_BATCH_OVERHEAD

    decompress: Callable[[Any], Any]
    if codec == "none":
        def decompress(p: Any) -> Any:
            return p
    elif codec == "gzip":
        from isal import isal_zlib

        def decompress(p: Any) -> Any:
            return isal_zlib.decompress(p, wbits=31)
    elif codec == "lz4":
        import lz4.frame

        decompress = lz4.frame.decompress
    elif codec == "zstd":
        import zstandard

        dctx = zstandard.ZstdDecompressor()

        def decompress(p: Any) -> Any:
            return dctx.decompressobj().decompress(p)
    else:
        raise SystemExit(f"no bare verify for v2 {codec}")
    head = struct.Struct(">qiIbI").unpack_from  # offset, length, leader epoch, magic, crc

    def run() -> int:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        mv = memoryview(mm)
        size = len(mm)
        pos = batches = 0
        while pos + RECORD_BATCH_OVERHEAD <= size:
            length = head(mm, pos)[1]
            end = pos + 12 + length
            if crc32c(mv[pos + CRC_START:end]) != head(mm, pos)[4]:
                raise SystemExit(f"bare verify: bad CRC at byte {pos}")
            decompress(mv[pos + RECORD_BATCH_OVERHEAD:end])
            batches += 1
            pos = end
        mv.release()
        mm.close()
        return batches

    return {"run": run}


def _payloads(path: str, magic: int, codec: str) -> tuple[list[bytes], int]:
    """Every compressed payload (v2 records section, legacy wrapper value) as bytes,
    ready for the codec library; and the record count."""
    import kseg
    from kseg.log.decode import legacy_value_region
    from kseg.formats.record_batch_v2 import RECORD_BATCH_OVERHEAD

    out: list[bytes] = []
    records = 0
    for b in kseg.open_segment(path).batches():
        if b.magic >= 2:
            out.append(bytes(b.raw[RECORD_BATCH_OVERHEAD:]))
            records += b.record_count or 0
        else:
            value = legacy_value_region(b)[1]
            if value is None:
                raise SystemExit(f"{path}: a compressed wrapper with a null value at byte {b.position}")
            out.append(bytes(value))
            records += len(kseg.batch_records(b))
    if codec == "lz4" and magic == 0:
        # Kafka 0.8-0.9 wrote a wrong LZ4 header checksum in magic 0; liblz4 checks it.
        from kseg.codecs.kafka_lz4 import fix_header_checksum

        out = [fix_header_checksum(p) for p in out]
    return out, records


def w_codec(path: str, magic: int, codec: str) -> dict:
    """The codec library alone: decompress every payload; MB/s of output. Framing that
    is Kafka's, not the codec's (xerial snappy chunks), is parsed before timing."""
    payloads, records = _payloads(path, magic, codec)
    units: list[Any] = list(payloads)
    one: Callable[[Any], int]
    if codec == "gzip":
        import zlib

        def one(p: bytes) -> int:
            return len(zlib.decompress(p, 16 + zlib.MAX_WBITS))
    elif codec == "snappy":
        import cramjam

        from kseg.codecs.xerial import snappy_blocks

        units = [[bytes(blk) for _, blk in snappy_blocks(memoryview(p))] for p in payloads]
        decompress_raw = cramjam.snappy.decompress_raw

        def one(blocks: list[bytes]) -> int:
            return sum(len(decompress_raw(blk)) for blk in blocks)
    elif codec == "lz4":
        import lz4.frame

        def one(p: bytes) -> int:
            return len(lz4.frame.decompress(p))
    elif codec == "zstd":
        import zstandard

        dctx = zstandard.ZstdDecompressor()

        def one(p: bytes) -> int:  # Kafka's frames carry no content size: stream them
            return len(dctx.decompressobj().decompress(p))
    else:
        raise SystemExit(f"no codec to time for {codec}")

    def run() -> int:
        return sum(one(u) for u in units)

    return {"run": run, "records": records, "compressed_bytes": sum(map(len, payloads))}


WORKERS = {
    "deep_kseg": w_deep_kseg,
    "deep_kafka": w_deep_kafka,
    "dump_kafka": w_dump_kafka,
    "dump_kseg": w_dump_kseg,
    "verify_quick": w_verify_quick,
    "verify_full": w_verify_full,
    "bare_walk": w_bare_walk,
    "bare_verify": w_bare_verify,
    "codec": w_codec,
}
KSEG_WORKERS = ("deep_kseg", "verify_quick", "verify_full")  # the rest time what a user would otherwise run


def worker_main(args: argparse.Namespace) -> None:
    if args.worker in KSEG_WORKERS:
        from kseg.allocator import tune_for_chunks

        tune_for_chunks()  # as the kseg command does: kseg in process as on the command line
    setup = WORKERS[args.worker](args.file, args.magic, args.codec)
    run = setup.pop("run")
    setup["warm_mbps"] = warm_file(args.file)  # and again before each run:
    if args.profile_worker:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        n = run()
        prof.disable()
        stats = pstats.Stats(prof, stream=sys.stderr)
        stats.sort_stats("tottime").print_stats(args.profile_top)
        print(json.dumps({"seconds": 0.0, "value": n}))
        return
    t = measure(run, repeat=args.repeat, budget=args.budget, clock=args.clock,
                before=lambda: warm_file(args.file))
    print(json.dumps(dict(setup, seconds=t.seconds, wall=t.wall, cpu=t.cpu, runs=t.runs, value=t.result)))


# =========================================================================== driver


def _worker_cmd(kind: str, info, args: argparse.Namespace, *extra: str, repeat: int | None = None) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--worker", kind, "--file", str(info.path),
            "--magic", str(info.spec.magic), "--codec", info.spec.codec, "--repeat", str(repeat or args.repeat),
            "--budget", str(args.budget), "--clock", args.clock, *extra]


def run_worker(kind: str, info, args: argparse.Namespace, *, pure: bool = False, repeat: int | None = None) -> dict:
    env = dict(os.environ)
    env.pop("KSEG_PURE_PYTHON", None)
    if pure:
        env["KSEG_PURE_PYTHON"] = "1"
    proc = subprocess.run(_worker_cmd(kind, info, args, repeat=repeat), env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"worker {kind} failed on {info.path}:\n{proc.stderr}{proc.stdout}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if "accelerated" in out and out["accelerated"] == pure:
        raise SystemExit(f"worker {kind}: expected accelerated={not pure}, got {out['accelerated']}")
    return out


def kseg_command() -> list[str]:
    exe = Path(sys.executable).with_name("kseg")
    if exe.exists():
        return [str(exe)]
    return KSEG_COMMAND


def time_command(cmd: list[str], args: argparse.Namespace, env: dict | None = None,
                 file: str | None = None) -> dict:
    """Best time of a command with stdout to /dev/null (start-up included)."""
    def run() -> None:
        with open(os.devnull, "wb") as devnull:
            proc = subprocess.run(cmd, stdout=devnull, stderr=subprocess.PIPE, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')}")

    t = measure(run, repeat=args.repeat, budget=args.budget, clock=args.clock, children=True,
                before=None if file is None else lambda: warm_file(file))
    return {"seconds": t.seconds, "wall": t.wall, "cpu": t.cpu, "runs": t.runs}


def kseg_startup(args: argparse.Namespace) -> dict:
    """Wall time of ``kseg dump --records --format jsonl`` on an empty segment."""
    empty = Path(args.data_dir) / "empty" / "00000000000000000000.log"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_bytes(b"")
    return time_command(kseg_command() + ["dump", "--records", "--format", "jsonl", str(empty)], args)


def kafka_dump_cmd(info) -> list[str]:
    code = ("import sys; sys.path.insert(0, %r); from bench_read import _kafka_dump; "
            "_kafka_dump(sys.argv[1], sys.stdout)") % str(HERE)
    return [sys.executable, "-c", code, str(info.path)]


def measure_case(info, args: argparse.Namespace, log) -> dict:
    spec = info.spec
    res: dict = {"case": f"v{spec.magic} {spec.codec}", "magic": spec.magic, "codec": spec.codec,
                 "segment": info.as_json()}
    n = info.records
    mb = info.file_bytes / 1e6

    def rps(seconds: float) -> float:
        return n / seconds

    def check(kind: str, value: int, want: int) -> None:
        if value != want:
            raise SystemExit(f"{kind} on {info.path}: counted {value}, expected {want}")

    timings: dict = {}
    res["timings"] = timings

    def keep(key: str, d: dict) -> dict:
        res[f"{key}_s"] = d["seconds"]
        timings[key] = {k: d[k] for k in ("wall", "cpu", "runs")}
        return d

    log("  deep iteration ...")
    check("deep_kseg", keep("deep_kseg", run_worker("deep_kseg", info, args))["value"], n)
    if "deep" in args.pure:
        check("deep_kseg (pure)", keep("deep_kseg_py", run_worker("deep_kseg", info, args, pure=True))["value"], n)
    check("deep_kafka", keep("deep_kafka", run_worker("deep_kafka", info, args))["value"], n)
    if spec.codec != "none":
        d = keep("codec", run_worker("codec", info, args))
        check("codec", d["records"], n)
        res["codec_out_bytes"] = d["value"]
        res["codec_in_bytes"] = d["compressed_bytes"]

    if args.dump:
        log("  dump jsonl ...")
        keep("dump_kseg_cli", time_command(
            kseg_command() + ["dump", "--records", "--format", "jsonl", str(info.path)], args, file=str(info.path)))
        keep("dump_kafka_script", time_command(kafka_dump_cmd(info), args, file=str(info.path)))
        if args.dump_in_process:
            check("dump_kseg", keep("dump_kseg_inproc", run_worker("dump_kseg", info, args))["value"], n)
            check("dump_kafka", keep("dump_kafka_inproc", run_worker("dump_kafka", info, args))["value"], n)

    log("  verify ...")
    # --quick counts a compressed v0/v1 wrapper as one record (it does not decompress)
    quick_count = info.entries if spec.magic < 2 else n
    # These two take well under a second on 100 MB: more runs (still within --budget) steady them.
    short = max(args.repeat, SHORT_REPEAT)
    check("verify --quick", keep("verify_quick", run_worker("verify_quick", info, args, repeat=short))["value"],
          quick_count)
    check("bare walk", keep("bare_walk", run_worker("bare_walk", info, args, repeat=short))["value"], info.entries)
    check("verify", keep("verify_full", run_worker("verify_full", info, args))["value"], n)
    if spec.magic == 2 and spec.codec in BARE_VERIFY_CODECS:
        check("bare verify", keep("bare_verify", run_worker("bare_verify", info, args))["value"], info.entries)
    if "verify_quick" in args.pure:
        check("verify --quick (pure)",
              keep("verify_quick_py", run_worker("verify_quick", info, args, pure=True, repeat=short))["value"],
              quick_count)
    if "verify_full" in args.pure:
        check("verify (pure)", keep("verify_full_py", run_worker("verify_full", info, args, pure=True))["value"], n)

    # derived figures
    res["records"] = n
    res["file_mb"] = mb
    res["deep_kseg_rps"] = rps(res["deep_kseg_s"])
    res["deep_kafka_rps"] = rps(res["deep_kafka_s"])
    res["deep_ratio"] = res["deep_kafka_s"] / res["deep_kseg_s"]
    if "deep_kseg_py_s" in res:
        res["deep_kseg_py_rps"] = rps(res["deep_kseg_py_s"])
    if "codec_s" in res:
        res["codec_out_mbps"] = res["codec_out_bytes"] / 1e6 / res["codec_s"]
        res["codec_ceiling_rps"] = rps(res["codec_s"])
        res["codec_share"] = res["codec_s"] / res["deep_kseg_s"]
    if "dump_kseg_cli_s" in res:
        res["dump_kseg_rps"] = rps(res["dump_kseg_cli_s"])
        res["dump_kafka_rps"] = rps(res["dump_kafka_script_s"])
        res["dump_ratio"] = res["dump_kafka_script_s"] / res["dump_kseg_cli_s"]
    res["verify_quick_mbps"] = mb / res["verify_quick_s"]
    res["bare_walk_mbps"] = mb / res["bare_walk_s"]
    res["quick_ratio"] = res["bare_walk_s"] / res["verify_quick_s"]
    res["verify_full_rps"] = rps(res["verify_full_s"])
    res["verify_full_mbps"] = mb / res["verify_full_s"]
    if "bare_verify_s" in res:
        res["full_vs_bare"] = res["bare_verify_s"] / res["verify_full_s"]
    for k in ("verify_quick_py", "verify_full_py"):
        if f"{k}_s" in res:
            res[f"{k}_mbps" if "quick" in k else f"{k}_rps"] = (
                mb / res[f"{k}_s"] if "quick" in k else rps(res[f"{k}_s"]))
    return res


# --------------------------------------------------------------------------- report


def _k(x: float | None) -> str:
    """records/s in thousands."""
    return "" if x is None else f"{x / 1000:,.0f}k"


def _x(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}x"


def _mb(x: float | None) -> str:
    return "" if x is None else f"{x:,.0f}"


def tables(results: list[dict]) -> str:
    from tabulate import tabulate

    out = []
    rows = []
    for r in results:
        rows.append([
            r["case"], f"{r['records']:,}", f"{r['file_mb']:.0f}",
            _k(r["deep_kseg_rps"]), _k(r.get("deep_kseg_py_rps")), _k(r["deep_kafka_rps"]),
            _x(r["deep_ratio"]), f">= {DEEP_TARGET[r['magic']]}x",
            _mb(r.get("codec_out_mbps")), _k(r.get("codec_ceiling_rps")),
            "" if "codec_share" not in r else f"{100 * r['codec_share']:.0f}%",
        ])
    out.append("Deep iteration (records/s; every record's offset, timestamp, key, value, headers)")
    out.append(tabulate(rows, headers=["case", "records", "MB", "kseg C", "kseg py", "kafka-python",
                                       "C/kafka", "target", "codec MB/s out", "codec-only rec/s",
                                       "codec share"],
                        colalign=("left",) + ("right",) * 10))
    if any("dump_kseg_rps" in r for r in results):
        inproc = all("dump_kseg_inproc_s" in r for r in results if "dump_kseg_rps" in r)
        rows = []
        for r in results:
            if "dump_kseg_rps" not in r:
                continue
            row = [r["case"], _k(r["dump_kseg_rps"]), _k(r["dump_kafka_rps"]), _x(r["dump_ratio"])]
            if inproc:
                row += [_k(r["records"] / r["dump_kseg_inproc_s"]), _k(r["records"] / r["dump_kafka_inproc_s"]),
                        _x(r["dump_kafka_inproc_s"] / r["dump_kseg_inproc_s"])]
            rows.append(row)
        headers = ["case", "kseg CLI", "kafka-python + json.dumps", "kseg/kafka"]
        if inproc:
            headers += ["kseg in-process", "kafka in-process", "kseg/kafka"]
        out.append("")
        out.append("dump --records --format jsonl > /dev/null (records/s, interpreter start-up included)")
        out.append(tabulate(rows, headers=headers, colalign=("left",) + ("right",) * (len(headers) - 1)))
    rows = []
    for r in results:
        rows.append([
            r["case"], _mb(r["verify_quick_mbps"]), _mb(r.get("verify_quick_py_mbps")), _mb(r["bare_walk_mbps"]),
            f"{100 * r['quick_ratio']:.0f}%", _k(r["verify_full_rps"]), _k(r.get("verify_full_py_rps")),
            _mb(r["verify_full_mbps"]), "" if "bare_verify_s" not in r else f"{r['bare_verify_s']:.3f}",
            "" if "full_vs_bare" not in r else f"{r['verify_full_s']:.3f}", _x(r.get("full_vs_bare")),
        ])
    out.append("")
    out.append("verify (--quick in MB/s of file; full verify in records/s; v2: seconds of CRC-32C + decompression "
               "alone against full verify, and their ratio)")
    out.append(tabulate(rows, headers=["case", "--quick C", "--quick py", "bare walk", "quick/bare",
                                       "full C rec/s", "full py rec/s", "full C MB/s", "CRC+codec s", "full s",
                                       "full/bare"],
                        colalign=("left",) + ("right",) * 10))
    return "\n".join(out)


def targets(results: list[dict]) -> list[dict]:
    verdicts = []
    for r in results:
        want = DEEP_TARGET[r["magic"]]
        ok = r["deep_ratio"] >= want
        note = ""
        if "codec_ceiling_rps" in r:
            ceiling = r["codec_ceiling_rps"] / r["deep_kafka_rps"]
            if ceiling < want:
                note = f"; codec-bound: the codec alone allows at most {ceiling:.2f}x"
        verdicts.append({
            "target": f"deep iteration {r['case']} >= {want}x kafka-python", "ok": ok,
            "text": f"{_x(r['deep_ratio'])} (kseg {r['deep_kseg_rps']:,.0f} rec/s, "
                    f"kafka-python {r['deep_kafka_rps']:,.0f} rec/s){note}",
        })
    for r in results:
        verdicts.append({
            "target": f"verify --quick {r['case']} >= {QUICK_TARGET:.0%} of bare walk",
            "ok": r["quick_ratio"] >= QUICK_TARGET,
            "text": f"{r['quick_ratio']:.0%} (kseg {r['verify_quick_mbps']:,.0f} MB/s, "
                    f"bare {r['bare_walk_mbps']:,.0f} MB/s)",
        })
    for r in results:
        if "full_vs_bare" in r:
            verdicts.append({
                "target": f"full verify {r['case']} >= {FULL_VS_BARE_TARGET}x the speed of CRC-32C + decompression alone",
                "ok": r["full_vs_bare"] >= FULL_VS_BARE_TARGET,
                "text": f"{_x(r['full_vs_bare'])} (verify {r['verify_full_s']:.3f} s, CRC + codec {r['bare_verify_s']:.3f} s)",
            })
    for r in results:
        if r["magic"] == 2 and r["codec"] == "none":
            verdicts.append({
                "target": f"full verify {r['case']} >= {FULL_VERIFY_TARGET / 1e6:g}M records/s",
                "ok": r["verify_full_rps"] >= FULL_VERIFY_TARGET,
                "text": f"{r['verify_full_rps']:,.0f} records/s",
            })
    return verdicts


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mb", type=float, default=100, help="segment file size per case (default 100)")
    p.add_argument("--codecs", default=",".join(CODECS), help="comma-separated (default: all five)")
    p.add_argument("--magics", default="0,1,2", help="comma-separated message formats (default 0,1,2)")
    p.add_argument("--quick-run", action="store_true", help="smoke test: 5 MB segments (unless --size-mb), best of 2")
    p.add_argument("--repeat", type=int, default=3, help="best of N runs per measurement (default 3) ...")
    p.add_argument("--budget", type=float, default=4.0,
                   help="... but stop repeating once this many seconds are spent (default 4)")
    p.add_argument("--records-per-batch", type=int, default=100)
    p.add_argument("--key-size", type=int, default=16)
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--headers", type=int, default=1, help="headers per v2 record (default 1)")
    p.add_argument("--pure", default="deep,verify_quick",
                   help="what to time again with KSEG_PURE_PYTHON=1: comma-separated from deep, verify_quick, "
                        "verify_full, or 'all' or 'none' (default deep,verify_quick; verify_full costs ~15 s "
                        "per compressed 100 MB case)")
    p.add_argument("--no-dump", dest="dump", action="store_false", help="skip the dump comparison")
    p.add_argument("--dump-in-process", action="store_true",
                   help="also time both dumps in-process (no start-up, no pipe)")
    p.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR), help=f"default {DEFAULT_DATA_DIR}")
    p.add_argument("--cpu", type=int, default=None,
                   help="CPU to pin every run to (default: the idlest one at start; -1: do not pin)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="rank runs and compute rates by wall time (time.perf_counter, default) or by CPU "
                        "time (user+sys; steadier when other processes share the machine)")
    p.add_argument("--json", metavar="FILE", help="also save every figure as JSON")
    p.add_argument("--profile", metavar="KIND", choices=sorted(WORKERS),
                   help="instead of timing, run KIND once per case under cProfile and print the top functions")
    p.add_argument("--profile-pure", action="store_true", help="with --profile: KSEG_PURE_PYTHON=1")
    p.add_argument("--profile-top", type=int, default=25)
    # internal: one measurement in a child process
    p.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    p.add_argument("--file", help=argparse.SUPPRESS)
    p.add_argument("--magic", type=int, help=argparse.SUPPRESS)
    p.add_argument("--codec", help=argparse.SUPPRESS)
    p.add_argument("--profile-worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    pure = {x.strip() for x in args.pure.split(",") if x.strip()}
    if "all" in pure:
        pure = set(PURE_KINDS)
    pure.discard("none")
    if pure - set(PURE_KINDS):
        p.error(f"--pure: unknown {', '.join(sorted(pure - set(PURE_KINDS)))}; use {', '.join(PURE_KINDS)}")
    args.pure = sorted(pure)
    if args.quick_run:
        if args.size_mb == 100:
            args.size_mb = 5
        args.repeat = 2  # the first run pays for lazy imports
    return args


def main(argv: list[str] | None = None) -> int:
    compile_kseg()  # kseg as installed: bytecode cached
    args = parse_args(argv)
    if args.worker:
        worker_main(args)
        return 0
    cpu = None if args.cpu == -1 else pin_to_one_core(args.cpu)
    t_start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", file=sys.stderr, flush=True)

    magics = [int(m) for m in args.magics.split(",") if m.strip()]
    codecs = [c.strip() for c in args.codecs.split(",") if c.strip()]
    for c in codecs:
        if c not in CODECS:
            raise SystemExit(f"unknown codec {c!r}: use {', '.join(CODECS)}")
    target = int(args.size_mb * (1 << 20))
    cases = [(m, c) for m in magics for c in codecs if codec_allowed(m, c)]
    machine = machine_info()
    log(f"{len(cases)} cases, {args.size_mb:g} MB each, {'not pinned' if cpu is None else f'pinned to CPU {cpu}'}; "
        f"{machine['cpu_model']}, nproc {machine['nproc']}")

    infos = []
    for magic, codec in cases:
        infos.append(generate_segment(None, magic, codec, target, args.records_per_batch, args.key_size,
                                      args.value_size, args.headers, data_dir=args.data_dir, log=log))

    if args.profile:
        for info in infos:
            print(f"\n===== {args.profile} on v{info.spec.magic} {info.spec.codec} ({info.path}) =====",
                  flush=True)
            env = dict(os.environ)
            env.pop("KSEG_PURE_PYTHON", None)
            if args.profile_pure:
                env["KSEG_PURE_PYTHON"] = "1"
            cmd = _worker_cmd(args.profile, info, args, "--profile-worker", "--profile-top", str(args.profile_top))
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        return 0

    startup = kseg_startup(args) if args.dump else None
    results = []
    for info in infos:
        log(f"v{info.spec.magic} {info.spec.codec}: {info.records:,} records, {info.file_bytes / 1e6:.0f} MB")
        results.append(measure_case(info, args, log))

    print()
    print(f"kseg read benchmark: {machine['date']}, {machine['cpu_model']} (nproc {machine['nproc']}, "
          f"{'not pinned' if cpu is None else f'pinned to CPU {cpu}'}), Python {machine['python']}, kafka-python {machine['versions']['kafka']}")
    print(f"segments: {args.size_mb:g} MB each, {args.records_per_batch} records per batch/wrapper, "
          f"key {args.key_size} B, value {args.value_size} B, {args.headers} header per v2 record; "
          f"best of {args.repeat} (within {args.budget:g} s) by {args.clock} time")
    src = machine["kseg_source"]
    print(f"kseg at {src['commit'] or '?'}" + (f" plus uncommitted changes to {', '.join(src['modified'])}"
                                                if src["modified"] else ""))
    print()
    print(tables(results))
    if startup is not None:
        print(f"\n(kseg CLI start-up, dump of an empty file: {startup['seconds'] * 1000:.0f} ms, "
              "included in the CLI figures)")
    busy = [(r["case"], k, t["wall"] / t["cpu"]) for r in results for k, t in r["timings"].items()
            if t["cpu"] > 0 and t["wall"] > 1.25 * t["cpu"]]
    if busy:
        worst = ", ".join(f"{c} {k} {x:.1f}x" for c, k, x in sorted(busy, key=lambda b: -b[2])[:6])
        print(f"\nWARNING: {len(busy)} measurement(s) waited well beyond their CPU time (wall/cpu: {worst}"
              f"{', ...' if len(busy) > 6 else ''}): something else was using the core. "
              + ("Rerun on a quiet machine or with --clock cpu." if args.clock == "wall" else
                 "Figures use CPU time, which this affects less."))
    verdicts = targets(results)
    print("\nTargets")
    for v in verdicts:
        print(f"  {'PASS' if v['ok'] else 'FAIL'}  {v['target']}: {v['text']}")
    passed = sum(v["ok"] for v in verdicts)
    elapsed = time.perf_counter() - t_start
    print(f"\n{passed}/{len(verdicts)} targets met; total run time {elapsed:.0f} s")
    if args.json:
        machine["loadavg_end"] = os.getloadavg()
        doc = {"machine": machine, "pinned_cpu": cpu, "args": {k: v for k, v in vars(args).items() if k not in INTERNAL_ARGS},
               "kseg_cli_startup_s": startup, "results": results, "targets": verdicts,
               "elapsed_s": elapsed}
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
        log(f"saved {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
