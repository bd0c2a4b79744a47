"""Safe outputs: refuse to overwrite inputs, write under a temporary name, rename when complete.

An interrupted run leaves the input intact and nothing at the output name;
the temporary names start with a dot and end in ``.kseg-tmp``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import BinaryIO, Iterable

from kseg.errors import OutputError

TMP_SUFFIX = ".kseg-tmp"
WRITE_BUFFER = 1 << 20  # entries are small and many: write in 1 MiB pieces


def check_output(inputs: Iterable[Path], output: Path, *, force: bool) -> None:
    """Refuse an output that is one of the inputs (or holds or is held by one), or exists without --force."""
    out = output.resolve()
    for raw in inputs:
        inp = Path(raw).resolve()
        if out == inp or out in inp.parents or inp in out.parents:
            raise OutputError("the output must not be an input or overlap it", file=str(output))
    if output.exists() and not force:
        raise OutputError("the output exists (use --force to replace it)", file=str(output))


def tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")


class AtomicFile:
    """A file written under a temporary name and renamed into place by ``commit``."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = tmp_name(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f: BinaryIO = open(self.tmp, "wb", buffering=WRITE_BUFFER)
        self.size = 0

    def write(self, data: bytes | memoryview) -> None:
        self.f.write(data)
        self.size += len(data)

    def commit(self) -> None:
        self.f.flush()
        os.fsync(self.f.fileno())
        self.f.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if not self.f.closed:
            self.f.close()
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
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


class AtomicDir:
    """A folder built under a temporary name and renamed into place when complete.

    With --force an existing folder is replaced only at the very end.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = tmp_name(self.path)
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)

    def commit(self) -> None:
        if self.path.exists():
            old = self.path.with_name(f".{self.path.name}.{os.getpid()}.old{TMP_SUFFIX}")
            os.replace(self.path, old)
            os.replace(self.tmp, self.path)
            shutil.rmtree(old) if old.is_dir() else old.unlink()
        else:
            os.replace(self.tmp, self.path)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "AtomicDir":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
