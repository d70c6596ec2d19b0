"""EK2xx edge cases beyond the one golden fixture per code."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

from envkit.model.package import load_package
from envkit.validators import Inputs
from envkit.validators.layout import CHECKS

CASES = REPO_ROOT / "fixtures" / "packages"


def _codes(pkg: Path) -> list[str]:
    inputs = Inputs(package=load_package(pkg))
    return sorted(d.code for check in CHECKS for d in check(inputs))


@pytest.fixture
def native(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CASES / "valid-native-v1" / "pkg", tmp_path / "pkg"))


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CASES / "valid-wheels-v1" / "pkg", tmp_path / "pkg"))


def test_builtin_config_only_dir_needs_no_marker(native: Path) -> None:
    # responses_api_models/vllm_model/ holds only configs/: Gym runs its built-in vllm_model.
    assert not (native / "responses_api_models" / "vllm_model" / "requirements.txt").exists()
    assert _codes(native) == []


def test_builtin_name_with_code_but_no_marker_is_left_to_ek309(native: Path) -> None:
    (native / "resources_servers" / "code_gen").mkdir()
    (native / "resources_servers" / "code_gen" / "app.py").write_text("x = 1\n")
    assert _codes(native) == []


@pytest.mark.parametrize("server_type", ["responses_api_agents", "environment_servers"])
def test_custom_dir_of_every_server_type_needs_a_marker(native: Path, server_type: str) -> None:
    (native / server_type / "my_custom").mkdir(parents=True)
    (native / server_type / "my_custom" / "app.py").write_text("x = 1\n")
    assert _codes(native) == ["EK205"]


def test_marker_in_a_subdirectory_does_not_count(native: Path) -> None:
    sub = native / "resources_servers" / "my_custom" / "src"
    sub.mkdir(parents=True)
    (sub / "requirements.txt").write_text("\n")
    assert _codes(native) == ["EK205"]


def test_empty_wheels_dir(wheels: Path) -> None:
    for whl in (wheels / "wheels").iterdir():
        whl.unlink()
    assert _codes(wheels) == ["EK201"]


def test_wheels_is_a_file(wheels: Path) -> None:
    shutil.rmtree(wheels / "wheels")
    (wheels / "wheels").write_text("")
    assert _codes(wheels) == ["EK201"]


def test_wheels_subdir_symlink_and_sdist_are_each_reported(wheels: Path) -> None:
    (wheels / "wheels" / "old").mkdir()
    (wheels / "wheels" / "x-1.0.tar.gz").write_bytes(b"")
    (wheels / "wheels" / "link-1.0-py3-none-any.whl").symlink_to("echo_scorer-1.0-py3-none-any.whl")
    assert _codes(wheels) == ["EK202", "EK202", "EK202"]


def test_jsonl_is_found_at_any_depth_and_case(native: Path) -> None:
    (native / "a" / "b" / "c").mkdir(parents=True)
    (native / "a" / "b" / "c" / "ROWS.JSONL").write_text("")
    assert _codes(native) == ["EK200"]


def test_absolute_symlink_outside_and_inside(native: Path) -> None:
    (native / "etc").symlink_to("/etc")
    (native / "here").symlink_to(native / "resources_servers")
    assert _codes(native) == ["EK204"]


def test_native_wheels_dir_is_only_a_warning(native: Path) -> None:
    (native / "wheels").mkdir()
    (native / "wheels" / "notes.txt").write_text("")
    assert _codes(native) == ["EK206"]  # EK202 is for the formats that install wheels/
