"""``run_probe``: static checks, then the package brought up once and every phase run on it.

As in ``envkit smoke``, a package the static rules reject never costs a venv build.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.errors import UsageError
from envkit.probe.analysis.declared import (
    agent_locations,
    agent_resources,
    scale_from_manifest,
    stochastic_reason,
)
from envkit.probe.analysis.observations import RewardScale
from envkit.probe.inputs import gym_manifests, probe_rows, read_job
from envkit.probe.phases import NO_PROGRESS, ProbeContext, Progress
from envkit.probe.phases import session as live_session
from envkit.probe.phases.fixtures import VerifierFixturePhase
from envkit.probe.phases.load import LoadPhase
from envkit.probe.phases.model import ModelPhase
from envkit.probe.phases.reasoning import ReasoningPhase
from envkit.probe.phases.scoring import ScoringPhase
from envkit.probe.policies import panel
from envkit.probe.report import ProbeReport
from envkit.probe.thresholds import Thresholds
from envkit.validate.gate import selection
from envkit.validate.settings import Settings
from envkit.validate.validate import read_package
from envkit.validators.spinup import EK704

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from envkit.probe.phases import Phase
    from envkit.probe.phases.session import LiveProbe

__all__ = ["PHASES", "ProbeRequest", "ProbeUsageError", "phases_for", "run_probe"]

log = logging.getLogger(__name__)

PHASES: tuple[Phase, ...] = (ScoringPhase(), ReasoningPhase(), LoadPhase(),
                             VerifierFixturePhase())
"""Run in this order on one bring-up; a later phase reads the earlier ones' results."""


class ProbeUsageError(UsageError, ValueError):
    """The probe cannot run as asked (no dataset, no rows): a usage error."""


@dataclass(frozen=True, slots=True)
class ProbeRequest(live_session.BringUpRequest):
    """What the probe adds to the bring-up (its thresholds are ``flags``, as ``envkit
    validate`` takes them)."""

    oracle_field: str | None = None
    progress: Progress = NO_PROGRESS
    model: Path | None = None
    model_backend: str = "hf"


def phases_for(request: ProbeRequest) -> tuple[Phase, ...]:
    """``PHASES``, then with ``--model`` the model phase.

    :raises ModelDirError: ``request.model`` is no model directory (before any bring-up).
    """
    if request.model is None:
        return PHASES
    return (*PHASES, ModelPhase(request.model, request.model_backend))


def run_probe(request: ProbeRequest, phases: Sequence[Phase] | None = None) -> ProbeReport:
    """Validate, bring the servers up once, run ``phases`` (default: ``phases_for``), tear down.

    :raises ProbeUsageError: no dataset, or no row names an agent.
    :raises SettingsError, SelectorError, ThresholdError: a setting that cannot be used.
    :raises GymVenvError: no CPython 3.13 for Gym (usage error).
    :raises ModelDirError: ``request.model`` is no model directory.
    """
    phases = phases_for(request) if phases is None else phases
    start = time.monotonic()
    static, settings = request.validate()
    thresholds = Thresholds().over(settings)
    base = ProbeReport(str(request.package), "validate", static, static.dataset,
                       bool(settings.offline), thresholds=thresholds,
                       selection=selection(settings), strict=bool(settings.strict),
                       oracle_field=request.oracle_field,
                       timings={"validate_s": time.monotonic() - start})
    if not static.valid:
        return base
    if static.dataset is None:
        msg = "the probe sends the dataset's rows: give --dataset (or `dataset` in the config)"
        raise ProbeUsageError(msg)
    base, context = _prepare(request, base, Path(static.dataset), settings, thresholds)
    options = request.prepare_runtime(settings)
    with live_session.offline_if(base.offline) as isolated:
        report = _live(request, options, base, context, phases)
        if isolated is not None:
            report = replace(report, isolation=isolated.to_dict())
    report.timings["total_s"] = time.monotonic() - start
    return report


def _prepare(request: ProbeRequest, base: ProbeReport, dataset: Path, settings: Settings,
             thresholds: Thresholds) -> tuple[ProbeReport, Callable[[LiveProbe], ProbeContext]]:
    """What the phases read (read once): the report with it, and the phases' context once the
    servers are up."""
    rows = probe_rows(dataset, thresholds.rows)
    if not rows:
        msg = f"no row of {dataset / 'training.jsonl'} names an agent (`agent_ref.name`)"
        raise ProbeUsageError(msg)
    pkg = read_package(request.package)
    manifests = gym_manifests(pkg)
    scale = next((s for path, data in manifests.items()
                  if (s := scale_from_manifest(data, path)) is not None), RewardScale())
    job, policies = read_job(settings.job), panel(request.oracle_field)
    stochastic = stochastic_reason(pkg, manifests)
    context = functools.partial(
        ProbeContext, rows=rows, job=job, thresholds=thresholds, panel=policies, scale=scale,
        where=agent_locations(pkg), stochastic=stochastic, resources=agent_resources(pkg),
        oracle_field=request.oracle_field, progress=request.progress, dataset=dataset)
    return replace(base, job=job, scale=scale, stochastic=stochastic, panel=policies), context


def _live(request: ProbeRequest, options: live_session.RuntimeOptions, base: ProbeReport,
          context: Callable[[LiveProbe], ProbeContext], phases: Sequence[Phase]) -> ProbeReport:
    timings = base.timings
    live = live_session.LiveProbe(request.package, options)
    t0 = time.monotonic()
    try:
        live.__enter__()
    except live_session.GymRuntimeError as exc:
        timings["ready_s"] = time.monotonic() - t0
        failure, log_tail = live_session.start_failure(exc)
        return replace(base, stage="start", failure=failure, log_tail=log_tail)
    try:
        timings["ready_s"] = live.ready_s or 0.0
        return _phases(context(live), base, phases)
    finally:
        t1 = time.monotonic()
        live.__exit__(None, None, None)
        timings["teardown_s"] = time.monotonic() - t1


def _phases(ctx: ProbeContext, base: ProbeReport, phases: Sequence[Phase]) -> ProbeReport:
    for phase in phases:
        log.info("probe: %s phase", phase.name)
        t0 = time.monotonic()
        try:
            ctx.results[phase.name] = phase.run(ctx)
        except live_session.ProbeAbortedError as exc:
            failure = EK704.at("nemo-environment.yaml",
                               f"the Gym servers stopped serving during the {phase.name} "
                               f"phase: {str(exc)[:300]}")
            return replace(base, stage=phase.name, phases=tuple(ctx.results.values()),
                           failure=failure)
        finally:
            base.timings[f"{phase.name}_s"] = time.monotonic() - t0
        log.info("probe: %s phase done in %.1fs", phase.name, base.timings[f"{phase.name}_s"])
    return replace(base, stage="done", phases=tuple(ctx.results.values()))
