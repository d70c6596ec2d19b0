"""envkit's GRPO loop vs TRL's ``GRPOTrainer`` on the same task, model and hyperparameters.

Task: the char_pattern reward (fraction of generated characters equal to ``a``, over at least
8 characters) on prompts "Write the character a 8 times.", a random-init tiny Llama with a
character tokenizer (``envkit.trainer.tiny_model``), 4 prompts x 8 generations per step,
lr 3e-3, 8 new tokens, temperature 1.0, no KL, AdamW without weight decay, CPU.
Both sides generate with HF ``generate`` in-process, so the comparison is the training loop,
not the rollout transport (``envkit train`` through Gym adds the HTTP + agent hop).

    python benchmarks/bench_trl.py --steps 30

Prints reward after K steps, median seconds per step, and the envkit/TRL ratio. Needs the
``train`` and ``bench`` extras (``pip install -e '.[train,bench]'``).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

PROMPT = "Write the character a 8 times."
GENERATIONS = 8
PROMPTS_PER_STEP = 4
LR = 3e-3
MAX_NEW = 8


def char_pattern_reward(text: str, target: str = "a", target_len: int = 8) -> float:
    """Same formula as fixtures/gym_trees/resources_servers/char_pattern/app.py."""
    return sum(ch == target for ch in text) / max(len(text), target_len, 1)


def run_envkit(model_dir: Path, out: Path, steps: int, seed: int) -> tuple[float, float]:
    from envkit.trainer.config import grpo_config
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.metrics import read_metrics
    from envkit.trainer.policy import load_policy
    from envkit.trainer.sources.local import LocalRolloutSource

    cfg = grpo_config({"training": {
        "type": "grpo", "num_generations_per_prompt": GENERATIONS,
        "batch_size": GENERATIONS * PROMPTS_PER_STEP, "learning_rate": LR, "weight_decay": 0.0,
        "max_new_tokens": MAX_NEW, "micro_batch_size": GENERATIONS * PROMPTS_PER_STEP,
        "max_steps": steps, "epochs": 10_000, "seed": seed,
        # TRL's side: constant LR, symmetric clip 0.2, no IS correction (the job's defaults
        # are the platform's: cosine to 0, clip 0.2/0.28, IS correction on)
        "optimizer_type": "adamw_with_flat_lr", "ratio_clip_max": 0.2,
        "use_importance_sampling_correction": False}})
    policy = load_policy(model_dir, cfg)
    source = LocalRolloutSource(policy, lambda row, text: char_pattern_reward(text),
                                temperature=1.0, max_new_tokens=MAX_NEW)
    rows = [{"responses_create_params": {"input": PROMPT}}] * 16
    result = train(cfg, policy, source, rows, TrainOptions(out, save_period=10_000))
    records = read_metrics(result.metrics_path)
    times = [r["train_timing/total_step_time"] for r in records if "train_reward" in r]
    last = [r["train_reward"] for r in records if "train_reward" in r][-3:]
    return sum(last) / len(last), statistics.median(times)


def run_trl(model_dir: Path, out: Path, steps: int, seed: int) -> tuple[float, float]:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            stamps.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kw):
            stamps[-1] = time.perf_counter() - stamps[-1]

    def reward(completions, **kwargs):
        return [char_pattern_reward(c[0]["content"]) for c in completions]

    data = Dataset.from_list([{"prompt": [{"role": "user", "content": PROMPT}]}] * 512)
    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=GENERATIONS * PROMPTS_PER_STEP,
        num_generations=GENERATIONS, max_completion_length=MAX_NEW, learning_rate=LR,
        weight_decay=0.0, beta=0.0, epsilon=0.2, temperature=1.0, top_k=0, top_p=1.0,
        max_steps=steps, logging_steps=1, report_to="none", use_cpu=True, seed=seed,
        lr_scheduler_type="constant", save_strategy="no", max_grad_norm=1.0,
        warmup_steps=0,
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data,
                          processing_class=tok, callbacks=[Clock()])
    trainer.train()
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h][-3:]
    return sum(rewards) / len(rewards), statistics.median(stamps)


def main() -> None:
    from envkit.trainer.tiny_model import make_tiny_model

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = make_tiny_model(Path(tmp) / "model", seed=0)
        ek_reward, ek_step = run_envkit(model, Path(tmp) / "envkit", args.steps, args.seed)
        trl_reward, trl_step = run_trl(model, Path(tmp) / "trl", args.steps, args.seed)
    print(f"{'':8} {'reward@K':>9} {'median s/step':>14}   (K={args.steps}, last-3 mean)")
    print(f"{'envkit':8} {ek_reward:9.3f} {ek_step:14.3f}")
    print(f"{'trl':8} {trl_reward:9.3f} {trl_step:14.3f}")
    print(f"ratio envkit/trl s/step: {ek_step / trl_step:.2f}")


if __name__ == "__main__":
    main()
