"""Differential: envkit's offline verdict agrees with uv's resolver on a real PyPI closure.

``ray[default]`` + ``openai==2.44.0`` (66 wheels, ~110 MB per arch) is resolved and downloaded
once per arch into ``~/.cache/envkit-tests/`` (``fixtures/realwheels.py``); then, for the
complete wheelhouse, one with a wheel removed, and one with a wheel swapped for the other
arch's build, envkit's EK4xx verdict must match
``uv pip compile --offline --no-index --find-links`` for the same target.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import realwheels
from packaging.metadata import parse_email
from support.paths import REPO_ROOT

from envkit.model._zipdir import Archive
from envkit.model.target import Target
from envkit.model.wheelfile import read_wheel
from envkit.validate.validate import ValidateRequest, validate
from envkit.validators import CheckOptions

pytestmark = pytest.mark.network

ROOTS = ["ray[default]", "openai==2.44.0"]
OTHER = {"x86_64": "aarch64", "aarch64": "x86_64"}
FIXTURES = REPO_ROOT / "fixtures" / "packages"
BLOCKING = {"EK400", "EK401", "EK402", "EK403", "EK404", "EK405", "EK406"}


def _link_or_copy(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _package(tmp: Path, house: Path, drop: str | None = None, swap: Path | None = None) -> Path:
    """A wheels-v1 package whose one server requires ROOTS, vendoring ``house``."""
    pkg = tmp / "pkg"
    skip_wheels = shutil.ignore_patterns("*.whl")
    shutil.copytree(FIXTURES / "valid-wheels-v1" / "pkg", pkg, ignore=skip_wheels)
    (pkg / "resources_servers/echo_match/requirements.txt").write_text("\n".join(ROOTS) + "\n")
    for wheel in house.glob("*.whl"):
        if wheel.name not in (drop, swap and _same_project(house, swap).name):
            _link_or_copy(wheel, pkg / "wheels" / wheel.name)
    if swap is not None:
        _link_or_copy(swap, pkg / "wheels" / swap.name)
    return pkg


def _same_project(house: Path, wheel: Path) -> Path:
    stem = "-".join(wheel.name.split("-")[:2]) + "-"
    return next(w for w in house.glob("*.whl") if w.name.startswith(stem))


def _envkit_ok(pkg: Path, arch: str) -> tuple[bool, list[str]]:
    options = CheckOptions(Target(arch), "0.7.0", offline=False)
    report = validate(ValidateRequest(package=pkg, options=options, select=("EK4",)))
    blocking = [f"{d.code} {d.message}" for d in report.diagnostics if d.code in BLOCKING]
    return not blocking, blocking


def _platform_wheel(house: Path, other: Path) -> Path:
    """A platform-specific wheel of ``house`` that ``other`` has for the other arch."""
    for wheel in sorted(house.glob("*.whl")):
        if wheel.name.endswith("-any.whl") or wheel.name.startswith("ray-"):
            continue
        stem = "-".join(wheel.name.split("-")[:2]) + "-"
        twins = [w for w in other.glob(stem + "*.whl") if w.name != wheel.name]
        if twins:
            return twins[0]
    pytest.fail("no platform-specific wheel to swap")


@pytest.fixture(scope="module", params=["aarch64", "x86_64"])
def houses(request: pytest.FixtureRequest) -> tuple[str, Path, Path]:
    arch = request.param
    try:
        house = realwheels.wheelhouse("ray-openai", ROOTS, arch)
        other = realwheels.wheelhouse("ray-openai", ROOTS, OTHER[arch])
    except (subprocess.SubprocessError, OSError) as exc:  # no PyPI: nothing to compare with
        pytest.skip(f"cannot fetch the real closure from PyPI: {exc}")
    return arch, house, other


def test_complete_closure_both_ok(houses: tuple[str, Path, Path], tmp_path: Path) -> None:
    arch, house, _ = houses
    pkg = _package(tmp_path, house)
    uv_ok, uv_err = realwheels.uv_offline_ok(ROOTS, pkg / "wheels", arch)
    ok, why = _envkit_ok(pkg, arch)
    assert (ok, uv_ok) == (True, True), (why, uv_err)
    assert len(list((pkg / "wheels").glob("*.whl"))) > 60


def test_wheel_removed_both_fail(houses: tuple[str, Path, Path], tmp_path: Path) -> None:
    arch, house, _ = houses
    victim = next(w.name for w in sorted(house.glob("frozenlist-*.whl")))
    pkg = _package(tmp_path, house, drop=victim)
    uv_ok, _ = realwheels.uv_offline_ok(ROOTS, pkg / "wheels", arch)
    ok, why = _envkit_ok(pkg, arch)
    assert (ok, uv_ok) == (False, False)
    assert any(w.startswith("EK403") and "frozenlist" in w for w in why)


def test_wheel_swapped_for_other_arch_both_fail(
    houses: tuple[str, Path, Path], tmp_path: Path
) -> None:
    arch, house, other = houses
    swap = _platform_wheel(house, other)
    pkg = _package(tmp_path, house, swap=swap)
    uv_ok, uv_err = realwheels.uv_offline_ok(ROOTS, pkg / "wheels", arch)
    ok, why = _envkit_ok(pkg, arch)
    assert (ok, uv_ok) == (False, False), uv_err
    assert any(w.startswith("EK401") and swap.name in w for w in why)


def test_bounded_member_reader_matches_zipfile(houses: tuple[str, Path, Path]) -> None:
    """envkit's bounded member reader gives the same members, sizes and bytes as zipfile."""
    _, house, _ = houses
    for wheel in sorted(house.glob("*.whl")):
        with zipfile.ZipFile(wheel) as zf:
            archive = Archive(zf)
            assert archive.sizes == {i.filename: i.file_size for i in zf.infolist()
                                     if not i.is_dir()}, wheel.name
            meta = next(n for n in archive.sizes if n.endswith(".dist-info/METADATA"))
            assert archive.read(meta) == zf.read(meta)


def test_core_fields_match_packaging_metadata(houses: tuple[str, Path, Path]) -> None:
    """envkit's five-field METADATA reader agrees with ``packaging.metadata.parse_email``."""
    _, house, _ = houses
    for path in sorted(house.glob("*.whl")):
        with zipfile.ZipFile(path) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            raw, _ = parse_email(zf.read(meta))
        wheel = read_wheel(path)
        assert wheel.requires_dist == tuple(raw.get("requires_dist", ())), path.name
        assert wheel.requires_python == raw.get("requires_python"), path.name
        assert wheel.provides_extra == tuple(raw.get("provides_extra", ())), path.name
