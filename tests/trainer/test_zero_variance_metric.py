"""``train_zero_variance_share``: the share of a step's generated prompt groups whose rewards all
agree (no gradient), over every generation batch dynamic sampling ran -- the number
``envkit probe --model`` predicts (EK810)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from envkit.gym.rollout import Rollout  # noqa: E402
from envkit.trainer.config import grpo_config  # noqa: E402
from envkit.trainer.dynamic_sampling import sample_step, train_metrics  # noqa: E402


def _cfg(**training: object):
    return grpo_config({"training": {"type": "grpo", "batch_size": 8,
                                     "num_generations_per_prompt": 4, **training}})


def _generate(batches: list[list[list[float]]]):
    """Each call: the next batch's groups of rewards as rollouts, ids from ``first_group``."""
    calls = iter(batches)

    def generate(num_prompts: int, first_group: int) -> list[Rollout]:
        groups = next(calls)
        assert len(groups) == num_prompts
        return [Rollout(first_group + g, (5,), (7,), (-1.0,), r, False)
                for g, rewards in enumerate(groups) for r in rewards]

    return generate


def test_one_batch() -> None:
    got = sample_step(_cfg(), _generate([[[0.5, 0.5, 0.5, 0.5], [1, 0, 0, 0]]]))
    assert got.zero_variance == (1, 2)
    assert train_metrics(got, torch.zeros(8))["train_zero_variance_share"] == 0.5


def test_every_batch_dynamic_sampling_generated() -> None:
    cfg = _cfg(use_dynamic_sampling=True)
    flat, mixed = [[0, 0, 0, 0], [1, 1, 1, 1]], [[1, 1, 0, 0], [0, 1, 0, 1]]
    got = sample_step(cfg, _generate([flat, flat, mixed]))
    assert got.gen_batches == 3
    assert got.zero_variance == (4, 6)  # the kept batch has none; the step generated 4 of 6
    assert train_metrics(got, torch.zeros(8))["train_zero_variance_share"] == pytest.approx(4 / 6)


def test_a_group_left_with_one_sample_has_no_spread() -> None:
    # rollouts that failed are dropped before scoring: a group of one gives no gradient
    got = sample_step(_cfg(batch_size=2, num_generations_per_prompt=2),
                      lambda n, first: [Rollout(0, (5,), (7,), (-1.0,), 1.0, False)])
    assert got.zero_variance == (1, 1)
