#!/usr/bin/env bash
# vLLM-backed GRPO smoke run on a CUDA machine: prints generation tokens/s and step time.
#
#   bash benchmarks/gpu_check.sh            # from the repo root, on a machine with a GPU
#
# What it does (must finish within 8 minutes; the training itself is capped at 5):
#   1. checks nvidia-smi, a CPython 3.13 for Gym, and installs envkit[train] + vllm into
#      .venv-gpu (torch stays pinned to 2.13.0 by the extra; vllm must accept it);
#   2. builds the tiny random-init model and the char_pattern native-v1 package + dataset;
#   3. runs `envkit train --backend vllm` for 8 GRPO steps through real Gym servers
#      (vLLM generates, the trainer updates on the GPU, weights pushed to vLLM each step);
#   4. reads metrics.jsonl: tokens/s = generated tokens / generation seconds, median step time.
# Exit status is non-zero when any step fails; the last 40 log lines are shown on failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-$(mktemp -d /tmp/envkit-gpu-check.XXXXXX)}"
VENV="${VENV:-$ROOT/.venv-gpu}"
STEPS="${STEPS:-8}"
LOG="$WORK/train.log"
cd "$ROOT"

command -v nvidia-smi >/dev/null || { echo "gpu_check: no nvidia-smi: not a CUDA machine" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

PY313="${ENVKIT_GYM_PYTHON:-$(command -v python3.13 || true)}"
[ -n "$PY313" ] || { echo "gpu_check: Gym needs CPython 3.13 (set ENVKIT_GYM_PYTHON)" >&2; exit 2; }
OVERRIDE=()
# nemo-gym 0.7.0 declares Requires-Python >=3.13.14; older 3.13 patch releases need the override
if ! "$PY313" -c 'import sys; sys.exit(sys.version_info < (3, 13, 14))'; then
  echo "gpu_check: $("$PY313" -V) is below nemo-gym's 3.13.14 floor: --allow-python-override" >&2
  OVERRIDE=(--allow-python-override)
fi

if [ ! -x "$VENV/bin/envkit" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -e '.[train]' vllm
fi
"$VENV/bin/python" - "$WORK" <<'PY'
import json, sys
from pathlib import Path
sys.path.insert(0, "fixtures")
from toy_envs import char_pattern_rows, make_native_package, write_dataset
from envkit.trainer.tiny_model import make_tiny_model
work = Path(sys.argv[1])
make_tiny_model(work / "model", hidden=128, layers=2)
make_native_package(work / "pkg", "char_pattern")
write_dataset(work / "data", char_pattern_rows(64, chars="a"))
job = {"model": str(work / "model"), "dataset": str(work / "data"),
       "environment": str(work / "pkg"),
       "training": {"type": "grpo", "num_generations_per_prompt": 8, "batch_size": 64,
                    "learning_rate": 3e-3, "weight_decay": 0.0, "max_new_tokens": 16,
                    "micro_batch_size": 64, "max_steps": int(__import__("os").environ.get("STEPS", "8")),
                    "temperature": 1.0, "seed": 1}}
(work / "job.json").write_text(json.dumps(job))
PY

export ENVKIT_GYM_PYTHON="$PY313"
start=$(date +%s)
if ! timeout 300 "$VENV/bin/envkit" train "$WORK/job.json" --backend vllm "${OVERRIDE[@]}" \
      -o "$WORK/out" --format json >"$WORK/result.json" 2>"$LOG"; then
  echo "gpu_check: training failed; last lines of $LOG:" >&2
  tail -n 40 "$LOG" >&2
  exit 1
fi
echo "gpu_check: envkit train finished in $(( $(date +%s) - start ))s (incl. Gym + vLLM start)"

"$VENV/bin/python" - "$WORK/out/metrics.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps = [r for r in rows if "train_reward" in r]
rollouts = 64
tokens = sum(r["train_mean_gen_tokens"] * rollouts for r in steps)
gen_s = sum(r["train_timing/generation"] for r in steps)
print(f"steps: {len(steps)}")
print(f"generation tokens/s: {tokens / gen_s:.1f}")
print(f"median step time: {statistics.median(r['train_timing/total_step_time'] for r in steps):.2f}s")
print(f"train_reward first/last: {steps[0]['train_reward']:.3f} / {steps[-1]['train_reward']:.3f}")
print(f"token_mult_prob_error (last): {steps[-1]['train_token_mult_prob_error']:.4f}")
PY
