"""Where the environment wheel comes from: a hub index, a wheel file, or a source tree.

``--source`` trees are built with ``uv build`` so the wheel that is vendored is the wheel that
was loaded, with a fixed ``SOURCE_DATE_EPOCH`` so the same source gives the same wheel, byte
for byte (else each conversion of an unchanged environment gave a new lock, provenance and
set of server venvs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.converters.sandbox import uv_env
from envkit.errors import FailedError
from envkit.model.wheelfile import read_wheel
from envkit.supply.uvcmd import uv_bin

if TYPE_CHECKING:
    from envkit.model.wheelfile import WheelFile

__all__ = ["EnvWheel", "SourceError", "build_source", "builder_error", "local_wheel"]

ZIP_EPOCH = "315532800"
"""1980-01-01T00:00:00Z, the earliest time a zip entry can hold."""


class SourceError(FailedError, RuntimeError):
    """The environment wheel could not be built or read."""


@dataclass(frozen=True, slots=True)
class EnvWheel:
    """The environment wheel, local before anything else is resolved, and its metadata."""

    path: Path
    meta: WheelFile
    index: str | None = None
    """The hub index it was downloaded from (None for ``--wheel`` / ``--source``)."""
    url: str | None = None

    @property
    def name(self) -> str:
        return str(self.meta.name)  # local_wheel refuses a wheel without one

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.meta.version}"


def local_wheel(path: Path, dest: Path, *, index: str | None = None,
                url: str | None = None) -> EnvWheel:
    """Copy ``path`` into ``dest`` (a find-links dir of its own) and read its metadata.

    :raises SourceError: not a readable wheel.
    """
    meta = read_wheel(path, rel=path.name)
    if meta.error or meta.name is None:
        msg = f"{str(path)!r} is not a usable wheel: {meta.error or 'no name'}"
        raise SourceError(msg)
    dest.mkdir(parents=True, exist_ok=True)
    if path.resolve() != (dest / path.name).resolve():
        shutil.copy2(path, dest / path.name)
    return EnvWheel(dest / path.name, meta, index, url)


def build_source(src: Path, dest: Path, *, timeout: float = 600) -> Path:
    """``uv build --wheel`` of ``src`` into ``dest``; the wheel's path.

    :raises SourceError: the build failed; the message carries the builder's own error text.
    """
    if not (src / "pyproject.toml").is_file() and not (src / "setup.py").is_file():
        msg = f"--source {str(src)!r} has no pyproject.toml (or setup.py) to build"
        raise SourceError(msg)
    cmd = [uv_bin(), "build", "--wheel", "--no-config", "--system-certs",
           "--no-python-downloads", "--python", sys.executable, "--out-dir", str(dest), str(src)]
    env = uv_env()
    env["SOURCE_DATE_EPOCH"] = os.environ.get("SOURCE_DATE_EPOCH") or ZIP_EPOCH
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        msg = f"building {str(src)!r} took longer than {timeout:g} s"
        raise SourceError(msg) from None
    wheels = sorted(dest.glob("*.whl")) if dest.is_dir() else []
    if proc.returncode != 0 or len(wheels) != 1:
        msg = f"building a wheel from {str(src)!r} failed: {builder_error(proc.stderr)}"
        raise SourceError(msg)
    return wheels[0]


def builder_error(output: str, limit: int = 1500) -> str:
    """The builder's own words: uv's progress lines and Python traceback frames dropped, so a
    ``setup.py`` that exits with a sentence ("renamed to 'hud'") keeps that sentence."""
    kept: list[str] = []
    frame = False
    for line in output.splitlines():
        stripped = line.strip()
        if frame and line.startswith("    "):  # the source line under a frame
            continue
        frame = stripped.startswith("File \"")
        if not stripped or frame or stripped.startswith(_NOISE):
            continue
        kept.append(line.rstrip())
    text = "\n".join(kept)
    return text[-limit:] if len(text) > limit else text or "no wheel was produced"


_NOISE = ("Building ", "Resolved ", "Installed ", "Prepared ", "Downloading ", "Downloaded ",
          "Traceback (most recent call last)", "^", "~", "[Previous line repeated", "hint: ")
