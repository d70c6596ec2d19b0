"""The reasoning phase: the oracle's answer with a reasoning model's ``<think>...</think>``.

Why a phase of its own, after the panel: the renderings need the agent's oracle rendering,
which only the panel's scores name. Gym's model server with ``uses_reasoning_parser`` turns
``<think>...</think>`` into a ``reasoning`` output item, without it the tags stay inline; the
phase sends the same text either way and reports the shape it saw.

The right answer only in the reasoning scoring within ``probe-margin`` of the oracle is EK812;
the oracle after reasoning scoring more than that below the bare oracle is EK813.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from envkit.model.diagnostics import Severity
from envkit.probe.analysis.observations import TOLERANCE, rounded, score_table
from envkit.probe.analysis.verdicts import failed_rollouts
from envkit.probe.phases.scoring import ScoringResult, play_rounds
from envkit.probe.policies import (
    PLAIN_RENDERINGS,
    REASONING,
    Policy,
    prompt_key,
    reasoning_reply,
    reference,
)
from envkit.validators.probe import EK812, EK813

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.model.diagnostics import Diagnostic
    from envkit.probe.analysis.observations import Observation, PolicyScore, RewardScale
    from envkit.probe.analysis.verdicts import Where
    from envkit.probe.phases import ProbeContext

__all__ = ["PRECLUDING", "ReasoningAssessment", "ReasoningPhase", "ReasoningResult",
           "assess_reasoning", "reasoning_shape"]

PRECLUDING = frozenset({"EK801", "EK802", "EK804"})
"""Panel errors that explain any reasoning score: the agent is not played."""

_LEAKS = ("reasoning:wrong-final", "reasoning:answer-only")


@dataclass(frozen=True, slots=True)
class ReasoningAssessment:
    agent: str
    oracle: str
    """The oracle rendering the reasoning replies end with."""
    shape: str | None
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True)
class ReasoningResult:
    name: str
    observations: tuple[Observation, ...]
    table: Mapping[str, Mapping[str, PolicyScore]]
    assessments: tuple[ReasoningAssessment, ...]
    oracle_means: Mapping[str, float | None]
    skipped: Mapping[str, str]
    """Agent -> why it was not played."""

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for a in self.assessments for d in a.diagnostics]

    def to_dict(self) -> dict[str, Any]:
        return {"rollouts": len(self.observations),
                "failed": sum(not o.ok for o in self.observations)}

    def report(self) -> dict[str, Any]:
        """The ``reasoning`` section of ``envkit schema probe``."""
        agents = [{
            "agent": a.agent, "oracle": a.oracle, "shape": a.shape,
            "oracle_mean": rounded(self.oracle_means.get(a.agent)),
            "policies": [{"policy": s.policy, "mean": rounded(s.mean), "scored": s.scored,
                          "failed": s.failed, "first_failure": s.first_failure}
                         for s in self.table.get(a.agent, {}).values()],
        } for a in self.assessments]
        return {"agents": agents,
                "skipped": [{"agent": k, "reason": v} for k, v in self.skipped.items()]}


def reasoning_shape(observations: Sequence[Observation]) -> str | None:
    """How the reasoning reached the verifier; ``None`` when no reply arrived.

    >>> from envkit.probe.analysis.observations import Observation
    >>> reasoning_shape([Observation("a", "p", 1, output=("reasoning", "message"))])
    'reasoning item'
    >>> reasoning_shape([Observation("a", "p", 1, output=("message",))])
    'inline'
    """
    seen = [o.output for o in observations if o.output]
    if not seen:
        return None
    return "reasoning item" if any("reasoning" in out for out in seen) else "inline"


def _template(scoring: ScoringResult, agent: str,
              scale: RewardScale) -> tuple[str, str] | None:
    """The rendering the reasoning replies end with: among those that score as well as the
    oracle, a delimited one before the bare answer (a bare answer after ``</think>`` is only
    the answer where the reasoning is stripped). ``None``: only the oracle with reasoning
    scores that well."""
    scores = scoring.table.get(agent, {})
    oracle = scoring.oracle_of(agent) or ""
    best = scale.goodness(scores[oracle].mean or 0.0)
    tied = [(f"oracle:{name}", template) for name, template in PLAIN_RENDERINGS
            if (s := scores.get(f"oracle:{name}")) is not None and s.mean is not None
            and scale.goodness(s.mean) >= best - TOLERANCE]
    delimited = [t for t in tied if t[0] != "oracle:bare"]
    choices = delimited or tied
    return choices[0] if choices else None


def _why_skipped(scoring: ScoringResult, agent: str, scale: RewardScale) -> str | None:
    assessment = next((a for a in scoring.assessments if a.agent == agent), None)
    if assessment is None or assessment.oracle is None:
        return "no reference answer"
    if assessment.oracle == "oracle:function-call":
        return "the reference is a function call"
    codes = sorted({d.code for d in assessment.diagnostics
                    if d.code in PRECLUDING and d.severity is Severity.ERROR})
    if codes:
        return f"the panel already found {', '.join(codes)}"
    oracle = scoring.table.get(agent, {}).get(assessment.oracle)
    if oracle is None or oracle.mean is None or scale.goodness(oracle.mean) <= TOLERANCE:
        return "the oracle earns no reward"
    if _template(scoring, agent, scale) is None:
        return "the reference scores only after reasoning"
    return None


def assess_reasoning(agent: str, scores: Mapping[str, PolicyScore], oracle: PolicyScore,
                     scale: RewardScale, margin: float, shape: str | None,
                     where: Where) -> ReasoningAssessment:
    """EK812, EK813, and EK807 for reasoning replies that failed the rollout.

    >>> from envkit.probe.analysis.observations import PolicyScore, RewardScale
    >>> o = PolicyScore("oracle:bare", "oracle", 1.0, {}, 8, 0)
    >>> s = {"reasoning:oracle": PolicyScore("reasoning:oracle", "reasoning", 0.0, {}, 8, 0),
    ...      "reasoning:answer-only": PolicyScore("reasoning:answer-only", "reasoning", 1.0,
    ...                                           {}, 8, 0)}
    >>> [(d.code, d.severity.value) for d in
    ...  assess_reasoning("a", s, o, RewardScale(), 0.1, "inline", ("x", None)).diagnostics]
    [('EK812', 'error'), ('EK813', 'warning')]
    """
    diags = failed_rollouts(agent, scores, where, "rollouts with reasoning")
    best = scale.goodness(oracle.mean or 0.0)
    bar = best - margin
    how = f" (the reasoning reached the verifier as {shape})" if shape else ""
    leaks = [s for name in _LEAKS if (s := scores.get(name)) is not None and s.mean is not None
             and scale.goodness(s.mean) > TOLERANCE and scale.goodness(s.mean) >= bar - TOLERANCE]
    if leaks:
        listed = ", ".join(f"`{s.policy}` {s.mean:.3g}" for s in leaks)
        diags.append(EK812.at(where[0], f"`{agent}`: the right answer inside the reasoning "
                              f"scores as well as the reference answer (`{oracle.policy}` "
                              f"{oracle.mean:.3g}): {listed}{how} (margin {margin:g} of the "
                              "reward range)", line=where[1]))
    after = scores.get("reasoning:oracle")
    if after is not None and after.mean is not None and (
            scale.goodness(after.mean) < bar - TOLERANCE):
        diags.append(EK813.at(where[0], f"`{agent}`: the reference answer after reasoning "
                              f"scores {after.mean:.3g}, the bare reference answer "
                              f"(`{oracle.policy}`) {oracle.mean:.3g}{how}", line=where[1]))
    return ReasoningAssessment(agent, oracle.policy, shape, tuple(diags))


class ReasoningPhase:
    name = "reasoning"

    def run(self, ctx: ProbeContext) -> ReasoningResult:
        scoring = ctx.results.get("scoring")
        if not isinstance(scoring, ScoringResult):
            return ReasoningResult(self.name, (), {}, (), {}, {})
        skipped = {a: why for a in ctx.rows if (why := _why_skipped(scoring, a, ctx.scale))}
        plans = {a: t for a in ctx.rows
                 if a not in skipped and (t := _template(scoring, a, ctx.scale)) is not None}
        rounds = [(Policy(name, "reasoning", lambda row, job: None, description),
                   [(prompt_key(r.data), reasoning_reply(name, ref, plans[agent][1]), r)
                    for agent in plans for r in ctx.rows[agent]
                    if (ref := reference(r.data, ctx.oracle_field)) is not None])
                  for name, description in REASONING]
        observations = play_rounds(ctx, self.name, rounds)
        table = score_table(observations, {name: "reasoning" for name, _ in REASONING})
        means: dict[str, float | None] = {}
        assessments = []
        for agent in plans:
            bare = scoring.table[agent][scoring.oracle_of(agent) or ""]
            means[agent] = bare.mean
            mine = [o for o in observations if o.agent == agent]
            found = assess_reasoning(agent, table.get(agent, {}), bare, ctx.scale,
                                     ctx.thresholds.margin, reasoning_shape(mine),
                                     ctx.where_of(agent))
            assessments.append(replace(found, oracle=plans[agent][0]))
        return ReasoningResult(self.name, tuple(observations), table, tuple(assessments),
                               means, skipped)
