"""The two legs of ``benchmarks/gpu_check.sh``; each prints one JSON line of measurements.

``hf``: GRPO with envkit's trainer and HF generation on the machine's own torch (the GPU when
there is one, else the CPU): a random-init Llama with a character tokenizer, a Python reward
(the char_pattern formula), no Gym, no network. ``vllm``: vLLM generation from the same model
and a weight push, only where ``import vllm`` works.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

PROMPT = "Write the character a 8 times."


def _reward(row: dict, text: str) -> float:
    return sum(ch == "a" for ch in text) / max(len(text), 8, 1)


def hf_leg(work: Path, steps: int, max_new: int) -> dict:
    import torch

    from envkit.trainer.config import grpo_config
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.metrics import read_metrics
    from envkit.trainer.policy import load_policy
    from envkit.trainer.rollout_source import LocalRolloutSource

    training = {
        "type": "grpo", "num_generations_per_prompt": 8, "batch_size": 64,
        "num_prompts_per_step": 8, "learning_rate": 3e-3, "weight_decay": 0.0,
        "optimizer_type": "adamw_with_flat_lr", "max_new_tokens": max_new,
        "max_seq_length": 256, "micro_batch_size": 64, "max_steps": steps, "seed": 1,
    }  # fmt: skip
    cfg = grpo_config({"training": training})
    policy = load_policy(work / "model", cfg)
    source = LocalRolloutSource(policy, _reward, temperature=1.0, max_new_tokens=max_new)
    rows = [{"responses_create_params": {"input": PROMPT}}] * 64
    result = train(cfg, policy, source, rows, TrainOptions(work / "hf", save_period=10_000))
    steps_done = [r for r in read_metrics(result.metrics_path) if "train_reward" in r]
    rollouts = 8 * 8
    gen_tokens = sum(r["train_mean_gen_tokens"] * rollouts for r in steps_done)
    gen_s = sum(r["train_timing/generation"] for r in steps_done)
    total_s = sum(r["train_timing/total_step_time"] for r in steps_done)
    median = statistics.median(r["train_timing/total_step_time"] for r in steps_done)
    return {
        "leg": "hf",
        "device": str(next(policy.model.parameters()).device),
        "torch": torch.__version__,
        "steps": len(steps_done),
        "median_step_s": round(median, 3),
        "generation_tokens_per_s": round(gen_tokens / max(gen_s, 1e-9), 1),
        "train_tokens_per_s": round(gen_tokens / max(total_s - gen_s, 1e-9), 1),
        "train_reward_first_last": [round(steps_done[0]["train_reward"], 3),
                                    round(steps_done[-1]["train_reward"], 3)],
        "optimizer_steps_per_step": steps_done[-1]["train_optimizer_steps"],
    }  # fmt: skip


def vllm_leg(work: Path, max_new: int) -> dict:
    import torch

    from envkit.endpoint.generation import SamplingParams
    from envkit.trainer.generation.vllm import VLLMBackend

    backend = VLLMBackend(work / "model", gpu_memory_utilization=0.3)
    prompts = [[{"role": "user", "content": PROMPT}]] * 64
    params = SamplingParams(n=8, max_tokens=max_new, seed=1)
    backend.generate(prompts[:2], params)  # warm-up: compile and cache
    started = time.perf_counter()
    outputs = backend.generate(prompts, params)
    gen_s = time.perf_counter() - started
    tokens = sum(len(c.token_ids) for out in outputs for c in out.completions)
    from transformers import AutoModelForCausalLM

    weights = AutoModelForCausalLM.from_pretrained(work / "model").state_dict()
    started = time.perf_counter()
    backend.update_weights({k: v.to(torch.float32) for k, v in weights.items()})
    push_s = time.perf_counter() - started
    backend.close()
    return {
        "leg": "vllm",
        "samples": 64 * 8,
        "generation_tokens_per_s": round(tokens / max(gen_s, 1e-9), 1),
        "weight_push_s": round(push_s, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("leg", choices=["model", "hf", "vllm"])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--max-new", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()
    if args.leg == "model":
        from envkit.trainer.tiny_model import make_tiny_model

        make_tiny_model(args.work / "model", hidden=args.hidden, layers=args.layers, seed=0)
        return
    out = (
        hf_leg(args.work, args.steps, args.max_new)
        if args.leg == "hf"
        else vllm_leg(args.work, args.max_new)
    )
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
