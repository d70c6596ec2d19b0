"""``benchmarks/gpu_check.sh``'s CPU path: the script kept ready for a GPU machine runs its legs
here too (smaller), so a change that breaks it shows before the GPU machine is at hand.

The suite's venv has no vLLM: its leg is announced as skipped and the hf leg's figures come
back. The `vllm` group runs the script on its own venv, where the vLLM leg runs as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "gpu_check.sh"


def run_gpu_check(tmp_path) -> tuple[dict[str, dict], str]:
    env = {**os.environ, "PYTHON": sys.executable, "WORK": str(tmp_path)}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    legs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {leg["leg"]: leg for leg in legs}, done.stderr


def check_leg(leg: dict) -> None:
    assert leg["steps"] == 3 and leg["device"] == "cpu"
    assert leg["median_step_s"] > 0 and leg["generation_tokens_per_s_per_gpu"] > 0


@pytest.mark.train
def test_the_cpu_path_runs_the_hf_leg_and_announces_the_missing_vllm(tmp_path) -> None:
    legs, err = run_gpu_check(tmp_path)
    assert set(legs) == {"hf"}
    check_leg(legs["hf"])
    assert "vllm does not import here; vLLM leg skipped" in err
