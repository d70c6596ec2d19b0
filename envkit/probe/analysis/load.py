"""The load curve: oracle rollouts replayed at rising concurrency, up to what the job sends.

Pure over the measured levels (EK805 / EK806: ``analysis.verdicts``). The **knee** is the
lowest level whose throughput reaches ``KNEE_SHARE`` of the best: past it, more rollouts in
flight buy little. The projected time per step is the environment's share only (the scripted
policy answers at once): a lower bound on the step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["KNEE_SHARE", "LoadLevel", "knee", "levels_for", "percentile", "projected_step_s"]

KNEE_SHARE = 0.9


@dataclass(frozen=True, slots=True)
class LoadLevel:
    """One level: ``requests`` rollouts with ``concurrency`` in flight."""

    concurrency: int
    requests: int
    latencies_s: tuple[float, ...]
    """Successful rollouts only."""
    failed: int
    wall_s: float
    first_failure: str | None = None

    @property
    def ok(self) -> int:
        return len(self.latencies_s)

    @property
    def throughput(self) -> float:
        return self.ok / self.wall_s if self.wall_s > 0 else 0.0

    def p(self, q: float) -> float | None:
        return percentile(self.latencies_s, q)


def levels_for(concurrency: int) -> tuple[int, ...]:
    """1, 2, 4, ... below ``concurrency``, then ``concurrency``.

    >>> levels_for(8), levels_for(12), levels_for(1)
    ((1, 2, 4, 8), (1, 2, 4, 8, 12), (1,))
    """
    levels, level = [], 1
    while level < concurrency:
        levels.append(level)
        level *= 2
    return (*levels, max(concurrency, 1))


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..100); ``None`` for no values.

    >>> percentile([0.4, 0.1, 0.3, 0.2], 50), percentile([1.0, 2.0], 99), percentile([], 50)
    (0.2, 2.0, None)
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def knee(levels: Sequence[LoadLevel]) -> int | None:
    """The lowest concurrency reaching ``KNEE_SHARE`` of the best throughput.

    >>> mk = lambda c, n, w: LoadLevel(c, n, (0.1,) * n, 0, w)
    >>> knee([mk(1, 3, 1.0), mk(2, 6, 1.0), mk(4, 12, 1.9), mk(8, 24, 3.9)])  # 3, 6, 6.3, 6.2/s
    2
    """
    best = max((lv.throughput for lv in levels), default=0.0)
    if best <= 0:
        return None
    return next(lv.concurrency for lv in levels if lv.throughput >= KNEE_SHARE * best)


def projected_step_s(levels: Sequence[LoadLevel], rollouts_per_step: int) -> float | None:
    """Environment seconds per GRPO step at the highest level measured.

    >>> projected_step_s([LoadLevel(8, 16, (0.5,) * 16, 0, 2.0)], 32)
    4.0
    """
    if not levels or levels[-1].throughput <= 0:
        return None
    return rollouts_per_step / levels[-1].throughput
