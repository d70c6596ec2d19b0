"""Reward integrity per agent: which oracle rendering counts, whether the oracle ever scores,
and which content-free replies score as well as it. Pure functions over a score table.

The documented rules (``envkit rule EK801`` / ``EK802``), on rewards mapped to the reward
range (0 = worst, 1 = best, :meth:`RewardScale.goodness`):

- the **oracle** of an agent is its best-scoring rendering of the reference (ties: the first
  in ``policies.RENDERINGS``);
- the oracle **never scores** when it gets the worst reward on every row it was scored on;
- a content-free reply is **gameable** when its mean is above the worst reward and at least
  the oracle's mean minus ``probe-margin`` (a share of the range): it earns reward, and about
  as much as the right answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.probe.analysis.observations import TOLERANCE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from envkit.probe.analysis.observations import PolicyScore, RewardScale

__all__ = ["choose_oracle", "gameable", "oracle_never_scores"]


def choose_oracle(scores: Mapping[str, PolicyScore], scale: RewardScale) -> str | None:
    """The oracle rendering with the best mean (first on ties); ``None``: none was scored.

    >>> from envkit.probe.analysis.observations import PolicyScore, RewardScale
    >>> s = {"oracle:bare": PolicyScore("oracle:bare", "oracle", 0.0, {}, 8, 0),
    ...      "oracle:boxed": PolicyScore("oracle:boxed", "oracle", 1.0, {}, 8, 0)}
    >>> choose_oracle(s, RewardScale())
    'oracle:boxed'
    """
    best: tuple[float, str] | None = None
    for name, score in scores.items():
        if score.kind != "oracle" or score.mean is None:
            continue
        value = scale.goodness(score.mean)
        if best is None or value > best[0] + TOLERANCE:
            best = (value, name)
    return None if best is None else best[1]


def oracle_never_scores(oracle: PolicyScore, scale: RewardScale) -> bool:
    """Every row the oracle was scored on got the worst reward."""
    return bool(oracle.per_row) and all(
        scale.goodness(v) <= TOLERANCE for v in oracle.per_row.values())


def gameable(scores: Mapping[str, PolicyScore], oracle: PolicyScore, scale: RewardScale,
             margin: float) -> list[PolicyScore]:
    """Content-free policies that earn reward within ``margin`` of the oracle's mean.

    >>> from envkit.probe.analysis.observations import PolicyScore, RewardScale
    >>> o = PolicyScore("oracle:bare", "oracle", 0.9, {}, 8, 0)
    >>> s = {"echo": PolicyScore("echo", "content-free", 0.85, {}, 8, 0),
    ...      "empty": PolicyScore("empty", "content-free", 0.0, {}, 8, 0),
    ...      "noise": PolicyScore("noise", "content-free", 0.5, {}, 8, 0)}
    >>> [p.policy for p in gameable(s, o, RewardScale(), 0.1)]
    ['echo']
    """
    if oracle.mean is None:
        return []
    bar = scale.goodness(oracle.mean) - margin
    found = []
    for score in scores.values():
        if score.kind != "content-free" or score.mean is None:
            continue
        value = scale.goodness(score.mean)
        if value > TOLERANCE and value >= bar - TOLERANCE:
            found.append(score)
    return found
