"""The CI files ``envkit init`` writes: the workflow is valid against GitHub's workflow schema
(SchemaStore's, as check-jsonschema vendors it), and ``pre-commit run --all-files`` passes
in a fresh git repository of the new project (and fails on a broken job)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envkit.cli import main
from envkit.init import TEMPLATES

BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.skip(f"{name} is not installed (the test extra)")
    return found


def _init(tmp_path: Path, *args: str) -> Path:
    project = tmp_path / "proj"
    assert main(["init", str(project), "--name", "my-env", "-q", *args]) == 0
    return project


def _check_workflow(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_tool("check-jsonschema"), "--builtin-schema",
                           "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("template", TEMPLATES)
def test_workflow_is_valid_against_githubs_schema(tmp_path: Path, template: str) -> None:
    workflow = _init(tmp_path, "--template", template) / ".github" / "workflows" / "envkit.yml"
    proc = _check_workflow(workflow)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = yaml.safe_load(workflow.read_text())["jobs"]["package"]["steps"]
    runs = " ".join(step.get("run", "") for step in steps)
    for command in ("envkit validate", "--output-format sarif", "envkit smoke", "envkit probe"):
        assert command in runs
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif")
               for step in steps)


def test_the_schema_check_catches_a_broken_workflow(tmp_path: Path) -> None:
    workflow = _init(tmp_path) / ".github" / "workflows" / "envkit.yml"
    data = yaml.safe_load(workflow.read_text())
    del data["jobs"]["package"]["runs-on"]
    workflow.write_text(yaml.safe_dump(data))
    assert _check_workflow(workflow).returncode == 1


def _pre_commit(project: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "GIT_CONFIG_GLOBAL": "/dev/null"}
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=project, check=True, env=env, timeout=60)
    return subprocess.run([_tool("pre-commit"), "run", "--all-files"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_pre_commit_passes_in_a_fresh_repository(tmp_path: Path) -> None:
    project = _init(tmp_path)
    proc = _pre_commit(project, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "envkit validate --job" in proc.stdout and "Passed" in proc.stdout


def test_pre_commit_fails_on_a_broken_job(tmp_path: Path) -> None:
    project = _init(tmp_path)
    job = json.loads((project / "jobs" / "grpo.json").read_text())
    job["training"]["temperature"] = 0  # EK604
    (project / "jobs" / "grpo.json").write_text(json.dumps(job))
    proc = _pre_commit(project, tmp_path)
    assert proc.returncode == 1 and "EK604" in proc.stdout


@pytest.mark.parametrize("template", TEMPLATES)
def test_the_workflow_names_no_index_that_lacks_envkit(tmp_path: Path, template: str) -> None:
    """envkit is on no public index: the install step asks for ENVKIT_PIP_SPEC instead of
    falling back to a `pip install nemo-envkit` that cannot resolve."""
    workflow = _init(tmp_path, "--template", template) / ".github" / "workflows" / "envkit.yml"
    data = yaml.safe_load(workflow.read_text())
    assert data["env"]["ENVKIT_PIP_SPEC"] == "${{ vars.ENVKIT_PIP_SPEC }}"
    step = next(s for s in data["jobs"]["package"]["steps"] if s.get("name") == "Install envkit")
    proc = subprocess.run(["bash", "-e", "-c", step["run"]], env={**os.environ,
                          "ENVKIT_PIP_SPEC": ""}, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 1 and "::error::set the repository variable" in proc.stdout


@pytest.mark.parametrize("template", TEMPLATES)
def test_the_workflow_keeps_envkits_caches_out_of_the_checkout(tmp_path: Path,
                                                               template: str) -> None:
    """Files committed to the repository, or written by an earlier step, never become the
    gate's input: the cache lives in the runner's temp folder, and only downloads (checked by
    their sha256 when used) are kept between runs."""
    workflow = _init(tmp_path, "--template", template) / ".github" / "workflows" / "envkit.yml"
    text = workflow.read_text()
    data = yaml.safe_load(text)
    assert "github.workspace" not in text and ".envkit-cache" not in text
    assert "ENVKIT_CACHE_DIR" not in data.get("env", {})
    steps = data["jobs"]["package"]["steps"]
    set_dir = next(s for s in steps if "ENVKIT_CACHE_DIR=" in s.get("run", ""))
    assert set_dir["run"].strip() == ('echo "ENVKIT_CACHE_DIR=$RUNNER_TEMP/envkit-cache" >> '
                                      '"$GITHUB_ENV"')
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert steps.index(set_dir) < steps.index(cache)
    paths = cache["with"]["path"].splitlines()
    # Only downloads, which are used only while their bytes match their sha256; never a venv,
    # whose restored files no hash envkit keeps can vouch for.
    assert {p.rsplit("/", 1)[1] for p in paths} == {"wheels", "find-links"}
    assert all(p.startswith("${{ runner.temp }}/envkit-cache/") for p in paths)
