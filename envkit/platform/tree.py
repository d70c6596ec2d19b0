"""A directory as the platform will store it: relative paths, sizes, SHA-256 and one digest.

Why digests of our own: the Files service lists path and size only (no hash, no mtime), so
"is this FileSet the package I have?" can only be answered by a digest envkit computes and
keeps in the FileSet's ``custom_fields``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from envkit.platform.errors import PlatformError

__all__ = ["Tree", "TreeFile", "scan_tree"]

_CHUNK = 1 << 20


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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _walk(root: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        base = Path(dirpath).relative_to(root)
        found.extend((base / name).as_posix() for name in filenames)
    return sorted(found)


def scan_tree(root: Path, purpose: str) -> Tree:
    """Hash every regular file under ``root`` (``validate`` has already vetted the layout).

    :raises PlatformError: a file cannot be read (one line, nothing uploaded yet).
    """
    files = []
    try:
        for rel in _walk(root):
            path = root / rel
            if not path.is_file():  # a socket or FIFO; validate reports them (EK207)
                continue
            files.append(TreeFile(rel, path.stat().st_size, _sha256(path)))
    except OSError as exc:
        msg = f"cannot read {exc.filename or root}: {exc.strerror or exc}"
        raise PlatformError(msg) from None
    h = hashlib.sha256(f"envkit-tree-v1\n{purpose}\n".encode())
    for f in files:
        h.update(f"{f.path}\t{f.size}\t{f.sha256}\n".encode())
    return Tree(root=root, files=tuple(files), digest=h.hexdigest())
