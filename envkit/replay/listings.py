"""Directory listings a recorded run read to the end, kept with their entries.

Why: a listed directory's entries are inputs (a file added to a package changes its report),
and identifying them after the run meant listing each directory again and lstat'ing each entry
(1,461 directories and ~4,000 entries over Gym's 145 packages: ~16 ms per core). The entries
``os.scandir`` gave the run already name them, and an ``os.DirEntry`` keeps the stat its reader
took (the walk's, of every file), so identification asks them instead
(``envkit.replay.identify``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Listings", "keeping_listings"]

Listings = dict[Any, list[os.DirEntry[Any]]]


def keeping_listings(real: Callable[..., Iterator[os.DirEntry[Any]]],
                     into: Listings) -> Callable[..., Iterator[os.DirEntry[Any]]]:
    """``os.scandir`` whose listings read to the end are kept in ``into``, by the directory as
    the run named it (``os.fspath``: the audit event's spelling); a listing given a file
    descriptor, or left before its end, is not kept (its names are listed again)."""

    def scandir(path: Any = None) -> Iterator[os.DirEntry[Any]]:
        listing = real(path)
        if path is None or isinstance(path, (str, bytes, os.PathLike)):
            return _Kept(listing, into, "." if path is None else os.fspath(path))
        return listing

    return scandir


class _Kept:
    """The iterator ``os.scandir`` returned, keeping each entry as it passes (a context
    manager and ``close`` as the original)."""

    __slots__ = ("_entries", "_into", "_key", "_listing")

    def __init__(self, listing: Iterator[os.DirEntry[Any]], into: Listings, key: Any) -> None:
        self._listing, self._into, self._key = listing, into, key
        self._entries: list[os.DirEntry[Any]] = []

    def __iter__(self) -> _Kept:
        return self

    def __next__(self) -> os.DirEntry[Any]:
        try:
            entry = next(self._listing)
        except StopIteration:
            self._into[self._key] = self._entries
            raise
        self._entries.append(entry)
        return entry

    def __enter__(self) -> _Kept:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._listing.close()  # type: ignore[attr-defined]
