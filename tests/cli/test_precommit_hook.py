"""The ``envkit-validate`` hook, run by real pre-commit from a consumer repository.

Slow: installs pre-commit into a throwaway venv, then pre-commit installs envkit (at this
checkout's HEAD commit: uncommitted hook changes are not seen) into its own hook env.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

ROOT = REPO_ROOT
VALID = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"

pytestmark = [pytest.mark.network, pytest.mark.timeout(600)]


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def pre_commit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = shutil.which("pre-commit")
    if found:
        return Path(found)
    env_dir = tmp_path_factory.mktemp("pre-commit-venv")
    venv.create(env_dir, with_pip=True)
    subprocess.run([env_dir / "bin" / "python", "-m", "pip", "install", "-q", "pre-commit"],
                   check=True)
    return env_dir / "bin" / "pre-commit"


def _consumer(tmp_path: Path, args: str) -> Path:
    if not (ROOT / ".git").exists():
        pytest.skip("needs envkit as a git checkout (pre-commit clones the hook repository)")
    repo = tmp_path / "consumer"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copytree(VALID, repo / "my-env")
    shutil.copytree(VALID, repo / "other-env")
    rev = _git(ROOT, "rev-parse", "HEAD")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {rev}\n    hooks:\n"
        f"      - id: envkit-validate\n        args: {args}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    return repo


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One PRE_COMMIT_HOME for the module: pre-commit installs envkit's hook env (envkit at
    HEAD and its dependencies, from the index) once, not once per test."""
    return tmp_path_factory.mktemp("pre-commit-home")


def _run(pre_commit: Path, repo: Path, home: Path, *args: str
         ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run([str(pre_commit), "run", *args], cwd=repo, env=env,
                          capture_output=True, text=True, check=False)


def test_hook_passes_then_fails_on_a_broken_package(
    pre_commit: Path, hook_home: Path, tmp_path: Path
) -> None:
    repo = _consumer(tmp_path, "[my-env/]")
    first = _run(pre_commit, repo, hook_home, "--all-files")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "envkit validate" in first.stdout and "Passed" in first.stdout
    (repo / "my-env" / "rows.jsonl").write_text("{}\n")
    _git(repo, "add", "-A")
    second = _run(pre_commit, repo, hook_home, "--all-files")
    assert second.returncode == 1, second.stdout + second.stderr
    assert "my-env/rows.jsonl: error[EK200] " in second.stdout


def test_hook_validates_only_the_packages_a_commit_touches(
    pre_commit: Path, hook_home: Path, tmp_path: Path
) -> None:
    repo = _consumer(tmp_path, "[]")
    # other-env is broken but untouched: a commit that touches only my-env passes.
    (repo / "other-env" / "rows.jsonl").write_text("{}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "break other-env", "--no-verify")
    manifest = repo / "my-env" / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + "# touched\n")
    _git(repo, "add", "-A")
    touched = _run(pre_commit, repo, hook_home)  # the staged files only, as on `git commit`
    assert touched.returncode == 0, touched.stdout + touched.stderr
    assert "Passed" in touched.stdout and "other-env" not in touched.stdout
    everything = _run(pre_commit, repo, hook_home, "--all-files")
    assert everything.returncode == 1
    assert "other-env/rows.jsonl: error[EK200] " in everything.stdout
    assert "2 packages checked, 1 valid, 1 invalid" in everything.stdout


def test_hook_in_a_workspace_maps_files_to_members(
    pre_commit: Path, hook_home: Path, tmp_path: Path
) -> None:
    """A workspace root's own files are no package's; its configuration stands for all."""
    repo = _consumer(tmp_path, "[]")
    (repo / "envs").mkdir()
    for name in ("my-env", "other-env"):
        shutil.move(repo / name, repo / "envs" / name)
    (repo / "envkit.toml").write_text('packages = ["envs/*"]\n')
    (repo / "envs" / "other-env" / "rows.jsonl").write_text("{}\n")  # EK200, untouched below
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "workspace", "--no-verify")
    manifest = repo / "envs" / "my-env" / "nemo-environment.yaml"
    manifest.write_text(manifest.read_text() + "# touched\n")
    _git(repo, "add", "-A")
    touched = _run(pre_commit, repo, hook_home)
    assert touched.returncode == 0, touched.stdout + touched.stderr
    _git(repo, "commit", "-qm", "touch my-env", "--no-verify")
    (repo / "envkit.toml").write_text('packages = ["envs/*"]\nstrict = false\n')
    _git(repo, "add", "-A")
    config = _run(pre_commit, repo, hook_home)  # the workspace's settings: every member
    assert config.returncode == 1, config.stdout + config.stderr
    assert "envs/other-env/rows.jsonl: error[EK200] " in config.stdout
    assert "2 packages checked, 1 valid, 1 invalid" in config.stdout
