"""The phase of ``envkit profile`` that talks to servers: G replies per row from the policy.

The package is brought up exactly as ``envkit rollout`` does it, and each reply is seeded as
a training step seeds its samples (``seeded_batch``), so two runs give the same profile.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envkit.gym import RuntimeOptions, load_rows
from envkit.probe.inputs import read_job
from envkit.probe.phases.model import seeded_batch
from envkit.profile.analysis import RowProfile, row_profile
from envkit.trainer.generation.factory import EngineOptions

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path

    from envkit.gym import Rollout
    from envkit.probe.analysis.job import ProbeJob

__all__ = ["PROFILE_SALT", "ProfileRequest", "Sampled", "sample_profile", "split_rows"]

log = logging.getLogger(__name__)

PROFILE_SALT = 3
"""``step_seed(seed, 0, PROFILE_SALT)`` seeds the profile's draws: apart from a training
step's (0), a validation pass's (1) and the probe's (2)."""


@dataclass(frozen=True, slots=True)
class ProfileRequest:
    """What to profile, on which policy and job; how to reach the servers."""

    package: Path
    dataset: Path
    model: Path
    job: Path | None = None
    backend: str = "hf"
    pass_threshold: float = 1.0
    """A reply passes at this reward or above."""
    limit: int | None = None
    """Only the first N rows of each split."""
    timeout_s: float = 600.0
    runtime: RuntimeOptions = field(default_factory=RuntimeOptions)
    engine: EngineOptions = field(default_factory=EngineOptions)


@dataclass(frozen=True, slots=True)
class Sampled:
    """Every profiled row, in dataset order (training first), and how the run went."""

    job: ProbeJob
    rows: tuple[RowProfile, ...]
    ready_s: float
    rollout_s: float
    aborted: str | None = None


def split_rows(dataset: Path, limit: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """The rows of each split the dataset has (``validation.jsonl`` is optional).

    :raises FileNotFoundError: no ``training.jsonl`` (EK500).
    :raises ValueError: a line that is not a JSON object (EK501).
    """
    out = {"training": load_rows(dataset, "training", limit)}
    if (dataset / "validation.jsonl").is_file():
        out["validation"] = load_rows(dataset, "validation", limit)
    return out


def _profiles(splits: Mapping[str, Sequence[Any]], owners: Sequence[tuple[str, int]],
              results: Sequence[Rollout], pass_threshold: float) -> tuple[RowProfile, ...]:
    rewards: dict[tuple[str, int], list[float]] = {}
    failures: dict[tuple[str, int], list[str]] = {}
    for result in results:
        owner = owners[result.index]
        if result.ok and result.reward is not None:
            rewards.setdefault(owner, []).append(result.reward)
        else:
            failures.setdefault(owner, []).append(result.failure_reason or "no reward")
    return tuple(row_profile(split, i, rewards.get((split, i), ()), failures.get((split, i), ()),
                             pass_threshold=pass_threshold)
                 for split, rows in splits.items() for i in range(len(rows)))


def sample_profile(request: ProfileRequest,
                   on_result: Callable[[Rollout], None] | None = None) -> Sampled:
    """Serve the model, bring the package up, send every row G times, tear everything down.

    :raises FileNotFoundError: the dataset has no ``training.jsonl``.
    :raises ValueError: a dataset line is not a JSON object.
    :raises JobSpecError: the job's ``training`` block cannot be read.
    """
    from envkit.rollout import run_rollouts
    from envkit.trainer.sources.gym import open_session

    job = read_job(request.job)
    splits = split_rows(request.dataset, request.limit)
    batch, owners = seeded_batch(splits, job, PROFILE_SALT)
    start = time.monotonic()
    session, _ = open_session(request.package, request.model, request.backend, request.engine,
                              request.runtime, top_k=job.top_k)
    with session as servers:
        ready = time.monotonic() - start
        log.info("profile: servers ready in %.1fs; %d rollouts (%d rows x G=%d)", ready,
                 len(batch), len(owners) // max(job.group_size, 1), job.group_size)
        summary = run_rollouts(servers, batch, concurrency=job.concurrency,
                               timeout_s=request.timeout_s, on_result=on_result,
                               abort=session.dead)
    rows = _profiles(splits, owners, summary.results, request.pass_threshold)
    return Sampled(job, rows, ready, summary.rollout_s, summary.aborted)
