"""Where bytes live: local paths, ``file://`` URLs and object storage (``s3://bucket/key``).

The rest of kseg handles paths as ``pathlib.Path`` objects. ``as_path`` turns what a
user typed into one: a ``Path`` for local files (and ``file://`` URLs), a
``RemotePath`` for objects. ``RemotePath`` offers the part of ``Path``'s interface that
kseg uses (names, parents, listing, ``stat().st_size``, ``open``), so code that walks
folders and reads files needs no second branch.

Reading an object is ranged: ``open("rb")`` returns a seekable file whose every
``read(n)`` is one ranged GET of ``n`` bytes, so memory is bounded by the reader's
chunk size (8 MiB for segments), never by the object. Writing is all-or-nothing: the
bytes go to a temporary key beside the target and are copied to the target name only
when the writer is closed without error (an object store has no rename, but a copy
lands whole or not at all); a failed write deletes the temporary key.

Object storage goes through pyarrow's filesystems (``pyarrow.fs.S3FileSystem``), imported
only when a URL is used. Endpoint and credentials come from the standard variables:
``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``/``AWS_DEFAULT_REGION``
(else the AWS SDK's own chain: profiles, instance roles).
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator
from urllib.parse import unquote, urlsplit

from kseg.errors import InputError

URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")
REMOTE_SCHEMES = ("s3",)
ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")


def is_remote(raw: Any) -> bool:
    """True for object-storage locations (a ``RemotePath`` or an ``s3://`` string)."""
    if isinstance(raw, RemotePath):
        return True
    m = URL.match(raw) if isinstance(raw, str) else None
    return bool(m and m.group("scheme").lower() in REMOTE_SCHEMES)


def as_path(raw: str | os.PathLike) -> Path | RemotePath:
    """A ``Path`` for a local path or ``file://`` URL, a ``RemotePath`` for ``s3://bucket/key``."""
    if isinstance(raw, RemotePath):
        return raw
    if isinstance(raw, Path):
        # Path("s3://b/k") keeps the scheme as its first part ("s3:"): code that wrapped a
        # URL in Path() on the way still reaches the object.
        if not (raw.parts and raw.parts[0].rstrip(":").lower() in REMOTE_SCHEMES and raw.parts[0].endswith(":")):
            return raw
        return RemotePath(raw.parts[0][:-1].lower(), "/".join(raw.parts[1:]))
    text = os.fspath(raw)
    m = URL.match(text)
    if m is None:
        return Path(text)
    scheme = m.group("scheme").lower()
    if scheme == "file":
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise InputError("file:// URLs name a local path (file:///path)", file=text)
        return Path(unquote(parts.path))
    if scheme in REMOTE_SCHEMES:
        key = m.group("rest").strip("/")
        if not key:
            raise InputError("an s3:// URL needs a bucket (s3://bucket/prefix)", file=text)
        return RemotePath(scheme, re.sub("/+", "/", key))
    raise InputError(f"unsupported URL scheme {scheme}:// (local paths, file:// and s3:// are)", file=text)


def open_input(path: str | os.PathLike) -> BinaryIO:
    """Open a local file or an object for (ranged) reading."""
    return as_path(path).open("rb")  # type: ignore[return-value]


def size_of(path: str | os.PathLike) -> int:
    return as_path(path).stat().st_size


# --------------------------------------------------------------------------- filesystems

_lock = threading.Lock()
_filesystems: dict[tuple, Any] = {}


def s3_settings() -> dict[str, Any]:
    """pyarrow ``S3FileSystem`` arguments from the standard AWS environment variables."""
    kwargs: dict[str, Any] = {}
    endpoint = next((os.environ[v] for v in ENDPOINT_ENV if os.environ.get(v)), None)
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else "https://" + endpoint)
        kwargs["endpoint_override"] = parts.netloc + parts.path.rstrip("/")
        kwargs["scheme"] = parts.scheme
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        kwargs["access_key"] = key
        kwargs["secret_key"] = secret
        if os.environ.get("AWS_SESSION_TOKEN"):
            kwargs["session_token"] = os.environ["AWS_SESSION_TOKEN"]
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region or endpoint:
        # A custom endpoint has no region to discover; "us-east-1" is what S3-compatible servers expect.
        kwargs["region"] = region or "us-east-1"
    return kwargs


def filesystem(scheme: str) -> Any:
    """The pyarrow filesystem for a URL scheme, made once per process and settings."""
    settings = s3_settings()
    cache_key = (scheme, tuple(sorted(settings.items())))
    with _lock:
        fs = _filesystems.get(cache_key)
        if fs is None:
            try:
                from pyarrow import fs as pafs
            except ImportError:
                raise InputError("s3:// paths need pyarrow: pip install 'kseg[s3]'", file=f"{scheme}://") from None
            fs = _filesystems[cache_key] = pafs.S3FileSystem(**settings)
        return fs


# --------------------------------------------------------------------------- remote paths


@dataclass(frozen=True)
class RemoteStat:
    st_size: int
    st_mtime: float


_NOT_FOUND, _FILE, _DIR = 0, 1, 2


class RemotePath:
    """An object or a prefix ("folder") in object storage, with ``Path``'s reading interface.

    ``key`` is ``bucket/prefix/name`` without slashes at either end. Listings remember
    each child's type and size, so walking a log directory costs one LIST per folder.
    """

    __slots__ = ("scheme", "key", "_kind", "_size", "_mtime")

    def __init__(self, scheme: str, key: str, _kind: int | None = None, _size: int = 0, _mtime: float = 0.0):
        self.scheme = scheme
        self.key = key
        self._kind = _kind
        self._size = _size
        self._mtime = _mtime

    # -- pure path part
    def __str__(self) -> str:
        return f"{self.scheme}://{self.key}"

    def __fspath__(self) -> str:
        # Lets name-only code (Path(p).name, os.path.basename) work; opening goes through
        # open()/open_input(), never the local file system.
        return str(self)

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemotePath) and (self.scheme, self.key) == (other.scheme, other.key)

    def __hash__(self) -> int:
        return hash((self.scheme, self.key))

    def __lt__(self, other: RemotePath) -> bool:
        return (self.scheme, self.key) < (other.scheme, other.key)

    def __truediv__(self, name: str) -> RemotePath:
        return RemotePath(self.scheme, f"{self.key}/{str(name).strip('/')}")

    @property
    def bucket(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        return Path(self.name).suffix

    @property
    def suffixes(self) -> list[str]:
        return Path(self.name).suffixes

    @property
    def stem(self) -> str:
        return Path(self.name).stem

    @property
    def parent(self) -> RemotePath:
        head = self.key.rsplit("/", 1)[0] if "/" in self.key else self.key
        return RemotePath(self.scheme, head)

    @property
    def parts(self) -> tuple[str, ...]:
        return (f"{self.scheme}://",) + tuple(self.key.split("/"))

    def with_name(self, name: str) -> RemotePath:
        return self.parent / name

    def with_suffix(self, suffix: str) -> RemotePath:
        return self.with_name(self.stem + suffix)

    def as_posix(self) -> str:
        return str(self)

    def is_absolute(self) -> bool:
        return True

    def resolve(self, strict: bool = False) -> RemotePath:
        return self

    absolute = resolve

    # -- what is there
    def _info(self) -> int:
        if self._kind is None:
            info = self._fs().get_file_info(self.key)
            kind = {2: _FILE, 3: _DIR}.get(int(info.type), _NOT_FOUND)
            if kind == _FILE:
                self._size = info.size or 0
                self._mtime = info.mtime.timestamp() if info.mtime else 0.0
            return kind  # not kept: it may change (an output being written)
        return self._kind

    def _fs(self) -> Any:
        return filesystem(self.scheme)

    def exists(self) -> bool:
        return self._info() != _NOT_FOUND

    def is_file(self) -> bool:
        return self._info() == _FILE

    def is_dir(self) -> bool:
        return self._info() == _DIR

    def stat(self) -> RemoteStat:
        kind = self._info()
        if kind == _NOT_FOUND:
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return RemoteStat(self._size, self._mtime)

    def iterdir(self) -> Iterator[RemotePath]:
        from pyarrow import fs as pafs

        try:
            infos = self._fs().get_file_info(pafs.FileSelector(self.key, recursive=False))
        except FileNotFoundError:
            raise FileNotFoundError(2, "No such file or directory", str(self)) from None
        for info in infos:
            kind = {2: _FILE, 3: _DIR}.get(int(info.type), _NOT_FOUND)
            mtime = info.mtime.timestamp() if kind == _FILE and info.mtime else 0.0
            yield RemotePath(self.scheme, info.path.strip("/"), kind, info.size or 0, mtime)

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        """Names in this folder matching ``pattern`` (one level, as kseg uses it)."""
        if "/" in pattern or "**" in pattern:
            raise ValueError("RemotePath.glob takes one-level patterns only")
        return (p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern))

    # -- bytes
    def open(self, mode: str = "rb", buffering: int = -1, encoding: str | None = None,
             errors: str | None = None, newline: str | None = None) -> Any:
        if mode == "rb":
            return RangedReader(self._fs().open_input_file(self.key), str(self))
        if mode == "wb":
            return AtomicObjectWriter(self)
        if mode in ("r", "rt"):
            import io

            # Text files next to segments are a few lines (checkpoints, partition.metadata).
            return io.TextIOWrapper(io.BytesIO(self.read_bytes()), encoding=encoding or "utf-8",
                                    errors=errors, newline=newline)
        raise ValueError(f"unsupported mode for an object: {mode!r}")

    def read_bytes(self) -> bytes:
        with self.open("rb") as f:
            return f.read()

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    def write_bytes(self, data: bytes) -> int:
        with self.open("wb") as f:
            f.write(data)
        return len(data)

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self._fs().delete_file(self.key)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Prefixes need no creating; an object store has folders only as names."""


class RangedReader:
    """A seekable reader of an object: each ``read(n)`` is one ranged GET of at most ``n`` bytes.

    A transfer failing half way (the connection, the server) is the input's problem: it
    raises ``InputError`` naming the object, as kseg's other errors do.
    """

    def __init__(self, f: Any, name: str):
        self._f = f
        self.name = name

    def read(self, n: int = -1) -> bytes:
        try:
            return self._f.read() if n is None or n < 0 else self._f.read(n)
        except OSError as e:
            raise InputError(f"cannot read: {e}", file=self.name) from None

    def seek(self, position: int, whence: int = 0) -> int:
        return self._f.seek(position, whence)

    def tell(self) -> int:
        return self._f.tell()

    def size(self) -> int:
        return self._f.size()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        return self._f.closed

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> RangedReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AtomicObjectWriter:
    """Writes an object so that it appears whole or not at all.

    The bytes are streamed (multipart upload) to ``<target>.kseg-tmp-<id>``; ``close()``
    copies that to the target in one server-side step and deletes it. ``abort()`` (and
    closing after an exception inside ``with``) deletes the temporary object and leaves
    the target as it was.
    """

    def __init__(self, target: RemotePath):
        self.target = target
        self.tmp = target.with_name(f".{target.name}.kseg-tmp-{uuid.uuid4().hex[:12]}")
        self._out = target._fs().open_output_stream(self.tmp.key)
        self.closed = False

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return self._out.write(data)

    def flush(self) -> None:
        pass

    def tell(self) -> int:
        return self._out.tell()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        fs = self.target._fs()
        self._out.close()
        try:
            fs.copy_file(self.tmp.key, self.target.key)
        finally:
            fs.delete_file(self.tmp.key)

    def abort(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._out.close()
        finally:
            self.target._fs().delete_file(self.tmp.key)

    def __enter__(self) -> AtomicObjectWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
