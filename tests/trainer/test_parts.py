from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from envkit.gym.rollout import Rollout  # noqa: E402
from envkit.trainer.batch import build_microbatch  # noqa: E402
from envkit.trainer.checkpoint import Checkpoint, prune  # noqa: E402
from envkit.trainer.config import ConfigError, GrpoConfig, grpo_config  # noqa: E402
from envkit.trainer.microbatch import MicroBatchPlan  # noqa: E402
from envkit.trainer.policy import lora_config  # noqa: E402
from envkit.trainer.sampler import PromptSampler, SamplerState  # noqa: E402
from envkit.trainer.sources.local import row_messages  # noqa: E402


def test_config_defaults_follow_the_seed():
    cfg = grpo_config({"training": {"type": "grpo"}})
    assert cfg.training.num_generations_per_prompt == 8
    assert cfg.training.temperature == 1.0
    assert cfg.training.max_rollout_turns == 1
    assert cfg.loss.ref_policy_kl_penalty == 0.0
    assert cfg.training.overlong_filtering is False
    assert cfg.training.val_at_start is False
    assert cfg.training.finetuning_type == "all_weights"
    assert cfg.lora.rank == 16
    assert cfg.lora.alpha == 32


def test_config_reads_loss_and_lora_fields():
    cfg = grpo_config(
        {
            "training": {
                "type": "grpo",
                "batch_size": 16,
                "num_generations_per_prompt": 4,
                "ratio_clip_c": 10.0,
                "ratio_clip_max": 0.28,
                "truncated_importance_sampling_type": "tis",
                "finetuning_type": "lora",
                "lora": {"rank": 8, "target_modules": ["q_proj"]},
                "epochs": 2,
            }
        }
    )
    assert cfg.prompts_per_step == 4
    assert cfg.loss.ratio_clip_c == 10.0
    assert cfg.loss.ratio_clip_max == 0.28
    assert cfg.lora.target_modules == ("q_proj",)
    assert cfg.total_steps(10) == 6  # 2 epochs x ceil(10 / 4) steps, as the platform counts
    assert (
        grpo_config({"training": {"type": "grpo", "max_steps": 3, "epochs": 5}}).total_steps(1000)
        == 3
    )


@pytest.mark.parametrize(
    ("training", "match"),
    [
        ({"temperature": 0}, "temperature"),
        ({"finetuning_type": "lora_merged"}, "finetuning_type"),
        ({"lora": [1]}, "lora"),
    ],
)
def test_config_errors_name_the_key(training, match):
    with pytest.raises(ConfigError, match=match):
        grpo_config({"training": {"type": "grpo", **training}})
    with pytest.raises(ConfigError, match="training"):
        grpo_config({})
    with pytest.raises(ConfigError, match=r"training\.type"):
        grpo_config({"training": {"temperature": 1.0}})


def test_config_trusts_the_validated_job():
    # the job's rules (EK601, the leave-one-out G >= 2 of EK612) are the validator's alone:
    # the config reads the block and does not check them a second time
    cfg = grpo_config({"training": {"type": "grpo", "num_generations_per_prompt": 1,
                                    "lora": {"rank": 4}}})
    assert cfg.training.num_generations_per_prompt == 1
    assert not hasattr(GrpoConfig, "__getattr__")


def test_sampler_is_a_cursor_over_the_file_order():
    rows = [{"i": i} for i in range(5)]
    a = PromptSampler(rows)
    first = [i for i, _ in a.take(3)]
    rest = [i for i, _ in a.take(4)]  # crosses into epoch 1
    assert sorted(first + rest[:2]) == list(range(5))
    assert a.state == SamplerState(1, 2)
    b = PromptSampler(rows, state=SamplerState(0, 3))
    assert [i for i, _ in b.take(4)] == rest
    with pytest.raises(ValueError, match="no training rows"):
        PromptSampler([])


def test_batch_aligns_completion_with_logprob_columns():
    r1 = Rollout(0, (5, 6), (7, 8, 9), (-0.1, -0.2, -0.3), 1.0, False)
    r2 = Rollout(0, (5, 6, 6), (7,), (-0.5,), 0.0, True)
    plan = MicroBatchPlan(((0,), (1,)), width=5)
    b = build_microbatch([r1, r2], torch.zeros(2), plan, 0, overlong_filtering=False)
    assert b.input_ids.tolist() == [[5, 6, 7, 8, 9], [5, 6, 6, 7, 0]]
    # column t scores token t + 1: completion of r1 starts at column 1
    assert b.loss_mask.tolist() == [[0, 1, 1, 1], [0, 0, 1, 0]]
    assert b.generation_logprobs[0].tolist() == pytest.approx([0.0, -0.1, -0.2, -0.3])


def test_row_messages_accepts_string_and_message_list():
    assert row_messages({"responses_create_params": {"input": "hi"}}) == [
        {"role": "user", "content": "hi"}
    ]
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert row_messages({"responses_create_params": {"input": msgs}}) == msgs
    with pytest.raises(ValueError, match="responses_create_params"):
        row_messages({})


def test_lora_module_selection_is_either_or():
    from envkit.trainer.config import LoraSettings

    assert lora_config(LoraSettings()).target_modules == "all-linear"
    assert lora_config(LoraSettings(target_modules=("q_proj",))).target_modules == {"q_proj"}
    only_exclude = lora_config(LoraSettings(exclude_modules=("v_proj",)))
    # exclude alone does NOT mean "all linear except": peft's per-architecture default applies
    assert only_exclude.target_modules is None
    assert only_exclude.exclude_modules == {"v_proj"}


def test_prune_keeps_top_k_and_latest(tmp_path):
    import json

    for step, metric in [(1, 0.9), (2, 0.1), (3, 0.5), (4, 0.2)]:
        d = tmp_path / f"step_{step:06d}"
        d.mkdir()
        (d / "meta.json").write_text(json.dumps({"step": step, "metric": metric}))
    removed = prune(tmp_path, keep_top_k=1)
    assert sorted(p.name for p in removed) == ["step_000002", "step_000003"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_000001", "step_000004"]
    assert isinstance(Checkpoint(1, tmp_path, None), Checkpoint)
