"""Inputs identified: one system call per path, what a run read, looked for or listed."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from envkit.replay.store import LISTED, LSTAT, STAT, Input, identity_after, lstat_of

__all__ = ["identified"]


def identified(paths: Iterable[tuple[int, str | bytes]], listed: Iterable[str | bytes],
               modules: Iterable[object], seen: set[tuple[int, str | bytes]],
               scanned: Mapping[str | bytes, Sequence[os.DirEntry[Any]]] | None = None
               ) -> Iterator[Input]:
    """Each input not in ``seen`` with its identity now, one system call per path: a path
    looked at both ways (a package's files are listed, then opened: ~half the tree's 9,400
    inputs) is lstat'ed once (``identity_after``), and a path opened or stat'ed that is also
    an entry of a listed directory and no symlink is kept once, as the entry: its identity
    either way is the same, and the stored answer checks it once.

    ``scanned``: the entries a listing gave the run, by directory, when it was read to the
    end: those are its names (not listed again), and an entry's lstat is the one it holds
    (``os.DirEntry`` keeps the stat its reader took: the walk's of every file). Taken before
    the run read the file, it can only be older than the run's view: a file changed after it
    is a miss, never a stale answer.
    """
    listed = list(listed)
    lstats: dict[str | bytes, os.stat_result | None] = {}
    entries: list[tuple[int, str | bytes]] = []
    for directory in listed:
        kept = scanned.get(directory) if scanned is not None else None
        if kept is None:
            entries += [(LSTAT, os.path.join(directory, name)) for name in _names(directory)]
            continue
        for entry in kept:
            entries.append((LSTAT, entry.path))
            lstats[entry.path] = _lstat_of_entry(entry)
    fresh: list[tuple[int, str | bytes]] = []
    for key in [*paths, *((LISTED, d) for d in listed), *entries,
                *((STAT, f) for f in modules if isinstance(f, str))]:
        if key not in seen:  # the hooks kept out what is ours; entries may be ours
            seen.add(key)
            fresh.append(key)
    for how, path in fresh:
        if how == LSTAT and path not in lstats:
            lstats[path] = lstat_of(path)
    for how, path in fresh:
        if how == STAT and _plain(lstats.get(path)):
            continue  # its lstat is an input too, and the same identity
        yield how, path, identity_after(path, how, lstats)


def _plain(st: os.stat_result | None) -> bool:
    """An lstat result of a path that is no symlink: looked at following links or not, the
    path has the same identity (``identity_of``)."""
    return st is not None and not stat.S_ISLNK(st.st_mode)


def _lstat_of_entry(entry: os.DirEntry[Any]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:  # gone since it was listed
        return None


def _names(directory: str | bytes) -> list[Any]:
    try:
        return sorted(os.listdir(directory))
    except OSError:
        return []
