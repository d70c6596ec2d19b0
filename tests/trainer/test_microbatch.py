"""Micro-batching (``batching_strategy``): the planner, the packed layout, and one real
``_update`` on a tiny random-init model showing that static, dynamic and sequence packing give
the same loss and gradients (the loss is normalised by the step's token count).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from envkit.gym.rollout import Rollout  # noqa: E402
from envkit.trainer.advantages import compute_advantages  # noqa: E402
from envkit.trainer.batch import build_microbatch  # noqa: E402
from envkit.trainer.config import BatchingSettings, grpo_config  # noqa: E402
from envkit.trainer.grpo import TrainOptions, _build_run, _update  # noqa: E402
from envkit.trainer.microbatch import MicroBatchPlan, plan_microbatches  # noqa: E402
from envkit.trainer.policy import load_policy, token_logprobs  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

# peft reads transformers' deprecated `is_gradient_checkpointing` alias
LORA_WARNING = "ignore:`is_gradient_checkpointing` is deprecated:FutureWarning"


def _rows(plans):
    return [[list(row) for row in p.rows] for p in plans]


def test_static_keeps_order_and_pads_each_microbatch_to_its_own_longest():
    plans = plan_microbatches([5, 9, 3, 4, 7], BatchingSettings("static"), micro_batch_size=2)
    assert _rows(plans) == [[[0], [1]], [[2], [3]], [[4]]]
    assert [p.width for p in plans] == [9, 4, 7]


def test_dynamic_sorts_buckets_and_fills_to_the_token_budget():
    settings = BatchingSettings("dynamic", mb_tokens=64, sequence_length_round=16)
    lengths = [10, 40, 12, 33, 70, 15, 9]
    plans = plan_microbatches(lengths, settings, micro_batch_size=1)
    # 70 -> 80 > 64: alone; 40 and 33 bucket to 48, one per batch; the rest bucket to 16
    assert _rows(plans) == [[[4]], [[1]], [[3]], [[5], [2], [0], [6]]]
    assert [p.width for p in plans] == [80, 48, 48, 16]
    assert all(len(p.rows) * p.width <= 64 for p in plans[1:])


def test_packing_is_first_fit_decreasing_with_long_rollouts_alone():
    settings = BatchingSettings("sequence_packing", mb_tokens=20)
    plans = plan_microbatches([8, 25, 12, 5, 7, 3], settings, micro_batch_size=1)
    assert _rows(plans) == [[[1]], [[2, 0]], [[4, 3, 5]]]
    assert [p.width for p in plans] == [25, 20, 15]
    assert all(p.packed and len(p.rows) == 1 for p in plans)


def test_packed_row_restarts_positions_and_keeps_loss_columns_per_rollout():
    a = Rollout(0, (5, 6), (7, 8), (-0.1, -0.2), 1.0, False)
    b = Rollout(0, (9, 10, 11), (12,), (-0.3,), 0.0, True)
    plan = MicroBatchPlan(((0, 1),), width=8, packed=True)
    mb = build_microbatch([a, b], torch.tensor([0.5, -0.5]), plan, 0, overlong_filtering=False)
    assert mb.input_ids.tolist() == [[5, 6, 7, 8, 9, 10, 11, 12]]
    assert mb.position_ids.tolist() == [[0, 1, 2, 3, 0, 1, 2, 3]]
    assert mb.attention_mask is None
    # column t scores token t + 1: a's completion at columns 1-2, b's at column 6
    assert mb.loss_mask.tolist() == [[0, 1, 1, 0, 0, 0, 1]]
    assert mb.advantages.tolist() == [[0, 0.5, 0.5, 0, 0, 0, -0.5]]
    assert mb.generation_logprobs[0, 6].item() == pytest.approx(-0.3)
    filtered = build_microbatch([a, b], torch.zeros(2), plan, 0, overlong_filtering=True)
    assert filtered.loss_mask.tolist() == [[0, 1, 1, 0, 0, 0, 0]]  # b hit the cap


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0)


def _rollouts():
    """Rollouts of varied prompt/completion lengths; one truncated, two groups."""
    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(8):
        n_prompt = int(torch.randint(3, 12, (1,), generator=g))
        n_completion = int(torch.randint(1, 20, (1,), generator=g))
        prompt = torch.randint(5, 100, (n_prompt,), generator=g).tolist()
        completion = torch.randint(5, 100, (n_completion,), generator=g).tolist()
        logprobs = (-4 * torch.rand(n_completion, generator=g)).tolist()
        out.append(
            Rollout(i // 4, tuple(prompt), tuple(completion), tuple(logprobs), i % 3, i == 5)
        )
    return out


def test_packed_logprobs_equal_unpacked(model_dir):
    policy = load_policy(model_dir, grpo_config({"training": {"type": "grpo"}}))
    rollouts = _rollouts()[:3]
    width = sum(len(r.prompt_ids) + len(r.completion_ids) for r in rollouts)
    plan = MicroBatchPlan(((0, 1, 2),), width, packed=True)
    mb = build_microbatch(rollouts, torch.zeros(3), plan, 0, overlong_filtering=False)
    with torch.no_grad():
        packed = token_logprobs(policy.model, mb.input_ids, None, 1.0, mb.position_ids)[0]
        offset = 0
        for r in rollouts:
            ids = torch.tensor([[*r.prompt_ids, *r.completion_ids]])
            alone = token_logprobs(policy.model, ids, torch.ones_like(ids), 1.0)[0]
            n = ids.shape[1]
            torch.testing.assert_close(packed[offset : offset + n - 1], alone)
            offset += n


class _NoSource:
    def refresh(self, policy):
        pass


def _one_update(model_dir, tmp_path, **training):
    """Loss metrics, gradients and the activation elements autograd kept for backward, after
    one real ``_update`` on the fixed rollouts."""
    job = {
        "type": "grpo",
        "learning_rate": 1e-3,
        "ref_policy_kl_penalty": 0.1,
        "overlong_filtering": True,
        "use_importance_sampling_correction": True,
        **training,
    }
    cfg = grpo_config({"training": job})
    torch.manual_seed(0)  # LoRA's A init draws from the global RNG
    policy = load_policy(model_dir, cfg)
    run, _ = _build_run(cfg, policy, _NoSource(), [{}] * 8, TrainOptions(tmp_path))
    rollouts = _rollouts()
    advantages = compute_advantages(
        torch.tensor([r.group for r in rollouts]),
        torch.tensor([r.reward for r in rollouts], dtype=torch.float32),
        leave_one_out=True,
        normalize=True,
    )
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t.numel()) or t, _same):
        metrics = _update(run, rollouts, advantages)
    grads = {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}
    return metrics, grads, sum(saved)


def _same(tensor):
    return tensor


STRATEGIES = {
    "static": {"batching_strategy": "static", "micro_batch_size": 3},
    "dynamic": {"batching_strategy": "dynamic", "train_mb_tokens": 64, "sequence_length_round": 8},
    "sequence_packing": {"batching_strategy": "sequence_packing", "train_mb_tokens": 40},
}


def test_strategies_give_the_same_loss_and_gradients(model_dir, tmp_path):
    whole, whole_grads, _ = _one_update(
        model_dir, tmp_path, batching_strategy="static", micro_batch_size=8
    )
    assert whole["num_microbatches"] == 1
    seen = {}
    for name, training in STRATEGIES.items():
        seen[name], grads, _ = _one_update(model_dir, tmp_path, **training)
        assert seen[name]["loss"] == pytest.approx(whole["loss"], rel=1e-5, abs=1e-8), name
        assert seen[name]["grad_norm"] == pytest.approx(whole["grad_norm"], rel=1e-5), name
        assert grads.keys() == whole_grads.keys()
        for key, grad in grads.items():
            torch.testing.assert_close(grad, whole_grads[key], rtol=1e-5, atol=1e-7)
    # the layout differs, and the step metrics show it
    assert seen["static"]["num_microbatches"] == 3  # ceil(8 / 3)
    assert seen["dynamic"]["num_microbatches"] > 1
    assert seen["sequence_packing"]["num_microbatches"] > 1
    assert seen["sequence_packing"]["padding_fraction"] == 0.0
    assert 0.0 < seen["dynamic"]["padding_fraction"] < whole["padding_fraction"]


@pytest.mark.parametrize(
    "training",
    [
        {},
        pytest.param(
            {"finetuning_type": "lora", "lora": {"rank": 4, "alpha": 8}},
            marks=pytest.mark.filterwarnings(LORA_WARNING),
            id="lora",
        ),
    ],
    ids=["all_weights", "lora"],
)
def test_activation_checkpointing_recomputes_and_keeps_the_gradients(model_dir, tmp_path, training):
    packing = {"batching_strategy": "sequence_packing", "train_mb_tokens": 1000, **training}
    plain, plain_grads, plain_saved = _one_update(model_dir, tmp_path, **packing)
    ckpt, ckpt_grads, ckpt_saved = _one_update(
        model_dir, tmp_path, activation_checkpointing=True, **packing
    )
    assert ckpt_grads  # it trains: gradients reach the trainable weights
    assert ckpt_grads.keys() == plain_grads.keys()
    for key, grad in ckpt_grads.items():
        torch.testing.assert_close(grad, plain_grads[key], rtol=1e-5, atol=1e-7)
    assert ckpt["loss"] == pytest.approx(plain["loss"], rel=1e-6)
    # the decoder layers' activations are recomputed in backward instead of kept
    assert ckpt_saved < plain_saved / 2
