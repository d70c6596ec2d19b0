"""``envkit validate PKG --probe``: the probe request from validate's resolved settings.

Why here: ``validate`` resolves the package's settings (config file, per-package overrides,
flags) and target through ``envkit.check.gate``; the probe that follows must check the package
under exactly those, so it takes validate's flags as they are and runs the same gate.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from envkit.check.discovery import discover
from envkit.check.gate import GateUsageError
from envkit.probe.run import ProbeRequest

if TYPE_CHECKING:
    from envkit.check.gate import GateRequest

__all__ = ["probe_request"]


def probe_request(request: GateRequest, **runtime: Any) -> ProbeRequest:
    """The one package ``request`` names, probed under its resolved settings.

    :raises GateUsageError: the paths hold no package or several.
    """
    found = discover(request.paths, request.exclude) if request.paths else None
    packages = found.packages if found is not None else ()
    if len(packages) != 1:
        msg = (f"--probe runs one package, but the paths hold {len(packages)}: "
               "name exactly one package directory")
        raise GateUsageError(msg)
    return ProbeRequest(package=Path(packages[0]), flags=request.flags,
                        isolated=request.isolated, verify_hashes=request.verify_hashes,
                        **runtime)
