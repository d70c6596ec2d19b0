"""``benchmarks/gpu_check.sh``'s CPU path: the script kept ready for a GPU machine runs its legs
here too (smaller), so a change that breaks it shows before the GPU machine is at hand.

The suite's venv has no vLLM: its leg is announced as skipped and the hf leg's figures come
back. ``test_gpu_check_vllm.py`` runs the vLLM leg on the `vllm` group's venv.
"""

from __future__ import annotations

import pytest
from support.gpu_check import check_cpu_leg, run_gpu_check


@pytest.mark.train
def test_the_cpu_path_runs_the_hf_leg_and_announces_the_missing_vllm(tmp_path) -> None:
    legs, err = run_gpu_check(tmp_path)
    assert set(legs) == {"hf"}
    check_cpu_leg(legs["hf"])
    assert "vllm does not import here; vLLM leg skipped" in err
