"""``envkit.validators.CHECKS`` defers the wheels' checks: each
stands for its module's own check, under its name, in the module's order, and finds what that
check finds (``tests/check/test_startup_imports.py`` holds that a package-only run imports
none of them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.model.package import load_package
from envkit.validators import (
    CHECKS,
    CheckOptions,
    Inputs,
    dataset,
    gym,
    job,
    layout,
    manifest,
    probe,
    provenance,
    secrets,
    spinup,
    wheel_checks,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "fixtures" / "packages"


def test_checks_are_each_area_s_own_in_order() -> None:
    areas = (manifest, layout, secrets, provenance, gym, wheel_checks, dataset, job,
             spinup, probe)
    own = [check.__name__ for area in areas for check in area.CHECKS]
    assert [check.__name__ for check in CHECKS] == own


WHEEL_CASES = sorted(p.parent.name for p in PACKAGES.glob("*/pkg") if p.parent.name.startswith(
    ("EK40", "valid-wheels", "valid-adapter", "valid-native")))


def test_the_wheel_cases_cover_every_wheel_rule() -> None:
    assert {name[:5] for name in WHEEL_CASES if name.startswith("EK")} == {
        f"EK40{i}" for i in range(10)}


@pytest.mark.parametrize("name", WHEEL_CASES)
def test_a_deferred_check_finds_what_its_module_s_finds(name: str) -> None:
    root = PACKAGES / name / "pkg"
    deferred = {check.__name__: check for check in CHECKS}
    codes = set()
    for offline in (False, True):
        inputs = Inputs(package=load_package(root, verify_hashes=True),
                        options=CheckOptions(offline=offline))
        for check in wheel_checks.CHECKS:
            found = list(deferred[check.__name__](inputs))
            assert found == list(check(inputs)), check.__name__
            codes.update(diag.code for diag in found)
    assert codes <= {f"EK40{i}" for i in range(10)}
    if name.startswith("EK"):
        assert name[:5] in codes
