"""What ``envkit rescore`` found: per row the recorded reward and the current verifier's.

``changed`` compares the rewards exactly: a verifier change is what rescore is for, and a
reward that moved by 1e-9 moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

__all__ = ["RescoreDict", "RescoreReport", "RowScore", "Status"]

Status = Literal["rescored", "refused", "failed"]


class RowDict(TypedDict):
    line: int
    agent: str
    old_reward: float | None
    new_reward: float | None
    status: Status
    changed: bool
    reason: str


class SummaryDict(TypedDict):
    rows: int
    rescored: int
    refused: int
    failed: int
    changed: int
    increased: int
    decreased: int
    mean_old: float | None
    mean_new: float | None


class RescoreDict(TypedDict):
    """``envkit schema rescore``."""

    version: Literal["1.0"]
    run_dir: str
    package: str
    rollouts: str
    package_changed: bool | None
    summary: SummaryDict
    rows: list[RowDict]
    output: str | None


@dataclass(frozen=True, slots=True)
class RowScore:
    """One recorded rollout: its ``line`` in the rollouts file, its agent and rewards."""

    line: int
    agent: str
    old_reward: float | None
    new_reward: float | None
    status: Status
    reason: str = ""

    @property
    def changed(self) -> bool:
        return self.status == "rescored" and self.new_reward != self.old_reward

    def to_json(self) -> RowDict:
        return {"line": self.line, "agent": self.agent, "old_reward": self.old_reward,
                "new_reward": self.new_reward, "status": self.status, "changed": self.changed,
                "reason": self.reason}


@dataclass(frozen=True, slots=True)
class RescoreReport:
    run_dir: str
    package: str
    rollouts: str
    package_changed: bool | None
    """The package's digest now differs from the run's (``None``: the run recorded none)."""
    rows: tuple[RowScore, ...]
    output: str | None = None

    def count(self, status: Status) -> int:
        return sum(r.status == status for r in self.rows)

    @property
    def changed(self) -> tuple[RowScore, ...]:
        return tuple(r for r in self.rows if r.changed)

    @property
    def exit_code(self) -> int:
        """0 when every row was scored again, 1 when one was refused or failed."""
        return 0 if self.rows and self.count("rescored") == len(self.rows) else 1

    def summary(self) -> SummaryDict:
        scored = [r for r in self.rows if r.status == "rescored"]
        up = sum(1 for r in self.changed if (r.new_reward or 0.0) > (r.old_reward or 0.0))
        return {
            "rows": len(self.rows), "rescored": len(scored), "refused": self.count("refused"),
            "failed": self.count("failed"), "changed": len(self.changed), "increased": up,
            "decreased": len(self.changed) - up,
            "mean_old": _mean([r.old_reward for r in scored]),
            "mean_new": _mean([r.new_reward for r in scored]),
        }

    def to_json(self) -> RescoreDict:
        return {"version": "1.0", "run_dir": self.run_dir, "package": self.package,
                "rollouts": self.rollouts, "package_changed": self.package_changed,
                "summary": self.summary(), "rows": [r.to_json() for r in self.rows],
                "output": self.output}


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None
