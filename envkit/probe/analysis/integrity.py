"""Reward integrity per agent: which oracle rendering counts, whether the oracle ever scores,
which content-free replies score as well as it, and whether repeats agree (EK801 / EK802 /
EK803). Pure functions over a score table and the observations, on rewards mapped to the
reward range (:meth:`RewardScale.goodness`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from envkit.probe.analysis.observations import TOLERANCE

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from envkit.probe.analysis.observations import Observation, PolicyScore, RewardScale

__all__ = ["Spread", "choose_oracle", "gameable", "oracle_never_scores", "spreads"]

Spread = tuple[float, float]
"""(lowest, highest) reward of one (policy, row)'s repeats."""


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
    """Content-free policies that earn reward, within ``margin`` of the oracle's mean.

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
    return [s for s in scores.values() if s.kind == "content-free" and s.mean is not None
            and (value := scale.goodness(s.mean)) > TOLERANCE and value >= bar - TOLERANCE]


def spreads(observations: Iterable[Observation]) -> dict[str, dict[tuple[str, int], Spread]]:
    """agent -> (policy, dataset line) -> (low, high), only where the repeats disagree.

    >>> from envkit.probe.analysis.observations import Observation as O
    >>> spreads([O("a", "p", 1, 0, 0.5), O("a", "p", 1, 1, 0.7), O("a", "p", 2, 0, 1.0),
    ...          O("a", "p", 2, 1, 1.0), O("a", "q", 2, 0, failure="HTTP 500")])
    {'a': {('p', 1): (0.5, 0.7)}}
    """
    seen: dict[str, dict[tuple[str, int], list[float]]] = defaultdict(lambda: defaultdict(list))
    for obs in observations:
        if obs.ok and obs.reward is not None:
            seen[obs.agent][obs.policy, obs.row].append(obs.reward)
    out: dict[str, dict[tuple[str, int], Spread]] = {}
    for agent, by_pair in seen.items():
        wide = {pair: (min(vs), max(vs)) for pair, vs in by_pair.items()
                if max(vs) - min(vs) > TOLERANCE}
        if wide:
            out[agent] = wide
    return out
