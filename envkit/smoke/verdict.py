"""Turn what the runtime told (its events, its error, the rollouts) into per-server and
per-agent verdicts, each failure a diagnostic located at the config (and line) that defines
the instance, else the manifest. Codes come from the runtime's reading of a log or the spin-up
rules; this module only picks the rule, writes the message and finds the place.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from envkit.gym import Finding, RuntimeEvents, Where, diagnose, tail
from envkit.model.package import MANIFEST
from envkit.smoke.report import (
    AgentResult,
    ServerResult,
    SmokeFinding,
    SmokeReport,
    SmokeStage,
)
from envkit.validators import RULES
from envkit.validators.spinup import EK701, EK704, EK705

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from envkit.gym import GymRuntimeError, GymServers, GymSession, Rollout, ServerInfo
    from envkit.model.package import Package
    from envkit.validators import Rule

__all__ = ["SpinUpWatch", "finding", "locate", "rollout_report", "start_failure_report"]

_TAIL = 40


def locate(package: Package | None, instance: str | None) -> tuple[str, int | None]:
    """The config that defines ``instance`` (path relative to the package, line of its key),
    in ``config_paths`` order as Gym merges them; else the manifest."""
    if package is not None and instance:
        for path in package.config_paths():
            doc = package.configs.get(path)
            if doc is not None and isinstance(doc.data, dict) and instance in doc.data:
                return path, doc.line_of(instance)
    return MANIFEST, None


def finding(package: Package | None, subject: str | None, kind: str, reading: Finding, *,
            log_tail: str = "", default: Rule = EK705) -> SmokeFinding:
    """A finding about ``subject`` (a ``kind`` -- server, agent -- instance; None: the run)."""
    rule = RULES.get(reading.code, default) if reading.code else default
    path, line = locate(package, subject)
    who = f"{kind} `{subject}`: " if subject else ""
    said = f" (`{reading.evidence}`)" if reading.evidence else ""
    return SmokeFinding(rule.at(path, f"{who}{reading.reason}{said}", line=line), subject, log_tail)


def rollout_finding(package: Package | None, agent: str, failure: str, logs: str, *,
                    offline: bool) -> SmokeFinding:
    """A failed rollout: its reason plus the servers' logs, read as a rollout (EK704 if
    nothing more specific matched)."""
    found = diagnose(f"{failure}\n{logs}", Where.ROLLOUT, offline=offline)
    detail = failure.splitlines()[0][:300] if failure else ""
    reading = Finding(found.code, f"{found.reason}: {detail}" if detail else found.reason,
                      found.evidence if found.evidence not in failure else "")
    return finding(package, agent, "agent", reading, log_tail=tail(failure, 10), default=EK704)


_STOPPED_AT: dict[str, SmokeStage] = {"setup": "setup", "start": "start", "serve": "start"}
"""Where a ``GymRuntimeError`` leaves the run: a death while serving is a failed start."""


@dataclass
class SpinUpWatch(RuntimeEvents):
    """Records the runtime's events: set-up time, the instances, when each was ready."""

    started: float = field(default_factory=time.monotonic)
    setup_s: float | None = None
    launched: float | None = None
    instances: dict[str, ServerInfo] = field(default_factory=dict)
    ready_s: dict[str, float] = field(default_factory=dict)
    all_ready_s: float | None = None

    def on_setup_done(self, venv_dir: Path, seconds: float) -> None:
        self.setup_s = seconds

    def on_launch(self, head_url: str) -> None:
        self.launched = time.monotonic()  # a retry starts the launch over
        self.instances, self.ready_s, self.all_ready_s = {}, {}, None

    def on_servers_known(self, servers: Mapping[str, ServerInfo]) -> None:
        self.instances = dict(servers)

    def on_server_ready(self, name: str, seconds: float) -> None:
        self.ready_s[name] = seconds

    def on_ready(self, servers: GymServers, seconds: float) -> None:
        self.all_ready_s = seconds

    def timings(self) -> dict[str, float]:
        out = {"setup_s": time.monotonic() - self.started if self.setup_s is None
               else self.setup_s}
        if self.launched is not None:
            out["ready_s"] = self.all_ready_s if self.all_ready_s is not None else (
                time.monotonic() - self.launched)
        return out


def _bystander(session: GymSession, name: str, exc: GymRuntimeError,
               offline: bool) -> SmokeFinding | None:
    """A server that was not ready when the start failed: what its own log shows strongly (a
    removed module, the network under --offline, a non-numeric reward), else EK701 if the wait
    ran out; else nothing (it was merely not done yet)."""
    log = session.server_log(name)
    reading = diagnose(log, Where.SERVER_LOG, offline=offline)
    if reading.code is None and exc.timed_out:
        reading = Finding(EK701.code, EK701.title)
    if reading.code is None:
        return None
    return finding(session.model, name, "server", reading, log_tail=tail(log, _TAIL))


def start_failure_report(base: SmokeReport, watch: SpinUpWatch, session: GymSession,
                         exc: GymRuntimeError) -> SmokeReport:
    """Servers did not all come up: which did, which did not, and why (read before close)."""
    model = session.model
    failed = finding(model, exc.server, "server",
                     Finding(exc.code, exc.reason, exc.evidence), log_tail=exc.log_tail)
    servers = []
    for name, info in sorted(watch.instances.items()):
        ready = name in watch.ready_s
        why = failed if name == exc.server else (
            None if ready else _bystander(session, name, exc, base.offline))
        servers.append(ServerResult(name, info.server_type, info.implementation, ready,
                                    watch.ready_s.get(name), None, why))
    if exc.server and exc.server not in watch.instances:
        servers.append(ServerResult(exc.server, None, None, False, None, None, failed))
    named = exc.server is not None or any(s.failure for s in servers)
    return replace(base, stage=_STOPPED_AT.get(exc.stage, "start"),
                   servers=tuple(servers), failures=() if named else (failed,))


def _agents(model: Package | None, results: list[Rollout], agents: list[str],
            synthetic: set[str], logs: str, offline: bool) -> list[AgentResult]:
    out = []
    for agent in agents:
        mine = [r for r in results if r.agent == agent]
        rewards = tuple(r.reward for r in mine if r.ok and r.reward is not None)
        failures = [rollout_finding(model, agent, str(r.failure_reason), logs, offline=offline)
                    for r in mine if not r.ok]
        if not mine:
            failures.append(finding(model, agent, "agent",
                                    Finding(EK704.code, "no row reached this agent"),
                                    default=EK704))
        out.append(AgentResult(agent, rewards, tuple(failures), agent in synthetic))
    return out


def _config_ref(config: dict[str, Any], agent: str, key: str) -> str | None:
    block = config.get(agent) or {}
    for impls in block.values() if isinstance(block, dict) else ():
        for body in (impls or {}).values() if isinstance(impls, dict) else ():
            ref = (body or {}).get(key) if isinstance(body, dict) else None
            if isinstance(ref, dict) and ref.get("name"):
                return str(ref["name"])
    return None


def _died(base: SmokeReport, session: GymSession, why: str) -> SmokeReport:
    """Gym died (or a port closed) under the rollouts: the server it names, else every log."""
    exc = session.failure()
    if exc is not None:
        reading = Finding(exc.code, f"{why}: {exc.reason}", exc.evidence)
        found = finding(session.model, exc.server, "server", reading, log_tail=exc.log_tail,
                        default=EK704)
    else:
        logs = "\n".join(session.logs().values())
        reading = diagnose(logs, Where.ROLLOUT, offline=base.offline)
        found = finding(session.model, None, "server",
                        Finding(reading.code, f"{why}: {reading.reason}", reading.evidence),
                        log_tail=tail(logs, _TAIL), default=EK704)
    return replace(base, stage="rollout", failures=(found,))


def rollout_report(base: SmokeReport, watch: SpinUpWatch, session: GymSession,
                   servers: GymServers, results: list[Rollout] | str,
                   synthetic: set[str]) -> SmokeReport:
    """Servers were up; the rows ran (or Gym died under them: ``results`` says why)."""
    if isinstance(results, str):
        return _died(base, session, results)
    logs = "\n".join(session.logs().values())
    agents = _agents(session.model, results, servers.agents(), synthetic, logs, base.offline)
    first = {a.agent: a.rewards[0] for a in agents if a.rewards}
    reward_of: dict[str, float | None] = {}
    for agent in servers.agents():
        reward_of[agent] = first.get(agent)
        for name in (servers.env_server_for_agent.get(agent),
                     _config_ref(servers.config, agent, "resources_server")):
            if name and name not in reward_of:
                reward_of[name] = first.get(agent)
    rows = tuple(ServerResult(s.name, s.server_type, s.implementation, True,
                              watch.ready_s.get(s.name), reward_of.get(s.name))
                 for s in sorted(servers.servers.values(), key=lambda s: s.name))
    return replace(base, stage="done", servers=rows, agents=tuple(agents))
