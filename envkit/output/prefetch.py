"""Render ``envkit prefetch``'s result: which venvs were built now and which were there."""

from __future__ import annotations

from typing import Literal, TypedDict

from envkit.gym import PrefetchResult
from envkit.output.render import renders
from envkit.output.stdout import dump, echo

__all__ = ["PrefetchDict", "render_prefetch"]


class PrefetchDict(TypedDict):
    """``envkit schema prefetch``."""

    version: Literal["1.0"]
    package: str
    gym_version: str
    gym_venv: str
    gym_built: bool
    venv_dir: str
    built: bool
    offline: bool
    venvs: list[str]
    seconds: float


@renders(PrefetchResult, "prefetch")
def render_prefetch(result: PrefetchResult, fmt: str) -> int:
    """Print ``result`` in ``fmt`` on stdout; always 0 (a failed build raised)."""
    if fmt == "json":
        data: PrefetchDict = {
            "version": "1.0", "package": result.package, "gym_version": result.gym_version,
            "gym_venv": result.gym_venv, "gym_built": result.gym_built,
            "venv_dir": result.venv_dir, "built": result.built, "offline": result.offline,
            "venvs": list(result.venvs), "seconds": round(result.seconds, 3)}
        echo(dump(data))
        return 0
    mode = "index-free, from wheels/" if result.offline else "with an index"
    if not result.built and not result.gym_built:
        head = (f"Nothing to do: the venvs of {result.package} are already built ({mode}); "
                f"smoke, probe, rollout and train reuse them.")
    else:
        built = [*(["Gym's venv"] if result.gym_built else []),
                 *(["the server venvs"] if result.built else [])]
        head = (f"Built {' and '.join(built)} of {result.package} ({mode}) in "
                f"{result.seconds:.0f}s; smoke, probe, rollout and train reuse them.")
    lines = [head, f"  nemo-gym {result.gym_version}: {result.gym_venv}",
             f"  server venvs: {result.venv_dir}", *(f"    {v}" for v in result.venvs)]
    if not result.offline:
        lines.append("  (built with an index: an --offline run builds its own; prefetch with "
                     "--offline for those)")
    echo("\n".join(lines))
    return 0
