"""`envkit prefetch` on REAL Gym (nemo-gym 0.7.0, real uv): one offline build of a package's four
server venvs from wheels/, and what must reuse it.

- The build tells each step in order (Gym's venv, per server a create and uv's steps, then
  wheels/ into each), and uv's unpacked copies of the closure stay in envkit's cache root.
- A second prefetch is a no-op, an online bring-up of the same closure installs nothing, and the
  `envkit smoke --offline` that follows builds no venv (its progress says the venvs were found,
  and the tree's files are untouched).
- A new wheel in wheels/ is a new closure: a build of its own tree begins.

The package is the char_pattern toy built wheels-v1 with a requirements comment of its own: the
venv tree is keyed by what it holds, so this run's tree is new, not one another test built. One
build serves every check: it is the slow part (minutes here).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import jsonschema
import pytest
from support.paths import REPO_ROOT
from toy_envs import GYM_TREES
from wheelfactory import make_wheel

from envkit.gym import GymRuntime, PolicyEndpoint, RuntimeEvents, prefetch, prefetch_options
from envkit.gym.events import VenvStep
from envkit.output.prefetch import render_prefetch
from envkit.schemas import load_schema
from envkit.supply.cache import cache_root

pytestmark = [pytest.mark.gym, pytest.mark.network]

ENV = {"ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}  # this machine's 3.13 is older than 3.13.14


def _envkit(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, cwd=REPO_ROOT,
                          env={**os.environ, **ENV})


def _fresh_package(tmp_path: Path) -> Path:
    src = tmp_path / "gym"
    shutil.copytree(GYM_TREES, src)
    reqs = src / "resources_servers" / "char_pattern" / "requirements.txt"
    reqs.write_text(reqs.read_text() + f"\n# prefetch test {uuid.uuid4().hex}\n")
    proc = _envkit("build", str(src / "resources_servers" / "char_pattern"), "--format",
                   "wheels-v1", "--arch", "x86_64", "-o", str(tmp_path / "pkg"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp_path / "pkg"


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


def _prefetch(pkg: Path, *args: str) -> tuple[dict, str]:
    proc = _envkit("prefetch", str(pkg), "--offline", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    if "--output-format" not in args:
        return {}, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    jsonschema.validate(result, load_schema("prefetch"))
    return result, proc.stderr


def _stamps(venv_dir: Path) -> dict[str, int]:
    """The tree's ready marker and each venv's ``pyvenv.cfg`` and interpreter link, by mtime
    (a rebuild writes all of them anew; a start only adds bytecode)."""
    paths = [venv_dir / ".envkit-ready", *venv_dir.glob("*/*/.venv/pyvenv.cfg"),
             *venv_dir.glob("*/*/.venv/bin/python")]
    return {str(p): p.lstat().st_mtime_ns for p in paths}


def _assert_in_order(steps: list[VenvStep], servers: set[str]) -> None:
    """The Gym venv first, then per server a create and uv's steps, then wheels/ into each."""
    assert steps[0].venv == "gym"
    built = [s for s in steps[1:] if s.step != "wheels"]
    wheels = [s for s in steps[1:] if s.step == "wheels"]
    assert steps[1:] == built + wheels  # the second install after Gym's own
    assert {s.venv for s in built} == servers == {s.venv for s in wheels}
    for server in servers:
        own = [(s.step, s.state) for s in built if s.venv == server]
        assert own[:2] == [("create", "start"), ("create", "done")], own
        assert ("install", "done") in own, own
        starts = [step for step, state in own if state == "start"]
        dones = [step for step, state in own if state == "done"]
        assert starts == dones, own  # every step that began ended
        seconds = [s.seconds for s in built if s.venv == server]
        assert seconds == sorted(seconds)
        assert [(s.step, s.state) for s in wheels if s.venv == server] == [
            ("wheels", "start"), ("wheels", "done")]


def _entries() -> set[Path]:
    """The shared cache's venv trees, their locks and whatever a build stages beside them."""
    return set((cache_root() / "server-venvs").iterdir())


def _ready() -> set[Path]:
    return {p.parent for p in (cache_root() / "server-venvs").glob("*/.envkit-ready")}


def test_one_offline_build_is_told_in_order_and_reused_until_the_closure_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    pkg = _fresh_package(tmp_path)
    uv_default = tmp_path / "uv-default"  # where uv's own cache would be
    monkeypatch.setenv("UV_CACHE_DIR", str(uv_default))
    entries = _entries()
    options = prefetch_options(pkg, gym_version=None, offline=True, allow_python_override=True)
    built = _Steps()
    try:  # this run's own trees (~1.4 GB each) leave the shared cache with the test
        first = prefetch(pkg, options, built)
        assert render_prefetch(first, "json") == 0
        jsonschema.validate(json.loads(capsys.readouterr().out), load_schema("prefetch"))
        _reused_until_the_closure_changes(pkg, first, built.steps, uv_default)
    finally:
        for entry in _entries() - entries:
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _reused_until_the_closure_changes(pkg: Path, first, steps: list[VenvStep],
                                      uv_default: Path) -> None:
    venv_dir = Path(first.venv_dir)
    assert first.built and first.offline, first
    assert "resources_servers/char_pattern" in first.venvs and len(first.venvs) == 4
    _assert_in_order(steps, set(first.venvs))
    # uv's unpacked copies of the closure live in envkit's cache root, and go when it goes: in
    # uv's shared cache they outlived it (~1 GB per closure, keyed by the removed path)
    assert not uv_default.exists()
    assert list((cache_root() / "uv").glob("archive-v*/*/ray"))
    before = _stamps(venv_dir)
    assert len(before) == 9, before

    again, err = _prefetch(pkg, "--output-format", "json")
    assert not again["built"] and not again["gym_built"], again
    assert again["venv_dir"] == first.venv_dir and again["venvs"] == list(first.venvs)
    assert "building" not in err and f"server venvs: cached ({venv_dir.name})" in err
    _, human = _prefetch(pkg)
    assert "Nothing to do" in human

    proc = _envkit("smoke", str(pkg), "--offline", "--output-format", "json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["passed"], proc.stderr[-3000:]
    assert f"server venvs: cached ({venv_dir.name})" in proc.stderr
    assert "Gym venv: cached" in proc.stderr
    assert "building" not in proc.stderr, proc.stderr
    assert _stamps(venv_dir) == before

    online = _Steps()
    options = prefetch_options(pkg, gym_version=None, offline=False, allow_python_override=True)
    assert GymRuntime(pkg, ENDPOINT, options, online).prepare() == venv_dir
    assert [(s.venv, s.state) for s in online.steps] == [
        ("gym", "cached"), ("server venvs", "cached")]

    # a new wheel in wheels/ is a new closure: its own tree, built from the start
    ready = _ready()
    make_wheel(pkg / "wheels", "envkit-toy-extra", "1.0",
               files={"envkit_toy_extra/__init__.py": b""})
    with pytest.raises(_NewBuild):
        GymRuntime(pkg, ENDPOINT, options, _StopAtCreate()).prepare()
    assert _ready() == ready  # the new tree was begun, not finished
    assert _stamps(venv_dir) == before  # the old one is untouched
