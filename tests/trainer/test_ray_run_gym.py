"""``envkit train --ray`` against the REAL Gym servers of the char_pattern toy package.

Slow: a local Ray for the two actors, and inside the rollout actor a real nemo-gym 0.7.0
bring-up (its own Ray, four servers). One run trains 2 steps; one fails while Gym is coming up
(a startup timeout). Both must leave no process behind: every process a run starts inherits a
marker variable from the test (``proc_marks``), so a survivor is found by its environment.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("ray")
pytest.importorskip("psutil")

from support.grpo_jobs import training, write_job
from support.proc_marks import new_mark, survivors
from toy_envs import char_pattern_rows, make_native_package, write_dataset

from envkit.gym.types import GymRuntimeError, RuntimeOptions
from envkit.trainer.metrics import read_metrics
from envkit.trainer.run import TrainRequest, run_training
from envkit.trainer.tiny_model import make_tiny_model

pytestmark = [pytest.mark.ray, pytest.mark.train, pytest.mark.gym]

# The random-init model (seed 0) writes "e" in about 1 of 64 tokens (measured); Gym's sampling is
# unseeded, so a step of 16 rollouts x 8 tokens scored 0 in some runs. 2 steps x 32 rollouts x 24
# tokens make a reward of 0 everywhere (a broken reward path) the only likely way to see 0.
TARGET = "e"


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    root = tmp_path_factory.mktemp("raygym")
    model = make_tiny_model(root / "model", seed=0)
    package = make_native_package(root / "pkg", "char_pattern")
    data = write_dataset(root / "data", char_pattern_rows(8, chars=TARGET))
    block = training(batch_size=32, max_new_tokens=24, micro_batch_size=32, max_steps=2,
                     epochs=10)
    return write_job(root / "job.json", block, model=model, dataset=data, environment=package)


def _request(job, out, **runtime):
    options = RuntimeOptions(allow_python_override=True, **runtime)
    return TrainRequest(job=job, output=out, use_ray=True, runtime=options, save_period=100)


def _watch_training_cluster(monkeypatch) -> dict:
    """Record, once Gym is up in the rollout actor, who is connected to the training Ray."""
    import os

    import ray
    from ray._private.state import jobs

    from envkit.trainer import ray_run

    seen: dict = {}

    def on_start(where):
        seen.update(where)
        seen["nodes"] = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        seen["drivers"] = {j["DriverPid"] for j in jobs()}
        seen["me"] = os.getpid()

    inner = ray_run.train_with_actors
    monkeypatch.setattr(
        ray_run, "train_with_actors", lambda *a, **k: inner(*a, on_start=on_start, **k)
    )
    return seen


def test_ray_run_through_real_gym_servers_leaves_nothing_behind(job, monkeypatch, tmp_path):
    import ray

    mark = new_mark(monkeypatch)
    seen = _watch_training_cluster(monkeypatch)
    result = run_training(_request(job, tmp_path / "out"))
    # Gym's own Ray (servers up by now) never joined the training cluster: one node, and no
    # driver but this process
    assert len(seen["nodes"]) == 1
    assert seen["drivers"] == {seen["me"]}
    assert not ray.is_initialized()  # the Ray this run started is shut down
    records = read_metrics(result.metrics_path)
    assert [r["step"] for r in records] == [1, 2]
    rewards = [r["train_reward"] for r in records]
    assert all(0.0 <= r <= 1.0 for r in rewards)
    assert any(r > 0.0 for r in rewards), rewards  # char_pattern's server scored rollouts
    # generation in the rollout actor (served to Gym) follows the trainer's weights
    assert records[-1]["train_token_mult_prob_error"] == pytest.approx(1.0, abs=1e-3)
    assert (result.final_dir / "model.safetensors").exists()
    assert survivors(mark) == []  # Gym servers, Gym's Ray, the actors, our Ray


def test_gym_failing_inside_the_rollout_actor_is_reported_and_cleaned_up(
    job, monkeypatch, tmp_path
):
    import ray

    mark = new_mark(monkeypatch)
    with pytest.raises(GymRuntimeError, match="servers not ready after 5s"):
        run_training(_request(job, tmp_path / "out", startup_timeout_s=5.0))
    assert not ray.is_initialized()
    assert survivors(mark) == []


@pytest.mark.parametrize("when", ["actor_started", "gym_starting"])
def test_ctrl_c_while_the_rollout_actor_brings_gym_up_leaves_no_process(
    job, monkeypatch, tmp_path, when
):
    """SIGINT to `envkit train --ray` while the rollout actor is bringing Gym up (as soon as
    the actor runs: loading the model; or once Gym's head is starting): the actor's close runs
    beside its start, tears down what was started (Gym's head, its Ray, the servers, the policy
    endpoint), and nothing starts after it."""
    import signal
    import subprocess
    import sys
    import time

    mark = new_mark(monkeypatch)
    log = tmp_path / "stderr.log"
    cmd = [sys.executable, "-m", "envkit", "train", str(job), "--ray", "--allow-python-override",
           "-o", str(tmp_path / "out")]
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 600
            needle = "RolloutWorker" if when == "actor_started" else "env start"
            while not _running(needle, mark) and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()[-3000:]
                time.sleep(0.1)
            assert _running(needle, mark), log.read_text()[-3000:]
            proc.send_signal(signal.SIGINT)
            rc = proc.wait(timeout=180)
        finally:
            _stop(proc)
    assert rc == 130, log.read_text()[-3000:]
    assert survivors(mark) == [], log.read_text()[-3000:]


def _running(needle: str, mark: str) -> bool:
    """A process of this run whose command line has ``needle`` (the rollout actor's Ray title,
    Gym's head `gym env start`) is running."""
    import psutil
    from support.proc_marks import MARK

    for proc in psutil.process_iter():
        try:
            if needle in " ".join(proc.cmdline()) and proc.environ().get(MARK) == mark:
                return True
        except psutil.Error:
            continue
    return False


def _stop(proc) -> None:
    """A run still going (a failed check) gets Ctrl-C first, so it takes its Ray down too."""
    import signal
    import subprocess

    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
