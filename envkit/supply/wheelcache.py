"""The content-addressed wheel stores, and how their files reach a package and uv.

Files are kept by sha256 (``<root>/<sha256[:2]>/<sha256>/<filename>``), read-only, in folders
made 0700. The download store (``wheels/``) is hard-linked into packages, so a package's
``wheels/`` is free and a warm build makes no network request; the offer store
(``find-links/``) is what Gym's installs are offered, one never-linked copy per wheel
(:func:`pool_wheels`).

Why a hit is hashed before it is used: a store may have been restored from elsewhere (a CI
cache) or written by someone else; its file is used only when its bytes are the sha256 it is
filed under (once per process and file while its stat holds), else it is fetched again.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.supply.cache import file_sha256

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["WheelCache", "link_or_copy", "link_wheels", "pool_wheels", "private_dirs", "yours"]


def yours(file: Path, store: Path) -> bool:
    """``file`` and every folder from ``store`` down to it belong to this user and no one else
    may write them (``envkit.supply.root``'s rule for entries that carry no hash to check)."""
    from envkit.supply.root import trusted_dir

    try:
        st = file.lstat()
    except OSError:
        return False
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return False
    folder, top = file.parent, Path(store)
    while True:
        if not trusted_dir(str(folder)):
            return False
        if folder == top or folder == folder.parent:
            return True
        folder = folder.parent


def private_dirs(folder: Path) -> None:
    """``folder`` and its missing parents, each made 0700 (``mkdir(parents=True)`` gives the
    parents the umask's mode)."""
    for path in (*reversed(Path(folder).parents), Path(folder)):
        if not path.is_dir():
            path.mkdir(mode=0o700, exist_ok=True)


class WheelCache:
    """Content-addressed wheel store: ``<root>/<sha256[:2]>/<sha256>/<filename>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @classmethod
    def under(cls, cache_root: Path) -> WheelCache:
        """The download store of the envkit cache at ``cache_root`` (its ``wheels/``)."""
        return cls(Path(cache_root) / "wheels")

    @classmethod
    def offer_under(cls, cache_root: Path) -> WheelCache:
        """The files uv is offered wheels by (``find-links/``; :func:`pool_wheels`)."""
        return cls(Path(cache_root) / "find-links")

    def path_for(self, sha256: str, filename: str) -> Path:
        return self.root / sha256[:2] / sha256 / filename

    def lookup(self, sha256: str | None, filename: str) -> Path | None:
        """The stored file of ``sha256``, when its bytes hash to it (see above)."""
        if sha256 is None:
            return None
        path = self.path_for(sha256, filename)
        if not path.is_file():
            return None
        try:
            return path if file_sha256(path) == sha256 else None
        except OSError:
            return None

    def store(self, source: Path, sha256: str, filename: str) -> Path:
        """Move ``source`` (already verified) into the store; first writer wins."""
        final = self.path_for(sha256, filename)
        private_dirs(final.parent)
        source.chmod(0o444)  # hard-linked into packages: nobody may edit the cached bytes
        source.replace(final)
        return final


def pool_wheels(wheels: Iterable[tuple[Path, str]], offer: WheelCache) -> list[Path]:
    """Each of ``wheels`` (a file and its SHA-256) as a file of ``offer``, the path uv is
    offered it by.

    Why: uv keys its unpacked copy of a find-links wheel by the file's URL and revalidates it
    by the file's ctime. ``offer`` holds one read-only copy per wheel's bytes that nothing
    hard-links (a link moves a file's ctime, and the download store's files are linked into
    every package), so uv unpacks each wheel once and every server venv links that one copy.
    """
    pooled = []
    for wheel, sha256 in wheels:
        found = offer.lookup(sha256, wheel.name)
        if found is None:
            private_dirs(offer.root)
            fd, tmp = tempfile.mkstemp(prefix=".offer-", suffix=".whl", dir=offer.root)
            os.close(fd)
            shutil.copyfile(wheel, tmp)  # a copy, never a link: see above
            found = offer.store(Path(tmp), sha256, wheel.name)
        pooled.append(found)
    return pooled


def link_or_copy(source: Path, target: Path) -> None:
    """Hard-link when the cache shares the filesystem (free), else copy."""
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def link_wheels(source: str, target: str) -> None:
    """A ``copytree`` copy function: wheels symlinked, everything else copied.

    Why: a Gym run works on its own copy of the package (Gym writes beside the configs), but
    a wheels-v1 package is mostly wheels (hundreds of MB), which nothing writes to in place.
    A symlink, not a hard link: a hard link moves the wheel's ctime, and the stores that spare the
    next run a read of every wheel (the tree stamps, the wheel facts) trust a file's stat only
    while its ctime is the same, so every run after a bring-up read all the wheels again.
    """
    if source.endswith(".whl"):
        Path(target).symlink_to(Path(source).absolute())
    else:
        shutil.copy2(source, target)
