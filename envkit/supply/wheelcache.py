"""The content-addressed wheel store, and how its files reach a package.

Files are kept by sha256 (``<root>/<sha256[:2]>/<sha256>/<filename>``), read-only, so a
package's ``wheels/`` hard-links them for free and a warm build makes no network request.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["WheelCache", "link_or_copy", "link_wheels", "pool_wheels"]



class WheelCache:
    """Content-addressed wheel store: ``<root>/<sha256[:2]>/<sha256>/<filename>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @classmethod
    def under(cls, cache_root: Path) -> WheelCache:
        """The store of the envkit cache at ``cache_root`` (its ``wheels/`` folder)."""
        return cls(Path(cache_root) / "wheels")

    def path_for(self, sha256: str, filename: str) -> Path:
        return self.root / sha256[:2] / sha256 / filename

    def lookup(self, sha256: str | None, filename: str) -> Path | None:
        if sha256 is None:
            return None
        path = self.path_for(sha256, filename)
        return path if path.is_file() else None

    def store(self, source: Path, sha256: str, filename: str) -> Path:
        """Move ``source`` (already verified) into the store; first writer wins."""
        final = self.path_for(sha256, filename)
        final.parent.mkdir(parents=True, exist_ok=True)
        source.chmod(0o444)  # hard-linked into packages: nobody may edit the cached bytes
        source.replace(final)
        return final


def pool_wheels(wheels: Iterable[Path], cache: WheelCache) -> list[Path]:
    """Each of ``wheels`` as a file of the store: the path uv is offered it by.

    Why: uv keys its unpacked copy of a find-links wheel by the file's URL. Offered from a
    run's own copy of ``wheels/``, every new venv tree unpacks the whole closure again under a
    new URL, and that copy outlives the tree in uv's cache (about 1 GB per wheels-v1 package,
    never reclaimed). Offered from the store, a wheel is unpacked once and every server venv of
    every package hard-links that one copy. The files are the same bytes, so what Gym installs
    is what ``wheels/`` holds.

    A wheel the store already holds (the builder hard-links its files into ``wheels/``) is
    found by inode, without reading it; any other is hashed and copied in, read-only and
    atomically (first writer wins).
    """
    pooled = []
    for wheel in wheels:
        stored = _stored_inode(wheel, cache) or _adopt(wheel, cache)
        pooled.append(stored)
    return pooled


def _stored_inode(wheel: Path, cache: WheelCache) -> Path | None:
    """The store's file that *is* ``wheel`` (same inode), if any."""
    for candidate in cache.root.glob(f"??/*/{glob.escape(wheel.name)}"):
        try:
            if candidate.samefile(wheel):
                return candidate
        except OSError:
            continue
    return None


def _adopt(wheel: Path, cache: WheelCache) -> Path:
    digest = hashlib.sha256()
    with wheel.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    sha256 = digest.hexdigest()
    if found := cache.lookup(sha256, wheel.name):
        return found
    cache.root.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".adopt-", suffix=".whl", dir=cache.root)
    os.close(fd)
    shutil.copyfile(wheel, tmp)
    return cache.store(Path(tmp), sha256, wheel.name)


def link_or_copy(source: Path, target: Path) -> None:
    """Hard-link when the cache shares the filesystem (free), else copy."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def link_wheels(source: str, target: str) -> None:
    """A ``copytree`` copy function: wheels hard-linked, everything else copied.

    Why: a Gym run works on its own copy of the package (Gym writes beside the configs), but
    a wheels-v1 package is mostly wheels (hundreds of MB), which nothing writes to in place;
    a link makes each run's copy free where the cache shares the package's filesystem.
    """
    if source.endswith(".whl"):
        try:
            os.link(source, target)
        except OSError:
            pass
        else:
            return
    shutil.copy2(source, target)
