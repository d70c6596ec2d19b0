"""Each tree's last scan, kept between runs: every file's identity and SHA-256, so the digest of
an unchanged tree costs a stat per file, not a read of every byte (git's index, for the same
reason): a wheels-v1 package is mostly wheels, and hashing them all would be most of each run.

The identity is what ``envkit.model.tree.hash_files`` compares (``Stamps``). A file changed
within ``RACY_S`` of the scan is hashed but not kept (its stat may not show the next write),
nor is one under ``MIN_BYTES``. One entry per user, tree (its root's device and inode: the
same directory by any path, for one stat) and purpose, sealed by this user's key
(``envkit.supply.root``): one that is not this user's own or lacks the seal is a miss.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from envkit.supply.cache import RACY_S, entry_name, load_entry, store_entry

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from envkit.model.tree import Stamps, Tree

__all__ = ["MIN_BYTES", "RACY_S", "rescan"]

MIN_BYTES = 64 * 1024
"""Smaller files are hashed again each run: reading one costs about what its share of writing
the store costs, and a tree of small files (most packages: configs, a server, a README) then
writes nothing at all."""

_FIELDS = 5
"""Identity fields before the hash in a stamp (``envkit.model.tree.Stamps``)."""

_VERSION = "3"
"""Part of every key: entries of an older layout are never read."""


def rescan(root: Path, purpose: str, scan: Callable[[Stamps], Tree], store: Path) -> Tree:
    """``scan(stamps)`` with the stamps its last run under ``store`` left for ``root`` and
    ``purpose``; what it saw is kept for the next, but for files too new to trust or too small
    to be worth it.

    :raises OSError: what ``scan`` raises (a file that cannot be read).
    """
    try:
        st = root.stat()
    except OSError:
        return scan({})  # raises what a scan of a missing root raises, or finds nothing
    rel = entry_name(f"{_VERSION}\0{os.geteuid()}\0{purpose}\0{st.st_dev}:{st.st_ino}")
    old = _load(store, rel)
    tree = scan(old)
    settled = time.time_ns() - int(RACY_S * 1e9)
    keep = {rel: stamp for rel, stamp in tree.stamps.items()
            if stamp[0] >= MIN_BYTES and max(stamp[1], stamp[2]) < settled}
    if keep != old:
        store_entry(store, rel, keep)
    return tree


def _load(store: Path, rel: str) -> Stamps:
    raw = load_entry(store, rel)
    if not isinstance(raw, dict):
        return {}
    return {rel: stamp for rel, stamp in raw.items() if _stamp(stamp)}


def _stamp(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == _FIELDS + 1
            and all(type(v) is int for v in value[:_FIELDS]) and isinstance(value[-1], str)
            and len(value[-1]) == 64)
