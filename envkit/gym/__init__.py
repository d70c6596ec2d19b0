"""The Gym runtime: bring a package's real nemo-gym servers up, send rows, tear it all down.

Used by ``envkit rollout`` and by the trainer; it knows nothing of training. Layout:

- ``venv``: the cached Python 3.13 venv with ``nemo-gym`` (the head process);
- ``install``: server-venv cache key, environment, ``uv.toml``, the offline ``wheels/`` install;
- ``harness``: Gym's built-in verifiers harness staged for offline adapter packages;
- ``servers``: ``GymRuntime`` -- launch, health checks, log collection, teardown;
- ``processes``: process-tree teardown (nothing left behind);
- ``diagnose``: a failing server's log -> the EK rule (table in ``validators/``);
- ``client``: rows to ``/run``, answers to :class:`~envkit.gym.rollout.Rollout`;
- ``session``: ``GymSession`` = policy endpoint + Gym servers, with the liveness probe.
"""

from __future__ import annotations
