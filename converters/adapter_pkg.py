"""The text of an adapter-wheels-v1 package: manifest, Gym configs and the wheel lock, as pure
functions of a spec. The shapes follow the "GRPO and Reward Environments" guide and the pinned
Gym version's ``verifiers_agent/configs/verifiers_agent.yaml``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import yaml

from envkit.model.lock import Lock, LockedRequirement
from envkit.model.package import MANIFEST

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.model.lock import LockedWheel

__all__ = [
    "ADAPTER_AGENT",
    "POLICY_MODEL_IMPL",
    "AdapterSpec",
    "lock_data",
    "manifest",
    "package_texts",
    "policy_model_config",
    "verifiers_agent_config",
]

ADAPTER_AGENT = "verifiers_agent"
POLICY_CONFIG = "configs/policy_model.yaml"
AGENT_CONFIG = "configs/verifiers_agent.yaml"


@dataclass(frozen=True, slots=True)
class AdapterSpec:
    name: str
    hub_id: str
    vf_env_id: str
    vf_env_args: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    max_tokens: int = 8192
    temperature: float = 1.0
    top_p: float = 1.0
    domain: str | None = None
    """Written only when set: the NeMo Customizer guide says agent blocks must not carry
    ``domain``."""


def manifest(spec: AdapterSpec) -> dict[str, Any]:
    """``nemo-environment.yaml``: policy_model first in ``config_paths`` (EK306)."""
    return {
        "format": "adapter-wheels-v1",
        "config_paths": [POLICY_CONFIG, AGENT_CONFIG],
        "metadata": {
            "name": spec.name,
            "description": spec.description or f"{spec.hub_id} via Gym {ADAPTER_AGENT}",
            "hub_id": spec.hub_id,
            "vf_env_id": spec.vf_env_id,
            "adapter_agent": ADAPTER_AGENT,
        },
        "adapter": {"agent": ADAPTER_AGENT, "agent_type": "responses_api_agents"},
    }


POLICY_MODEL_IMPL = "vllm_model"
"""Gym's built-in model server that relays to the job's vLLM engine."""


def policy_model_config() -> dict[str, Any]:
    """The job's own vLLM engine; ``uses_reasoning_parser`` has no default in Gym 0.7's
    ``VLLMModelConfig``, so it must be written."""
    return {"policy_model": {"responses_api_models": {POLICY_MODEL_IMPL: {
        "entrypoint": "app.py",
        "base_url": "${policy_base_url}",
        "api_key": "${policy_api_key}",
        "model": "${policy_model_name}",
        "return_token_id_information": True,
        "uses_reasoning_parser": True,
    }}}}


def verifiers_agent_config(spec: AdapterSpec) -> dict[str, Any]:
    """The agent instance plus the ``environment_servers`` relay Gym 0.7 expects (EK314)."""
    agent = {
        "entrypoint": "app.py",
        **({"domain": spec.domain} if spec.domain else {}),
        "model_server": {"type": "responses_api_models", "name": "policy_model"},
        "model_name": "",
        "vf_env_id": spec.vf_env_id,
        "vf_env_args": dict(spec.vf_env_args),
        "group_size": 1,
        "max_concurrent_generation": -1,
        "max_concurrent_scoring": -1,
        "max_tokens": spec.max_tokens,
        "temperature": spec.temperature,
        "top_p": spec.top_p,
    }
    relay = {"entrypoint": "app.py",
             "agent_server": {"type": "responses_api_agents", "name": ADAPTER_AGENT}}
    return {
        ADAPTER_AGENT: {"responses_api_agents": {ADAPTER_AGENT: agent}},
        f"{ADAPTER_AGENT}_environment_server": {"environment_servers": {"legacy_agent": relay}},
    }


def lock_data(wheels: Sequence[LockedWheel], target: str, requirements: Sequence[str],
              resolver: str) -> Lock:
    """``wheels.lock``: what is vendored, for which target, from where. A local env wheel's
    ``file:`` URL names a temp dir, so it is left out. No timestamps: same inputs, same bytes."""
    return Lock(
        target=target, python_version="3.13", resolver=resolver,
        requirements=tuple(LockedRequirement(r, ("envkit convert verifiers",))
                           for r in requirements),
        wheels=tuple(replace(w, url=None) if w.url and w.url.startswith("file:") else w
                     for w in sorted(wheels, key=lambda w: (w.name, w.filename))),
    )


def _yaml(data: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=False, allow_unicode=True)


def package_texts(spec: AdapterSpec) -> dict[str, str]:
    """Manifest and configs, keyed by package-relative path."""
    return {
        MANIFEST: _yaml(manifest(spec)),
        POLICY_CONFIG: _yaml(policy_model_config()),
        AGENT_CONFIG: _yaml(verifiers_agent_config(spec)),
    }
