#!/usr/bin/env python3
"""The pluggable-compression claim, measured: a codec behind the plugin interface runs
at the speed of the same codec built in.

Compares kseg's built-in snappy (codec 2) with the very same snappy served as a
KIP-984 plugin (codec 5, ``examples/kseg-snappy-plugin``) on the same generated v2
segments (small records: 16-byte keys, 100-byte values, one header, 100 per batch):

  decompress   deep iteration: every record of every batch (offset, timestamp, key,
               value, headers) through ``batch_records``; built-in on the snappy
               segment, plugin on the same segment with its batches marked as plugin
               batches (identical payloads)
  compress     ``recompress`` (the real transform: decode each batch, compress,
               rebuild it) of the uncompressed segment to snappy vs to the plugin
  codec only   the codec call alone on every batch payload: the adapter's cost with
               nothing around it (informative, not a target)

Noise control (the machine may be shared): one process pinned to one core, the
segments' batches read into memory first (file scanning does not depend on the
codec, so leaving it out makes the comparison stricter), and the work cut into
chunks of --chunk-batches batches; every round runs each chunk on both sides back
to back (order flipped chunk by chunk), and each side's time is the sum over chunks
of the chunk's best time over the --repeat rounds. Target: the plugin's records/s
at least 97% of the built-in's (within 3%), for compress and decompress.

    .venv/bin/python benchmarks/bench_plugins.py                 # 24 MB segments, 9 rounds
    .venv/bin/python benchmarks/bench_plugins.py --size-mb 100 --repeat 15 --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from common import generate_segment, machine_info, pin_to_one_core  # noqa: E402

ALIAS = "snappyPlugin"
PLUGIN_CLASS = "kseg_snappy_plugin:SnappyPlugin"
PLUGIN_ID = 1
TARGET = 0.97  # plugin records/s >= 97% of the built-in's
RECORD_BATCH_OVERHEAD = 61


def _import_example() -> None:
    try:
        import kseg_snappy_plugin  # noqa: F401  (installed)
    except ImportError:
        sys.path.insert(0, str(REPO / "examples" / "kseg-snappy-plugin"))


def plugin_copy(src: Path, dst: Path) -> None:
    """The snappy segment with every compressed batch marked codec 5 / plugin id 1
    (same payload bytes: the plugin is the same snappy), CRCs recomputed."""
    from kseg.log.encode import assemble_v2, header_of
    from kseg.formats.attributes import CODEC_MASK, CODEC_PLUGIN, PLUGIN_ID_MASK, PLUGIN_ID_SHIFT
    from kseg.log.segment import Segment

    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "wb", buffering=4 << 20) as f:
        for b in Segment(src).batches():
            if b.codec == 0:
                f.write(b.raw)
                continue
            attrs = (b.attributes & ~CODEC_MASK & ~PLUGIN_ID_MASK) | CODEC_PLUGIN | (PLUGIN_ID << PLUGIN_ID_SHIFT)
            f.write(assemble_v2(header_of(b).with_(attributes=attrs), bytes(b.raw[RECORD_BATCH_OVERHEAD:])))


# --------------------------------------------------------------------------- the work


def load_batches(path: Path) -> list:
    from kseg.log.segment import Segment

    seg = Segment(path)
    batches = list(seg.batches())
    if seg.tail is not None:
        raise SystemExit(f"{path}: {seg.tail.error}")
    return batches


def deep(batches) -> int:
    from kseg.log.records import batch_records

    n = 0
    for b in batches:
        for r in batch_records(b):
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018 - touch every field
            n += 1
    return n


def recompress_to(batches, choice) -> int:
    from kseg.ops.convert import RecompressOptions, Summary, recompress

    s = Summary()
    for _ in recompress(batches, RecompressOptions(choice=choice), s):
        pass
    return s.records_out


def codec_decompress(codec, items: list) -> int:
    dec = codec.decompress
    for p, _ in items:
        dec(p, magic=2, limit=1 << 28)
    return sum(n for _, n in items)


def codec_compress(codec, items: list) -> int:
    comp = codec.compress
    for p, _ in items:
        comp(p, magic=2)
    return sum(n for _, n in items)


def payloads(batches) -> list[tuple[bytes, int]]:
    return [(bytes(b.raw[RECORD_BATCH_OVERHEAD:]), b.record_count) for b in batches]


def chunked(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


# --------------------------------------------------------------------------- timing


def measure(fns: tuple, inputs: tuple[list, list], repeat: int) -> dict:
    """fns: (built-in fn, plugin fn), each taking one chunk and returning its record count;
    inputs: (built-in chunks, plugin chunks), the same records in the same order.
    Each side's time: the sum over chunks of the chunk's best time over ``repeat`` rounds."""
    n_chunks = len(inputs[0])
    best = [[float("inf")] * n_chunks, [float("inf")] * n_chunks]
    records = [0, 0]
    clock = time.perf_counter
    for r in range(repeat):
        gc.collect()
        gc.disable()
        try:
            records = [0, 0]
            for k in range(n_chunks):
                for side in ((0, 1) if (r + k) % 2 == 0 else (1, 0)):
                    t0 = clock()
                    n = fns[side](inputs[side][k])
                    dt = clock() - t0
                    records[side] += n
                    if dt < best[side][k]:
                        best[side][k] = dt
        finally:
            gc.enable()
    if records[0] != records[1]:
        raise SystemExit(f"the two sides saw different record counts: {records}")
    builtin_s, plugin_s = sum(best[0]), sum(best[1])
    return {"records": records[0], "builtin_s": builtin_s, "plugin_s": plugin_s,
            "builtin_records_per_s": records[0] / builtin_s, "plugin_records_per_s": records[0] / plugin_s,
            "ratio": builtin_s / plugin_s}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=24, help="size of each generated segment (default 24)")
    ap.add_argument("--repeat", type=int, default=9, help="rounds; each chunk's best counts (default 9)")
    ap.add_argument("--chunk-batches", type=int, default=32, help="batches per timed chunk (default 32)")
    ap.add_argument("--data-dir", type=Path, default=None, help="where generated segments are cached")
    ap.add_argument("--cpu", type=int, default=None,
                    help="the CPU to pin to (default: the lowest allowed; bench_read.py takes the highest)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the process to one core")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    args = ap.parse_args()

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    cpu = None
    if not args.no_pin:
        allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [None]
        cpu = pin_to_one_core(args.cpu if args.cpu is not None else allowed[0])
    _import_example()
    from kseg.codecs import SNAPPY, plugins
    from kseg.codecs.choice import CodecChoice, plugin_choice
    from kseg.ops.registry import register

    target = int(args.size_mb * (1 << 20))
    plain = generate_segment(magic=2, codec="none", target_bytes=target, data_dir=args.data_dir, log=log)
    snappy = generate_segment(magic=2, codec="snappy", target_bytes=target, data_dir=args.data_dir, log=log)
    with tempfile.TemporaryDirectory(prefix="kseg-bench-plugins-") as tmp:
        registry = Path(tmp) / "plugin-python-topic-0"
        register(registry, ALIAS, PLUGIN_CLASS, "1.0.0", PLUGIN_ID)
        plugins.activate(registry)
        plugged_path = Path(tmp) / "t-0" / snappy.path.name
        plugin_copy(snappy.path, plugged_path)
        choice = plugin_choice(ALIAS)
        assert choice is not None and choice.plugin_id == PLUGIN_ID
        codec = choice.codec
        plain_b, snappy_b, plugged_b = (load_batches(p) for p in (plain.path, snappy.path, plugged_path))
        # the same records both ways, before timing anything
        if deep(plugged_b) != snappy.records or deep(snappy_b) != snappy.records:
            raise SystemExit("the plugin segment does not read back whole")
        log(f"segments: {plain.path.parent.name} ({plain.file_bytes / 1e6:.1f} MB, {plain.records:,} records), "
            f"{snappy.path.parent.name} ({snappy.file_bytes / 1e6:.1f} MB, {snappy.records:,} records) "
            "and its plugin copy")
        c = args.chunk_batches
        snappy_choice = CodecChoice(SNAPPY)
        plans = {
            "decompress (deep iteration)": ((deep, deep), (chunked(snappy_b, c), chunked(plugged_b, c))),
            "compress (recompress)": ((lambda ch: recompress_to(ch, snappy_choice),
                                       lambda ch: recompress_to(ch, choice)),
                                      (chunked(plain_b, c), chunked(plain_b, c))),
            "codec only: decompress": ((lambda ch: codec_decompress(SNAPPY, ch),
                                        lambda ch: codec_decompress(codec, ch)),
                                       (chunked(payloads(snappy_b), c),) * 2),
            "codec only: compress": ((lambda ch: codec_compress(SNAPPY, ch), lambda ch: codec_compress(codec, ch)),
                                     (chunked(payloads(plain_b), c),) * 2),
        }
        log(f"timing: {args.repeat} rounds, chunks of {c} batches"
            + (f", pinned to CPU {cpu}" if cpu is not None else ""))
        results = {}
        for name, (fns, inputs) in plans.items():
            t0 = time.perf_counter()
            results[name] = measure(fns, inputs, args.repeat)
            log(f"  {name}: {results[name]['ratio']:.3f}x ({time.perf_counter() - t0:.1f} s)")

    print(f"\nsnappy built-in (codec 2) vs the same snappy as plugin '{ALIAS}' (codec 5, id {PLUGIN_ID}); "
          f"v2 segments of {args.size_mb:g} MB, 100 records/batch, {args.repeat} rounds")
    print(f"{'measure':<30} {'built-in rec/s':>15} {'plugin rec/s':>15} {'plugin/built-in':>16}  target")
    ok = True
    for name, r in results.items():
        gated = not name.startswith("codec only")
        verdict = ("PASS" if r["ratio"] >= TARGET else "FAIL") if gated else "(info)"
        ok &= r["ratio"] >= TARGET or not gated
        print(f"{name:<30} {r['builtin_records_per_s']:>15,.0f} {r['plugin_records_per_s']:>15,.0f} "
              f"{r['ratio']:>15.3f}x  {verdict}")
    print(f"target: plugin >= {TARGET:.0%} of built-in records/s (compress and decompress): "
          f"{'PASS' if ok else 'FAIL'}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine_info(), "size_mb": args.size_mb,
                                         "repeat": args.repeat, "results": results, "pass": ok}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
