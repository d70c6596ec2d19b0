"""Every envkit check, as pure functions over models read once. No network, no code execution.

Why the wheel, dataset and job checks are imported only when asked for: without a wheelhouse,
a dataset or a job file they have nothing to read, and their models (the job's typed settings
above all) are the largest part of what a validate run would import. Their ``rules`` modules
are imported here, so every code is known without them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from envkit.model.diagnostics import Severity
from envkit.model.package import WHEEL_FORMATS
from envkit.validators import (
    gym,
    layout,
    manifest,
    probe,
    provenance,
    secrets,
    spinup,
)
from envkit.validators._base import Check, CheckOptions, Inputs, Rule
from envkit.validators.dataset import rules as dataset_rules
from envkit.validators.job import rules as job_rules
from envkit.validators.wheels import rules as wheel_rules

if TYPE_CHECKING:
    from collections.abc import Iterable

    from envkit.model.diagnostics import Diagnostic

__all__ = ["INTERNAL", "KNOWN_RULES", "RULES", "Check", "CheckOptions", "Inputs", "Rule",
           "all_checks", "checks_for", "run_checks"]


def all_checks() -> tuple[Check, ...]:
    """Every check, in the order they run (each area's ``CHECKS`` in turn)."""
    return _in_order(wheels=True, dataset=True, job=True)


def checks_for(inputs: Inputs) -> tuple[Check, ...]:
    """``all_checks()`` less the areas that have nothing to read in ``inputs`` (their checks
    would return at once, so the report is the same; their modules stay unimported)."""
    package = inputs.package
    return _in_order(wheels=package is not None and package.format in WHEEL_FORMATS,
                     dataset=inputs.dataset is not None, job=inputs.job is not None)


def _in_order(*, wheels: bool, dataset: bool, job: bool) -> tuple[Check, ...]:
    """Plain imports, so a rename still fails at import and in the type check."""
    found = [*manifest.CHECKS, *layout.CHECKS, *secrets.CHECKS, *provenance.CHECKS, *gym.CHECKS]
    if wheels:
        from envkit.validators.wheels import checks as wheel_checks

        found += wheel_checks.CHECKS
    if dataset:
        from envkit.validators.dataset import checks as dataset_checks

        found += dataset_checks.CHECKS
    if job:
        from envkit.validators.job import checks as job_checks

        found += job_checks.CHECKS
    return (*found, *spinup.CHECKS, *probe.CHECKS)


_RULE_AREAS = (manifest.RULES, layout.RULES, secrets.RULES, provenance.RULES, gym.RULES,
               wheel_rules.RULES, dataset_rules.RULES, job_rules.RULES, spinup.RULES, probe.RULES)
RULES: dict[str, Rule] = {rule.code: rule for area in _RULE_AREAS for rule in area}
"""Every rule a check reports (each has a failing fixture under ``fixtures/``)."""

INTERNAL = Rule(
    "EK000", Severity.ERROR, "a check itself failed (internal error)",
    "Every check runs guarded: when one raises, the report still prints, with this code "
    "naming the check, and the other checks' findings are kept. No input is meant to reach "
    "it: it is a bug in envkit, not a verdict on the package.",
    "Report it with the message; the other diagnostics of the run still apply.",
)
"""The safety net's code (``envkit.validate.validate`` reports it for a check that raised). No
fixture reaches it, so it is not in ``RULES``; it is a code users see, so ``envkit rule``,
``--select``/``--ignore`` and SARIF know it through ``KNOWN_RULES``."""

KNOWN_RULES: dict[str, Rule] = {INTERNAL.code: INTERNAL, **RULES}
"""Every code a diagnostic can carry: ``RULES`` and the safety net."""


def run_checks(inputs: Inputs, checks: Iterable[Check] | None = None) -> list[Diagnostic]:
    """Run ``checks`` (``None``: ``checks_for(inputs)``; the CLI passes them guarded) and
    return all diagnostics, sorted by place (ties keep the order the checks found them in: a
    set's order would change with the hash seed, and two runs over the same files must print
    the same report).

    A package whose walk stopped at the entry cap (EK208) is reported alone: checks over a
    partial tree would invent missing configs, markers and implementation dirs.
    """
    if checks is None:
        checks = checks_for(inputs)
    found: list[Diagnostic] = []
    if inputs.package is not None and inputs.package.truncated:
        found += layout.check_walk_complete(inputs)
        inputs = replace(inputs, package=None)
    found += [diag for check in checks for diag in check(inputs)]
    return sorted(dict.fromkeys(found), key=lambda d: d.sort_key())
