"""The learning-signal phase with a real policy: ``envkit probe --model DIR``.

The model-free dead-rows check asks whether *any* reply could score apart on a row; this phase
asks what the policy the job starts from will actually see: every probed row G times through
Gym's real ``/run`` path, sampled and seeded as a training step samples.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from envkit.errors import UsageError
from envkit.model.diagnostics import Severity
from envkit.probe.analysis.observations import rounded
from envkit.probe.analysis.zero_variance import (
    GroupSignal,
    expected_gen_batches,
    group_signal,
    wilson,
)
from envkit.probe.phases.session import expand_rows
from envkit.validators.probe import EK807, EK810, EK811

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from envkit.model.diagnostics import Diagnostic
    from envkit.policy_server.generation import GenerationBackend
    from envkit.probe.analysis.job import ProbeJob
    from envkit.probe.phases import ProbeContext
    from envkit.probe.phases.session import Sent

__all__ = ["PROBE_SALT", "AgentSignal", "ModelDirError", "ModelPhase", "SignalResult",
           "check_model_dir", "seeded_batch"]

log = logging.getLogger(__name__)

PROBE_SALT = 2
"""``step_seed(seed, 0, PROBE_SALT)`` seeds the probe's draws: not a training step's (salt 0)
nor a validation pass's (salt 1), so the probe's groups are independent of the job's."""


class ModelDirError(UsageError, ValueError):
    """``--model`` names no Hugging Face model directory (a usage error)."""


def check_model_dir(model: Path) -> Path:
    """``model``, checked before any bring-up, so a typo costs no venv build.

    :raises ModelDirError: ``model`` has no ``config.json``.
    """
    if not (model / "config.json").is_file():
        msg = (f"--model {model}: no config.json there; give a local Hugging Face model "
               "directory (what `save_pretrained` writes)")
        raise ModelDirError(msg)
    return model


@dataclass(frozen=True, slots=True)
class AgentSignal:
    agent: str
    signal: GroupSignal
    rollouts: int
    failed: int
    first_failure: str | None
    mean_reward: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "rollouts": self.rollouts, "failed": self.failed,
                "first_failure": self.first_failure, "mean_reward": rounded(self.mean_reward),
                **_counts(self.signal)}


def _counts(s: GroupSignal) -> dict[str, Any]:
    interval = wilson(s.zero_variance, s.groups)
    return {"groups": s.groups, "zero_variance_groups": s.zero_variance,
            "zero_variance_share": rounded(s.zero_variance_share),
            "zero_variance_interval": [rounded(v) for v in interval] if interval else None,
            "samples": s.samples, "no_gradient_share": rounded(s.no_gradient_share),
            "kept_share": rounded(s.kept_share)}


@dataclass(frozen=True, slots=True)
class SignalResult:
    """What the policy's own groups give GRPO (``signal`` in the probe's JSON)."""

    name: str
    model: str
    backend: str
    job: ProbeJob
    agents: tuple[AgentSignal, ...]
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def total(self) -> GroupSignal:
        return sum((a.signal for a in self.agents), GroupSignal(0, 0, 0, 0, 0))

    @property
    def expected_gen_batches(self) -> int | None:
        """With dynamic sampling: batches per step at the pooled kept share (None: never)."""
        return expected_gen_batches(self.total.kept_share, self.job.prompts_per_step,
                                    self.job.batch_multiplier)

    def to_dict(self) -> dict[str, Any]:
        return {"rollouts": sum(a.rollouts for a in self.agents),
                "failed": sum(a.failed for a in self.agents)}

    def report(self) -> dict[str, Any]:
        """The ``signal`` section of the probe's JSON (``envkit schema probe``)."""
        job = self.job
        dynamic = None
        if job.dynamic_sampling:
            dynamic = {"expected_gen_batches": self.expected_gen_batches,
                       "max_gen_batches": job.max_gen_batches,
                       "prompts_per_batch": int(job.prompts_per_step * job.batch_multiplier)}
        return {"model": self.model, "backend": self.backend, "group_size": job.group_size,
                "temperature": job.temperature, "top_k": job.top_k,
                "max_new_tokens": job.max_new_tokens, "seed": job.seed,
                "leave_one_out": job.leave_one_out,
                "agents": [a.to_dict() for a in self.agents], "total": _counts(self.total),
                "dynamic_sampling": dynamic}


def seeded_batch(groups: Mapping[str, Sequence[Mapping[str, Any]]], job: ProbeJob, salt: int,
                 top_k: int | None = None) -> tuple[list[dict[str, Any]], list[tuple[str, int]]]:
    """Every row of every group G times, each rollout seeded as a training step seeds its
    samples (under ``salt``); and (group, row index) of each rollout. Group ids run on across
    the groups, as across a step's prompts."""
    from envkit.trainer.seeds import step_seed
    from envkit.trainer.sources.gym import seed_rows

    batch: list[dict[str, Any]] = []
    owners: list[tuple[str, int]] = []
    first = 0
    for key, rows in groups.items():
        expanded = expand_rows(rows, num_repeats=job.group_size, temperature=job.temperature,
                               max_tokens=job.max_new_tokens)
        seed_rows(expanded, step_seed(job.seed, 0, salt), first)
        batch += expanded
        owners += [(key, int(row["_ng_task_index"])) for row in expanded]
        first += len(rows)
    if top_k is not None:
        for row in batch:
            metadata = row["responses_create_params"]["metadata"]
            metadata["extra_body"] = json.dumps({**json.loads(metadata["extra_body"]),
                                                 "top_k": top_k})
    return batch, owners


def agent_signal(agent: str, sent: Sequence[tuple[int, Sent]], leave_one_out: bool
                 ) -> AgentSignal:
    """(task index, rollout) pairs of one agent -> its groups' counts; failures apart."""
    groups: dict[int, list[float]] = {}
    failures = [s.failure for _, s in sent if s.failure is not None]
    for task, s in sent:
        if s.reward is not None:
            groups.setdefault(task, []).append(s.reward)
    scored = [r for g in groups.values() for r in g]
    return AgentSignal(agent, group_signal(list(groups.values()), leave_one_out=leave_one_out),
                       len(sent), len(failures), failures[0] if failures else None,
                       sum(scored) / len(scored) if scored else None)


class ModelPhase:
    """``--model DIR``: G replies per probed row from the real policy, judged per group."""

    name = "signal"

    def __init__(self, model: Path, backend: str = "hf") -> None:
        """:raises ModelDirError: ``model`` has no ``config.json``."""
        self.model = check_model_dir(model)
        self.backend = backend

    def load(self) -> GenerationBackend:
        from envkit.trainer.generation.factory import make_backend

        log.info("probe: loading the policy %s (%s)", self.model, self.backend)
        return make_backend(self.model, self.backend)

    def run(self, ctx: ProbeContext) -> SignalResult:
        engine = self.load()
        try:
            with ctx.live.serving(engine):
                per_agent = self._sample(ctx)
        finally:
            engine.close()
        agents = tuple(agent_signal(a, sent, ctx.job.leave_one_out)
                       for a, sent in per_agent.items())
        result = SignalResult(self.name, str(self.model), self.backend, ctx.job, agents)
        return replace(result, diagnostics=signal_diagnostics(result, ctx))

    def _sample(self, ctx: ProbeContext) -> dict[str, list[tuple[int, Sent]]]:
        batch, owners = seeded_batch({a: [r.data for r in rows] for a, rows in ctx.rows.items()},
                                     ctx.job, PROBE_SALT, ctx.job.top_k)
        log.info("probe: %d rollouts (%d prompts x G=%d) from the policy", len(batch),
                 len(batch) // max(ctx.job.group_size, 1), ctx.job.group_size)
        with ctx.progress.phase(self.name, len(batch)) as advance:
            sent = ctx.live.send(batch, ctx.job.concurrency, ctx.thresholds.patience_s,
                                 on_done=lambda s: advance(1))
        out: dict[str, list[tuple[int, Sent]]] = {}
        for (agent, task), one in zip(owners, sent, strict=True):
            out.setdefault(agent, []).append((task, one))
        return out


def signal_diagnostics(result: SignalResult, ctx: ProbeContext) -> tuple[Diagnostic, ...]:
    """EK807 per agent with failures, EK810 per agent over the threshold, EK811 for the job."""
    warn = ctx.thresholds.zero_variance_warn
    G = ctx.job.group_size
    out: list[Diagnostic] = []
    for a in result.agents:
        path, line = ctx.where_of(a.agent)
        if a.failed:
            out.append(EK807.at(path, f"`{a.agent}`: {a.failed} of {a.rollouts} of the "
                                f"policy's rollouts failed and were not scored: "
                                f"{(a.first_failure or '')[:200]}", line=line))
        share = a.signal.zero_variance_share
        if share is None or (share <= warn and share < 1.0):
            continue
        text = (f"`{a.agent}`: {a.signal.zero_variance} of {a.signal.groups} groups of the "
                f"policy's G={G} replies all got the same reward ({share:.0%}); "
                f"{a.signal.no_gradient_share or 0:.0%} of the samples carry no gradient")
        if share >= 1.0:
            out.append(EK810.at(path, f"{text}: the job cannot learn from this policy",
                                line=line))
        else:
            out.append(EK810.at(path, f"{text}: over probe-zero-variance-warn {warn:.0%}",
                                line=line, severity=Severity.WARNING))
    return (*out, *_dynamic(result, ctx))


def _dynamic(result: SignalResult, ctx: ProbeContext) -> list[Diagnostic]:
    job, total = ctx.job, result.total
    if not job.dynamic_sampling or not total.samples:
        return []
    batches = result.expected_gen_batches
    allowed = job.max_gen_batches + 1
    if batches is not None and batches <= allowed:
        return []
    need = "never fills a step" if batches is None else f"needs about {batches} per step"
    path, line = ctx.where_of("")
    return [EK811.at(path, f"dynamic sampling keeps {total.kept_share or 0:.0%} of the "
                     f"policy's samples, so it {need}; the job ({job.source}) allows {allowed} "
                     "(`dynamic_sampling_max_gen_batches` + 1)", line=line)]
