"""The closure walk: markers and extras for the target, chains, requirements.txt parsing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from packaging.requirements import Requirement
from wheelfactory import make_wheel

from envkit.model.closure import (
    Root,
    pyproject_roots,
    requirements_txt_roots,
    runtime_roots,
    usable,
    walk,
)
from envkit.model.gym_data import gym_data
from envkit.model.target import Target
from envkit.model.wheelfile import read_wheel

if TYPE_CHECKING:
    from pathlib import Path

X86 = Target("x86_64")
ARM = Target("aarch64")


def _wheels(tmp_path: Path, *specs: tuple) -> list:
    return [read_wheel(make_wheel(tmp_path, name, version, **kw)) for name, version, kw in specs]


def _roots(*reqs: str) -> list[Root]:
    return [Root(Requirement(r), "requirements.txt:1", "requirements.txt", 1) for r in reqs]


def test_platform_machine_marker_is_the_targets(tmp_path: Path) -> None:
    arm_only = 'armlib; platform_machine == "aarch64"'
    wheels = _wheels(tmp_path, ("app", "1", {"requires": (arm_only,)}))
    assert walk(wheels, _roots("app"), X86).complete
    missing = walk(wheels, _roots("app"), ARM).missing
    assert [m.name for m in missing] == ["armlib"]


def test_python_version_marker(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path, ("app", "1", {"requires": ('backport; python_version < "3.12"',)}))
    assert walk(wheels, _roots("app"), X86).complete


def test_extras_pull_their_requirements(tmp_path: Path) -> None:
    ray = ("ray", "2.58.0", {"extras": ("default",),
                             "requires": ("click", 'aiohttp>=3.7; extra == "default"')})
    wheels = _wheels(tmp_path, ray, ("click", "8", {}))
    assert walk(wheels, _roots("ray"), X86).complete
    closure = walk(wheels, _roots("ray[default]"), X86)
    assert [m.text for m in closure.missing] == [
        "aiohttp>=3.7 <- ray[default]==2.58.0 <- requirements.txt:1"
    ]
    later = walk(wheels, _roots("ray", "ray[default]"), X86)  # extra asked by a second path
    assert [m.name for m in later.missing] == ["aiohttp"]


def test_runtime_chain_text(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path, ("nemo-gym", "0.7.0", {"requires": ("openai==2.44.0",)}))
    roots = runtime_roots("0.7.0", (), "wheels/")
    missing = walk(wheels, roots, X86).missing
    assert sorted(m.text for m in missing) == [
        "openai==2.44.0 <- nemo-gym==0.7.0 <- runtime pin",
        "pip <- venv seed (Gym runs `uv venv --seed`)",
    ]


def test_runtime_roots_use_gyms_pins() -> None:
    roots = {str(r.requirement) for r in runtime_roots("0.7.0", gym_data().requires_dist, "w")}
    assert roots == {"nemo-gym==0.7.0", "openai==2.44.0", "ray[default]>=2.58.0", "pip"}


def test_version_mismatch_reports_what_is_vendored(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path, ("lib", "1.0", {}), ("lib", "1.5", {}))
    closure = walk(wheels, _roots("lib>=2"), X86)
    assert closure.missing[0].vendored == ("1.0", "1.5")
    assert walk(wheels, _roots("lib"), X86).used["lib"].version.public == "1.5"


def test_wrong_arch_only_is_blocked_not_missing(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path, ("fast", "1", {"tag": "cp313-cp313-manylinux_2_17_aarch64"}))
    closure = walk(wheels, _roots("fast"), X86)
    assert closure.blocked == {"fast"}
    assert not closure.missing
    assert not closure.complete
    assert walk(wheels, _roots("fast"), ARM).complete


def test_compressed_tag_set_and_abi3(tmp_path: Path) -> None:
    wheels = _wheels(
        tmp_path,
        ("a", "1", {"tag": "cp313-cp313-manylinux_2_17_x86_64.manylinux2014_x86_64"}),
        ("b", "1", {"tag": "cp39-abi3-manylinux_2_17_x86_64"}),
        ("c", "1", {"tag": "cp314-abi3-manylinux_2_17_x86_64"}),
        ("d", "1", {"tag": "cp313-cp313-musllinux_1_2_x86_64"}),
    )
    assert [usable(w, X86) for w in wheels] == [True, True, False, False]


def test_requires_python_uses_full_version(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path, ("new", "1", {"requires_python": ">=3.13.14"}),
                     ("newer", "1", {"requires_python": ">=3.13.15"}))
    assert [usable(w, X86) for w in wheels] == [True, False]


def test_cycles_terminate(tmp_path: Path) -> None:
    wheels = _wheels(tmp_path, ("a", "1", {"requires": ("b",)}), ("b", "1", {"requires": ("a",)}))
    closure = walk(wheels, _roots("a"), X86)
    assert closure.complete
    assert set(closure.used) == {"a", "b"}
    assert closure.chains["b"] == ("b==1", "a==1", "requirements.txt:1")


REQUIREMENTS = """\
# a Gym server's requirements
-e nemo-gym[dev] @ ../../
--extra-index-url https://hub.example/simple/
-r other.txt
numpy>=2 ; python_version >= "3.10"   # inline comment
requests==2.32.0 \\
    --hash=sha256:abcd
verifiers @ git+https://github.com/PrimeIntellect-ai/verifiers.git@v0.3.1
git+https://github.com/x/y.git
tool @ https://example.com/tool-1.0-py3-none-any.whl
-e ../../benchmarks/automationbench
-e ./local_pkg
-e git+https://github.com/o/editable.git#egg=editable
not a requirement !!
"""


def test_requirements_txt_tolerates_gym_lines() -> None:
    roots, egress = requirements_txt_roots(REQUIREMENTS, "srv/requirements.txt")
    assert [(str(r.requirement), r.line) for r in roots] == [
        ('numpy>=2; python_version >= "3.10"', 5),
        ("requests==2.32.0", 6),
    ]
    assert roots[0].origin == "srv/requirements.txt:5"
    assert [(e.text.split()[0], e.line) for e in egress] == [
        ("verifiers", 8), ("git+https://github.com/x/y.git", 9), ("tool", 10),
        ("git+https://github.com/o/editable.git#egg=editable", 13),
    ]


def test_pyproject_dependencies() -> None:
    text = (
        '[project]\nname = "s"\ndependencies = [\n  "echo-scorer==1.0",\n  "x @ https://e/x.whl",\n'
        '  "nemo-gym[dev]",\n]\n[build-system]\nrequires = ["setuptools>=61"]\n'
    )
    roots, egress = pyproject_roots(text, "srv/pyproject.toml")
    assert [(str(r.requirement), r.line) for r in roots] == [
        ("echo-scorer==1.0", 4), ("nemo-gym[dev]", 6), ("setuptools>=61", 9),
    ]
    assert [e.line for e in egress] == [5]
    assert pyproject_roots("not = [toml", "p") == ([], [])


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_unreadable_wheels_are_ignored_by_the_walk(tmp_path: Path, arch: str) -> None:
    bad = tmp_path / "lib-1.0-py3-none-any.whl"
    bad.write_bytes(b"junk")
    closure = walk([read_wheel(bad)], _roots("lib"), Target(arch))
    assert [m.name for m in closure.missing] == ["lib"]


def test_unevaluable_marker_counts_as_needed(tmp_path: Path) -> None:
    """``platform_version`` is unknown for a cluster: a comparison on it cannot drop a dep."""
    odd = 'kernel-helper; platform_version ~= "1.0"'
    wheels = _wheels(tmp_path, ("app", "1", {"requires": (odd, 'never; os_name == "nt"')}))
    assert [m.name for m in walk(wheels, _roots("app"), X86).missing] == ["kernel-helper"]
