"""Learning signal: what the replies on a row leave GRPO to learn from. Pure over floats.

Without a model (EK804): on a row where the right answer and every content-free reply score
alike, every group the policy samples there is likely to agree too. With a real policy
(``--model``: EK810, EK811): the trainer's definitions (``envkit.trainer.advantages`` and
``envkit.trainer.dynamic_sampling``) restated over plain floats, so the probe reads what a
training step will see without a tensor (``tests/probe/test_zero_variance.py`` checks them
against the trainer's own functions). A *group* is the G scored replies to one prompt.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envkit.probe.analysis.observations import TOLERANCE

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.probe.analysis.observations import PolicyScore

__all__ = ["GroupSignal", "dead_rows", "expected_gen_batches", "group_signal", "wilson"]


def dead_rows(scores: Mapping[str, PolicyScore]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(dead rows, judged rows) as dataset lines: judged when the oracle and a content-free
    reply were scored on it, dead when every policy's mean there is the same.

    >>> from envkit.probe.analysis.observations import PolicyScore
    >>> s = {"oracle:bare": PolicyScore("oracle:bare", "oracle", 0.5, {1: 1.0, 2: 0.0}, 2, 0),
    ...      "empty": PolicyScore("empty", "content-free", 0.0, {1: 0.0, 2: 0.0, 3: 0.0}, 3, 0)}
    >>> dead_rows(s)
    ((2,), (1, 2))
    """
    oracle_rows = {r for s in scores.values() if s.kind == "oracle" for r in s.per_row}
    free_rows = {r for s in scores.values() if s.kind == "content-free" for r in s.per_row}
    judged = tuple(sorted(oracle_rows & free_rows))
    values = {row: [s.per_row[row] for s in scores.values() if row in s.per_row] for row in judged}
    return tuple(row for row, vs in values.items() if max(vs) - min(vs) <= TOLERANCE), judged


def _std(values: Sequence[float]) -> float:
    """Sample std; 0 for fewer than two values, as the trainer's."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _baselines(rewards: Sequence[float], leave_one_out: bool) -> list[tuple[float, float]]:
    """(baseline, std) per sample of one group, as ``baseline_and_std`` computes them."""
    if len(rewards) <= 1:
        return [(r, 0.0) for r in rewards]
    if not leave_one_out:
        mean, std = sum(rewards) / len(rewards), _std(rewards)
        return [(mean, std) for _ in rewards]
    others = [[r for j, r in enumerate(rewards) if j != i] for i in range(len(rewards))]
    return [(sum(o) / len(o), _std(o)) for o in others]


@dataclass(frozen=True, slots=True)
class GroupSignal:
    """Counts over one agent's (or every agent's) groups."""

    groups: int
    zero_variance: int
    samples: int
    no_gradient: int
    kept: int
    """Samples dynamic sampling would keep (std not 0)."""

    @property
    def zero_variance_share(self) -> float | None:
        return self.zero_variance / self.groups if self.groups else None

    @property
    def no_gradient_share(self) -> float | None:
        return self.no_gradient / self.samples if self.samples else None

    @property
    def kept_share(self) -> float | None:
        return self.kept / self.samples if self.samples else None

    def __add__(self, other: GroupSignal) -> GroupSignal:
        return GroupSignal(self.groups + other.groups, self.zero_variance + other.zero_variance,
                           self.samples + other.samples, self.no_gradient + other.no_gradient,
                           self.kept + other.kept)


def group_signal(groups: Sequence[Sequence[float]], *, leave_one_out: bool = True) -> GroupSignal:
    """The counts over ``groups``: zero-variance groups (every advantage 0), samples with no
    gradient (advantage 0), and samples dynamic sampling keeps (std not 0).

    >>> s = group_signal([[0.0, 0.0, 0.0], [1.0, 0.0, 0.5], [0.25]])
    >>> (s.groups, s.zero_variance, s.samples, s.no_gradient, s.kept)
    (3, 2, 7, 5, 3)
    """
    counted = [list(g) for g in groups if g]
    zero = sum(1 for g in counted if len(g) < 2 or max(g) - min(g) <= TOLERANCE)
    no_gradient = kept = 0
    for rewards in counted:
        for reward, (baseline, std) in zip(rewards, _baselines(rewards, leave_one_out),
                                           strict=True):
            no_gradient += abs(reward - baseline) <= TOLERANCE
            kept += std > TOLERANCE
    return GroupSignal(len(counted), zero, sum(map(len, counted)), no_gradient, kept)


def expected_gen_batches(kept_share: float | None, prompts_per_step: int,
                         batch_multiplier: float) -> int | None:
    """Generation batches dynamic sampling needs per step on average; None: it never fills.

    >>> expected_gen_batches(0.5, 4, 1.0), expected_gen_batches(1.0, 4, 1.5)
    (2, 1)
    >>> expected_gen_batches(0.0, 4, 1.0) is None
    True
    """
    per_batch = int(prompts_per_step * batch_multiplier)
    if not kept_share or per_batch < 1:
        return None
    return max(1, math.ceil(prompts_per_step / (per_batch * kept_share) - 1e-9))


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of a binomial share; None without trials.

    Why Wilson: it stays inside [0, 1] and is honest at 0% and 100%, where the normal
    approximation claims no uncertainty at all.

    >>> lo, hi = wilson(6, 10)
    >>> round(lo, 3), round(hi, 3)
    (0.313, 0.832)
    """
    if trials <= 0:
        return None
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
