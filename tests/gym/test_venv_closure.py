"""The server venvs of a REAL package (nemo-gym 0.7.0, real uv, the char_pattern tree built as
wheels-v1 with its runtime pins vendored): an ``--offline`` build from wheels/ tells each step in
order, an online run of the same closure reuses that tree (no install at all), and a changed
closure starts a new build. Slow: one offline build of four server venvs (~2-5 min here)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from toy_envs import GYM_TREES
from wheelfactory import make_wheel

from envkit.gym import GymRuntime, PolicyEndpoint, RuntimeEvents, RuntimeOptions
from envkit.gym.events import VenvStep

pytestmark = [pytest.mark.gym, pytest.mark.network]

ENDPOINT = PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m")  # prepare() starts no server


class _Steps(RuntimeEvents):
    def __init__(self) -> None:
        self.steps: list[VenvStep] = []

    def on_venv(self, step: VenvStep) -> None:
        self.steps.append(step)


class _NewBuild(Exception):
    pass


class _StopAtCreate(RuntimeEvents):
    """Ends the start at the first venv it would create: a build began, nothing was reused."""

    def on_venv(self, step: VenvStep) -> None:
        if step.venv != "gym" and step.step == "create":
            raise _NewBuild(step.venv)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("built") / "pkg"
    proc = subprocess.run(
        [sys.executable, "-m", "envkit", "build", str(GYM_TREES / "resources_servers/char_pattern"),
         "--format", "wheels-v1", "--arch", "x86_64", "-o", str(dest)],
        capture_output=True, text=True, timeout=1800, check=False, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dest


def _assert_in_order(steps: list[VenvStep], servers: set[str]) -> None:
    """The Gym venv first, then per server a create and uv's steps, then wheels/ into each."""
    assert steps[0].venv == "gym"
    prefetch = [s for s in steps[1:] if s.step != "wheels"]
    wheels = [s for s in steps[1:] if s.step == "wheels"]
    assert steps[1:] == prefetch + wheels  # the second install after Gym's own
    assert {s.venv for s in prefetch} == servers == {s.venv for s in wheels}
    for server in servers:
        own = [(s.step, s.state) for s in prefetch if s.venv == server]
        assert own[:2] == [("create", "start"), ("create", "done")], own
        assert ("install", "done") in own, own
        starts = [step for step, state in own if state == "start"]
        dones = [step for step, state in own if state == "done"]
        assert starts == dones, own  # every step that began ended
        seconds = [s.seconds for s in prefetch if s.venv == server]
        assert seconds == sorted(seconds)
        assert [(s.step, s.state) for s in wheels if s.venv == server] == [
            ("wheels", "start"), ("wheels", "done")]


def test_an_offline_build_is_reused_online_and_a_new_closure_builds_anew(
        package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "uv-default"  # where uv's own cache would be
    monkeypatch.setenv("UV_CACHE_DIR", str(shared))
    options = RuntimeOptions(allow_python_override=True, offline=True,
                             cache_dir=tmp_path / "cache", startup_timeout_s=1800)
    built = _Steps()
    venvs = GymRuntime(package, ENDPOINT, options, built).prepare()
    servers = {p.parent.relative_to(venvs).as_posix() for p in venvs.glob("*/*/.venv")}
    assert len(servers) == 4
    _assert_in_order(built.steps, servers)
    # uv's unpacked copies of the closure live in the cache root, and go when it goes: in
    # uv's shared cache they outlived it (~1 GB per closure, keyed by the removed path)
    assert not shared.exists()
    assert list((tmp_path / "cache/uv").glob("archive-v*/*/ray"))

    online = _Steps()
    again = GymRuntime(package, ENDPOINT, replace(options, offline=False), online).prepare()
    assert again == venvs
    assert [(s.venv, s.state) for s in online.steps] == [
        ("gym", "cached"), ("server venvs", "cached")]

    # a new wheel in wheels/ is a new closure: its own tree, built from the start
    make_wheel(package / "wheels", "envkit-toy-extra", "1.0",
               files={"envkit_toy_extra/__init__.py": b""})
    with pytest.raises(_NewBuild):
        GymRuntime(package, ENDPOINT, replace(options, offline=False), _StopAtCreate()).prepare()
    ready = [p.parent for p in (tmp_path / "cache/server-venvs").glob("*/.envkit-ready")]
    assert ready == [venvs]  # the new tree was begun, not finished; the old one is untouched
