"""Which packages a list of paths names: package directories, workspace members, or files.

A directory is a package when it holds ``nemo-environment.yaml``. Many packages in one run are
explicit, as uv and cargo name workspace members: ``packages = ["envs/*"]`` in a directory's
settings makes it a workspace root. Why not any tree: a directory holding a package one level
down is what an archive unpacked too deep looks like, and the platform rejects it; passing it
would be a false pass, so it is reported as no package (EK100).

A file stands for the package that contains it: a pre-commit hook hands over files.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from envkit.model.package import MANIFEST
from envkit.validate.settings import SettingsError, SettingsFiles, Workspace, workspace_at

__all__ = ["SKIPPED_DIRS", "Discovery", "discover", "is_package_root", "members",
           "owning_package", "packages_below"]

SKIPPED_DIRS = frozenset({".venv", "venv", "node_modules", "build", "dist", "__pycache__"})
"""Never packages, never holding ours; hidden directories are skipped too (``.git``)."""
WALK_LIMIT = 20_000
"""Directories ``packages_below`` looks at before it stops: a hint must not walk a home dir."""


def is_package_root(directory: Path) -> bool:
    """``directory`` holds a ``nemo-environment.yaml`` entry of any kind: a FIFO or a dangling
    symlink there is still the manifest, for the rules to report (EK101, EK207)."""
    return os.path.lexists(directory / MANIFEST)


class Discovery(NamedTuple):
    """What the paths on a command line stand for."""

    packages: tuple[Path, ...]
    """Directories to validate, in the order given (each once): packages, workspace members,
    and named directories that are neither (each is reported as no package, EK100)."""
    unmatched_files: tuple[Path, ...] = ()
    """Files named on the command line that lie in no package (pre-commit passes every file)."""


def discover(paths: Sequence[Path], exclude: Sequence[str] = (), *,
             isolated: bool = False, files: SettingsFiles | None = None) -> Discovery:
    """The directories ``paths`` stand for: a workspace root its members (``exclude`` globs
    dropped; not with ``isolated``), any other directory itself, a file its package.
    ``files``: the settings files the run has read (see ``settings_for``).

    :raises SettingsError: a workspace's configuration cannot be used, or it names a member
        that does not exist or no member at all.
    """
    found: list[Path] = []
    unmatched: list[Path] = []
    for path in paths:
        if path.is_dir():
            space = None if is_package_root(path) or isolated else workspace_at(path, files)
            found += [path] if space is None else members(space, exclude)
        else:
            owner = owning_package(path)
            if owner is None:
                unmatched.append(path)
            elif not _excluded(owner, owner.name, exclude):
                found.append(owner)
    return Discovery(tuple(dict.fromkeys(found)), tuple(unmatched))


def members(space: Workspace, exclude: Sequence[str] = ()) -> list[Path]:
    """The member directories of ``space``, pattern by pattern, each sorted, each once. As in
    uv and cargo, every matching directory is a member (one without a manifest is reported,
    EK100), a glob may match nothing, a literal path must exist.

    :raises SettingsError: a literal member that is no directory, or no member at all.
    """
    matched: list[Path] = []
    for pattern in space.patterns:
        if not any(c in pattern for c in "*?["):
            if not (space.root / pattern).is_dir():
                msg = (f"{space.config}: `packages` entry {pattern!r} is not a directory "
                       f"below {space.root}")
                raise SettingsError(msg)
            matched.append(space.root / pattern)
        else:
            matched += sorted(p for p in space.root.glob(pattern) if p.is_dir() and not any(
                part.startswith(".") or part in SKIPPED_DIRS
                for part in p.relative_to(space.root).parts))
    if not matched:
        patterns = ", ".join(repr(p) for p in space.patterns)
        msg = (f"{space.config}: `packages` ({patterns}) matches no directory: the workspace "
               "has nothing to validate")
        raise SettingsError(msg)
    return list(dict.fromkeys(m for m in matched if not _excluded(m, m.name, exclude)))


def _excluded(path: Path, name: str, exclude: Iterable[str]) -> bool:
    posix = path.as_posix()
    return any(fnmatch.fnmatch(name, g) or fnmatch.fnmatch(posix, g)
               or fnmatch.fnmatch(posix, f"*/{g.strip('/')}") for g in exclude)


def packages_below(root: Path, exclude: Sequence[str] = (), *,
                   limit: int = WALK_LIMIT) -> list[Path]:
    """Package directories below ``root`` (not descending into packages, hidden or
    ``SKIPPED_DIRS`` directories, or ``exclude`` globs), for a hint; at most ``limit``
    directories are looked at."""
    budget = [limit]
    return list(_walk(root, exclude, budget))


def _walk(root: Path, exclude: Sequence[str], budget: list[int]) -> Iterator[Path]:
    budget[0] -= 1
    if budget[0] < 0:
        return
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.startswith(".") or name in SKIPPED_DIRS or not entry.is_dir(follow_symlinks=False):
            continue
        sub = root / name
        if _excluded(sub, name, exclude):
            continue
        if is_package_root(sub):
            yield sub
        else:
            yield from _walk(sub, exclude, budget)


def owning_package(file: Path) -> Path | None:
    """The closest directory above ``file`` that holds a manifest (the manifest's own too)."""
    return next((parent for parent in file.parents if is_package_root(parent)), None)
