"""The learning-signal analysis over plain floats agrees with the trainer's own tensors: the
baseline, the std dynamic sampling filters on, and the zero-variance groups the step logs."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from envkit.gym.rollout import Rollout  # noqa: E402
from envkit.probe.analysis.zero_variance import expected_gen_batches, group_signal, wilson  # noqa: E402
from envkit.trainer.advantages import baseline_and_std  # noqa: E402
from envkit.trainer.dynamic_sampling import zero_variance_groups  # noqa: E402


def _groups(seed: int) -> list[list[float]]:
    """Groups of 1..6 rewards drawn from a few levels, so ties and constant groups occur."""
    rng = random.Random(seed)
    levels = (0.0, 0.125, 0.5, 1.0)
    return [[rng.choice(levels[: rng.randint(1, 4)]) for _ in range(rng.randint(1, 6))]
            for _ in range(40)]


@pytest.mark.parametrize("leave_one_out", [True, False])
@pytest.mark.parametrize("seed", range(5))
def test_counts_match_the_trainer(seed: int, leave_one_out: bool) -> None:
    groups = _groups(seed)
    ids = torch.tensor([g for g, rewards in enumerate(groups) for _ in rewards])
    rewards = torch.tensor([r for g in groups for r in g], dtype=torch.float64)
    baseline, std = baseline_and_std(ids, rewards, leave_one_out=leave_one_out)
    rollouts = [replace(Rollout.from_turns(i, "a", float(r), (), False, {}), group=g)
                for i, (r, g) in enumerate(zip(rewards, ids.tolist(), strict=True))]
    signal = group_signal(groups, leave_one_out=leave_one_out)
    assert signal.samples == len(rewards)
    assert signal.no_gradient == int(((rewards - baseline).abs() <= 1e-9).sum())
    assert signal.kept == int((std != 0).sum())  # dynamic sampling's rule: std not 0
    assert (signal.zero_variance, signal.groups) == zero_variance_groups(rollouts, rewards)


def test_two_samples_with_leave_one_out_keep_nothing() -> None:
    # the std over one other sample is 0 (the trainer's Bessel correction divides by 0)
    assert group_signal([[0.0, 1.0]] * 3).kept == 0
    assert group_signal([[0.0, 1.0]] * 3, leave_one_out=False).kept == 6


def test_expected_batches() -> None:
    assert expected_gen_batches(0.25, 8, 1.0) == 4
    assert expected_gen_batches(0.25, 8, 2.0) == 2
    assert expected_gen_batches(None, 8, 1.0) is None


def test_wilson_covers_the_edges() -> None:
    lo, hi = wilson(0, 16)
    assert lo == 0.0 and 0.15 < hi < 0.25
    lo, hi = wilson(16, 16)
    assert hi == 1.0 and 0.75 < lo < 0.85
    assert wilson(0, 0) is None
