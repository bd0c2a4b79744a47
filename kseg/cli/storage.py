"""Command-line glue for ``kseg.storage``: a path parameter that takes URLs, and ``--s3-endpoint``."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any, Callable, TextIO

import click

from kseg.cli.exits import EXIT_DATA, EXIT_USAGE
from kseg.errors import KsegError, OutputError
from kseg.interrupts import uninterrupted
from kseg.printable import printable
from kseg.storage import ReadError, RemotePath, StagedOutput, as_path, leftovers, upload_tree


class Unreadable(click.ClickException):
    """An input that cannot be read while its argument is taken (an archive whose listing
    fails): the one read-error line, ``kseg: error: PATH: cannot read: ...``, exit 2."""

    exit_code = EXIT_USAGE


class Location(click.ParamType):
    """A local path, a ``file://`` URL or an ``s3://bucket/key`` URL (as ``Path``/``RemotePath``)."""

    name = "path"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            return as_path(value)
        except ReadError as e:
            raise Unreadable(str(e)) from None
        except KsegError as e:
            self.fail(e.message, param, ctx)

    def shell_complete(self, ctx: Any, param: Any, incomplete: str) -> list[Any]:
        """Local paths complete as files and folders do in the shell (object-store URLs do not)."""
        from click.shell_completion import CompletionItem

        return [] if "://" in incomplete else [CompletionItem(incomplete, type="file")]


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
    """How a command names its output (or a file in it): by the URL it was given, not by the
    local staging folder."""
    text = str(path)
    for local, url in _shown.items():
        if text == local or text.startswith(local + "/"):
            return url + text[len(local):]
    return text


# Lines a command says about its output (``say``) while an upload is pending: printed once
# the output is in place, dropped when publishing fails (None: no upload pending, print now).
_said: list[tuple[str, bool]] | None = None


def say(line: str, *, err: bool = True) -> None:
    """A writing command's summary line (``kseg: wrote ...``): printed now for a local
    output (already in place), after publishing for an ``s3://`` one."""
    if _said is None:
        click.echo(line, err=err)
    else:
        _said.append((line, err))


def say_report(render: Callable[[TextIO], None]) -> None:
    """A writing command's report (a renderer writing lines to stdout): written now for a
    local output, after publishing for an ``s3://`` one, naming the output by its URL."""
    if _said is None:
        render(sys.stdout)
        return
    buf = io.StringIO()
    render(buf)
    text = buf.getvalue()
    for local, url in _shown.items():
        text = text.replace(local, url)
    if text:
        _said.append((text.removesuffix("\n"), False))


def remote_output(fn: Callable[..., Any] | None = None, *, merge: bool = False) -> Any:
    """Lets a writing command take an ``s3://`` output (``output`` and ``force`` parameters).

    The command writes to a local staging folder as usual (its own all-or-nothing rules
    apply there); only when it succeeded (or ended with exit 1 for damage it skipped, as a
    local output stays then) are the files uploaded, under a staging prefix beside the
    output, and copied into place once all are there, the manifest last
    (``StagedOutput``); the command's summary lines (``say``) come after that. With
    ``--force``, objects of the old output that the new one does not have are deleted
    after the upload; with ``merge`` (``index --rebuild -o``: ``--force`` writes into an
    existing output) they stay. An output that appeared during the run is not replaced
    (exit 2). A publish that fails removes what it copied and names in its one error line
    what is left and how to remove it. The local staging folder (``kseg-out-*`` in the
    temporary folder) and the staging objects go on every way out: success, failure,
    Ctrl-C or SIGTERM (a second signal waits for the cleanup).
    """
    import functools

    if fn is None:
        return functools.partial(remote_output, merge=merge)

    @functools.wraps(fn)
    def wrapper(*args: Any, output: Any, force: bool, **kwargs: Any) -> Any:
        import shutil
        import tempfile

        global _said
        if not isinstance(output, RemotePath):
            return fn(*args, output=output, force=force, **kwargs)
        existed = output.exists()
        if existed and not force:
            raise OutputError("the output exists (use --force to replace it)", file=str(output))
        staging: Path | None = None
        objects: StagedOutput | None = None
        said: list[tuple[str, bool]] = []
        try:
            with uninterrupted():  # made and noted together: the finally below removes both
                staging = Path(tempfile.mkdtemp(prefix="kseg-out-"))
                objects = StagedOutput(output, existed=existed)
            local = staging / output.name
            _shown[str(local)] = str(output)
            _said = said
            try:
                result = fn(*args, output=local, force=False, **kwargs)
                ended: SystemExit | None = None
            except SystemExit as e:
                if e.code not in (None, 0, EXIT_DATA):
                    raise
                ended = e  # damage skipped or carried: the output stands, as a local one does
            finally:
                _said = None
            if local.exists():  # not on a dry run
                _upload(local, objects)
                objects.commit(replace=force and not merge)
            for line, err in said:
                click.echo(line, err=err)
            if ended is not None:
                raise ended
            return result
        finally:
            with uninterrupted():  # a second Ctrl-C or SIGTERM does not cut the cleanup short
                if objects is not None:
                    objects.abort()
                if staging is not None:
                    _shown.pop(str(staging / output.name), None)
                    shutil.rmtree(staging, ignore_errors=True)

    return wrapper


def _upload(local: Path, objects: StagedOutput) -> None:
    """The local output under the staging prefix; a failure names the staging objects it
    could not remove."""
    try:
        upload_tree(local, objects.part(), objects.hashes)
    except KsegError:
        raise
    except Exception as e:
        places = [] if objects.abort() else [(objects.tmp, f"{len(objects.hashes)} object(s) or more")]
        reason = printable((str(e).strip().splitlines() or [type(e).__name__])[0])
        raise OutputError(f"cannot upload: {reason}; {leftovers(places)}", file=str(objects.target)) from None
