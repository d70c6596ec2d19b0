"""The result of ``envkit profile``: the rows' statistics, the band and what it kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from envkit.probe.analysis.observations import rounded
from envkit.profile.analysis import kept_rows, zero_variance_share

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.profile.analysis import Band, RowProfile
    from envkit.profile.sampling import Sampled

__all__ = ["ProfileDict", "ProfileReport", "split_counts"]


class _JobDict(TypedDict):
    source: str
    group_size: int
    temperature: float
    top_k: int | None
    max_new_tokens: int
    seed: int


class _KeepDict(TypedDict):
    band: list[float]
    rows: dict[str, dict[str, int]]
    zero_variance_share_after: float | None
    dataset: str | None


class ProfileDict(TypedDict):
    """``envkit profile --output-format json`` (``envkit schema profile``, version 1.0)."""

    version: Literal["1.0"]
    model: str
    backend: str
    job: _JobDict
    pass_threshold: float
    rows_profiled: int
    rollouts: int
    failed: int
    aborted: str | None
    mean_reward: float | None
    zero_variance_share: float | None
    keep: _KeepDict | None
    profile: str | None
    ready_s: float
    rollout_s: float
    rows: list[dict[str, Any]]


def split_counts(rows: tuple[RowProfile, ...], kept: list[RowProfile]) -> dict[str, dict[str, int]]:
    """``{split: {"profiled": n, "kept": k}}``."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        out.setdefault(row.split, {"profiled": 0, "kept": 0})["profiled"] += 1
    for row in kept:
        out[row.split]["kept"] += 1
    return out


@dataclass(frozen=True, slots=True)
class ProfileReport:
    """The profiled rows and, with ``--keep``, the band and where the curated dataset went."""

    model: str
    backend: str
    pass_threshold: float
    sampled: Sampled
    band: Band | None = None
    profile_path: Path | None = None
    dataset_path: Path | None = None

    @property
    def rows(self) -> tuple[RowProfile, ...]:
        return self.sampled.rows

    @property
    def kept(self) -> list[RowProfile]:
        return kept_rows(self.rows, self.band) if self.band is not None else list(self.rows)

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.rows)

    @property
    def zero_variance_before(self) -> float | None:
        return zero_variance_share(self.rows)

    @property
    def zero_variance_after(self) -> float | None:
        return zero_variance_share(self.kept)

    @property
    def mean_reward(self) -> float | None:
        scored = [x for r in self.rows for x in r.rewards]
        return sum(scored) / len(scored) if scored else None

    @property
    def exit_code(self) -> int:
        """0 when every reply was scored; 1 when a rollout failed or the run was cut short."""
        return 1 if self.failed or self.sampled.aborted or not self.rows else 0

    def to_dict(self) -> ProfileDict:
        job = self.sampled.job
        keep: _KeepDict | None = None
        if self.band is not None:
            keep = {"band": self.band.to_list(), "rows": split_counts(self.rows, self.kept),
                    "zero_variance_share_after": rounded(self.zero_variance_after),
                    "dataset": str(self.dataset_path) if self.dataset_path else None}
        return {
            "version": "1.0", "model": self.model, "backend": self.backend,
            "job": {"source": job.source, "group_size": job.group_size,
                    "temperature": job.temperature, "top_k": job.top_k,
                    "max_new_tokens": job.max_new_tokens, "seed": job.seed},
            "pass_threshold": self.pass_threshold, "rows_profiled": len(self.rows),
            "rollouts": sum(r.samples for r in self.rows), "failed": self.failed,
            "aborted": self.sampled.aborted, "mean_reward": rounded(self.mean_reward),
            "zero_variance_share": rounded(self.zero_variance_before), "keep": keep,
            "profile": str(self.profile_path) if self.profile_path else None,
            "ready_s": round(self.sampled.ready_s, 3),
            "rollout_s": round(self.sampled.rollout_s, 3),
            "rows": [r.to_dict() for r in self.rows],
        }
