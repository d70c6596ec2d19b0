"""Issue #5 (b): a converted verifiers env rolls out through Gym's built-in ``verifiers_agent``.

The reverse-text fixture env is converted by the real CLI (``--source``, x86_64), its Gym
servers brought up with the harness's GitHub/hub requirements replaced by the vendored
verifiers + env wheel, installed offline (``envkit.gym.harness``), and its rows
rolled out against a tiny random-init policy. Each reward must equal the env's own rubric
applied to the completion recorded in the rollout row, scored in a separate subprocess of a
venv that holds the vendored wheels. Slow: PyPI resolution for the conversion (cached),
three Gym venvs, Ray.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from support.paths import REPO_ROOT, SUPPORT

from envkit.gym.rows import expand_rows, load_rows
from envkit.gym.servers import GymRuntime
from envkit.gym.types import PolicyEndpoint, RuntimeOptions
from envkit.policy_server.server import PolicyServer
from envkit.rollout import run_rollouts
from envkit.trainer.generation.hf import HFBackend
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = [pytest.mark.gym, pytest.mark.network]

ROOT = REPO_ROOT
SOURCE = ROOT / "fixtures" / "verifiers_envs" / "reverse-text"
SCORER = SUPPORT / "vf_rubric_score.py"
ENV_ARGS = {"num_examples": 4, "seed": 11}
AGENT = "verifiers_agent"
# Not --offline: Gym's `uv venv --seed` needs pip from an index, and the converter does not vendor
# pip. The verifiers_agent install itself is index-free (`--no-index` in its staged requirements).
OPTIONS = RuntimeOptions(allow_python_override=True, startup_timeout_s=900)


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("vf")
    proc = subprocess.run(
        [sys.executable, "-m", "envkit", "convert", "verifiers", "--hub-id",
         "envkit/reverse-text", "--source", str(SOURCE), "--arch", "x86_64",
         "--out-dir", str(out / "pkg"), "--dataset-dir", str(out / "data"),
         "--validation-fraction", "0", "--env-args", json.dumps(ENV_ARGS)],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / "pkg", out / "data"


def _completion(record: dict) -> list[dict]:
    """The assistant turn as verifiers saw it: the output message's text."""
    texts = ["".join(c.get("text", "") for c in item.get("content") or [])
             for item in record["response"]["output"] if item.get("type") == "message"]
    return [{"role": "assistant", "content": text} for text in texts]


def _aborted(record: dict) -> bool:
    """verifiers aborted the rollout (the tiny random policy's first token can be its EOS:
    ``EmptyModelResponseError``): Gym's agent returns reward 0 and a one-token placeholder
    message in place of a completion, so there is no completion for the rubric to score
    (4 of 512 rollouts here)."""
    return [item.get("id") for item in record["response"]["output"]] == ["msg_empty"]


def _rubric_scores(python: Path, rows: list[dict], records: list[dict],
                   tmp_path: Path) -> list[dict]:
    items = [{"prompt": row["responses_create_params"]["input"], "completion": _completion(rec),
              "answer": row["answer"], "info": row["info"], "example_id": row["example_id"]}
             for row, rec in zip(rows, records, strict=True)]
    # one known-good completion: the scorer must tell a right answer from the tiny model's noise
    right = f"<think>x</think>\n<answer>{rows[0]['answer']}</answer>"
    items.append({**items[0], "completion": [{"role": "assistant", "content": right}]})
    spec = tmp_path / "in.json"
    spec.write_text(json.dumps({"vf_env_id": "reverse-text", "vf_env_args": ENV_ARGS,
                                "items": items}))
    proc = subprocess.run([str(python), "-I", str(SCORER), str(spec), str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=300, check=False,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((tmp_path / "out.json").read_text())


def test_verifiers_agent_rewards_match_the_env_rubric(
    converted: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    pkg, data = converted
    model = make_tiny_model(tmp_path / "tiny")
    rows = expand_rows(load_rows(data), num_repeats=2, temperature=1.0, max_tokens=24)
    caplog.set_level(logging.WARNING, logger="envkit.gym.harness")
    with PolicyServer(HFBackend(model, model_name="tiny")) as policy:
        runtime = GymRuntime(pkg, PolicyEndpoint(policy.base_url, policy.api_key, "tiny"),
                             OPTIONS)
        with runtime as servers:
            assert AGENT in servers.agents()
            summary = run_rollouts(servers, rows, concurrency=4, timeout_s=300)
        venv = runtime.venv_dir
    assert summary.exit_code == 0, [r.failure_reason for r in summary.failed]
    assert set(summary.mean_reward) == {AGENT}
    # the replacement is logged: verifiers from GitHub and the hub index are gone
    assert "git+https" in caplog.text and "verifiers==0.3.1" in caplog.text
    records = [r.record for r in summary.results]
    assert all(r.completion_ids for r in summary.results)  # trainable tokens came back
    assert venv is not None
    python = venv / "responses_api_agents" / AGENT / ".venv" / "bin" / "python"
    *scores, perfect = _rubric_scores(python, rows, records, tmp_path)
    assert perfect["reward"] == pytest.approx(1.2)  # lcs 1.0 + 0.2 x format 1.0
    scored = 0
    for result, score in zip(summary.results, scores, strict=True):
        if _aborted(result.record):
            assert result.reward == 0.0  # as the platform trains on it
            continue
        scored += 1
        assert result.reward == pytest.approx(score["reward"], abs=1e-9)
        # the rubric's per-function scores; `num_turns` is the env's rollout monitor, which
        # counts turns of a real rollout and has none to count on a bare State
        rubric = {k: v for k, v in score["metrics"].items() if k != "num_turns"}
        served = result.record["response"]["metrics"]
        assert rubric and {k: served[k] for k in rubric} == pytest.approx(rubric)
    assert scored >= len(records) - 2, "most rollouts must reach the rubric"
    print(json.dumps({"rollouts": len(records), "mean_reward": summary.mean_reward,
                      "rewards": [r.reward for r in summary.results],
                      "rollout_s": round(summary.rollout_s, 2)}))
