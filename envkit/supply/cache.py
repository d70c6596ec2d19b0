"""Where envkit keeps downloads and venvs between runs: ``$ENVKIT_CACHE_DIR`` or the XDG cache."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    if env := os.environ.get("ENVKIT_CACHE_DIR"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "envkit"
