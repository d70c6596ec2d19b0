"""``envkit validate PKG --smoke``: the smoke request for the one package validate names.

Why so little here: ``run_smoke`` validates through validate's own gate (``gate_package``),
so the flags, the configuration and the target are resolved once, in ``envkit.check.gate``;
this module only insists on exactly one package and hands the request over.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from envkit.check.gate import GateRequest, GateUsageError, discover_for
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
    """The one package ``request`` names, with validate's flags; ``runtime``: spin-up options.

    :raises GateUsageError: the paths hold no package or several.
    """
    smoke = SmokeRequest(package=_one_package(request), flags=request.flags,
                         isolated=request.isolated, verify_hashes=request.verify_hashes)
    return replace(smoke, **runtime)
