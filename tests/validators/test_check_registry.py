"""``envkit.validators.all_checks()`` is every area's own checks, in order, imported plainly (a
rename fails at import); ``checks_for`` leaves out only areas that find nothing in the inputs; the
wheelhouse's checks find each wheel case's code."""

from __future__ import annotations

from pathlib import Path

import pytest

from envkit.model.package import load_package
from envkit.validators import (
    CheckOptions,
    Inputs,
    all_checks,
    checks_for,
    gym,
    layout,
    manifest,
    probe,
    provenance,
    secrets,
    spinup,
)
from envkit.validators.dataset import checks as dataset
from envkit.validators.job import checks as job
from envkit.validators.wheels import checks as wheels

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ROOT / "fixtures" / "packages"


def test_checks_are_each_area_s_own_in_order() -> None:
    areas = (manifest, layout, secrets, provenance, gym, wheels, dataset, job,
             spinup, probe)
    own = [check.__name__ for area in areas for check in area.CHECKS]
    assert [check.__name__ for check in all_checks()] == own


@pytest.mark.parametrize("name", sorted(p.parent.name for p in PACKAGES.glob("*/pkg")))
def test_the_checks_left_out_find_nothing(name: str) -> None:
    """An area ``checks_for`` leaves out (no wheelhouse, dataset or job file in the inputs)
    would have reported nothing: the report is the one every check gives."""
    inputs = Inputs(package=load_package(PACKAGES / name / "pkg"))
    chosen = checks_for(inputs)
    assert [c for c in all_checks() if c in chosen] == list(chosen)
    left_out = [check for check in all_checks() if check not in chosen]
    assert not [diag for check in left_out for diag in check(inputs)]


WHEEL_CASES = sorted(p.parent.name for p in PACKAGES.glob("*/pkg") if p.parent.name.startswith(
    ("EK40", "valid-wheels", "valid-adapter", "valid-native")))


def test_the_wheel_cases_cover_every_wheel_rule() -> None:
    assert {name[:5] for name in WHEEL_CASES if name.startswith("EK")} == {
        f"EK40{i}" for i in range(10)}


@pytest.mark.parametrize("name", WHEEL_CASES)
def test_the_wheel_checks_find_each_case_s_code(name: str) -> None:
    root = PACKAGES / name / "pkg"
    codes = set()
    for offline in (False, True):
        inputs = Inputs(package=load_package(root, verify_hashes=True),
                        options=CheckOptions(offline=offline))
        codes.update(diag.code for check in wheels.CHECKS for diag in check(inputs))
    assert codes <= {f"EK40{i}" for i in range(10)}
    if name.startswith("EK"):
        assert name[:5] in codes
