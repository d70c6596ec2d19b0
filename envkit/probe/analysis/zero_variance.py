"""Learning signal: what the replies on a row leave GRPO to learn from. Pure over floats.

Without a model (``envkit rule EK804``): GRPO's advantage is a sample's reward minus its group's
baseline, so on a row where the right answer and every content-free reply score alike every
group the policy samples there is likely to agree too. A row is **judged** when the oracle and
at least one content-free reply were scored on it, and **dead** when the per-row mean rewards
of every policy scored on it (each oracle rendering included) lie within ``TOLERANCE`` of each
other: the model-free lower bound of what ``--model`` measures on the job's groups.

With a real policy (``--model``), by the trainer's definitions (``envkit.trainer.advantages``
and ``envkit.trainer.dynamic_sampling``, NeMo-RL's rules) restated over plain floats so the
probe reads what a training step will see without a tensor
(``tests/probe/test_zero_variance.py`` checks them against the trainer's own functions). A
*group* is the G replies to one prompt, failed rollouts left out (a failure is never a reward):

- a group is **zero-variance** when its scored rewards lie within ``TOLERANCE`` of each other
  (or fewer than two were scored): every advantage in it is 0 (``envkit rule EK810``);
- a sample **contributes no gradient** when its advantage, reward minus baseline, is 0; the
  baseline is the mean of the group's *other* samples with ``use_leave_one_out_baseline``,
  else the group's mean (a mixed group can hold such a sample too);
- **dynamic sampling keeps** a sample whose std, over the other samples with the leave-one-out
  baseline or over the group without it, is not 0; a step needs ``prompts x G`` kept samples
  and each generation batch brings ``int(prompts x batch_multiplier) x G``, so with a kept
  share ``q`` a step takes about ``ceil(prompts / (int(prompts x batch_multiplier) x q))``
  batches (``envkit rule EK811``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envkit.probe.analysis.observations import TOLERANCE

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.probe.analysis.observations import PolicyScore

__all__ = ["GroupSignal", "dead_rows", "expected_gen_batches", "group_signal", "wilson"]


def dead_rows(scores: Mapping[str, PolicyScore]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(dead rows, judged rows), each as dataset lines in order.

    >>> from envkit.probe.analysis.observations import PolicyScore
    >>> s = {"oracle:bare": PolicyScore("oracle:bare", "oracle", 0.5, {1: 1.0, 2: 0.0}, 2, 0),
    ...      "empty": PolicyScore("empty", "content-free", 0.0, {1: 0.0, 2: 0.0, 3: 0.0}, 3, 0)}
    >>> dead_rows(s)
    ((2,), (1, 2))
    """
    oracle_rows = {r for s in scores.values() if s.kind == "oracle" for r in s.per_row}
    free_rows = {r for s in scores.values() if s.kind == "content-free" for r in s.per_row}
    judged = tuple(sorted(oracle_rows & free_rows))
    dead = []
    for row in judged:
        values = [s.per_row[row] for s in scores.values() if row in s.per_row]
        if max(values) - min(values) <= TOLERANCE:
            dead.append(row)
    return tuple(dead), judged


def _std(values: Sequence[float]) -> float:
    """Sample std (Bessel-corrected); 0 for fewer than two values, as the trainer's."""
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _baselines(rewards: Sequence[float], leave_one_out: bool) -> list[tuple[float, float]]:
    """(baseline, std) per sample of one group, as ``baseline_and_std`` computes them."""
    if len(rewards) <= 1:
        return [(r, 0.0) for r in rewards]
    if not leave_one_out:
        mean, std = sum(rewards) / len(rewards), _std(rewards)
        return [(mean, std) for _ in rewards]
    out = []
    for i in range(len(rewards)):
        others = [r for j, r in enumerate(rewards) if j != i]
        out.append((sum(others) / len(others), _std(others)))
    return out


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
    """The counts over ``groups`` (each the scored rewards of one prompt; empty ones skipped).

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
    """The Wilson score interval of a binomial share (95% by default); None without trials.

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
