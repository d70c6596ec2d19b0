"""``benchmarks/gpu_check.sh``'s vLLM leg on the CPU, on the `vllm` group's venv: the same GRPO
run with envkit's vLLM backend generating beside the trainer, refit after every step, so the
leg the GPU machine will run has run here first."""

from __future__ import annotations

import pytest
from support.gpu_check import check_cpu_leg, run_gpu_check

pytestmark = pytest.mark.vllm


def test_the_vllm_leg_trains_colocated_with_the_backend_generating(tmp_path) -> None:
    legs, _ = run_gpu_check(tmp_path, legs="vllm")
    assert set(legs) == {"vllm"}
    check_cpu_leg(legs["vllm"])
    assert legs["vllm"]["colocated"] is True
    assert abs(legs["vllm"]["token_mult_prob_error_last"] - 1.0) <= 0.05
