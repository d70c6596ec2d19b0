"""``--ray-address`` to a dead address: a clear error in seconds, no Ray started, no traceback."""

from __future__ import annotations

import json

import pytest

from envkit.cli import main

ray = pytest.importorskip("ray")

from toy_envs import char_pattern_rows, make_native_package, write_dataset  # noqa: E402

from envkit.gym.processes import free_port as _free_port  # noqa: E402
from envkit.trainer.ray_run import RayStartError, init_ray  # noqa: E402


def test_unreachable_address_is_refused_before_ray_init():
    address = f"127.0.0.1:{_free_port()}"  # nothing listens there
    with pytest.raises(RayStartError) as err:
        init_ray(address)
    assert f"--ray-address {address}: no Ray cluster reachable" in str(err.value)
    assert "ray start --head" in str(err.value)
    assert not ray.is_initialized()


def test_cli_reports_an_unreachable_cluster_without_a_traceback(tmp_path, capsys):
    pkg = make_native_package(tmp_path / "pkg")
    data = write_dataset(tmp_path / "data", char_pattern_rows(4))
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "model": str(tmp_path),
                "dataset": str(data),
                "environment": str(pkg),
                "training": {"type": "grpo"},
            }
        )
    )
    address = f"127.0.0.1:{_free_port()}"
    rc = main(["train", str(job), "--ray-address", address, "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"--ray-address {address}: no Ray cluster reachable" in err
    assert "Traceback" not in err
    assert not ray.is_initialized()


def test_actor_errors_envkit_reports_cleanly_are_unwrapped():
    from envkit.gym.types import GymRuntimeError
    from envkit.trainer.ray_run import _unwrap

    gym = GymRuntimeError("servers not ready after 5s", code="EK313")
    wrapped = ray.exceptions.RayTaskError("start", "Traceback ...", gym)
    assert _unwrap(wrapped) is gym
    blocked = NotADirectoryError(20, "Not a directory", "out")
    assert _unwrap(ray.exceptions.RayTaskError("run", "Traceback ...", blocked)) is blocked
    bug = ray.exceptions.RayTaskError("run", "Traceback ...", ZeroDivisionError("x"))
    assert _unwrap(bug) is bug  # an unexpected error keeps the remote traceback
