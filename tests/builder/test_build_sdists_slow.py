"""Issue #3 end to end: hydra-core's sdist-only antlr4 runtime is built and vendored.

Slow: resolves nemo-gym 0.7.0's runtime closure from PyPI (cold: ~350 MB of wheels; warm
from envkit's cache: seconds). Before the fix, ``--only-binary :all:`` silently fell back to
hydra-core 0.11.3 / omegaconf 1.4.1, and every Gym server died importing pkg_resources.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version
from support.paths import REPO_ROOT

pytestmark = pytest.mark.network

CHAR_PATTERN = REPO_ROOT / "fixtures" / "gym_trees" / \
    "resources_servers" / "char_pattern"


def _envkit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envkit", *args], capture_output=True,
                          text=True, env=dict(os.environ), check=False)


def test_char_pattern_vendors_hydra_1_x_and_a_built_antlr4_wheel(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    built = _envkit("build", str(CHAR_PATTERN), "--format", "wheels-v1", "--arch", "x86_64",
                    "-o", str(out))
    assert built.returncode == 0, built.stderr
    lock = {w["name"]: w for w in json.loads((out / "wheels.lock").read_text())["wheels"]}
    assert Version(lock["hydra-core"]["version"]) >= Version("1.1")
    assert Version(lock["omegaconf"]["version"]) >= Version("2.1")
    antlr = lock["antlr4-python3-runtime"]
    assert antlr["filename"].endswith("-none-any.whl")
    assert (out / "wheels" / antlr["filename"]).is_file()
    assert antlr["built_from"]["sdist_url"].endswith(".tar.gz")
    assert len(antlr["built_from"]["sdist_sha256"]) == 64
    checked = _envkit("validate", str(out), "--arch", "x86_64", "--offline", "--format", "json")
    assert checked.returncode == 0, checked.stdout
