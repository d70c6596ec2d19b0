"""Turn what the runtime saw into per-server and per-agent verdicts with codes and evidence."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from envkit.smoke import _runtime as rt
from envkit.smoke.diagnose import SMOKE_CODES, diagnose, diagnose_rollout, diagnose_specific
from envkit.smoke.report import AgentResult, Failure, ServerResult, SmokeReport

__all__ = ["rollout_report", "start_failure_report"]

_TAIL = 40


def _tail(text: str, lines: int = _TAIL) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def start_failure_report(base: SmokeReport, runtime: rt.WatchedRuntime,
                         exc: rt.GymRuntimeError, requests: int) -> SmokeReport:
    """Servers did not all come up: which did, which did not, and why (read before close)."""
    offline = base.offline
    code, reason = diagnose(f"{exc}\n{exc.log_tail}", offline=offline)
    code = code or exc.code
    failed = rt.failed_server_of(exc)
    watch = runtime.watch
    stage = "start" if runtime.setup_s is not None else "setup"
    what = str(exc).split(": ", 1)[0]  # the runtime's own reading follows the colon
    failure = Failure(code, str(exc) if code == exc.code else f"{what}: {reason}", exc.log_tail)
    servers = []
    for name, inst in sorted(watch.instances.items()):
        ready = name in watch.ready_s
        why = None
        if name == failed:
            why = failure
        elif not ready:
            log = runtime.server_log(name)
            c, r = diagnose_specific(log, offline)  # not the whole table: install noise
            timeout = "not ready after" in str(exc)
            why = Failure(c or ("EK701" if timeout else None),
                          r if c else (SMOKE_CODES["EK701"] if timeout else
                                       "not ready when another server failed"),
                          _tail(log) if c or timeout else "")  # else: only start-up chatter
        servers.append(ServerResult(name, inst.get("server_type"), inst.get("name"), ready,
                                    watch.ready_s.get(name), None, why))
    if failed and failed not in watch.instances:
        servers.append(ServerResult(failed, None, None, False, None, None, failure))
    return replace(base, stage=stage, servers=tuple(servers), failure=failure,
                   policy_requests=requests)


def _config_ref(config: dict[str, Any], agent: str, key: str) -> str | None:
    block = config.get(agent) or {}
    for impls in block.values() if isinstance(block, dict) else ():
        for body in (impls or {}).values() if isinstance(impls, dict) else ():
            ref = (body or {}).get(key) if isinstance(body, dict) else None
            if isinstance(ref, dict) and ref.get("name"):
                return str(ref["name"])
    return None


def _agents(results: list[rt.RolloutResult], agents: list[str], synthetic: set[str],
            logs: str, offline: bool) -> list[AgentResult]:
    out = []
    for agent in agents:
        mine = [r for r in results if r.agent == agent]
        rewards = tuple(r.reward for r in mine if r.ok and r.reward is not None)
        failures = []
        for r in mine:
            if not r.ok:
                code, reason = diagnose_rollout(str(r.failure_reason), logs, offline=offline)
                failures.append(Failure(code, reason, _tail(str(r.failure_reason), 10)))
        if not mine:
            failures.append(Failure("EK704", "no row reached this agent"))
        out.append(AgentResult(agent, rewards, tuple(failures), agent in synthetic))
    return out


def rollout_report(base: SmokeReport, runtime: rt.WatchedRuntime, servers: rt.GymServers,
                   results: list[rt.RolloutResult] | str, synthetic: set[str],
                   requests: int) -> SmokeReport:
    """Servers were up; the rows ran (or Gym died under them)."""
    if isinstance(results, str):
        dead = runtime.failed_server()
        log = runtime.server_log(dead) if dead else runtime.all_logs()
        code, reason = diagnose(log, offline=base.offline)
        failure = Failure(code or "EK704", f"{results}: {reason}", _tail(log))
        return replace(base, stage="rollout", failure=failure, policy_requests=requests)
    agents = _agents(results, servers.agents(), synthetic, runtime.all_logs(), base.offline)
    first = {a.agent: a.rewards[0] for a in agents if a.rewards}
    reward_of: dict[str, float | None] = {}
    for agent in servers.agents():
        reward_of[agent] = first.get(agent)
        for name in (servers.env_server_for_agent.get(agent),
                     _config_ref(servers.config, agent, "resources_server")):
            if name and name not in reward_of:
                reward_of[name] = first.get(agent)
    watch = runtime.watch
    rows = tuple(ServerResult(s.name, s.server_type, s.implementation, True,
                              watch.ready_s.get(s.name), reward_of.get(s.name))
                 for s in sorted(servers.servers.values(), key=lambda s: s.name))
    return replace(base, stage="done", servers=rows, agents=tuple(agents),
                   policy_requests=requests)
