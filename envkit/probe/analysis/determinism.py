"""Determinism: the same reply on the same row, scored ``probe-repeats`` times, must get the
same reward. Pure over the observations.

The documented rule (``envkit rule EK803``): any spread above ``TOLERANCE`` between the
repeats of one (policy, row) is an error; it is a warning instead when the package declares
that its reward may vary -- a resources server that refers to a judge model, or a Gym
``manifest.yaml`` with ``determinism: stochastic`` (``envkit.probe.analysis.declared``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from envkit.probe.analysis.observations import TOLERANCE

if TYPE_CHECKING:
    from collections.abc import Iterable

    from envkit.probe.analysis.observations import Observation

__all__ = ["Spread", "spreads"]

Spread = tuple[float, float]
"""(lowest, highest) reward of one (policy, row)'s repeats."""


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
