"""GRPO loop end to end with the in-process RolloutSource (HF generation + Python reward).

These train a real random-init model, so they carry the slow marker.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from support.grpo_jobs import grpo_cfg  # noqa: E402

from envkit.gym.rollout import Rollout  # noqa: E402
from envkit.trainer.grpo import (  # noqa: E402
    DynamicSamplingError,
    RolloutFailedError,
    TrainOptions,
    train,
)
from envkit.trainer.metrics import read_metrics  # noqa: E402
from envkit.trainer.policy import load_policy  # noqa: E402
from envkit.trainer.sources.local import LocalRolloutSource  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

pytestmark = pytest.mark.train

ROWS = [{"responses_create_params": {"input": f"say a {i}"}} for i in range(16)]


def share_of_a(row, text):
    """Fraction of 'a' characters: a dense reward a random model starts near 1/128 on."""
    return sum(c == "a" for c in text) / max(1, len(text))


@pytest.fixture(scope="module")
def base_model(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def _cfg(**extra):
    return grpo_cfg(**{"num_generations_per_prompt": 8, "batch_size": 32, **extra})


def _run(base_model, out, cfg, reward=share_of_a, source_wrapper=None, **opts):
    policy = load_policy(base_model, cfg)
    source = LocalRolloutSource(
        policy, reward, temperature=cfg.training.temperature, max_new_tokens=cfg.max_new_tokens
    )
    if source_wrapper is not None:
        source = source_wrapper(source)
    return train(cfg, policy, source, ROWS, TrainOptions(out, **opts), val_rows=ROWS[:4])


def test_local_run_writes_metrics_checkpoints_and_model(base_model, tmp_path):
    """Outputs of a short run; learning itself is shown through real Gym (test_grpo_gym.py)."""
    cfg = _cfg(max_steps=4, val_at_start=True, val_at_end=True, keep_top_k=1)
    result = _run(base_model, tmp_path, cfg, save_period=2)
    records = read_metrics(result.metrics_path)
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert "val_accuracy" in records[0]
    assert "val_accuracy" in records[-1]
    for name in (
        "train_reward",
        "train_baseline_reward/pct_mixed",
        "train_zero_variance_share",
        "train_truncation_rate",
        "train_approx_entropy",
        "train_token_mult_prob_error",
        "train_timing/total_step_time",
        "train_loss",
    ):
        assert name in records[-1]
    # HF sampling and the trainer agree on-policy: the drift metric sits at 1
    assert records[-1]["train_token_mult_prob_error"] == pytest.approx(1.0, abs=1e-3)
    assert (tmp_path / "reward_curve.png").stat().st_size > 0
    assert any((tmp_path / "tensorboard").iterdir())
    assert (result.final_dir / "model.safetensors").exists()
    kept = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert "step_000004" in kept  # the latest is always kept, plus the top-1
    assert len(kept) <= 2
    summary = json.loads((tmp_path / "final_metrics.json").read_text())
    assert summary["step"] == 4


def test_resume_reaches_the_same_loss(base_model, tmp_path):
    cfg = _cfg(max_steps=4)
    full = _run(base_model, tmp_path / "full", cfg, save_period=1)
    _run(base_model, tmp_path / "cut", cfg, save_period=1, stop_after=2)
    resumed = _run(base_model, tmp_path / "cut", cfg, save_period=1, resume=True)
    a = read_metrics(full.metrics_path)
    b = read_metrics(resumed.metrics_path)
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for name in ("train_loss", "train_reward", "train_lr"):
        assert [r[name] for r in b] == pytest.approx([r[name] for r in a], rel=1e-5, abs=1e-7)


class FlakySource:
    """Fails the second generation call once, as a Gym server dying mid-step would."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0
        self.restarts = 0

    def rollouts(self, rows, num_generations, *, first_group=0, seed=None):
        self.calls += 1
        if self.calls == 2:
            msg = "resources server died"
            raise RolloutFailedError(msg)
        return self.inner.rollouts(rows, num_generations, first_group=first_group, seed=seed)

    def refresh(self, policy):
        return self.inner.refresh(policy)

    def sleep(self):
        self.inner.sleep()

    def restart(self):
        self.restarts += 1


def test_failed_rollout_is_retried_without_losing_a_step(base_model, tmp_path):
    cfg = _cfg(max_steps=3)
    clean = _run(base_model, tmp_path / "clean", cfg, save_period=100)
    sources = []

    def wrap(source):
        sources.append(FlakySource(source))
        return sources[-1]

    flaky = _run(base_model, tmp_path / "flaky", cfg, source_wrapper=wrap, save_period=100)
    assert sources[0].restarts == 1
    a, b = read_metrics(clean.metrics_path), read_metrics(flaky.metrics_path)
    assert [r["step"] for r in b] == [1, 2, 3]
    assert [r["train_reward"] for r in b] == pytest.approx([r["train_reward"] for r in a])


class FailsEveryFifthRow:
    """Answers every fifth rollout as failed (a timeout, an error the agent reported)."""

    def __init__(self, inner):
        self.inner = inner
        self.scored: list[float] = []

    def rollouts(self, rows, num_generations, *, first_group=0, seed=None):
        out = self.inner.rollouts(rows, num_generations, first_group=first_group, seed=seed)
        out = [Rollout.failed(r.index, "a", "timed out", {}) if i % 5 == 0
               else replace(r, index=i) for i, r in enumerate(out)]
        out = [replace(r, group=first_group + i // num_generations) for i, r in enumerate(out)]
        self.scored.append(sum(r.reward for r in out if r.ok) / sum(r.ok for r in out))
        return out

    def refresh(self, policy):
        return self.inner.refresh(policy)

    def sleep(self):
        self.inner.sleep()


def test_a_failed_rollout_is_counted_never_scored(base_model, tmp_path):
    wrapped = []

    def wrap(source):
        wrapped.append(FailsEveryFifthRow(source))
        return wrapped[-1]

    result = _run(base_model, tmp_path, _cfg(max_steps=2), source_wrapper=wrap, save_period=100)
    records = read_metrics(result.metrics_path)
    assert [r["train_failed_rollouts"] for r in records] == [7.0, 7.0]  # 32 rollouts per step
    # train_reward is the mean of the 25 scored rollouts, not pulled toward 0 by the failures
    assert [r["train_reward"] for r in records] == pytest.approx(wrapped[0].scored[:2])
    assert all(r["train_optimizer_steps"] == 1.0 for r in records)
    assert records[-1]["val_failed_rollouts"] == 1.0  # 1 of the 4 validation rows
    assert records[-1]["val_accuracy"] == pytest.approx(wrapped[0].scored[2])


def test_dynamic_sampling_gives_up_with_a_clear_error(base_model, tmp_path):
    cfg = _cfg(max_steps=2, use_dynamic_sampling=True, dynamic_sampling_max_gen_batches=2)
    with pytest.raises(DynamicSamplingError, match="dynamic_sampling_max_gen_batches"):
        _run(base_model, tmp_path, cfg, reward=lambda row, text: 1.0)


def test_dynamic_sampling_keeps_only_samples_with_a_spread(base_model, tmp_path):
    cfg = _cfg(max_steps=2, use_dynamic_sampling=True, batch_multiplier=2.0)
    result = _run(base_model, tmp_path, cfg)
    for record in read_metrics(result.metrics_path):
        assert record["train_dynamic_sampling_num_gen_batches"] >= 1
        assert record["train_baseline_reward/pct_mixed"] <= 100.0  # percent of samples


# peft reads transformers' deprecated `is_gradient_checkpointing` alias
@pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")
def test_lora_with_kl_writes_a_peft_adapter(base_model, tmp_path):
    cfg = _cfg(
        max_steps=2,
        finetuning_type="lora",
        lora={"rank": 4, "alpha": 8},
        ref_policy_kl_penalty=0.1,
        keep_top_k=1,
    )
    result = _run(base_model, tmp_path, cfg, save_period=1)
    assert (result.final_dir / "adapter_config.json").exists()
    assert not (result.final_dir / "model.safetensors").exists()
    kept = sorted(p.name for p in (tmp_path / "checkpoints").iterdir())
    assert "step_000002" in kept
    assert len(kept) <= 2
    assert read_metrics(result.metrics_path)[-1]["train_kl_penalty"] >= 0.0


def test_full_weights_kl_uses_frozen_reference(base_model, tmp_path):
    # step 1 runs at the warmup's lr x 1e-5 (the platform's schedule), so the policy has
    # moved measurably only by step 3
    cfg = _cfg(max_steps=3, ref_policy_kl_penalty=0.5)
    result = _run(base_model, tmp_path, cfg)
    last = read_metrics(result.metrics_path)[-1]
    assert last["train_kl_penalty"] > 0.0  # the policy moved away from the reference
