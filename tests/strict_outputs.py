"""Every JSON document kseg gives a test is strict JSON: no ``NaN``, ``Infinity`` or
``-Infinity``, and no number too large to be finite (``1e999``), which Python's ``json`` reads
without a word and other readers refuse. conftest applies it to every test (``StrictWatch``):

- the ``--format json``/``jsonl`` output a test gets through click's CliRunner, or captured from
  a kseg child (``subprocess.run``, ``Popen.communicate``), or read from a child's stdout pipe
  by hand (``Popen.stdout`` records what the test read);
- at the end of the test, every ``*.json``, ``*.jsonl`` and ``*.sarif`` file under the test's
  temporary folders (``tmp_path`` and the folders ``tmp_path_factory`` made for it), also inside
  ``.tar``/``.tar.gz``/``.tgz``/``.zip`` archives there (a bundle's ``kseg-bundle.json``);
- at the end of a live test, every such object written to a running S3 server of the tests'
  (``servers.running_stores()``) since the test started (published outputs' manifests).

A file or object that is not JSON at all is not judged (tests write broken inputs on purpose);
one a lenient reader accepts but a strict one refuses is a bug in whatever wrote it.
"""

from __future__ import annotations

import json
import math
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any, Callable, Iterable

JSON_SUFFIXES = (".json", ".jsonl", ".sarif")
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
# A file this large is a test's bulk data, not a document (parsing it would cost seconds).
LARGEST = 64 << 20


class NotStrict(ValueError):
    """Valid for Python's lenient reader, not for a strict one."""


def strict_json(text: str | bytes) -> object:
    """``json.loads`` that refuses what is not JSON: NaN, Infinity, -Infinity and numbers that
    overflow to infinity."""
    def no_constant(name: str) -> None:
        raise NotStrict(f"non-standard JSON constant {name}")

    def finite(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):
            raise NotStrict(f"number {number[:40]} is not finite")
        return value

    try:
        return json.loads(text, parse_constant=no_constant, parse_float=finite)
    except RecursionError:  # nested past Python's stack: not a document kseg wrote (it refuses those)
        raise ValueError("nested too deeply to read") from None


def _json_format(args: Any) -> bool:
    if not isinstance(args, (list, tuple)):
        return False
    args = [str(a) for a in args]
    for i, a in enumerate(args):
        if a in ("--format=json", "--format=jsonl") or (a == "--format" and i + 1 < len(args)
                                                       and args[i + 1] in ("json", "jsonl")):
            return True
    return False


def check_text(text: str, what: str, *, lenient: bool = False) -> None:
    """``text`` is one strict JSON document or strict JSON Lines (AssertionError naming the line).
    ``lenient``: text that is not JSON at all passes; only non-strict JSON fails."""
    if not text.strip():
        return
    try:
        strict_json(text)
        return
    except ValueError:
        pass
    for n, line in enumerate(text.split("\n"), 1):  # JSON Lines end at \n only
        if line.strip():
            try:
                strict_json(line)
            except NotStrict as e:
                raise AssertionError(f"line {n} of {what} is not strict JSON: {e}: {line[:200]}") from None
            except ValueError as e:
                if lenient:
                    continue
                raise AssertionError(f"line {n} of {what} is not strict JSON: {e}: {line[:200]}") from None


def check_strict_output(args: Any, code: int | None, stdout: str | bytes | None) -> None:
    """A ``--format json``/``jsonl`` output of kseg that ended 0 or 1 parses with a strict
    parser: a whole document, or one document per line (AssertionError naming the line)."""
    if not _json_format(args) or code not in (0, 1) or not stdout:
        return
    text = stdout.decode("utf-8", "replace") if isinstance(stdout, bytes) else stdout
    check_text(text, f"kseg {' '.join(map(str, args))}")


def runs_kseg(args: Any) -> bool:
    """Whether a child's argv runs kseg: the console script, or ``python -c`` code that calls
    kseg's entry point (the tests' ``KSEG`` prefixes, tests/store_faults.py)."""
    if not isinstance(args, (list, tuple)) or not args:
        return False
    return Path(str(args[0])).name in ("kseg", "kafka-dump-log") or any(
        isinstance(a, str) and ("kseg.cli" in a or "store_faults" in a) for a in args[:3])


# --------------------------------------------------------------------------- files and archives


def _is(name: str, suffixes: tuple[str, ...]) -> bool:
    return name.lower().endswith(suffixes)


# What a lenient reader accepts and a strict one does not starts with one of these: NaN,
# [-]Infinity, or a number with a three-digit exponent or 309 digits (past a double's range).
_SUSPECT = re.compile(rb"NaN|Infinity|\d[eE][+-]?\d{3}|\d{309}")


def check_bytes(data: bytes, what: str) -> None:
    """A file's or object's bytes (not JSON at all: not judged). Bytes without a suspect token
    are strict wherever they are JSON, so most are passed without parsing."""
    if _SUSPECT.search(data):
        check_text(data.decode("utf-8", "replace"), what, lenient=True)


def check_archive(path: Path) -> None:
    """The JSON members of a ``.tar``/``.tar.gz``/``.tgz``/``.zip`` (an archive that does not
    open is a test's broken input: not judged)."""
    try:
        if _is(path.name, (".zip",)):
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    if _is(info.filename, JSON_SUFFIXES) and info.file_size <= LARGEST:
                        check_bytes(z.read(info), f"{path}!{info.filename}")
            return
        with tarfile.open(path) as t:
            for member in t:
                if member.isfile() and _is(member.name, JSON_SUFFIXES) and member.size <= LARGEST:
                    f = t.extractfile(member)
                    if f is not None:
                        check_bytes(f.read(), f"{path}!{member.name}")
    except (OSError, EOFError, tarfile.TarError, zipfile.BadZipFile, ValueError):
        return


def check_file(path: Path) -> None:
    if _is(path.name, ARCHIVE_SUFFIXES):
        check_archive(path)
        return
    try:
        data = path.read_bytes()
    except OSError:
        return
    check_bytes(data, str(path))


def documents(root: Path) -> Iterable[tuple[Path, os.stat_result]]:
    """The JSON files and archives under ``root`` (links not followed), with their stat."""
    for folder, dirs, files in os.walk(root):
        for name in files:
            if _is(name, JSON_SUFFIXES + ARCHIVE_SUFFIXES):
                p = Path(folder, name)
                try:
                    st = p.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_size <= LARGEST and os.path.isfile(p) and not os.path.islink(p):
                    yield p, st


# --------------------------------------------------------------------------- pipes read by hand


class RecordedPipe:
    """A child's stdout pipe that keeps what the test read from it (bytes or text), and whether
    it read to the end."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.read_back: list[Any] = []
        self.at_end = False

    def _keep(self, data: Any, whole: bool = False) -> Any:
        if data:
            self.read_back.append(data)
        if whole or not data:
            self.at_end = True
        return data

    def read(self, *a: Any) -> Any:
        data = self._stream.read(*a)
        return self._keep(data, whole=not a or a[0] is None or a[0] < 0)

    def read1(self, *a: Any) -> Any:
        return self._keep(self._stream.read1(*a))

    def readline(self, *a: Any) -> Any:
        return self._keep(self._stream.readline(*a))

    def readlines(self, *a: Any) -> list[Any]:
        lines = self._stream.readlines(*a)
        self._keep(type(lines[0])().join(lines) if lines else b"", whole=not a)
        return lines

    def __iter__(self) -> RecordedPipe:
        return self

    def __next__(self) -> Any:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __enter__(self) -> RecordedPipe:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stream.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def text(self) -> str:
        parts = [p.decode("utf-8", "replace") if isinstance(p, bytes) else p for p in self.read_back]
        return "".join(parts)


def check_pipe(args: Any, code: int | None, pipe: RecordedPipe) -> None:
    """What a test read by hand from a kseg child's stdout: all of it judged as a whole output
    when it read to the end; else the complete lines it read, each one that is JSON strictly."""
    if not _json_format(args) or code not in (0, 1) or not pipe.read_back:
        return
    text = pipe.text()
    if pipe.at_end:
        check_strict_output(args, code, text)
    else:
        check_text(text[: text.rfind("\n") + 1], f"kseg {' '.join(map(str, args))} (read in part)", lenient=True)


# --------------------------------------------------------------------------- one test's watch


class StrictWatch:
    """What one test is checked for at its end: the folders, pipes and stores it may have
    written JSON to. ``check()`` raises one AssertionError naming every non-strict document."""

    def __init__(self, folders: Iterable[Path] = (), stores: Callable[[], Iterable[Any]] = lambda: (),
                 seen: dict[str, tuple[int, int]] | None = None):
        self.started = time.time()
        self.folders = list(folders)
        self.pipes: list[tuple[Any, RecordedPipe]] = []
        self.stores = stores
        # (mtime_ns, size) of the documents already judged (folders shared by a module's tests)
        self.seen = {} if seen is None else seen

    def watch_pipe(self, proc: Any) -> None:
        if proc.stdout is not None and runs_kseg(proc.args) and _json_format(proc.args):
            proc.stdout = RecordedPipe(proc.stdout)
            self.pipes.append((proc, proc.stdout))

    def forget(self, proc: Any) -> None:
        self.pipes = [(p, pipe) for p, pipe in self.pipes if p is not proc]

    def problems(self) -> list[str]:
        found: list[str] = []

        def judge(what: Callable[[], None]) -> bool:
            try:
                what()
                return True
            except AssertionError as e:
                found.append(str(e))
                return False

        for proc, pipe in self.pipes:
            judge(lambda: check_pipe(proc.args, proc.poll(), pipe))
        for folder in self.folders:
            for path, st in documents(folder):
                key = (st.st_mtime_ns, st.st_size)
                if self.seen.get(str(path)) != key and judge(lambda: check_file(path)):
                    self.seen[str(path)] = key  # judged fine: not read again unless it changes
        for store in self.stores():
            judge(lambda: check_store(store, self.started))
        return found

    def check(self) -> None:
        found = self.problems()
        if found:
            raise AssertionError("non-strict JSON written during the test:\n" + "\n".join(found))


def check_store(store: Any, since: float) -> None:
    """The JSON objects of a running S3 server written since ``since`` (every bucket)."""
    from pyarrow import fs as pafs

    fs = store.fs()
    infos = fs.get_file_info(pafs.FileSelector("/", recursive=True))
    for info in infos:
        if info.type != pafs.FileType.File or not _is(info.path, JSON_SUFFIXES):
            continue
        if info.mtime is not None and info.mtime.timestamp() < since - 2 or (info.size or 0) > LARGEST:
            continue
        with fs.open_input_stream(info.path) as f:
            check_bytes(f.read(), f"s3://{info.path}")
