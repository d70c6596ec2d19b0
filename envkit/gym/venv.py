"""A Python 3.13 venv with the real ``nemo-gym`` installed: the head process of a local Gym run.

nemo-gym declares ``Requires-Python >=3.13.14``. Where only an older 3.13 exists, uv can
install it anyway with ``--python-version 3.13.14`` and the servers run fine; as that is a lie
to the resolver, it is opt-in (``allow_python_override``), logged, and recorded in the marker.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.errors import UsageError
from envkit.gym.venvsteps import VenvStep
from envkit.model.gym_data import DEFAULT_GYM_VERSION
from envkit.supply.cache import cache_root
from envkit.supply.root import env_true
from envkit.supply.uvcmd import isolated_env, uv_bin

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_GYM_VERSION",
    "OVERRIDE_VERSION",
    "PYTHON_OVERRIDE_ENV",
    "GymVenv",
    "GymVenvError",
    "ensure_gym_venv",
    "find_python313",
    "python_override_from_env",
    "uv_pip_install",
]

PYTHON_OVERRIDE_ENV = "ENVKIT_ALLOW_PYTHON_OVERRIDE"
"""The variable behind every ``--allow-python-override``."""


def python_override_from_env() -> bool:
    """``$ENVKIT_ALLOW_PYTHON_OVERRIDE`` read as the commands' ``--allow-python-override`` reads
    it, for the entry points with no such flag of their own (``validate --smoke``/``--probe``,
    ``python -m envkit.gym.ray_cluster``'s default)."""
    return env_true(PYTHON_OVERRIDE_ENV)

log = logging.getLogger(__name__)

_MARKER = "envkit-gym-venv.json"
OVERRIDE_VERSION = "3.13.14"
"""What ``--allow-python-override`` tells uv the interpreter is: nemo-gym's floor."""


class GymVenvError(UsageError, RuntimeError):
    """The Gym venv could not be created (no 3.13 interpreter, install failure)."""


@dataclass(frozen=True, slots=True)
class GymVenv:
    root: Path
    gym_version: str
    python_version: str
    python_override: bool

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.root / "bin"


@functools.lru_cache(maxsize=16)
def _python_version(python: Path) -> str | None:
    """The interpreter's version, or None when it does not run (e.g. an unselected pyenv shim).

    Asked once per process: a smoke looks for the Gym venv twice, and a pyenv shim runs shell
    scripts before it answers.
    """
    try:
        out = subprocess.run(
            [str(python), "-c", "import platform; print(platform.python_version())"],
            capture_output=True, text=True, check=True, timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def _candidates() -> list[Path]:
    named = (os.environ.get("ENVKIT_GYM_PYTHON"), shutil.which("python3.13"))
    found = [Path(p) for p in named if p]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found += sorted((pyenv_root / "versions").glob("3.13*/bin/python3.13"), reverse=True)
    found += [Path("/usr/bin/python3.13"), Path("/usr/local/bin/python3.13")]
    return [p for p in found if p.exists()]


def find_python313(explicit: Path | None = None) -> Path:
    """Locate a CPython 3.13: ``explicit`` (``--gym-python``), ``$ENVKIT_GYM_PYTHON``, PATH, pyenv.

    :raises GymVenvError: when none is found.
    """
    for candidate in ([explicit] if explicit else _candidates()):
        version = _python_version(candidate) if candidate.exists() else None
        if version and version.startswith("3.13."):
            return candidate
    msg = (
        "no CPython 3.13 found (nemo-gym needs it); pass --gym-python PATH or set "
        "ENVKIT_GYM_PYTHON (e.g. `pyenv install 3.13`)"
    )
    raise GymVenvError(msg)


def ensure_gym_venv(
    gym_version: str = DEFAULT_GYM_VERSION,
    *,
    python: Path | None = None,
    allow_python_override: bool = False,
    cache_dir: Path | None = None,
    on_step: Callable[[VenvStep], None] | None = None,
) -> GymVenv:
    """Return a cached venv with ``nemo-gym==gym_version``; build it (atomically) if missing.

    ``on_step`` hears each step (``gym``: create, install) or one ``cached``.

    :raises GymVenvError: no 3.13 interpreter, or the install failed (uv's stderr included).
    """
    interpreter = find_python313(python)
    py_version = _python_version(interpreter) or "3.13"  # asked already: no second run
    override = _needs_override(py_version)
    if override and not allow_python_override:
        msg = (
            f"nemo-gym {gym_version} requires Python >=3.13.14 but {interpreter} is {py_version}; "
            "pass --allow-python-override to install it anyway (uv --python-version 3.13.14)"
        )
        raise GymVenvError(msg)
    root = (cache_dir or cache_root() / "gym-venvs") / f"nemo-gym-{gym_version}-py{py_version}"
    emit = on_step or (lambda step: None)
    if (root / _MARKER).exists():
        emit(VenvStep("gym", None, "cached", 0.0, f"nemo-gym {gym_version}"))
        return GymVenv(root, gym_version, py_version, override)
    if override:
        log.warning(
            "installing nemo-gym %s into Python %s with --python-version 3.13.14 "
            "(explicit override of its Requires-Python floor)", gym_version, py_version,
        )
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        _install(tmp, interpreter, gym_version, override, emit)
        (tmp / _MARKER).write_text(json.dumps(
            {"gym_version": gym_version, "python": py_version, "python_override": override}
        ))
        _relocate(tmp, root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return GymVenv(root, gym_version, py_version, override)


def _needs_override(py_version: str) -> bool:
    parts = tuple(int(p) for p in py_version.split(".")[:3] if p.isdigit())
    return parts < tuple(int(p) for p in OVERRIDE_VERSION.split("."))


def _install(venv: Path, interpreter: Path, gym_version: str, override: bool,
             emit: Callable[[VenvStep], None]) -> None:
    env = isolated_env()
    started = time.monotonic()
    emit(VenvStep("gym", "create", "start"))
    _run([uv_bin(), "venv", "--no-config", "--quiet", "--python", str(interpreter), str(venv)],
         env)
    emit(VenvStep("gym", "create", "done", time.monotonic() - started))
    want = f"nemo-gym=={gym_version}"
    emit(VenvStep("gym", "install", "start", time.monotonic() - started, want))
    _run([*uv_pip_install(venv / "bin" / "python", override=override), want], env)
    emit(VenvStep("gym", "install", "done", time.monotonic() - started, want))


def uv_pip_install(python: Path, *, override: bool) -> list[str]:
    """``uv pip install`` into ``python``'s venv, told the override version when ``override``."""
    cmd = [uv_bin(), "pip", "install", "--no-config", "--quiet", "--python", str(python)]
    return [*cmd, "--python-version", OVERRIDE_VERSION] if override else cmd


def _relocate(tmp: Path, root: Path) -> None:
    """Rename ``tmp`` to ``root`` (atomic), its absolute paths rewritten first: ``uv venv``
    writes them into ``bin/`` scripts and ``pyvenv.cfg``, and console scripts such as ``gym``
    would break."""
    old, new = str(tmp), str(root)
    for script in (tmp / "bin").iterdir():
        if script.is_file() and not script.is_symlink():
            data = script.read_bytes()
            if old.encode() in data[:4096]:
                script.write_bytes(data.replace(old.encode(), new.encode()))
    cfg = tmp / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace(old, new))
    try:
        tmp.rename(root)
    except OSError:  # another process won the race: keep theirs
        if not (root / _MARKER).exists():
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def _run(cmd: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=1800)
    if proc.returncode != 0:
        msg = f"`{' '.join(cmd[:4])} ...` failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        raise GymVenvError(msg)
