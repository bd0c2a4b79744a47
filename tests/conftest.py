"""Shared test helpers: where the real data lives, the expectations written
down beside it (SOURCES.md, vectors.md), hypothesis strategies for records,
and a switch between kseg's C accelerator and its pure-Python reference.

Rules: the real data under /work/shared is read-only (tests copy what they
mutate into tmp_path); a missing data folder skips, it never fails; the only
global setting made here is the hypothesis profile (see ``examples``).
"""

from __future__ import annotations

import ast
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import kseg
from kseg.log import fast
from kseg.log.control import control_info
from kseg.errors import KsegError
from kseg.formats.primitives import INT32_MAX, INT64_MAX, INT64_MIN
from kseg.model import Header, Record, make_record

REPO = Path(__file__).resolve().parent.parent


def _shared() -> Path:
    """The shared reference folder: $KSEG_SHARED, else ``shared/`` beside the checkout."""
    if os.environ.get("KSEG_SHARED"):
        return Path(os.environ["KSEG_SHARED"])
    beside = REPO.parent / "shared"
    return beside if beside.is_dir() else Path("/work/shared")


SHARED = _shared()
REALDATA = SHARED / "realdata"
SPEC_VECTORS_DIR = SHARED / "spec" / "vectors"
FIXTURES_LOGDIR = REPO / "fixtures" / "logdir"



# --------------------------------------------------------------------------- hypothesis profiles

# ``fast`` is the default (``make test``); ``HYPOTHESIS_PROFILE=nightly`` runs every
# property test with 20 times as many examples, ``check`` (``make check``) a quarter. No deadline: examples that build
# and decode whole segments are slow by design, and a shared machine is noisy.
FAST_EXAMPLES = 100
settings.register_profile(
    "fast", max_examples=FAST_EXAMPLES, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile("nightly", settings.get_profile("fast"), max_examples=20 * FAST_EXAMPLES)
# make check's quick loop: a quarter of the examples (make test, which CI runs, keeps them all)
settings.register_profile("check", settings.get_profile("fast"), max_examples=FAST_EXAMPLES // 4)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "fast")


def examples(n: int) -> settings:
    """A test's weight: ``n`` examples under the ``fast`` profile, scaled with the loaded one
    (cheap properties take more than the default, whole-segment round trips fewer)."""
    return settings(max_examples=max(1, n * settings.default.max_examples // FAST_EXAMPLES))


# --------------------------------------------------------------------------- C / Python switch


@pytest.fixture(params=["c", "python"])
def decoder_path(request, monkeypatch):
    """Run a test once with the C accelerator and once with the pure-Python reference.

    ``kseg.log.fast`` reads ``ACCELERATED`` at call time, so flipping it switches
    every hot path (scan, v2 records, legacy records, the verify summary).
    """
    if request.param == "c":
        if not fast.ACCELERATED:
            pytest.skip("the C accelerator is not built (or KSEG_PURE_PYTHON is set)")
        monkeypatch.setattr(fast, "ACCELERATED", True)
    else:
        monkeypatch.setattr(fast, "ACCELERATED", False)
    return request.param


# --------------------------------------------------------------------------- SOURCES.md


@dataclass
class Expected:
    """What the independent checker saw in one real .log/.checkpoint file."""

    path: Path
    entries: int
    records: int | None = None
    magic: dict[int, int] = field(default_factory=dict)
    codecs: dict[str, int] = field(default_factory=dict)
    ts: str | None = None
    offsets: tuple[int, int] | None = None
    crc_bad: int = 0
    trailing: int = 0
    truncated: bool = False
    producer_ids: int | None = None
    control: tuple[int, dict[str, int]] | None = None
    headers: int | None = None

    @property
    def bad(self) -> bool:
        return self.crc_bad > 0 or self.trailing > 0 or self.truncated

    @property
    def id(self) -> str:
        return str(self.path.relative_to(REALDATA))


_DICT = r"(\{[^}]*\})"


def parse_check(path: Path, check: str) -> Expected | None:
    """One ``check`` cell of SOURCES.md (None for rows that are not log files)."""
    if "TRUNCATED" in check:
        m = re.search(r"^(\d+) complete entries", check)
        return Expected(path, entries=int(m.group(1)) if m else 0, records=0, truncated=True,
                        trailing=path.stat().st_size if path.exists() else 0)
    m = re.search(r"\bentries=(\d+)", check)
    if not m:
        return None
    exp = Expected(path, entries=int(m.group(1)))
    if m := re.search(r"\brecords=(\d+)", check):
        exp.records = int(m.group(1))
    if m := re.search(r"\bmagic=" + _DICT, check):
        exp.magic = ast.literal_eval(m.group(1))
    if m := re.search(r"\bcodecs=" + _DICT, check):
        exp.codecs = ast.literal_eval(m.group(1))
    if m := re.search(r"\bts=(\S+)", check):
        exp.ts = m.group(1)
    if m := re.search(r"\boffsets=(-?\d+)\.\.(-?\d+)", check):
        exp.offsets = (int(m.group(1)), int(m.group(2)))
    if m := re.search(r"\bcrc_bad=(\d+)", check):
        exp.crc_bad = int(m.group(1))
    if m := re.search(r"\btrailing=(\d+)", check):
        exp.trailing = int(m.group(1))
    if m := re.search(r"\bproducerIds=(\d+)", check):
        exp.producer_ids = int(m.group(1))
    if m := re.search(r"\bcontrol=(\d+)" + _DICT + "?", check):
        exp.control = (int(m.group(1)), ast.literal_eval(m.group(2)) if m.group(2) else {})
    if m := re.search(r"\bheaders=(\d+)", check):
        exp.headers = int(m.group(1))
    return exp


def sources_expectations() -> list[Expected]:
    """Every .log/.checkpoint row of realdata/SOURCES.md with its check column."""
    sources = REALDATA / "SOURCES.md"
    if not sources.exists():
        return []
    out = []
    for line in sources.read_text().splitlines():
        if not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rel = cells[0]
        if not (rel.endswith(".log") or rel.endswith(".checkpoint")):
            continue
        exp = parse_check(REALDATA / rel, cells[-1])
        if exp is not None:
            out.append(exp)
    return out


def real_log_files() -> list[Path]:
    """The real .log/.checkpoint files that exist on disk."""
    return [e.path for e in sources_expectations() if e.path.exists()]


# --------------------------------------------------------------------------- vectors.md


@dataclass
class Vector:
    name: str
    path: Path
    provenance: str
    check: str

    @property
    def id(self) -> str:
        return f"{self.path.parent.parent.name}/{self.name}"


def vector_entries() -> list[Vector]:
    """Every vector of realdata/vectors.md whose .bin file is present."""
    doc = REALDATA / "vectors.md"
    if not doc.exists():
        return []
    out = []
    for block in re.split(r"^### ", doc.read_text(), flags=re.M)[1:]:
        name = block.splitlines()[0].strip()
        m = re.search(r"file: (realdata/\S+\.bin)", block)
        if not m:
            continue
        path = REALDATA / m.group(1)[len("realdata/"):]
        prov = re.search(r"provenance: (\w+)", block)
        check = re.search(r"- check: (.*)", block)
        if path.exists():
            out.append(Vector(name, path, prov.group(1) if prov else "?", check.group(1).strip() if check else ""))
    return out


def spec_vectors() -> list[Path]:
    return sorted(SPEC_VECTORS_DIR.glob("*.bin")) if SPEC_VECTORS_DIR.is_dir() else []


def fixture_logs() -> list[Path]:
    """Fixture segments (generated by fixtures/generate.py); empty if not generated yet."""
    if not FIXTURES_LOGDIR.is_dir():
        return []
    return sorted(p for p in FIXTURES_LOGDIR.rglob("*") if p.is_file() and p.suffix in (".log", ".checkpoint"))


def log_like_vectors() -> list[Vector]:
    """Vectors that are .log fragments (their check line counts entries)."""
    return [v for v in vector_entries() if "entries=" in v.check]


def ids(paths: list[Path], root: Path) -> list[str]:
    """Readable test ids: the path under ``root``, else under the shared data or the repo."""
    out = []
    for p in paths:
        for base, prefix in ((root, ""), (SHARED, ""), (FIXTURES_LOGDIR, "fixtures/"), (REPO, "")):
            try:
                out.append(prefix + str(p.relative_to(base)))
                break
            except ValueError:
                continue
        else:
            out.append(p.name)
    return out


# --------------------------------------------------------------------------- what kseg sees


@dataclass
class Seen:
    entries: int = 0
    records: int = 0
    magic: Counter = field(default_factory=Counter)
    codecs: Counter = field(default_factory=Counter)
    ts_types: set = field(default_factory=set)
    offsets: list[int] = field(default_factory=list)
    crc_bad: int = 0
    trailing: int = 0
    tail: Any = None
    producer_ids: set = field(default_factory=set)
    control: Counter = field(default_factory=Counter)
    headers: int = 0
    record_errors: list[KsegError] = field(default_factory=list)


def kseg_view(path: Path) -> Seen:
    """Walk a file with kseg's public API and collect what the SOURCES.md checker counts."""
    seen = Seen()
    seg = kseg.open_segment(path)
    for b in seg.batches():
        seen.entries += 1
        seen.magic[b.magic] += 1
        seen.codecs[b.codec_name] += 1
        seen.ts_types.add(b.timestamp_type_name if b.magic > 0 else "-")
        if not b.crc_valid:
            seen.crc_bad += 1
        if b.magic >= 2 and b.producer_id is not None and b.producer_id >= 0:
            seen.producer_ids.add(b.producer_id)
        try:
            recs = kseg.batch_records(b)
        except KsegError as e:
            seen.record_errors.append(e)
            continue
        seen.records += len(recs)
        seen.offsets.extend(r.offset for r in recs)
        seen.headers += sum(len(r.headers) for r in recs)
        if b.is_control:
            for r in recs:
                seen.control[control_info(r).type_name] += 1
    seen.tail = seg.tail
    seen.trailing = seg.tail.length if seg.tail is not None else 0
    return seen


# --------------------------------------------------------------------------- strategies

# Byte strings that stay small so hundreds of examples run in well under a second.
keys_or_values = st.one_of(st.none(), st.just(b""), st.binary(max_size=40), st.binary(min_size=100, max_size=400))
header_keys = st.text(max_size=12)  # text() excludes surrogates: header keys are UTF-8
header_values = st.one_of(st.none(), st.binary(max_size=20))
headers_st = st.lists(st.tuples(header_keys, header_values), max_size=4)
# Realistic epoch-millisecond timestamps, with room for the negative deltas
# a batch allows (the first record is not necessarily the smallest).
timestamps = st.integers(min_value=0, max_value=1 << 45)


@st.composite
def v2_records(draw, *, min_size: int = 1, max_size: int = 8, with_headers: bool = True):
    """Records with absolute, strictly increasing offsets (gaps allowed, as after compaction)."""
    n = draw(st.integers(min_size, max_size))
    base = draw(st.integers(0, 1 << 40))
    gaps = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    offsets, off = [], base
    for g in gaps:
        offsets.append(off)
        off += g
    out = []
    for o in offsets:
        ts = draw(timestamps)
        hdrs = draw(headers_st) if with_headers else []
        out.append(make_record(o, ts, draw(keys_or_values), draw(keys_or_values), hdrs))
    return out


@st.composite
def legacy_records(draw, *, magic: int, min_size: int = 1, max_size: int = 8, consecutive: bool = False):
    """v0/v1 records: no headers; v0 has no timestamp (-1)."""
    n = draw(st.integers(min_size, max_size))
    base = draw(st.integers(0, 1 << 40))
    out, off = [], base
    for _ in range(n):
        ts = draw(timestamps) if magic == 1 else -1
        out.append(make_record(off, ts, draw(keys_or_values), draw(keys_or_values), (), magic=magic))
        off += 1 if consecutive else draw(st.integers(1, 3))
    return out


def same_record_fields(r: Record) -> tuple:
    """The fields a writer chooses (what must survive encode -> decode)."""
    return (r.offset, r.stored_timestamp, r.key, r.value, tuple(tuple(h) for h in r.headers))


__all__ = [
    "Expected",
    "FIXTURES_LOGDIR",
    "Header",
    "INT32_MAX",
    "INT64_MAX",
    "INT64_MIN",
    "REALDATA",
    "SPEC_VECTORS_DIR",
    "Seen",
    "Vector",
    "fixture_logs",
    "ids",
    "kseg_view",
    "legacy_records",
    "log_like_vectors",
    "real_log_files",
    "same_record_fields",
    "sources_expectations",
    "spec_vectors",
    "v2_records",
    "vector_entries",
]


# --------------------------------------------------------------------------- real servers

# Session fixtures for the object-store and cluster tests (servers.py starts them on loopback).
from servers import object_store, s3_env, s3_logdir, spark_cluster  # noqa: E402, F401


# --------------------------------------------------------------------------- strict JSON, suite-wide

import servers  # noqa: E402
from strict_outputs import StrictWatch, check_strict_output, runs_kseg, strict_json  # noqa: E402, F401

# Every folder tmp_path_factory made in this process, and how many of them earlier tests took:
# a test's end judges the folders made since (its tmp_path, and the folders of the fixtures set
# up for it) and the fixtures' folders of its module made before (written to by later tests).
_MADE: list[Path] = []
_FOLDERS: dict[str, Any] = {"taken": 0, "module": None, "shared": [], "seen": {}}


@pytest.fixture(scope="session", autouse=True)
def _folders_made():
    """Records the folders tmp_path_factory makes (tmp_path's among them)."""
    from _pytest.tmpdir import TempPathFactory

    mktemp = TempPathFactory.mktemp

    def recorded(self: TempPathFactory, basename: str, numbered: bool = True) -> Path:
        made = mktemp(self, basename, numbered)
        _MADE.append(made)
        return made

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TempPathFactory, "mktemp", recorded)
        yield


@pytest.fixture(autouse=True)
def _every_json_output_is_strict(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Every JSON document a test gets from kseg or finds written is strict JSON
    (tests/strict_outputs.py): ``--format json``/``jsonl`` output through CliRunner, from a
    child's captured stdout (``subprocess.run``, ``Popen.communicate``) or read from its pipe by
    hand; at the test's end, the JSON files under its temporary folders and, for a live test, the
    JSON objects written to a running S3 server meanwhile. Fails the test (at its end for files,
    pipes and objects) naming each document that is not."""
    import subprocess

    from click.testing import CliRunner

    live = request.node.get_closest_marker("live") is not None
    watch = StrictWatch(stores=servers.running_stores if live else lambda: (), seen=_FOLDERS["seen"])
    invoke = CliRunner.invoke

    def checked(self: CliRunner, cli: Any, args: Any = None, *a: Any, **kw: Any) -> Any:
        result = invoke(self, cli, args, *a, **kw)
        if not isinstance(result.exception, Exception):
            check_strict_output(args, result.exit_code, result.stdout)
        return result

    communicate = subprocess.Popen.communicate

    def communicated(self: subprocess.Popen, *a: Any, **kw: Any) -> Any:
        out, err = communicate(self, *a, **kw)
        watch.forget(self)  # judged here, whole
        if runs_kseg(self.args):
            check_strict_output(self.args, self.returncode, out)
        return out, err

    popen_init = subprocess.Popen.__init__

    def started(self: subprocess.Popen, *a: Any, **kw: Any) -> None:
        popen_init(self, *a, **kw)
        watch.watch_pipe(self)

    monkeypatch.setattr(CliRunner, "invoke", checked)
    monkeypatch.setattr(subprocess.Popen, "communicate", communicated)
    monkeypatch.setattr(subprocess.Popen, "__init__", started)
    yield watch
    module = request.node.nodeid.split("::")[0]
    if _FOLDERS["module"] != module:
        _FOLDERS["module"], _FOLDERS["shared"] = module, []
    new, _FOLDERS["taken"] = _MADE[_FOLDERS["taken"]:], len(_MADE)
    own = request.node.funcargs.get("tmp_path")
    watch.folders = [*_FOLDERS["shared"], *new]
    _FOLDERS["shared"] += [p for p in new if p != own]
    watch.check()


# --------------------------------------------------------------------------- test tiers

# ``make test`` runs everything (it is what CI runs). ``make check`` is the fast tier: unit,
# property and corpus tests, no servers, no JVM, no whole-command matrices of child processes;
# it deselects the ``live`` marker, which the modules below get whole, every test that uses a
# server's fixture, and every test whose id names Spark.
LIVE_MODULES = {
    "test_bounded_companions": "children under an address-space limit beside 3 GiB sparse files",
    "test_cluster": "a Spark standalone cluster and an S3 server",
    "test_damage_policy": "every writer x damage x policy, each in a child process",
    "test_failing_machines": "children killed, interrupted and starved at random points",
    "test_failure_matrix": "every command x input kind x fault, each in a child process, with an S3 server",
    "test_gcs_azure": "GCS and Azure emulators",
    "test_input_shapes": "every command x input shape, each in a child process",
    "test_jvm_utf8": "a JVM",
    "test_live_inputs": "children stopped mid-run while their input changes",
    "test_many_objects": "an S3 server",
    "test_object_store": "an S3 server",
    "test_publish": "an S3 server",
    "test_spark": "Spark",
    "test_tools_spark": "Spark",
}
# Fixtures that start a server (tests/servers.py): a test using one is live wherever it is.
LIVE_FIXTURES = {"object_store", "spark_cluster"}
# Live modules whose tests only start kseg's own child processes (no server, JVM or jar cache
# shared between tests): marked ``children`` too, and run by make test on every core; the rest
# of the live tier runs one test at a time.
CHILDREN_ONLY = {"test_bounded_companions", "test_damage_policy", "test_failing_machines", "test_input_shapes",
                 "test_live_inputs"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live: needs a server, a JVM or many child processes (left out by make check)")
    config.addinivalue_line("markers", "children: a live test of kseg's child processes only (run side by side)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.stem
        if (module in LIVE_MODULES or "kafka" in item.path.parent.name or "spark" in item.nodeid.lower()
                or LIVE_FIXTURES.intersection(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.live)
            if (module in CHILDREN_ONLY and "spark" not in item.nodeid.lower()
                    and not LIVE_FIXTURES.intersection(getattr(item, "fixturenames", ()))):
                item.add_marker(pytest.mark.children)
