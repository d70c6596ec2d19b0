"""The content-addressed wheel store, and how its files reach a package.

Files are kept by sha256 (``<root>/<sha256[:2]>/<sha256>/<filename>``), read-only, so a
package's ``wheels/`` hard-links them for free and a warm build makes no network request.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["WheelCache", "link_or_copy", "link_wheels"]



class WheelCache:
    """Content-addressed wheel store: ``<root>/<sha256[:2]>/<sha256>/<filename>``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

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
