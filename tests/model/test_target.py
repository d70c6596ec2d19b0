"""Targets: tag lists and marker environments describe the cluster, never the host."""

from __future__ import annotations

import pytest
from packaging.markers import Marker, default_environment
from packaging.tags import Tag, parse_tag

from envkit.model.target import Target, TargetError, platform_tags


def _accepts(target: Target, tag: str) -> bool:
    return target.accepts(frozenset(parse_tag(tag)))


@pytest.mark.parametrize(
    ("tag", "arch", "ok"),
    [
        ("cp313-cp313-manylinux_2_28_aarch64", "aarch64", True),
        ("cp313-cp313-manylinux_2_17_aarch64.manylinux2014_aarch64", "aarch64", True),
        ("cp39-abi3-manylinux_2_17_x86_64", "x86_64", True),
        ("cp314-abi3-manylinux_2_17_x86_64", "x86_64", False),
        ("cp312-cp312-manylinux_2_17_x86_64", "x86_64", False),
        ("py3-none-any", "aarch64", True),
        ("py2.py3-none-any", "x86_64", True),
        ("cp313-cp313-manylinux1_x86_64", "x86_64", True),
        ("cp313-cp313-manylinux2010_x86_64", "x86_64", True),
        ("cp313-cp313-manylinux_2_31_aarch64", "aarch64", False),
        ("cp313-cp313-musllinux_1_2_x86_64", "x86_64", False),
        ("cp313-cp313-linux_x86_64", "x86_64", False),
        ("cp313-cp313-manylinux_2_17_x86_64", "aarch64", False),
        ("cp313-cp313-manylinux_2_17_aarch64", "x86_64", False),
        ("cp313-cp313-win_amd64", "x86_64", False),
    ],
)
def test_tag_compatibility(tag: str, arch: str, ok: bool) -> None:
    assert _accepts(Target(arch), tag) is ok


def test_glibc_floor_is_respected() -> None:
    wheel = "cp313-cp313-manylinux_2_31_aarch64"
    assert not _accepts(Target("aarch64", glibc=(2, 28)), wheel)
    assert _accepts(Target("aarch64", glibc=(2, 31)), wheel)
    assert _accepts(Target("aarch64", glibc=(2, 39)), wheel)


def test_tag_order_most_specific_first() -> None:
    tags = Target("aarch64").tags()
    assert tags[0] == Tag("cp313", "cp313", "manylinux_2_28_aarch64")
    assert tags[-1] == Tag("py30", "none", "any")
    assert tags.index(Tag("cp313", "abi3", "manylinux_2_28_aarch64")) < tags.index(
        Tag("py3", "none", "any")
    )
    assert len(set(tags)) == len(tags)


def test_platform_tags_aliases() -> None:
    assert platform_tags("aarch64", (2, 17)) == ("manylinux_2_17_aarch64", "manylinux2014_aarch64")
    x86 = platform_tags("x86_64", (2, 17))
    assert x86[:2] == ("manylinux_2_17_x86_64", "manylinux2014_x86_64")
    assert "manylinux2010_x86_64" in x86
    assert x86[-1] == "manylinux1_x86_64"
    assert not any("musllinux" in p or p.startswith("linux_") for p in x86)


def test_defaults_and_refusals() -> None:
    assert Target("x86_64").glibc_floor == (2, 28)  # nemo-gym 0.7.0 closure needs >= 2.28
    assert Target("x86_64", glibc=(2, 17)).glibc_floor == (2, 17)
    assert Target("aarch64").glibc_floor == (2, 28)
    assert str(Target("aarch64")) == "cp313-manylinux_2_28_aarch64"
    with pytest.raises(TargetError, match="musl"):
        Target("x86_64-musl")
    with pytest.raises(TargetError, match="glibc"):
        Target("x86_64", glibc=(2, 12))
    with pytest.raises(TargetError, match="glibc"):
        Target("aarch64", glibc=(2, 41))


def test_marker_environment_is_complete_and_target_only() -> None:
    env = Target("aarch64").marker_environment()
    assert set(default_environment()) <= set(env)
    assert env["platform_machine"] == "aarch64"
    assert env["python_full_version"] == "3.13.14"
    assert env["sys_platform"] == "linux"
    assert Marker('platform_machine == "aarch64"').evaluate(env)
    assert not Marker('python_version < "3.12"').evaluate(env)
    x86 = Target("x86_64", python=(3, 12)).marker_environment()
    assert x86["python_full_version"] == "3.12.0"
    assert not Marker('platform_machine == "aarch64"').evaluate(x86)
