"""Where envkit keeps what it caches: ``$ENVKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/envkit``,
else ``~/.cache/envkit``. A string, with nothing but ``os`` imported: the replayed
``envkit validate`` (``envkit.replay``) looks here before anything else is imported."""

from __future__ import annotations

import os

__all__ = ["cache_dir"]


def cache_dir() -> str:
    if env := os.environ.get("ENVKIT_CACHE_DIR"):
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "envkit")
