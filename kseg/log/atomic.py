"""Safe outputs: refuse to overwrite inputs, write under a temporary name, publish when complete.

An interrupted run leaves the input intact and nothing at the output name;
the temporary names start with a dot and end in ``.kseg-tmp``. A failing write
(a full disk, a vanished folder) removes what it wrote and raises an OutputError;
a run killed outright leaves its temporary name, which the next run into the same
folder removes once the process that made it is gone.

An output never replaces what kseg did not mean to replace. ``check_output`` notes what
is at the output name when the run starts (nothing, or with --force the thing to be
replaced); the finished output is published by a rename that cannot overwrite
(``renameat2(RENAME_NOREPLACE)``; where that is missing a hard link, or for a folder an
``mkdir`` that claims the name), or, to replace, by an atomic exchange under a lock beside
the output, only while what is there is still what was there at the start. Anything else
found at the output name at the end (made by another process, or by a second kseg writer
that finished first) ends the run with an OutputError; nothing is replaced, and only the
run's own temporary is removed.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator, Mapping

from kseg.errors import OutputError
from kseg.interrupts import uninterrupted
from kseg.storage import as_path

TMP_SUFFIX = ".kseg-tmp"
WRITE_BUFFER = 1 << 20  # entries are small and many: write in 1 MiB pieces
APPEARED = "the output appeared during the run (created by another process?); nothing was replaced"
CHANGED = "the output was replaced during the run (by another process?); nothing was replaced"

Identity = tuple  # (device, inode, file type) of what is at a name


def _identity(path: str | os.PathLike) -> Identity | None:
    """What is at ``path`` (the name itself, not where a symlink points), or None."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode))


# Outputs as check_output found them: absolute path -> what may be replaced (None: nothing).
_claims: dict[str, Identity | None] = {}


def _expected(path: Path) -> Identity | None:
    """What publishing ``path`` may replace: what check_output noted for it, else what is
    there now (a file rewritten inside a temporary folder, an updated registry)."""
    key = os.path.abspath(path)
    if key in _claims:
        return _claims.pop(key)
    return _identity(path)


def check_output(inputs: Iterable[Path], output: Path, *, force: bool) -> None:
    """Refuse an output that is one of the inputs (or holds or is held by one), or exists without --force;
    note what is there, the one thing the run may replace at the end."""
    # A local output is the name itself (an output named like an archive is not read as one).
    out = str((output if isinstance(output, Path) else as_path(output)).resolve()).rstrip("/")
    for raw in inputs:
        inp = str(as_path(raw).resolve()).rstrip("/")  # a path, an archive member or an object
        if out == inp or out.startswith(inp + "/") or inp.startswith(out + "/"):
            raise OutputError("the output must not be an input or overlap it", file=str(output))
    local = isinstance(output, Path)
    there = _identity(output) if local else None
    if (there is not None or output.exists()) and not force:
        raise OutputError("the output exists (use --force to replace it)", file=str(output))
    if local:
        _claims[os.path.abspath(output)] = there


def tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")


def lock_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock{TMP_SUFFIX}")


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


def _remove(p: str | os.PathLike) -> None:
    """Remove a file or a folder (not following symlinks), whatever is left of it."""
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p, ignore_errors=True)
    else:
        try:
            os.unlink(p)
        except OSError:
            pass


def remove_stale_tmp(path: Path) -> None:
    """Remove what a killed run left under ``path``'s temporary names (its process is gone),
    and a lock file no process holds."""
    stale = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)(\.old)?{re.escape(TMP_SUFFIX)}$")
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return
    for p in siblings:
        m = stale.match(p.name)
        if m and int(m.group(1)) != os.getpid() and not _alive(int(m.group(1))):
            _remove(p)
        elif p.name == lock_name(path).name:
            _remove_free_lock(p)


# --------------------------------------------------------------------------- publishing without overwriting

_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2
_AT_FDCWD = -100
_renameat2: list[Any] = []  # [the C function, or None], looked up once


def _libc_renameat2() -> Any:
    if not _renameat2:
        fn = None
        try:
            import ctypes

            fn = ctypes.CDLL(None, use_errno=True).renameat2  # glibc >= 2.28
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
        except (OSError, AttributeError, ImportError):
            fn = None
        _renameat2.append(fn)
    return _renameat2[0]


def _rename2(src: str | os.PathLike, dst: str | os.PathLike, flags: int) -> bool:
    """``renameat2(src, dst, flags)``; False where the C library or the file system lacks it."""
    fn = _libc_renameat2()
    if fn is None:
        return False
    import ctypes

    if fn(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(src), None, os.fspath(dst))


def rename_noreplace(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Rename ``src`` to ``dst`` only if nothing is at ``dst`` (else FileExistsError)."""
    if _rename2(src, dst, _RENAME_NOREPLACE):
        return
    if os.path.isdir(src) and not os.path.islink(src):
        os.mkdir(dst)  # claims the name; a rename may replace an empty folder, and only one
        try:
            os.rename(src, dst)
        except OSError:
            try:
                os.rmdir(dst)
            except OSError:  # someone else's files went into it meanwhile: theirs
                pass
            raise
        return
    try:
        os.link(src, dst)
    except FileExistsError:
        raise
    except OSError:  # no hard links on this file system: check, then rename (a short window)
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fspath(dst)) from None
        os.rename(src, dst)
        return
    os.unlink(src)


def _taken(e: OSError) -> bool:
    return isinstance(e, FileExistsError) or e.errno in (errno.EEXIST, errno.ENOTEMPTY)


def _remove_free_lock(lock: Path) -> None:
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if _identity(lock) == _fd_identity(fd):
            os.unlink(lock)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fd_identity(fd: int) -> Identity:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode))


@contextmanager
def _output_lock(path: Path) -> Iterator[None]:
    """Only one kseg process at a time replaces ``path`` (a lock file beside it, removed after)."""
    import fcntl

    lock = lock_name(path)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        if _identity(lock) == _fd_identity(fd):
            break
        os.close(fd)  # the holder before removed it: lock the one now there
    try:
        yield
    finally:
        try:
            os.unlink(lock)
        finally:
            os.close(fd)


def publish(tmp: Path, path: Path, expected: Identity | None) -> None:
    """Rename the finished ``tmp`` to ``path``: onto nothing, or (``expected``) replacing
    exactly what was there at the start. Raises OutputError otherwise, ``tmp`` left as it is.
    Signals wait until it is done."""
    old = None
    with uninterrupted():
        try:
            if expected is None or _identity(path) is None:
                rename_noreplace(tmp, path)
                return
            with _output_lock(path):
                if _identity(path) != expected:
                    raise OutputError(CHANGED, file=str(path))
                old = _replace(tmp, path, expected)
        except OSError as e:
            if _taken(e):
                raise OutputError(APPEARED, file=str(path)) from None
            raise write_failed(e, path) from None
        finally:
            if old is not None:
                _remove(old)  # the replaced output, outside the lock


def _replace(tmp: Path, path: Path, expected: Identity) -> Path:
    """Swap the finished ``tmp`` with what is at ``path`` (checked to be ``expected``);
    returns where the replaced output now is, for the caller to remove."""
    if _rename2(tmp, path, _RENAME_EXCHANGE):
        if _identity(tmp) != expected:  # changed between the check and the swap: swap back
            _rename2(tmp, path, _RENAME_EXCHANGE)
            raise OutputError(CHANGED, file=str(path))
        return tmp
    old = path.with_name(f".{path.name}.{os.getpid()}.old{TMP_SUFFIX}")
    _remove(old)
    os.rename(path, old)
    if _identity(old) != expected:
        try:
            rename_noreplace(old, path)
        except OSError:
            pass
        raise OutputError(CHANGED, file=str(path))
    try:
        rename_noreplace(tmp, path)
    except BaseException:
        try:
            rename_noreplace(old, path)
        except OSError:
            pass
        raise
    return old


# --------------------------------------------------------------------------- temporaries alive in this process

_live: dict[str, None] = {}  # temporary names not yet published or removed, in order


def remove_live_temporaries() -> None:
    """Remove every temporary this process made and has not published or removed (the
    command's last word on its way out, whatever way that is)."""
    with uninterrupted():
        for p in reversed(list(_live)):
            _remove(p)
            _live.pop(p, None)


class AtomicFile:
    """A file written under a temporary name and published by ``commit``."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = tmp_name(self.path)
        self.size = 0
        with uninterrupted():  # the temporary is known (``_live``) as soon as it exists
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if TMP_SUFFIX not in str(self.path.parent):  # inside an AtomicDir nothing is stale
                    remove_stale_tmp(self.path)
                self.expected = _expected(self.path)
                self.f: BinaryIO = open(self.tmp, "wb", buffering=WRITE_BUFFER)
            except OSError as e:
                raise write_failed(e, self.path) from None
            _live[str(self.tmp)] = None

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

    def publish(self) -> None:
        """The flushed temporary to the output name (``publish``), forgotten once there."""
        publish(self.tmp, self.path, self.expected)
        _live.pop(str(self.tmp), None)

    def commit(self) -> None:
        self.flush()
        try:
            self.publish()
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        with uninterrupted():
            if not self.f.closed:
                try:
                    self.f.close()
                except OSError:  # the buffer could not be written out: nothing to keep anyway
                    pass
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            _live.pop(str(self.tmp), None)

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
    under its temporary name first, then all published, the first given last; on a failure
    none is left published that was not there before, and all temporaries are removed."""
    done: list[AtomicFile] = []
    try:
        for f in files:
            f.flush()
        with uninterrupted():
            for f in files:  # what would fail, fails before anything is renamed
                if f.expected is None and _identity(f.path) is not None:
                    raise OutputError(APPEARED, file=str(f.path))
            for f in reversed(files):
                f.publish()
                done.append(f)
    except BaseException as e:
        if isinstance(e, OutputError):  # the set is named by its first file (the segment)
            e.file = str(files[0].path)
        with uninterrupted():
            for f in done:
                if f.expected is None:  # published onto nothing: ours to take back
                    _remove(f.path)
            for f in files:
                f.abort()
        raise


def write_atomic_many(files: Mapping[Path, bytes]) -> None:
    """Several files that belong together (an .index and its .timeindex): all written under
    temporary names first, published only when every one is complete."""
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
    """A folder built under a temporary name and published when complete.

    With --force an existing folder is replaced only at the very end, and only if it is
    still the one that was there at the start.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.tmp = tmp_name(self.path)
        with uninterrupted():
            try:
                if self.tmp.exists():
                    shutil.rmtree(self.tmp)
                self.expected = _expected(self.path)
                self.tmp.mkdir(parents=True)
                _live[str(self.tmp)] = None
                remove_stale_tmp(self.path)
            except OSError as e:
                raise write_failed(e, self.path) from None

    def commit(self) -> None:
        try:
            publish(self.tmp, self.path, self.expected)
            _live.pop(str(self.tmp), None)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        with uninterrupted():
            shutil.rmtree(self.tmp, ignore_errors=True)
            _live.pop(str(self.tmp), None)

    def __enter__(self) -> "AtomicDir":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()
