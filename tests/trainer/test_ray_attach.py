"""``--ray-address``: train on an already running Ray cluster, then leave it running.

Slow: starts a real one-node cluster with ``ray start --head`` in a private temp dir. It is
stopped through its own process tree, never with ``ray stop`` (which kills every Ray process
of this user on the machine, other people's clusters included). The rollout source is the
in-process one: the Gym bring-up inside the rollout actor is covered by test_grpo_ray_gym.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import pytest

pytest.importorskip("torch")
ray = pytest.importorskip("ray")

from envkit.gym.processes import ProcessTree  # noqa: E402
from envkit.gym.processes import free_port as _free_port  # noqa: E402
from envkit.trainer.config import grpo_config  # noqa: E402
from envkit.trainer.grpo import TrainOptions  # noqa: E402
from envkit.trainer.metrics import read_metrics  # noqa: E402
from envkit.trainer.ray_run import train_with_actors  # noqa: E402
from envkit.trainer.sources.local import local_source  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.train]

RAY = Path(sys.executable).with_name("ray")  # this venv's `ray` script


def _share_of_a():
    def reward(row, text):  # nested: cloudpickle ships it by value to the actor
        return sum(c == "a" for c in text) / max(1, len(text))

    return reward


def _wait_for_cluster(address: str, proc: subprocess.Popen, timeout_s: float = 120.0) -> str:
    """The head node's id once ``ray.init(address=...)`` succeeds."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            pytest.fail(f"`ray start --head` exited with {proc.returncode}")
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, RuntimeError):
            if time.monotonic() > deadline:
                pytest.fail(f"no Ray cluster at {address} after {timeout_s:g}s")
            time.sleep(1.0)
            continue
        try:
            return next(n["NodeID"] for n in ray.nodes() if n["Alive"])
        finally:
            ray.shutdown()


def _alive_actors(wait_s: float = 30.0) -> list[str]:
    """Actors the cluster's GCS still lists as alive (killing is asynchronous: poll a bit)."""
    from ray._private.state import actors

    deadline = time.monotonic() + wait_s
    while True:
        alive = [a["ActorID"] for a in actors().values() if a["State"] != "DEAD"]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.5)


@pytest.fixture
def cluster(monkeypatch):
    """``(address, head node id, process)`` of a fresh local cluster, torn down afterwards.

    Token auth as this process already has it: Ray 2.60 turns it on for a local ``ray.init``
    (and for ``ray start`` when ~/.ray/auth_token exists) and caches the mode per process; a
    driver and a cluster that disagree cannot talk (actors are cancelled before they run).
    """
    mode = os.environ.get("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_AUTH_MODE", mode)
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="envkit-raytest-")
    cmd = [str(RAY), "start", "--head", "--port", str(port), "--num-cpus", "2"]
    cmd += ["--include-dashboard=false", "--temp-dir", temp, "--block"]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    try:
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    tree = ProcessTree(proc.pid)
    try:
        address = f"127.0.0.1:{port}"
        node = _wait_for_cluster(address, proc)
        tree.refresh()
        yield address, node, proc
    finally:
        if ray.is_initialized():
            ray.shutdown()
        tree.terminate()  # the grace a run's own teardown gives: no report is read after
        proc.wait(timeout=10)
        shutil.rmtree(temp, ignore_errors=True)


def test_train_attached_to_a_running_cluster_leaves_it_running(cluster, tmp_path):
    address, head_node, proc = cluster
    model = make_tiny_model(tmp_path / "model", seed=0)
    cfg = grpo_config(
        {
            "training": {
                "type": "grpo",
                "num_generations_per_prompt": 4,
                "batch_size": 8,
                "max_new_tokens": 4,
                "micro_batch_size": 8,
                "max_steps": 2,
                "epochs": 100,
                "seed": 1,
            }
        }
    )
    rows = [{"responses_create_params": {"input": f"say a {i}"}} for i in range(4)]
    factory = partial(local_source, str(model), _share_of_a(), 1.0, 4)
    where = {}
    result = train_with_actors(
        cfg,
        model,
        factory,
        rows,
        [],
        TrainOptions(tmp_path / "out", save_period=100),
        address=address,
        on_start=where.update,
    )
    assert [r["step"] for r in read_metrics(result.metrics_path)] == [1, 2]
    assert (result.final_dir / "model.safetensors").exists()
    # both actors ran on the attached cluster's node, in the same (driver's) job
    assert where["rollout"]["node_id"] == where["trainer"]["node_id"] == head_node
    assert where["rollout"]["job_id"] == where["trainer"]["job_id"]
    assert not ray.is_initialized()  # the driver detached...
    assert proc.poll() is None  # ...and the cluster keeps running
    ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        assert [n["NodeID"] for n in ray.nodes() if n["Alive"]] == [head_node]
        assert _alive_actors() == []  # the run's actors were killed with it
    finally:
        ray.shutdown()
