"""``envkit validate PKG --smoke``: the smoke request from validate's resolved settings.

Why here: ``validate`` resolves every package's settings (config file, per-package overrides,
flags) and target (flags, config, else ``wheels.lock``) through ``envkit.check.gate``; the smoke run
that follows must check the package under exactly those, not under smoke's own defaults.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from envkit.check.gate import (
    GateRequest,
    GateUsageError,
    choose_target,
    discover_for,
    resolve_settings,
    selection,
)
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.smoke.run import SmokeRequest

__all__ = ["smoke_request"]


def _one_package(request: GateRequest) -> Path:
    packages = discover_for(request).packages  # no PATH: `.`, as for validate itself
    if len(packages) != 1:
        msg = (f"--smoke runs one package, but the paths hold {len(packages)}: "
               "name exactly one package directory")
        raise GateUsageError(msg)
    return Path(packages[0])


def smoke_request(request: GateRequest, **runtime: Any) -> SmokeRequest:
    """The one package ``request`` names, checked and brought up under its resolved settings.

    :raises GateUsageError: the paths hold no package or several.
    :raises SettingsError, SelectorError: a configuration or selector that names no rule.
    """
    package = _one_package(request)
    settings = resolve_settings(package, request)
    target = choose_target(package, settings, request.flags).target
    select, ignore = selection(settings)
    smoke = SmokeRequest(
        package=package, dataset=request.flags.dataset or settings.dataset, target=target,
        gym_version=settings.gym_version or DEFAULT_GYM_VERSION, offline=bool(settings.offline),
        select=select, ignore=ignore, strict=bool(settings.strict),
        verify_hashes=request.verify_hashes)
    return replace(smoke, **runtime)
