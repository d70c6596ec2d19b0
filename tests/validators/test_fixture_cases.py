"""Golden fixture cases: each ``fixtures/packages/<case>/case.json`` names its inputs and the
exact set of codes validation must report. Every registered rule must have a case named for it.

What git cannot hold is built at test time from an optional ``"setup"`` list in ``case.json``,
applied to a copy of the case directory in ``tmp_path`` (the committed tree is never changed):

- ``"mkfifo:<path>"``: create a FIFO at ``<path>`` (relative to the case directory);
- ``"max_entries:<n>"``: lower the package walk's ``MAX_ENTRIES`` to ``n`` for this case.

chmod 000 is not a setup step: root reads such entries anyway
(``tests/validate/test_hostile_inputs.py`` probes for that and covers it).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

import envkit.model._walk
from envkit.model.target import Target
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import RULES, CheckOptions
from envkit.validators.probe import PROBE_FIXTURES
from envkit.validators.spinup import SPINUP_FIXTURES

ROOT = REPO_ROOT
CASES_DIR = ROOT / "fixtures" / "packages"
CASES = sorted(p.parent for p in CASES_DIR.glob("*/case.json"))


def _request(case: Path) -> ValidateRequest:
    spec = json.loads((case / "case.json").read_text())
    opts = spec.get("options", {})
    target = Target(arch=opts.get("arch", "x86_64"))
    return ValidateRequest(
        package=case / spec["package"] if spec.get("package") else None,
        dataset=case / spec["dataset"] if spec.get("dataset") else None,
        job=case / spec["job"] if spec.get("job") else None,
        options=CheckOptions(
            target=target,
            gym_version=opts.get("gym_version", "0.7.0"),
            offline=opts.get("offline", False),
        ),
    )


def _apply_setup(case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Copy ``case`` to ``tmp_path`` and apply its ``setup`` steps; return the copy."""
    steps = json.loads((case / "case.json").read_text()).get("setup", [])
    if not steps:
        return case
    copy = tmp_path / case.name
    shutil.copytree(case, copy, symlinks=True)
    for step in steps:
        op, _, arg = step.partition(":")
        if op == "mkfifo":
            os.mkfifo(copy / arg)
        elif op == "max_entries":
            monkeypatch.setattr(envkit.model._walk, "MAX_ENTRIES", int(arg))  # the walk's limit
        else:
            pytest.fail(f"{case.name}: unknown setup step {step!r}")
    return copy


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_reports_exactly_expected_codes(
    case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = set(json.loads((case / "case.json").read_text())["expect"])
    report = validate(_request(_apply_setup(case, tmp_path, monkeypatch)))
    found = {d.code for d in report.diagnostics}
    shown = "\n".join(f"{d.path}:{d.line}: {d.code} {d.message}" for d in report.diagnostics)
    assert found == expected, shown
    if case.name.startswith("valid-"):
        assert report.valid


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_has_a_failing_fixture(code: str) -> None:
    if code in SPINUP_FIXTURES:
        # Spin-up-only codes (EK7xx) no static run reports: their failing fixtures are the
        # fixtures/smoke_* packages that tests/smoke/test_run_gym.py brings up (slow group).
        where = ROOT / SPINUP_FIXTURES[code].split("::")[0]
        assert where.exists(), where
        return
    if code in PROBE_FIXTURES:
        # Probe-only codes (EK8xx): fixtures/probe/<case> packages that tests/probe/ probes on
        # real servers, or the test of the analysis that assigns the code.
        for where in PROBE_FIXTURES[code]:
            assert (ROOT / where.split("::")[0]).exists(), where
        return
    named = [c for c in CASES if c.name.startswith(code + "-")]
    assert named, f"no fixtures/packages/{code}-*/ case for {code}"
    for case in named:
        assert code in json.loads((case / "case.json").read_text())["expect"]


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_is_documented(code: str) -> None:
    rule = RULES[code]
    assert rule.code == code
    assert rule.title and rule.why and rule.fix
