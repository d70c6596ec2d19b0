"""What the Gym runtime reads of a package before it starts anything, and what it refuses.

A package Gym cannot start (no manifest, one that is not a mapping, no ``config_paths``) fails
here, with the rule's code, before a venv or a process exists; everything else is the
validator's to report (``envkit validate``), and the runtime starts what it is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envkit.gym.types import GymRuntimeError
from envkit.validate.validate import read_package
from envkit.validators.config_paths import EK104
from envkit.validators.manifest import EK100, EK101

if TYPE_CHECKING:
    from pathlib import Path

    from envkit.model.package import Package

__all__ = ["launchable"]


def launchable(package: Path) -> Package:
    """``package`` as validation reads it (:func:`envkit.validate.validate.read_package`: the
    provenance digest from the cache's stamps of unchanged files, not a read of every wheel at
    every warm start), refused only where a launch cannot start.

    :raises GymRuntimeError: EK100, EK101 or EK104.
    """
    pkg = read_package(package)
    hint = f"run `envkit validate {package}`"
    if pkg.manifest is None:
        msg = f"{package / 'nemo-environment.yaml'} does not exist; {hint}"
        raise GymRuntimeError(msg, code=EK100.code)
    if not pkg.manifest.ok or not isinstance(pkg.manifest.data, dict):
        why = pkg.manifest.error or "not a mapping"
        msg = f"{package / 'nemo-environment.yaml'}: {why}; {hint}"
        raise GymRuntimeError(msg, code=EK101.code)
    if not pkg.config_paths():
        msg = f"{package / 'nemo-environment.yaml'}: `config_paths` missing or empty; {hint}"
        raise GymRuntimeError(msg, code=EK104.code)
    return pkg
