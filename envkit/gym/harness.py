"""Stage Gym's built-in ``verifiers_agent`` harness so an adapter-wheels-v1 package runs offline.

On the platform the training image provides the harness, whose ``requirements.txt`` reaches
GitHub and the Prime hub: nothing of that is reachable here, nor what the package vendors. So
envkit copies the harness out of the ``nemo-gym`` wheel into the run's copy of the package (Gym
searches cwd before its built-ins) with requirements rewritten to the package's ``wheels/``.
The change is logged line by line; the package itself is never modified.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.utils import canonicalize_name

from envkit.errors import FailedError
from envkit.validators.config_paths import EK112
from envkit.validators.manifest import EK110
from envkit.validators.wheels.rules import EK403

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.model.package import Package

__all__ = [
    "BUILT_IN_HARNESSES",
    "HarnessError",
    "StagedHarness",
    "adapter_of",
    "find_built_in",
    "offline_requirements",
    "stage_harness",
    "vendored_pins",
]

log = logging.getLogger(__name__)

BUILT_IN_HARNESSES = ("verifiers_agent",)
"""Harnesses the training image provides (rule EK110); only these are rewritten."""
AGENT_TYPE = "responses_api_agents"
_VERIFIERS = "verifiers"


class HarnessError(FailedError, RuntimeError):
    """The harness cannot be staged (not in the Gym install, a vendored wheel missing).

    ``code`` is the likely EK rule.
    """

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class StagedHarness:
    agent: str
    path: Path
    pins: tuple[str, ...]
    dropped: tuple[str, ...]


def adapter_of(manifest: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(adapter.agent, metadata.vf_env_id)`` of an adapter-wheels-v1 manifest, else None."""
    if manifest.get("format") != "adapter-wheels-v1":
        return None
    adapter = manifest.get("adapter") or {}
    metadata = manifest.get("metadata") or {}
    if not isinstance(adapter, dict) or not isinstance(metadata, dict):
        return None
    return str(adapter.get("agent", "")), str(metadata.get("vf_env_id", ""))


def vendored_pins(wheels: Sequence[str], vf_env_id: str) -> tuple[str, ...]:
    """``name==version`` for the vendored ``verifiers`` and the env wheel (dist name from
    ``vf_env_id`` as the hub names it: ``-`` -> ``_``, lower case).

    >>> vendored_pins(["verifiers-0.3.1-py3-none-any.whl",
    ...                "reverse_text-0.1.0-py3-none-any.whl"], "reverse-text")
    ('verifiers==0.3.1', 'reverse-text==0.1.0')

    :raises HarnessError: either wheel is not in ``wheels/`` (the rule ``EK403.code`` names).
    """
    split = (w.removesuffix(".whl").split("-") for w in wheels if w.endswith(".whl"))
    found: dict[str, str] = {canonicalize_name(parts[0]): parts[1] for parts in split}
    pins = []
    for name in (_VERIFIERS, canonicalize_name(vf_env_id)):
        if name not in found:
            msg = (f"wheels/ has no `{name}` wheel; the verifiers_agent harness needs the "
                   "vendored verifiers and env wheel (re-run `envkit convert verifiers`)")
            raise HarnessError(msg, code=EK403.code)
        pins.append(f"{name}=={found[name]}")
    return tuple(pins)


def offline_requirements(original: str, find_links: Sequence[Path],
                         pins: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The harness's requirements with every unreachable line replaced by the vendored pins.

    Every line but blanks and comments goes: in Gym 0.7.0 each one needs GitHub, the hub index
    or Gym's source tree. What the harness needs at run time is ``verifiers`` + the env, which
    the package vendors; Gym itself adds ``nemo-gym==<version>`` and its head-server pins,
    which the converter co-resolved into ``wheels/``.

    >>> text, dropped = offline_requirements(
    ...     "verifiers @ git+https://x/v.git@v0.3.1\\nacereason-math\\n", [Path("/w")],
    ...     ["verifiers==0.3.1", "e==1"])
    >>> text.splitlines()
    ['--no-index', '--find-links /w', 'verifiers==0.3.1', 'e==1']
    >>> dropped
    ('verifiers @ git+https://x/v.git@v0.3.1', 'acereason-math')
    """
    stripped = (ln.strip() for ln in original.splitlines())
    dropped = tuple(ln for ln in stripped if ln and not ln.startswith("#"))
    lines = ["--no-index", *(f"--find-links {d}" for d in find_links), *pins]
    return "\n".join(lines) + "\n", dropped


def find_built_in(site_packages_root: Path, agent: str) -> Path:
    """The harness directory inside the Gym venv (``lib/python3.*/site-packages/...``).

    :raises HarnessError: the Gym install has no such built-in (EK110).
    """
    found = sorted(site_packages_root.glob(f"lib/python3*/site-packages/{AGENT_TYPE}/{agent}"))
    if not found or not (found[0] / "requirements.txt").is_file():
        msg = f"the Gym install at {site_packages_root} has no built-in `{agent}` harness"
        raise HarnessError(msg, code=EK110.code)
    return found[0]


def stage_harness(gym_root: Path, work: Path, package: Package,
                  find_links: Sequence[Path] | None = None) -> StagedHarness | None:
    """Copy the built-in harness into ``work`` (a copy of ``package``) with offline
    requirements; None when the package is not an adapter package on a built-in harness.
    ``find_links``: where its install finds the vendored wheels (default ``work/wheels``).

    :raises HarnessError: the harness or a vendored wheel is missing.
    """
    adapter = adapter_of(package.manifest_data)
    if adapter is None or adapter[0] not in BUILT_IN_HARNESSES:
        return None
    agent, vf_env_id = adapter
    dest = work / AGENT_TYPE / agent
    if dest.exists():
        msg = f"{dest.relative_to(work)} already exists in the package; it would shadow the " \
              f"built-in `{agent}` harness"
        raise HarnessError(msg, code=EK112.code)
    wheels = work / "wheels"
    pins = vendored_pins(sorted(p.name for p in wheels.glob("*.whl")), vf_env_id)
    source = find_built_in(gym_root, agent)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "tests", "data"))
    text, dropped = offline_requirements((source / "requirements.txt").read_text(),
                                         [wheels] if find_links is None else find_links, pins)
    (dest / "requirements.txt").write_text(text)
    for line in dropped:
        log.warning("%s harness: dropped unreachable requirement %r", agent, line)
    log.warning("%s harness: installing %s from the package's wheels/ (--no-index)",
                agent, ", ".join(pins))
    return StagedHarness(agent, dest, pins, dropped)
