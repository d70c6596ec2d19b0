"""``run_smoke``: static checks, then the package's real Gym servers against a scripted policy.

Order matters: a package the static rules reject never costs a venv build; the servers are
brought up exactly as ``envkit rollout`` does (per-server venvs keyed by the package's content,
so a second run reuses them); ``--offline`` wraps the whole bring-up in a namespace with no
route out; every agent must return a numeric reward on its rows.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from envkit.check.report import Report
from envkit.check.validate import ValidateRequest, validate
from envkit.endpoint.scripted import DEFAULT_COMPLETION, ScriptedBackend
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.model.target import Target
from envkit.smoke import _runtime as rt
from envkit.smoke.isolation import Isolation, offline_network
from envkit.smoke.report import Failure, SmokeReport
from envkit.smoke.rows import dataset_rows, rows_for, scripted_answers
from envkit.smoke.verdict import rollout_report, start_failure_report
from envkit.validators import CheckOptions

__all__ = ["SmokeRequest", "run_smoke"]

log = logging.getLogger(__name__)

_TEARDOWN_GRACE_S = 1.0
"""Gym's SIGINT shutdown gets this long before the rest is killed: a smoke run keeps nothing,
and Ray's daemons ignore SIGINT (the default 20 s grace made teardown a fifth of the run)."""


@dataclass(frozen=True)
class SmokeRequest:
    package: Path
    dataset: Path | None = None
    rows: int = 1
    """Rows per agent."""
    target: Target = field(default_factory=Target)
    gym_version: str = DEFAULT_GYM_VERSION
    gym_python: Path | None = None
    allow_python_override: bool = False
    offline: bool = False
    ready_timeout_s: float = 300.0
    install_timeout_s: float = 1800.0
    rollout_timeout_s: float = 120.0
    completion: str | None = None
    """Fixed completion for every request; default: the row's own answer, else a fixed text."""
    cache_dir: Path | None = None
    keep_logs: Path | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    strict: bool = False
    verify_hashes: bool = False


def run_smoke(request: SmokeRequest) -> SmokeReport:
    """Validate, bring the servers up, run the rows, tear down; the verdict says where it stopped.

    :raises FileNotFoundError, NotADirectoryError: a named input does not exist (usage error).
    :raises GymVenvError: no CPython 3.13 for Gym (usage error).
    """
    start = time.monotonic()
    static = validate(ValidateRequest(
        package=request.package, dataset=request.dataset,
        options=CheckOptions(request.target, request.gym_version, request.offline),
        select=request.select, ignore=request.ignore, strict=request.strict,
        verify_hashes=request.verify_hashes))
    timings = {"validate_s": time.monotonic() - start}
    if not static.valid:
        failure = Failure(static.errors[0].code if static.errors else None,
                          f"static validation failed ({len(static.errors)} errors): "
                          "fix them first (`envkit validate`)")
        return SmokeReport(str(request.package), "validate", static, request.offline,
                           failure=failure, timings=timings)
    rt.ensure_gym_venv(request.gym_version, python=request.gym_python,
                       allow_python_override=request.allow_python_override)
    with _isolation(request.offline) as isolation:
        report = _spin_up(request, static, isolation, timings)
        if isolation is not None:  # the hosts the proxy refused are known only now
            report = replace(report, isolation=isolation.to_dict())
    timings["total_s"] = time.monotonic() - start
    return report


@contextlib.contextmanager
def _isolation(offline: bool) -> Iterator[Isolation | None]:
    if not offline:
        yield None
        return
    with offline_network() as isolation:
        log.info("offline: %s", isolation.detail)
        yield isolation


def _options(request: SmokeRequest) -> rt.RuntimeOptions:
    return rt.RuntimeOptions(
        gym_version=request.gym_version, gym_python=request.gym_python,
        allow_python_override=request.allow_python_override, offline=request.offline,
        startup_timeout_s=request.install_timeout_s, ready_timeout_s=request.ready_timeout_s,
        cache_dir=request.cache_dir,
        keep_logs=request.keep_logs)


def _spin_up(request: SmokeRequest, static: Report, isolation: Isolation | None,
             timings: dict[str, float]) -> SmokeReport:
    by_agent = dataset_rows(request.dataset, request.rows)
    answers = {} if request.completion else scripted_answers(
        r for rows in by_agent.values() for r in rows)
    backend = ScriptedBackend(request.completion or DEFAULT_COMPLETION, answers)
    base = SmokeReport(str(request.package), "setup", static, request.offline,
                       isolation.to_dict() if isolation else None, timings=timings)
    with rt.PolicyServer(backend) as policy:
        endpoint = rt.PolicyEndpoint(policy.base_url, policy.api_key, backend.model_name)
        runtime = rt.WatchedRuntime(request.package, endpoint, _options(request))
        try:
            t0 = time.monotonic()
            try:
                servers = runtime.start()
            except rt.GymRuntimeError as exc:
                _timing(timings, runtime, t0)
                return start_failure_report(base, runtime, exc, backend.requests)
            _timing(timings, runtime, t0)
            log.info("servers ready in %.1fs; running %d row(s) per agent",
                     timings["ready_s"], request.rows)
            rows = [r for agent in servers.agents()
                    for r in rows_for(agent, by_agent.get(agent, []), request.rows)]
            t1 = time.monotonic()
            results = _collect(runtime, servers, rows, request)
            timings["rollout_s"] = time.monotonic() - t1
            synthetic = {a for a in servers.agents() if not by_agent.get(a)}
            return rollout_report(base, runtime, servers, results, synthetic, backend.requests)
        finally:
            runtime.close(grace_s=_TEARDOWN_GRACE_S)
            if isolation is not None and isolation.refused:
                log.warning("offline: refused %s", ", ".join(sorted(set(isolation.refused))))


def _timing(timings: dict[str, float], runtime: rt.WatchedRuntime, t0: float) -> None:
    timings["setup_s"] = runtime.setup_s if runtime.setup_s is not None else (
        time.monotonic() - t0)
    if runtime.setup_s is not None:
        timings["ready_s"] = time.monotonic() - t0 - runtime.setup_s


def _collect(runtime: rt.WatchedRuntime, servers: rt.GymServers, rows: list[dict],
             request: SmokeRequest) -> list[rt.RolloutResult] | str:
    """Every row; or why Gym died while they ran (a server exited mid-rollout)."""
    def abort() -> str | None:
        return None if runtime.alive() else "Gym exited while serving the rollouts"

    try:
        return rt.collect(rows, servers.run_url, concurrency=4,
                          timeout_s=request.rollout_timeout_s, abort=abort)
    except rt.RolloutAbortedError as exc:
        return str(exc)
