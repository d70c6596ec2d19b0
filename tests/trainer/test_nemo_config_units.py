"""NeMo-RL / platform semantics of a GRPO step, each against values worked out by hand.

The LR schedule as the platform compiles it, the optimizer, ``rollouts // batch_size`` updates
per step each normalised by its own tokens, dynamic sampling per sample, reward scaling and
shaping, advantage clipping and the pct metrics in percent of samples.
"""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

from envkit.gym.rollout import Rollout  # noqa: E402
from envkit.trainer import grpo as grpo_mod  # noqa: E402
from envkit.trainer.advantages import (  # noqa: E402
    clip_advantages,
    group_stats,
    scale_rewards,
    shape_rewards,
)
from envkit.trainer.config import grpo_config  # noqa: E402
from envkit.trainer.dynamic_sampling import (  # noqa: E402
    DynamicSamplingError,
    sample_step,
    train_metrics,
)
from envkit.trainer.optim import lr_at, make_optimizer, make_scheduler  # noqa: E402


def cfg_of(**training):
    return grpo_config({"training": {"type": "grpo", **training}})


# -- LR schedule -------------------------------------------------------------------------------


def lrs(total, **training):
    cfg = cfg_of(learning_rate=1.0, **training)
    return [
        lr_at(
            s,
            lr=1.0,
            min_lr=cfg.training.min_learning_rate,
            warmup=cfg.training.warmup_steps,
            total=total,
            flat=(cfg.training.optimizer_type or "").endswith("flat_lr"),
        )
        for s in range(total)
    ]


C = 0.5 * (1 + math.cos(math.pi / 4))  # 0.8536: a quarter of the way down a cosine


def test_lr_cosine_default_warmup_0_decays_to_0():
    # warmup 0 is scheduled as 1 step from lr * 1e-5, then cosine over total - 1 = 4 steps
    assert lrs(5) == pytest.approx([1e-5, 1.0, C, 0.5, 1 - C])


def test_lr_cosine_warmup_and_min_lr():
    # start factor max(0.1 / 1, 1e-5) = 0.1; warmup 2: 0.1, 0.55; cosine 1 -> 0.1 over 4 steps
    expected = [0.1, 0.55, 1.0, 0.1 + 0.9 * C, 0.55, 0.1 + 0.9 * (1 - C)]
    assert lrs(6, warmup_steps=2, min_learning_rate=0.1) == pytest.approx(expected)


def test_lr_min_lr_set_warmup_0():
    assert lrs(3, min_learning_rate=0.2) == pytest.approx([0.2, 1.0, 0.6])


@pytest.mark.parametrize("kind", ["adamw_with_flat_lr", "adam_with_flat_lr"])
def test_lr_flat(kind):
    assert lrs(4, optimizer_type=kind, warmup_steps=3, min_learning_rate=0.5) == [1.0] * 4


@pytest.mark.parametrize(("warmup", "share", "total"), [(0, None, 7), (3, 0.05, 9), (1, 0.5, 4)])
def test_lr_matches_torch_sequential_schedule(warmup, share, total):
    """The closed form equals the torch schedulers the platform compiles (LinearLR, then
    CosineAnnealingLR in SequentialLR, milestone max(warmup, 1))."""
    lr, w = 2e-4, max(warmup, 1)
    min_lr = None if share is None else share * lr
    floor = min_lr or 0.0
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    sched = torch.optim.lr_scheduler.SequentialLR(
        opt,
        [
            torch.optim.lr_scheduler.LinearLR(opt, max(floor / lr, 1e-5), 1.0, total_iters=w),
            torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(total - w, 1), eta_min=floor),
        ],
        milestones=[w],
    )
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own deprecation note inside SequentialLR
        for _ in range(total):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
    ours = [lr_at(s, lr=lr, min_lr=min_lr, warmup=warmup, total=total) for s in range(total)]
    assert ours == pytest.approx(seen, rel=1e-6, abs=1e-12)


def test_optimizer_and_scheduler_from_the_job():
    params = [torch.nn.Parameter(torch.zeros(2))]
    adamw = make_optimizer(params, cfg_of(adam_beta1=0.8, adam_beta2=0.95, weight_decay=0.1))
    assert type(adamw) is torch.optim.AdamW
    group = adamw.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (
        1e-4,
        (0.8, 0.95),
        1e-5,
        0.1,
    )
    adam = make_optimizer(params, cfg_of(optimizer_type="adam_with_cosine_annealing"))
    assert type(adam) is torch.optim.Adam
    assert adam.param_groups[0]["weight_decay"] == 0.01  # still passed, as the compiler does
    cfg = cfg_of(learning_rate=1.0, warmup_steps=2)
    opt = make_optimizer(params, cfg)
    sched = make_scheduler(opt, cfg, total_steps=6)
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-5)  # start factor max(0, 1e-5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-5 + (1 - 1e-5) / 2)


def test_steps_follow_the_platform_compile():
    cfg = cfg_of(batch_size=8, num_generations_per_prompt=4, epochs=3)
    assert cfg.prompts_per_step == 2
    assert cfg.steps_per_epoch(5) == 3  # ceil(5 / 2)
    assert cfg.total_steps(5) == 9
    assert cfg_of(batch_size=8, num_generations_per_prompt=4, max_steps=4).total_steps(5) == 3
    assert cfg.optimizer_steps_per_step == 1
    many = cfg_of(batch_size=4, num_generations_per_prompt=4, num_prompts_per_step=3)
    assert many.optimizer_steps_per_step == 3  # 12 rollouts // 4
    assert cfg.seed == 42
    assert cfg.max_new_tokens == 2048
    # val_check_interval: <= 1 a fraction of the epoch, above a step count, capped below total
    assert cfg_of(batch_size=8, num_generations_per_prompt=4).val_period(10) == 5  # an epoch
    assert (
        cfg_of(batch_size=8, num_generations_per_prompt=4, val_check_interval=0.5).val_period(10)
        == 2
    )
    assert (
        cfg_of(batch_size=8, num_generations_per_prompt=4, val_check_interval=3).val_period(10) == 3
    )


# -- k optimizer steps per GRPO step -----------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    pytest.importorskip("transformers")
    from envkit.trainer.policy import load_policy
    from envkit.trainer.tiny_model import make_tiny_model

    model = make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)
    cfg = cfg_of(batch_size=2, num_generations_per_prompt=2, micro_batch_size=1)
    return cfg, load_policy(model, cfg)


def _rollout(group, completion, reward):
    return Rollout(
        group, (5, 6), tuple(range(7, 7 + completion)), (-1.0,) * completion, reward, False
    )


def test_k_updates_each_normalised_by_its_own_tokens(tiny_policy, monkeypatch):
    cfg, policy = tiny_policy
    optimizer = make_optimizer(policy.model.parameters(), cfg)
    scheduler = make_scheduler(optimizer, cfg, total_steps=10)
    run = grpo_mod._Run(cfg, policy, None, None, optimizer, scheduler, None, None)
    seen_tokens: list[float] = []
    real_loss = grpo_mod.grpo_loss

    def spy(*args, global_tokens=None, **kw):
        seen_tokens.append(global_tokens)
        return real_loss(*args, global_tokens=global_tokens, **kw)

    steps: list[int] = []
    monkeypatch.setattr(grpo_mod, "grpo_loss", spy)
    optimizer.register_step_post_hook(lambda *_: steps.append(1))
    # 4 rollouts, batch_size 2: two updates over 3 + 1 = 4 and 5 + 1 = 6 completion tokens
    rollouts = [_rollout(0, 3, 1.0), _rollout(0, 1, 0.0), _rollout(1, 5, 1.0), _rollout(1, 1, 0.0)]
    out = grpo_mod._update(run, rollouts, torch.tensor([1.0, -1.0, 1.0, -1.0]))
    assert seen_tokens == [4.0, 6.0]  # dynamic batching: one micro-batch per update
    assert len(steps) == 2
    assert out["optimizer_steps"] == 2.0
    assert scheduler.last_epoch == 1  # the scheduler steps once per GRPO step


# -- dynamic sampling --------------------------------------------------------------------------


def fake_generate(batches, calls):
    """Each call returns the next batch's groups of rewards as rollouts, grouped from first."""

    def generate(num_prompts, first_group):
        calls.append(num_prompts)
        groups = batches[len(calls) - 1]
        assert len(groups) == num_prompts
        return [
            _rollout(first_group + g, 1, r) for g, rewards in enumerate(groups) for r in rewards
        ]

    return generate


DS = {"use_dynamic_sampling": True, "batch_size": 8, "num_generations_per_prompt": 4}


def test_dynamic_sampling_keeps_samples_fills_by_count_and_floors_the_multiplier():
    cfg = cfg_of(**DS, batch_multiplier=1.7)  # 2 prompts x 1.7 = 3.4 -> 3 per batch
    calls: list[int] = []
    batches = [
        [[1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]],  # keeps samples 1..3 of group 0 only
        [[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 0]],  # +4 (7), then +4 (11) -> cut at 8
    ]
    got = sample_step(cfg, fake_generate(batches, calls))
    assert calls == [3, 3]
    assert (got.gen_batches, got.discarded, len(got.rollouts)) == (2, 3, 8)
    assert [r.group for r in got.rollouts] == [0, 0, 0, 3, 3, 3, 3, 5]
    assert got.rewards.tolist() == [0, 0, 0, 1, 1, 0, 0, 1]
    # advantages are recomputed on the kept batch: group 0 is now all zeros, group 5 a single
    adv = grpo_mod.compute_advantages(
        torch.tensor([r.group for r in got.rollouts]), got.rewards, normalize=True
    )
    lead = (2 / 3) / (math.sqrt(1 / 3) + 1e-6)
    assert adv.tolist() == pytest.approx([0, 0, 0, lead, lead, -lead, -lead, 0], rel=1e-5)
    metrics = train_metrics(got, adv)
    assert metrics["train_reward"] == pytest.approx(9 / 24)  # over all 24 generated samples
    assert metrics["train_filtered_reward"] == pytest.approx(3 / 8)


def test_dynamic_sampling_allows_max_gen_batches_plus_one():
    cfg = cfg_of(**DS, dynamic_sampling_max_gen_batches=2)
    flat = [[0, 0, 0, 0], [1, 1, 1, 1]]
    calls: list[int] = []
    with pytest.raises(DynamicSamplingError, match="3 generation batches"):
        sample_step(cfg, fake_generate([flat, flat, flat], calls))
    assert len(calls) == 3  # NeMo-RL fails only once the batch count exceeds the maximum
    calls.clear()
    mixed = [[1, 1, 0, 0], [0, 1, 0, 1]]
    got = sample_step(cfg, fake_generate([flat, flat, mixed], calls))
    assert got.gen_batches == 3


def test_no_dynamic_sampling_trains_the_whole_batch():
    cfg = cfg_of(batch_size=8, num_generations_per_prompt=4)
    got = sample_step(cfg, fake_generate([[[1, 0, 0, 0], [1, 1, 1, 1]]], []))
    assert len(got.rollouts) == 8
    metrics = train_metrics(got, torch.zeros(8))
    # leave-one-out baselines: [0, 1/3, 1/3, 1/3] and [1, 1, 1, 1] -> 1 of 8 at 0, 4 at 1
    assert metrics["train_baseline_reward/pct_0"] == pytest.approx(12.5)
    assert metrics["train_baseline_reward/pct_1"] == pytest.approx(50.0)
    assert metrics["train_baseline_reward/pct_mixed"] == pytest.approx(37.5)
    assert "train_filtered_reward" not in metrics


# -- rewards and advantages --------------------------------------------------------------------


def test_reward_scaling_by_hand():
    cfg = cfg_of(reward_scaling={"target_min": -1.0})
    out = scale_rewards(torch.tensor([-1.0, 0.0, 0.5, 2.0]), cfg.training.reward_scaling)
    assert out.tolist() == [-1.0, -1.0, 0.0, 1.0]  # clamped to [0, 1], mapped onto [-1, 1]
    assert scale_rewards(torch.tensor([3.0]), None).tolist() == [3.0]


def test_reward_shaping_by_hand():
    stop = cfg_of(reward_shaping={"stop_properly_penalty_coef": 0.5}).training.reward_shaping
    out = shape_rewards(torch.tensor([1.0, 1.0]), torch.tensor([3, 3]), torch.tensor([1, 0]), stop)
    assert out.tolist() == [0.5, 1.0]
    trio = {"overlong_buffer_length": 4, "overlong_buffer_penalty": 1.0, "max_response_length": 10}
    over = cfg_of(reward_shaping=trio).training.reward_shaping
    lengths = torch.tensor([5, 6, 8, 10, 12])  # 6 tokens are free; the next 4 ramp the penalty
    shaped = shape_rewards(torch.ones(5), lengths, torch.zeros(5), over)
    assert shaped.tolist() == pytest.approx([1.0, 1.0, 0.5, 0.0, -0.5])


def test_advantage_clipping_by_hand():
    adv = torch.tensor([-3.0, -0.5, 0.5, 3.0])
    assert clip_advantages(adv, -1.0, 2.0).tolist() == [-1.0, -0.5, 0.5, 2.0]
    assert clip_advantages(adv, None, 2.0).tolist() == [-3.0, -0.5, 0.5, 2.0]
    assert clip_advantages(adv, None, None).tolist() == adv.tolist()


def test_pct_metrics_are_percent_of_samples():
    stats = group_stats(torch.tensor([0.0, 1 / 3, 1 / 3, 1 / 3]))
    assert (stats.pct_0, stats.pct_1, stats.pct_mixed) == pytest.approx((25.0, 0.0, 75.0))


# -- envkit train --print-config ---------------------------------------------------------------


def _print_config_job(tmp_path, **training):
    import json

    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "training.jsonl").write_text('{"responses_create_params": {"input": "hi"}}\n' * 9)
    job = tmp_path / "job.json"
    block = {"type": "grpo", "batch_size": 8, "num_generations_per_prompt": 4, **training}
    doc = {"model": "m", "dataset": "d", "environment": "e", "training": block}
    job.write_text(json.dumps(doc))
    return job, data


def test_print_config_cli(tmp_path, capsys):
    import json

    from envkit.cli import main

    job, data = _print_config_job(tmp_path, top_k=5)
    argv = ["train", str(job), "--print-config", "--dataset", str(data)]
    assert main([*argv, "--output-format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["train_rows"] == 9
    config = report["config"]
    assert config["grpo"]["max_num_steps"] == 5  # ceil(9 / 2) x 1 epoch
    assert config["policy"]["scheduler"][1]["kwargs"] == {"T_max": 4, "eta_min": 0.0}
    assert config["data"]["shuffle"] is False
    keys = [note["key"] for note in report["cannot_apply_here"]]
    assert "policy.generation.vllm_cfg" in keys
    assert config["policy"]["generation"]["top_k"] == 5  # applied here, as the platform does
    assert not [key for key in keys if "top_k" in key]
    job, _ = _print_config_job(tmp_path, top_k=5, top_p=0.9)
    assert main(argv) == 1
    assert "EK610 `training.top_p`" in capsys.readouterr().err


def test_print_config_without_a_dataset_is_a_usage_error(tmp_path, capsys):
    from envkit.cli import main

    job, _ = _print_config_job(tmp_path)
    assert main(["train", str(job), "--print-config"]) == 2
    assert "--dataset" in capsys.readouterr().err


def test_print_config_human_is_the_config_as_yaml(tmp_path, capsys):
    import json

    import yaml

    from envkit.cli import main

    job, data = _print_config_job(tmp_path)
    argv = ["train", str(job), "--print-config", "--dataset", str(data)]
    assert main([*argv, "--output-format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert main([*argv, "--output-format", "human"]) == 0
    text = capsys.readouterr().out
    assert not text.lstrip().startswith("{")
    assert yaml.safe_load(text) == report["config"]  # the notes are comments
    assert "#   policy.generation.vllm_cfg: " in text
