"""Every envkit check, as pure functions over models read once. No network, no code execution.

``CHECKS`` is the one visible list of what runs; ``RULES`` maps each EK code to its record.
This package never imports ``envkit.trainer``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from envkit.model.diagnostics import Severity
from envkit.validators import (
    dataset,
    gym,
    job,
    layout,
    manifest,
    probe,
    provenance,
    secrets,
    spinup,
    wheels,
)
from envkit.validators._base import Check, CheckOptions, Inputs, Rule

if TYPE_CHECKING:
    from collections.abc import Iterable

    from envkit.model.diagnostics import Diagnostic

__all__ = ["CHECKS", "INTERNAL", "KNOWN_RULES", "RULES", "Check", "CheckOptions", "Inputs", "Rule",
           "run_checks"]

_MODULES = (manifest, layout, secrets, provenance, gym, wheels, dataset, job, spinup, probe)


CHECKS: tuple[Check, ...] = (
    *manifest.CHECKS,
    *layout.CHECKS,
    *secrets.CHECKS,
    *provenance.CHECKS,
    *gym.CHECKS,
    *wheels.CHECKS,
    *dataset.CHECKS,
    *job.CHECKS,
    *spinup.CHECKS,
    *probe.CHECKS,
)
RULES: dict[str, Rule] = {rule.code: rule for module in _MODULES for rule in module.RULES}
"""Every rule a check reports (each has a failing fixture under ``fixtures/``)."""

INTERNAL = Rule(
    "EK000", Severity.ERROR, "a check itself failed (internal error)",
    "Every check runs guarded: when one raises, the report still prints, with this code "
    "naming the check, and the other checks' findings are kept. No input is meant to reach "
    "it: it is a bug in envkit, not a verdict on the package.",
    "Report it with the message; the other diagnostics of the run still apply.",
)
"""The safety net's code (``envkit.check.validate`` reports it for a check that raised). No
fixture reaches it, so it is not in ``RULES``; it is a code users see, so ``envkit rule``,
``--select``/``--ignore`` and SARIF know it through ``KNOWN_RULES``."""

KNOWN_RULES: dict[str, Rule] = {INTERNAL.code: INTERNAL, **RULES}
"""Every code a diagnostic can carry: ``RULES`` and the safety net."""


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
