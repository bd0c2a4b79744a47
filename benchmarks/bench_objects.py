#!/usr/bin/env python3
"""Many small objects and large archives: what reading them costs against the same files on disk.

Generates N small segments (default 2,000 of about 4 KiB, in 40 partitions: v2 batches of a
few records, no indexes), then times ``kseg verify --quick`` over

  the local folder                        (the floor)
  s3://... (SeaweedFS on loopback)        one object per file, started here (``tests/servers.py``)
  a .tar of M members (default 20,000)    against the same members unpacked

and prints the seconds and the ratios (object store / local, tar / unpacked). Each run is a
fresh ``kseg`` process (start-up included, the same in every column). The store runs on this
machine, so a round trip costs loopback's latency plus the server's CPU: a store elsewhere
has more latency per request, which makes the per-object requests matter more, not less.

    .venv/bin/python benchmarks/bench_objects.py                        # 2,000 objects, 20k-member tar
    .venv/bin/python benchmarks/bench_objects.py --objects 500 --members 5000 --repeat 1
    .venv/bin/python benchmarks/bench_objects.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from common import KSEG_COMMAND, machine_info  # noqa: E402

# The kseg of this checkout (not whatever ``kseg`` the virtualenv's script names).
KSEG = KSEG_COMMAND
T0 = 1_700_000_000_000


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def make_segments(root: Path, objects: int, partitions: int, size: int) -> int:
    """``objects`` segments of about ``size`` bytes over ``partitions`` folders; returns the bytes."""
    from kseg.log.encode import build_v2_batch
    from kseg.log.segment import segment_file_name
    from kseg.model import make_record

    value = b"v" * 90
    per_batch = 20
    batch_len = len(build_v2_batch([make_record(i, T0 + i, b"key", value, [], magic=2) for i in range(per_batch)]))
    batches = max(1, round(size / batch_len))
    total = 0
    per_partition = -(-objects // partitions)
    made = 0
    for p in range(partitions):
        folder = root / f"topic-{p}"
        folder.mkdir(parents=True, exist_ok=True)
        offset = 0
        for _ in range(min(per_partition, objects - made)):
            data = bytearray()
            first = offset
            for _ in range(batches):
                data += build_v2_batch([make_record(offset + i, T0 + offset + i, b"key", value, [], magic=2)
                                        for i in range(per_batch)])
                offset += per_batch
            (folder / segment_file_name(first)).write_bytes(data)
            total += len(data)
            made += 1
    return total


def make_members(root: Path, members: int) -> None:
    """``members`` tiny segments (one batch each) in 10 partitions: the archive's bulk is its index."""
    from kseg.log.encode import build_v2_batch
    from kseg.log.segment import segment_file_name
    from kseg.model import make_record

    partitions = 10
    for p in range(partitions):
        folder = root / f"topic-{p}"
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(members // partitions):
            (folder / segment_file_name(i)).write_bytes(build_v2_batch([make_record(i, T0 + i, b"k", b"v", [], magic=2)]))


def best(cmd: list[str], env: dict, repeat: int) -> tuple[float, subprocess.CompletedProcess]:
    out = None
    for i in range(repeat):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        s = time.perf_counter() - t0
        log(f"    run {i + 1}: {s:.2f} s, exit {p.returncode}")
        if p.returncode not in (0, 1):
            log(p.stderr[-2000:])
        if out is None or s < out[0]:
            out = (s, p)
    assert out is not None
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=2000, help="small segments in the object store")
    ap.add_argument("--partitions", type=int, default=40)
    ap.add_argument("--size", type=int, default=4096, help="bytes per segment (about)")
    ap.add_argument("--members", type=int, default=20000, help="members of the tar (0: skip)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()

    from servers import SeaweedFS

    env = dict(os.environ, PYTHONPATH=str(REPO))
    results: dict = {"machine": machine_info(), "objects": a.objects, "members": a.members, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="kseg-bench-objects-") as tmp:
        tmp_path = Path(tmp)
        local = tmp_path / "logdir"
        total = make_segments(local, a.objects, a.partitions, a.size)
        log(f"{a.objects:,} segments, {total / 1e6:.1f} MB, in {a.partitions} partitions")
        runs = results["runs"]
        with SeaweedFS(tmp_path / "store") as store:
            t0 = time.perf_counter()
            url = store.upload(local, "kseg-bench", "logdir")
            log(f"uploaded to {url} in {time.perf_counter() - t0:.1f} s")
            s3_env = dict(env, **store.env)
            for k in ("AWS_ENDPOINT_URL", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
                s3_env.pop(k, None)
            outputs = {}
            for name, target, e in (("local", str(local), env), ("s3", url, s3_env)):
                log(f"  verify --quick {name} ...")
                s, p = best([*KSEG, "verify", "--quick", target], e, a.repeat)
                runs[f"objects {name}"] = {"s": s, "exit": p.returncode}
                outputs[name] = p.stdout.replace(url, str(local))
            results["same_report_s3"] = outputs["local"] == outputs["s3"]
        if a.members:
            unpacked = tmp_path / "members"
            make_members(unpacked, a.members)
            archive = tmp_path / "members.tar"
            with tarfile.open(archive, "w") as tar:
                tar.add(unpacked, arcname="members")
            outputs = {}
            for name, target in (("unpacked", unpacked), ("tar", archive)):
                log(f"  verify --quick {name} ({a.members:,} members) ...")
                s, p = best([*KSEG, "verify", "--quick", str(target)], env, a.repeat)
                runs[f"archive {name}"] = {"s": s, "exit": p.returncode}
                outputs[name] = p.returncode
            results["same_exit_tar"] = outputs["unpacked"] == outputs["tar"]

    print(f"\nkseg verify --quick, best of {a.repeat} (fresh process each; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f})")
    print(f"{'run':28} {'seconds':>8} {'per item ms':>12}")
    for name, r in runs.items():
        n = a.objects if name.startswith("objects") else a.members
        print(f"{name:28} {r['s']:8.2f} {r['s'] / max(n, 1) * 1000:12.2f}")
    obj = runs["objects s3"]["s"] / runs["objects local"]["s"]
    print(f"s3 / local: {obj:.1f}x" + ("" if results["same_report_s3"] else "  (REPORTS DIFFER)"))
    results["ratio_s3_local"] = obj
    if a.members:
        tar = runs["archive tar"]["s"] / runs["archive unpacked"]["s"]
        print(f"tar / unpacked: {tar:.1f}x")
        results["ratio_tar_unpacked"] = tar
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
