"""Running ``benchmarks/gpu_check.sh`` from a test: on this interpreter, its legs' JSON lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.paths import REPO_ROOT

__all__ = ["check_cpu_leg", "run_gpu_check"]

SCRIPT = REPO_ROOT / "benchmarks" / "gpu_check.sh"


def run_gpu_check(work: Path, legs: str = "hf vllm") -> tuple[dict[str, dict], str]:
    """The script run with ``PYTHON`` = this interpreter and ``GPU_CHECK_LEGS`` = ``legs``:
    each leg's figures by name, and stderr."""
    env = {**os.environ, "PYTHON": sys.executable, "WORK": str(work), "GPU_CHECK_LEGS": legs}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {leg["leg"]: leg for leg in lines}, done.stderr


def check_cpu_leg(leg: dict) -> None:
    """A leg of the CPU path: its three steps ran on the CPU and measured something."""
    assert leg["steps"] == 3 and leg["device"] == "cpu"
    assert leg["median_step_s"] > 0 and leg["generation_tokens_per_s_per_gpu"] > 0
