"""Build a package's venvs ahead of its first bring-up: Gym's venv and every server venv.

Why: a login node or an image build has the network (or only ``wheels/``) and time; the node
that later runs the package may have neither. This is the set-up half of
:class:`~envkit.gym.servers.GymRuntime` (``prepare``), so the venvs land where a bring-up with
the same options looks for them. Nothing is started.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from envkit.gym.events import Fanout, RuntimeEvents
from envkit.gym.install import reusable
from envkit.gym.servers import GymRuntime
from envkit.gym.types import PolicyEndpoint, RuntimeOptions
from envkit.gym.venv import DEFAULT_GYM_VERSION, ensure_gym_venv
from envkit.validate.settings import Settings, settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.gym.venvsteps import VenvStep

__all__ = ["PrefetchResult", "prefetch", "prefetch_options"]

_NO_POLICY = PolicyEndpoint("http://127.0.0.1:9/v1", "unused", "unused")
"""What Gym's configs need as a policy to be read; ``gym env prefetch`` never calls it."""


@dataclass(frozen=True, slots=True)
class PrefetchResult:
    """What one prefetch found or built: ``built``/``gym_built``: the server venvs / Gym's own
    were built now, not found; ``offline``: the tree was built without an index (what
    ``--offline`` bring-ups need)."""

    package: str
    gym_version: str
    gym_venv: str
    gym_built: bool
    venv_dir: str
    built: bool
    offline: bool
    venvs: tuple[str, ...]
    seconds: float


@dataclass
class _Steps(RuntimeEvents):
    """Which venvs were set up now (a ``start`` of a step) and which were found (``cached``)."""

    built: set[str] = field(default_factory=set)
    cached: set[str] = field(default_factory=set)

    def on_venv(self, step: VenvStep) -> None:
        (self.cached if step.state == "cached" else self.built).add(step.venv)


def prefetch_options(package: Path, *, gym_version: str | None, offline: bool | None,
                     isolated: bool = False, gym_python: Path | None = None,
                     allow_python_override: bool = False,
                     install_timeout_s: float = 1800.0) -> RuntimeOptions:
    """The bring-up options a prefetch builds for: the flags, else ``envkit.toml`` /
    ``[tool.envkit]`` (``gym-version``, ``offline``) as ``envkit smoke`` resolves them, so the
    smoke that follows looks for the venvs this one builds."""
    settings = settings_for(package, Settings(gym_version=gym_version, offline=offline),
                            isolated=isolated)
    return RuntimeOptions(gym_version=settings.gym_version or DEFAULT_GYM_VERSION,
                          gym_python=gym_python, allow_python_override=allow_python_override,
                          offline=bool(settings.offline), startup_timeout_s=install_timeout_s)


def prefetch(package: Path, options: RuntimeOptions,
             events: RuntimeEvents | None = None) -> PrefetchResult:
    """Build (or find) Gym's venv and ``package``'s server venvs as a bring-up with
    ``options`` would; start nothing.

    :raises GymVenvError: no CPython 3.13 for Gym, or Gym's own install failed.
    :raises GymRuntimeError: a server venv's install failed (the likely EK code, uv's reason).
    """
    started = time.monotonic()
    steps = _Steps()
    runtime = GymRuntime(package, _NO_POLICY, options,
                         events=Fanout(steps, *(events,) if events else ()))
    venv_dir = runtime.prepare()  # Gym's venv first, as a bring-up sets it up
    gym = ensure_gym_venv(options.gym_version, python=options.gym_python,
                          allow_python_override=options.allow_python_override)  # found now
    venvs = tuple(sorted(p.parents[2].relative_to(venv_dir).as_posix()
                         for p in venv_dir.glob("*/*/.venv/bin/python")))
    return PrefetchResult(
        package=str(runtime.package), gym_version=gym.gym_version, gym_venv=str(gym.root),
        gym_built="gym" in steps.built, venv_dir=str(venv_dir),
        built=bool(steps.built - {"gym"}), offline=reusable(venv_dir, offline=True),
        venvs=venvs, seconds=time.monotonic() - started)
