"""The real NeMo Platform services, installed once per machine for the tests that talk to them.

The platform's code (job model, GRPO compiler, reference validator, services) ships in the
``nemo-platform`` wheel on PyPI and needs CPython 3.12-3.13; the tests install it into a venv
made from pyenv's 3.13, cached under ``~/.cache`` and keyed by its pins, so CI builds it once
and a later run reuses it. The machine's pip config (local indexes, a constraints file) is
switched off: the venv must resolve the same way on a fresh machine.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["PLATFORM_PINS", "ensure_platform_venv", "platform_python"]

PLATFORM_PINS = (
    "nemo-platform[core-service,rl-service,nemo-rl-plugin,nemo-customizer-plugin]==0.6.0",
    "pyleak",
)
_PYTHON_MINOR = "3.13"


def _key() -> str:
    return hashlib.sha256("\n".join((_PYTHON_MINOR, *PLATFORM_PINS)).encode()).hexdigest()[:12]


def _venv_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return root / "envkit-tests" / f"nemo-platform-{_key()}"


def _base_python() -> str:
    """pyenv's newest CPython 3.13 (the platform wheel needs 3.12-3.13; envkit runs on 3.11)."""
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True)
    versions = sorted(Path(root.stdout.strip(), "versions").glob(f"{_PYTHON_MINOR}.*"))
    if not versions:
        msg = f"no CPython {_PYTHON_MINOR} under pyenv: `pyenv install {_PYTHON_MINOR}`"
        raise RuntimeError(msg)
    return str(versions[-1] / "bin" / "python")


def platform_python() -> Path:
    return _venv_dir() / "bin" / "python"


def ensure_platform_venv() -> Path:
    """Build (once, under a file lock) and return the venv's python. ~3 min, ~900 MB cold."""
    venv = _venv_dir()
    venv.parent.mkdir(parents=True, exist_ok=True)
    with (venv.parent / f"{venv.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / ".complete").exists():
            return platform_python()
        shutil.rmtree(venv, ignore_errors=True)
        env = {**os.environ, "PIP_CONFIG_FILE": "/dev/null"}
        subprocess.run([_base_python(), "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True, env=env)
        subprocess.run([*pip, *PLATFORM_PINS], check=True, env=env)
        (venv / ".complete").write_text("\n".join(PLATFORM_PINS) + "\n")
    return platform_python()


if __name__ == "__main__":
    print(ensure_platform_venv())
