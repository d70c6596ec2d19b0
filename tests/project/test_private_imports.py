"""No module reaches into another package's private names: ``from envkit.validators._base
import X`` or ``from envkit.gym.servers import _launch`` from outside ``validators``/``gym``.

Why: a leading underscore is the only privacy Python has; a package's face (its public modules
and names) is what others may rely on, so a reshape inside one package never breaks another.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import REPO_ROOT

SOURCES = {"envkit": "envkit", "validators": "envkit.validators",
           "converters": "envkit.converters", "trainer": "envkit.trainer"}
"""Repository folder -> the package it installs as."""


def _module(folder: str, path: Path) -> str:
    parts = path.relative_to(REPO_ROOT / folder).with_suffix("").parts
    return ".".join((SOURCES[folder], *parts)).removesuffix(".__init__")


def _package(module: str) -> str:
    """``envkit.gym.servers`` -> ``envkit.gym``; ``envkit.errors`` -> itself."""
    return ".".join(module.split(".")[:2])


def _private_reaches(folder: str, path: Path) -> list[str]:
    mine = _package(_module(folder, path))
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if not (isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("envkit.") and _package(node.module) != mine):
            continue
        private_module = any(p.startswith("_") for p in node.module.split(".")[1:])
        names = [a.name for a in node.names if a.name.startswith("_")
                 and not (a.name.startswith("__") and a.name.endswith("__"))]
        if private_module or names:
            found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: from {node.module} "
                         f"import {', '.join(a.name for a in node.names)}")
    return found


def test_no_module_imports_another_packages_private_names() -> None:
    found = [hit for folder in SOURCES for path in sorted((REPO_ROOT / folder).rglob("*.py"))
             for hit in _private_reaches(folder, path)]
    assert found == [], "import the package's public name instead:\n" + "\n".join(found)


def test_the_check_sees_a_private_reach() -> None:
    """The walk is not vacuous: it reports the shape it forbids."""
    bad = REPO_ROOT / "envkit" / "validate" / "_probe_private_reach_sample.py"
    bad.write_text("from envkit.validators._base import DEFAULT_GYM_VERSION\n")
    try:
        assert _private_reaches("envkit", bad) == [
            "envkit/validate/_probe_private_reach_sample.py:1: from envkit.validators._base "
            "import DEFAULT_GYM_VERSION"]
    finally:
        bad.unlink()
