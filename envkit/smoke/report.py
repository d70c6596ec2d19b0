"""The verdict of one smoke run and its versioned JSON form (``envkit schema smoke``).

A spin-up failure is an ordinary :class:`~envkit.model.diagnostics.Diagnostic` (an EK7xx rule,
or the static rule whose defect it is), located at the config that defines the server and
wrapped with what it concerns and the log tail, so validate's renderers print it
(:meth:`SmokeReport.as_report`) and CI reads one diagnostic shape from both commands.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, TypedDict

from envkit.model.diagnostics import Diagnostic
from envkit.smoke.isolation import IsolationDict
from envkit.validate.report import (
    DiagnosticDict,
    Report,
    ReportDict,
    ValidationRun,
    diagnostic_dict,
)

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["SMOKE_VERSION", "AgentResult", "ServerResult", "SmokeFinding", "SmokeOutcome",
           "SmokeReport"]

SMOKE_VERSION: Literal["2.0"] = "2.0"


SmokeStage = Literal["validate", "setup", "start", "rollout", "done"]
"""Where a smoke run stopped."""


class FindingDict(DiagnosticDict):
    subject: str | None
    log_tail: str


class ServerDict(TypedDict):
    name: str
    server_type: str | None
    implementation: str | None
    ready: bool
    ready_s: float | None
    first_reward: float | None
    failure: FindingDict | None


class AgentDict(TypedDict):
    agent: str
    ok: bool
    rewards: list[float]
    synthetic_rows: bool
    failures: list[FindingDict]


class SmokeDict(TypedDict):
    """``envkit schema smoke``: ``envkit smoke`` and ``envkit validate --smoke``."""

    version: Literal["2.0"]
    passed: bool
    package: str
    stage: SmokeStage
    offline: bool
    isolation: IsolationDict | None
    codes: list[str]
    diagnostics: list[FindingDict]
    static: ReportDict | None
    servers: list[ServerDict]
    agents: list[AgentDict]
    timings: dict[str, float]
    policy_requests: int


@dataclass(frozen=True, slots=True)
class SmokeFinding:
    """One spin-up failure: the diagnostic, whom it concerns (a server or an agent instance;
    None: the run), and the evidence."""

    diagnostic: Diagnostic
    subject: str | None = None
    log_tail: str = ""

    @property
    def code(self) -> str:
        return self.diagnostic.code

    def to_dict(self, package: str | None, docs_url: str | None = None) -> FindingDict:
        return {**diagnostic_dict(self.diagnostic, package, docs_url), "subject": self.subject,
                "log_tail": self.log_tail}


@dataclass(frozen=True, slots=True)
class ServerResult:
    name: str
    server_type: str | None
    implementation: str | None
    ready: bool
    ready_s: float | None = None
    first_reward: float | None = None
    failure: SmokeFinding | None = None

    def to_dict(self, package: str | None, docs_url: str | None = None) -> ServerDict:
        return {
            "name": self.name, "server_type": self.server_type,
            "implementation": self.implementation, "ready": self.ready,
            "ready_s": None if self.ready_s is None else round(self.ready_s, 3),
            "first_reward": self.first_reward,
            "failure": self.failure.to_dict(package, docs_url) if self.failure else None,
        }


@dataclass(frozen=True, slots=True)
class AgentResult:
    agent: str
    rewards: tuple[float, ...] = ()
    failures: tuple[SmokeFinding, ...] = ()
    synthetic_rows: bool = False
    """No dataset row named this agent: a minimal row was sent."""

    @property
    def ok(self) -> bool:
        return bool(self.rewards) and not self.failures

    def to_dict(self, package: str | None, docs_url: str | None = None) -> AgentDict:
        return {"agent": self.agent, "ok": self.ok, "rewards": list(self.rewards),
                "synthetic_rows": self.synthetic_rows,
                "failures": [f.to_dict(package, docs_url) for f in self.failures]}


@dataclass(frozen=True, slots=True)
class SmokeReport:
    """``stage`` is where the run stopped: validate, setup, start, rollout, or done."""

    package: str
    stage: SmokeStage
    static: Report | None = None
    offline: bool = False
    isolation: IsolationDict | None = None
    servers: tuple[ServerResult, ...] = ()
    agents: tuple[AgentResult, ...] = ()
    failures: tuple[SmokeFinding, ...] = ()
    """Findings about the run as a whole (Gym died with no server named, ...)."""
    timings: dict[str, float] = field(default_factory=dict)
    policy_requests: int = 0

    @property
    def findings(self) -> tuple[SmokeFinding, ...]:
        """Every spin-up finding once: the servers', the agents', the run's."""
        found = [s.failure for s in self.servers if s.failure is not None]
        found += [f for a in self.agents for f in a.failures]
        found += self.failures
        return tuple(dict.fromkeys(found))

    @property
    def passed(self) -> bool:
        return (self.stage == "done" and not self.findings and bool(self.agents)
                and all(a.ok for a in self.agents) and all(s.ready for s in self.servers))

    @property
    def codes(self) -> list[str]:
        """The codes that failed the run: the static ones if it stopped there, else spin-up's."""
        found = {f.code for f in self.findings}
        if self.static is not None and not self.static.valid:
            failing = self.static.diagnostics if self.static.strict else self.static.errors
            found |= {d.code for d in failing}
        return sorted(found)

    def as_report(self) -> Report:
        """The static report with the spin-up diagnostics after its own: what validate's
        renderers print (human, GitHub annotations, SARIF)."""
        spin_up = tuple(f.diagnostic for f in self.findings)
        static = self.static or Report(None, None, "", (), root=self.package)
        return replace(static, diagnostics=static.diagnostics + spin_up,
                       root=static.root or self.package)

    def to_dict(self) -> SmokeDict:
        root = self.static.root if self.static and self.static.root else self.package
        docs = self.static.docs_url if self.static else None
        return {
            "version": SMOKE_VERSION,
            "passed": self.passed,
            "package": self.package,
            "stage": self.stage,
            "offline": self.offline,
            "isolation": self.isolation,
            "codes": self.codes,
            "diagnostics": [f.to_dict(root, docs) for f in self.findings],
            "static": ValidationRun((self.static,)).to_dict() if self.static else None,
            "servers": [s.to_dict(root, docs) for s in self.servers],
            "agents": [a.to_dict(root, docs) for a in self.agents],
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "policy_requests": self.policy_requests,
        }


@dataclass(frozen=True, slots=True)
class SmokeOutcome:
    """``envkit smoke`` (and ``validate --smoke``): the report and the package it is about,
    for ``envkit.output.render`` (JSON: ``envkit schema smoke``)."""

    report: SmokeReport
    package: Path

