"""Run mypy (``[tool.mypy]`` in pyproject.toml) over envkit as the wheel lays it out.

``validators/``, ``converters/`` and ``trainer/`` install as ``envkit.validators`` and so on,
through the editable install's import hook, which mypy cannot see; so, as for
``scripts/lint_imports.py``, the ``.py`` files are staged in the wheel's places, here under
``build/typecheck/`` (a fixed place, so mypy's cache stays warm; copies keep their mtimes).
The cache is ``.mypy_cache/`` unless ``$MYPY_CACHE_DIR`` names another: CI points it under
``~/.cache``, since every fresh clone otherwise checks all of envkit from nothing (~20 s against
~1 s). Sharing is safe: mypy re-reads an entry only when the file's hash, mypy's version and
the options match, and replaces each cache file atomically. mypy's messages name the staged
files; they are printed with the repository's paths (``envkit/validators/x.py`` as
``validators/x.py``).

Usage: ``.venv/bin/python scripts/typecheck.py [mypy options]`` (all of ``envkit`` unless the
options name ``-p``/``-m`` targets); exits with mypy's status.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib

from lint_imports import ROOT, stage

STAGE = ROOT / "build" / "typecheck"


def _repo_paths() -> list[tuple[str, str]]:
    """``(staged prefix, repository prefix)``, longest first: ``envkit/validators/`` before
    ``envkit/``."""
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    pairs = [(package.replace(".", "/") + "/", folder.rstrip("/") + "/")
             for package, folder in dirs["package-dir"].items()]
    return sorted(pairs, key=lambda p: -len(p[0]))


def _shown(line: str, pairs: list[tuple[str, str]]) -> str:
    for staged, repo in pairs:
        if line.startswith(staged):
            return repo + line.removeprefix(staged)
    return line


def main(argv: list[str]) -> int:
    shutil.rmtree(STAGE, ignore_errors=True)
    stage(STAGE)
    targets = [] if {"-p", "-m", "--package", "--module"} & set(argv) else ["-p", "envkit"]
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
           "--cache-dir", os.environ.get("MYPY_CACHE_DIR") or str(ROOT / ".mypy_cache"),
           *targets, *argv]
    proc = subprocess.run(cmd, cwd=STAGE, capture_output=True, text=True, check=False)
    pairs = _repo_paths()
    for line in proc.stdout.splitlines():
        sys.stdout.write(_shown(line, pairs) + "\n")
    sys.stderr.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
