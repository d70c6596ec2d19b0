"""A directory as the platform will store it: relative paths, sizes, SHA-256 and one digest.

Why digests of our own: the Files service lists path and size only (no hash, no mtime), so
"is this FileSet the package I have?" can only be answered by a digest envkit computes and
keeps in the FileSet's ``custom_fields``. The digest is ``envkit.model.tree``'s, the one a
package's provenance record uses too; this module adds the on-disk stamp cache and the
platform's error type.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import TYPE_CHECKING

from envkit.model.tree import Tree, TreeFile, hash_files, walk_files
from envkit.platform.errors import PlatformError
from envkit.supply.atomic import write_text
from envkit.supply.cache import cache_root

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Tree", "TreeFile", "scan_tree"]


def _cache_file(root: Path) -> Path:
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:24]
    return cache_root() / "upload-digests" / f"{key}.json"


def _load_cache(path: Path) -> dict[str, list]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_cache(path: Path, data: dict[str, list]) -> None:
    """Best effort, atomic: a lost cache only costs a re-hash."""
    with contextlib.suppress(OSError):
        write_text(path, json.dumps(data))


def scan_tree(root: Path, purpose: str) -> Tree:
    """Hash every regular file under ``root`` (``validate`` has already vetted the layout),
    reusing the last scan's hashes of files whose size, mtime and inode are unchanged.

    :raises PlatformError: a file cannot be read (one line, nothing uploaded yet).
    """
    cache_path = _cache_file(root)
    cache = _load_cache(cache_path)
    try:
        tree = hash_files(root, walk_files(root), purpose, cache)
    except OSError as exc:
        msg = f"cannot read {exc.filename or root}: {exc.strerror or exc}"
        raise PlatformError(msg) from None
    if tree.stamps != cache:
        _save_cache(cache_path, tree.stamps)
    return tree
