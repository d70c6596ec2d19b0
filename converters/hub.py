"""Prime Intellect hub facts: an environment ``owner/my-env`` is the distribution ``my_env`` on
the owner's PEP 503 index, a wheel whose module of the same name exposes ``load_environment``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envkit.errors import FailedError

__all__ = ["HUB_INDEX_TEMPLATE", "HubIdError", "HubRef", "parse_hub_id"]

HUB_INDEX_TEMPLATE = "https://hub.primeintellect.ai/{owner}/simple/"
_PART = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


class HubIdError(FailedError, ValueError):
    """The hub id is not ``owner/name``."""


@dataclass(frozen=True, slots=True)
class HubRef:
    owner: str
    name: str
    """The environment's slug as the hub shows it, e.g. ``reverse-text``."""

    @property
    def hub_id(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def dist_name(self) -> str:
        return self.name.replace("-", "_").lower()

    @property
    def module(self) -> str:
        """The import name verifiers' ``load_environment(env_id)`` derives (``-`` -> ``_``)."""
        return self.name.replace("-", "_")

    @property
    def vf_env_id(self) -> str:
        """What Gym's ``verifiers_agent`` passes to ``vf.load_environment``: the bare slug."""
        return self.name

    @property
    def index_url(self) -> str:
        return HUB_INDEX_TEMPLATE.format(owner=self.owner)

    def requirement(self, version: str | None) -> str:
        return f"{self.dist_name}=={version}" if version else self.dist_name


def parse_hub_id(value: str) -> HubRef:
    """``owner/name`` -> HubRef.

    :raises HubIdError: not exactly two non-empty parts of letters, digits, ``.``, ``_``, ``-``.
    """
    parts = value.strip().split("/")
    if len(parts) != 2 or not all(_PART.fullmatch(p) for p in parts):
        msg = f"--hub-id must look like owner/name (e.g. primeintellect/ascii-tree), not {value!r}"
        raise HubIdError(msg)
    return HubRef(owner=parts[0], name=parts[1])
