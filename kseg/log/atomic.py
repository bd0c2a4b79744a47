"""Safe outputs: refuse to overwrite inputs, write under a temporary name, rename when complete.

An interrupted run leaves the input intact and nothing at the output name;
the temporary names start with a dot and end in ``.kseg-tmp``. A failing write
(a full disk, a vanished folder) removes what it wrote and raises an OutputError;
a run killed outright leaves its temporary name, which the next run into the same
folder removes once the process that made it is gone.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import BinaryIO, Iterable, Mapping

from kseg.errors import OutputError
from kseg.storage import as_path

TMP_SUFFIX = ".kseg-tmp"
WRITE_BUFFER = 1 << 20  # entries are small and many: write in 1 MiB pieces


def check_output(inputs: Iterable[Path], output: Path, *, force: bool) -> None:
    """Refuse an output that is one of the inputs (or holds or is held by one), or exists without --force."""
    out = str(as_path(output).resolve()).rstrip("/")
    for raw in inputs:
        inp = str(as_path(raw).resolve()).rstrip("/")  # a path, an archive member or an object
        if out == inp or out.startswith(inp + "/") or inp.startswith(out + "/"):
            raise OutputError("the output must not be an input or overlap it", file=str(output))
    if output.exists() and not force:
        raise OutputError("the output exists (use --force to replace it)", file=str(output))


def tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")


def write_failed(e: OSError, path: Path) -> OutputError:
    return OutputError(f"cannot write: {e.strerror or e}", file=str(path))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_tmp(path: Path) -> None:
    """Remove what a killed run left under ``path``'s temporary names (its process is gone)."""
    stale = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)(\.old)?{re.escape(TMP_SUFFIX)}$")
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return
    for p in siblings:
        m = stale.match(p.name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                try:
                    p.unlink()
                except OSError:
                    pass


class AtomicFile:
    """A file written under a temporary name and renamed into place by ``commit``."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = tmp_name(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if TMP_SUFFIX not in str(self.path.parent):  # inside an AtomicDir nothing is stale
                remove_stale_tmp(self.path)
            self.f: BinaryIO = open(self.tmp, "wb", buffering=WRITE_BUFFER)
        except OSError as e:
            raise write_failed(e, self.path) from None
        self.size = 0

    def write(self, data: bytes | memoryview) -> None:
        try:
            self.f.write(data)
        except OSError as e:
            self.abort()
            raise write_failed(e, self.path) from None
        self.size += len(data)

    def flush(self) -> None:
        """Everything written so far on disk, still under the temporary name."""
        try:
            self.f.flush()
            os.fsync(self.f.fileno())
            self.f.close()
        except OSError as e:
            self.abort()
            raise write_failed(e, self.path) from None

    def commit(self) -> None:
        self.flush()
        try:
            os.replace(self.tmp, self.path)
        except OSError as e:
            self.abort()
            raise write_failed(e, self.path) from None

    def abort(self) -> None:
        if not self.f.closed:
            try:
                self.f.close()
            except OSError:  # the buffer could not be written out: nothing to keep anyway
                pass
        try:
            os.unlink(self.tmp)
        except OSError:
            pass

    def __enter__(self) -> "AtomicFile":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def write_atomic(path: Path, data: bytes) -> None:
    with AtomicFile(path) as f:
        f.write(data)


def commit_together(files: list[AtomicFile]) -> None:
    """Files that belong together (a segment and its indexes): every one flushed to disk
    under its temporary name first, then all renamed, the first given last; on a failure
    none is renamed and all are removed."""
    try:
        for f in files:
            f.flush()
        for f in reversed(files):
            os.replace(f.tmp, f.path)
    except OSError as e:
        for f in files:
            f.abort()
        raise write_failed(e, files[0].path) from None
    except BaseException:
        for f in files:
            f.abort()
        raise


def write_atomic_many(files: Mapping[Path, bytes]) -> None:
    """Several files that belong together (an .index and its .timeindex): all written under
    temporary names first, renamed into place only when every one is complete."""
    pending: list[AtomicFile] = []
    try:
        for path, data in files.items():
            f = AtomicFile(path)
            pending.append(f)
            f.write(data)
    except BaseException:
        for f in pending:
            f.abort()
        raise
    commit_together(pending)


class AtomicDir:
    """A folder built under a temporary name and renamed into place when complete.

    With --force an existing folder is replaced only at the very end.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = tmp_name(self.path)
        try:
            if self.tmp.exists():
                shutil.rmtree(self.tmp)
            self.tmp.mkdir(parents=True)
            remove_stale_tmp(self.path)
        except OSError as e:
            raise write_failed(e, self.path) from None

    def commit(self) -> None:
        try:
            if self.path.exists():
                old = self.path.with_name(f".{self.path.name}.{os.getpid()}.old{TMP_SUFFIX}")
                os.replace(self.path, old)
                os.replace(self.tmp, self.path)
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink()
            else:
                os.replace(self.tmp, self.path)
        except OSError as e:
            self.abort()
            raise write_failed(e, self.path) from None

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "AtomicDir":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
