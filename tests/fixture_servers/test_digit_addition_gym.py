"""The digit_addition resources server, REAL Gym (nemo-gym 0.7.0 venvs): its sibling
``final_answer.py`` loads under ``python app.py``, rollouts through ``/run`` are scored by the
final-number rule, and ``/verify`` gives 1.0 to every phrasing of the right sum and 0.0 otherwise.

Slow, one bring-up (the package's server venvs are cached after the first run).
"""

from __future__ import annotations

import copy
import json
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("torch")

from support.digit_addition import fa
from toy_envs import digit_addition_rows, make_native_package

from envkit.gym.rows import expand_rows
from envkit.gym.servers import GymRuntime
from envkit.gym.types import PolicyEndpoint, RuntimeOptions
from envkit.policy_server.server import PolicyServer
from envkit.rollout import run_rollouts
from envkit.trainer.generation.hf import HFBackend
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = pytest.mark.gym

OPTIONS = RuntimeOptions(allow_python_override=True, startup_timeout_s=900)


def _text(record: dict) -> str:
    return "".join(
        c.get("text", "")
        for item in record["response"]["output"]
        if item.get("type") == "message"
        for c in item.get("content") or []
    )


def _with_text(record: dict, text: str) -> dict:
    """The same response, its assistant message replaced by ``text``."""
    response = copy.deepcopy(record["response"])
    message = next(i for i in response["output"] if i.get("type") == "message")
    message["content"] = [{"type": "output_text", "text": text, "annotations": []}]
    return response


def _verify(url: str, record: dict, text: str, expected: str) -> dict:
    body = {
        "responses_create_params": record["responses_create_params"],
        "response": _with_text(record, text),
        "expected_answer": expected,
    }
    request = urllib.request.Request(
        f"{url.rstrip('/')}/verify",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())


def test_real_server_scores_the_final_number(tmp_path: Path) -> None:
    model = make_tiny_model(tmp_path / "tiny")
    pkg = make_native_package(tmp_path / "pkg", "digit_addition")
    rows = expand_rows(digit_addition_rows(2), num_repeats=2, temperature=1.0, max_tokens=6)
    with PolicyServer(HFBackend(model, model_name="tiny")) as policy:
        endpoint = PolicyEndpoint(policy.base_url, policy.api_key, "tiny")
        with GymRuntime(pkg, endpoint, OPTIONS) as servers:
            summary = run_rollouts(servers, rows, concurrency=2, timeout_s=300)
            assert summary.exit_code == 0, [r.failure_reason for r in summary.failed]
            for result, row in zip(summary.results, rows, strict=True):
                expected = row["expected_answer"]
                assert result.reward == fa.final_answer_reward(_text(result.record), expected)
            record = summary.results[0].record
            url = servers.servers["digit_addition"].url
            cases = {
                "8": 1.0,
                "3 + 5 = **8**.": 1.0,
                "The answer is \\boxed{8}.": 1.0,
                "3+5 is not 9": 0.0,
                "8, since 3 + 5": 0.0,
                "eight": 0.0,
            }
            for text, reward in cases.items():
                verified = _verify(url, record, text, "8")
                assert verified["reward"] == reward, text
            assert _verify(url, record, "3 + 5 = 8", "8")["extracted_answer"] == "8"
            assert _verify(url, record, "no number", "8")["extracted_answer"] is None
