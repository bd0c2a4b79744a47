"""Whether an input file is still the file that was read: the one rule for files that
change under a command (a live broker appending, retention renaming, an overwrite).

Each local segment's identity (size, mtime_ns, inode and device) is taken when it is first
opened in this process and compared when it has been read (readers: a note) and before a
writer publishes (any change or disappearance: an error, nothing written). A file renamed
to ``.deleted`` or ``.cleaned`` by the broker is followed under its new name, as the
broker's own readers keep reading an open segment.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from kseg.errors import InputError
from kseg.log.listing import CLEANED_SUFFIX, DELETED_SUFFIX
from kseg.storage import VANISHED

# Suffixes the broker gives a segment it is taking away (retention, the cleaner), tried in order.
RENAMED_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX)

NOTHING_WRITTEN = "nothing was written; run again when the broker is done with it"


@dataclass(frozen=True)
class Identity:
    """What says a file is unchanged: its size, modification time, inode and device."""

    size: int
    mtime_ns: int
    ino: int
    dev: int

    @classmethod
    def of(cls, st: os.stat_result) -> "Identity":
        return cls(st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


@dataclass(frozen=True)
class Change:
    """How a file differs from when it was first opened. ``after`` is None when it is gone;
    ``renamed_to`` is its new name when the broker renamed it (same inode, same bytes)."""

    path: str
    before: Identity
    after: Identity | None
    renamed_to: str | None = None

    @property
    def gone(self) -> bool:
        return self.after is None

    @property
    def replaced(self) -> bool:
        return self.after is not None and (self.after.ino, self.after.dev) != (self.before.ino, self.before.dev)

    @property
    def appended(self) -> bool:
        """It only grew (what a live broker does to the newest segment of a partition)."""
        return (self.after is not None and not self.replaced and self.renamed_to is None
                and self.after.size > self.before.size)

    @property
    def contents_changed(self) -> bool:
        """Its bytes (may) differ: resized, rewritten or replaced (a rename alone keeps them)."""
        a = self.after
        return a is not None and (self.replaced or a.size != self.before.size or a.mtime_ns != self.before.mtime_ns)

    def detail(self) -> str:
        """``size 1048576 -> 1048640, modified 17:20:01.123456 -> 17:20:02.654321``."""
        a, b = self.after, self.before
        if a is None:
            return "it is gone"
        parts = []
        if a.size != b.size:
            parts.append(f"size {b.size} -> {a.size}")
        if a.mtime_ns != b.mtime_ns:
            parts.append(f"modified {_clock(b.mtime_ns)} -> {_clock(a.mtime_ns)}")
        if self.replaced:
            parts.append(f"inode {b.ino} -> {a.ino} (replaced)")
        return ", ".join(parts) or "unchanged"

    def reader_note(self) -> str | None:
        """The note a reader gives (None: nothing worth saying)."""
        if self.renamed_to is not None and not self.contents_changed:
            return renamed_note(self.renamed_to)
        if self.gone:
            return "deleted during the run (retention); it was read from the file still open"
        if self.appended:
            return (f"the file grew during the run ({self.detail()}; a live broker appending): "
                    f"the report covers the first {self.before.size} bytes")
        if self.contents_changed:
            return f"the file changed during the run ({self.detail()}): the report may not match the file"
        return None


def renamed_note(new: str) -> str:
    return f"renamed to {Path(new).name} during the run (retention); followed under its new name"


def _clock(ns: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ns // 1_000_000_000)) + f".{ns % 1_000_000_000 // 1000:06d}"


class InputChangedError(InputError):
    """An input changed, went away or was renamed while a writer read it: nothing is published."""


# While a writer runs (``watching``): the first identity seen of each local file it opened.
_first: dict[str, Identity] | None = None


@contextmanager
def watching(root: Any = None) -> Iterator[None]:
    """A writer's run: every segment opened is recorded for ``require_unchanged``, and a file
    read twice (compact's passes) is compared with what its first read saw. With ``root`` (the
    writer's one INPUT), a file under it not found under its name is ``vanished_under``'s error."""
    global _first
    saved, _first = _first, {}
    try:
        yield
    except FileNotFoundError as e:
        err = None if root is None else vanished_under(e, root)
        if err is None:
            raise
        raise err from None
    finally:
        _first = saved


@contextmanager
def unwatched() -> Iterator[None]:
    """Reads inside that are not the writer's inputs (a copy it made and checks): not recorded."""
    global _first
    saved, _first = _first, None
    try:
        yield
    finally:
        _first = saved


def _key(path: Any) -> str | None:
    if not isinstance(path, Path):
        return None
    return os.path.abspath(path)


def opened(path: Any, st: os.stat_result) -> Identity | None:
    """``path``'s identity as read from its open file (``fstat``); while a writer runs, the
    first one seen in the run (a file read twice is compared with what the first read saw)."""
    key = _key(path)
    if key is None:
        return None
    if _first is None:
        return Identity.of(st)
    return _first.setdefault(key, Identity.of(st))


def watched() -> list[str]:
    """The files opened so far in the writer's run."""
    return list(_first or ())


def seen() -> dict[str, Identity]:
    """The files opened so far in the writer's run, each with its first identity (what a unit
    run in another process hands to the one that publishes)."""
    return dict(_first or {})


def renamed(path: Path) -> Path | None:
    """Where the broker put ``X.log`` when it is gone: ``X.log.deleted`` or ``X.log.cleaned``."""
    for suffix in RENAMED_SUFFIXES:
        cand = path.with_name(path.name + suffix)
        if cand.is_file():
            return cand
    return None


def follow(path: Any) -> Any:
    """``path`` itself, or its renamed self when it is gone and the broker renamed it."""
    if isinstance(path, Path) and not os.path.lexists(path):
        new = renamed(path)
        if new is not None:
            return new
    return path


def change(path: Any, before: Identity | None = None) -> Change | None:
    """How ``path`` differs now from its first recorded identity (or ``before``); None when
    it is the same file, unchanged, or nothing was recorded."""
    key = _key(path)
    if key is None:
        return None
    before = before or (_first or {}).get(key)
    if before is None:
        return None
    try:
        after: Identity | None = Identity.of(os.stat(path))
    except FileNotFoundError:
        after = None
    except OSError:
        return None
    new = None
    if after is None:
        moved = renamed(Path(path))
        if moved is not None:
            st = os.stat(moved)
            if (st.st_ino, st.st_dev) == (before.ino, before.dev):
                new, after = str(moved), Identity.of(st)
    if after == before and new is None:
        return None
    return Change(str(path), before, after, new)


def require_unchanged(paths: Any = None, before: dict[str, Identity] | None = None) -> None:
    """Before a writer publishes: InputChangedError (exit 2) for the first input that changed,
    went away or was renamed since it was read (default: every file opened while ``watching``;
    ``before``: those files with the identities another process saw, ``seen()``);
    the output would not be what the input is."""
    if before is not None:
        paths = list(before)
    for p in (watched() if paths is None else paths):
        c = change(Path(p), None if before is None else before.get(p))
        if c is None:
            continue
        if c.renamed_to is not None:
            what = f"renamed to {Path(c.renamed_to).name} during the run (retention)"
        elif c.gone:
            what = VANISHED
        else:
            what = f"the file changed during the run ({c.detail()})"
        raise InputChangedError(f"{what}: {NOTHING_WRITTEN}", file=str(p))


def vanished(e: BaseException, inputs: Any) -> InputChangedError | None:
    """The writer's error for ``e`` when it is an input segment (one of ``inputs``) no longer
    found under its name: renamed by retention, or gone; None for anything else."""
    name = getattr(e, "filename", None)
    if not isinstance(e, FileNotFoundError) or name is None:
        return None
    wanted = {os.path.abspath(p) for p in inputs}
    if os.path.abspath(name) not in wanted or os.path.lexists(name):
        return None
    new = renamed(Path(name))
    what = VANISHED if new is None else f"renamed to {new.name} during the run (retention)"
    return InputChangedError(f"{what}: {NOTHING_WRITTEN}", file=str(name))


def vanished_under(e: BaseException, root: Any) -> InputChangedError | None:
    """``vanished`` for any file under the input ``root`` (a segment file or a folder a writer
    listed): the writers that take one INPUT and list its segments as they go."""
    name = getattr(e, "filename", None)
    if name is None or not isinstance(root, Path):
        return None
    top, path = os.path.abspath(root), os.path.abspath(name)
    if path != top and not path.startswith(top.rstrip(os.sep) + os.sep):
        return None
    return vanished(e, [name])


__all__ = ["Change", "Identity", "InputChangedError", "change", "follow", "opened", "renamed",
           "renamed_note", "require_unchanged", "vanished", "vanished_under", "watched", "watching"]
