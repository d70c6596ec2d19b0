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

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


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


def test_hook_passes_then_fails_on_a_broken_package(pre_commit: Path, tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("needs envkit as a git checkout (pre-commit clones the hook repository)")
    repo = tmp_path / "consumer"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copytree(VALID, repo / "my-env")
    rev = _git(ROOT, "rev-parse", "HEAD")
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {rev}\n    hooks:\n"
        "      - id: envkit-validate\n        args: [my-env/]\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "home")}

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(pre_commit), "run", "--all-files"], cwd=repo, env=env,
                              capture_output=True, text=True, check=False)

    first = run()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "envkit validate" in first.stdout and "Passed" in first.stdout
    (repo / "my-env" / "rows.jsonl").write_text("{}\n")
    _git(repo, "add", "-A")
    second = run()
    assert second.returncode == 1, second.stdout + second.stderr
    assert "my-env/rows.jsonl: EK200 " in second.stdout

