"""Each ``envkit init`` template, all the way: the commands its README and workflow run, on
the real tools (uv against PyPI, Gym 0.7.0 servers, the GRPO trainer on a tiny model).

gym: init -> build -> validate --offline -> Gym's verifier fixture in the Gym venv. The rest of
the gym template's way (smoke --offline, train --offline, probe --offline, rollout) is the
getting-started page and the rollout guide, run by ``tests/project/test_docs_commands.py`` on
the same template with the same flags (its outputs checked there;
``test_getting_started_takes_the_gym_template_all_the_way`` keeps that so): one bring-up of
each instead of two, in CI's longest group.
verifiers: init -> convert verifiers --source -> validate -> smoke -> probe -> a 2-step train
(adapter-wheels-v1 needs egress at job start by design, so nothing runs --offline there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.network  # uv against PyPI: every build here; each test adds the rest

ENV = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}


def _envkit(cwd: Path, *args: str, timeout: int = 1500) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "envkit", *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"envkit {' '.join(args)}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc


def _train_two_steps(project: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from envkit.trainer.tiny_model import make_tiny_model

    job = json.loads((project / "jobs" / "grpo.json").read_text())
    job["training"].update(max_steps=2, batch_size=8, micro_batch_size=8,
                           num_generations_per_prompt=4, max_new_tokens=8, seed=1)
    (tmp_path / "job2.json").write_text(json.dumps(job))
    model = make_tiny_model(tmp_path / "tiny")
    _envkit(project, "train", str(tmp_path / "job2.json"), "--env", "package", "--dataset",
            "package-data", "--model", str(model), "-o", str(tmp_path / "run"),
            "--allow-python-override")
    rows = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    steps = [json.loads(r) for r in rows if "train_reward" in json.loads(r)]
    assert [s["step"] for s in steps][-1] == 2 and (tmp_path / "run" / "final").is_dir()


def _verifier_fixture(project: Path) -> None:
    """Gym 0.7's own check of ``tests/verifier_cases.jsonl``, as the project's test runs it."""
    from envkit.gym.venv import ensure_gym_venv

    python = ensure_gym_venv(allow_python_override=True).python
    test = next(project.glob("resources_servers/*/tests/test_app.py"))
    code = ("import importlib.util, sys; s = importlib.util.spec_from_file_location('t', "
            "sys.argv[1]); m = importlib.util.module_from_spec(s); s.loader.exec_module(m); "
            "m.test_verifier_fixture(); print('fixture ok')")
    proc = subprocess.run([str(python), "-c", code, str(test)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0 and "fixture ok" in proc.stdout, proc.stderr


@pytest.mark.gym
def test_gym_template_builds_validates_and_passes_its_verifier_fixture(tmp_path: Path) -> None:
    project = tmp_path / "echo-env"
    _envkit(tmp_path, "init", str(project))
    _envkit(project, "build", "resources_servers/echo_env", "--format", "wheels-v1",
            "--arch", "x86_64", "-o", "package", timeout=1800)
    report = json.loads(_envkit(project, "validate", "package", "--offline",
                                "--output-format", "json").stdout)
    assert report["valid"] and report["packages"][0]["errors"] == 0
    assert report["packages"][0]["target_source"].endswith("envkit.toml")
    _verifier_fixture(project)


def test_native_template_builds_and_validates(tmp_path: Path) -> None:
    project = tmp_path / "native-env"
    _envkit(tmp_path, "init", str(project), "--format", "native-v1", "--arch", "aarch64")
    _envkit(project, "build", "resources_servers/native_env", "--format", "native-v1",
            "--arch", "aarch64", "-o", "package")
    report = json.loads(_envkit(project, "validate", "package", "--output-format",
                                "json").stdout)
    assert report["valid"] and report["format"] == "native-v1"
    assert report["target"].endswith("aarch64")


@pytest.mark.train
@pytest.mark.gym
def test_verifiers_template_end_to_end(tmp_path: Path) -> None:
    project = tmp_path / "add-env"
    _envkit(tmp_path, "init", str(project), "--template", "verifiers")
    _envkit(project, "convert", "verifiers", "--hub-id", "local/add-env", "--source",
            "environments/add_env", "--arch", "x86_64", "-o", "package", "--dataset-dir",
            "package-data", "--validation-fraction", "0.25", timeout=2400)
    report = json.loads(_envkit(project, "validate", "package", "--output-format",
                                "json").stdout)
    assert report["valid"] and report["format"] == "adapter-wheels-v1"
    # The probe's first phase is smoke's spin-up and first rollouts: its exit 0 is smoke's
    # verdict and more (smoke on a converted adapter-wheels-v1 package is
    # tests/smoke/test_run_gym.py's test_converted_verifiers_package_passes).
    probe = json.loads(_envkit(project, "probe", "package", "--dataset", "package-data",
                               "--job", "jobs/grpo.json", "--output-format", "json").stdout)
    assert probe["passed"] and probe["stage"] == "done", probe["diagnostics"]
    _train_two_steps(project, tmp_path)
