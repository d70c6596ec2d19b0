"""Every envkit check, as pure functions over models read once. No network, no code execution.

``CHECKS`` is the one visible list of what runs; ``RULES`` maps each EK code to its record.
This package never imports ``envkit.trainer``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from envkit.validators import (
    dataset_rows,
    gym,
    job,
    layout,
    manifest,
    probe,
    provenance,
    spinup,
    wheels,
)
from envkit.validators._base import Check, CheckOptions, Inputs, Rule

if TYPE_CHECKING:
    from collections.abc import Iterable

    from envkit.model.diagnostics import Diagnostic

__all__ = ["CHECKS", "RULES", "Check", "CheckOptions", "Inputs", "Rule", "run_checks"]

_MODULES = (manifest, layout, provenance, gym, wheels, dataset_rows, job, spinup, probe)

CHECKS: tuple[Check, ...] = tuple(check for module in _MODULES for check in module.CHECKS)
RULES: dict[str, Rule] = {rule.code: rule for module in _MODULES for rule in module.RULES}


def run_checks(inputs: Inputs, checks: Iterable[Check] = CHECKS) -> list[Diagnostic]:
    """Run ``checks`` (every check; the CLI passes them guarded) and return all diagnostics,
    sorted by place (ties keep the order the checks found them in: a set's order would change
    with the hash seed, and two runs over the same files must print the same report).

    A package whose walk stopped at the entry cap (EK208) is reported alone: checks over a
    partial tree would invent missing configs, markers and implementation dirs.
    """
    found: list[Diagnostic] = []
    if inputs.package is not None and inputs.package.truncated:
        found += layout.check_walk_complete(inputs)
        inputs = replace(inputs, package=None)
    found += [diag for check in checks for diag in check(inputs)]
    return sorted(dict.fromkeys(found), key=lambda d: d.sort_key())
