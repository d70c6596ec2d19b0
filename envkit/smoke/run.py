"""``run_smoke``: static checks, then the package's real Gym servers against a scripted policy.

Order matters: a package the static rules reject never costs a venv build. The static pass is
``envkit validate``'s own gate, so both commands judge a package under the same settings;
``--offline`` wraps the whole bring-up in a network with no route out; every agent must return
a numeric reward on its rows.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from envkit.gym import (
    DEFAULT_GYM_VERSION,
    GymRuntimeError,
    GymSession,
    PolicyEndpoint,
    Rollout,
    RolloutAbortedError,
    RuntimeEvents,
    RuntimeOptions,
    collect,
    ensure_gym_venv,
    python_override_from_env,
)
from envkit.policy_server.generation import GenerationBackend
from envkit.policy_server.scripted import DEFAULT_COMPLETION, ScriptedBackend
from envkit.policy_server.server import PolicyServer
from envkit.smoke.isolation import Isolation, offline_if
from envkit.smoke.report import SmokeReport
from envkit.smoke.rows import dataset_rows, rows_for, scripted_answers
from envkit.smoke.verdict import SpinUpWatch, rollout_report, start_failure_report
from envkit.validate.gate import GateRequest, gate_package, one_package, resolve_settings
from envkit.validate.report import Report
from envkit.validate.settings import Settings

__all__ = ["BringUpRequest", "SmokeRequest", "run_smoke", "scripted_session"]

log = logging.getLogger(__name__)

_CONCURRENCY = 4


@dataclass(frozen=True, slots=True)
class BringUpRequest:
    """One package, judged by ``envkit validate``'s gate, then brought up (smoke, probe):
    ``flags`` are what the command line set (as ``envkit validate`` takes them), the rest is
    the bring-up's."""

    package: Path
    flags: Settings = field(default_factory=Settings)
    isolated: bool = False
    """Ignore ``envkit.toml`` / ``[tool.envkit]`` (``--isolated``)."""
    verify_hashes: bool = False
    gym_python: Path | None = None
    allow_python_override: bool = False
    ready_timeout_s: float = 300.0
    install_timeout_s: float = 1800.0
    cache_dir: Path | None = None
    keep_logs: Path | None = None

    @classmethod
    def after_validate(cls, request: GateRequest, flag: str) -> Self:
        """``envkit validate PKG --smoke`` (``--probe``): validate's resolved settings, the
        bring-up's defaults, ``--allow-python-override`` from the environment."""
        return cls(package=one_package(request, flag), flags=request.flags,
                   isolated=request.isolated, verify_hashes=request.verify_hashes,
                   allow_python_override=python_override_from_env())

    def validate(self) -> tuple[Report, Settings]:
        """The static pass (``envkit validate``'s own gate) and the settings it resolved."""
        gate = GateRequest(paths=(self.package,), flags=self.flags,
                           verify_hashes=self.verify_hashes, isolated=self.isolated)
        (static,) = gate_package(self.package, gate).reports
        return static, resolve_settings(self.package, gate)

    def prepare_runtime(self, settings: Settings) -> RuntimeOptions:
        """The bring-up's options, with the Gym version and ``--offline`` that ``settings``
        resolved to; Gym's own venv is built (or found) first, so a missing 3.13 is a usage
        error before anything starts.

        :raises GymVenvError: no CPython 3.13 for Gym (usage error).
        """
        gym_version = settings.gym_version or DEFAULT_GYM_VERSION
        ensure_gym_venv(gym_version, python=self.gym_python,
                        allow_python_override=self.allow_python_override)
        return RuntimeOptions(
            gym_version=gym_version, gym_python=self.gym_python,
            allow_python_override=self.allow_python_override, offline=bool(settings.offline),
            startup_timeout_s=self.install_timeout_s, ready_timeout_s=self.ready_timeout_s,
            cache_dir=self.cache_dir, keep_logs=self.keep_logs)


@dataclass(frozen=True, slots=True)
class SmokeRequest(BringUpRequest):
    """What the spin-up runs on the package: rows per agent and the scripted replies."""

    rows: int = 1
    """Rows per agent."""
    rollout_timeout_s: float = 120.0
    completion: str | None = None
    """Fixed completion for every request; default: the row's own answer, else a fixed text."""


def run_smoke(request: SmokeRequest) -> SmokeReport:
    """Validate, bring the servers up, run the rows, tear down; the verdict says where it stopped.

    :raises FileNotFoundError, NotADirectoryError: a named input does not exist (usage error).
    :raises SettingsError, SelectorError: a configuration or selector that names no rule.
    :raises GymVenvError: no CPython 3.13 for Gym (usage error).
    """
    start = time.monotonic()
    static, settings = request.validate()
    timings = {"validate_s": time.monotonic() - start}
    if not static.valid:
        return SmokeReport(str(request.package), "validate", static, bool(settings.offline),
                           timings=timings)
    options = request.prepare_runtime(settings)
    with offline_if(options.offline) as isolation:
        report = _spin_up(request, static, options, isolation, timings)
        if isolation is not None:  # the hosts the proxy refused are known only now
            report = replace(report, isolation=isolation.to_dict())
    timings["total_s"] = time.monotonic() - start
    return report


def scripted_session(package: Path, backend: GenerationBackend, options: RuntimeOptions,
                     events: RuntimeEvents | None = None) -> GymSession:
    """A session whose policy endpoint serves ``backend`` (smoke's script, the probe's panel);
    the session owns the endpoint and closes it."""
    policy = PolicyServer(backend)
    endpoint = PolicyEndpoint(policy.base_url, policy.api_key, backend.model_name)
    try:
        return GymSession(package, endpoint, options, owned=(policy,), events=events)
    except BaseException:
        policy.close()
        raise


def _spin_up(request: SmokeRequest, static: Report, options: RuntimeOptions,
             isolation: Isolation | None, timings: dict[str, float]) -> SmokeReport:
    by_agent = dataset_rows(Path(static.dataset) if static.dataset else None, request.rows)
    # the scripted policy: --completion for everything, else each row's own answer
    answers = {} if request.completion else scripted_answers(
        r for rows in by_agent.values() for r in rows)
    backend = ScriptedBackend(request.completion or DEFAULT_COMPLETION, answers)
    base = SmokeReport(str(request.package), "setup", static, options.offline,
                       isolation.to_dict() if isolation else None, timings=timings)
    watch = SpinUpWatch()
    session = scripted_session(request.package, backend, options, watch)
    try:
        report = _run(request, session, watch, base, by_agent)
        return replace(report, policy_requests=backend.requests)
    finally:
        t0 = time.monotonic()
        session.close()
        timings["teardown_s"] = time.monotonic() - t0  # the report holds this dict
        if isolation is not None and isolation.refused:
            log.warning("offline: refused %s", ", ".join(sorted(set(isolation.refused))))


def _run(request: SmokeRequest, session: GymSession, watch: SpinUpWatch, base: SmokeReport,
         by_agent: dict[str, list[dict[str, Any]]]) -> SmokeReport:
    """Start (the report is read before the session closes: logs go with it), then the rows."""
    timings = base.timings
    try:
        servers = session.start()
    except GymRuntimeError as exc:
        timings.update(watch.timings())
        return start_failure_report(base, watch, session, exc)
    timings.update(watch.timings())
    log.info("servers ready in %.1fs; running %d row(s) per agent", timings["ready_s"],
             request.rows)
    rows = [r for agent in servers.agents()
            for r in rows_for(agent, by_agent.get(agent, []), request.rows)]
    t0 = time.monotonic()
    results: list[Rollout] | str
    try:
        results = collect(rows, servers.run_url, concurrency=_CONCURRENCY,
                          timeout_s=request.rollout_timeout_s, abort=session.dead)
    except RolloutAbortedError as exc:  # Gym died under the rows: rollout_report says why
        results = str(exc)
    timings["rollout_s"] = time.monotonic() - t0
    synthetic = {a for a in servers.agents() if not by_agent.get(a)}
    return rollout_report(base, watch, session, servers, results, synthetic)

