"""From what was observed to diagnostics: one assessment per agent, one for the load curve.

Why one place: a single cause often explains several symptoms, and only the cause is worth
reporting. Per agent: no reference -> EK808 (only a maxed-out content-free reply is judged);
an oracle that never scores because of a wrong field -> EK802 alone; every judged row dead ->
EK804 alone; else EK802, EK804 warnings and EK801. Failed rollouts (EK807) and disagreeing
repeats (EK803) are causes of their own, reported whatever else is found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from envkit.model.diagnostics import Diagnostic, Severity
from envkit.probe.analysis.integrity import Spread, choose_oracle, gameable, oracle_never_scores
from envkit.probe.analysis.load import LoadLevel, percentile
from envkit.probe.analysis.observations import TOLERANCE
from envkit.probe.analysis.zero_variance import dead_rows
from envkit.validators.probe import EK801, EK802, EK803, EK804, EK805, EK806, EK807, EK808

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.probe.analysis.fields import FieldSearch
    from envkit.probe.analysis.observations import PolicyScore, RewardScale
    from envkit.probe.thresholds import Thresholds

__all__ = ["AgentAssessment", "Where", "assess_agent", "failed_rollouts", "lines_text",
           "load_diagnostics"]

Where = tuple[str, "int | None"]
"""(path relative to the package root, line): where a finding points."""


@dataclass(frozen=True, slots=True)
class AgentAssessment:
    agent: str
    oracle: str | None
    dead: tuple[int, ...]
    judged: tuple[int, ...]
    unstable: Mapping[tuple[str, int], Spread]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def dead_share(self) -> float | None:
        return len(self.dead) / len(self.judged) if self.judged else None


def lines_text(lines: Sequence[int], limit: int = 8) -> str:
    """The first ``limit`` dataset lines, then how many more.

    >>> lines_text([3, 1, 2]), lines_text(range(1, 12), 3)
    ('dataset line 1, 2, 3', 'dataset line 1, 2, 3 and 8 more')
    """
    ordered = sorted(set(lines))
    shown = ", ".join(map(str, ordered[:limit]))
    more = f" and {len(ordered) - limit} more" if len(ordered) > limit else ""
    return f"dataset line {shown}{more}"


def failed_rollouts(agent: str, scores: Mapping[str, PolicyScore], where: Where,
                    what: str = "rollouts") -> list[Diagnostic]:
    """EK807 for the policies whose rollouts failed: a failure is never a reward."""
    failed = [s for s in scores.values() if s.failed]
    if not failed:
        return []
    counts = ", ".join(f"{s.policy} {s.failed}" for s in failed)
    first = next(s.first_failure for s in failed if s.first_failure)
    return [EK807.at(where[0], f"`{agent}`: {what} failed and were not scored ({counts}); "
                     f"first: {first[:200]}", line=where[1])]


def _unstable(agent: str, found: Mapping[tuple[str, int], Spread], where: Where,
              stochastic: str | None) -> list[Diagnostic]:
    if not found:
        return []
    (policy, row), (low, high) = next(iter(found.items()))
    severity = Severity.WARNING if stochastic else Severity.ERROR
    why = f" (expected: {stochastic})" if stochastic else ""
    return [EK803.at(
        where[0], f"`{agent}`: the same reply scored differently on "
        f"{lines_text([r for _, r in found])} ({len(found)} reply-row pairs; e.g. `{policy}` "
        f"on line {row}: {low:.4g} .. {high:.4g}){why}", line=where[1], severity=severity)]


def _never_scores(agent: str, oracle: PolicyScore, scale: RewardScale, where: Where,
                  search: FieldSearch | None) -> Diagnostic:
    worst = scale.lower if scale.higher_is_better else scale.upper
    text = (f"`{agent}`: the reference answer got the worst reward ({worst:g}) on all "
            f"{len(oracle.per_row)} rows, in every rendering")
    return EK802.at(where[0], text + (search.describe() if search else ""), line=where[1])


def _reward_checks(agent: str, scores: Mapping[str, PolicyScore], oracle: PolicyScore,
                   dead: tuple[tuple[int, ...], tuple[int, ...]], scale: RewardScale,
                   th: Thresholds, where: Where,
                   search: FieldSearch | None = None) -> list[Diagnostic]:
    dead_lines, judged = dead
    never = oracle_never_scores(oracle, scale)
    if never and search is not None and search.explains:  # a wrong field: every other
        return [_never_scores(agent, oracle, scale, where, search)]  # symptom follows
    out = []
    all_dead = bool(judged) and len(dead_lines) == len(judged)
    if never and not all_dead:  # content-free replies score where the reference cannot
        out.append(_never_scores(agent, oracle, scale, where, None))
    share = len(dead_lines) / len(judged) if judged else 0.0
    text = (f"`{agent}`: {len(dead_lines)} of {len(judged)} rows ({share:.0%}) give every "
            f"reply the same reward ({lines_text(dead_lines)})")
    if all_dead:  # a constant reward (no field the probe tried makes the reference score)
        return [EK804.at(where[0], text, line=where[1])]
    if dead_lines and share > th.dead_rows_warn:
        out.append(EK804.at(where[0], f"{text}: over probe-dead-rows-warn "
                            f"{th.dead_rows_warn:.0%}", line=where[1], severity=Severity.WARNING))
    cheats = gameable(scores, oracle, scale, th.margin)
    if cheats:
        listed = ", ".join(f"`{s.policy}` {s.mean:.3g}" for s in cheats)
        out.append(EK801.at(where[0], f"`{agent}`: content-free replies score as well as the "
                            f"reference answer (`{oracle.policy}` {oracle.mean:.3g}): {listed} "
                            f"(margin {th.margin:g} of the reward range)", line=where[1]))
    return out


def _maxed_out(agent: str, scores: Mapping[str, PolicyScore], scale: RewardScale,
               where: Where) -> list[Diagnostic]:
    """Without a reference: content-free replies that get the best reward are gameable (no
    answer can do better)."""
    best = [s for s in scores.values() if s.kind == "content-free" and s.mean is not None
            and scale.goodness(s.mean) >= 1.0 - TOLERANCE]
    if not best:
        return []
    listed = ", ".join(f"`{s.policy}`" for s in best)
    return [EK801.at(where[0], f"`{agent}`: content-free replies get the best reward "
                     f"({scale.upper if scale.higher_is_better else scale.lower:g}) on every "
                     f"row: {listed}", line=where[1])]


def assess_agent(agent: str, scores: Mapping[str, PolicyScore],
                 found: Mapping[tuple[str, int], Spread], scale: RewardScale, th: Thresholds,
                 where: Where, *, stochastic: str | None = None,
                 oracle_field: str | None = None,
                 field_search: FieldSearch | None = None) -> AgentAssessment:
    """Every finding for one agent's rows, causes before their consequences."""
    diags = failed_rollouts(agent, scores, where) + _unstable(agent, found, where, stochastic)
    oracle_name = choose_oracle(scores, scale)
    dead: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    if not any(s.kind == "oracle" for s in scores.values()):
        fields = f"`{oracle_field}`" if oracle_field else "a reference answer"
        diags.append(EK808.at(where[0], f"`{agent}`: no probed row carries {fields}: the "
                              "checks against the reference were skipped", line=where[1]))
        diags += _maxed_out(agent, scores, scale, where)
    elif oracle_name is not None:
        dead = dead_rows(scores)
        diags += _reward_checks(agent, scores, scores[oracle_name], dead, scale, th, where,
                                field_search)
    return AgentAssessment(agent, oracle_name, dead[0], dead[1], dict(found), tuple(diags))


def load_diagnostics(levels: Sequence[LoadLevel], concurrency: int, timeout_s: float,
                     where: Where) -> list[Diagnostic]:
    """EK805 for failures at or below ``concurrency``, EK806 for p99 over ``timeout_s``."""
    out = []
    broken = [lv for lv in levels if lv.failed and lv.concurrency <= concurrency]
    if broken:
        first = broken[0]
        counts = ", ".join(f"{lv.failed}/{lv.requests} at {lv.concurrency}" for lv in broken)
        out.append(EK805.at(where[0], f"rollouts failed under load ({counts} in flight; the "
                            f"job sends {concurrency}); first: {(first.first_failure or '')[:200]}",
                            line=where[1]))
    at_job = [lv for lv in levels if lv.concurrency == concurrency]
    p99 = percentile(at_job[0].latencies_s, 99) if at_job else None
    if p99 is not None and p99 > timeout_s:
        out.append(EK806.at(where[0], f"p99 rollout latency {p99:.1f}s at concurrency "
                            f"{concurrency} is over the rollout timeout {timeout_s:g}s",
                            line=where[1]))
    return out
