"""What the probe needs to know of the GRPO job: how hard the environment will be driven and
how a step samples. Read from ``envkit.model.jobspec`` once, so the analyses take plain numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from envkit.model.jobspec import GrpoSettings

__all__ = ["ProbeJob", "probe_job"]


@dataclass(frozen=True, slots=True)
class ProbeJob:
    concurrency: int
    """Rollouts one GRPO step sends at once: ``batch_size`` (times ``batch_multiplier``
    with dynamic sampling, rounded up)."""
    rollouts_per_step: int
    """Rollouts a step generates: prompts per step x G (x ``batch_multiplier`` with dynamic
    sampling)."""
    max_new_tokens: int
    temperature: float
    group_size: int
    source: str = "defaults"
    prompts_per_step: int = 1
    top_k: int | None = None
    seed: int = 42
    leave_one_out: bool = True
    dynamic_sampling: bool = False
    batch_multiplier: float = 1.0
    max_gen_batches: int = 10
    """``dynamic_sampling_max_gen_batches``: a step fails after one more batch than this."""


def probe_job(settings: GrpoSettings, source: str = "defaults") -> ProbeJob:
    """The probe's view of ``settings``.

    >>> from envkit.model.jobspec import grpo_settings
    >>> job = probe_job(grpo_settings({"training": {"type": "grpo", "batch_size": 8,
    ...     "num_generations_per_prompt": 4, "use_dynamic_sampling": True,
    ...     "batch_multiplier": 1.5, "max_new_tokens": 64}}))
    >>> (job.concurrency, job.rollouts_per_step, job.max_new_tokens)
    (12, 12, 64)
    """
    multiplier = settings.batch_multiplier if settings.use_dynamic_sampling else 1.0
    per_step = settings.prompts_per_step * settings.num_generations_per_prompt
    return ProbeJob(
        concurrency=max(1, math.ceil(settings.batch_size * multiplier)),
        rollouts_per_step=max(1, math.ceil(per_step * multiplier)),
        max_new_tokens=settings.max_new_tokens or settings.max_seq_length,
        temperature=settings.temperature,
        group_size=settings.num_generations_per_prompt,
        source=source,
        prompts_per_step=settings.prompts_per_step,
        top_k=settings.top_k,
        seed=42 if settings.seed is None else settings.seed,
        leave_one_out=settings.use_leave_one_out_baseline,
        dynamic_sampling=settings.use_dynamic_sampling,
        batch_multiplier=settings.batch_multiplier,
        max_gen_batches=settings.dynamic_sampling_max_gen_batches,
    )
