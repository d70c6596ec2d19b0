"""Rollouts through the package's real Gym servers: policy endpoint -> agent -> reward.

Why this path: it is what the platform's ``rl`` backend runs (SPEC §8). The policy is served
by an OpenAI-compatible endpoint (``policy_server`` over a ``GenerationBackend``: HF on CPU,
vLLM on GPU); Gym's ``vllm_model`` calls it with ``return_token_id_information``, so each
rollout comes back with prompt ids, generated ids and the sampler's logprobs. After every
optimizer step :meth:`GymRolloutSource.refresh` pushes the new weights into the backend.
A failed rollout (a server died, a timeout) raises ``RolloutFailedError``; the loop then calls
:meth:`restart` and redoes the batch, so no step is lost or counted twice.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envkit.trainer.grpo import RolloutFailedError
from envkit.trainer.policy import generation_weights
from envkit.trainer.rollout_source import Rollout

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from envkit.trainer.config import GrpoConfig
    from envkit.trainer.policy import Policy

__all__ = ["GymRolloutSource", "GymSourceOptions", "gym_source_options", "rollout_from_turns"]

log = logging.getLogger(__name__)

RESTART_GRACE_S = 5.0
"""Shutdown grace when restarting after a failure: the tree is broken (a server died), and
the step waits on the restart."""


@dataclass(frozen=True)
class GymSourceOptions:
    temperature: float = 1.0
    max_new_tokens: int = 64
    max_rollout_turns: int = 1
    concurrency: int = 8
    timeout_s: float = 600.0
    backend: str = "hf"
    runtime: Any = field(default=None)  # gym_runtime.RuntimeOptions; None -> its defaults
    engine: Any = field(default=None)  # rollout.EngineOptions; None -> its defaults


def gym_source_options(cfg: GrpoConfig, backend: str, runtime: Any = None) -> GymSourceOptions:
    """The source options a GRPO job asks for: sampling, turns, and the engine's settings.

    Why the engine settings: the generation copy of the model must see the same
    ``hf_config_overrides`` as the trained one, and vLLM takes the job's sizing.
    """
    from envkit.trainer.rollout import EngineOptions

    engine = EngineOptions(
        hf_config_overrides=dict(cfg.hf_config_overrides),
        vllm_tensor_parallel_size=cfg.vllm_tensor_parallel_size,
        vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
    )
    return GymSourceOptions(
        temperature=cfg.temperature,
        max_new_tokens=cfg.max_new_tokens,
        max_rollout_turns=cfg.max_rollout_turns,
        backend=backend,
        runtime=runtime,
        engine=engine,
    )


def rollout_from_turns(
    group: int, turns: Sequence[Any], reward: float, truncated: bool, max_turns: int
) -> Rollout:
    """One ``Rollout`` from the agent's policy calls, environment tokens masked out.

    Each turn's prompt must extend the previous turn's prompt + generation (chat templates do);
    turns past ``max_rollout_turns`` are dropped and the sample counts as truncated.

    :raises ValueError: a turn's prompt does not extend the conversation so far.
    """
    kept = list(turns[:max_turns])
    if not kept:
        msg = "the agent returned no token ids (is `return_token_id_information: true` set?)"
        raise ValueError(msg)
    prompt = tuple(kept[0].prompt_token_ids)
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    for turn in kept:
        seen = (*prompt, *completion)
        if tuple(turn.prompt_token_ids[: len(seen)]) != seen:
            msg = "a later turn's prompt does not extend the earlier conversation"
            raise ValueError(msg)
        inserted = turn.prompt_token_ids[len(seen) :]
        completion += [*inserted, *turn.generation_token_ids]
        mask += [0] * len(inserted) + [1] * len(turn.generation_token_ids)
        logprobs += [0.0] * len(inserted) + list(turn.generation_logprobs)
    cut = truncated or len(turns) > max_turns
    return Rollout(group, prompt, tuple(completion), tuple(logprobs), reward, cut, tuple(mask))


def _unreachable(servers: dict[str, Any], timeout_s: float = 2.0) -> list[str]:
    """Names of servers whose port refuses a TCP connection (the process died).

    Why probe: a request to a dead server can sit in an agent's retry loop until the row
    timeout; a connect check before each batch finds the dead server in milliseconds.
    """
    from urllib.parse import urlsplit

    dead = []
    for name, info in servers.items():
        parts = urlsplit(info.url)
        if parts.hostname is None or parts.port is None:
            continue
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=timeout_s):
                pass
        except OSError:
            dead.append(name)
    return dead


class GymRolloutSource:
    """``with GymRolloutSource(pkg, model_dir, opts) as source:`` serves and runs everything."""

    def __init__(self, package: Path, model_dir: Path, opts: GymSourceOptions) -> None:
        self.package = package
        self.model_dir = model_dir
        self.opts = opts
        self._backend: Any = None
        self._server: Any = None
        self._runtime: Any = None
        self._servers: Any = None

    def __enter__(self) -> GymRolloutSource:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        from envkit.trainer.gym_runtime import GymRuntime, PolicyEndpoint, RuntimeOptions
        from envkit.trainer.policy_server import PolicyServer
        from envkit.trainer.rollout import make_backend

        self._backend = make_backend(self.model_dir, self.opts.backend, self.opts.engine)
        self._server = PolicyServer(self._backend)
        endpoint = PolicyEndpoint(
            self._server.base_url, self._server.api_key, self._backend.model_name
        )
        self._runtime = GymRuntime(self.package, endpoint, self.opts.runtime or RuntimeOptions())
        self._servers = self._runtime.start()

    @property
    def servers(self) -> Any:
        """The running ``GymServers`` (instance name -> url, pid)."""
        return self._servers

    def restart(self) -> None:
        """Bring the Gym servers up again (the policy endpoint keeps running)."""
        log.warning("restarting the Gym servers of %s", self.package)
        self._runtime.close(grace_s=RESTART_GRACE_S)
        self._servers = self._runtime.start()

    def close(self) -> None:
        for part in (self._runtime, self._server, self._backend):
            if part is not None:
                part.close()
        self._runtime = self._server = self._backend = None

    def refresh(self, policy: Policy) -> None:
        self.load_weights(generation_weights(policy))

    def load_weights(self, state: dict[str, Any]) -> None:
        """New generation weights (a plain model's state dict), e.g. sent over Ray."""
        self._server.update_weights(state)

    def _dead(self) -> str | None:
        """Why the servers cannot serve (Gym exited, a port refuses connections), or None."""
        from envkit.trainer.gym_runtime import GymRuntimeError

        try:
            self._runtime.check_alive()
        except GymRuntimeError as exc:
            return str(exc)
        dead = _unreachable(self._servers.servers)
        return f"Gym server(s) not accepting connections: {', '.join(dead)}" if dead else None

    def rollouts(
        self, rows: Sequence[dict[str, Any]], num_generations: int, *, first_group: int = 0
    ) -> list[Rollout]:
        from envkit.trainer.env_client import RolloutAbortedError
        from envkit.trainer.rollout import expand_rows, run_rollouts

        reason = self._dead()
        if reason:
            raise RolloutFailedError(reason)
        expanded = expand_rows(
            rows,
            num_repeats=num_generations,
            temperature=self.opts.temperature,
            max_tokens=self.opts.max_new_tokens,
        )
        try:
            summary = run_rollouts(
                self._servers,
                expanded,
                concurrency=self.opts.concurrency,
                timeout_s=self.opts.timeout_s,
                abort=self._dead,
            )
        except RolloutAbortedError as exc:
            raise RolloutFailedError(str(exc)) from None
        if summary.failed:
            first = summary.failed[0]
            msg = f"{len(summary.failed)} rollout(s) failed, first: {first.failure_reason}"
            raise RolloutFailedError(msg)
        return [
            rollout_from_turns(
                first_group + r.index // num_generations,
                r.turns,
                float(r.reward),
                r.truncated,
                self.opts.max_rollout_turns,
            )
            for r in summary.results
        ]
