"""One Ray cluster for every Gym bring-up of a test session (``ENVKIT_GYM_RAY_ADDRESS``).

Each bring-up otherwise starts and stops its own (Gym's head does: ~4 s and ~6 CPU seconds
each, ~100 bring-ups in CI). The cluster is the one ``python -m envkit.gym.ray_cluster`` gives
users, started when the session has a ``gym`` test to run. A test that must see Gym start its
own Ray (what a bring-up is without the variable: teardown, interrupts, the launcher's Ray
options) carries ``@pytest.mark.own_ray``; ``--offline`` runs start their own anyway, and the
benchmarks' default runs drop the variable (``ENVKIT_TEST_OWN_RAY=1`` turns the shared cluster
off for a whole session).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pytest

from envkit.gym.types import GYM_RAY_ADDRESS_ENV

OWN_RAY = "own_ray"


@contextlib.contextmanager
def shared_cluster(session: pytest.Session) -> Iterator[str | None]:
    """Sets ``ENVKIT_GYM_RAY_ADDRESS`` for the session when it runs a ``gym`` test."""
    wanted = any(item.get_closest_marker("gym") for item in session.items)
    if not wanted or os.environ.get("ENVKIT_TEST_OWN_RAY") or GYM_RAY_ADDRESS_ENV in os.environ:
        yield os.environ.get(GYM_RAY_ADDRESS_ENV)
        return
    from envkit.gym.ray_cluster import gym_ray_cluster
    from envkit.gym.venv import ensure_gym_venv

    with gym_ray_cluster(ensure_gym_venv(allow_python_override=True)) as address:
        os.environ[GYM_RAY_ADDRESS_ENV] = address
        try:
            yield address
        finally:
            os.environ.pop(GYM_RAY_ADDRESS_ENV, None)
