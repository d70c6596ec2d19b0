"""Finding the Gym venv's interpreter asks each candidate its version once per process: a smoke
looks for the venv twice (before it isolates the network, and when it starts the servers), and a
pyenv shim answers slowly, failing or not."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from envkit.gym.venv import ensure_gym_venv


def _counting_python(tmp_path: Path, version: str) -> tuple[Path, Path]:
    """An "interpreter" that prints ``version`` and notes each run."""
    runs = tmp_path / "runs"
    python = tmp_path / "bin" / "python3.13"
    python.parent.mkdir()
    python.write_text(f"#!/bin/sh\necho run >> {runs}\necho {version}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python, runs


def test_the_interpreter_is_asked_its_version_once(tmp_path: Path) -> None:
    python, runs = _counting_python(tmp_path, "3.13.77")
    venvs = tmp_path / "venvs"
    built = venvs / "nemo-gym-0.7.0-py3.13.77"
    built.mkdir(parents=True)
    (built / "envkit-gym-venv.json").write_text(json.dumps({"gym_version": "0.7.0"}))

    first = ensure_gym_venv("0.7.0", python=python, cache_dir=venvs)
    second = ensure_gym_venv("0.7.0", python=python, cache_dir=venvs)

    assert first == second
    assert (first.root, first.python_version, first.python_override) == (built, "3.13.77", False)
    assert runs.read_text().splitlines() == ["run"]
