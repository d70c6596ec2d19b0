"""The scoring phase: every policy of the panel on every probed row, ``probe-repeats`` times.

One round per policy. A rollout that fails is sent once more, alone; if it fails again it is a
failure, never a reward. Rows whose prompts collide are sent in separate waves, since the
scripted policy answers by prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from envkit.probe.analysis.fields import FieldSearch, reference_slots, verify_fields
from envkit.probe.analysis.integrity import choose_oracle, oracle_never_scores, spreads
from envkit.probe.analysis.observations import TOLERANCE, Observation, score_table
from envkit.probe.analysis.verdicts import assess_agent
from envkit.probe.phases.session import expand_rows
from envkit.probe.policies import FIELD_CANDIDATES, PLAIN_RENDERINGS, Policy, prompt_key, reference

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from envkit.model.diagnostics import Diagnostic
    from envkit.probe.analysis.fields import DeclaredField
    from envkit.probe.analysis.observations import PolicyScore, ProbeRow
    from envkit.probe.analysis.verdicts import AgentAssessment
    from envkit.probe.phases import ProbeContext
    from envkit.probe.phases.session import Sent

__all__ = ["ScoringPhase", "ScoringResult", "output_types", "play_round", "play_rounds", "waves"]

_ANY = Policy("oracle:field-search", "oracle", lambda row, job: None, "the field search")
"""The policy the field search's observations carry (not part of the panel)."""


@dataclass(frozen=True, slots=True)
class ScoringResult:
    name: str
    observations: tuple[Observation, ...]
    table: Mapping[str, Mapping[str, PolicyScore]]
    assessments: tuple[AgentAssessment, ...]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for a in self.assessments for d in a.diagnostics]

    def oracle_of(self, agent: str) -> str | None:
        return next((a.oracle for a in self.assessments if a.agent == agent), None)

    def to_dict(self) -> dict[str, Any]:
        return {"rollouts": len(self.observations),
                "failed": sum(not o.ok for o in self.observations)}


def waves(items: Sequence[tuple[str, str, Any]]) -> list[list[tuple[str, str, Any]]]:
    """Split (key, reply, payload) items so that no wave holds one key with two replies.

    >>> [[p for _, _, p in w] for w in waves([("k", "a", 1), ("k", "b", 2), ("j", "c", 3),
    ...                                       ("k", "a", 4)])]
    [[1, 3, 4], [2]]
    """
    out: list[tuple[dict[str, str], list[tuple[str, str, Any]]]] = []
    for item in items:
        key, reply, _ = item
        for replies, wave in out:
            if replies.get(key, reply) == reply:
                replies[key] = reply
                wave.append(item)
                break
        else:
            out.append(({key: reply}, [item]))
    return [wave for _, wave in out]


class ScoringPhase:
    name = "scoring"

    def run(self, ctx: ProbeContext) -> ScoringResult:
        rows = [r for agent_rows in ctx.rows.values() for r in agent_rows]
        rounds = [(p, [(prompt_key(r.data), reply, r) for r in rows
                       if (reply := p.reply(r.data, ctx.job)) is not None])
                  for p in ctx.panel]
        observations = play_rounds(ctx, self.name, rounds)
        table = score_table(observations, {p.name: p.kind for p in ctx.panel})
        unstable = spreads(observations)
        assessments = tuple(
            assess_agent(agent, table.get(agent, {}), unstable.get(agent, {}), ctx.scale,
                         ctx.thresholds, ctx.where_of(agent), stochastic=ctx.stochastic,
                         oracle_field=ctx.oracle_field,
                         field_search=_field_if_never_scores(ctx, table.get(agent, {}), agent))
            for agent in ctx.rows)
        return ScoringResult(self.name, tuple(observations), table, assessments)


def play_rounds(ctx: ProbeContext, name: str,
                rounds: Sequence[tuple[Policy, list[tuple[str, str, ProbeRow]]]]
                ) -> list[Observation]:
    """Each policy's (prompt key, reply, row) items, wave by wave."""
    total = sum(len(items) for _, items in rounds) * ctx.thresholds.repeats
    observations: list[Observation] = []
    with ctx.progress.phase(name, total) as advance:
        for policy, items in rounds:
            for wave in waves(items):
                observations += play_round(ctx, policy, wave, advance)
    return observations


def play_round(ctx: ProbeContext, policy: Policy, wave: list[tuple[str, str, ProbeRow]],
           advance: Callable[[int], None], repeats: int | None = None) -> list[Observation]:
    """One policy's replies on one wave of rows, each repeated; failures retried alone."""
    ctx.live.answer({key: reply for key, reply, _ in wave}, "")
    probed = [row for _, _, row in wave]
    repeats = repeats or ctx.thresholds.repeats
    sent_rows = expand_rows([r.data for r in probed], num_repeats=repeats,
                            temperature=ctx.job.temperature, max_tokens=ctx.job.max_new_tokens)
    timeout = ctx.thresholds.patience_s
    sent = ctx.live.send(sent_rows, ctx.thresholds.concurrency, timeout,
                         on_done=lambda s: advance(1))
    retry = [i for i, s in enumerate(sent) if s.failure is not None]
    if retry:  # alone: a failure at low concurrency is the reply's, not the load's
        again = ctx.live.send([sent_rows[i] for i in retry], 1, timeout)
        for i, s in zip(retry, again, strict=True):
            sent[i] = s
    return [_observation(probed[i // repeats], policy.name, i % repeats, s)
            for i, s in enumerate(sent)]


def _observation(row: ProbeRow, policy: str, repeat: int, sent: Sent) -> Observation:
    return Observation(row.agent, policy, row.line, repeat, sent.reward, sent.failure,
                       sent.latency_s, output_types(sent.rollout.record))


def output_types(record: Mapping[str, Any]) -> tuple[str, ...]:
    """The types of a rollout's response output items, in order.

    >>> output_types({"response": {"output": [{"type": "reasoning"}, {"type": "message"}]}})
    ('reasoning', 'message')
    """
    response = record.get("response")
    items = response.get("output") if isinstance(response, dict) else None
    return tuple(str(i.get("type")) for i in items or () if isinstance(i, dict))


_FIELD_ROWS = 2
"""Rows per (field, rendering) in the field search."""


def _missing_slots(ctx: ProbeContext, agent: str) -> tuple[DeclaredField, ...]:
    """Fields the agent's resources servers declare for a reference that its rows lack."""
    rows = [r.data for r in ctx.rows.get(agent, ())]
    found: list[DeclaredField] = []
    for server in ctx.resources.get(agent, ()):
        found += reference_slots(verify_fields(ctx.live.openapi(server)), rows)
    return tuple(dict.fromkeys(found))


def _field_if_never_scores(ctx: ProbeContext, scores: Mapping[str, PolicyScore],
                           agent: str) -> FieldSearch | None:
    """The oracle never scored: copy the reference into each field a verifier may read on a
    few rows, every rendering, and say which made it score.

    Why: a verifier that reads a field the rows lack scores 0 for everything, exactly as a
    constant reward does; only this tells the two apart (EK802 vs EK804)."""
    oracle = choose_oracle(scores, ctx.scale)
    if oracle is None or not oracle_never_scores(scores[oracle], ctx.scale):
        return None
    missing = _missing_slots(ctx, agent)
    rows = [r for r in ctx.rows.get(agent, ())
            if reference(r.data, ctx.oracle_field) is not None][:_FIELD_ROWS]
    names = dict.fromkeys((*(f.name for f in missing), *FIELD_CANDIDATES))
    tries = [(f, template) for f in names for _, template in PLAIN_RENDERINGS
             if not all(f in r.data for r in rows)]
    with ctx.progress.phase("oracle field", len(tries) * len(rows)) as advance:
        for field, template in tries:
            items = []
            for row in rows:
                ref = reference(row.data, ctx.oracle_field) or ""
                data = {**row.data, field: ref}
                items.append((prompt_key(data), template.format(ref), replace(row, data=data)))
            found = [o for wave in waves(items) for o in play_round(ctx, _ANY, wave, advance, 1)]
            if any(o.ok and ctx.scale.goodness(o.reward or 0.0) > TOLERANCE for o in found):
                return FieldSearch((field, template.format("X")), missing)
    return FieldSearch(None, missing)
