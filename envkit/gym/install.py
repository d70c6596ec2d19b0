"""How Gym's installs are set up: the venv cache key, the environment, ``uv.toml``, wheels/.

What the platform does, and envkit repeats locally (the "rl (DPO / GRPO) gotchas" of the
platform's training notes):
1. Gym builds one venv per server: ``uv venv --python <3.13>``, then the server's requirements plus
   ``nemo-gym==<image version>``, ``ray[default]`` and ``openai`` at the parent's pins, with an
   index still enabled and ``wheels/`` only a ``UV_FIND_LINKS`` candidate pool.
2. For the wheels formats, a second, offline install of ``wheels/`` (``--no-index``).

``--offline`` makes step 1 index-free too (``no-index`` in envkit's uv.toml, see below), so
what ``wheels/`` lacks fails here, not on the cluster. Venvs are cached under
``cache_root()/server-venvs/<key>``, the key hashing the package's content, the Gym version, the
interpreter and the install mode, so a second run of the same package skips every install.

A 3.13 interpreter older than nemo-gym's ``Requires-Python`` floor needs an explicit override;
uv has no environment variable for ``--python-version``, so envkit hands Gym's uv calls a
generated ``uv.toml`` (``UV_CONFIG_FILE``) with ``[pip] python-version``: opt-in and logged.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from envkit.gym.diagnose import Where, diagnose, tail
from envkit.gym.types import GymRuntimeError, PolicyEndpoint
from envkit.gym.venv import GymVenv, uv_binary
from envkit.supply.isolation import isolated_env
from envkit.validators.wheels import EK403

__all__ = [
    "OUTER_RAY_ENV",
    "READY_MARKER",
    "WHEEL_FORMATS",
    "RunPaths",
    "gym_args",
    "gym_env",
    "offline_install",
    "package_key",
    "write_uv_toml",
]

log = logging.getLogger(__name__)

READY_MARKER = ".envkit-ready"
# What a Ray worker process inherits from its cluster; Gym's `ray.init()` must not see it.
OUTER_RAY_ENV = (
    "RAY_ADDRESS", "RAY_NAMESPACE", "RAY_JOB_ID", "RAY_RAYLET_PID", "RAY_LD_PRELOAD_ON_WORKERS",
)
WHEEL_FORMATS = ("wheels-v1", "adapter-wheels-v1")
_OVERRIDE_VERSION = "3.13.14"


@dataclass(frozen=True)
class RunPaths:
    """One run's scratch space: the package copy, logs, results, and Gym's Ray session dir."""

    run_dir: Path
    ray_tmp: Path

    @property
    def work(self) -> Path:
        return self.run_dir / "pkg"


def package_key(package: Path, *parts: str) -> str:
    """sha256 over the package's files (paths + bytes) and ``parts``; 16 hex chars."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    files = (p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in sorted(files):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def gym_env(gym: GymVenv, paths: RunPaths, fmt: str, uv_toml: Path) -> dict[str, str]:
    """The environment of every ``gym`` call: envkit's uv first, no outer Ray, wheels/ found."""
    env = isolated_env()
    env.pop("UV_NO_CONFIG", None)  # Gym's uv calls read envkit's own uv.toml, nothing else
    env["UV_CONFIG_FILE"] = str(uv_toml)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    # Gym shells out to a bare `uv`; envkit's uv goes first, and the 3.13 venv lets uv find
    # the interpreter Gym asks for by version.
    uv_dir = str(Path(uv_binary()).parent)
    base_python = Path(os.path.realpath(gym.python)).parent  # uv skips venvs on PATH
    env["PATH"] = os.pathsep.join([uv_dir, str(base_python), str(gym.bin), env.get("PATH", "")])
    env.pop("VIRTUAL_ENV", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    for key in OUTER_RAY_ENV:  # inside a Ray actor (--ray): Gym's Ray is a separate one
        env.pop(key, None)
    env["RAY_TMPDIR"] = str(paths.ray_tmp)  # Gym's Ray: own session dir, removed on close
    wheels = paths.work / "wheels"
    if fmt in WHEEL_FORMATS and wheels.is_dir():
        env["UV_FIND_LINKS"] = str(wheels)  # as the platform passes wheels/ to Gym
    return env


def write_uv_toml(gym: GymVenv, run_dir: Path, *, offline: bool) -> Path:
    """envkit's uv.toml for Gym's uv calls: the opt-in Python override and ``--offline``."""
    path = run_dir / "uv.toml"
    lines = ["[pip]"]
    if gym.python_override:
        log.warning("server venvs: installing with --python-version %s on Python %s "
                    "(--allow-python-override)", _OVERRIDE_VERSION, gym.python_version)
        lines.append(f'python-version = "{_OVERRIDE_VERSION}"')
    if offline:
        lines.append("no-index = true")  # uv has no env var for it; UV_OFFLINE would
        # silently install from uv's cache instead of failing on what wheels/ lacks
    path.write_text("\n".join(lines) + "\n")
    return path


def gym_args(config_paths: list[str], policy: PolicyEndpoint, venv_dir: Path, run_dir: Path,
             head_port: int) -> list[str]:
    """Gym's Hydra overrides: the package's configs, the policy, envkit's venv tree and dirs."""
    uv_cache = os.environ.get("UV_CACHE_DIR") or str(Path.home() / ".cache" / "uv")
    return [
        f"+config_paths=[{','.join(config_paths)}]",
        f"++policy_base_url={policy.base_url}",
        f"++policy_api_key={policy.api_key}",
        f"++policy_model_name={policy.model_name}",
        f"++uv_venv_dir={venv_dir}",
        "++skip_venv_if_present=true",
        f"++uv_cache_dir={uv_cache}",
        f"++results_dir={run_dir / 'results'}",
        f"++cache_dir={run_dir / 'cache'}",
        f"++nemo_gym_log_dir={run_dir / 'logs'}",
        f"++head_server.port={head_port}",
    ]


def offline_install(wheels: Path, venv_dir: Path, env: dict[str, str]) -> None:
    """The platform's second install: ``wheels/`` with ``--no-index`` into every server venv.

    :raises GymRuntimeError: uv refused (the likely code from its stderr, else that of a
        requirement ``wheels/`` does not satisfy).
    """
    files = sorted(str(w) for w in wheels.glob("*.whl"))
    if not files:
        return
    for python in sorted(venv_dir.glob("*/*/.venv/bin/python")):
        cmd = [uv_binary(), "pip", "install", "--no-config", "--quiet", "--python", str(python),
               "--no-index", "--find-links", str(wheels), *files]
        if "python-version" in Path(env["UV_CONFIG_FILE"]).read_text():
            cmd[4:4] = ["--python-version", _OVERRIDE_VERSION]
        out = subprocess.run(cmd, capture_output=True, text=True, env=isolated_env(),
                             check=False, timeout=1800)
        if out.returncode != 0:
            found = diagnose(out.stderr, Where.INSTALL)
            server = python.parents[2].relative_to(venv_dir)
            msg = f"offline install of wheels/ into {server} failed: {found.reason}"
            raise GymRuntimeError(msg, code=found.code or EK403.code, log_tail=tail(out.stderr),
                                  reason=found.reason, evidence=found.evidence)
