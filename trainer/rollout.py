"""``envkit rollout``: a policy endpoint + the package's real Gym servers + prompt rows -> rewards.

``run_rollouts`` works on servers that are already up (the GRPO trainer keeps them up across
steps); ``rollout_package`` is the one-shot path the CLI takes: load the model, serve it, bring
the package up, run, tear everything down.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.trainer.env_client import RolloutResult, collect, mean_reward_by_agent
from envkit.trainer.gym_runtime import GymRuntime, PolicyEndpoint, RuntimeOptions

if TYPE_CHECKING:
    from envkit.trainer.generation.interface import GenerationBackend
    from envkit.trainer.gym_runtime import GymServers

__all__ = [
    "EngineOptions",
    "RolloutRequest",
    "RolloutSummary",
    "expand_rows",
    "load_rows",
    "rollout_package",
    "run_rollouts",
    "write_results",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineOptions:
    """The job's settings for the generation engine (``training`` block, seed 001)."""

    hf_config_overrides: dict[str, Any] = field(default_factory=dict)
    vllm_tensor_parallel_size: int = 1
    vllm_gpu_memory_utilization: float = 0.6


@dataclass(frozen=True)
class RolloutRequest:
    package: Path
    dataset: Path
    model: Path
    output: Path | None = None
    split: str = "training"
    limit: int | None = None
    num_repeats: int = 1
    concurrency: int = 8
    temperature: float = 1.0
    max_tokens: int = 64
    timeout_s: float = 600.0
    backend: str = "hf"
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)


@dataclass(frozen=True)
class RolloutSummary:
    results: tuple[RolloutResult, ...]
    mean_reward: dict[str, float]
    ready_s: float = 0.0
    rollout_s: float = 0.0

    @property
    def failed(self) -> tuple[RolloutResult, ...]:
        return tuple(r for r in self.results if not r.ok)

    @property
    def exit_code(self) -> int:
        """0 when every row finished, 1 when any failed."""
        return 1 if self.failed or not self.results else 0

    def to_json(self) -> dict[str, Any]:
        return {
            "version": "1.0",
            "rollouts": len(self.results),
            "failed": len(self.failed),
            "mean_reward": self.mean_reward,
            "truncation_rate": (sum(r.truncated for r in self.results if r.ok)
                                / max(1, len(self.results) - len(self.failed))),
            "ready_s": round(self.ready_s, 3),
            "rollout_s": round(self.rollout_s, 3),
            "failures": [{"index": r.index, "agent": r.agent, "failure_reason": r.failure_reason}
                         for r in self.failed],
        }


def load_rows(dataset: Path, split: str = "training", limit: int | None = None) -> list[dict]:
    """Rows of ``<dataset>/<split>.jsonl`` (first ``limit``).

    :raises ValueError: a line that is not a JSON object (with its line number; see EK501).
    """
    path = dataset / f"{split}.jsonl"
    if not path.is_file():
        msg = f"{path} does not exist (EK500: the dataset needs {split}.jsonl)"
        raise FileNotFoundError(msg)
    rows: list[dict] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            msg = f"{path}:{number}: EK501 line is not JSON ({exc.msg})"
            raise ValueError(msg) from None
        if not isinstance(row, dict):
            msg = f"{path}:{number}: EK501 line is not a JSON object"
            raise ValueError(msg)
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    return rows


def expand_rows(rows: Sequence[Mapping[str, Any]], *, num_repeats: int, temperature: float,
                max_tokens: int) -> list[dict[str, Any]]:
    """Repeat each row ``num_repeats`` times with Gym's indices and the sampling overrides
    ``gym eval run`` applies to ``responses_create_params``."""
    out = []
    for task_index, row in enumerate(rows):
        for repeat in range(num_repeats):
            new = copy.deepcopy(dict(row))
            params = new.setdefault("responses_create_params", {})
            params["temperature"] = temperature
            params["max_output_tokens"] = max_tokens
            new["_ng_task_index"] = task_index
            new["_ng_rollout_index"] = repeat
            out.append(new)
    return out


def run_rollouts(
    servers: GymServers,
    rows: Sequence[Mapping[str, Any]],
    *,
    concurrency: int = 8,
    timeout_s: float = 600.0,
    on_result: Callable[[RolloutResult], None] | None = None,
    abort: Callable[[], str | None] | None = None,
) -> RolloutSummary:
    """Rows (already expanded) through running servers; ``abort`` as in ``collect``."""
    start = time.monotonic()
    results = collect(rows, servers.run_url, concurrency=concurrency, timeout_s=timeout_s,
                      on_result=on_result, abort=abort)
    return RolloutSummary(tuple(results), mean_reward_by_agent(results),
                          rollout_s=time.monotonic() - start)


def write_results(path: Path, results: Sequence[RolloutResult]) -> Path | None:
    """Gym's rollout rows (with ``reward``) to ``path``; failed rows to ``<path>.failures.jsonl``
    (Gym's failures sidecar). Returns the sidecar path when there were failures."""
    path.parent.mkdir(parents=True, exist_ok=True)
    failed = [r for r in results if not r.ok]
    path.write_text("".join(json.dumps(r.record) + "\n" for r in results if r.ok))
    if not failed:
        return None
    sidecar = path.with_name(path.name.removesuffix(".jsonl") + ".failures.jsonl")
    sidecar.write_text("".join(
        json.dumps({**r.record, "failure_reason": r.failure_reason}) + "\n" for r in failed))
    return sidecar


def make_backend(
    model: Path, backend: str, engine: EngineOptions | None = None
) -> GenerationBackend:
    """The generation backend for ``--backend`` (hf on CPU, vllm on GPU)."""
    engine = engine or EngineOptions()
    if backend == "vllm":
        from envkit.trainer.generation.vllm import VLLMBackend

        return VLLMBackend(
            model,
            gpu_memory_utilization=engine.vllm_gpu_memory_utilization,
            tensor_parallel_size=engine.vllm_tensor_parallel_size,
            hf_config_overrides=engine.hf_config_overrides,
        )
    from envkit.trainer.generation.hf import HFBackend

    return HFBackend(model, hf_config_overrides=engine.hf_config_overrides)


def rollout_package(
    request: RolloutRequest, on_result: Callable[[RolloutResult], None] | None = None
) -> RolloutSummary:
    """Serve the model, bring the package up, run the dataset's rows, tear everything down."""
    from envkit.trainer.policy_server import PolicyServer

    rows = expand_rows(load_rows(request.dataset, request.split, request.limit),
                       num_repeats=request.num_repeats, temperature=request.temperature,
                       max_tokens=request.max_tokens)
    start = time.monotonic()
    backend = make_backend(request.model, request.backend)
    try:
        with PolicyServer(backend) as policy:
            endpoint = PolicyEndpoint(policy.base_url, policy.api_key, backend.model_name)
            with GymRuntime(request.package, endpoint, request.runtime) as servers:
                ready = time.monotonic() - start
                log.info("servers ready in %.1fs; %d rollouts", ready, len(rows))
                summary = run_rollouts(servers, rows, concurrency=request.concurrency,
                                       timeout_s=request.timeout_s, on_result=on_result)
    finally:
        backend.close()
    if request.output is not None:
        write_results(request.output, summary.results)
    return RolloutSummary(summary.results, summary.mean_reward, ready, summary.rollout_s)
