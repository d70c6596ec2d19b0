"""A secret passed as ``${oc.env:VAR}`` stays a reference in the package and is resolved by
Gym when the agent server spins up: the converted ``secret_echo`` env (which builds its
environment only when ``api_key`` is the fixture's key) rolls out through Gym's built-in
``verifiers_agent`` with the variable set in the runtime's environment. Slow: a PyPI
resolution (cached), Gym venvs, Ray.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from support.paths import REPO_ROOT

from envkit.gym.rows import expand_rows, load_rows
from envkit.gym.servers import GymRuntime
from envkit.gym.types import PolicyEndpoint, RuntimeOptions
from envkit.policy_server.server import PolicyServer
from envkit.rollout import run_rollouts
from envkit.trainer.generation.hf import HFBackend
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = [pytest.mark.gym, pytest.mark.network]

ROOT = REPO_ROOT
SECRET = "sk-envkit-fixture-0123456789"
VAR = "ENVKIT_FIXTURE_API_KEY"
OPTIONS = RuntimeOptions(allow_python_override=True, startup_timeout_s=900)


def test_env_reference_is_resolved_by_gym_at_spin_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VAR, SECRET)
    proc = subprocess.run(
        [sys.executable, "-m", "envkit", "convert", "verifiers", "--hub-id",
         "envkit/secret-echo", "--source", str(ROOT / "fixtures" / "verifiers_envs" /
                                               "secret-echo"), "--arch", "x86_64",
         "--out-dir", str(tmp_path / "pkg"), "--dataset-dir", str(tmp_path / "data"),
         "--env-args", json.dumps({"api_key": f"${{oc.env:{VAR}}}", "num_examples": 2})],
        capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    agent = (tmp_path / "pkg" / "configs" / "verifiers_agent.yaml").read_text()
    assert f"${{oc.env:{VAR}}}" in agent and SECRET not in agent
    model = make_tiny_model(tmp_path / "tiny")
    rows = expand_rows(load_rows(tmp_path / "data"), num_repeats=1, temperature=1.0,
                       max_tokens=8)
    with PolicyServer(HFBackend(model, model_name="tiny")) as policy, GymRuntime(
        tmp_path / "pkg", PolicyEndpoint(policy.base_url, policy.api_key, "tiny"), OPTIONS,
    ) as servers:
        summary = run_rollouts(servers, rows, concurrency=2, timeout_s=300)
    # secret_echo raises unless the agent's load_environment got the resolved key
    assert summary.exit_code == 0, [r.failure_reason for r in summary.failed]
    assert len(summary.results) == 2
