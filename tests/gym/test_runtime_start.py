"""``GymRuntime.start``'s launch policy: Ray's fixed 30 s start-up window missed on a busy host
and a port taken before Gym bound it are retried (three launches in all), any other failure is
raised at once."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from toy_envs import make_native_package

from envkit.gym import GymRuntime, GymRuntimeError, GymServers, PolicyEndpoint, RuntimeOptions
from envkit.gym.head import PORT_TAKEN

_RAY_LATE = "Exception: The current node timed out during startup. This could happen ..."


def _runtime(tmp_path: Path, outcomes: list[GymRuntimeError | None],
             monkeypatch: pytest.MonkeyPatch) -> tuple[GymRuntime, list[int]]:
    """A runtime on a real toy package whose launches end as ``outcomes`` say (None: up)."""
    runtime = GymRuntime(make_native_package(tmp_path / "pkg"),
                         PolicyEndpoint("http://127.0.0.1:9/v1", "k", "m"), RuntimeOptions())
    launches: list[int] = []

    def launch(*_: object) -> GymServers:
        launches.append(len(launches) + 1)
        outcome = outcomes[len(launches) - 1]
        if outcome is not None:
            raise outcome
        return GymServers("http://127.0.0.1:1", {}, {}, tmp_path)

    monkeypatch.setattr(runtime, "_setup", lambda: (None, tmp_path, {}))
    monkeypatch.setattr(runtime, "_launch", launch)
    return runtime, launches


def test_ray_missing_its_start_window_is_retried(tmp_path, monkeypatch, caplog) -> None:
    late = GymRuntimeError("a server failed to start", log_tail=_RAY_LATE)
    runtime, launches = _runtime(tmp_path, [late, late, None], monkeypatch)
    with caplog.at_level(logging.WARNING, logger="envkit.gym.servers"):
        servers = runtime.start()
    assert servers is runtime.servers and launches == [1, 2, 3]
    assert [r.getMessage() for r in caplog.records] == [
        "Ray did not start in time (machine busy); launch 2 of 3",
        "Ray did not start in time (machine busy); launch 3 of 3"]


def test_the_third_miss_is_raised(tmp_path, monkeypatch) -> None:
    late = GymRuntimeError("a server failed to start", log_tail=_RAY_LATE)
    runtime, launches = _runtime(tmp_path, [late, late, late], monkeypatch)
    with pytest.raises(GymRuntimeError) as info:
        runtime.start()
    assert info.value is late and launches == [1, 2, 3]


def test_a_package_failure_is_not_retried(tmp_path, monkeypatch) -> None:
    broken = GymRuntimeError("a server failed to start (`x`)", code="EK403",
                             log_tail="ModuleNotFoundError: No module named 'rapidfuzz'")
    runtime, launches = _runtime(tmp_path, [broken, None], monkeypatch)
    with pytest.raises(GymRuntimeError) as info:
        runtime.start()
    assert info.value is broken and launches == [1]


def test_a_head_port_taken_before_gym_bound_it_is_retried(tmp_path, monkeypatch,
                                                          caplog) -> None:
    """The head's port is picked free, then bound by Gym a moment later; another process
    (one of Ray's daemons, in a restart during training) can take it in between."""
    taken = GymRuntimeError("a server failed to start", log_tail=(
        "ERROR:    [Errno 98] error while attempting to bind on address "
        "('127.0.0.1', 41234): address already in use"))
    runtime, launches = _runtime(tmp_path, [taken, None], monkeypatch)
    with caplog.at_level(logging.WARNING, logger="envkit.gym.servers"):
        runtime.start()
    assert launches == [1, 2]
    assert [r.getMessage() for r in caplog.records] == [
        "a port picked free was taken before Gym bound it; launch 2 of 3"]


def test_a_head_port_held_by_another_protocol_is_retried(tmp_path, monkeypatch) -> None:
    held = GymRuntimeError("Gym's head cannot start", log_tail=PORT_TAKEN, stage="start")
    runtime, launches = _runtime(tmp_path, [held, None], monkeypatch)
    runtime.start()
    assert launches == [1, 2]
