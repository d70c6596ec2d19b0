"""`envkit prefetch` on REAL Gym (nemo-gym 0.7.0, uv): it builds every venv a bring-up needs
and starts nothing; a second call is a no-op; the `envkit smoke --offline` that follows builds
no venv (its progress says the venvs were found, and the tree's files are untouched).

The package is the char_pattern toy built wheels-v1 with a requirements comment of its own:
the venv tree is keyed by what it holds, so this run's tree is new, not one another test built.
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

from envkit.schemas import load_schema

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


def test_prefetch_then_offline_smoke_builds_no_venv(tmp_path: Path) -> None:
    pkg = _fresh_package(tmp_path)

    first, err = _prefetch(pkg, "--output-format", "json")
    venv_dir = Path(first["venv_dir"])
    try:  # this run's own tree (~1.4 GB) leaves the shared cache with the test
        _prefetch_is_kept_and_smoke_builds_nothing(pkg, first, err, venv_dir)
    finally:
        shutil.rmtree(venv_dir, ignore_errors=True)
        venv_dir.with_name(venv_dir.name + ".lock").unlink(missing_ok=True)


def _prefetch_is_kept_and_smoke_builds_nothing(pkg: Path, first: dict, err: str,
                                                venv_dir: Path) -> None:
    assert first["built"] and first["offline"], first
    assert "resources_servers/char_pattern" in first["venvs"] and len(first["venvs"]) == 4
    assert "building" in err  # each server venv, step by step, on stderr
    before = _stamps(venv_dir)
    assert len(before) == 9, before

    again, err = _prefetch(pkg, "--output-format", "json")
    assert not again["built"] and not again["gym_built"], again
    assert again["venv_dir"] == first["venv_dir"] and again["venvs"] == first["venvs"]
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
