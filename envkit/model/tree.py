"""One digest for a directory of files: relative paths, sizes, SHA-256, in path order.

Why one function for two uses: the platform names a content-addressed FileSet by this digest
(``envkit.platform.filesets``), and a provenance record (``envkit.model.provenance``) pins a
package's files with it. No timestamps, owners or modes go in, and the ``purpose`` is hashed
first, so a package and a dataset with equal files never share one.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["FileStat", "Stamps", "Tree", "TreeFile", "hash_files", "sha256_file",
           "tree_digest", "walk_files"]

_NO_FILE = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)
"""What ``Path.is_file`` reads as "not a file" rather than raising."""

Stamps = dict[str, list[Any]]
"""``rel -> [size, mtime_ns, ctime_ns, inode, device, sha256]`` of the last scan: git's index
check, then the file's hash. The ctime is what no one can set: a same-size rewrite whose mtime
was put back still moves it, so EK209 sees the edit."""

FileStat = tuple[int, int, int, int, int]
"""``(size, mtime_ns, ctime_ns, inode, device)`` of a regular file: a stamp without its hash."""


@dataclass(frozen=True, slots=True)
class TreeFile:
    path: str  # POSIX, relative to the tree root
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Tree:
    root: Path
    files: tuple[TreeFile, ...]
    digest: str  # sha256 over purpose and every (path, size, sha256), in path order
    stamps: Stamps = field(default_factory=dict, compare=False, repr=False)
    """What this scan saw, for the caller to keep for the next one."""


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The file's SHA-256, hex (wheel pins, FileSet entries, provenance: one function).

    ``os.read``, no buffered file object: a small file is one read. A larger one is read on
    into one buffer (``os.readv``): a new ``bytes`` per piece costs a page fault per page.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        digest = hashlib.sha256()
        head = os.read(fd, _HEAD)
        digest.update(head)
        if len(head) == _HEAD:
            _rest_into(fd, digest)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _rest_into(fd: int, digest: Any) -> None:
    """The rest of ``fd`` into ``digest``, through one buffer (``os.read`` where there is no
    ``os.readv``)."""
    if not hasattr(os, "readv"):
        while piece := os.read(fd, _PIECE):
            digest.update(piece)
        return
    buffer = bytearray(_PIECE)
    view = memoryview(buffer)
    while size := os.readv(fd, (buffer,)):
        digest.update(view[:size])


_HEAD = 1 << 16
_PIECE = 1 << 20


def walk_files(root: Path) -> list[str]:
    """Every non-directory name under ``root`` (links to directories are not entered)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        base = Path(dirpath).relative_to(root)
        found.extend((base / name).as_posix() for name in filenames)
    return sorted(found)


def tree_digest(files: Iterable[TreeFile], purpose: str) -> str:
    """The digest of ``files`` (sorted here, so callers need not) for ``purpose``."""
    h = hashlib.sha256(f"envkit-tree-v1\n{purpose}\n".encode())
    for f in sorted(files, key=lambda f: f.path):
        h.update(f"{f.path}\t{f.size}\t{f.sha256}\n".encode())
    return h.hexdigest()


def hash_files(root: Path, rels: Iterable[str], purpose: str,
               stamps: Mapping[str, list[Any]] | None = None,
               seen: Mapping[str, FileStat | None] | None = None,
               read: Mapping[str, str] | None = None) -> Tree:
    """Hash ``rels`` under ``root``; a file whose stamp matches ``stamps`` is not re-read
    (``envkit.supply.treestamps`` keeps the stamps between runs).

    Entries that are not regular files (after following a link, as an upload would) are
    skipped. ``seen``: the caller's stat of files it found to be regular, not taken again.
    ``read``: the SHA-256 of files the caller has just read whole, so none is opened twice.

    :raises OSError: a file cannot be stat'ed or read.
    """
    old = stamps or {}
    fresh: Stamps = {}
    files = []
    base = os.fspath(root)
    known = seen or {}
    done = read or {}
    for rel in sorted(rels):
        path = f"{base}/{rel}"  # no Path built: validate hashes thousands
        stamp = known.get(rel)
        if stamp is None:
            try:
                st = os.stat(path)  # noqa: PTH116 - a str, as built above
            except OSError as exc:  # a dangling or looping link: no file, as Path.is_file says
                if exc.errno in _NO_FILE:
                    continue
                raise
            if not stat.S_ISREG(st.st_mode):  # a socket or FIFO; validate reports them (EK207)
                continue
            stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
        hit = old.get(rel)
        digest = (hit[5] if hit and tuple(hit[:5]) == stamp
                  else done.get(rel) or sha256_file(path))
        fresh[rel] = [*stamp, digest]
        files.append(TreeFile(rel, stamp[0], digest))
    return Tree(root=root, files=tuple(files), digest=tree_digest(files, purpose), stamps=fresh)
