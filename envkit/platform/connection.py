"""Where the platform is and who we are: flags, then ``NMP_*`` variables, then the CLI's context.

Resolved the way the platform's own ``nemo`` CLI does it, so a user who ran ``nemo auth login``
needs no extra setup: ``NMP_BASE_URL``/``NMP_ACCESS_TOKEN``/``NMP_WORKSPACE`` override the
active context of ``~/.config/nmp/config.yaml`` (``NMP_CURRENT_CONTEXT`` picks another one).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.model.yamlio import YamlReadError, read_mapping

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_BASE_URL", "Connection", "config_path", "resolve_connection"]

DEFAULT_BASE_URL = "http://127.0.0.1:8080"


@dataclass(frozen=True, slots=True)
class Connection:
    """``token`` is kept out of ``repr`` so a log line or traceback never shows it."""

    base_url: str
    workspace: str = "default"
    token: str | None = field(default=None, repr=False)
    ca_file: str | None = None

    @property
    def verify(self) -> bool | str:
        """TLS is always verified: against the context's CA bundle when it names one."""
        return self.ca_file or True


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if explicit := env.get("NMP_CONFIG_PATH"):
        return Path(explicit)
    return Path(env.get("HOME", str(Path.home())), ".config", "nmp", "config.yaml")


def _context(env: Mapping[str, str]) -> dict[str, Any]:
    """The active context resolved to ``{base_url, token, workspace, ca_file}``; {} when none."""
    try:
        data = read_mapping(config_path(env))
    except YamlReadError:  # unreadable, not YAML, empty or not a mapping: no context
        return {}
    name = env.get("NMP_CURRENT_CONTEXT") or data.get("current_context")
    ctx = _named(data.get("contexts"), name)
    cluster = _named(data.get("clusters"), ctx.get("cluster"))
    user = _named(data.get("users"), ctx.get("user"))
    return {
        "base_url": cluster.get("base_url"),
        "ca_file": cluster.get("certificate_authority"),
        "token": user.get("token"),
        "workspace": ctx.get("workspace"),
    }


def _named(items: Any, name: Any) -> dict[str, Any]:
    for item in items if isinstance(items, list) else ():
        if isinstance(item, dict) and item.get("name") == name:
            return item
    return {}


def resolve_connection(
    base_url: str | None = None,
    workspace: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Connection:
    """Flags win, then ``NMP_*`` variables, then the config context, then the local default."""
    env = os.environ if env is None else env
    ctx = _context(env)
    url = base_url or env.get("NMP_BASE_URL") or ctx.get("base_url") or DEFAULT_BASE_URL
    return Connection(
        base_url=str(url).rstrip("/"),
        workspace=workspace or env.get("NMP_WORKSPACE") or ctx.get("workspace") or "default",
        token=env.get("NMP_ACCESS_TOKEN") or ctx.get("token") or None,
        ca_file=ctx.get("ca_file"),
    )
