"""``envkit rollout`` as one call: serve the model, bring the package up, run the rows, stop.

The policy is served by the trainer's Gym source, so a rollout samples as a training step
does; a dead server ends the run in seconds, as in training.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envkit.gym import (
    RequestOptions,
    RolloutAbortedError,
    RunFile,
    RuntimeOptions,
    collect,
    expand_rows,
    load_rows,
    mean_reward_by_agent,
    write_results,
    write_run_file,
)
from envkit.supply.provenance import run_record, write_provenance
from envkit.trainer.generation.factory import EngineOptions
from envkit.trainer.sources.gym import open_session

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    from envkit.gym import GymServers, Rollout

__all__ = ["RolloutRequest", "RolloutSummary", "rollout_package", "run_rollouts"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RolloutRequest:
    package: Path
    dataset: Path
    model: Path
    output: Path | None = None
    split: str = "training"
    limit: int | None = None
    num_repeats: int = 1
    requests: RequestOptions = field(default_factory=RequestOptions)
    backend: str = "hf"
    engine: EngineOptions = field(default_factory=EngineOptions)
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)


@dataclass(frozen=True, slots=True)
class RolloutSummary:
    results: tuple[Rollout, ...]
    mean_reward: dict[str, float]
    ready_s: float = 0.0
    rollout_s: float = 0.0
    aborted: str | None = None
    """Why the run stopped before every row finished (a server died), else None."""

    @property
    def failed(self) -> tuple[Rollout, ...]:
        return tuple(r for r in self.results if not r.ok)

    @property
    def exit_code(self) -> int:
        """0 when every row finished, 1 when any failed."""
        return 1 if self.failed or not self.results or self.aborted else 0

    def to_json(self) -> dict[str, Any]:
        finished = [r for r in self.results if r.ok]
        report: dict[str, Any] = {
            "version": "1.0",
            "rollouts": len(self.results),
            "failed": len(self.failed),
            "mean_reward": self.mean_reward,
            "truncation_rate": sum(r.truncated for r in finished) / max(1, len(finished)),
            "ready_s": round(self.ready_s, 3),
            "rollout_s": round(self.rollout_s, 3),
            "failures": [{"index": r.index, "agent": r.agent, "failure_reason": r.failure_reason}
                         for r in self.failed],
        }
        if self.aborted:
            report["aborted"] = self.aborted
        return report


def run_rollouts(
    servers: GymServers,
    rows: Sequence[Mapping[str, Any]],
    *,
    concurrency: int = 8,
    timeout_s: float = 600.0,
    on_result: Callable[[Rollout], None] | None = None,
    abort: Callable[[], str | None] | None = None,
) -> RolloutSummary:
    """Rows (already expanded) through running servers. When ``abort`` (a liveness probe)
    names a reason, the unfinished rows fail with it and ``aborted`` says why."""
    start = time.monotonic()
    aborted = None
    try:
        done = collect(rows, servers.run_url, concurrency=concurrency, timeout_s=timeout_s,
                       on_result=on_result, abort=abort)
    except RolloutAbortedError as exc:
        aborted, done = str(exc), exc.results
        log.error("stopping: %s", aborted)
    results = tuple(done)
    return RolloutSummary(results, mean_reward_by_agent(results),
                          rollout_s=time.monotonic() - start, aborted=aborted)


def rollout_package(
    request: RolloutRequest, on_result: Callable[[Rollout], None] | None = None
) -> RolloutSummary:
    """Serve the model, bring the package up, run the dataset's rows, tear everything down."""
    req = request.requests
    rows = expand_rows(load_rows(request.dataset, request.split, request.limit),
                       num_repeats=request.num_repeats, temperature=req.temperature,
                       max_tokens=req.max_tokens)
    start = time.monotonic()
    session, _ = open_session(request.package, request.model, request.backend, request.engine,
                              request.runtime)
    with session as servers:
        ready = time.monotonic() - start
        log.info("servers ready in %.1fs; %d rollouts", ready, len(rows))
        summary = run_rollouts(servers, rows, concurrency=req.concurrency,
                               timeout_s=req.timeout_s, on_result=on_result, abort=session.dead)
    if request.output is not None:
        write_results(request.output, summary.results)
        provenance = run_record(request.package, request.dataset)
        write_provenance(request.output.parent, provenance)
        write_run_file(request.output.parent, RunFile(
            "rollout", str(request.package.resolve()), provenance.package_sha256,
            request.output.name, request.runtime.gym_version, request.runtime.offline))
    return dataclasses.replace(summary, ready_s=ready)
