"""Many small objects and large archives: listings answer for what they list, small objects are
read whole and fetched ahead (``kseg.prefetch``), an archive's member index is built once.

Whatever is fetched ahead, the results are those of plain reads (same report, same dump bytes),
and a store failing mid-run is still the one read error naming the object (the failure matrix's
``store_killed_reading`` cells, tests/test_failure_matrix.py, on every reader).
"""

from __future__ import annotations

import tarfile
import threading
import time
from pathlib import Path

import pytest

from builders import write_partition
from kseg import prefetch, storage
from kseg.prefetch import ReadAhead


def cli(*args):
    from click.testing import CliRunner

    from kseg.cli.main import main

    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def make_logdir(root: Path, partitions: int = 3, segments: int = 20, batches: int = 2) -> Path:
    for p in range(partitions):
        write_partition(root / f"many-{p}", 2, "none", segments=segments, n_batches=batches, per=3)
    return root


# --------------------------------------------------------------------------- ReadAhead by itself


def test_read_ahead_takes_once_and_forgets_failures():
    ra = ReadAhead(workers=2, budget=100)
    assert ra.want("a", 10, lambda: b"A" * 10)
    assert ra.want("bad", 10, lambda: (_ for _ in ()).throw(OSError("boom")))
    assert ra.take("a") == b"A" * 10
    assert ra.take("a") is None  # once
    assert ra.take("bad") is None  # the caller reads it itself, and meets the error there
    assert ra.take("never") is None
    assert ra.held() == 0


def test_read_ahead_memory_is_bounded():
    gate = threading.Event()
    ra = ReadAhead(workers=2, budget=100)

    def slow() -> bytes:
        gate.wait(10)
        return b"x" * 40

    assert ra.want(1, 40, slow) and ra.want(2, 40, slow)
    assert not ra.want(3, 40, slow)  # 120 > 100: not started
    assert not ra.want(4, prefetch.MAX_ITEM + 1, slow)  # never a large object
    assert ra.held() == 80
    ra.drop([2])
    assert ra.held() == 40 and ra.want(3, 40, slow)
    gate.set()
    assert ra.take(1) == b"x" * 40 and ra.take(3) == b"x" * 40 and ra.held() == 0
    assert not ReadAhead(workers=0).want(1, 1, slow)  # read-ahead off


# --------------------------------------------------------------------------- object stores


class Counting:
    """A pyarrow filesystem that counts its calls (and which were made fetching ahead)."""

    def __init__(self, fs):
        self.fs = fs
        self.calls: dict[str, int] = {}
        self.ahead = 0

    def __getattr__(self, name):
        f = getattr(self.fs, name)

        def counted(*a, **k):
            self.calls[name] = self.calls.get(name, 0) + 1
            if threading.current_thread().name == "kseg-read-ahead":
                self.ahead += 1
            return f(*a, **k)

        return counted


@pytest.fixture
def many(s3_env, object_store, tmp_path_factory):
    local = make_logdir(tmp_path_factory.mktemp("many") / "logdir")
    url = object_store.upload(local, "kseg-test", "many-objects")
    return local, url


def counting_store(monkeypatch) -> Counting:
    fs = storage.filesystem("s3")
    counting = Counting(fs)
    key = next(k for k, v in storage._filesystems.items() if v is fs)
    monkeypatch.setitem(storage._filesystems, key, counting)
    monkeypatch.setattr(storage, "_listings", {})
    return counting


@pytest.mark.parametrize("args", [["verify"], ["verify", "--quick"], ["dump", "--records"], ["stats"]])
def test_same_output_with_and_without_read_ahead(many, monkeypatch, args):
    local, url = many
    expected = cli(*args, local)
    counting = counting_store(monkeypatch)
    ahead = cli(*args, url)
    assert ahead.exit_code == expected.exit_code == 0, ahead.output
    assert ahead.output.replace(url, str(local)) == expected.output
    # One LIST per folder and no HEAD per companion looked for; most objects were fetched ahead.
    assert counting.calls.get("get_file_info", 0) <= 15, counting.calls  # was about 10 per object
    assert counting.ahead >= 40, (counting.ahead, counting.calls)
    monkeypatch.setattr(storage, "_read_ahead", ReadAhead(workers=0))
    monkeypatch.setattr(storage, "_listings", {})
    plain = cli(*args, url)
    assert plain.exit_code == 0 and plain.output == ahead.output


def test_listing_answers_for_paths_in_it(many, monkeypatch):
    local, url = many
    counting = counting_store(monkeypatch)
    folder = storage.as_path(url + "/many-0")
    logs = [p for p in folder.iterdir() if p.suffix == ".log"]
    listed = counting.calls.copy()
    for log in logs:
        again = storage.as_path(str(log))  # made from a string, as reports carry paths
        assert again.is_file() and again.stat().st_size == (local / "many-0" / log.name).stat().st_size
        assert not again.with_suffix(".index").exists() and not (folder / "nope").is_file()
    assert counting.calls == listed  # no request
    assert not storage.as_path(url + "/many-0/nope").fresh().exists()
    assert counting.calls.get("get_file_info") == listed["get_file_info"] + 1  # a fresh path asks


# --------------------------------------------------------------------------- archives


def big_tar(path: Path, members: int) -> Path:
    import io

    data = (make_logdir(path.parent / "one", partitions=1, segments=1) / "many-0"
            / "00000000000000000000.log").read_bytes()
    with tarfile.open(path, "w") as tar:
        for i in range(members):
            info = tarfile.TarInfo(f"logs/t-{i % 10}/{i // 10:020d}.log")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_archive_index_built_once(tmp_path, monkeypatch):
    archive = big_tar(tmp_path / "big.tar", 20_000)
    built = []
    real = storage._Archive.__init__

    def counted(self, path):
        built.append(path)
        real(self, path)

    monkeypatch.setattr(storage._Archive, "__init__", counted)
    monkeypatch.setattr(storage, "_archives", {})
    monkeypatch.setattr(storage, "_archive_seen", {})
    t0 = time.perf_counter()
    root = storage.as_path(archive)
    n = 0
    for folder in root.iterdir():
        for member in folder.iterdir():
            assert member.is_file() and member.stat().st_size > 0
            assert not member.with_suffix(".index").exists()
            n += 1
    took = time.perf_counter() - t0
    assert n == 20_000 and len(built) == 1
    assert took < 20, took  # about 1 s unloaded; was a resolve() and a stat() per lookup


def test_archive_verify_builds_the_index_once(tmp_path, monkeypatch):
    archive = big_tar(tmp_path / "small.tar", 300)
    built = []
    real = storage._Archive.__init__
    monkeypatch.setattr(storage._Archive, "__init__", lambda self, path: (built.append(path), real(self, path))[1])
    monkeypatch.setattr(storage, "_archives", {})
    monkeypatch.setattr(storage, "_archive_seen", {})
    r = cli("verify", "--quick", archive)
    # Every member holds the same bytes: offsets below their names' (findings, exit 1), all read.
    assert r.exit_code == 1 and "cannot read" not in r.output and "300 file" in r.output, r.output[-500:]
    assert len(built) == 1
