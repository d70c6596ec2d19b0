"""Where envkit keeps downloads and venvs between runs: ``$ENVKIT_CACHE_DIR`` or the XDG cache,
and the content keys its entries are named by."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.model.tree import sha256_file
from envkit.supply.root import cache_dir

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["RACY_S", "cache_root", "content_key", "file_sha256", "store_entry", "uv_cache_under"]

RACY_S = 2.0
"""A file changed this recently is read but what was learnt from it is not stored (git's
"racily clean" case: a write in the same timestamp tick as the read would leave the stat
unchanged). The wheel-facts and tree-stamps stores both wait it out."""


def cache_root() -> Path:
    """:func:`envkit.supply.root.cache_dir` as a path."""
    return Path(cache_dir())


def store_entry(entry: Path, text: str) -> None:
    """Write a cache entry whole or not at all (a reader never sees half a file); a cache that
    cannot be written costs nothing but the speed. No ``tempfile``: validate's stores write
    here, and its start-up does not import it; the bytes go through one descriptor and the
    directory is made only when it is missing (a first run writes a stamp per tree)."""
    tmp = f"{entry.parent}/.{entry.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    data = text.encode()
    try:
        try:
            fd = os.open(tmp, _NEW_FILE, 0o666)
        except FileNotFoundError:
            entry.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, _NEW_FILE, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, entry)  # noqa: PTH105 - a str: no Path built per entry
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # noqa: PTH108 - the same str


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def uv_cache_under(root: Path) -> Path:
    """The uv cache of cache root ``root``: the builder's resolutions and downloads, and the
    unpacked wheels every server venv hard-links.

    Why under ``root``, not uv's default: uv keys its unpacked copy of a find-links wheel by
    the file's path, and envkit offers wheels from ``root``'s store. In uv's shared cache those
    copies outlived a ``--cache-dir`` that was removed (about 1 GB per wheels-v1 closure, never
    reclaimed); here they go with it, and sit on the same filesystem as the venvs that link them.
    """
    return Path(root) / "uv"


def content_key(parts: Iterable[str], files: Iterable[tuple[str, Path]]) -> str:
    """sha256 over ``parts`` and each ``(name, file)``'s name and bytes; 16 hex chars.

    Why names and bytes, not mtimes: a key must be the same on another checkout of the same
    files (a rebuilt package, a copied tree) and differ for one changed byte. ``files`` are
    sorted by name here, so the caller's order changes nothing.
    """
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    for name, path in sorted(files):
        digest.update(name.encode() + b"\0")
        digest.update(_file_digest(path))
    return digest.hexdigest()[:16]


def _file_digest(path: Path) -> bytes:
    return bytes.fromhex(file_sha256(path))


def file_sha256(path: Path) -> str:
    """The sha256 of ``path``'s bytes, read once per process while its stat is unchanged.

    Why the memo: a run keys its venvs by ``wheels/``'s bytes and then offers the same files
    to uv by content (``envkit.supply.wheelcache.pool_wheels``); hundreds of MB read twice.
    """
    st = path.stat()
    return _sha256_of(str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _sha256_of(path: str, _dev: int, _ino: int, _size: int, _mtime_ns: int) -> str:
    return sha256_file(Path(path))
