from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from envkit.trainer.advantages import baseline_and_std, compute_advantages, group_stats  # noqa: E402


def test_leave_one_out_baseline_and_std_by_hand():
    ids = torch.tensor([0, 0, 0, 0])
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])
    baseline, std = baseline_and_std(ids, rewards)
    assert baseline.tolist() == pytest.approx([0.0, 1 / 3, 1 / 3, 1 / 3])
    # others of sample 1 are [1, 0, 0]: sample std sqrt(1/3); sample 0's others all agree
    assert std.tolist() == pytest.approx(
        [0.0, math.sqrt(1 / 3), math.sqrt(1 / 3), math.sqrt(1 / 3)]
    )


def test_normalize_divides_only_where_std_positive():
    ids = torch.tensor([0, 0, 0, 0])
    adv = compute_advantages(ids, torch.tensor([1.0, 0.0, 0.0, 0.0]), normalize=True)
    third = (1 / 3) / math.sqrt(1 / 3)
    # NeMo-RL divides by std + 1e-6 where std > 0
    assert adv.tolist() == pytest.approx([1.0, -third, -third, -third], rel=1e-5)
    raw = compute_advantages(ids, torch.tensor([1.0, 0.0, 0.0, 0.0]), normalize=False)
    assert raw.tolist() == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])


def test_plain_mean_baseline_without_leave_one_out():
    ids = torch.tensor([3, 3])
    adv = compute_advantages(ids, torch.tensor([1.0, 0.0]), leave_one_out=False, normalize=True)
    expected = 0.5 / (math.sqrt(0.5) + 1e-6)
    assert adv.tolist() == pytest.approx([expected, -expected])


def test_all_equal_group_has_zero_advantage_and_is_not_mixed():
    ids = torch.tensor([0, 0, 1, 1, 2, 2])
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    adv = compute_advantages(ids, rewards)
    assert adv[[0, 1, 4, 5]].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert adv[2] < 0 < adv[3]
    baseline, _ = baseline_and_std(ids, rewards)  # leave-one-out: [1, 1], [1, 0], [0, 0]
    stats = group_stats(baseline)  # percent of samples, as NeMo-RL logs it
    assert (stats.pct_0, stats.pct_1, stats.pct_mixed) == pytest.approx((50.0, 50.0, 0.0))


def test_single_valid_sample_gets_zero_advantage():
    ids = torch.tensor([0, 0])
    rewards = torch.tensor([1.0, 0.0])
    adv = compute_advantages(ids, rewards, valid_mask=torch.tensor([1, 0]))
    assert adv.tolist() == [0.0, 0.0]


def test_groups_are_independent_of_row_order():
    ids = torch.tensor([1, 0, 1, 0])
    rewards = torch.tensor([1.0, 0.5, 0.0, 0.5])
    adv = compute_advantages(ids, rewards, normalize=False)
    assert adv.tolist() == pytest.approx([1.0, 0.0, -1.0, 0.0])
