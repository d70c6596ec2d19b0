"""uv command lines, built in one place, and the runner that executes them.

uv never sees the user's configuration (``--no-config``, ``clean_env``), never downloads an
interpreter, and takes its indexes, find-links and cache from one ``UvSources``. Commands are
plain argv lists run through a ``Runner``, so tests record them instead of running uv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from envkit.model.target import Target

__all__ = ["DEFAULT_INDEX_URL", "INPUT_NAME", "CompletedRun", "Runner", "UvSources",
           "build_command", "clean_env", "compile_command", "isolated_env", "python_platform",
           "run_subprocess", "uv_bin", "uv_command", "uv_version"]

DEFAULT_INDEX_URL = "https://pypi.org/simple"
INPUT_NAME = "requirements.in"
"""The file ``compile_command`` resolves, in the runner's working directory."""
_KEEP_ENV = (
    "PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy",
)
"""Only what locating binaries, TLS and proxies need; never ``UV_*``/``PIP_*`` user settings."""
_NO_CONFIG = {"PIP_CONFIG_FILE": os.devnull, "UV_NO_CONFIG": "1"}


@dataclass(frozen=True, slots=True)
class CompletedRun:
    returncode: int
    stdout: str
    stderr: str


class Runner(Protocol):
    """Runs one command; tests pass a recorder instead of running uv."""

    def __call__(self, cmd: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> CompletedRun:
        ...


def run_subprocess(cmd: Sequence[str], *, env: Mapping[str, str], cwd: Path) -> CompletedRun:
    """The real runner: capture output, never raise on a non-zero exit."""
    proc = subprocess.run(
        list(cmd), env=dict(env), cwd=cwd, capture_output=True, text=True, check=False
    )
    return CompletedRun(proc.returncode, proc.stdout, proc.stderr)


def clean_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A subprocess environment free of the user's pip/uv configuration.

    An allowlist (stricter than :func:`isolated_env`): the resolver must not see anything that
    can change a resolution, only what PATH, TLS and proxies need."""
    env = os.environ if environ is None else environ
    kept = {k: env[k] for k in _KEEP_ENV if k in env}
    kept.setdefault("PATH", os.defpath)
    return {**kept, **_NO_CONFIG}


def isolated_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without pip/uv configuration, pointing pip at no config file.

    Users' ``pip.conf``, ``uv.toml`` and ``PIP_*``/``UV_*`` variables add indexes, constraints
    and find-links; an install that silently depends on them is not reproducible elsewhere.
    ``UV_CACHE_DIR`` is kept: the cache location changes no result, only speed.
    """
    env = os.environ if base is None else base
    kept = {k: v for k, v in env.items()
            if not k.startswith(("PIP_", "UV_")) or k == "UV_CACHE_DIR"}
    return {**kept, **_NO_CONFIG, "PYTHONNOUSERSITE": "1"}


def uv_version() -> str:
    """Version of the ``uv`` distribution envkit runs (part of the resolution cache key)."""
    try:
        return version("uv")
    except PackageNotFoundError:
        return "unknown"


def uv_bin() -> str:
    """The uv executable shipped with the ``uv`` wheel envkit depends on (else PATH's)."""
    try:
        from uv import find_uv_bin
    except ImportError:
        return shutil.which("uv") or "uv"
    return find_uv_bin()


def python_platform(target: Target) -> str:
    """uv's ``--python-platform`` value, e.g. ``aarch64-manylinux_2_28``."""
    major, minor = target.glibc_floor
    return f"{target.arch}-manylinux_{major}_{minor}"


@dataclass(frozen=True, slots=True)
class UvSources:
    """Where uv may find distributions: indexes, find-links folders and uv's own cache."""

    index_url: str | None = None
    extra_index_urls: Sequence[str] = ()
    find_links: Sequence[Path] = ()
    cache_dir: Path | None = None
    offline: bool = False
    """Resolve from uv's cache and ``find_links`` only."""


def uv_command(uv: str, args: Sequence[str], sources: UvSources) -> list[str]:
    """argv ``uv <args>`` isolated from the user's configuration, reading from ``sources``."""
    cmd = [
        uv, *args, "--no-config", "--system-certs", "--no-python-downloads",
        # Any interpreter will do (it only reads or builds an sdist-only project); naming one
        # skips uv's search of PATH, which costs seconds behind pyenv shims.
        "--python", sys.executable,
        "--index-url", sources.index_url or DEFAULT_INDEX_URL,
    ]
    for url in sources.extra_index_urls:
        cmd += ["--extra-index-url", url]
    for link in sources.find_links:
        cmd += ["--find-links", str(Path(link).resolve())]
    if sources.cache_dir is not None:
        cmd += ["--cache-dir", str(sources.cache_dir)]
    if sources.offline:
        cmd.append("--offline")
    return cmd


def compile_command(uv: str, target: Target, sources: UvSources, *, output_format: str,
                    python_version: str | None = None,
                    extra_args: Sequence[str] = ()) -> list[str]:
    """argv for ``uv pip compile`` of ``requirements.in`` for ``target`` (never the host).

    ``extra_args`` (e.g. ``--constraints FILE``, ``--exclude-newer DATE``) go to uv as given."""
    args = [
        "pip", "compile", INPUT_NAME, "--no-header",
        "--python-platform", python_platform(target),
        "--python-version", python_version or f"{target.python[0]}.{target.python[1]}",
        "--format", output_format,
    ]
    return [*uv_command(uv, args, sources), *extra_args]


def build_command(uv: str, sdist: Path, out_dir: Path, sources: UvSources) -> list[str]:
    """argv for an isolated ``uv build --wheel`` of one sdist (build deps from ``sources``)."""
    return uv_command(uv, ["build", "--wheel", str(sdist), "--out-dir", str(out_dir)], sources)
