"""Holds a Ray cluster up for Gym's servers to join; stops it when its stdin closes.

Not imported by envkit: ``envkit.gym.ray_cluster`` runs this file with the Gym venv's Python
(``-P``, as ``gym_main.py``), because a cluster Gym's servers join must run Gym's Ray on Gym's
Python. It starts the cluster as Gym's head would (``ray.init()``, no dashboard UI), prints its
GCS address as its one line of stdout, then waits: end of stdin (the parent closed it, or died)
or SIGTERM stops the cluster with ``ray.shutdown()``.
"""

from __future__ import annotations

import signal
import sys
from typing import Any


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def main() -> None:
    import ray  # type: ignore[import-not-found, unused-ignore]

    signal.signal(signal.SIGTERM, _stop)
    ray.init(include_dashboard=False)
    try:
        sys.stdout.write(f"{ray.get_runtime_context().gcs_address}\n")
        sys.stdout.flush()
        sys.stdin.read()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
