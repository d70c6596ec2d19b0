"""Learning signal without a model: rows on which every reply gets the same reward.

GRPO's advantage is a sample's reward minus its group's baseline; on a row where the right
answer and every content-free reply score alike, every group the policy samples there is
likely to agree too, so the row contributes no gradient (and dynamic sampling drops it). The
rule (``envkit rule EK804``): a row is **judged** when the oracle and at least one content-free
reply were scored on it, and **dead** when the per-row mean rewards of every policy scored on
it (each oracle rendering included) lie within ``TOLERANCE`` of each other.

A phase that samples a real policy (``--model``) measures the same thing on the job's groups;
this is its model-free lower bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.probe.analysis.observations import TOLERANCE

if TYPE_CHECKING:
    from collections.abc import Mapping

    from envkit.probe.analysis.observations import PolicyScore

__all__ = ["dead_rows"]


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
