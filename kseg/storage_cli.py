"""Command-line glue for ``kseg.storage``: a path parameter that takes URLs, and ``--s3-endpoint``."""

from __future__ import annotations

import os
from typing import Any, Callable

import click

from .errors import KsegError
from .storage import as_path


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
