"""What the probe observed, as plain values the analyses read: rows, rewards, the reward scale.

Why a failure has no reward here: a rollout that errored or timed out never enters a mean (Gym
itself treats it as an infrastructure failure, not a score of zero).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TOLERANCE", "Observation", "PolicyScore", "ProbeRow", "RewardScale", "rounded",
           "score_table"]

TOLERANCE = 1e-9
"""Two rewards closer than this are equal (float noise is not a different verdict)."""


def rounded(value: float | None) -> float | None:
    """A number as the probe's and the profile's JSON print it."""
    return None if value is None else round(value, 6)


@dataclass(frozen=True, slots=True)
class ProbeRow:
    """One dataset row the probe sends; its ``line`` names it."""

    agent: str
    line: int
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Observation:
    """One rollout: which policy, which row (its dataset line), which repeat, what came back."""

    agent: str
    policy: str
    row: int
    repeat: int = 0
    reward: float | None = None
    failure: str | None = None
    latency_s: float | None = None
    output: tuple[str, ...] = ()
    """The types of the response's output items: the shape the reply reached the verifier in."""

    @property
    def ok(self) -> bool:
        return self.failure is None and self.reward is not None


@dataclass(frozen=True, slots=True)
class RewardScale:
    """The reward's declared range and direction."""

    lower: float = 0.0
    upper: float = 1.0
    higher_is_better: bool = True
    source: str = "default"

    @property
    def width(self) -> float:
        return max(self.upper - self.lower, TOLERANCE)

    def goodness(self, reward: float) -> float:
        """``reward`` as a share of the range from worst (0) to best (1).

        >>> RewardScale(0.0, 2.0).goodness(0.5), RewardScale(0, 1, False).goodness(0.25)
        (0.25, 0.75)
        """
        share = (reward - self.lower) / self.width
        return share if self.higher_is_better else 1.0 - share


@dataclass(frozen=True, slots=True)
class PolicyScore:
    """One policy on one agent's rows: the mean over every reward, and per row."""

    policy: str
    kind: str
    mean: float | None
    per_row: Mapping[int, float]
    """Dataset line -> the mean of its repeats."""
    scored: int
    failed: int
    first_failure: str | None = None


def score_table(observations: Iterable[Observation],
                kinds: Mapping[str, str]) -> dict[str, dict[str, PolicyScore]]:
    """agent -> policy -> :class:`PolicyScore`, policies in ``kinds``' order.

    >>> obs = [Observation("a", "p", 1, 0, 1.0), Observation("a", "p", 1, 1, 0.0),
    ...        Observation("a", "p", 2, 0, failure="HTTP 500")]
    >>> s = score_table(obs, {"p": "oracle"})["a"]["p"]
    >>> (s.mean, dict(s.per_row), s.scored, s.failed)
    (0.5, {1: 0.5}, 2, 1)
    """
    rewards: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(dict)
    failures: dict[tuple[str, str], list[str]] = defaultdict(list)
    for obs in observations:
        if obs.ok:
            rewards[obs.agent, obs.policy].setdefault(obs.row, []).append(float(obs.reward or 0))
        else:
            failures[obs.agent, obs.policy].append(obs.failure or "no reward")
    table: dict[str, dict[str, PolicyScore]] = {}
    for agent in sorted({a for a, _ in (*rewards, *failures)}):
        table[agent] = {}
        for policy, kind in kinds.items():
            by_row = rewards.get((agent, policy), {})
            failed = failures.get((agent, policy), [])
            if not by_row and not failed:
                continue
            values = [v for vs in by_row.values() for v in vs]
            table[agent][policy] = PolicyScore(
                policy, kind, sum(values) / len(values) if values else None,
                {row: sum(vs) / len(vs) for row, vs in sorted(by_row.items())},
                len(values), len(failed), failed[0] if failed else None)
    return table
