"""Writers split into units (``kseg.ops.executors``): where each unit stages its part of the
output, and merge's one way of publishing the whole.

``plan`` opens the stage (``open_stage``): a local output is built under its temporary name
(``AtomicDir``), an ``s3://`` output (``kseg spark`` writes there from its executors) under a
staging prefix (``StagedOutput``). Each ``run`` writes its partition into the stage
(``write_into``: an object store's through a local folder it then uploads) and returns what
it saw of its inputs. ``merge`` alone publishes (``publishing``): after the last partial, the
inputs still as they were read, the folder's own files written, one rename or one commit of
the staged objects with their manifest; on any error, the stage removed, nothing published.
The open stages live in the process that planned, by output; workers only see its name.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator, TypeVar

from kseg.errors import OutputError
from kseg.log import identity
from kseg.log.atomic import AtomicDir, check_output
from kseg.storage import RemotePath, StagedOutput, as_path, upload_tree

T = TypeVar("T")

_open: dict[str, AtomicDir | StagedOutput] = {}  # output -> its stage, in the planning process


@dataclass(frozen=True)
class Stage:
    """What a unit needs of its output's stage (small, picklable): the folder or prefix it
    writes under, and whether that is an object store's."""

    output: str
    where: str
    remote: bool = False


def open_stage(inputs: list[Any], output: Any, *, force: bool, folder: bool = True) -> Stage:
    """Check the output against the inputs (``--force``), then make its stage. ``folder``
    False (a single segment written as it is named): units write the output itself, locally;
    an object store's is still staged."""
    check_output(inputs, output, force=force)
    if isinstance(output, RemotePath):
        staged = StagedOutput(output, existed=output.exists())
        _open[str(output)] = staged
        return Stage(str(output), str(staged.part()), True)
    if not folder:
        return Stage(str(output), str(output))
    d = AtomicDir(output)
    _open[str(output)] = d
    return Stage(str(output), str(d.tmp))


def write_into(stage: Stage, name: str, write: Callable[[Path], T]) -> T:
    """``write(folder)`` for the part ``name`` of the output (a partition folder, or ``""``:
    the whole); an object store's written in a local folder, then uploaded under the stage."""
    if not stage.remote:
        return write(Path(stage.where) / name if name else Path(stage.where))
    local = Path(tempfile.mkdtemp(prefix="kseg-part-"))
    try:
        here = local / (name or PurePosixPath(stage.where).name)
        result = write(here)
        if here.exists():
            try:
                upload_tree(here, as_path(f"{stage.where}/{name}" if name else stage.where))  # type: ignore[arg-type]
            except OSError as e:
                raise OutputError(f"cannot write: {e}", file=stage.output) from None
        return result
    finally:
        shutil.rmtree(local, ignore_errors=True)


def watched(read: Callable[[], T], root: Any = None) -> tuple[T, dict[str, identity.Identity]]:
    """``read()`` as a writer's unit: the inputs it opened (under ``root``, when given: not the
    output it read back), each with the identity first seen, for merge to check before it
    publishes (a unit may run in another process)."""
    with identity.watching(root):
        result = read()
        seen = identity.seen()
    if root is not None and not isinstance(root, Path):  # objects, archive members: no identity to hold
        seen = {}
    elif isinstance(root, Path):
        top = os.path.abspath(root)
        seen = {k: v for k, v in seen.items() if k == top or k.startswith(top.rstrip(os.sep) + os.sep)}
    return result, seen


@contextmanager
def publishing(output: Any, seen: list[dict[str, identity.Identity]] | None = None,
               *, force: bool = False) -> Iterator[Path | None]:
    """merge's body: yields the local folder where the output's own files go (a temporary
    folder uploaded beside the parts for an object store; None when nothing is staged, as a
    dry run); then, unless the body failed, checks the inputs (``seen``: each unit's) and
    publishes; on failure removes the stage. A partial that raises inside the body lands here."""
    stage = _open.pop(str(output), None) if output is not None else None
    local = None
    try:
        if isinstance(stage, StagedOutput):
            local = Path(tempfile.mkdtemp(prefix="kseg-out-"))
        yield stage.tmp if isinstance(stage, AtomicDir) else local
        for s in seen or ():
            identity.require_unchanged(before=s)  # every input as it was read: else nothing is published
        if isinstance(stage, AtomicDir):
            stage.commit()
        elif isinstance(stage, StagedOutput):
            assert local is not None
            if any(local.iterdir()):
                upload_tree(local, stage.part(), stage.hashes)
            stage.commit(replace=force)
    except BaseException as e:
        if isinstance(stage, AtomicDir):
            stage.abort()
        elif isinstance(stage, StagedOutput):
            note = stage.left_behind(e)
            if note is not None:
                raise note from None
        raise
    finally:
        if local is not None:
            shutil.rmtree(local, ignore_errors=True)
