"""Run ``lint-imports`` (the contracts in pyproject.toml) over envkit as the wheel lays it out.

``validators/``, ``converters/`` and ``trainer/`` install as ``envkit.validators`` and so on
(pyproject's ``package-dir``), but import-linter finds a package's modules by walking its
folder, and the editable install maps those three folders in with an import hook, so they
are not under ``envkit/`` on disk. This stages the same layout in a temp dir (a copy of the
``.py`` files, in the wheel's places) and runs ``lint-imports`` with it first on the path.

Usage: ``.venv/bin/python scripts/lint_imports.py [lint-imports options]``; exits with
lint-imports' status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def stage(dest: Path) -> None:
    """Copy every ``.py`` file of each ``package-dir`` folder to its place under ``dest``.

    By folder, not by pyproject's ``packages`` list: a subpackage missing from that list is
    still checked (and ``tests/project/test_packaging.py`` finds it missing from the wheel)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    for package, folder in setuptools["package-dir"].items():
        source = ROOT / folder
        for module in source.rglob("*.py"):
            target = dest / Path(*package.split(".")) / module.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(module, target)


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="envkit-lint-imports-") as tmp:
        stage(Path(tmp))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [tmp, *filter(None, [os.environ.get("PYTHONPATH")])])}
        lint = Path(sys.executable).with_name("lint-imports")
        cmd = [str(lint) if lint.exists() else "lint-imports", str(ROOT / "pyproject.toml"), *argv]
        return subprocess.run(cmd, env=env, cwd=tmp, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
