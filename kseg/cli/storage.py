"""Command-line glue for ``kseg.storage``: a path parameter that takes URLs, and ``--s3-endpoint``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import click

from kseg.errors import KsegError, OutputError
from kseg.storage import RemotePath, as_path


class Location(click.ParamType):
    """A local path, a ``file://`` URL or an ``s3://bucket/key`` URL (as ``Path``/``RemotePath``)."""

    name = "path"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return as_path(value)
        except KsegError as e:
            self.fail(e.message, param, ctx)


LOCATION = Location()


def _set_endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        # The variable the AWS SDKs read: seen by kseg's own filesystem layer and, in
        # Spark local mode, by executors (kseg spark passes it on to cluster executors).
        os.environ["AWS_ENDPOINT_URL_S3"] = value


def s3_endpoint_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--s3-endpoint", metavar="URL", callback=_set_endpoint, expose_value=False, is_eager=True,
        help="S3-compatible endpoint for s3:// paths, e.g. http://127.0.0.1:8333 "
             "[env: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL].")(f)


# --------------------------------------------------------------------------- writing to object storage

_shown: dict[str, str] = {}


def shown(path: Any) -> str:
    """How a command names its output: the URL it was given, not the local staging folder."""
    return _shown.get(str(path), str(path))


def remote_output(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Lets a writing command take an ``s3://`` output (``output`` and ``force`` parameters).

    The command writes to a local staging folder as usual (its own all-or-nothing rules
    apply there); only when it succeeded is each file uploaded to its object, which
    appears only once complete (``RemotePath.open("wb")``). With ``--force``, objects of
    the old output that the new one does not have are deleted after the upload.
    """
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, output: Any, force: bool, **kwargs: Any) -> Any:
        import shutil
        import tempfile


        if not isinstance(output, RemotePath):
            return fn(*args, output=output, force=force, **kwargs)
        if output.exists() and not force:
            raise OutputError("the output exists (use --force to replace it)", file=str(output))
        staging = Path(tempfile.mkdtemp(prefix="kseg-out-"))
        local = staging / output.name
        _shown[str(local)] = str(output)
        try:
            result = fn(*args, output=local, force=False, **kwargs)
            upload_tree(local, output, replace=force)
            return result
        finally:
            _shown.pop(str(local), None)
            shutil.rmtree(staging, ignore_errors=True)

    return wrapper


def upload_tree(local: Any, target: Any, *, replace: bool = False) -> list[str]:
    """Upload a file or a folder to ``target`` (a ``RemotePath``), one atomic object per file."""

    local = Path(local)
    files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
    written = []
    for f in files:
        dest = target if f == local else target / f.relative_to(local).as_posix()
        with open(f, "rb") as src, dest.open("wb") as out:
            while True:
                chunk = src.read(8 << 20)
                if not chunk:
                    break
                out.write(chunk)
        written.append(dest.key)
    if replace and target.is_dir():
        keep = set(written)
        from pyarrow import fs as pafs

        fs = target._fs()
        for info in fs.get_file_info(pafs.FileSelector(target.key, recursive=True)):
            if info.type == pafs.FileType.File and info.path.strip("/") not in keep:
                fs.delete_file(info.path)
    return written
