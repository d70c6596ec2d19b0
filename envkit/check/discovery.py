"""Which packages a list of paths names: package directories, trees, or files inside packages.

Why a walk of its own: a repository holding many environments should be one ``envkit validate
.`` run, and a pre-commit hook hands over the files a commit touches, not package directories.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MANIFEST", "SKIPPED_DIRS", "Discovery", "discover"]

MANIFEST = "nemo-environment.yaml"
SKIPPED_DIRS = frozenset({".venv", "venv", "node_modules", "build", "dist", "__pycache__"})
"""Never packages, never holding ours; hidden directories are skipped too (``.git``)."""


@dataclass(frozen=True)
class Discovery:
    packages: tuple[Path, ...]
    """Package directories, in the order given (each once)."""
    unmatched_files: tuple[Path, ...] = ()
    """Files named on the command line that lie in no package (pre-commit passes every file)."""


def discover(paths: Sequence[Path], exclude: Sequence[str] = ()) -> Discovery:
    """Package directories for ``paths``.

    A directory holding ``nemo-environment.yaml`` is a package. Any other directory is a tree:
    every package below it (not descending into packages, hidden or ``SKIPPED_DIRS``
    directories, or ``exclude`` globs). A directory holding none stands for the package it lies
    in, else for itself, so that validation says why it is no package (EK100) rather than
    passing silently. A file stands for the package that contains it.
    """
    found: list[Path] = []
    unmatched: list[Path] = []
    for path in paths:
        if path.is_dir():
            below = [path] if (path / MANIFEST).is_file() else list(_walk(path, exclude))
            found += below or [_owning_package(path / MANIFEST) or path]
        else:
            owner = _owning_package(path)
            if owner is None:
                unmatched.append(path)
            elif not _excluded(owner, owner.name, exclude):
                found.append(owner)
    return Discovery(tuple(dict.fromkeys(found)), tuple(unmatched))


def _excluded(path: Path, name: str, exclude: Iterable[str]) -> bool:
    posix = path.as_posix()
    return any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(posix, g)
               or fnmatch.fnmatch(posix, f"*/{g.strip('/')}") for g in exclude)


def _walk(root: Path, exclude: Sequence[str]) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.startswith(".") or name in SKIPPED_DIRS:
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        sub = root / name
        if _excluded(sub, name, exclude):
            continue
        if (sub / MANIFEST).is_file():
            yield sub
        else:
            yield from _walk(sub, exclude)


def _owning_package(file: Path) -> Path | None:
    """The closest directory above ``file`` that holds a manifest (the manifest's own too)."""
    current = file.parent
    while True:
        if (current / MANIFEST).is_file():
            return current
        parent = current.parent
        if parent == current:
            return None
        current = parent
