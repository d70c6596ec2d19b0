"""Gym's CLI as envkit starts it (``envkit/gym/gym_main.py``): only the head's waits between
polls are shorter, and its ``ray.init()`` of a new cluster starts no dashboard.

The fast tests read the launcher's own functions; the slow one runs it in the real Gym venv
(nemo-gym 0.7.0), where what it replaces must exist, or every bring-up would silently fall back
to Gym's 3 s cadence.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from envkit.gym import gym_main
from envkit.gym.install import GYM_MAIN, gym_command
from envkit.gym.venv import GymVenv, ensure_gym_venv


def test_only_waits_of_gyms_poll_length_or_less_are_shortened() -> None:
    slept: list[float] = []
    for seconds in (3, 2.9, 0.1, 0.0, 60, 3.5):
        gym_main.poll_sleep(seconds, slept.append)
    assert slept == [0.25, 0.25, 0.1, 0.0, 60, 3.5]


def test_without_gym_nothing_is_replaced() -> None:
    assert gym_main.install() is False  # envkit's own venv has no nemo_gym


def test_the_launcher_runs_with_its_folder_off_sys_path(tmp_path: Path) -> None:
    gym = GymVenv(tmp_path, "0.7.0", "3.13.0", python_override=False)
    cmd = gym_command(gym, "env", "start", "+x=1")
    assert cmd == [str(gym.python), "-P", str(GYM_MAIN), "env", "start", "+x=1"]
    assert (GYM_MAIN.parent / "types.py").is_file()  # why -P: it would shadow `types`


def test_only_a_head_that_starts_its_own_cluster_starts_it_early() -> None:
    start = ["env", "start", "+config_paths=[configs/a.yaml]", "++head_server.port=1"]
    assert gym_main.starts_own_ray(start)
    assert gym_main.starts_own_ray([*start, "++dry_run=false"])
    assert not gym_main.starts_own_ray([*start, "++ray_head_node_address=10.0.0.1:6379"])
    assert not gym_main.starts_own_ray([*start, "++dry_run=true"])
    assert not gym_main.starts_own_ray(["env", "prefetch", *start[2:]])
    assert not gym_main.starts_own_ray(["--version"])


def _holder(tmp_path: Path, body: str) -> Path:
    holder = tmp_path / "holder.py"
    holder.write_text(body)
    return holder


def test_the_heads_ray_init_connects_to_the_address_the_holder_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # what the holder's start sets, restored after
    early = gym_main.EarlyRay(_holder(tmp_path, "print('10.1.2.3:6379')\nimport sys\n"
                                                "sys.stdin.read()\n"))
    assert early.connect(lambda **kwargs: kwargs, ignore_reinit_error=True) == {
        "address": "10.1.2.3:6379", "ignore_reinit_error": True}
    early._process.stdin.close()  # as the head's end would: the holder stops
    assert early._process.wait(timeout=30) == 0
    early._process.stdout.close()


def test_a_cluster_that_never_came_up_fails_the_heads_ray_init(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The holder exited before its one line: the head's ``ray.init()`` says so instead of
    waiting or connecting to nothing."""
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    early = gym_main.EarlyRay(_holder(tmp_path, "raise SystemExit(3)\n"))
    with pytest.raises(RuntimeError, match=r"exited \(3\) before it was up"):
        early.connect(lambda **kwargs: pytest.fail(f"connected with {kwargs}"))


@pytest.mark.gym
@pytest.mark.own_ray  # a new cluster: the wrapped ray.init takes effect there
def test_in_the_real_gym_the_polls_and_rays_start_are_replaced(tmp_path: Path) -> None:
    gym = ensure_gym_venv(allow_python_override=True)
    check = (
        "import runpy, time\n"
        f"ns = runpy.run_path({str(GYM_MAIN)!r})\n"
        "assert ns['install'](), 'nothing replaced'\n"
        "from nemo_gym.cli import env\n"
        "assert env.sleep is ns['poll_sleep'] and env.sleep is not time.sleep\n"
        "from nemo_gym import server_utils\n"
        "assert getattr(server_utils._get_ray().init, 'envkit', False)\n"
    )
    proc = subprocess.run([str(gym.python), "-P", "-c", check], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    version = subprocess.run(gym_command(gym, "--version"), capture_output=True, text=True,
                             timeout=300, check=False, cwd=tmp_path)  # Hydra writes outputs/
    assert version.returncode == 0, version.stderr[-2000:]
    assert "0.7.0" in version.stdout + version.stderr
