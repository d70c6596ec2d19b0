"""What a package declares about its reward: range, direction, whether it may vary, and where
each agent is defined. Pure over the package model and the data of its Gym manifests.

Without a manifest the range is ``[0, 1]``, higher is better, as in nearly all of Gym's. A
reward may vary (EK803 becomes a warning) when a manifest says ``determinism: stochastic`` or
a resources server refers to a judge (a model server other than the policy).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from envkit.model.package import server_block
from envkit.probe.analysis.observations import RewardScale

if TYPE_CHECKING:
    from envkit.model.package import Package
    from envkit.probe.analysis.verdicts import Where

__all__ = ["agent_locations", "agent_resources", "judge_refs", "scale_from_manifest",
           "server_blocks", "stochastic_reason"]

_POLICY = "policy_model"


def server_blocks(pkg: Package) -> list[tuple[str, str, str, str, Mapping[str, Any]]]:
    """(config path, instance, server type, implementation, body) of every server block."""
    return [(path, str(instance), *shape) for path, doc in pkg.configs.items()
            if isinstance(doc.data, Mapping) for instance, block in doc.data.items()
            if (shape := server_block(block)) is not None]


def agent_locations(pkg: Package) -> dict[str, Where]:
    """Agent instance -> (config path, line) where it is defined."""
    return {instance: (path, pkg.configs[path].line_of(instance))
            for path, instance, server_type, _, _ in server_blocks(pkg)
            if server_type == "responses_api_agents"}


def agent_resources(pkg: Package) -> dict[str, tuple[str, ...]]:
    """Agent instance -> the resources servers it refers to (whose ``/verify`` scores it)."""
    return {instance: tuple(str(v.get("name")) for v in body.values()
                            if isinstance(v, Mapping) and v.get("type") == "resources_servers")
            for _, instance, server_type, _, body in server_blocks(pkg)
            if server_type == "responses_api_agents"}


def judge_refs(pkg: Package) -> list[str]:
    """``instance.key`` of every resources-server field that refers to a judge."""
    return [f"{instance}.{key}" for _, instance, server_type, _, body in server_blocks(pkg)
            if server_type == "resources_servers" for key, value in body.items()
            if isinstance(value, Mapping) and value.get("type") == "responses_api_models"
            and value.get("name") != _POLICY]


def scale_from_manifest(data: Any, source: str) -> RewardScale | None:
    """The reward scale a Gym manifest declares, or ``None``.

    >>> scale_from_manifest({"reward": {"range": [0, 1.8], "higher_is_better": True}}, "m")
    RewardScale(lower=0.0, upper=1.8, higher_is_better=True, source='m')
    """
    reward = data.get("reward") if isinstance(data, Mapping) else None
    span = reward.get("range") if isinstance(reward, Mapping) else None
    if not (isinstance(span, list) and len(span) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in span)
            and span[0] <= span[1]):
        return None
    assert isinstance(reward, Mapping)  # span came from it
    better = reward.get("higher_is_better", True)
    return RewardScale(float(span[0]), float(span[1]), better is not False, source)


def stochastic_reason(pkg: Package, manifests: Mapping[str, Any]) -> str | None:
    """Why the reward may legitimately vary, or ``None``."""
    judges = judge_refs(pkg)
    if judges:
        return f"the package refers to a judge model ({', '.join(judges)})"
    for path, data in manifests.items():
        if isinstance(data, Mapping) and data.get("determinism") == "stochastic":
            return f"{path} declares `determinism: stochastic`"
    return None
