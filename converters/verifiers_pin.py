"""Does an environment's own ``verifiers`` requirement admit the harness's verifiers?

Gym's ``verifiers_agent`` installs one exact verifiers next to the environment. Why another pin
cannot run there decides what the user should do: an env needing verifiers >= 0.4 is written
for the v1-only API; one pinning an *older* release needs a newer release of the env.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["CLASSIC_MAX", "PinConflict", "conflict_in_uv_message", "pin_conflict",
           "requires_conflict"]

CLASSIC_MAX = Version("0.4")
"""verifiers 0.4 is v1-only: the classic ``vf.load_environment(env_id, **kwargs)`` and
``Environment.run_group`` that Gym 0.7.0's verifiers_agent calls are gone."""
_PROBES = ("0.1.0", "0.1.5", "0.1.9", "0.2.0", "0.3.0", "0.3.1", "0.3.2", "0.4.0", "0.5.0",
           "1.0.0", "2.0.0")
# uv: "Because my-env==0.1.0 depends on verifiers==0.1.5 and you require verifiers==0.3.1, ..."
_UV_DEPENDS = re.compile(r"(\S+) depends on verifiers((?:[<>=!~]=?[\w.*+!-]+,?)+)")


@dataclass(frozen=True, slots=True)
class PinConflict:
    """``requirement`` (the env's own line) excludes ``harness`` (Gym's verifiers)."""

    requirement: str
    harness: str
    kind: str
    """``v1`` (admits only >= 0.4), ``older`` (only releases before the harness's) or
    ``other``."""

    def message(self, who: str, gym_version: str) -> str:
        runs = f"Gym {gym_version}'s verifiers_agent runs verifiers {self.harness}"
        if self.kind == "v1":
            return (f"{who} is written for the verifiers v1 API (it requires "
                    f"{self.requirement!r}): verifiers 0.4 removed the classic API "
                    f"(vf.load_environment, Environment.run_group) that Gym {gym_version}'s "
                    f"verifiers_agent calls (it runs verifiers {self.harness})")
        if self.kind == "older":
            return (f"{who} pins an older verifiers ({self.requirement!r}); {runs}, which "
                    "that pin excludes")
        return f"{who} requires {self.requirement!r}, which excludes verifiers {self.harness}"

    def hint(self) -> str:
        if self.kind == "v1":
            return ("a verifiers >= 0.4 environment has no conversion route yet (Gym's "
                    "verifiers_agent runs only the classic API); to train on it, write a Gym "
                    "resources server for it and package that as wheels-v1")
        return (f"use a release of the environment whose verifiers requirement admits "
                f"{self.harness}, or relax the pin in its source and convert it with --source")


def pin_conflict(spec: SpecifierSet, harness: str, line: str) -> PinConflict | None:
    """The conflict ``spec`` has with ``harness``, classified by which releases it admits."""
    if not spec or spec.contains(harness, prereleases=True):
        return None
    probes = {Version(p) for p in _PROBES} | {_version(s.version) for s in spec} - {None}
    admitted = [v for v in probes if v is not None and spec.contains(v, prereleases=True)]
    if admitted and all(v >= CLASSIC_MAX for v in admitted):
        kind = "v1"
    elif admitted and all(v < Version(harness) for v in admitted):
        kind = "older"
    else:
        kind = "other"
    return PinConflict(line, harness, kind)


def requires_conflict(requires_dist: Iterable[str], harness: str) -> PinConflict | None:
    """The conflict of a wheel's own (non-extra) ``verifiers`` requirement, or None."""
    for line in requires_dist:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        own = canonicalize_name(req.name) == "verifiers" and "extra" not in str(req.marker or "")
        if own and (found := pin_conflict(req.specifier, harness, line)):
            return found
    return None


def conflict_in_uv_message(message: str, harness: str) -> tuple[str, PinConflict] | None:
    """``(who, conflict)`` when uv refused because a package pins another verifiers."""
    for who, text in _UV_DEPENDS.findall(message):
        try:
            spec = SpecifierSet(text.rstrip(","))
        except InvalidSpecifier:
            continue
        found = pin_conflict(spec, harness, f"verifiers{text.rstrip(',')}")
        if found:
            return who, found
    return None


def _version(text: str) -> Version | None:
    try:
        return Version(text.replace("*", "0"))
    except InvalidVersion:
        return None
