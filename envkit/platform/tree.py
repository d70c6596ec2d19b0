"""A directory as the platform will store it: relative paths, sizes, SHA-256 and one digest.

Why digests of our own: the Files service lists path and size only (no hash, no mtime), so
"is this FileSet the package I have?" can only be answered by a digest envkit computes and
keeps in the FileSet's ``custom_fields``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from envkit.platform.errors import PlatformError
from envkit.supply.atomic import write_text
from envkit.supply.cache import cache_root
from envkit.supply.wheelcache import sha256_file

__all__ = ["Tree", "TreeFile", "scan_tree"]


@dataclass(frozen=True)
class TreeFile:
    path: str  # POSIX, relative to the tree root
    size: int
    sha256: str


@dataclass(frozen=True)
class Tree:
    root: Path
    files: tuple[TreeFile, ...]
    digest: str  # sha256 over purpose and every (path, size, sha256), in path order

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def _walk(root: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        base = Path(dirpath).relative_to(root)
        found.extend((base / name).as_posix() for name in filenames)
    return sorted(found)


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


def _hash_file(path: Path, rel: str, cache: dict[str, list], fresh: dict[str, list]) -> TreeFile:
    """SHA-256, reused from the last run when size, mtime and inode are unchanged.

    Why: a resubmit of an unchanged 400 MB package should cost a stat per file, not a re-read.
    """
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
    hit = cache.get(rel)
    digest = hit[3] if hit and hit[:3] == stamp else sha256_file(path)
    fresh[rel] = [*stamp, digest]
    return TreeFile(rel, st.st_size, digest)


def scan_tree(root: Path, purpose: str) -> Tree:
    """Hash every regular file under ``root`` (``validate`` has already vetted the layout).

    :raises PlatformError: a file cannot be read (one line, nothing uploaded yet).
    """
    files = []
    cache_path = _cache_file(root)
    cache, fresh = _load_cache(cache_path), {}
    try:
        for rel in _walk(root):
            path = root / rel
            if not path.is_file():  # a socket or FIFO; validate reports them (EK207)
                continue
            files.append(_hash_file(path, rel, cache, fresh))
    except OSError as exc:
        msg = f"cannot read {exc.filename or root}: {exc.strerror or exc}"
        raise PlatformError(msg) from None
    if fresh != cache:
        _save_cache(cache_path, fresh)
    h = hashlib.sha256(f"envkit-tree-v1\n{purpose}\n".encode())
    for f in files:
        h.update(f"{f.path}\t{f.size}\t{f.sha256}\n".encode())
    return Tree(root=root, files=tuple(files), digest=h.hexdigest())
