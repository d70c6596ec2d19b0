"""The legs of ``benchmarks/gpu_check.sh``; each prints one JSON line of measurements.

Both train the same GRPO job with envkit's trainer on the machine's own torch (the GPU when
there is one, else the CPU): a random-init Llama with a character tokenizer, a Python reward
(the char_pattern formula), no Gym, no network. They differ in what generates:

``hf``: the policy module itself (HF ``generate``, the local rollout source).
``vllm``: envkit's vLLM backend (``--backend vllm``'s engine) colocated with the trainer on the
same device: it samples, sleeps while the trainer trains (where the backend can), and after every
optimizer step is refit as a real run refits it (wake, load, the probe prompt checked). Only
where ``import vllm`` works.

Each reports the median step time, generated tokens/s (per GPU: one device does everything) and
the first and last step's reward.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROMPT = "Write the character a 8 times."
PROMPTS_PER_STEP = 8
GENERATIONS = 8


def _reward(row: dict, text: str) -> float:
    return sum(ch == "a" for ch in text) / max(len(text), 8, 1)


def _job(steps: int, max_new: int) -> dict[str, Any]:
    return {
        "type": "grpo", "num_generations_per_prompt": GENERATIONS,
        "batch_size": PROMPTS_PER_STEP * GENERATIONS, "num_prompts_per_step": PROMPTS_PER_STEP,
        "learning_rate": 3e-3, "weight_decay": 0.0, "optimizer_type": "adamw_with_flat_lr",
        "max_new_tokens": max_new, "max_seq_length": 256,
        "micro_batch_size": PROMPTS_PER_STEP * GENERATIONS, "max_steps": steps, "seed": 1,
    }  # fmt: skip


class BackendSource:
    """A rollout source over a :class:`GenerationBackend` and a Python reward: what the Gym
    source does with the policy endpoint, without Gym. ``refresh`` refits the engine as a real
    run does (wake, load, probe check: ``trainer/generation/refit.py``); ``sleep`` frees the
    device while the trainer trains, where the backend can sleep (vLLM colocated)."""

    def __init__(self, backend: Any, temperature: float, max_new_tokens: int) -> None:
        self.backend = backend
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens

    def start(self) -> None:
        """The engine is up once constructed."""

    def restart(self) -> None:
        """Nothing to restart: the engine is in this process."""

    def close(self) -> None:
        self.backend.close()

    def sleep(self) -> None:
        sleep = getattr(self.backend, "sleep", None)
        if sleep is not None:
            sleep()

    def refresh(self, policy: Any) -> dict[str, float]:
        from envkit.trainer.generation.refit import refit_check
        from envkit.trainer.policy import generation_weights

        return self.load_weights(generation_weights(policy), refit_check(policy, self.backend))

    def load_weights(self, state: dict[str, Any], check: Any = None) -> dict[str, float]:
        from envkit.trainer.generation.refit import refit_engine

        return refit_engine(self.backend, state, check)

    def rollouts(self, rows: Sequence[dict[str, Any]], num_generations: int, *,
                 first_group: int = 0, seed: int | None = None) -> list[Any]:
        from envkit.gym import Rollout
        from envkit.policy_server.generation import SamplingParams
        from envkit.trainer.sources.local import row_messages

        params = SamplingParams(n=num_generations, temperature=self.temperature,
                                max_tokens=self.max_new_tokens, seed=seed)
        outputs = self.backend.generate([row_messages(r) for r in rows], params)
        return [
            Rollout(first_group + i, out.prompt_token_ids, c.token_ids, c.logprobs,
                    float(_reward(rows[i], c.text)), c.finish_reason == "length")
            for i, out in enumerate(outputs) for c in out.completions
        ]


def _grpo(work: Path, steps: int, max_new: int, source_for: Any, name: str) -> dict[str, Any]:
    """``steps`` GRPO steps with the source ``source_for(policy, cfg)``; the leg's figures."""
    import torch

    from envkit.trainer.config import grpo_config
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.metrics import read_metrics
    from envkit.trainer.policy import load_policy

    cfg = grpo_config({"training": _job(steps, max_new)})
    policy = load_policy(work / "model", cfg)
    source = source_for(policy, cfg)
    rows = [{"responses_create_params": {"input": PROMPT}}] * (PROMPTS_PER_STEP * steps)
    try:
        source.refresh(policy)
        result = train(cfg, policy, source, rows, TrainOptions(work / name, save_period=10_000))
    finally:
        source.close()
    done = [r for r in read_metrics(result.metrics_path) if "train_reward" in r]
    timed = done[1:] or done  # the first step warms caches (and compiles, on a GPU)
    rollouts = PROMPTS_PER_STEP * GENERATIONS
    gen_tokens = sum(r["train_mean_gen_tokens"] * rollouts for r in timed)
    gen_s = sum(r["train_timing/generation"] for r in timed)
    total_s = sum(r["train_timing/total_step_time"] for r in timed)
    out = {
        "leg": name,
        "device": str(next(policy.model.parameters()).device),
        "gpus": torch.cuda.device_count(),
        "torch": torch.__version__,
        "steps": len(done),
        "median_step_s": round(statistics.median(r["train_timing/total_step_time"]
                                                 for r in timed), 3),
        "generation_tokens_per_s_per_gpu": round(gen_tokens / max(gen_s, 1e-9), 1),
        "train_tokens_per_s": round(gen_tokens / max(total_s - gen_s, 1e-9), 1),
        "train_reward_first_last": [round(done[0]["train_reward"], 3),
                                    round(done[-1]["train_reward"], 3)],
        "optimizer_steps_per_step": done[-1]["train_optimizer_steps"],
    }
    if "train_token_mult_prob_error" in done[-1]:
        out["token_mult_prob_error_last"] = round(done[-1]["train_token_mult_prob_error"], 4)
    return out


def hf_leg(work: Path, steps: int, max_new: int) -> dict[str, Any]:
    from envkit.trainer.sources.local import LocalRolloutSource

    def source_for(policy: Any, cfg: Any) -> Any:
        return LocalRolloutSource(policy, _reward, temperature=cfg.training.temperature,
                                  max_new_tokens=max_new)

    return _grpo(work, steps, max_new, source_for, "hf")


def vllm_leg(work: Path, steps: int, max_new: int, gpu_memory_utilization: float
             ) -> dict[str, Any]:
    from envkit.trainer.generation.factory import EngineOptions, make_backend

    def source_for(policy: Any, cfg: Any) -> Any:
        engine = EngineOptions(vllm_gpu_memory_utilization=gpu_memory_utilization)
        return BackendSource(make_backend(work / "model", "vllm", engine),
                             cfg.training.temperature, max_new)

    return {**_grpo(work, steps, max_new, source_for, "vllm"), "colocated": True}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("leg", choices=["model", "hf", "vllm"])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--max-new", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3,
                        help="vLLM's share of the device (the trainer shares it)")
    args = parser.parse_args(argv)
    if args.leg == "model":
        from envkit.trainer.tiny_model import make_tiny_model

        make_tiny_model(args.work / "model", hidden=args.hidden, layers=args.layers, seed=0)
        return
    if args.leg == "hf":
        out = hf_leg(args.work, args.steps, args.max_new)
    else:
        out = vllm_leg(args.work, args.steps, args.max_new, args.gpu_memory_utilization)
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
