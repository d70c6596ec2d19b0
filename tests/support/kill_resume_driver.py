"""A GRPO run in its own process, for the SIGKILL resume test
(tests/trainer/test_checkpoint_kill.py).

Why a separate script: the test must kill a real process mid-run (no in-process
``stop_after``), then resume from what that process left on disk. Local rollout source, the
tiny model, one checkpoint per step. Prints nothing; the metrics file is the result.

    python tests/support/kill_resume_driver.py MODEL_DIR OUT_DIR [--resume] [--stop-after N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: `support`

import torch

from envkit.trainer.grpo import TrainOptions, train
from envkit.trainer.policy import load_policy
from envkit.trainer.sources.local import LocalRolloutSource
from support.grpo_jobs import grpo_cfg

__all__ = ["MAX_STEPS", "ROWS", "main"]

MAX_STEPS = 8
ROWS = [{"responses_create_params": {"input": f"say a {i}"}} for i in range(16)]


def share_of_a(row: dict, text: str) -> float:
    """Fraction of 'a' characters: a dense reward, so losses differ from step to step."""
    return sum(c == "a" for c in text) / max(1, len(text))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--stop-after", type=int)
    args = parser.parse_args()
    torch.set_num_threads(1)  # same kernels in every run: bitwise-comparable losses
    cfg = grpo_cfg(max_steps=MAX_STEPS)
    policy = load_policy(args.model, cfg)
    source = LocalRolloutSource(
        policy, share_of_a, temperature=cfg.training.temperature, max_new_tokens=cfg.max_new_tokens
    )
    opts = TrainOptions(args.out, resume=args.resume, save_period=1, stop_after=args.stop_after)
    train(cfg, policy, source, ROWS, opts)


if __name__ == "__main__":
    main()
