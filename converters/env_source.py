"""Where the environment wheel comes from: a hub index, a wheel file, or a source tree.

``--source`` trees are built with pypa/build (isolated, uv as installer, the user's pip/uv
configuration off) so the wheel that is vendored is exactly the wheel that was loaded.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envkit.converters.sandbox import uv_env
from envkit.wheelfile import read_wheel

if TYPE_CHECKING:
    from envkit.wheelfile import WheelFile

__all__ = ["EnvWheel", "SourceError", "build_source", "local_wheel", "sha256_of",
           "verifiers_conflict"]


class SourceError(RuntimeError):
    """The environment wheel could not be built or read."""


@dataclass(frozen=True)
class EnvWheel:
    """A local environment wheel (``--wheel`` / ``--source``) and its metadata."""

    path: Path
    meta: WheelFile

    @property
    def requirement(self) -> str:
        return f"{self.meta.name}=={self.meta.version}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 16):
            digest.update(chunk)
    return digest.hexdigest()


def local_wheel(path: Path, dest: Path) -> EnvWheel:
    """Copy ``path`` into ``dest`` (a find-links dir of its own) and read its metadata.

    :raises SourceError: not a readable wheel.
    """
    meta = read_wheel(path, rel=path.name)
    if meta.error or meta.name is None:
        msg = f"{str(path)!r} is not a usable wheel: {meta.error or 'no name'}"
        raise SourceError(msg)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, dest / path.name)
    return EnvWheel(dest / path.name, meta)


def build_source(src: Path, dest: Path, *, timeout: float = 600) -> Path:
    """``python -m build --wheel --installer uv`` of ``src`` into ``dest``; the wheel's path.

    :raises SourceError: the build failed (its output's tail in the message).
    """
    if not (src / "pyproject.toml").is_file() and not (src / "setup.py").is_file():
        msg = f"--source {str(src)!r} has no pyproject.toml (or setup.py) to build"
        raise SourceError(msg)
    env = uv_env()
    env["PATH"] = os.pathsep.join([str(Path(_uv_path()).parent), env["PATH"]])
    cmd = [sys.executable, "-m", "build", "--wheel", "--installer", "uv", "--outdir", str(dest),
           str(src)]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        msg = f"building {str(src)!r} took longer than {timeout:g} s"
        raise SourceError(msg) from None
    wheels = sorted(dest.glob("*.whl"))
    if proc.returncode != 0 or len(wheels) != 1:
        tail = (proc.stdout + proc.stderr)[-2000:]
        msg = f"building a wheel from {str(src)!r} failed: {tail}"
        raise SourceError(msg)
    return wheels[0]


def _uv_path() -> str:
    from uv import find_uv_bin

    return find_uv_bin()


def verifiers_conflict(meta: WheelFile, verifiers_version: str) -> str | None:
    """Why the wheel's own ``verifiers`` requirement excludes the classic version, or None.

    An environment that needs verifiers >= 0.4 is written against the v1-only API (Taskset /
    Harness plugins, no ``load_environment(**kwargs)``) that Gym's ``verifiers_agent`` cannot run.
    """
    for line in meta.requires_dist:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != "verifiers" or (
            req.marker and "extra" in str(req.marker)
        ):
            continue
        if req.specifier and Version(verifiers_version) not in req.specifier:
            return f"it requires {line!r}, which excludes verifiers {verifiers_version}"
    return None
