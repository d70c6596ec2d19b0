"""Gym's own CLI (``gym ...``), as envkit starts it: polls every 0.25 s, Ray without its UI.

Not imported by envkit: ``envkit.gym.servers`` runs this file with the Gym venv's Python
(``<gym venv>/bin/python -P gym_main.py env start ...``; ``-P`` because a sibling module here
is named like a standard-library one), so it may import nothing from envkit.

Why, measured on a 2-core machine (a four-server package, warm venvs):

- Gym's head (``nemo_gym/cli/env.py`` of Gym 0.7.0) waits 3 s between its polls, for its own
  head server, for every other server to answer, and for each venv build of a dry run. A
  server that answers just after a poll is seen ~3 s later: every bring-up lost ~2 s on
  average (the head's log: the last server listening, then five more ``/readyz`` 503s). Here
  only that wait is shorter; what the head checks, in what order, and its timeouts are Gym's.
  Waits of other lengths (the 60 s liveness loop after ready) are left as they are.
- The head's ``ray.init()`` of a new local cluster starts Ray's dashboard with its UI modules
  (~2 CPU seconds, 1-2 s of the start): here ``include_dashboard=False`` (Ray still runs its
  minimal API server and every agent). Nothing of Gym's reads the dashboard. Connecting to a
  cluster (``ray_head_node_address``) is unchanged. ``RAY_prestart_worker_first_driver=0``
  (``envkit.gym.install.gym_env``) is the other half of Ray's share.

If Gym no longer has what is replaced (another release), that part runs as Gym's own.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

POLL_S = 0.25
"""The head's poll interval here (Gym's: 3 s)."""

GYM_POLL_S = 3.0
"""The wait Gym's head sleeps between polls; only waits this long or shorter are shortened."""


def poll_sleep(seconds: float, sleep: Callable[[float], None] = time.sleep) -> None:
    """Gym's ``sleep`` between readiness polls, at most :data:`POLL_S`; longer waits unchanged."""
    sleep(min(seconds, POLL_S) if seconds <= GYM_POLL_S else seconds)


def install() -> bool:
    """Replace both (each on its own); False unless this Gym had both to replace."""
    try:
        from nemo_gym import server_utils  # type: ignore[import-not-found]
        from nemo_gym.cli import env  # type: ignore[import-not-found]
    except ImportError:
        return False
    polls = _poll_faster(env)
    ray = _start_ray_without_dashboard(server_utils)
    return polls and ray


def _poll_faster(env: Any) -> bool:
    """The sleep of the head's wait loops is :func:`poll_sleep`."""
    if getattr(env, "sleep", None) is not time.sleep:
        return False
    env.sleep = poll_sleep
    return True


def _start_ray_without_dashboard(server_utils: Any) -> bool:
    """The head's ``ray.init()`` of a new local cluster (no address) starts no dashboard UI."""
    get_ray = getattr(server_utils, "_get_ray", None)
    if get_ray is None:
        return False

    def _get_ray() -> Any:
        ray = get_ray()
        init = ray.init
        if not getattr(init, "envkit", False):
            def init_without_dashboard(*args: Any, **kwargs: Any) -> Any:
                if not args and "address" not in kwargs:
                    kwargs.setdefault("include_dashboard", False)
                return init(*args, **kwargs)
            init_without_dashboard.envkit = True  # type: ignore[attr-defined]
            ray.init = init_without_dashboard
        return ray

    server_utils._get_ray = _get_ray
    return True


def main() -> None:
    install()
    from nemo_gym.cli.main import main as gym_main  # type: ignore[import-not-found]

    # what Gym's console script would have in argv[0]: its usage lines name `gym`
    sys.argv[0] = str(Path(sys.executable).with_name("gym"))
    sys.exit(gym_main())


if __name__ == "__main__":
    main()
