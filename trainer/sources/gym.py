"""Rollouts through the package's real Gym servers: policy endpoint -> agent -> reward.

Why this path: it is what the platform's ``rl`` backend runs. The policy is served by an
OpenAI-compatible endpoint (``policy_server`` over a ``GenerationBackend``); Gym's ``vllm_model``
calls it with ``return_token_id_information``, so each rollout comes back with prompt ids,
generated ids and the sampler's logprobs. When the servers cannot serve (one died, every row
failed), :meth:`GymRolloutSource.rollouts` raises ``RolloutFailedError``; the loop then calls
:meth:`restart` and redoes the batch, so no step is lost or counted twice. A single row that
failed while the servers are up comes back as a failed :class:`~envkit.gym.rollout.Rollout`:
a failure, never a reward of 0.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envkit.gym import (
    GymSession,
    PolicyEndpoint,
    RequestOptions,
    RolloutAbortedError,
    RuntimeOptions,
    append_results,
    collect,
    expand_rows,
)
from envkit.trainer.generation.factory import EngineOptions, make_backend
from envkit.trainer.generation.refit import refit_check, refit_engine
from envkit.trainer.policy import generation_weights
from envkit.trainer.seeds import sample_seed
from envkit.trainer.sources.base import RolloutFailedError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from envkit.gym import Rollout, TokenTurn
    from envkit.policy_server.generation import GenerationBackend
    from envkit.policy_server.server import PolicyServer
    from envkit.trainer.config import GrpoConfig
    from envkit.trainer.generation.refit import ProbeCheck
    from envkit.trainer.policy import Policy

log = logging.getLogger(__name__)

__all__ = [
    "GymRolloutSource",
    "GymSourceOptions",
    "gym_source_options",
    "open_session",
    "rollout_from_turns",
    "seed_rows",
]


@dataclass(frozen=True, slots=True)
class GymSourceOptions:
    """The Gym source's layer: how rows are sent, the engine, the runtime, the turn cap."""

    requests: RequestOptions = field(default_factory=RequestOptions)
    max_rollout_turns: int = 1
    top_k: int | None = None
    """The job's ``top_k``: the policy server samples every request with it."""
    backend: str = "hf"
    engine: EngineOptions = field(default_factory=EngineOptions)
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)
    record_to: Path | None = None
    """Append every finished rollout's Gym row (the full response, the reward) here: the run's
    record that ``envkit rescore`` scores again."""


def gym_source_options(
    cfg: GrpoConfig, backend: str, runtime: RuntimeOptions | None = None,
    record_to: Path | None = None,
) -> GymSourceOptions:
    """The source options a GRPO job asks for: sampling, turns, and the engine's settings.

    Why the engine settings: the generation copy of the model must see the same
    ``hf_config_overrides`` as the trained one, and vLLM takes the job's sizing.
    """
    engine = EngineOptions(
        hf_config_overrides=dict(cfg.hf_config_overrides),
        vllm_tensor_parallel_size=cfg.training.vllm_tensor_parallel_size or 1,
        vllm_gpu_memory_utilization=cfg.training.vllm_gpu_memory_utilization,
    )
    return GymSourceOptions(
        requests=RequestOptions(
            temperature=cfg.training.temperature, max_tokens=cfg.max_new_tokens
        ),
        max_rollout_turns=cfg.training.max_rollout_turns,
        top_k=cfg.training.top_k,
        backend=backend,
        engine=engine,
        runtime=runtime or RuntimeOptions(),
        record_to=record_to,
    )


def open_session(
    package: Path, model: Path, backend: str, engine: EngineOptions, runtime: RuntimeOptions,
    *, top_k: int | None = None,
) -> tuple[GymSession, PolicyServer]:
    """Load the model, serve it (sampling with ``top_k``), and read the package: a session
    ready to :meth:`start`.

    The session owns the server and the engine (closed with it); on a failure here they are
    closed before the error goes on.
    """
    from envkit.policy_server.server import PolicyServer

    engine_ = make_backend(model, backend, engine)
    server: PolicyServer | None = None
    try:
        server = PolicyServer(engine_, top_k=top_k)
        endpoint = PolicyEndpoint(server.base_url, server.api_key, engine_.model_name)
        return GymSession(package, endpoint, runtime, owned=(server, engine_)), server
    except BaseException:
        for part in (server, engine_):
            if part is not None:
                part.close()
        raise


def seed_rows(expanded: Sequence[dict[str, Any]], seed: int, first_group: int) -> None:
    """Give every expanded row its own sampling seed, in place.

    The seed travels as ``responses_create_params.metadata.extra_body`` (a JSON string): Gym's
    ``vllm_model`` merges that object into the chat-completion request it sends the policy
    server, so each rollout's request carries ``seed`` = :func:`sample_seed` of its group
    (``first_group + _ng_task_index``) and its index in the group (``_ng_rollout_index``).
    """
    for row in expanded:
        params = row.setdefault("responses_create_params", {})
        metadata = dict(params.get("metadata") or {})
        extra = json.loads(metadata.get("extra_body") or "{}")
        group = first_group + int(row["_ng_task_index"])
        extra["seed"] = sample_seed(seed, group, int(row["_ng_rollout_index"]))
        metadata["extra_body"] = json.dumps(extra)
        params["metadata"] = metadata


def rollout_from_turns(rollout: Rollout, group: int, max_turns: int) -> Rollout:
    """``rollout`` with its group and its policy calls laid out for the loss, environment
    tokens masked out.

    Each turn's prompt must extend the previous turn's prompt + generation (chat templates do);
    turns past ``max_rollout_turns`` are dropped and the sample counts as truncated.

    :raises ValueError: no token ids, or a turn's prompt does not extend the conversation.
    """
    kept = list(rollout.turns[:max_turns])
    if not kept:
        msg = "the agent returned no token ids (is `return_token_id_information: true` set?)"
        raise ValueError(msg)
    prompt, completion, mask, logprobs = _layout(kept)
    cut = rollout.truncated or len(rollout.turns) > max_turns
    return dataclasses.replace(
        rollout, group=group, prompt_ids=prompt, completion_ids=completion,
        generation_logprobs=logprobs, truncated=cut, completion_mask=mask,
    )


def _layout(turns: list[TokenTurn]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...],
                                              tuple[float, ...]]:
    """(prompt, completion, mask, logprobs) of consecutive policy calls."""
    prompt = tuple(turns[0].prompt_token_ids)
    completion: list[int] = []
    mask: list[int] = []
    logprobs: list[float] = []
    for turn in turns:
        seen = (*prompt, *completion)
        if tuple(turn.prompt_token_ids[: len(seen)]) != seen:
            msg = "a later turn's prompt does not extend the earlier conversation"
            raise ValueError(msg)
        inserted = turn.prompt_token_ids[len(seen) :]
        completion += [*inserted, *turn.generation_token_ids]
        mask += [0] * len(inserted) + [1] * len(turn.generation_token_ids)
        logprobs += [0.0] * len(inserted) + list(turn.generation_logprobs)
    return prompt, tuple(completion), tuple(mask), tuple(logprobs)


class GymRolloutSource:
    """``with GymRolloutSource(pkg, model_dir, opts) as source:`` serves and runs everything."""

    def __init__(self, package: Path, model_dir: Path, opts: GymSourceOptions) -> None:
        self.package = package
        self.model_dir = model_dir
        self.opts = opts
        self._session: GymSession | None = None
        self._server: PolicyServer | None = None
        self._lock = threading.Lock()
        self._closed = False

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
        """Serve the model and bring Gym up; a :meth:`close` from another thread meanwhile
        (Ctrl-C on the driver of a Ray run) stops the bring-up and leaves nothing running."""
        opts = self.opts
        session, server = open_session(
            self.package, self.model_dir, opts.backend, opts.engine, opts.runtime, top_k=opts.top_k
        )
        with self._lock:
            if self._closed:
                session.close()
                msg = "the Gym source was closed while it was starting"
                raise RolloutFailedError(msg)
            self._session, self._server = session, server
        session.start()

    @property
    def session(self) -> GymSession:
        """The running session (its ``servers``: instance name -> url, pid)."""
        if self._session is None:
            msg = "the Gym source is not started"
            raise RolloutFailedError(msg)
        return self._session

    @property
    def engine(self) -> GenerationBackend:
        """The generation engine serving the policy to Gym (a copy of the trained model)."""
        if self._server is None:
            msg = "the Gym source is not started"
            raise RolloutFailedError(msg)
        return self._server.backend

    def restart(self) -> None:
        """Bring the Gym servers up again (the policy endpoint keeps running)."""
        self.session.restart()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            session, self._session, self._server = self._session, None, None
        if session is not None:
            session.close()

    def refresh(self, policy: Policy) -> dict[str, float]:
        return self.load_weights(generation_weights(policy), refit_check(policy, self.engine))

    def sleep(self) -> None:
        sleep = getattr(self.engine, "sleep", None)
        if sleep is not None:
            sleep()

    def load_weights(self, state: dict[str, Any], check: ProbeCheck | None = None
                     ) -> dict[str, float]:
        """New generation weights (a plain model's state dict), e.g. sent over Ray; then the
        probe check where the engine scores prompts (``generation/refit.py``)."""
        return refit_engine(self.engine, state, check)

    def rollouts(
        self, rows: Sequence[dict[str, Any]], num_generations: int, *, first_group: int = 0,
        seed: int | None = None,
    ) -> list[Rollout]:
        """``num_generations`` rollouts of each row, every one in flight at once.

        Why all at once: the platform's NeMo-RL hands a step's rows to Gym together, ``envkit
        probe`` checks the package at that concurrency, and a continuously batching engine
        (vLLM) batches only what is in flight. ``seed`` gives each rollout a seed of its own.
        """
        session, req = self.session, self.opts.requests
        reason = session.dead()
        if reason or session.servers is None:
            raise RolloutFailedError(reason or "the Gym servers are not up")
        expanded = expand_rows(rows, num_repeats=num_generations, temperature=req.temperature,
                               max_tokens=req.max_tokens)
        if seed is not None:
            seed_rows(expanded, seed, first_group)
        try:
            results = collect(expanded, session.servers.run_url, concurrency=len(expanded),
                              timeout_s=req.timeout_s, abort=session.dead)
        except RolloutAbortedError as exc:
            raise RolloutFailedError(str(exc)) from None
        failed = [r for r in results if not r.ok]
        if failed:
            dead = session.dead()
            msg = f"{len(failed)} of {len(results)} rollout(s) failed, first: "
            msg += str(failed[0].failure_reason)
            if dead or len(failed) == len(results):
                raise RolloutFailedError(f"{dead}; {msg}" if dead else msg)
            log.warning("%s (counted as failures, left out of the step)", msg)
        if self.opts.record_to is not None:  # a batch the loop redoes is recorded once
            append_results(self.opts.record_to, results)
        return [self._sample(r, first_group + r.index // num_generations) for r in results]

    def _sample(self, rollout: Rollout, group: int) -> Rollout:
        """A finished row laid out for the loss; a failed one stays a failure, in its group."""
        if not rollout.ok:
            return dataclasses.replace(rollout, group=group)
        return rollout_from_turns(rollout, group, self.opts.max_rollout_turns)
