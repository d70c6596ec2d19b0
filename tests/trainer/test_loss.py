from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from envkit.trainer.loss import (  # noqa: E402
    LossConfig,
    clipped_surrogate,
    grpo_loss,
    importance_weights,
    k3_kl,
    kl_weights,
    masked_mean,
)


def test_clipped_surrogate_by_hand():
    cfg = LossConfig(ratio_clip_min=0.2, ratio_clip_max=0.28)
    ratio = torch.tensor([[1.5, 0.5, 0.5]])
    adv = torch.tensor([[1.0, 1.0, -1.0]])
    # A>0, r=1.5: max(-1.5, -1.28); A>0, r=0.5: max(-0.5, -0.8); A<0, r=0.5: max(0.5, 0.8)
    assert clipped_surrogate(ratio, adv, cfg).flatten().tolist() == pytest.approx(
        [-1.28, -0.5, 0.8]
    )


def test_dual_clip_caps_negative_advantage_loss():
    ratio = torch.tensor([[20.0, 20.0]])
    adv = torch.tensor([[-1.0, 1.0]])
    plain = clipped_surrogate(ratio, adv, LossConfig())  # job defaults: clip 0.2 / 0.28
    dual = clipped_surrogate(ratio, adv, LossConfig(ratio_clip_c=3.0))
    assert plain.flatten().tolist() == pytest.approx([20.0, -1.28])
    assert dual.flatten().tolist() == pytest.approx([3.0, -1.28])


def test_k3_kl_by_hand():
    cur = torch.tensor([[0.0, math.log(0.5)]])
    ref = torch.tensor([[math.log(2.0), math.log(0.5)]])
    assert k3_kl(cur, ref).flatten().tolist() == pytest.approx([2 - 1 - math.log(2), 0.0])


def test_kl_term_enters_the_loss():
    z = torch.zeros(1, 2)
    ref = torch.full((1, 2), math.log(2.0))
    mask = torch.ones(1, 2)
    cfg = LossConfig(ref_policy_kl_penalty=0.5)
    out = grpo_loss(z, z, z, torch.zeros(1), mask, cfg, ref_logprobs=ref)
    assert float(out.loss) == pytest.approx(0.5 * (1 - math.log(2)))
    assert out.metrics["kl_penalty"] == pytest.approx(1 - math.log(2))
    with pytest.raises(ValueError, match="ref_logprobs"):
        grpo_loss(z, z, z, torch.zeros(1), mask, cfg)


def test_tis_types_by_hand():
    prev = torch.zeros(1, 3)
    # pi_train / pi_gen = 4, 1.25, 0.5
    gen = torch.tensor([[math.log(0.25), math.log(0.8), math.log(2.0)]])
    base = {"use_importance_sampling_correction": True, "truncated_importance_sampling_ratio": 2.0}

    def weights(**kw):
        return importance_weights(prev, gen, LossConfig(**{**base, **kw})).flatten().tolist()

    assert weights(truncated_importance_sampling_ratio=None) == pytest.approx([4.0, 1.25, 0.5])
    assert weights(truncated_importance_sampling_type="tis") == pytest.approx([2.0, 1.25, 0.5])
    tis_floor = weights(
        truncated_importance_sampling_type="tis", truncated_importance_sampling_ratio_min=0.8
    )
    assert tis_floor == pytest.approx([2.0, 1.25, 0.8])
    icepop = weights(
        truncated_importance_sampling_type="icepop", truncated_importance_sampling_ratio_min=0.8
    )
    assert icepop == pytest.approx([0.0, 1.25, 0.0])
    # seq-mask-tis: geometric mean of the row = (4 x 1.25 x 0.5) ** (1/3) = 2.5 ** (1/3) = 1.357
    seq = {"truncated_importance_sampling_type": "seq-mask-tis"}
    assert weights(**seq, truncated_importance_sampling_ratio_min=0.5) == pytest.approx(
        [4.0, 1.25, 0.5]
    )
    assert weights(
        **seq, truncated_importance_sampling_ratio_min=0.5, truncated_importance_sampling_ratio=1.3
    ) == [0.0, 0.0, 0.0]


def test_is_weights_nan_guard_and_reported_when_off():
    prev = torch.tensor([[0.0, float("nan"), 50_000.0]])
    gen = torch.zeros(1, 3)
    w = importance_weights(prev, gen, LossConfig())
    assert w.flatten().tolist() == [1.0, 0.0, 0.0]  # NaN and inf become 0, as NeMo-RL does
    off = LossConfig(use_importance_sampling_correction=False)
    lp = torch.zeros(1, 2)
    gen2 = torch.tensor([[math.log(0.5), math.log(0.5)]])  # weight 2 on every token
    out = grpo_loss(lp, lp, gen2, torch.tensor([1.0]), torch.ones(1, 2), off)
    assert out.metrics["sampling_importance_ratio"] == pytest.approx(2.0)  # reported, not applied
    assert float(out.loss) == pytest.approx(-1.0)
    on = grpo_loss(lp, lp, gen2, torch.tensor([1.0]), torch.ones(1, 2), LossConfig())
    assert float(on.loss) == pytest.approx(-2.0)


def test_kl_gradient_weights_by_hand():
    """d/dcur of beta * w * k3: exp(ref-cur) - 1 times w, plus k3 times dw/dcur."""
    ref = torch.tensor([[math.log(2.0)]])
    gen = torch.tensor([[math.log(0.5)]])
    mask = torch.ones(1, 1)
    for on_policy, weight, grad in (
        # w = exp(cur - sg(cur)) = 1, dw/dcur = 1: grad = -(2 - 1) + (1 - ln 2) = -ln 2
        (False, 1.0, -math.log(2.0)),
        # w = exp(cur - gen) = 2 at cur = 0, dw/dcur = 2: grad = 2 * (-1) + 2 * (1 - ln 2)
        (True, 2.0, -2 * math.log(2.0)),
    ):
        cur = torch.zeros(1, 1, requires_grad=True)
        w = kl_weights(cur, gen, on_policy=on_policy)
        assert float(w.detach()) == pytest.approx(weight)
        cfg = LossConfig(
            ref_policy_kl_penalty=1.0,
            use_on_policy_kl_approximation=on_policy,
            use_importance_sampling_correction=False,
        )
        out = grpo_loss(cur, cur.detach(), gen, torch.zeros(1), mask, cfg, ref_logprobs=ref)
        out.loss.backward()
        assert float(cur.grad) == pytest.approx(grad, abs=1e-6)
        assert float(out.loss.detach()) == pytest.approx(weight * (1 - math.log(2.0)))


def test_token_level_mean_over_the_whole_batch():
    values = torch.tensor([[4.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    mask = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    # 4 valid tokens: (4 + 3) / 4, not the mean of per-sequence means (4 + 1) / 2
    assert float(masked_mean(values, mask)) == pytest.approx(7 / 4)


def test_micro_batches_with_global_tokens_add_up_to_full_batch():
    cfg = LossConfig()
    curr = torch.tensor([[-1.0, -2.0], [-0.5, -0.1]])
    adv = torch.tensor([1.0, -2.0])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    full = grpo_loss(curr, curr, curr, adv, mask, cfg).loss
    parts = sum(
        grpo_loss(
            curr[i : i + 1],
            curr[i : i + 1],
            curr[i : i + 1],
            adv[i : i + 1],
            mask[i : i + 1],
            cfg,
            global_tokens=3.0,
        ).loss
        for i in range(2)
    )
    assert float(parts) == pytest.approx(float(full))
    # on-policy (ratio 1): loss = -mean_token(A) = -(1 + 1 - 2) / 3
    assert float(full) == pytest.approx(0.0, abs=1e-6)


def test_gradient_flows_through_current_logprobs():
    curr = torch.zeros(1, 2, requires_grad=True)
    out = grpo_loss(
        curr, curr.detach(), curr.detach(), torch.tensor([1.0]), torch.ones(1, 2), LossConfig()
    )
    out.loss.backward()
    assert curr.grad.flatten().tolist() == pytest.approx([-0.5, -0.5])


def test_drift_metrics_near_one_on_policy():
    lp = torch.log(torch.tensor([[0.5, 0.25]]))
    out = grpo_loss(lp, lp, lp, torch.tensor([0.0]), torch.ones(1, 2), LossConfig())
    assert out.metrics["token_mult_prob_error"] == pytest.approx(1.0)
    assert out.metrics["sampling_importance_ratio"] == pytest.approx(1.0)
    assert out.metrics["approx_entropy"] == pytest.approx(-(math.log(0.5) + math.log(0.25)) / 2)
