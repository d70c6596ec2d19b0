"""Run uv/pip as if this machine had no user configuration.

Users' ``pip.conf``, ``uv.toml`` and ``PIP_*``/``UV_*`` variables add indexes, constraints and
find-links; a build that silently depends on them is not reproducible elsewhere.
"""

from __future__ import annotations

import os

__all__ = ["isolated_env"]

_KEEP_UV = ("UV_CACHE_DIR",)  # the cache location changes no result, only speed


def isolated_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without pip/uv configuration, pointing pip at no config file."""
    env = dict(os.environ if base is None else base)
    for key in list(env):
        if key.startswith(("PIP_", "UV_")) and key not in _KEEP_UV:
            del env[key]
    env["PIP_CONFIG_FILE"] = os.devnull
    env["UV_NO_CONFIG"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    return env
