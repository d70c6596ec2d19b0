"""The venvs envkit builds for Gym hold compiled bytecode: uv writes no ``.pyc`` by default, and
where ``PYTHONDONTWRITEBYTECODE`` is set (this CI machine, most container images) no start ever
writes one, so every server start compiled its whole closure from source.

Real uv and real venvs, no server: the uv.toml Gym's installs read, the offline install of
``wheels/``, and the in-place compile of a Gym venv built before bytecode was compiled.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from wheelfactory import make_wheel

from envkit.gym.install import RunPaths, gym_env, offline_install, write_uv_toml
from envkit.gym.venv import GymVenv, _compile_once, uv_binary
from envkit.supply.isolation import isolated_env


def _gym(root: Path) -> GymVenv:
    return GymVenv(root, "0.7.0", f"{sys.version_info.major}.{sys.version_info.minor}", False)


def _venv(path: Path) -> Path:
    subprocess.run([uv_binary(), "venv", "--no-config", "--quiet", "--python", sys.executable,
                    str(path)], check=True, env=isolated_env(), timeout=120)
    return path


def _compiled(venv: Path, module: str) -> list[Path]:
    return list(venv.glob(f"lib/python*/site-packages/{module}/__pycache__/*.pyc"))


def test_gyms_installs_compile_bytecode(tmp_path: Path) -> None:
    """The uv.toml every Gym ``uv pip install`` reads asks for bytecode, and uv takes it."""
    toml = write_uv_toml(_gym(tmp_path / "gym"), tmp_path, offline=True)
    assert tomllib.loads(toml.read_text())["pip"]["compile-bytecode"] is True
    wheel = make_wheel(tmp_path / "wheels", "envkit-toy-scorer", "1.0",
                       files={"envkit_toy_scorer/__init__.py": b"SCALE = 1\n"})
    venv = _venv(tmp_path / "v")
    env = {**isolated_env(), "UV_CONFIG_FILE": str(toml), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("UV_NO_CONFIG", None)
    subprocess.run([uv_binary(), "pip", "install", "--quiet", "--python",
                    str(venv / "bin" / "python"), str(wheel)], check=True, env=env, timeout=120)
    assert _compiled(venv, "envkit_toy_scorer")


def test_the_offline_install_of_wheels_compiles_bytecode(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "wheels", "envkit-toy-scorer", "1.0",
                       files={"envkit_toy_scorer/__init__.py": b"SCALE = 1\n"})
    tree = tmp_path / "tree"
    venv = _venv(tree / "resources_servers" / "toy" / ".venv")
    paths = RunPaths(tmp_path / "run", tmp_path / "ray")
    paths.run_dir.mkdir()
    gym = _gym(tmp_path / "gym")
    env = gym_env(gym, paths, write_uv_toml(gym, paths.run_dir, offline=True))
    offline_install([wheel], tree, env, lambda step: None)
    assert _compiled(venv, "envkit_toy_scorer")


def test_a_gym_venv_without_bytecode_is_compiled_once_in_place(tmp_path: Path) -> None:
    root = _venv(tmp_path / "gym")
    (site,) = root.glob("lib/python*/site-packages")
    (site / "toy_mod").mkdir()
    (site / "toy_mod" / "__init__.py").write_text("VALUE = 1\n")
    (site / "toy_mod" / "broken.py").write_text("def (:\n")  # some wheels ship such files
    marker = root / "envkit-gym-venv.json"
    marker.write_text(json.dumps({"gym_version": "0.7.0", "python_override": False}))
    _compile_once(root, marker)
    assert _compiled(root, "toy_mod")
    record = json.loads(marker.read_text())
    assert record == {"gym_version": "0.7.0", "python_override": False, "bytecode": True}
    for pyc in _compiled(root, "toy_mod"):
        pyc.unlink()
    _compile_once(root, marker)  # recorded: not compiled again (a file that fails stays so)
    assert not _compiled(root, "toy_mod")
