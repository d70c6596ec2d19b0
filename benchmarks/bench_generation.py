"""Benchmark: the demo job's GRPO step with vLLM generation against HF generation.

Same run, same weights: one process trains the demo job (``examples/tiny_grpo.json``: 4 prompts
x 8 generations a step, 8 new tokens) from the same tiny random-init model through the same
char_pattern package's real Gym servers, once per backend, with the same seeds. Each leg reports
its median step time (``train_timing/total_step_time``), the part of it outside generation, and
its generated tokens per second of generation (``train_timing/generation``); the first step of
each leg is left out (the engine's first batch warms its caches). The ratio is vLLM's step
against HF's: the goal is <= 1.

Why the legs go back and forth (``--rounds``, default 2: hf, vllm, vllm, hf): on a shared
machine the load drifts over minutes, and whichever backend ran second saw a different machine
(one order gave 1.05x, the other 1.49x). Mirrored rounds give each backend the same share of
early and late; the ratio is of the medians over every timed step of a backend's legs.

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
        result = train(cfg, policy, source, rows,
                       TrainOptions(Path(tempfile.mkdtemp(prefix=backend, dir=work)),
                                    save_period=10**6))
    done = [r for r in read_metrics(result.metrics_path) if "train_reward" in r]
    timed = done[1:] or done
    gen_tokens = sum(r["train_mean_gen_tokens"] * rollouts for r in timed)
    gen_s = sum(r["train_timing/generation"] for r in timed)
    out: dict[str, Any] = {
        "backend": backend,
        "steps": len(done),
        "timed_steps": len(timed),
        "step_s": [round(r["train_timing/total_step_time"], 3) for r in timed],
        "outside_generation_s": [round(r["train_timing/total_step_time"]
                                       - r["train_timing/generation"], 3) for r in timed],
        "median_step_s": round(statistics.median(r["train_timing/total_step_time"]
                                                 for r in timed), 3),
        "median_generation_s": round(statistics.median(r["train_timing/generation"]
                                                       for r in timed), 3),
        "generated_tokens_per_s": round(gen_tokens / max(gen_s, 1e-9), 1),
        "generated_tokens": gen_tokens,
        "generation_s": round(gen_s, 3),
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
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of legs, every second one in the reverse order")
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    order = [b for r in range(args.rounds) for b in (backends if r % 2 == 0 else backends[::-1])]
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB: the tiny model needs little
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local model: no hub look-ups to wait on
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout: the figures

    from toy_envs import make_native_package

    from envkit.cli._extras import require_backend
    from envkit.trainer.tiny_model import make_tiny_model

    for backend in backends:
        require_backend("bench_generation", backend)  # a missing vLLM fails now, named
    with tempfile.TemporaryDirectory(prefix="envkit-bench-gen.") as tmp:
        work = Path(tmp)
        model = make_tiny_model(work / "model", seed=0)
        package = make_native_package(work / "pkg", "char_pattern")
        legs = []
        for backend in order:
            legs.append(leg(backend, work, model, package, args.steps))
            print(json.dumps(legs[-1]), flush=True)
    pooled = {b: _pooled([x for x in legs if x["backend"] == b]) for b in backends}
    for figures in pooled.values():
        print(json.dumps(figures))
    if "hf" in pooled and "vllm" in pooled:
        hf, vl = pooled["hf"], pooled["vllm"]
        print(json.dumps({
            "order": order,
            "ratio_step_vllm_over_hf": round(vl["median_step_s"] / hf["median_step_s"], 3),
            "ratio_gen_tokens_per_s_vllm_over_hf": round(
                vl["generated_tokens_per_s"] / hf["generated_tokens_per_s"], 3),
            "goal": "step ratio <= 1",
        }))
    return 0


def _pooled(legs: list[dict[str, Any]]) -> dict[str, Any]:
    """One backend's figures over all its legs: medians of every timed step, tokens/s of all."""
    steps = [s for x in legs for s in x["step_s"]]
    outside = [s for x in legs for s in x["outside_generation_s"]]
    gen_s = sum(x["generation_s"] for x in legs)
    tokens = sum(x["generated_tokens"] for x in legs)
    return {"backend": legs[0]["backend"], "legs": len(legs), "timed_steps": len(steps),
            "median_step_s": round(statistics.median(steps), 3),
            "median_outside_generation_s": round(statistics.median(outside), 3),
            "generated_tokens_per_s": round(tokens / max(gen_s, 1e-9), 1)}


if __name__ == "__main__":
    sys.exit(main())
