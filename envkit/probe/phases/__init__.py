"""The phase interface: what every step of a probe gets, and what it gives back.

Why phases: the package is brought up once and each question (is the reward honest? does it
survive the job's load? ...) is one phase over the same running servers, in order, each
reading what the earlier ones found; a new question is one more entry in ``PHASES``.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

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

__all__ = ["NO_PROGRESS", "Phase", "PhaseResult", "ProbeContext", "Progress", "RichProgress"]


class Progress(Protocol):
    def phase(self, name: str, total: int) -> contextlib.AbstractContextManager[
            Callable[[int], None]]:
        """``with progress.phase("scoring", 240) as advance: advance(1)``."""
        ...


class _Silent:
    def phase(self, name: str, total: int) -> contextlib.AbstractContextManager[
            Callable[[int], None]]:
        return contextlib.nullcontext(lambda n=1: None)


NO_PROGRESS: Progress = _Silent()


class RichProgress:
    """One bar per phase, on stderr; rich only draws it when stderr is a terminal."""

    @contextlib.contextmanager
    def phase(self, name: str, total: int) -> Iterator[Callable[[int], None]]:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TimeElapsedColumn
        from rich.progress import Progress as Bars

        columns = ("[bold]{task.description}", BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        with Bars(*columns, console=Console(file=sys.stderr), transient=False) as bar:
            task = bar.add_task(name, total=total)
            yield functools.partial(bar.advance, task)


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
    job: ProbeJob
    thresholds: Thresholds
    panel: Sequence[Policy]
    scale: RewardScale
    where: Mapping[str, Where]
    """Agent -> where it is defined (findings point there); ``""``: the package itself."""
    stochastic: str | None = None
    """Why the reward may vary, or None."""
    resources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Agent -> the resources servers that score it (their ``/verify`` request models)."""
    oracle_field: str | None = None
    progress: Progress = NO_PROGRESS
    dataset: Path | None = None
    results: dict[str, PhaseResult] = field(default_factory=dict)

    def where_of(self, agent: str) -> Where:
        return self.where.get(agent) or self.where.get("") or ("nemo-environment.yaml", None)
