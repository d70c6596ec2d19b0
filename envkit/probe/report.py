"""The verdict of one probe run and its versioned JSON form (``envkit schema probe``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from envkit.model.diagnostics import Severity
from envkit.probe.analysis.observations import rounded
from envkit.probe.phases.load import LoadResult
from envkit.probe.phases.model import SignalResult
from envkit.probe.phases.reasoning import ReasoningResult
from envkit.probe.phases.scoring import ScoringResult
from envkit.probe.policies import REASONING
from envkit.smoke.isolation import IsolationDict
from envkit.validate.report import DiagnosticDict, Report, ReportDict

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.diagnostics import Diagnostic
    from envkit.probe.analysis.job import ProbeJob
    from envkit.probe.analysis.observations import RewardScale
    from envkit.probe.phases import PhaseResult
    from envkit.probe.policies import Policy
    from envkit.probe.thresholds import Thresholds

__all__ = ["PROBE_VERSION", "ProbeDict", "ProbeOutcome", "ProbeReport"]

PROBE_VERSION: Literal["1.2"] = "1.2"
"""1.1 added ``signal`` (``--model``: the policy's own groups) and ``probe-zero-variance-warn``;
1.2 ``reasoning`` (the reasoning renderings) and the tool-call policies."""


class ProbeDict(TypedDict):
    """``envkit schema probe``."""

    version: Literal["1.2"]
    passed: bool
    package: str
    dataset: str | None
    stage: str
    offline: bool
    isolation: IsolationDict | None
    codes: list[str]
    diagnostics: list[DiagnosticDict]
    static: ReportDict | None
    job: dict[str, Any] | None
    thresholds: dict[str, Any]
    reward: dict[str, Any]
    oracle_field: str | None
    policies: list[dict[str, str]]
    agents: list[dict[str, Any]]
    load: dict[str, Any] | None
    signal: dict[str, Any] | None
    reasoning: dict[str, Any] | None
    phases: dict[str, dict[str, Any]]
    timings: dict[str, float]
    png: str | None
    notes: list[str]
    log_tail: str


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """``stage`` is where the run stopped: validate, start, scoring, load, signal, or done."""

    package: str
    stage: str
    static: Report | None = None
    dataset: str | None = None
    offline: bool = False
    isolation: IsolationDict | None = None
    job: ProbeJob | None = None
    thresholds: Thresholds | None = None
    scale: RewardScale | None = None
    stochastic: str | None = None
    oracle_field: str | None = None
    panel: tuple[Policy, ...] = ()
    phases: tuple[PhaseResult, ...] = ()
    failure: Diagnostic | None = None
    """The bring-up's (or a dead server's) failure: no phase could finish."""
    log_tail: str = ""
    selection: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    strict: bool = False
    timings: dict[str, float] = field(default_factory=dict)
    png: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """The probe's own findings, filtered by the package's ``select``/``ignore``."""
        from envkit.model.diagnostics import selected

        found = [self.failure] if self.failure is not None else []
        found += [d for phase in self.phases for d in phase.diagnostics]
        select, ignore = self.selection
        return [d for d in found if selected(d.code, select, ignore)]

    @property
    def passed(self) -> bool:
        bad = {Severity.ERROR, Severity.WARNING} if self.strict else {Severity.ERROR}
        return self.stage == "done" and not any(d.severity in bad for d in self.diagnostics)

    def phase(self, name: str) -> PhaseResult | None:
        return next((p for p in self.phases if p.name == name), None)

    def findings(self) -> Report:
        """The static report with the probe's findings added, for the validate renderers."""
        base = self.static or Report(None, None, "", ())
        return replace(base, diagnostics=(*base.diagnostics, *self.diagnostics),
                       root=base.root or self.package, strict=self.strict)

    def to_dict(self) -> ProbeDict:
        own = replace(self.findings(), diagnostics=tuple(self.diagnostics))
        reasoning, signal = self.phase("reasoning"), self.phase("signal")
        if not isinstance(reasoning, ReasoningResult):
            reasoning = None
        played = [{"name": name, "kind": "reasoning", "description": text}
                  for name, text in REASONING] if reasoning is not None else []
        return {
            "version": PROBE_VERSION, "passed": self.passed, "package": self.package,
            "dataset": self.dataset, "stage": self.stage, "offline": self.offline,
            "isolation": self.isolation,
            "codes": sorted({d.code for d in self.diagnostics}),
            "diagnostics": own.to_dict()["diagnostics"],
            "static": self.static.to_dict() if self.static else None,
            "job": _job(self.job),
            "thresholds": asdict(self.thresholds) if self.thresholds else {},
            "reward": _reward(self.scale, self.stochastic),
            "oracle_field": self.oracle_field,
            "policies": [{"name": p.name, "kind": p.kind, "description": p.description}
                         for p in self.panel] + played,
            "agents": _agents(self.phase("scoring")),
            "load": _load(self.phase("load")),
            "signal": signal.report() if isinstance(signal, SignalResult) else None,
            "reasoning": reasoning.report() if reasoning is not None else None,
            "phases": {p.name: p.to_dict() for p in self.phases},
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "png": self.png, "notes": list(self.notes), "log_tail": self.log_tail,
        }


_JOB_KEYS = ("source", "concurrency", "rollouts_per_step", "max_new_tokens", "temperature",
             "group_size")


def _job(job: ProbeJob | None) -> dict[str, Any] | None:
    return None if job is None else {k: getattr(job, k) for k in _JOB_KEYS}


def _reward(scale: RewardScale | None, stochastic: str | None) -> dict[str, Any]:
    return {"range": [scale.lower, scale.upper] if scale else None,
            "higher_is_better": scale.higher_is_better if scale else None,
            "source": scale.source if scale else None, "stochastic": stochastic}


def _agents(phase: PhaseResult | None) -> list[dict[str, Any]]:
    if not isinstance(phase, ScoringResult):
        return []
    out = []
    for a in phase.assessments:
        scores = phase.table.get(a.agent, {})
        rows = sorted({o.row for o in phase.observations if o.agent == a.agent})
        out.append({
            "agent": a.agent, "rows": rows, "oracle": a.oracle,
            "policies": [{"policy": s.policy, "kind": s.kind, "mean": rounded(s.mean),
                          "scored": s.scored, "failed": s.failed,
                          "first_failure": s.first_failure,
                          "per_row": [{"row": r, "mean": rounded(v)} for r, v in s.per_row.items()]}
                         for s in scores.values()],
            "dead_rows": list(a.dead), "judged_rows": list(a.judged),
            "dead_share": rounded(a.dead_share),
            "unstable": [{"policy": p, "row": r, "low": rounded(lo), "high": rounded(hi)}
                         for (p, r), (lo, hi) in a.unstable.items()],
        })
    return out


def _load(phase: PhaseResult | None) -> dict[str, Any] | None:
    if not isinstance(phase, LoadResult):
        return None
    return {
        "concurrency": phase.concurrency, "rollouts_per_step": phase.rollouts_per_step,
        "knee": phase.knee, "projected_step_s": rounded(phase.projected_step_s),
        "timeout_s": phase.timeout_s, "aborted": phase.aborted,
        "levels": [{"concurrency": lv.concurrency, "requests": lv.requests, "ok": lv.ok,
                    "failed": lv.failed, "wall_s": rounded(lv.wall_s),
                    "throughput_rps": rounded(lv.throughput), "p50_s": rounded(lv.p(50)),
                    "p95_s": rounded(lv.p(95)), "p99_s": rounded(lv.p(99)),
                    "first_failure": lv.first_failure} for lv in phase.levels],
    }


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """The report and the package it is about, for ``envkit.output.render``."""

    report: ProbeReport
    package: Path
