"""Gym's servers joining a running Ray cluster (``ENVKIT_GYM_RAY_ADDRESS``,
``python -m envkit.gym.ray_cluster``) instead of Gym's head starting one per bring-up.

Fast: what reaches Gym (``ray_head_node_address``, Ray's token auth asked for) and where the
address comes from. Slow (``gym``): the module's cluster on the real Gym 0.7.0 venv, a smoke
that joins it and leaves it running, the cluster stopped with nothing left, and an address
with no cluster behind it named as such.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from support.proc_marks import new_mark, survivors

from envkit.gym.install import RunPaths, gym_args, gym_env, write_uv_toml
from envkit.gym.types import GYM_RAY_ADDRESS_ENV, PolicyEndpoint, RuntimeOptions
from envkit.gym.venv import PYTHON_OVERRIDE_ENV, GymVenv, python_override_from_env

SOUND = REPO_ROOT / "fixtures" / "probe" / "sound"
POLICY = PolicyEndpoint("http://127.0.0.1:9/v1", "key", "model")


def test_an_address_becomes_gyms_ray_head_node_address(tmp_path: Path) -> None:
    own = gym_args(["c.yaml"], POLICY, tmp_path, tmp_path, 9000, tmp_path / "uv")
    joined = gym_args(["c.yaml"], POLICY, tmp_path, tmp_path, 9000, tmp_path / "uv",
                      "10.0.0.1:6379")
    assert not any("ray_head_node_address" in a for a in own)
    assert joined == [*own, "++ray_head_node_address=10.0.0.1:6379"]


def test_the_address_comes_from_the_environment_unless_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GYM_RAY_ADDRESS_ENV, raising=False)
    assert RuntimeOptions().ray_address is None
    monkeypatch.setenv(GYM_RAY_ADDRESS_ENV, "127.0.0.1:1234")
    assert RuntimeOptions().ray_address == "127.0.0.1:1234"
    assert RuntimeOptions(ray_address=None).ray_address is None
    monkeypatch.setenv(GYM_RAY_ADDRESS_ENV, "")
    assert RuntimeOptions().ray_address is None


@pytest.mark.parametrize(("value", "allowed"), [
    ("1", True), ("true", True), ("YES", True), ("on", True), ("y", True), ("t", True),
    (" True ", True), ("", False), ("0", False), ("no", False), ("off", False)])
def test_the_python_override_is_read_from_the_environment_as_the_flag_reads_it(
        value: str, allowed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one reading behind ``validate --smoke/--probe`` and this module's default."""
    monkeypatch.setenv(PYTHON_OVERRIDE_ENV, value)
    assert python_override_from_env() is allowed
    monkeypatch.delenv(PYTHON_OVERRIDE_ENV)
    assert python_override_from_env() is False


def test_joining_asks_for_rays_token_auth_unless_the_user_chose(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gym = GymVenv(tmp_path / "gym", "0.7.0", "3.13.0", False)
    paths = RunPaths(tmp_path / "run", tmp_path / "ray")
    paths.run_dir.mkdir()
    uv_toml = write_uv_toml(gym, paths.run_dir, offline=False)
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    uv_cache = tmp_path / "uv"
    assert "RAY_AUTH_MODE" not in gym_env(gym, paths, uv_toml, uv_cache)
    assert gym_env(gym, paths, uv_toml, uv_cache, joins_ray=True)["RAY_AUTH_MODE"] == "token"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert gym_env(gym, paths, uv_toml, uv_cache, joins_ray=True)["RAY_AUTH_MODE"] == "disabled"


def test_what_gym_processes_leave_in_a_temporary_directory_goes_with_the_run(
        tmp_path: Path) -> None:
    """A server stopped by a signal runs no clean-up: the temporary directories it made (Gym's
    wandb import makes two) are in the run's Ray directory, which the runtime removes."""
    gym = GymVenv(tmp_path / "gym", "0.7.0", "3.13.0", False)
    paths = RunPaths(tmp_path / "run", tmp_path / "ray")
    paths.run_dir.mkdir()
    paths.ray_tmp.mkdir()
    env = gym_env(gym, paths, write_uv_toml(gym, paths.run_dir, offline=False), tmp_path / "uv")
    killed = ("import os, tempfile\n"
              "kept = tempfile.TemporaryDirectory('wandb-media')\n"
              "print(kept.name, flush=True)\nos._exit(0)\n")
    made = subprocess.run([sys.executable, "-c", killed], env=env, capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()
    assert Path(made).parent == paths.ray_tmp and Path(made).is_dir()


def _smoke(env: dict[str, str]) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "envkit", "smoke", str(SOUND / "pkg"), "--dataset",
         str(SOUND / "data"), "--format", "json"], capture_output=True, text=True, env=env,
        cwd=REPO_ROOT, timeout=900, check=False)
    return proc.returncode, json.loads(proc.stdout), proc.stderr


@pytest.mark.gym
def test_smoke_joins_the_modules_cluster_which_outlives_it_then_stops_clean(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mark = new_mark(monkeypatch)
    env = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}
    env.pop(GYM_RAY_ADDRESS_ENV, None)
    holder = subprocess.Popen([sys.executable, "-m", "envkit.gym.ray_cluster"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO_ROOT)
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline().strip()
        assert line.startswith(f"export {GYM_RAY_ADDRESS_ENV}="), line
        address = line.split("=", 1)[1]
        rc, report, stderr = _smoke({**env, GYM_RAY_ADDRESS_ENV: address})
        assert rc == 0 and report["passed"], stderr[-3000:]
        assert holder.poll() is None  # the cluster is the holder's: Gym left it running
        rc, report, stderr = _smoke({**env, GYM_RAY_ADDRESS_ENV: address})
        assert rc == 0 and report["passed"], stderr[-3000:]
    finally:
        holder.send_signal(signal.SIGINT)
        _, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, err[-2000:]
    assert survivors(mark) == []


@pytest.mark.gym
def test_an_address_with_no_cluster_is_named_with_its_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1",
           GYM_RAY_ADDRESS_ENV: f"127.0.0.1:{port}"}
    rc, report, _ = _smoke(env)
    assert rc == 1 and report["stage"] == "start"
    (message,) = [d["message"] for d in report["diagnostics"] if d["severity"] == "error"]
    assert f"Ray cluster at 127.0.0.1:{port} (${GYM_RAY_ADDRESS_ENV})" in message
    assert "nothing answers there" in message and "python -m envkit.gym.ray_cluster" in message
