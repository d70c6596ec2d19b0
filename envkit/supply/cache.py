"""Where envkit keeps downloads and venvs between runs: ``$ENVKIT_CACHE_DIR`` or the XDG cache,
and the content keys its entries are named by."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.model.tree import sha256_file
from envkit.supply.root import cache_dir, read_entry, write_entry

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["RACY_S", "cache_root", "content_key", "digests_key", "entry_name", "file_sha256",
           "load_entry", "store_entry", "uv_cache_under"]

RACY_S = 2.0
"""A file changed this recently is read but what was learnt from it is not stored (git's
"racily clean" case: a write in the same timestamp tick as the read would leave the stat
unchanged). The wheel-facts and tree-stamps stores both wait it out."""


def cache_root() -> Path:
    """:func:`envkit.supply.root.cache_dir` as a path."""
    return Path(cache_dir())


def entry_name(ident: str) -> str:
    """The entry a store keeps what it knows of ``ident`` under (a SHA-256 prefix, fanned out
    by its first two digits)."""
    key = hashlib.sha256(ident.encode()).hexdigest()[:32]
    return f"{key[:2]}/{key}.json"


def store_entry(store: Path, rel: str, value: object) -> None:
    """Write ``value`` as JSON to entry ``rel`` of ``store``, whole or not at all, sealed and
    private (:func:`envkit.supply.root.write_entry`); no ``tempfile``: validate's stores write
    here, and its start-up does not import it."""
    write_entry(str(store), rel, json.dumps(value, separators=(",", ":")).encode())


def load_entry(store: Path, rel: str) -> Any:
    """The JSON value of entry ``rel`` of ``store`` when it is this user's own, sealed by this
    user's key (:func:`envkit.supply.root.read_entry`); None: a miss."""
    data = read_entry(str(store), rel)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:  # not JSON, or not UTF-8
        return None


def uv_cache_under(root: Path) -> Path:
    """The uv cache of cache root ``root``: the builder's resolutions and downloads, and the
    unpacked wheels every server venv hard-links.

    Why under ``root``, not uv's default: uv keys its unpacked copy of a find-links wheel by
    the file's path, and envkit offers wheels from ``root``'s store; in uv's shared cache those
    copies outlived the store. Here they go with it, on the filesystem of the venvs that link
    them.
    """
    return Path(root) / "uv"


def content_key(parts: Iterable[str], files: Iterable[tuple[str, Path]]) -> str:
    """sha256 over ``parts`` and each ``(name, file)``'s name and bytes; 16 hex chars.

    Why names and bytes, not mtimes: a key must be the same on another checkout of the same
    files (a rebuilt package, a copied tree) and differ for one changed byte. ``files`` are
    sorted by name here, so the caller's order changes nothing.
    """
    return digests_key(parts, ((name, file_sha256(path)) for name, path in files))


def digests_key(parts: Iterable[str], digests: Iterable[tuple[str, str]]) -> str:
    """:func:`content_key` of files whose SHA-256 the caller has (``(name, hex digest)``), the
    same key as for their bytes: a caller that keeps hashes between runs reads no file."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    for name, sha256 in sorted(digests):
        digest.update(name.encode() + b"\0")
        digest.update(bytes.fromhex(sha256))
    return digest.hexdigest()[:16]


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
