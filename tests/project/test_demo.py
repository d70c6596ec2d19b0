"""The README's main job: ``scripts/demo.sh`` and its GRPO job ``examples/tiny_grpo.json``.

The demo itself (install, build, Gym, training) runs for minutes and is checked end to end by
hand (see the demo branch's report); these fast tests keep its inputs from rotting.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from support.paths import REPO_ROOT

from envkit.check.validate import ValidateRequest, validate

ROOT = REPO_ROOT
JOB = ROOT / "examples" / "tiny_grpo.json"
DEMO = ROOT / "scripts" / "demo.sh"


def test_example_job_validates_with_no_diagnostics():
    report = validate(ValidateRequest(job=JOB))
    assert [d.code for d in report.diagnostics] == []


def test_example_job_is_the_platform_grpo_shape():
    job = json.loads(JOB.read_text(encoding="utf-8"))
    assert job["training"]["type"] == "grpo"
    for key in ("model", "dataset", "environment"):
        workspace, _, name = job[key].partition("/")
        assert workspace and name, key


def test_example_job_runs_enough_steps_on_the_demo_rows():
    pytest.importorskip("torch")
    from envkit.trainer.config import grpo_config

    cfg = grpo_config(json.loads(JOB.read_text(encoding="utf-8")))
    # demo.sh writes 16 rows; the reward climbs from ~0 to ~0.9 over ~30 steps
    assert cfg.total_steps(16) >= 30


def test_demo_script_parses():
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    subprocess.run([bash, "-n", str(DEMO)], check=True)


def test_demo_outputs_are_ignored_by_git():
    assert ".envkit-demo/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
