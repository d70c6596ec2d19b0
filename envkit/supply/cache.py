"""Where envkit keeps downloads and venvs between runs: ``$ENVKIT_CACHE_DIR`` or the XDG cache,
and the content keys its entries are named by."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["cache_root", "content_key"]


def cache_root() -> Path:
    if env := os.environ.get("ENVKIT_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envkit"


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
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()
