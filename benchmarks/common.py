"""Shared helpers for the benchmark scripts: generated segments and timing.

Segments are generated once and cached under a data directory (default
``<repo>/bench-data/``, git-ignored; override with ``KSEG_BENCH_DATA``). A
segment is regenerated only when its parameters (or ``GENERATOR_VERSION``)
change, so reruns are fast.

    from common import SegmentSpec, segment_for, best_of, measure
    info = segment_for(SegmentSpec(magic=2, codec="gzip", target_bytes=100 << 20))
    seconds, result = best_of(lambda: work(info.path), repeat=3)   # perf_counter
    t = measure(lambda: work(info.path), repeat=3, clock="cpu")    # t.wall, t.cpu

The data looks like what a small-record topic holds: 16-byte keys, ~100-byte
JSON-ish values (text that compresses about as well as real events do), one
small header per v2 record, timestamps rising a few records per millisecond,
offsets consecutive from 0. Batches are built with kseg's encoder
(``kseg.log.encode``), then a sample is read back with kafka-python's own
decoder, so the two libraries are known to agree on the bytes.

``SegmentSpec.payload`` picks what the values hold (keys and headers are as above):

- ``ascii`` (the default, what every figure before payload kinds was measured on): the
  ASCII JSON-ish text above, exactly ``value_size`` bytes;
- ``accented``: the same JSON with non-ASCII words in its text (Latin accents, Greek,
  Cyrillic, CJK, emoji: 2-, 3- and 4-byte UTF-8), valid UTF-8, exactly ``value_size`` bytes;
- ``binary``: Avro-like records (zig-zag varints, a length-prefixed string, a double, a
  16-byte fixed, random bytes), ``0.8-1.2 x value_size`` bytes (80-120 by default), rarely
  valid UTF-8;
- ``large``: ASCII text documents of 16-64 KiB (``value_size`` is not used), 10 records per
  batch by default when made with ``spec_for``;
- ``single``: values as ``ascii``'s, one record per batch with ``spec_for`` (what producers
  that do not batch, idempotent ones with ``linger.ms=0`` at a low rate, and the coordinators'
  ``__consumer_offsets`` writes leave): a batch line per record.

Each kind is its own cached file: a kind other than ``ascii`` adds ``-p<kind>`` to the
name, and the ``ascii`` files' name and recorded parameters are what they were.
"""

from __future__ import annotations

import gc
import json
import os
import random
import struct
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = Path(os.environ.get("KSEG_BENCH_DATA", REPO / "bench-data"))
# The kseg command as the console script starts it (``kseg.cli:run``: the cycle collector and the
# allocator set as for a user), from whichever tree is first on PYTHONPATH or installed.
KSEG_COMMAND = [sys.executable, "-c", "import sys; from kseg.cli import run; sys.argv[0] = 'kseg'; sys.exit(run())"]

# Bump when the bytes a spec produces change, so cached files are rebuilt.
GENERATOR_VERSION = 1

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: i for i, name in enumerate(CODECS)}
BASE_TIMESTAMP_MS = 1_700_000_000_000
RECORDS_PER_MS = 4
POOL_SIZE = 4099  # distinct keys/values, cycled (prime: batches do not repeat in step)

_WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
    "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
).split()
_EVENTS = ("page_view", "click", "add_to_cart", "checkout", "login", "logout", "search", "scroll")
_COUNTRIES = ("DE", "FR", "US", "GB", "IN", "BR", "JP", "NL", "ES", "IT")
_ACCENTED_WORDS = (
    "café crème brûlée naïve façade Zürich Málaga São Paulo Kraków Øresund smørrebrød "
    "Ελλάδα Αθήνα Москва привет 東京 大阪 서울 😀 🎉 🚀 ☕ €uro ¿qué? ñandú"
).split()
_ACCENTED_COUNTRIES = ("DE", "FR", "ES", "PL", "DK", "GR", "RU", "JP", "KR", "BR")

#: what the values of a segment hold; "ascii" is the default (and every older figure)
PAYLOADS = ("ascii", "accented", "binary", "large", "single")
#: records per batch ``spec_for`` uses for a payload kind (else the SegmentSpec default)
PAYLOAD_BATCH = {"large": 10, "single": 1}
LARGE_VALUE_BYTES = (16 << 10, 64 << 10)
LARGE_POOL_SIZE = 257  # distinct large values (prime), 10 MB held in memory


def compile_kseg() -> None:
    """Write kseg's bytecode, as ``pip install`` does for a user: a checkout run with
    PYTHONDONTWRITEBYTECODE=1 (as some CI images set) would otherwise compile every module on
    every start, doubling the ``kseg`` command's start-up (about 0.3 s of CPU instead of 0.15 s)."""
    import compileall

    compileall.compile_dir(str(REPO / "kseg"), quiet=1)
    compileall.compile_dir(str(REPO / "formats"), quiet=1)


def codec_allowed(magic: int, codec: str) -> bool:
    """zstd exists only in the v2 format (Kafka 2.1+)."""
    return not (codec == "zstd" and magic < 2)


@dataclass(frozen=True)
class SegmentSpec:
    """What to generate. ``target_bytes`` is the size of the .log file (it stops at
    the first batch that reaches it). ``records_per_batch`` is the size of a v2 batch
    or of a compressed v0/v1 wrapper; an uncompressed v0/v1 message is its own entry."""

    magic: int
    codec: str
    target_bytes: int
    records_per_batch: int = 100
    key_size: int = 16
    value_size: int = 100
    headers: int = 1  # per v2 record (v0/v1 have none)
    seed: int = 20240601
    payload: str = "ascii"  # one of PAYLOADS

    def __post_init__(self) -> None:
        if self.magic not in (0, 1, 2):
            raise ValueError(f"magic must be 0, 1 or 2, not {self.magic}")
        if self.codec not in CODEC_IDS:
            raise ValueError(f"codec must be one of {', '.join(CODECS)}, not {self.codec!r}")
        if not codec_allowed(self.magic, self.codec):
            raise ValueError(f"{self.codec} is not allowed with magic {self.magic}")
        if self.payload not in PAYLOADS:
            raise ValueError(f"payload must be one of {', '.join(PAYLOADS)}, not {self.payload!r}")

    @property
    def codec_id(self) -> int:
        return CODEC_IDS[self.codec]

    @property
    def name(self) -> str:
        mb = self.target_bytes / (1 << 20)
        size = f"{mb:g}MB" if mb >= 1 else f"{self.target_bytes}B"
        kind = "" if self.payload == "ascii" else f"-p{self.payload}"
        return (f"v{self.magic}-{self.codec}-{size}-b{self.records_per_batch}"
                f"-k{self.key_size}-v{self.value_size}-h{self.headers}{kind}")

    def recorded(self) -> dict:
        """The parameters written next to a cached file; an ``ascii`` spec records none of
        ``payload`` so that files made before payload kinds stay valid."""
        d = asdict(self)
        if self.payload == "ascii":
            del d["payload"]
        return d


def spec_for(magic: int, codec: str, target_bytes: int, payload: str = "ascii") -> SegmentSpec:
    """The benchmarks' spec of a payload kind: the defaults, with PAYLOAD_BATCH's batch size."""
    if payload in PAYLOAD_BATCH:
        return SegmentSpec(magic, codec, target_bytes, records_per_batch=PAYLOAD_BATCH[payload], payload=payload)
    return SegmentSpec(magic, codec, target_bytes, payload=payload)


def parse_payloads(text: str) -> list[str]:
    """``--payloads ascii,binary`` -> ["ascii", "binary"]; raises ValueError on an unknown kind."""
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in PAYLOADS]
    if unknown or not kinds:
        raise ValueError(f"unknown payload kind(s) {', '.join(unknown) or '(none)'}; known: {', '.join(PAYLOADS)}")
    return kinds


@dataclass
class SegmentInfo:
    """A generated segment and the facts about it the benchmarks need."""

    path: Path
    spec: SegmentSpec
    records: int
    entries: int  # top-level entries (v2 batches, legacy messages or wrappers)
    file_bytes: int
    record_bytes: int  # key + value (+ header) bytes of every record
    generated_seconds: float = 0.0
    cached: bool = False
    extra: dict = field(default_factory=dict)

    def as_json(self) -> dict:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


# --------------------------------------------------------------------------- data


class _Pool:
    """Deterministic keys, values and header values, cycled by offset."""

    def __init__(self, spec: SegmentSpec):
        rng = random.Random(spec.seed)
        self.keys = [_key(rng, spec.key_size) for _ in range(POOL_SIZE)] if spec.key_size else None
        if spec.payload == "ascii":  # the same draws from rng as before payload kinds: the same bytes
            self.values = [_value(rng, spec.value_size) for _ in range(POOL_SIZE)]
        else:
            vrng = random.Random(f"{spec.seed}-{spec.payload}")
            make, count = _VALUE_MAKERS[spec.payload]
            self.values = [make(vrng, spec.value_size) for _ in range(count)]
        self.header_values = [rng.getrandbits(64).to_bytes(8, "big").hex().encode() for _ in range(POOL_SIZE)]

    def key(self, offset: int) -> bytes | None:
        return None if self.keys is None else self.keys[offset % POOL_SIZE]

    def value(self, offset: int) -> bytes:
        return self.values[offset % len(self.values)]

    def headers(self, offset: int, n: int) -> list[tuple[str, bytes]]:
        if not n:
            return []
        hv = self.header_values[offset % POOL_SIZE]
        return [("trace-id" if i == 0 else f"h{i}", hv) for i in range(n)]


def _key(rng: random.Random, size: int) -> bytes:
    text = f"user-{rng.randrange(10 ** 9):09d}"
    return text.encode().ljust(size, b"0")[:size]


def _value(rng: random.Random, size: int) -> bytes:
    """JSON-like event text of exactly ``size`` bytes."""
    head = (
        f'{{"user":{rng.randrange(10 ** 6)},"event":"{rng.choice(_EVENTS)}",'
        f'"country":"{rng.choice(_COUNTRIES)}","amount":{rng.randrange(100000) / 100},'
        f'"session":"{rng.getrandbits(48):012x}","note":"'
    )
    note = []
    length = len(head) + 2
    while length < size:
        w = rng.choice(_WORDS)
        note.append(w)
        length += len(w) + 1
    text = (head + " ".join(note))[: max(0, size - 2)] + '"}'
    return text.encode()[:size].ljust(size, b" ")


def _accented_value(rng: random.Random, size: int) -> bytes:
    """JSON-like event text with non-ASCII words, valid UTF-8, of exactly ``size`` bytes."""
    head = (
        f'{{"user":{rng.randrange(10 ** 6)},"event":"{rng.choice(_EVENTS)}",'
        f'"country":"{rng.choice(_ACCENTED_COUNTRIES)}","amount":{rng.randrange(100000) / 100},'
        f'"city":"{rng.choice(_ACCENTED_WORDS)}","note":"'
    )
    text = head
    while len(text.encode()) < size:
        text += rng.choice(_ACCENTED_WORDS) + " "
    room = size - 2
    while len(text.encode()) > room:  # whole characters only: valid UTF-8
        text = text[:-1]
    return (text + '"}').encode().ljust(size, b" ")


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _binary_value(rng: random.Random, size: int) -> bytes:
    """An Avro-like record of 0.8-1.2 x ``size`` bytes: a user id and an amount in cents as
    zig-zag varints, the event as a length-prefixed string, a double, a 16-byte fixed (a UUID)
    and random bytes to the drawn length."""
    length = rng.randint(size * 4 // 5, size * 6 // 5)

    event = rng.choice(_EVENTS).encode()
    out = (_zigzag(rng.randrange(10 ** 6)) + _zigzag(len(event)) + event + _zigzag(rng.randrange(-10 ** 6, 10 ** 6))
           + struct.pack("<d", rng.random() * 1000) + rng.randbytes(16))
    return (out + rng.randbytes(max(0, length - len(out))))[:length]


def _large_value(rng: random.Random, size: int) -> bytes:
    """An ASCII JSON-ish document of 16-64 KiB (``size`` is not used): a header and text."""
    length = rng.randint(*LARGE_VALUE_BYTES)
    head = (f'{{"doc":{rng.randrange(10 ** 9)},"event":"{rng.choice(_EVENTS)}",'
            f'"country":"{rng.choice(_COUNTRIES)}","body":"')
    words = " ".join(rng.choices(_WORDS, k=length // 5))
    while len(words) < length:
        words += " " + " ".join(rng.choices(_WORDS, k=length // 5))
    return (head + words)[: length - 2].encode() + b'"}'


#: payload kind -> (value maker, distinct values in the pool); "ascii" is _value, drawn as before
_VALUE_MAKERS = {
    "accented": (_accented_value, POOL_SIZE),
    "binary": (_binary_value, POOL_SIZE),
    "large": (_large_value, LARGE_POOL_SIZE),
    "single": (lambda rng, size: _value(rng, size), POOL_SIZE),
}


def timestamp_of(offset: int) -> int:
    return BASE_TIMESTAMP_MS + offset // RECORDS_PER_MS


def expected_record(pool: _Pool, spec: SegmentSpec, offset: int) -> tuple:
    """(offset, timestamp, key, value, headers) as generated, for checks."""
    ts = timestamp_of(offset) if spec.magic >= 1 else None
    hdrs = pool.headers(offset, spec.headers) if spec.magic >= 2 else []
    return offset, ts, pool.key(offset), pool.value(offset), hdrs


def _v2_batch(pool: _Pool, spec: SegmentSpec, first: int, n: int, codec_impl) -> tuple[bytes, int]:
    from kseg.log.encode import build_v2_batch
    from kseg.model import Header, Record

    records = []
    raw = 0
    for off in range(first, first + n):
        key, value = pool.key(off), pool.value(off)
        pairs = pool.headers(off, spec.headers)
        hdrs = tuple(Header(k, v) for k, v in pairs)
        ts = timestamp_of(off)
        records.append(Record(off, ts, key, value, hdrs, ts, 0, 2, None))
        raw += len(value) + (len(key) if key else 0) + sum(len(k) + len(v) for k, v in pairs)
    return build_v2_batch(records, codec=spec.codec_id, codec_impl=codec_impl), raw


def _legacy_entries(pool: _Pool, spec: SegmentSpec, first: int, n: int, codec_impl) -> tuple[bytes, int]:
    from kseg.log.encode import build_legacy_message, build_legacy_wrapper
    from kseg.model import Record

    magic = spec.magic
    raw = 0
    if spec.codec == "none":
        parts = []
        for off in range(first, first + n):
            key, value = pool.key(off), pool.value(off)
            ts = timestamp_of(off) if magic == 1 else -1
            parts.append(build_legacy_message(off, magic, 0, ts, key, value))
            raw += len(value) + (len(key) if key else 0)
        return b"".join(parts), raw
    records = []
    for off in range(first, first + n):
        key, value = pool.key(off), pool.value(off)
        ts = timestamp_of(off) if magic == 1 else -1
        records.append(Record(off, ts, key, value, (), ts, 0, magic, None))
        raw += len(value) + (len(key) if key else 0)
    return build_legacy_wrapper(records, magic=magic, codec=spec.codec_id, codec_impl=codec_impl), raw


def _write(spec: SegmentSpec, path: Path) -> SegmentInfo:
    from kseg.codecs import get_codec

    pool = _Pool(spec)
    codec_impl = get_codec(spec.codec_id)
    legacy_uncompressed = spec.magic < 2 and spec.codec == "none"
    t0 = time.perf_counter()
    tmp = path.with_name(path.name + ".tmp")
    offset = entries = written = record_bytes = 0
    with open(tmp, "wb", buffering=4 << 20) as f:
        while written < spec.target_bytes:
            n = spec.records_per_batch
            if spec.magic >= 2:
                data, raw = _v2_batch(pool, spec, offset, n, codec_impl)
                entries += 1
            else:
                data, raw = _legacy_entries(pool, spec, offset, n, codec_impl)
                entries += n if legacy_uncompressed else 1
            f.write(data)
            written += len(data)
            record_bytes += raw
            offset += n
    os.replace(tmp, path)
    return SegmentInfo(path, spec, offset, entries, written, record_bytes, time.perf_counter() - t0)


def check_with_kafka_python(info: SegmentInfo, sample_bytes: int = 4 << 20) -> int:
    """Read the first ``sample_bytes`` (whole entries) with kafka-python: CRCs valid,
    records as generated. Returns how many records were checked; raises on a mismatch."""
    from kafka.record.memory_records import MemoryRecords

    spec = info.spec
    pool = _Pool(spec)
    with open(info.path, "rb") as f:
        data = f.read(sample_bytes)
    records = MemoryRecords(data)
    checked = 0
    next_offset = 0
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        if not batch.validate_crc():
            raise AssertionError(f"{info.path}: kafka-python finds a bad CRC at offset {next_offset}")
        for r in batch:
            want = expected_record(pool, spec, next_offset)
            got = (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
            if got != want:
                raise AssertionError(f"{info.path}: kafka-python reads {got!r}, generated {want!r}")
            if spec.magic < 2 and spec.codec != "none" and not r.validate_crc():
                raise AssertionError(f"{info.path}: bad inner CRC at offset {r.offset}")
            next_offset += 1
            checked += 1
    if not checked:
        raise AssertionError(f"{info.path}: kafka-python read no records")
    return checked


def generate_segment(
    path: str | os.PathLike | None = None,
    magic: int = 2,
    codec: str = "none",
    target_bytes: int = 100 << 20,
    records_per_batch: int = 100,
    key_size: int = 16,
    value_size: int = 100,
    headers: int = 1,
    payload: str = "ascii",
    *,
    data_dir: str | os.PathLike | None = None,
    force: bool = False,
    check: bool = True,
    log: Callable[[str], Any] | None = None,
) -> SegmentInfo:
    """Generate (or reuse) a segment; see ``SegmentSpec`` for the parameters.

    Without ``path`` the file is ``<data_dir>/<spec name>/00000000000000000000.log``.
    A file is reused when the parameters recorded next to it (``<file>.meta.json``)
    match and its size is the recorded one.
    """
    spec = SegmentSpec(magic, codec, target_bytes, records_per_batch, key_size, value_size,
                       headers if magic >= 2 else 0, payload=payload)
    if path is None:
        base = Path(data_dir) if data_dir is not None else DEFAULT_DATA_DIR
        path = base / spec.name / "00000000000000000000.log"
    path = Path(path)
    meta_path = path.with_name(path.name + ".meta.json")
    wanted = {"generator": GENERATOR_VERSION, "spec": spec.recorded()}
    if not force and path.is_file() and meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
        except ValueError:
            meta = {}
        if {k: meta.get(k) for k in wanted} == wanted and meta.get("file_bytes") == path.stat().st_size:
            return SegmentInfo(path, spec, meta["records"], meta["entries"], meta["file_bytes"],
                               meta["record_bytes"], meta.get("generated_seconds", 0.0), cached=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    if log:
        log(f"generating {path} ({spec.target_bytes / 1e6:.0f} MB) ...")
    meta_path.unlink(missing_ok=True)
    info = _write(spec, path)
    if check:
        info.extra["kafka_python_checked"] = check_with_kafka_python(info)
    meta = dict(wanted, records=info.records, entries=info.entries, file_bytes=info.file_bytes,
                record_bytes=info.record_bytes, generated_seconds=round(info.generated_seconds, 3))
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    if log:
        log(f"  {info.records:,} records in {info.entries:,} entries, {info.file_bytes / 1e6:.1f} MB, "
            f"{info.generated_seconds:.1f} s")
    return info


def segment_for(spec: SegmentSpec, **kw: Any) -> SegmentInfo:
    return generate_segment(None, spec.magic, spec.codec, spec.target_bytes, spec.records_per_batch,
                            spec.key_size, spec.value_size, spec.headers, spec.payload, **kw)


# --------------------------------------------------------------------------- timing


@dataclass
class Timing:
    """The best of several runs: its wall and CPU seconds (``seconds`` is the one the
    caller chose to rank by), its result, and how many runs were made."""

    wall: float
    cpu: float
    result: Any
    runs: int
    clock: str = "wall"

    @property
    def seconds(self) -> float:
        return self.cpu if self.clock == "cpu" else self.wall


def _cpu_now(children: bool) -> float:
    if children:
        import resource

        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime
    return time.process_time()


def measure(fn: Callable[[], Any], repeat: int = 3, budget: float | None = None, *,
            clock: str = "wall", children: bool = False, before: Callable[[], Any] | None = None) -> Timing:
    """Run ``fn`` up to ``repeat`` times (at least once; stop early once ``budget``
    wall seconds have been spent) and keep the fastest run by ``clock``:

    - "wall": ``time.perf_counter`` (what a user waits for; the default)
    - "cpu": CPU seconds, user + system (``time.process_time``; with ``children``,
      those of the child processes ``fn`` waited for). Barely moved by other
      processes competing for the core, so use it on a shared machine.

    ``before`` runs untimed before each run (e.g. ``warm_file``). Single process; a
    full collection before each run so one run's garbage is not charged to the next.
    """
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu', not {clock!r}")
    best: Timing | None = None
    spent = 0.0
    runs = 0
    for _ in range(max(1, repeat)):
        if before is not None:
            before()
        gc.collect()
        c0 = _cpu_now(children)
        t0 = time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t0
        cpu = _cpu_now(children) - c0
        runs += 1
        spent += wall
        this = Timing(wall, cpu, out, runs, clock)
        if best is None or this.seconds < best.seconds:
            best = this
        if budget is not None and spent >= budget:
            break
    assert best is not None
    best.runs = runs
    return best


def best_of(fn: Callable[[], Any], repeat: int = 3, budget: float | None = None,
            clock: str = "wall") -> tuple[float, Any]:
    """(fastest time, its result) of up to ``repeat`` runs; see ``measure``."""
    t = measure(fn, repeat, budget, clock=clock)
    return t.seconds, t.result


def idlest_cpu(sample: float = 0.3) -> int | None:
    """The allowed CPU with the most idle time over ``sample`` seconds (Linux), else None."""
    def idle() -> dict[int, int]:
        out = {}
        try:
            for line in Path("/proc/stat").read_text().splitlines():
                if line.startswith("cpu") and line[3:4].isdigit():
                    f = line.split()
                    out[int(f[0][3:])] = int(f[4]) + int(f[5])  # idle + iowait
        except (OSError, ValueError, IndexError):
            return {}
        return out

    if not hasattr(os, "sched_getaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    a = idle()
    time.sleep(sample)
    b = idle()
    scores = {c: b[c] - a[c] for c in allowed if c in a and c in b}
    return max(sorted(scores), key=lambda c: scores[c]) if scores else None


def warm_file(path: str | os.PathLike, chunk: int = 8 << 20) -> float:
    """Read a file through once so that the page cache holds it (the benchmarks time
    CPU work, not the disk); returns the read speed in MB/s (low: it was not cached).
    Some VMs reclaim cold page cache within minutes, so call this right before timing."""
    t0 = time.perf_counter()
    total = 0
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(chunk)
        while True:
            n = f.readinto(buf)
            if not n:
                break
            total += n
    dt = time.perf_counter() - t0
    return total / 1e6 / dt if dt > 0 else float("inf")


def pin_to_one_core(cpu: int | None = None) -> int | None:
    """Restrict this process (and the children it starts) to one CPU; returns it.
    Default: the idlest allowed CPU right now. No-op where affinity is unsupported."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    chosen = cpu if cpu is not None else idlest_cpu()
    if chosen is None:
        chosen = sorted(os.sched_getaffinity(0))[-1]
    os.sched_setaffinity(0, {chosen})
    return chosen


def source_revision() -> dict:
    """The commit the measured kseg was built from, and its uncommitted changes (names)."""
    import subprocess

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": git("rev-parse", "--short", "HEAD").strip(),
            "modified": [line[3:] for line in git("status", "--porcelain", "--", "kseg").splitlines()]}


def machine_info() -> dict:
    """nproc, CPU model, Python and library versions, load average: for the record."""
    import platform

    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for mod in ("kseg", "kafka", "zstandard", "lz4", "cramjam", "crc32c"):
        try:
            m = __import__(mod)
            versions[mod] = getattr(m, "__version__", "?")
        except ImportError:
            versions[mod] = None
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {
        "kseg_source": source_revision(),
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
        "loadavg": load,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
