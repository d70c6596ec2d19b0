"""The verdict of one smoke run and its versioned JSON form (``envkit schema smoke``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envkit.check.report import Report

__all__ = ["SMOKE_VERSION", "AgentResult", "Failure", "ServerResult", "SmokeOutcome", "SmokeReport"]

SMOKE_VERSION = "1.0"


@dataclass(frozen=True)
class Failure:
    """Why a stage failed: the likely EK code, one line, and the evidence."""

    code: str | None
    message: str
    log_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "log_tail": self.log_tail}


@dataclass(frozen=True)
class ServerResult:
    name: str
    server_type: str | None
    implementation: str | None
    ready: bool
    ready_s: float | None = None
    first_reward: float | None = None
    failure: Failure | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "server_type": self.server_type,
            "implementation": self.implementation, "ready": self.ready,
            "ready_s": None if self.ready_s is None else round(self.ready_s, 3),
            "first_reward": self.first_reward,
            "failure": self.failure.to_dict() if self.failure else None,
        }


@dataclass(frozen=True)
class AgentResult:
    agent: str
    rewards: tuple[float, ...] = ()
    failures: tuple[Failure, ...] = ()
    synthetic_rows: bool = False
    """No dataset row named this agent: a minimal row was sent."""

    @property
    def ok(self) -> bool:
        return bool(self.rewards) and not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "ok": self.ok, "rewards": list(self.rewards),
                "synthetic_rows": self.synthetic_rows,
                "failures": [f.to_dict() for f in self.failures]}


@dataclass(frozen=True)
class SmokeReport:
    """``stage`` is where the run stopped: validate, setup, start, rollout, or done."""

    package: str
    stage: str
    static: Report | None = None
    offline: bool = False
    isolation: dict[str, Any] | None = None
    servers: tuple[ServerResult, ...] = ()
    agents: tuple[AgentResult, ...] = ()
    failure: Failure | None = None
    timings: dict[str, float] = field(default_factory=dict)
    policy_requests: int = 0

    @property
    def passed(self) -> bool:
        return (self.stage == "done" and self.failure is None and bool(self.agents)
                and all(a.ok for a in self.agents) and all(s.ready for s in self.servers))

    @property
    def codes(self) -> list[str]:
        found = [self.failure.code] if self.failure and self.failure.code else []
        found += [s.failure.code for s in self.servers if s.failure and s.failure.code]
        found += [f.code for a in self.agents for f in a.failures if f.code]
        return sorted(set(found))

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": SMOKE_VERSION,
            "passed": self.passed,
            "package": self.package,
            "stage": self.stage,
            "offline": self.offline,
            "isolation": self.isolation,
            "codes": self.codes,
            "failure": self.failure.to_dict() if self.failure else None,
            "static": self.static.to_dict() if self.static else None,
            "servers": [s.to_dict() for s in self.servers],
            "agents": [a.to_dict() for a in self.agents],
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "policy_requests": self.policy_requests,
        }


@dataclass(frozen=True)
class SmokeOutcome:
    """``envkit smoke`` (and ``validate --smoke``): the report and the package it is about,
    for ``envkit.output.render`` (JSON: ``envkit schema smoke``)."""

    report: SmokeReport
    package: Path
