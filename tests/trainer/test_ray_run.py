"""GRPO with generation and training as Ray actors (local Ray, ``num_cpus=0`` actors).

Slow: starts a local Ray. Uses the in-process RolloutSource inside the rollout actor, so the
test exercises the actor split and the weight transfer without a Gym bring-up.
"""

from __future__ import annotations

from functools import partial

import pytest

pytest.importorskip("torch")
ray = pytest.importorskip("ray")

from support.grpo_jobs import grpo_cfg  # noqa: E402

from envkit.trainer.grpo import TrainOptions  # noqa: E402
from envkit.trainer.metrics import read_metrics  # noqa: E402
from envkit.trainer.ray_run import train_with_actors  # noqa: E402
from envkit.trainer.sources.local import local_source  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.train]


def _share_of_a():
    def reward(row, text):  # nested: cloudpickle ships it by value to the actor
        return sum(c == "a" for c in text) / max(1, len(text))

    return reward


def test_ray_actors_train_and_refresh_weights(tmp_path):
    model = make_tiny_model(tmp_path / "model", seed=0)
    cfg = grpo_cfg(max_steps=3)
    rows = [{"responses_create_params": {"input": f"say a {i}"}} for i in range(8)]
    factory = partial(local_source, str(model), _share_of_a(), 1.0, 8)
    try:
        result = train_with_actors(
            cfg, model, factory, rows, [], TrainOptions(tmp_path / "out", save_period=100)
        )
    finally:
        ray.shutdown()
    records = read_metrics(result.metrics_path)
    assert [r["step"] for r in records] == [1, 2, 3]
    # generation in the rollout actor follows the trainer's weights: on-policy drift stays 1
    for record in records:
        assert record["train_token_mult_prob_error"] == pytest.approx(1.0, abs=1e-3)
    assert (result.final_dir / "model.safetensors").exists()
