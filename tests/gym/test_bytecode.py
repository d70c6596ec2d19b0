"""The processes envkit starts from its Gym and server venvs keep their bytecode: uv writes no
``.pyc`` at install, and where ``PYTHONDONTWRITEBYTECODE`` is set (this CI machine, most
container images) every server start compiled its whole import closure from source again.

Real uv and a real venv, no server: what a server process does with the environment every
``gym`` call gets.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envkit.gym.install import RunPaths, gym_env, write_uv_toml
from envkit.gym.venv import GymVenv
from envkit.supply.uvcmd import isolated_env, uv_bin


def test_the_first_start_writes_the_bytecode_the_next_ones_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    venv = tmp_path / "server" / ".venv"
    subprocess.run([uv_bin(), "venv", "--no-config", "--quiet", "--python", sys.executable,
                    str(venv)], check=True, env=isolated_env(), timeout=120)
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "toy_server").mkdir()
    (site / "toy_server" / "__init__.py").write_text("READY = True\n")
    gym = GymVenv(tmp_path / "gym", "0.7.0", "3.13.0", False)
    paths = RunPaths(tmp_path / "run", tmp_path / "ray")
    paths.run_dir.mkdir()
    uv_toml = write_uv_toml(gym, paths.run_dir, offline=False)
    env = gym_env(gym, paths, uv_toml, tmp_path / "uv")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    start = [str(venv / "bin" / "python"), "-c", "import toy_server; assert toy_server.READY"]
    subprocess.run(start, check=True, env=env, timeout=60)
    assert list((site / "toy_server" / "__pycache__").glob("__init__.*.pyc"))
