"""The Gym runtime's small value types: its options, the policy it serves, the running servers."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.errors import FailedError
from envkit.gym.venv import DEFAULT_GYM_VERSION

__all__ = [
    "GYM_RAY_ADDRESS_ENV", "GymRuntimeError", "GymServers", "PolicyEndpoint", "RuntimeOptions",
    "ServerInfo",
]


class GymRuntimeError(FailedError, RuntimeError):
    """Servers could not be brought up, or Gym died while serving.

    ``code``: the likely EK rule, ``reason`` and ``evidence`` the reading and the log line behind
    it, ``server`` the one Gym named, ``not_ready`` those not answering yet, ``stage`` where it
    happened (``setup``, ``start`` or ``serve``); ``timed_out``: the servers were slow, not failed.
    """

    def __init__(self, message: str, *, code: str | None = None, log_tail: str = "",
                 server: str | None = None, not_ready: tuple[str, ...] = (),
                 stage: str = "setup", timed_out: bool = False, reason: str = "",
                 evidence: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.log_tail = log_tail
        self.reason = reason or message
        self.evidence = evidence
        self.server = server
        self.not_ready = not_ready
        self.stage = stage
        self.timed_out = timed_out


GYM_RAY_ADDRESS_ENV = "ENVKIT_GYM_RAY_ADDRESS"
"""Where :attr:`RuntimeOptions.ray_address` comes from when not given."""


@dataclass(frozen=True, slots=True)
class PolicyEndpoint:
    """What Gym's ``policy_model`` needs: ``${policy_base_url}``, ``${policy_api_key}``, name."""

    base_url: str
    api_key: str
    model_name: str


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """How Gym is brought up; what is sampled and how rows are sent belong to the layers above."""

    gym_version: str = DEFAULT_GYM_VERSION
    gym_python: Path | None = None
    allow_python_override: bool = False
    offline: bool = False
    startup_timeout_s: float = 600.0
    ready_timeout_s: float | None = None
    """Bounds the wait for the launched servers' readiness only (``envkit smoke --timeout``);
    ``None``: ``startup_timeout_s``, which also bounds the venv installs."""
    cache_dir: Path | None = None
    keep_logs: Path | None = None
    """Copy the run's logs here on close (else they go with the run dir)."""
    ray_address: str | None = field(
        default_factory=lambda: os.environ.get(GYM_RAY_ADDRESS_ENV) or None)
    """A running Ray cluster for Gym's servers to join (``envkit.gym.ray_cluster``) instead of
    Gym's head starting one at each bring-up; ``None`` (and always with :attr:`offline`): Gym
    starts its own."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    name: str
    server_type: str
    implementation: str
    url: str
    pid: int | None = None


@dataclass
class GymServers:
    """The running servers, addressed by instance name."""

    head_url: str
    servers: dict[str, ServerInfo]
    config: dict[str, Any]
    log_dir: Path
    env_server_for_agent: dict[str, str] = field(default_factory=dict)

    def agents(self) -> list[str]:
        return sorted(n for n, s in self.servers.items() if s.server_type == "responses_api_agents")

    def run_url(self, agent: str) -> str:
        """Where a row for ``agent`` is posted: its environment server if one relays it (as Gym's
        rollout collection does), else the agent itself."""
        target = self.env_server_for_agent.get(agent, agent)
        return f"{self.servers[target].url}/run"

