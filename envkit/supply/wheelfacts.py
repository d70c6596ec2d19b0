"""A wheel's archive facts kept between runs, keyed by the file's stat identity (as git's index
keeps a file's hash): reading the zip directory, METADATA and RECORD is most of an offline
closure check, and a wheelhouse rarely changes between two ``envkit validate`` runs.

The key is the user id and the file's device, inode, size, mtime and ctime, not its path: a
write, a rename over it or a ``touch`` makes a new key, and a new hard link moves the ctime, so
the file is read once more and every link to it (envkit links its download store's files into
every package) then shares one entry. Never stored: a ``--verify-hashes`` read (every byte is
to be read now) and a file changed within ``RACY_S`` (no one can set a ctime, so a later file
on a reused inode cannot match). Entries are sealed as ``envkit.supply.root`` says.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from envkit.model.wheelfile import (
    ARCHIVE_FACTS,
    WheelFile,
    from_filename,
    read_wheel,
    with_archive,
)
from envkit.supply.cache import RACY_S, entry_name, load_entry, store_entry

__all__ = ["RACY_S", "WheelFacts"]

_VERSION = "6"
_TUPLES = frozenset({"requires_dist", "provides_extra", "record_issues", "startup_code",
                     "secret_files"})


class WheelFacts:
    """``read_wheel`` that reads each unchanged wheel once: ``WheelFacts(store).read``."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self.hits = 0
        """Wheels answered from the store in this process (what a test or benchmark counts)."""

    def read(self, file: Path, rel: str | None = None, *, deep: bool = False) -> WheelFile:
        """``read_wheel(file, rel, deep=deep)``, from the store when the file is unchanged."""
        ident = None if deep else _identity(file)
        if ident is None:
            return read_wheel(file, rel, deep=deep)
        entry, changed = ident
        base = from_filename(file, rel)
        if base.error:
            return base
        facts = _load(self.store, entry)
        if facts is not None:
            self.hits += 1
            return replace(base, **facts)
        wheel = with_archive(base, file)  # the filename is parsed once
        if time.time() - changed >= RACY_S:
            store_entry(self.store, entry, {name: getattr(wheel, name) for name in ARCHIVE_FACTS})
        return wheel


def _identity(file: Path) -> tuple[str, float] | None:
    """The store entry of ``file`` as it is now, and when it last changed (the later of mtime
    and ctime); None when it cannot be stat'ed."""
    try:
        st = file.stat()
    except OSError:
        return None  # read_wheel reports it
    ident = (f"{_VERSION}\0{os.geteuid()}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}"
             f"\0{st.st_ctime_ns}")
    return entry_name(ident), max(st.st_mtime, st.st_ctime)


def _load(store: Path, rel: str) -> dict[str, Any] | None:
    raw = load_entry(store, rel)
    if not isinstance(raw, dict) or set(raw) != set(ARCHIVE_FACTS):
        return None
    facts: dict[str, Any] = {}
    for name, value in raw.items():
        if name in _TUPLES:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return None
            facts[name] = tuple(value)
        elif value is not None and not isinstance(value, str):
            return None
        else:
            facts[name] = value
    return facts


