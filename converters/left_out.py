"""A module the environment imports that its own build leaves out of its wheel.

A load that fails with ``No module named 'x'`` is usually an undeclared dependency, but just as
often ``x`` is a file of the environment itself that the build config does not list (a
``py-modules``/``packages`` list naming only the main module, a hatch ``include`` of one
file): then the source tree has it and the wheel does not, and the way out is the build
config, not Requires-Dist. With ``--source`` envkit can see both.
"""

from __future__ import annotations

import tomllib
import zipfile
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["build_settings", "in_wheel", "left_out"]

_SETTINGS = {
    "setuptools": "[tool.setuptools] packages / py-modules (or [tool.setuptools.packages.find])",
    "hatchling": "[tool.hatch.build.targets.wheel] packages / include",
    "flit_core": "the module flit builds (the project's name, [tool.flit.module] name)",
    "poetry": "[tool.poetry] packages",
    "pdm": "[tool.pdm.build] includes",
    "uv_build": "[tool.uv.build-backend] module-name",
    "maturin": "[tool.maturin] python-packages",
}
"""Where each build backend is told which modules go into the wheel."""


def in_wheel(wheel: Path, dotted: str) -> bool:
    """Does ``wheel`` hold module or package ``dotted`` (a file, a package, a namespace dir)?"""
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
    path = dotted.replace(".", "/")
    return any(n == f"{path}.py" or n.startswith(f"{path}/")
               or (n.startswith(f"{path}.") and n.endswith((".so", ".pyd"))) for n in names)


def left_out(src: Path, wheel: Path, dotted: str) -> str | None:
    """The source file (``helpers.py``, ``src/env/sub/``) of module ``dotted`` when the source
    tree ``src`` has it and ``wheel`` does not; else None."""
    if not dotted or in_wheel(wheel, dotted):
        return None
    path = dotted.replace(".", "/")
    for root in ("", "src/"):
        for rel in (f"{path}.py", f"{path}/__init__.py", f"{path}/"):
            found = src / (root + rel)
            if found.is_file() or (rel.endswith("/") and any(found.glob("*.py"))):
                return root + rel
    return None


def build_settings(src: Path) -> str:
    """Where ``src``'s build backend is told what goes into the wheel, for a hint."""
    if not (src / "pyproject.toml").is_file():
        return "packages / py_modules in setup.py"
    try:
        data = tomllib.loads((src / "pyproject.toml").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        data = {}
    system = data.get("build-system")
    backend = str((system if isinstance(system, dict) else {}).get("build-backend")
                  or "setuptools.build_meta:__legacy__")  # pip's and uv's default
    where = next((w for name, w in _SETTINGS.items() if backend.startswith(name)),
                 f"the include settings of build backend {backend!r}")
    return f"{where} in pyproject.toml"
