"""The walk of a package directory: every entry, classified from its directory entry, without
following a symlink (a loop or a link out of the tree can neither hang nor escape it)."""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.tree import FileStat

__all__ = ["MAX_ENTRIES", "Errors", "FileEntry", "Kind", "walk"]

MAX_ENTRIES = 200_000
"""A package with more entries than this is not walked further (reported, not crashed)."""

Kind = Literal["file", "dir", "symlink", "other"]
Errors = list[tuple[str, str]]
"""``(path, reason)`` of what the package reader could not read (``Package.read_errors``)."""


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One path in the package, as seen without following symlinks."""

    path: str
    kind: Kind
    size: int = 0
    link_target: str | None = None
    """Raw ``readlink`` value for symlinks."""
    link_inside: bool | None = None
    """For symlinks: whether the fully resolved target stays inside the package root."""
    stat: FileStat | None = field(default=None, compare=False, repr=False)
    """For regular files: the walk's stat, so the package digest does not stat it again."""


def walk(root: Path) -> tuple[dict[str, FileEntry], Errors, bool]:
    """``(entries by relative path, what could not be read, whether it stopped at
    MAX_ENTRIES)``."""
    entries: dict[str, FileEntry] = {}
    errors: Errors = []
    real_root = os.path.realpath(root)
    base = os.fspath(root)
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(f"{base}/{rel}" if rel else base) as it:
                children = list(it)
        except OSError as exc:
            errors.append((rel, exc.strerror or str(exc)))
            continue
        for child in children:
            path = f"{rel}/{child.name}" if rel else child.name
            if len(entries) >= MAX_ENTRIES:
                return entries, errors, True
            entry = _entry(child, path, real_root, errors)
            entries[path] = entry
            if entry.kind == "dir":
                stack.append(path)
    return entries, errors, False


def _entry(child: os.DirEntry[str], path: str, real_root: str, errors: Errors) -> FileEntry:
    """Classify from the directory entry's type (no syscall on most file systems); only
    regular files are stat'ed, for their size and the package digest's quick check."""
    try:
        if child.is_symlink():
            return _symlink_entry(child.path, path, real_root, errors)
        if child.is_dir(follow_symlinks=False):
            return FileEntry(path, "dir")
        if child.is_file(follow_symlinks=False):
            st = child.stat(follow_symlinks=False)
            return FileEntry(path, "file", size=st.st_size,
                             stat=(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                                   st.st_dev))
    except OSError as exc:
        errors.append((path, exc.strerror or str(exc)))
    return FileEntry(path, "other")


def _symlink_entry(full: str, path: str, real_root: str, errors: Errors) -> FileEntry:
    """Resolve a link without following it during the walk (``_entry`` records the error of
    one that cannot be read). Non-strict ``realpath`` cannot hang on loops; a second, strict
    pass tells loops and dangling links (unreadable on the cluster too) apart from good ones,
    but only for links that stay inside."""
    target = os.readlink(full)  # noqa: PTH115 - str in, str out, no Path round trip
    resolved = os.path.realpath(full)
    inside = resolved == real_root or resolved.startswith(real_root + os.sep)
    if inside:
        try:
            os.path.realpath(full, strict=True)
        except OSError as exc:
            reason = "symlink loop" if exc.errno == errno.ELOOP else "dangling symlink"
            errors.append((path, f"{reason} (-> {target!r})"))
    return FileEntry(path, "symlink", link_target=target, link_inside=inside)
