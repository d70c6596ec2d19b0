"""A directory as the platform will store it: relative paths, sizes, SHA-256 and one digest.

Why digests of our own: the Files service lists path and size only (no hash, no mtime), so
"is this FileSet the package I have?" can only be answered by a digest envkit computes and
keeps in the FileSet's ``custom_fields``. The digest is ``envkit.model.tree``'s, the one a
package's provenance record uses too; the hashes of unchanged files come from the stamps
validate keeps too (``envkit.supply.treestamps``); this module adds the platform's error type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.model.tree import Tree, TreeFile, hash_files, walk_files
from envkit.platform.errors import PlatformError
from envkit.supply.cache import cache_root
from envkit.supply.treestamps import rescan

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["Tree", "TreeFile", "scan_tree"]


def scan_tree(root: Path, purpose: str) -> Tree:
    """Hash every regular file under ``root`` (``validate`` has already vetted the layout),
    reusing the last scan's hashes of files whose identity is unchanged
    (``envkit.supply.treestamps``).

    :raises PlatformError: a file cannot be read (one line, nothing uploaded yet).
    """
    try:
        return rescan(root, purpose, lambda stamps: hash_files(root, walk_files(root), purpose,
                                                               stamps),
                      cache_root() / "tree-stamps")
    except OSError as exc:
        msg = f"cannot read {exc.filename or root}: {exc.strerror or exc}"
        raise PlatformError(msg) from None
