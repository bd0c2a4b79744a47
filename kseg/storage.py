"""Where bytes live: local paths, ``file://`` URLs and object storage (``s3://bucket/key``,
``gs://bucket/key``, ``abfs://container/key``).

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

Object storage goes through pyarrow's filesystems (``S3FileSystem``, ``GcsFileSystem``,
``AzureFileSystem``), imported only when a URL is used. ``SCHEMES`` says which URL scheme
names which store; endpoint and credentials come from each service's standard variables
(``s3_settings``, ``gcs_settings``, ``azure_settings``), else its SDK's own credential chain.

Archives (``.tar``, ``.tar.gz``/``.tgz``, ``.zip``) are read in place: ``as_path`` turns
``logs.tgz`` (or a path inside it, ``logs.tgz/kafka-logs/orders-0``) into an
``ArchivePath``, with the same reading interface. Nothing is unpacked to disk; see
``ArchivePath`` for what each kind costs.

Read failures are classified here, once, for every backend: ``gone(path)`` is true only for
a local file that is no longer there (deleted by retention during a run: a note, the run goes
on); anything else that cannot be read (a zip member's bad CRC-32 or deflate data, a tar cut
short, an object store failing mid-read, permissions, EIO) is a ``ReadError``, worded by
``cannot_read`` as ``PATH: cannot read: <reason>``, exit 2 in every command.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import stat
import threading
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator
from urllib.parse import unquote, urlsplit

from kseg.errors import InputError, KsegError, OutputError
from kseg.interrupts import uninterrupted
from kseg.prefetch import MAX_ITEM, WINDOW, ReadAhead
from kseg.printable import printable

if TYPE_CHECKING:
    import tarfile
    import zipfile

URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")
# URL scheme -> the store it names. abfs:// and az:// (adlfs's spelling) both name an Azure
# container: abfs://container/key, the account coming from the settings.
SCHEMES = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "azure", "abfss": "azure", "az": "azure"}
REMOTE_SCHEMES = tuple(SCHEMES)
NOT_SUPPORTED = {
    s: "pyarrow's HadoopFileSystem needs a local Hadoop installation (libhdfs, a JVM and Hadoop's "
       "CLASSPATH), which kseg does not take on: copy the files out first (hdfs dfs -get)"
    for s in ("hdfs", "viewfs", "webhdfs")}
ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
# A GCS request failing for a passing reason is retried this long (pyarrow's default is 15
# minutes, which is also how long a machine without credentials would wait to be told).
GCS_RETRY_SECONDS = 30
# Where each store's credentials go instead of the URL (never echoed back).
CREDENTIALS = {
    "s3": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or use a profile "
          "(AWS_PROFILE) or the SDK's other sources; write s3://bucket/prefix",
    "gcs": "set GOOGLE_APPLICATION_CREDENTIALS or log in with gcloud auth application-default login; "
           "write gs://bucket/prefix",
    "azure": "set AZURE_STORAGE_ACCOUNT_NAME with AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN, or "
             "AZURE_STORAGE_CONNECTION_STRING; write abfs://container/prefix",
}
# The Azure Storage emulator's published development account (UseDevelopmentStorage=true).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def is_remote(raw: Any) -> bool:
    """True for object-storage locations (a ``RemotePath`` or an ``s3://``, ``gs://``... string)."""
    if isinstance(raw, RemotePath):
        return True
    m = URL.match(raw) if isinstance(raw, str) else None
    return bool(m and m.group("scheme").lower() in REMOTE_SCHEMES)


def as_path(raw: str | os.PathLike) -> Path | RemotePath | ArchivePath:
    """A ``Path`` for a local path or ``file://`` URL, a ``RemotePath`` for ``s3://bucket/key`` & co.,
    an ``ArchivePath`` for an archive or a path inside one."""
    if isinstance(raw, (RemotePath, ArchivePath)):
        return raw
    local = _as_path(raw)
    if isinstance(local, Path):
        return archive_path(local) or local
    return local


def _as_path(raw: str | os.PathLike) -> Path | RemotePath:
    if isinstance(raw, Path):
        # Path("s3://b/k") keeps the scheme as its first part ("s3:"): code that wrapped a
        # URL in Path() on the way still reaches the object.
        if not (raw.parts and raw.parts[0].rstrip(":").lower() in REMOTE_SCHEMES and raw.parts[0].endswith(":")):
            return raw
        raw = raw.parts[0] + "//" + "/".join(raw.parts[1:])  # checked as the URL it was
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
        bucket = "container" if SCHEMES[scheme] == "azure" else "bucket"
        if not key:
            raise InputError(f"a {scheme}:// URL needs a {bucket} ({scheme}://{bucket}/prefix)", file=text)
        host = key.split("/", 1)[0]
        if "@" in host and (":" in host.split("@", 1)[0] or SCHEMES[scheme] != "azure"):
            raise InputError(f"credentials are not taken in the URL: {CREDENTIALS[SCHEMES[scheme]]}",
                             file=f"{scheme}://***@{key.split('@', 1)[1]}")
        if "@" in host:
            raise InputError(f"write {scheme}://container/prefix, with the account in AZURE_STORAGE_ACCOUNT_NAME "
                             "(the container@account.dfs.core.windows.net form is not taken)", file=text)
        return RemotePath(scheme, re.sub("/+", "/", key))
    if scheme in NOT_SUPPORTED:
        raise InputError(f"{scheme}:// is not supported: {NOT_SUPPORTED[scheme]}", file=text)
    raise InputError(f"unsupported URL scheme {scheme}:// (local paths, file://, s3://, gs://, abfs:// and az:// "
                     "are)", file=text)


def open_input(path: str | os.PathLike) -> BinaryIO:
    """Open a local file or an object for (ranged) reading."""
    return as_path(path).open("rb")  # type: ignore[return-value]


def size_of(path: str | os.PathLike) -> int:
    return as_path(path).stat().st_size


# Streams are read this many bytes at a time when a bound is asked of them (``read_up_to``).
STREAM_PIECE = 1 << 20


def open_size(f: BinaryIO) -> int | None:
    """The length of an opened input, without reading it (None when unknown: a stream)."""
    size = getattr(f, "size", None)
    if callable(size):
        return size()
    try:
        st = os.fstat(f.fileno())
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def read_full(f: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes, fewer only at the end (a reader may return less than asked)."""
    data = f.read(n)
    if len(data) >= n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = f.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def read_up_to(f: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes (fewer only at the end), never asking the reader for more than a regular
    file holds or, from a stream, more than ``STREAM_PIECE`` at a time: a read call allocates what it
    is asked for, so a bound asked whole (2 GiB for a producer snapshot) would be an allocation of
    the bound whatever the file's size, refused under an address-space limit."""
    size = open_size(f)
    step = min(n, STREAM_PIECE) if size is None else min(n, size + 1)  # one more: the file grew
    parts: list[bytes] = []
    got = 0
    while got < n:
        piece = read_full(f, min(step, n - got))
        parts.append(piece)
        got += len(piece)
        if len(piece) < step:  # read_full returns fewer only at the end
            break
        step = STREAM_PIECE
    return parts[0] if len(parts) == 1 else b"".join(parts)


def copy_times(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Give the local file ``dst`` the modification time of ``src`` (a file, a member, an object)."""
    p = as_path(src)
    if isinstance(p, Path):
        st = os.stat(p)
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        mtime = p.stat().st_mtime
        os.utime(dst, (mtime, mtime))


def copy_file(src: str | os.PathLike, dst: str | os.PathLike) -> None:
    """Copy a file, an archive member or an object to the local file ``dst``, with its time
    (``shutil.copy2`` for what is anywhere kseg reads)."""
    p = as_path(src)
    if isinstance(p, Path):
        import shutil

        shutil.copy2(p, dst)
        return
    with p.open("rb") as f, open(dst, "wb") as out:
        while True:
            chunk = f.read(8 << 20)
            if not chunk:
                break
            out.write(chunk)
    copy_times(p, dst)


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


def gcs_settings() -> dict[str, Any]:
    """pyarrow ``GcsFileSystem`` arguments from the standard Google Cloud variables.

    ``STORAGE_EMULATOR_HOST`` (an emulator such as fake-gcs-server) is reached anonymously;
    otherwise Google's default credentials apply (``GOOGLE_APPLICATION_CREDENTIALS``, gcloud's
    application-default login, the metadata server). ``GOOGLE_CLOUD_PROJECT`` names the project.
    """
    import datetime

    kwargs: dict[str, Any] = {"retry_time_limit": datetime.timedelta(seconds=GCS_RETRY_SECONDS)}
    emulator = os.environ.get("STORAGE_EMULATOR_HOST")
    if emulator:
        parts = urlsplit(emulator if "://" in emulator else "http://" + emulator)
        kwargs.update(anonymous=True, scheme=parts.scheme, endpoint_override=parts.netloc)
    if os.environ.get("GOOGLE_CLOUD_PROJECT"):
        kwargs["project_id"] = os.environ["GOOGLE_CLOUD_PROJECT"]
    return kwargs


def azure_settings() -> dict[str, Any]:
    """pyarrow ``AzureFileSystem`` arguments from the standard Azure Storage variables.

    ``AZURE_STORAGE_CONNECTION_STRING`` (``AccountName``, ``AccountKey``,
    ``SharedAccessSignature``, ``BlobEndpoint``, ``DefaultEndpointsProtocol``,
    ``EndpointSuffix``; ``UseDevelopmentStorage=true`` for the emulator on its default port),
    else ``AZURE_STORAGE_ACCOUNT_NAME`` (or ``AZURE_STORAGE_ACCOUNT``) with
    ``AZURE_STORAGE_ACCOUNT_KEY`` (or ``AZURE_STORAGE_KEY``) or ``AZURE_STORAGE_SAS_TOKEN``;
    without a key or token, Azure's default credential chain (``AZURE_CLIENT_ID``/
    ``AZURE_TENANT_ID``/``AZURE_CLIENT_SECRET``, managed identity, the Azure CLI's login).
    """
    conn: dict[str, str] = {}
    for item in os.environ.get("AZURE_STORAGE_CONNECTION_STRING", "").split(";"):
        name, _, value = item.partition("=")
        if name.strip():
            conn[name.strip().lower()] = value.strip()
    if conn.get("usedevelopmentstorage", "").lower() == "true":
        conn = {"accountname": AZURITE_ACCOUNT, "accountkey": AZURITE_KEY,
                "blobendpoint": f"http://127.0.0.1:10000/{AZURITE_ACCOUNT}", **conn}
    env = os.environ.get
    account = conn.get("accountname") or env("AZURE_STORAGE_ACCOUNT_NAME") or env("AZURE_STORAGE_ACCOUNT")
    if not account:
        return {}
    kwargs: dict[str, Any] = {"account_name": account}
    key = conn.get("accountkey") or env("AZURE_STORAGE_ACCOUNT_KEY") or env("AZURE_STORAGE_KEY")
    sas = conn.get("sharedaccesssignature") or env("AZURE_STORAGE_SAS_TOKEN")
    if key:
        kwargs["account_key"] = key
    elif sas:
        kwargs["sas_token"] = "?" + sas.lstrip("?")  # pyarrow reads it as a query string
    scheme = conn.get("defaultendpointsprotocol")
    endpoint = conn.get("blobendpoint")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else f"{scheme or 'https'}://{endpoint}")
        scheme = parts.scheme
        host = parts.netloc
        # pyarrow puts the account before an authority that starts with a dot
        # (account.blob.core.windows.net) and after one that does not, in the path (an emulator).
        authority = host[len(account):] if host.lower().startswith(account.lower() + ".") else host
        kwargs.update(blob_storage_authority=authority, dfs_storage_authority=authority.replace(".blob.", ".dfs."))
    elif conn.get("endpointsuffix"):
        kwargs.update(blob_storage_authority=".blob." + conn["endpointsuffix"],
                      dfs_storage_authority=".dfs." + conn["endpointsuffix"])
    if scheme:
        kwargs.update(blob_storage_scheme=scheme, dfs_storage_scheme=scheme)
    return kwargs


# store -> (its settings, pyarrow's class for it, what to install or set when it is missing)
STORES: dict[str, tuple[Any, str, str]] = {
    "s3": (s3_settings, "S3FileSystem", ""),
    "gcs": (gcs_settings, "GcsFileSystem", ""),
    "azure": (azure_settings, "AzureFileSystem",
              "set AZURE_STORAGE_ACCOUNT_NAME (with AZURE_STORAGE_ACCOUNT_KEY or a login) "
              "or AZURE_STORAGE_CONNECTION_STRING"),
}


def filesystem(scheme: str) -> Any:
    """The pyarrow filesystem for a URL scheme, made once per process and settings."""
    store = SCHEMES.get(scheme, "s3")
    settings_of, class_name, needs = STORES[store]
    settings = settings_of()
    if needs and not settings:
        raise InputError(f"paths need a storage account: {needs}", file=f"{scheme}://")
    cache_key = (store, tuple(sorted(settings.items())))
    with _lock:
        fs = _filesystems.get(cache_key)
        if fs is None:
            try:
                from pyarrow import fs as pafs
            except ImportError:
                raise InputError(f"{scheme}:// paths need pyarrow: pip install 'kseg[s3]'", file=f"{scheme}://") from None
            make = getattr(pafs, class_name, None)
            if make is None:
                raise InputError(f"{scheme}:// paths need a pyarrow built with {class_name} (this one has none)",
                                 file=f"{scheme}://")
            try:
                fs = _filesystems[cache_key] = make(**settings)
            except Exception as e:  # pyarrow's own errors (bad key, bad endpoint): the settings' fault
                raise InputError(f"cannot set up {class_name}: {_first_line(e)}", file=f"{scheme}://") from None
        return fs


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


# --------------------------------------------------------------------------- read failures


class ReadError(InputError):
    """A file, archive member or object that is there (or was) but cannot be read: damaged
    archive data, a store or network failing, permissions, an I/O error. Exit 2 in every command."""


def read_failures() -> tuple[type[BaseException], ...]:
    """What reading a file, a member or an object raises when the bytes cannot be had
    (``zipfile``/``tarfile`` late: only archives need them)."""
    import tarfile
    import zipfile

    return (OSError, EOFError, zlib.error, zipfile.BadZipFile, tarfile.TarError)


def cannot_read(path: Any, e: BaseException | str) -> ReadError:
    """The one wording for an unreadable input: ``PATH: cannot read: <reason>``."""
    if isinstance(e, ReadError):
        return e
    if isinstance(e, str):
        reason = e
    elif isinstance(e, OSError) and e.strerror:
        reason = e.strerror
    elif isinstance(e, InputError):
        reason = e.message[len("cannot read: "):] if e.message.startswith("cannot read: ") else e.message
    else:
        reason = _first_line(e)
        if isinstance(e, zlib.error):
            reason = f"damaged compressed data ({reason})"
    return ReadError(f"cannot read: {printable(reason)}", file=str(path))


VANISHED = "the file went away during the run (deleted by retention or renamed by the broker)"


def gone(path: Any) -> bool:
    """Whether ``path`` "went away during the run" (deleted by retention, renamed by the broker):
    only a local file that is no longer there. An archive member or an object that fails to
    read did not go away: that is a ``ReadError``."""
    if isinstance(path, str):
        if path == "-" or URL.match(path):
            return False
        path = Path(path)
    if not isinstance(path, Path) or str(path) == "-":
        return False
    if archive_path(path) is not None:
        return False
    return not os.path.lexists(path)


def remote_failure(e: Exception, where: str) -> Exception:
    """A store's failure (no credentials, unreachable, refused) as one line naming the path;
    "not found" stays ``FileNotFoundError``."""
    if isinstance(e, FileNotFoundError):
        return e
    return ReadError(f"cannot reach the object store: {printable(_first_line(e))}", file=where)


# --------------------------------------------------------------------------- remote paths


@dataclass(frozen=True)
class RemoteStat:
    """What ``stat`` gives of an object in a store: the two fields kseg reads of a local file's."""

    st_size: int
    st_mtime: float


_NOT_FOUND, _FILE, _DIR = 0, 1, 2


class _NameParts:
    """``suffix``, ``suffixes`` and ``stem`` from ``name``, as ``Path`` gives them."""

    name: str

    @property
    def suffix(self) -> str:
        return Path(self.name).suffix

    @property
    def suffixes(self) -> list[str]:
        return Path(self.name).suffixes

    @property
    def stem(self) -> str:
        return Path(self.name).stem


class RemotePath(_NameParts):
    """An object or a prefix ("folder") in object storage, with ``Path``'s reading interface.

    ``key`` is ``bucket/prefix/name`` without slashes at either end. A folder's listing is
    kept (``_Listing``, the last ``LISTINGS`` folders of the process): what it says of a
    path in that folder (a file and its size and time, a folder, nothing there) costs no
    request, however the path was made, so walking a log directory and looking for each
    segment's companions costs one LIST per folder. ``fresh()`` paths always ask the store
    (a writer's "was the target there?"). Small listed objects are read whole when opened,
    the next few fetched ahead (``_Listing.ahead``).
    """

    __slots__ = ("scheme", "key", "_kind", "_size", "_mtime", "_listing", "_children", "_fresh")

    def __init__(self, scheme: str, key: str, _kind: int | None = None, _size: int = 0, _mtime: float = 0.0,
                 _listing: _Listing | None = None):
        self.scheme = scheme
        self.key = key
        self._kind = _kind
        self._size = _size
        self._mtime = _mtime
        self._listing = _listing  # the listing of the folder this path is in, when known
        self._children: _Listing | None = None  # this folder's own listing, once listed
        self._fresh = False  # True: ask the store, whatever a listing said

    def __reduce__(self) -> Any:
        # Listings stay in the process that made them (a path sent to a Spark executor travels light).
        return (RemotePath, (self.scheme, self.key, self._kind, self._size, self._mtime))

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
        name = str(name).strip("/")
        if self._children is not None and "/" not in name:
            return self._children.path(name)
        return RemotePath(self.scheme, f"{self.key}/{name}")

    @property
    def bucket(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> RemotePath:
        if self._listing is not None:
            return self._listing.folder()
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
    def fresh(self) -> RemotePath:
        """This path, asking the store each time (what a listing said is no ground for a writer)."""
        p = RemotePath(self.scheme, self.key)
        p._fresh = True
        return p

    def _listed(self) -> _Listing | None:
        """The listing of this path's folder, when this process has one (and the path is not fresh)."""
        if self._listing is None and not self._fresh and "/" in self.key:
            listing = _listings.get((self.scheme, self.key.rsplit("/", 1)[0]))
            if listing is not None:
                kind, self._size, self._mtime, _ = listing.entries.get(self.name, (_NOT_FOUND, 0, 0.0, ""))
                self._kind = kind
                self._listing = listing
        return self._listing

    def _info(self) -> int:
        if self._kind is None and self._listed() is None:
            fs = self._fs()
            try:
                info = fs.get_file_info(self.key)
            except Exception as e:  # pyarrow raises OSError and its own ArrowException
                raise remote_failure(e, str(self)) from None
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

        fs = self._fs()
        # pyarrow's GCS listing shows only folders that have a marker object ("a/b/"), not
        # the prefixes other tools leave: there the folder's whole subtree is listed and
        # its children are read off the names.
        implied = SCHEMES[self.scheme] == "gcs"
        try:
            infos = fs.get_file_info(pafs.FileSelector(self.key, recursive=implied))
        except Exception as e:
            if isinstance(e, FileNotFoundError) or not self.exists():
                raise FileNotFoundError(2, "No such file or directory", str(self)) from None
            raise remote_failure(e, str(self)) from None
        if implied:
            infos = _children(self.key, infos)
        listing = self._children = _Listing(self.scheme, self.key, infos)
        with _lock:
            _listings.pop((self.scheme, self.key), None)
            _listings[(self.scheme, self.key)] = listing
            while len(_listings) > LISTINGS:
                _listings.pop(next(iter(_listings)))
        for name in listing.names:
            yield listing.path(name)

    def glob(self, pattern: str) -> Iterator[RemotePath]:
        """Names in this folder matching ``pattern`` (one level, as kseg uses it)."""
        if "/" in pattern or "**" in pattern:
            raise ValueError("RemotePath.glob takes one-level patterns only")
        return (p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern))

    # -- bytes
    def open(self, mode: str = "rb", buffering: int = -1, encoding: str | None = None,
             errors: str | None = None, newline: str | None = None) -> Any:
        if mode == "rb":
            listing = self._listed()
            if listing is not None and self._kind == _FILE and self._size <= MAX_ITEM:
                data = listing.take(self)
                listing.ahead(self)
                if data is not None:
                    return WholeReader(data, str(self))
            fs = self._fs()
            try:
                f = fs.open_input_file(self.key)
                if listing is None or f.size() > MAX_ITEM:
                    return RangedReader(f, str(self))
                with f:
                    return WholeReader(f.read(), str(self))  # one GET (pyarrow's open is a HEAD)
            except FileNotFoundError:
                raise FileNotFoundError(2, "No such file or directory", str(self)) from None
            except Exception as e:  # pyarrow raises OSError and its own ArrowException
                raise cannot_read(self, e) from None
        if mode == "wb":
            # What a listing said is no ground for a writer's checks (was the target there?).
            return AtomicObjectWriter(self.fresh())
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


def _children(key: str, infos: list) -> list:
    """The direct children of folder ``key`` in a recursive listing: its files as listed,
    and one folder entry for each first name below it."""
    from pyarrow import fs as pafs

    top = key.strip("/") + "/"
    files, folders = [], {}
    for info in infos:
        rest = info.path.strip("/")[len(top):]
        if "/" in rest or info.type == pafs.FileType.Directory:
            name = rest.split("/", 1)[0]
            folders.setdefault(name, pafs.FileInfo(top + name, pafs.FileType.Directory))
        elif rest:
            files.append(info)
    return sorted(files + list(folders.values()), key=lambda i: i.path)


_read_ahead = ReadAhead()
# (scheme, folder key) -> what its last LIST said, the most recent LISTINGS folders.
_listings: dict[tuple[str, str], _Listing] = {}
LISTINGS = 1024
_reading: list[_Listing | None] = [None]  # the listing whose objects were opened last


def _kind_of(info: Any) -> int:
    return {2: _FILE, 3: _DIR}.get(int(info.type), _NOT_FOUND)


def _name_kind(name: str) -> str:
    """What kind of file a name is for reading ahead: all after the first dot (``log``, ``index``)."""
    return name.split(".", 1)[1] if "." in name else ""


def _fetch_whole(scheme: str, key: str) -> bytes | None:
    """An object's bytes in one GET (after pyarrow's HEAD), or None when it is larger than
    reading ahead takes (it grew since it was listed)."""
    with filesystem(scheme).open_input_file(key) as f:
        if f.size() > MAX_ITEM:
            return None
        return f.read()


class _Listing:
    """What one LIST of a folder said: each child's kind, size and time, in listing order.

    It also moves the read-ahead along: when a small object of the folder is opened, the
    next few small objects after it whose kind (``.log``, ``.index``...) has been opened in
    this folder are fetched in the background (``kseg.prefetch``), those behind it that
    were never opened are forgotten, and so are those of the folder read before.
    """

    def __init__(self, scheme: str, key: str, infos: list):
        self.scheme = scheme
        self.key = key
        self.entries: dict[str, tuple[int, int, float, str]] = {}
        for info in infos:
            kind = _kind_of(info)
            path = info.path.strip("/")
            mtime = info.mtime.timestamp() if kind == _FILE and info.mtime else 0.0
            self.entries[path.rsplit("/", 1)[-1]] = (kind, info.size or 0, mtime, path)
        self.names = list(self.entries)
        self.index = {n: i for i, n in enumerate(self.names)}
        self._lock = threading.Lock()
        self._opened: set[str] = set()
        self._ahead: set[str] = set()  # names fetched ahead and not yet taken

    def folder(self) -> RemotePath:
        f = RemotePath(self.scheme, self.key, _DIR)
        f._children = self
        return f

    def path(self, name: str) -> RemotePath:
        """The child ``name`` as the listing saw it (not there: a path that does not exist)."""
        kind, size, mtime, key = self.entries.get(name, (_NOT_FOUND, 0, 0.0, f"{self.key}/{name}"))
        return RemotePath(self.scheme, key, kind, size, mtime, self)

    def take(self, path: RemotePath) -> bytes | None:
        with self._lock:
            if path.name not in self._ahead:
                return None
            self._ahead.discard(path.name)
        return _read_ahead.take((self.scheme, path.key))

    def ahead(self, path: RemotePath) -> None:
        """``path`` is being read: fetch the next few ahead of it."""
        i = self.index.get(path.name)
        if i is None:
            return
        with _lock:
            before, _reading[0] = _reading[0], self
        if before is not None and before is not self:
            before.forget()
        with self._lock:
            self._opened.add(_name_kind(path.name))
            behind = [n for n in self._ahead if self.index[n] <= i]
            self._ahead.difference_update(behind)
            _read_ahead.drop([(self.scheme, self.entries[n][3]) for n in behind])
            started = 0
            for name in self.names[i + 1: i + 1 + 4 * WINDOW]:
                kind, size, _, key = self.entries[name]
                if kind != _FILE or size > MAX_ITEM or _name_kind(name) not in self._opened:
                    continue
                if name not in self._ahead:
                    if not _read_ahead.want((self.scheme, key), size, lambda k=key: _fetch_whole(self.scheme, k)):
                        break  # the budget is spent: more once these are taken
                    self._ahead.add(name)
                started += 1
                if started >= WINDOW:
                    break

    def forget(self) -> None:
        """Drop what was fetched ahead and not taken (the command has moved on)."""
        with self._lock:
            names, self._ahead = self._ahead, set()
        _read_ahead.drop([(self.scheme, self.entries[n][3]) for n in names])


class RangedReader:
    """A seekable reader of an object: each ``read(n)`` is one ranged GET of at most ``n`` bytes.

    A transfer failing half way (the connection, the server) is the input's problem: it
    raises ``ReadError`` naming the object, as kseg's other errors do; never "went away".
    """

    def __init__(self, f: Any, name: str):
        self._f = f
        self.name = name

    def read(self, n: int = -1) -> bytes:
        try:
            return self._f.read() if n is None or n < 0 else self._f.read(n)
        except Exception as e:  # pyarrow raises OSError and its own ArrowException
            raise cannot_read(self.name, e) from None

    def seek(self, position: int, whence: int = 0) -> int:
        try:
            return self._f.seek(position, whence)
        except Exception as e:
            raise cannot_read(self.name, e) from None

    def tell(self) -> int:
        return self._f.tell()

    def size(self) -> int:
        try:
            return self._f.size()
        except Exception as e:
            raise cannot_read(self.name, e) from None

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


class WholeReader(RangedReader):
    """A small object read whole (one GET, or fetched ahead), with the ranged reader's interface."""

    def __init__(self, data: bytes, name: str):
        super().__init__(io.BytesIO(data), name)
        self._length = len(data)

    def size(self) -> int:
        return self._length


class AtomicObjectWriter:
    """Writes an object so that it appears whole or not at all.

    The bytes are streamed (multipart upload) to ``<target>.kseg-tmp-<id>``; ``close()``
    copies that to the target in one server-side step and deletes it. ``abort()`` (and
    closing after an exception inside ``with``) deletes the temporary object and leaves
    the target as it was. An object that appeared at the target while this one was being
    written is not replaced (``close()`` raises an OutputError); one that was there at the
    start is (an object store has no rename that refuses to overwrite: this checks, then copies).
    """

    def __init__(self, target: RemotePath):
        self.target = target
        self.tmp = target.with_name(f".{target.name}.kseg-tmp-{uuid.uuid4().hex[:12]}")
        self.existed = target.fresh().exists()
        with uninterrupted():
            self._out = target._fs().open_output_stream(self.tmp.key)
            _live_objects[str(self.tmp)] = self.abort
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
        fs = self.target._fs()
        with uninterrupted():
            self.closed = True
            try:
                self._out.close()
                if not self.existed and self.target.fresh().exists():
                    raise OutputError(APPEARED, file=str(self.target))
                fs.copy_file(self.tmp.key, self.target.key)
            finally:
                _delete_quietly(fs, self.tmp.key)
                _live_objects.pop(str(self.tmp), None)

    def abort(self) -> None:
        if self.closed:
            return
        with uninterrupted():
            self.closed = True
            try:
                self._out.close()
            except Exception:  # pyarrow's errors are not all OSErrors; the object goes anyway
                pass
            _delete_quietly(self.target._fs(), self.tmp.key)
            _live_objects.pop(str(self.tmp), None)

    def __enter__(self) -> AtomicObjectWriter:
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


APPEARED = "the output appeared during the run (created by another process?); nothing was replaced"
# Staging objects and prefixes this process made and has neither published nor deleted:
# str(temporary) -> what deletes it (``remove_live_objects``, on the command's way out).
_live_objects: dict[str, Any] = {}


def _delete_quietly(fs: Any, key: str, *, folder: bool = False) -> None:
    try:
        fs.delete_dir(key) if folder else fs.delete_file(key)
    except Exception:  # already gone, or the store is unreachable: nothing more to do here
        pass


def remove_live_objects() -> None:
    """Delete every staging object or prefix this process made and has not published or
    deleted (the command's last word on its way out, whatever way that is)."""
    with uninterrupted():
        for key, delete in reversed(list(_live_objects.items())):
            try:
                delete()
            except Exception:
                pass
            _live_objects.pop(key, None)


# --------------------------------------------------------------------------- writing a tree of objects


MANIFEST = ".kseg-manifest.json"
# The manifest's format: each object's key (relative to the output), size and, when the
# writer saw the bytes, SHA-256; the command line, kseg's version, the time.
MANIFEST_FORMAT = 1


class StagedOutput:
    """An ``s3://`` output (an object or a prefix) built under a temporary prefix beside it.

    Writers (the driver, or Spark executors each uploading their partitions) put their
    files under ``part()``; ``commit()`` copies every staged object to its place under the
    target in server-side steps, writes the manifest (``<target>/.kseg-manifest.json``)
    last, then deletes the staging prefix; ``abort()`` only deletes it. Until the commit
    nothing is under the target, so a failed or interrupted write leaves the target as it
    was; a commit that fails half-way removes what it copied and names, in its one error
    line, what could not be removed. An output without its manifest is not complete.
    ``str(self.tmp)`` travels to executors as a string. ``existed`` (what the caller found
    at the target at the start; None: not looked) makes ``commit`` refuse a target that
    appeared during the run.
    """

    def __init__(self, target: RemotePath, tmp: RemotePath | str | None = None, *, existed: bool | None = None):
        self.target = target
        self.existed = existed
        if tmp is None:
            tmp = target.parent / f".{target.name}.kseg-tmp-{uuid.uuid4().hex[:12]}"
        self.tmp = as_path(tmp) if isinstance(tmp, str) else tmp
        self.hashes: dict[str, str] = {}  # staged key -> SHA-256, for what this process uploaded
        _live_objects[str(self.tmp)] = self.abort

    def part(self, rel: str = "") -> RemotePath:
        """Where a writer stages the output (``rel``: a file or folder inside it)."""
        where = self.tmp / self.target.name
        return where / rel if rel else where  # type: ignore[return-value]

    def _staged(self) -> list[tuple[str, int]]:
        from pyarrow import fs as pafs

        fs = self.target._fs()
        infos = fs.get_file_info(pafs.FileSelector(self.tmp.key, recursive=True, allow_not_found=True))
        return sorted((i.path.strip("/"), i.size or 0) for i in infos if i.type == pafs.FileType.File)

    def commit(self, *, replace: bool = False) -> list[str]:
        """Copy the staged objects into place, then write the manifest; with ``replace``,
        objects under the target that the new output lacks are deleted before the manifest.
        Returns the keys written. A failure half-way: see ``_failed``."""
        from pyarrow import fs as pafs

        fs = self.target._fs()
        written: list[str] = []
        staged: list[tuple[str, int]] = []
        with uninterrupted():
            try:
                if self.existed is False and self.target.fresh().exists():  # the store's answer now
                    raise OutputError(APPEARED, file=str(self.target))
                staged = self._staged()
                inside = self.part().key + "/"
                prefix = bool(staged) and all(k.startswith(inside) for k, _ in staged)
                manifest = self.target / MANIFEST
                if self.existed and prefix:  # the old output stops claiming to be complete first
                    _delete_missing_ok(fs, manifest.key)
                entries = []
                for key, size in staged:
                    dest = self.target.parent / key[len(self.tmp.key) + 1:]
                    fs.copy_file(key, dest.key)
                    written.append(dest.key)
                    entry: dict[str, Any] = {"key": key[len(inside):], "size": size}
                    if key in self.hashes:
                        entry["sha256"] = self.hashes[key]
                    entries.append(entry)
                if replace and self.target.is_dir():
                    keep = set(written)
                    for info in fs.get_file_info(pafs.FileSelector(self.target.key, recursive=True)):
                        if info.type == pafs.FileType.File and info.path.strip("/") not in keep:
                            fs.delete_file(info.path)
                if prefix and self.existed and not replace:  # merged into an old output: all it holds
                    sizes = tree_sizes(self.target)
                    sizes.pop(MANIFEST, None)
                    ours = {e["key"]: e for e in entries}
                    entries = [ours.get(k, {"key": k, "size": n}) for k, n in sorted(sizes.items())]
                if prefix:
                    with fs.open_output_stream(manifest.key) as out:
                        out.write(manifest_bytes(entries))
                    written.append(manifest.key)
            except OutputError as e:
                if e.message == APPEARED and not written:
                    raise
                raise self._failed(e, written, staged) from None
            except Exception as e:
                raise self._failed(e, written, staged) from None
            finally:
                self.abort()
        return written

    def _failed(self, e: BaseException, written: list[str], staged: list[tuple[str, int]]) -> OutputError:
        """Remove what the commit copied (best effort; not over an old output, whose objects
        it replaced) and the staging prefix; the one error line names what is left of each,
        and how to remove it."""
        fs = self.target._fs()
        places = []
        if self.existed and written:
            places.append((self.target, f"the old output with {len(written)} of {len(staged)} object(s) "
                                        f"replaced and no manifest"))
        elif written:
            left = [key for key in reversed(written) if not _delete_missing_ok(fs, key)]
            if left:
                places.append((self.target, f"{len(left)} of {len(staged)} object(s)"))
        if not self.abort():
            places.append((self.tmp, f"{len(staged)} object(s)" if staged else "staging objects"))
        reason = e.message if isinstance(e, OutputError) else printable(_first_line(e))
        self.reported = True
        return OutputError(f"cannot publish: {reason}; {leftovers(places)}", file=str(self.target))

    def left_behind(self, e: BaseException) -> OutputError | None:
        """After a failure before the commit (a Spark task, an upload): None when the staging
        prefix is gone (or the commit already named what is left), else the one error line:
        the failure, then the staging prefix left and how to remove it."""
        if getattr(self, "reported", False) or self.abort():
            return None
        reason = str(e) if isinstance(e, KsegError) else printable(_first_line(e))
        return OutputError(f"{reason}; {leftovers([(self.tmp, 'staging objects')])}", file=str(self.target))

    def abort(self) -> bool:
        """Delete the staging prefix; False when it could not be (the store failing)."""
        with uninterrupted():
            done = _delete_missing_ok(self.target._fs(), self.tmp.key, folder=True)
            _live_objects.pop(str(self.tmp), None)
            return done


def _delete_missing_ok(fs: Any, key: str, *, folder: bool = False) -> bool:
    """Delete an object (or a prefix); True when it is gone (or was never there)."""
    try:
        fs.delete_dir(key) if folder else fs.delete_file(key)
        return True
    except FileNotFoundError:
        return True
    except Exception:  # the store failing: the caller names what is left
        return False


def leftovers(places: list[tuple[RemotePath, str]]) -> str:
    """``left: <output>/ (2 of 9 object(s)), <staging>/ (9 object(s)); remove them with: ...``
    or ``nothing was left behind``."""
    if not places:
        return "nothing was left behind"
    where = ", ".join(f"{url}/ ({what})" for url, what in places)
    return f"left: {where}; remove them with: {remove_command([f'{url}/' for url, _ in places])}"


def remove_command(urls: list[str]) -> str:
    """The shell command that deletes these prefixes (the store's own command-line tool)."""
    scheme = urls[0].split("://", 1)[0]
    if scheme == "s3":
        endpoint = next((os.environ[v] for v in ENDPOINT_ENV if os.environ.get(v)), None)
        flag = f" --endpoint-url {endpoint}" if endpoint else ""
        return " && ".join(f"aws s3 rm --recursive{flag} {url}" for url in urls)
    if scheme in ("gs", "gcs"):
        return " && ".join(f"gcloud storage rm --recursive gs://{url.split('://', 1)[1]}" for url in urls)
    return " && ".join(f"az storage blob delete-batch --source <container> --pattern '{url.split('/', 3)[-1]}*'"
                       for url in urls)


def tree_sizes(root: Path | RemotePath | ArchivePath) -> dict[str, int]:
    """Every file (object) under a folder (prefix), by its key relative to it, with its size:
    what a manifest is checked against."""
    if isinstance(root, RemotePath):
        from pyarrow import fs as pafs

        infos = root._fs().get_file_info(pafs.FileSelector(root.key, recursive=True))
        return {i.path.strip("/")[len(root.key) + 1:]: i.size or 0 for i in infos if i.type == pafs.FileType.File}
    if not isinstance(root, Path):  # a folder inside an archive
        found, todo = {}, [root]
        while todo:
            for child in todo.pop().iterdir():
                if child.is_dir():
                    todo.append(child)
                else:
                    found[child.as_posix()[len(root.as_posix()) + 1:]] = child.stat().st_size
        return found
    sizes = {}
    for folder, _, names in os.walk(root):
        for name in names:
            p = Path(folder) / name
            if p.is_file() and not p.is_symlink():
                sizes[p.relative_to(root).as_posix()] = p.stat().st_size
    return sizes


def manifest_bytes(entries: list[dict[str, Any]]) -> bytes:
    """The manifest object: written last, so an output that has it is complete."""
    import json
    import sys
    import time

    version = getattr(sys.modules.get("kseg"), "__version__", "unknown")  # the package, not imported: layers
    doc = {"kseg_manifest": MANIFEST_FORMAT, "kseg_version": version, "command": ["kseg", *sys.argv[1:]],
           "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "objects": entries}
    return (json.dumps(doc, indent=1) + "\n").encode()


def upload_tree(local: str | os.PathLike, target: RemotePath, hashes: dict[str, str] | None = None) -> list[str]:
    """Upload a local file or folder to ``target`` (an object or a prefix), a file per object.
    Meant for a staging prefix (``StagedOutput.part()``): objects are written in place.
    ``hashes``: filled with each object's SHA-256 (the manifest's), computed as it is sent."""
    import hashlib

    local = Path(local)
    files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
    fs = target._fs()
    written = []
    for f in files:
        dest = target if f == local else target / f.relative_to(local).as_posix()
        digest = hashlib.sha256()
        with open(f, "rb") as src, fs.open_output_stream(dest.key) as out:
            while True:
                chunk = src.read(8 << 20)
                if not chunk:
                    break
                digest.update(chunk)
                out.write(chunk)
        written.append(dest.key)
        if hashes is not None:
            hashes[dest.key] = digest.hexdigest()
    return written


# --------------------------------------------------------------------------- archives

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
# Members of a compressed tar up to this size are read whole when opened (indexes,
# checkpoints, small segments), so reading a segment and its index together does not
# send the shared decompressor back and forth.
SMALL_MEMBER = 8 * 1024 * 1024


def archive_path(p: Path) -> ArchivePath | None:
    """The ``ArchivePath`` a local path names when it is (or runs through) an archive file."""
    parts = p.parts
    for i, part in enumerate(parts):
        if part.lower().endswith(ARCHIVE_SUFFIXES):
            head = Path(*parts[: i + 1])
            if head.is_file():
                inner = "/".join(parts[i + 1:])
                return ArchivePath(head, inner) if inner else ArchivePath(head, "").root()
    return None


class _Archive:
    """An archive opened once per process: its members' names, types and sizes."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()
        self.mtime = path.stat().st_mtime
        self.compressed = False
        self.files: dict[str, Any] = {}  # member name -> ZipInfo / TarInfo
        self.dirs: dict[str, set[str]] = {"": set()}  # folder -> child names
        import tarfile  # stdlib, late (also below): only archives need them
        import zipfile

        try:
            if zipfile.is_zipfile(path):
                self.zip: zipfile.ZipFile | None = zipfile.ZipFile(path)
                self.tar: tarfile.TarFile | None = None
                members = [(i.filename, i.is_dir(), i) for i in self.zip.infolist()]
            else:
                self.zip = None
                try:
                    self.tar = tarfile.open(path, "r:*")
                except tarfile.ReadError:
                    raise InputError("not a .tar, .tar.gz/.tgz or .zip archive", file=str(path)) from None
                # A compressed tar: listing decompresses it once, front to back. An archive cut
                # short or damaged past its first member fails here, naming the archive.
                self.compressed = not isinstance(self.tar.fileobj, io.BufferedReader)
                members = [(m.name, m.isdir(), m) for m in self.tar.getmembers() if m.isfile() or m.isdir()]
        except read_failures() as e:
            raise cannot_read(path, e) from None
        repeated: list[str] = []
        for name, is_dir, info in members:
            # Names as tar resolves them: logs//t-0/./x is logs/t-0/x, and of two members under
            # one name the last is the one extracted (and read here).
            name = "/".join(p for p in name.split("/") if p not in ("", "."))
            if not name:
                continue
            if is_dir:
                self.dirs.setdefault(name, set())
            else:
                if name in self.files:
                    repeated.append(name)
                self.files[name] = info
            child = name
            while child:
                parent = child.rsplit("/", 1)[0] if "/" in child else ""
                self.dirs.setdefault(parent, set()).add(child.rsplit("/", 1)[-1])
                child = parent
        if repeated:
            import sys

            first = repeated[0]
            more = f" and {len(set(repeated)) - 1} other name(s)" if len(set(repeated)) > 1 else ""
            sys.stderr.write(f"kseg: note: {printable(path)}: more than one member is named {printable(first)}{more}: "
                             "the last of each is read, as tar extracts it\n")

    def open(self, name: str) -> Any:
        info = self.files[name]
        if self.zip is not None:
            # Deflated members are decompressed as read; seeking back restarts the member.
            return self.zip.open(info)
        assert self.tar is not None
        f = self.tar.extractfile(info)
        if self.compressed and info.size <= SMALL_MEMBER:
            with self.lock, f:
                return io.BytesIO(f.read())
        return _Locked(f, self.lock)


class _Locked:
    """A tar member sharing the archive's file object: one read at a time."""

    def __init__(self, f: Any, lock: threading.Lock):
        self._f = f
        self._lock = lock

    def read(self, n: int = -1) -> bytes:
        with self._lock:
            return self._f.read(n)

    def seek(self, position: int, whence: int = 0) -> int:
        return self._f.seek(position, whence)

    def tell(self) -> int:
        return self._f.tell()

    def close(self) -> None:
        self._f.close()


_archives: dict[tuple[str, int], _Archive] = {}
# (the archive's path as given, pid) -> (its key in _archives, when its time was last checked):
# a lookup in the same archive within ARCHIVE_RECHECK seconds costs no resolve() and no stat().
_archive_seen: dict[tuple[str, int], tuple[tuple[str, int], float]] = {}
ARCHIVE_RECHECK = 1.0


def _archive(path: Path) -> _Archive:
    """The archive's member index, built once per process (again only if the file changes)."""
    import time

    now = time.monotonic()
    given = (str(path), os.getpid())
    seen = _archive_seen.get(given)
    if seen is not None and now - seen[1] < ARCHIVE_RECHECK:
        a = _archives.get(seen[0])
        if a is not None:
            return a
    key = (str(path.resolve()), given[1])
    with _lock:
        a = _archives.get(key)
        if a is None or a.mtime != path.stat().st_mtime:
            a = _archives[key] = _Archive(path)
        _archive_seen[given] = (key, now)
        return a


def _clean_inner(inner: str) -> str:
    """A member name as tar resolves it (no empty or "." parts); most names already are."""
    if inner and not (inner[0] == "/" or inner[-1] == "/" or "//" in inner or inner == "."
                      or inner.startswith("./") or "/./" in inner or inner.endswith("/.")):
        return inner
    return "/".join(p for p in inner.split("/") if p and p != ".")


class ArchivePath(_NameParts):
    """A member (file or folder) of a ``.tar``, ``.tar.gz``/``.tgz`` or ``.zip`` archive,
    with ``Path``'s reading interface; ``str()`` is ``<archive>/<member>``.

    The archive is listed once per process (a compressed tar is decompressed once for
    that, front to back, holding only the member list). Zip members are opened through
    ``zipfile`` (seekable; stored members cost nothing to seek, deflated ones are
    decompressed as read). Tar members are read in place through ``tarfile``: from an
    uncompressed tar by seeking, from a compressed one through one shared decompressor,
    which moves forward cheaply but starts again from the top for every step back, so
    members are best read in archive order (``tar`` keeps a folder's files together).
    Members of a compressed tar up to 8 MiB are read whole when opened; larger ones
    (segments) are streamed, so memory is bounded by the reader's chunk size.
    """

    __slots__ = ("archive", "inner")

    def __init__(self, archive: str | os.PathLike, inner: str = ""):
        self.archive = archive if isinstance(archive, Path) else Path(archive)
        self.inner = _clean_inner(str(inner))

    def root(self) -> ArchivePath:
        """The archive's top folder, going down through folders that are alone in theirs
        (``logs.tgz`` holding only ``kafka-logs/`` is the log directory)."""
        a = _archive(self.archive)
        here = self.inner
        while True:
            children = a.dirs.get(here, set())
            if len(children) != 1:
                return ArchivePath(self.archive, here)
            only = f"{here}/{next(iter(children))}" if here else next(iter(children))
            if only not in a.dirs:
                return ArchivePath(self.archive, here)
            here = only

    # -- pure path part
    def __str__(self) -> str:
        return f"{self.archive}/{self.inner}" if self.inner else str(self.archive)

    def __fspath__(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"ArchivePath({str(self)!r})"

    def __reduce__(self) -> Any:
        return (ArchivePath, (str(self.archive), self.inner))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArchivePath) and (self.archive, self.inner) == (other.archive, other.inner)

    def __hash__(self) -> int:
        return hash((self.archive, self.inner))

    def __lt__(self, other: ArchivePath) -> bool:
        return (str(self.archive), self.inner) < (str(other.archive), other.inner)

    def __truediv__(self, name: str) -> ArchivePath:
        name = str(name).strip("/")
        return ArchivePath(self.archive, f"{self.inner}/{name}" if self.inner else name)

    @property
    def name(self) -> str:
        return self.inner.rsplit("/", 1)[-1] if self.inner else self.archive.name

    @property
    def parent(self) -> ArchivePath | Path:
        if not self.inner:
            return self.archive.parent
        return ArchivePath(self.archive, self.inner.rsplit("/", 1)[0] if "/" in self.inner else "")

    @property
    def parts(self) -> tuple[str, ...]:
        return self.archive.parts + tuple(self.inner.split("/") if self.inner else ())

    def with_name(self, name: str) -> ArchivePath:
        return self.parent / name  # type: ignore[return-value]

    def with_suffix(self, suffix: str) -> ArchivePath:
        return self.with_name(self.stem + suffix)

    def as_posix(self) -> str:
        return str(self)

    def is_absolute(self) -> bool:
        return self.archive.is_absolute()

    def resolve(self, strict: bool = False) -> ArchivePath:
        return ArchivePath(self.archive.resolve(), self.inner)

    absolute = resolve

    # -- what is there
    def _a(self) -> _Archive:
        return _archive(self.archive)

    def exists(self) -> bool:
        a = self._a()
        return self.inner in a.files or self.inner in a.dirs

    def is_file(self) -> bool:
        return self.inner in self._a().files

    def is_dir(self) -> bool:
        return self.inner in self._a().dirs

    def stat(self) -> RemoteStat:
        a = self._a()
        info = a.files.get(self.inner)
        if info is None:
            if self.inner in a.dirs:
                return RemoteStat(0, a.mtime)
            raise FileNotFoundError(2, "No such file or directory", str(self))
        if a.zip is not None:  # a ZipInfo
            import time

            return RemoteStat(info.file_size, time.mktime(info.date_time + (0, 0, -1)))
        return RemoteStat(info.size, float(info.mtime))

    def iterdir(self) -> Iterator[ArchivePath]:
        children = self._a().dirs.get(self.inner)
        if children is None:
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return (self / c for c in sorted(children))

    def glob(self, pattern: str) -> Iterator[ArchivePath]:
        if "/" in pattern or "**" in pattern:
            raise ValueError("ArchivePath.glob takes one-level patterns only")
        return (p for p in self.iterdir() if fnmatch.fnmatchcase(p.name, pattern))

    # -- bytes
    def open(self, mode: str = "rb", buffering: int = -1, encoding: str | None = None,
             errors: str | None = None, newline: str | None = None) -> Any:
        if mode in ("rb", "r", "rt"):
            a = self._a()
            if self.inner not in a.files:
                raise FileNotFoundError(2, "No such file or directory", str(self))
            try:
                f = MemberReader(a.open(self.inner), self.stat().st_size, str(self))
            except read_failures() as e:  # a damaged local header, a compressed tar cut short
                raise cannot_read(self, e) from None
            if mode == "rb":
                return f
            return io.TextIOWrapper(io.BytesIO(f.read()), encoding=encoding or "utf-8",
                                    errors=errors, newline=newline)
        raise OSError(30, "an archive is read-only", str(self))

    def read_bytes(self) -> bytes:
        with self.open("rb") as f:
            return f.read()

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")


class MemberReader(RangedReader):
    """A member of an archive, with the object reader's interface (``size()``).

    Damaged member data (a zip's bad CRC-32 or deflate stream, a tar cut short) raises
    ``ReadError`` naming the member. ``zipfile`` checks the CRC only when a read reaches
    the member's end of stream, which a read of exactly the bytes left may stop short of:
    a read that reaches the member's size reads on to the end of stream, so that a bad
    member never reads as a good one.
    """

    def __init__(self, f: Any, size: int, name: str):
        super().__init__(f, name)
        self._size = size
        self._closed = False

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._f.read() if n is None or n < 0 else self._f.read(n)
            if data and self._f.tell() >= self._size and self._f.read(1):
                raise OSError(f"the member holds more than the {self._size} bytes its header says")
            return data
        except read_failures() as e:
            raise cannot_read(self.name, e) from None

    def seek(self, position: int, whence: int = 0) -> int:
        try:
            return self._f.seek(position, whence)  # a zip member seeks by reading (and inflating)
        except read_failures() as e:
            raise cannot_read(self.name, e) from None

    def size(self) -> int:
        return self._size

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        self._f.close()
