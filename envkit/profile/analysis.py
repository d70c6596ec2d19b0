"""Which rows teach: per-row pass rate, mean and spread of G sampled rewards, and the band a
curated dataset keeps. Pure: numbers in, numbers out.

Why a band: a GRPO group learns only from rewards that differ, so a row whose G replies all
pass, or all fail, spends a step's compute on zero advantages. A failed rollout is never a
reward: it counts in ``failed`` and in no statistic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envkit.errors import UsageError
from envkit.probe.analysis.observations import rounded
from envkit.probe.analysis.zero_variance import group_signal

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "Band",
    "BandError",
    "RowProfile",
    "kept_rows",
    "parse_band",
    "row_profile",
    "zero_variance_share",
]


class BandError(UsageError, ValueError):
    """``--keep`` is not ``LOW,HIGH`` with ``0 <= LOW <= HIGH <= 1``."""


@dataclass(frozen=True, slots=True)
class Band:
    """The pass rates a curated dataset keeps, both ends included."""

    low: float
    high: float

    def holds(self, pass_rate: float | None) -> bool:
        """A row with no scored reply is never inside.

        >>> Band(0.1, 0.9).holds(0.5), Band(0.1, 0.9).holds(1.0), Band(0.0, 1.0).holds(None)
        (True, False, False)
        """
        return pass_rate is not None and self.low <= pass_rate <= self.high

    def to_list(self) -> list[float]:
        return [self.low, self.high]


def parse_band(text: str) -> Band:
    """``"LOW,HIGH"`` -> :class:`Band`.

    >>> parse_band("0.1,0.9")
    Band(low=0.1, high=0.9)

    :raises BandError: not two numbers, out of [0, 1], or LOW above HIGH.
    """
    parts = [p.strip() for p in text.split(",")]
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        msg = f"--keep {text!r}: give LOW,HIGH, two pass rates such as 0.1,0.9"
        raise BandError(msg) from None
    if not 0.0 <= low <= high <= 1.0:  # NaN compares false too
        msg = f"--keep {text!r}: need 0 <= LOW <= HIGH <= 1"
        raise BandError(msg)
    return Band(low, high)


@dataclass(frozen=True, slots=True)
class RowProfile:
    split: str
    index: int
    """The row's position in its split's file (0-based)."""
    rewards: tuple[float, ...]
    failed: int
    pass_rate: float | None
    mean: float | None
    std: float | None
    """Population standard deviation of the scored rewards."""
    first_failure: str | None = None

    @property
    def samples(self) -> int:
        return len(self.rewards) + self.failed

    def to_dict(self) -> dict[str, Any]:
        """One line of ``profile.jsonl`` (``envkit schema profile``: ``$defs.row``)."""
        return {"split": self.split, "index": self.index, "samples": self.samples,
                "failed": self.failed, "pass_rate": rounded(self.pass_rate),
                "mean": rounded(self.mean), "std": rounded(self.std),
                "min": rounded(min(self.rewards)) if self.rewards else None,
                "max": rounded(max(self.rewards)) if self.rewards else None,
                "rewards": [rounded(r) for r in self.rewards], "first_failure": self.first_failure}


def row_profile(split: str, index: int, rewards: Sequence[float], failures: Sequence[str] = (),
                *, pass_threshold: float = 1.0) -> RowProfile:
    """The statistics of one row's scored ``rewards``.

    >>> p = row_profile("training", 0, [1.0, 0.0, 1.0, 1.0])
    >>> p.pass_rate, p.mean, round(p.std, 3)
    (0.75, 0.75, 0.433)
    >>> row_profile("training", 1, [], ["timeout"]).pass_rate is None
    True
    """
    scored = tuple(float(r) for r in rewards)
    first = failures[0] if failures else None
    if not scored:
        return RowProfile(split, index, (), len(failures), None, None, None, first)
    mean = sum(scored) / len(scored)
    std = math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored))
    passed = sum(1 for r in scored if r >= pass_threshold)
    return RowProfile(split, index, scored, len(failures), passed / len(scored), mean, std, first)


def zero_variance_share(rows: Iterable[RowProfile]) -> float | None:
    """The share of rows whose scored replies all got the same reward, as ``envkit probe
    --model`` counts them.

    >>> zero_variance_share([row_profile("training", 0, [1.0, 1.0]),
    ...                      row_profile("training", 1, [0.0, 1.0])])
    0.5
    """
    return group_signal([p.rewards for p in rows]).zero_variance_share


def kept_rows(rows: Iterable[RowProfile], band: Band) -> list[RowProfile]:
    """The rows whose pass rate lies in ``band``.

    >>> rows = [row_profile("training", i, r) for i, r in enumerate([[1, 1], [0, 1], [0, 0]])]
    >>> [p.index for p in kept_rows(rows, Band(0.1, 0.9))]
    [1]
    """
    return [p for p in rows if band.holds(p.pass_rate)]
