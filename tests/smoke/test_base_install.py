"""``envkit smoke`` on the base install (``pip install nemo-envkit``, no extras), as docs/ci.md
tells a CI job to install it: the spin-up gate must not need psutil, torch or Ray.

Slow: a real bring-up. The venv with the base dependencies is cached under
``~/.cache/envkit/test-venvs/`` keyed by the project's dependency pins (and this Python), so a
rerun only reinstalls envkit's own wheel, built from this checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.paths import REPO_ROOT
from toy_envs import make_native_package

from envkit.gym import ensure_gym_venv
from envkit.supply.uvcmd import uv_bin

pytestmark = [pytest.mark.gym, pytest.mark.network, pytest.mark.own_ray]  # a new user's smoke

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "envkit" / "test-venvs"


def _pins() -> list[str]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    return sorted(project["dependencies"])


def _base_venv() -> Path:
    """The cached venv holding the base dependencies only (built once per set of pins)."""
    key = hashlib.sha256(json.dumps([_pins(), sys.version]).encode()).hexdigest()[:16]
    venv = CACHE / f"base-{key}"
    if (venv / "bin" / "python").exists():
        return venv
    uv = uv_bin()
    tmp = CACHE / f".base-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([uv, "venv", "--no-config", "-q", "--python", sys.executable, str(tmp)],
                   check=True, timeout=300)
    subprocess.run([uv, "pip", "install", "--no-config", "-q", "--python",
                    str(tmp / "bin" / "python"), *_pins()], check=True, timeout=900)
    try:
        tmp.rename(venv)
    except OSError:  # another run finished first: use its venv
        shutil.rmtree(tmp, ignore_errors=True)
    return venv


def _clean_copy(dest: Path) -> Path:
    """The checkout's files (tracked, and untracked ones git does not ignore) under ``dest``.

    Why a copy: setuptools builds in the source tree, and a ``build/lib`` left there by an
    earlier build still holds modules since deleted, which would end up in the wheel.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO_ROOT, check=True,
                            capture_output=True, timeout=60).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = REPO_ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="module")
def base_envkit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``envkit`` from this checkout's wheel, installed with ``--no-deps`` over the base deps."""
    out = tmp_path_factory.mktemp("dist")
    src = _clean_copy(tmp_path_factory.mktemp("src"))
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                    str(out), str(src)], check=True, capture_output=True, timeout=600)
    (wheel,) = out.glob("nemo_envkit-*.whl")
    venv = _base_venv()
    subprocess.run([uv_bin(), "pip", "install", "--no-config", "-q", "--no-deps",
                    "--reinstall", "--python", str(venv / "bin" / "python"), str(wheel)],
                   check=True, timeout=300)
    return venv


def test_the_base_install_has_no_extras(base_envkit: Path) -> None:
    probe = ("import importlib.util as u, json; print(json.dumps("
             "{m: u.find_spec(m) is not None for m in ('psutil', 'torch', 'ray', 'envkit')}))")
    out = subprocess.run([str(base_envkit / "bin" / "python"), "-c", probe], check=True,
                         capture_output=True, text=True, timeout=60)
    assert json.loads(out.stdout) == {"psutil": False, "torch": False, "ray": False,
                                      "envkit": True}


def test_smoke_passes_on_the_base_install(base_envkit: Path, tmp_path: Path) -> None:
    ensure_gym_venv(allow_python_override=True)  # the shared Gym venv (cached)
    pkg = make_native_package(tmp_path / "char-pattern")
    env = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([str(base_envkit / "bin" / "envkit"), "smoke", str(pkg), "--format",
                           "json"], capture_output=True, text=True, timeout=1500, check=False,
                          cwd=tmp_path, env=env)
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["passed"] and report["stage"] == "done"
