"""The phase interface: what every step of a probe gets, and what it gives back.

Why phases: the package is brought up once and each question (is the reward honest and
stable? does it survive the job's load? what do the policy's own groups give?) is one phase
over the same running servers, in order, each reading what the earlier ones found. A new
question is one more entry in ``envkit.probe.run.PHASES``, touching no other phase; one that
needs no running servers (Gym's verifier fixtures) ignores ``ctx.live``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from envkit.probe.progress import NO_PROGRESS, Progress

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from envkit.model.diagnostics import Diagnostic
    from envkit.probe.analysis.job import ProbeJob
    from envkit.probe.analysis.observations import ProbeRow, RewardScale
    from envkit.probe.analysis.verdicts import Where
    from envkit.probe.phases.session import LiveProbe
    from envkit.probe.policies import Policy
    from envkit.probe.thresholds import Thresholds

__all__ = ["Phase", "PhaseResult", "ProbeContext"]


class PhaseResult(Protocol):
    """What a phase found: its diagnostics and its JSON section (``phases.<name>``)."""

    @property
    def name(self) -> str: ...

    @property
    def diagnostics(self) -> Sequence[Diagnostic]: ...

    def to_dict(self) -> dict[str, Any]: ...


class Phase(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, ctx: ProbeContext) -> PhaseResult:
        """Observe through ``ctx.live`` and judge; never raises over a package defect.

        :raises ProbeAbortedError: the servers stopped serving.
        """
        ...


@dataclass
class ProbeContext:
    """Everything a phase reads; ``results`` holds the earlier phases' results by name."""

    live: LiveProbe
    rows: Mapping[str, Sequence[ProbeRow]]
    """Agent -> its probed rows (the dataset's first ``probe-rows``)."""
    job: ProbeJob
    thresholds: Thresholds
    panel: Sequence[Policy]
    scale: RewardScale
    where: Mapping[str, Where]
    """Agent -> where it is defined (findings point there); ``""``: the package itself."""
    stochastic: str | None = None
    """Why the reward may vary (a judge, a manifest), or None."""
    resources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Agent -> the resources servers that score it (their ``/verify`` request models)."""
    oracle_field: str | None = None
    progress: Progress = NO_PROGRESS
    dataset: Path | None = None
    """The dataset directory (where ``envkit build`` moved a server's ``.jsonl`` files)."""
    results: dict[str, PhaseResult] = field(default_factory=dict)

    def where_of(self, agent: str) -> Where:
        return self.where.get(agent) or self.where.get("") or ("nemo-environment.yaml", None)
