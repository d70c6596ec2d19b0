"""GRPO through the package's real Gym servers (nemo-gym 0.7.0, the char_pattern toy env).

Slow: brings a real Gym up (Python 3.13 venvs, a local Ray) and trains a random-init model.
The Python 3.13.0 on this machine is below nemo-gym's ``Requires-Python >=3.13.14``, so the
runtime is started with the explicit, logged ``allow_python_override``.

That training through Gym learns (the char_pattern rows from a random policy to the pattern,
the served HF engine agreeing with the trainer on every sampled token's probability) is
``tests/project/test_demo.py::test_demo_learns``: the demo trains these rows with the same job
shape (G = 8, 32 rollouts a step, a flat LR), and one such run in CI is enough. The tests here
are what the demo cannot show: the in-process source, its restarts, packing, determinism.
"""

from __future__ import annotations

import os
import signal
from dataclasses import replace

import pytest

pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")

from support.grpo_jobs import grpo_cfg  # noqa: E402
from toy_envs import char_pattern_rows, make_native_package  # noqa: E402

from envkit.gym.types import RuntimeOptions  # noqa: E402
from envkit.trainer.grpo import TrainOptions, train  # noqa: E402
from envkit.trainer.metrics import read_metrics  # noqa: E402
from envkit.trainer.policy import load_policy  # noqa: E402
from envkit.trainer.sources.gym import GymRolloutSource, gym_source_options  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

pytestmark = [pytest.mark.train, pytest.mark.gym]

MAX_NEW_TOKENS = 8
SERVED_OVERRIDES = {"router_aux_loss_coef": 0.0}


def _cfg(max_steps, **extra):
    return grpo_cfg(**{
        "num_generations_per_prompt": 8, "batch_size": 32, "max_new_tokens": MAX_NEW_TOKENS,
        # the platform's default decays the LR to 0 by the last step (cosine) and starts at
        # lr x 1e-5; a flat LR keeps 40 steps enough to learn the pattern
        "optimizer_type": "adamw_with_flat_lr",
        "micro_batch_size": 32, "epochs": 1000, "max_steps": max_steps, **extra,
    })


@pytest.fixture(scope="module")
def gym(tmp_path_factory):
    root = tmp_path_factory.mktemp("gym")
    model = make_tiny_model(root / "model", seed=0)
    package = make_native_package(root / "pkg", "char_pattern")
    # the options `envkit train` builds; the override is a key Llama never reads (no effect
    # on sampling) that the generation engine must still receive
    job_opts = gym_source_options(
        _cfg(1, hf_config_overrides=SERVED_OVERRIDES),
        "hf",
        RuntimeOptions(allow_python_override=True),
    )
    # a row normally takes seconds; a dead server should fail fast
    opts = replace(job_opts, requests=replace(job_opts.requests, timeout_s=60.0))
    with GymRolloutSource(package, model, opts) as source:
        yield model, source


def _train(gym, out, steps, source=None):
    model, gym_source = gym
    cfg = _cfg(steps)
    policy = load_policy(model, cfg)
    source = source or gym_source
    source.refresh(policy)  # the served weights start from this run's policy
    rows = char_pattern_rows(16, chars="a")
    return train(cfg, policy, source, rows, TrainOptions(out, save_period=1000))


def test_one_step_packs_checkpoints_and_serves_the_overrides(gym, tmp_path):
    """The job's model settings through real Gym: packed rows and activation checkpointing
    train, and the engine behind the policy endpoint loaded the job's hf_config_overrides."""
    model, source = gym
    # 32 prompts x 8 = 256 rollouts: a fresh random policy writes the target character about
    # once in 100-150 tokens, so 32 rollouts of 8 tokens often scored all zeros (no gradient)
    cfg = _cfg(
        1,
        batch_size=256,
        batching_strategy="sequence_packing",
        train_mb_tokens=256,
        activation_checkpointing=True,
        hf_config_overrides=SERVED_OVERRIDES,
    )
    policy = load_policy(model, cfg)
    source.refresh(policy)
    rows = char_pattern_rows(32, chars="a")
    result = train(cfg, policy, source, rows, TrainOptions(tmp_path, save_period=1000))
    [step] = read_metrics(result.metrics_path)
    assert step["train_num_microbatches"] > 1  # 256 rollouts of ~40 tokens, 256 per row
    assert step["train_padding_fraction"] == 0.0
    assert step["train_grad_norm"] > 0.0
    assert policy.model.config.router_aux_loss_coef == 0.0
    assert source.engine.model.config.router_aux_loss_coef == 0.0  # the served copy


class KillsServerOnce:
    """Kills the char_pattern resources server right before the second generation batch."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0
        self.restarts = 0

    def rollouts(self, rows, num_generations, *, first_group=0, seed=None):
        self.calls += 1
        if self.calls == 2:
            _kill_server(self.inner, "char_pattern")
        return self.inner.rollouts(rows, num_generations, first_group=first_group, seed=seed)

    def refresh(self, policy):
        return self.inner.refresh(policy)

    def sleep(self):
        self.inner.sleep()

    def restart(self):
        self.restarts += 1
        self.inner.restart()


def _kill_server(source, name):
    """SIGKILL whatever listens on the server's port (the uvicorn process, not a wrapper)."""
    port = int(info_port(source.session.servers.servers[name].url))
    victims = {
        c.pid
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid
    }
    if not victims:
        pytest.fail(f"no process listens on the {name} port {port}")
    for pid in victims:
        os.kill(pid, signal.SIGKILL)


def info_port(url):
    return url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[-1]


def test_killed_gym_server_is_restarted_and_the_step_retried(gym, tmp_path):
    flaky = KillsServerOnce(gym[1])
    result = _train(gym, tmp_path, 3, source=flaky)
    assert flaky.restarts == 1
    assert [r["step"] for r in read_metrics(result.metrics_path)] == [1, 2, 3]


def _comparable(records):
    """Every logged metric but the wall-clock timings (``train_timing/*``), which no run
    repeats."""
    return [{k: v for k, v in r.items() if not k.startswith("train_timing/")} for r in records]


def test_two_fresh_runs_log_the_same_metrics(gym, tmp_path):
    """Same job, seed and data, trained twice through real Gym servers: Gym's concurrent
    requests reach the policy server in a different order each time, and every logged metric
    (loss, rewards, grad norm, logprob error, ...) is still the same, step by step."""
    first = read_metrics(_train(gym, tmp_path / "a", 3).metrics_path)
    second = read_metrics(_train(gym, tmp_path / "b", 3).metrics_path)
    assert len(first) == 3
    assert _comparable(first) == _comparable(second)
    assert len({r["train_loss"] for r in first}) > 1  # the steps did sample and train


def test_a_rollout_gym_refuses_is_counted_never_scored(gym, tmp_path):
    """A row whose request Gym's agent rejects fails while the servers stay up: the step
    trains on the other prompts and logs the failures, none of them as a reward of 0."""
    model, source = gym
    cfg = _cfg(1)
    policy = load_policy(model, cfg)
    source.refresh(policy)
    rows = char_pattern_rows(4, chars="a")
    rows[1] = {**rows[1], "responses_create_params": {"input": 7}}  # not a valid Responses input
    result = train(cfg, policy, source, rows, TrainOptions(tmp_path, save_period=1000))
    [step] = read_metrics(result.metrics_path)
    assert step["train_failed_rollouts"] == 8.0  # the bad prompt's 8 samples
    assert step["train_optimizer_steps"] == 1.0  # the 24 others trained
