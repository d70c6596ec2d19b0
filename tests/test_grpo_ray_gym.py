"""``envkit train --ray`` against the REAL Gym servers of the char_pattern toy package.

Slow: a local Ray for the two actors, and inside the rollout actor a real nemo-gym 0.7.0
bring-up (its own Ray, four servers). Two runs, each with a fresh Gym: one trains 2 steps, one
fails after Gym is up. Both must leave no process behind: every process the run starts
inherits a marker variable from this test, so a survivor is found by its environment, never
by a name another user's process could share.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

pytest.importorskip("torch")
pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from toy_envs import char_pattern_rows, make_native_package, write_dataset  # noqa: E402

from envkit.trainer.gym_runtime import RuntimeOptions  # noqa: E402
from envkit.trainer.metrics import read_metrics  # noqa: E402
from envkit.trainer.run import TrainRequest, run_training  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

pytestmark = pytest.mark.slow

MARK = "ENVKIT_TEST_RUN_MARK"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("raygym")
    model = make_tiny_model(root / "model", seed=0)
    package = make_native_package(root / "pkg", "char_pattern")
    data = write_dataset(root / "data", char_pattern_rows(8, chars="a"))
    job = root / "job.json"
    training = {
        "type": "grpo",
        "num_generations_per_prompt": 4,
        "batch_size": 16,
        "learning_rate": 3e-3,
        "weight_decay": 0.0,
        "max_new_tokens": 8,
        "micro_batch_size": 16,
        "max_steps": 2,
        "epochs": 10,
        "seed": 1,
    }
    refs = {"model": str(model), "dataset": str(data), "environment": str(package)}
    job.write_text(json.dumps({**refs, "training": training}))
    return job


@pytest.fixture
def marked(monkeypatch):
    """A unique marker in the environment every process of the run inherits."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(MARK, value)
    return value


def _survivors(value: str, wait_s: float = 30.0) -> list[str]:
    """Processes (other than this one) still carrying ``value``, after up to ``wait_s``."""
    me = psutil.Process().pid
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for proc in psutil.process_iter(["pid", "name", "status"]):
            if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            try:
                if proc.environ().get(MARK) == value:
                    found.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
            except psutil.Error:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(1.0)


def _request(job, out, **kwargs):
    runtime = RuntimeOptions(allow_python_override=True)
    return TrainRequest(job=job, output=out, use_ray=True, runtime=runtime, **kwargs)


def test_ray_run_through_real_gym_servers_leaves_nothing_behind(inputs, marked, tmp_path):
    import ray

    result = run_training(_request(inputs, tmp_path / "out", save_period=100))
    assert not ray.is_initialized()  # the Ray this run started was shut down
    records = read_metrics(result.metrics_path)
    assert [r["step"] for r in records] == [1, 2]
    rewards = [r["train_reward"] for r in records]
    assert all(0.0 <= r <= 1.0 for r in rewards)
    assert any(r > 0.0 for r in rewards)  # the char_pattern server scored the rollouts
    # generation in the rollout actor (served to Gym) follows the trainer's weights
    assert records[-1]["train_token_mult_prob_error"] == pytest.approx(1.0, abs=1e-3)
    assert (result.final_dir / "model.safetensors").exists()
    assert _survivors(marked) == []


def test_failed_ray_run_still_stops_gym_and_ray(inputs, marked, tmp_path):
    import ray

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the run dir should go")
    with pytest.raises(OSError):  # the trainer fails after the Gym servers came up
        run_training(_request(inputs, blocker / "out"))
    assert not ray.is_initialized()
    assert _survivors(marked) == []
