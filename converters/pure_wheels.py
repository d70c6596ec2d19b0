"""Wheels for the few pure-Python projects in Gym's closure that PyPI ships only as sdists.

nemo-gym 0.7.0 needs ``hydra-core`` 1.x (0.11 imports ``pkg_resources``, which a 3.13 venv
does not have), and hydra 1.x / omegaconf 2.x pin ``antlr4-python3-runtime==4.9.*``: 4.9.3 is
sdist-only on PyPI. envkit resolves target closures ``--only-binary :all:`` (nothing is built on
the cluster), so without a wheel the resolver silently falls back to hydra-core 0.11.3 and
every Gym server of the package dies on start. Building that sdist once, here, gives a
``py3-none-any`` wheel valid for every target; it is offered to the resolver as a find-links
folder and vendored like any other wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["SDIST_ONLY", "PureWheelError", "build_pure_wheels"]

SDIST_ONLY = ("antlr4-python3-runtime==4.9.3",)
"""Pure-Python sdist-only projects Gym's runtime closure needs (see the module docstring)."""


class PureWheelError(RuntimeError):
    """A wheel could not be built (no network, no pip, or the result is not pure Python)."""


def _pip_env() -> dict[str, str]:
    """No pip configuration of this machine: index, constraints and find-links come from it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def _expected_prefix(spec: str) -> str:
    name, version = spec.split("==")
    return f"{name.replace('-', '_')}-{version}-"


def build_pure_wheels(dest: Path, specs: tuple[str, ...] = SDIST_ONLY) -> Path:
    """Build each ``name==version`` into ``dest`` once (``pip wheel --no-deps``); returns ``dest``.

    :raises PureWheelError: pip failed or built a platform-specific wheel.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        prefix = _expected_prefix(spec)
        if any(dest.glob(f"{prefix}py3-none-any.whl")):
            continue
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--quiet",
               "--disable-pip-version-check", "-w", str(dest), spec]
        proc = subprocess.run(cmd, env=_pip_env(), capture_output=True, text=True,
                              timeout=600, check=False)
        if proc.returncode != 0:
            msg = f"building a wheel for {spec} failed: {proc.stderr.strip()[-800:]}"
            raise PureWheelError(msg)
        built = [p for p in dest.glob(f"{prefix}*.whl") if not p.name.endswith("-none-any.whl")]
        if built or not any(dest.glob(f"{prefix}*.whl")):
            msg = f"{spec} did not build into a pure-Python wheel ({[p.name for p in built]})"
            raise PureWheelError(msg)
    return dest
