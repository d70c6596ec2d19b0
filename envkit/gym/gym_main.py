"""Gym's own CLI (``gym ...``) as envkit starts it: 0.25 s polls, Ray started early, no UI.

Not imported by envkit: ``envkit.gym.servers`` runs this file with the Gym venv's Python
(``-P``: a sibling module here is named like a standard-library one), so it may import nothing
from envkit. Where this Gym lacks what is replaced (another release), that part runs as Gym's.

- Polls: Gym's head sleeps 3 s between its polls, so a server that answers just after one is
  seen up to a poll later. Only those waits are shortened; what it checks, and its timeouts,
  are Gym's.
- No dashboard: the head's ``ray.init()`` of a new local cluster starts Ray's dashboard UI,
  which nothing of Gym's reads.
- Ray early: the head imports FastAPI, pydantic and Gym before its ``ray.init()``, which then
  waited for Ray's daemons with the other core idle. Here a child process starts the cluster
  at once and the head connects to it, as NeMo-RL's Gym joins NeMo-RL's cluster; not when the
  head joins a cluster of its own (``ray_head_node_address``) or only installs.
"""

from __future__ import annotations

import os
import subprocess
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


class EarlyRay:
    """A new local Ray cluster, started from the process's start by ``ray_cluster_main.py``
    beside this file (``ray.init()`` without the dashboard, held until this process's end
    closes its stdin); :meth:`connect` is the head's ``ray.init()``, a driver of it.

    A process, not a thread of the head: a thread's ``import ray`` raced the head's own
    (``partially initialized module 'ray'``), and Linux's parent-death signal, by which Ray's
    daemons end with their parent, is per thread (seen: GCS and the raylet went with the
    thread that had started them).
    """

    HOLDER = Path(__file__).with_name("ray_cluster_main.py")

    def __init__(self, holder: Path = HOLDER) -> None:
        # Ray's token auth (its default for a new cluster) needs each client to ask for it:
        # the head here, and the servers, which inherit the head's environment
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        self._process = subprocess.Popen([sys.executable, "-P", str(holder)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def connect(self, init: Callable[..., Any], **kwargs: Any) -> Any:
        """``init(address=<the cluster's>)`` once the cluster is up (its one line)."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        address = process.stdout.readline().decode().strip()
        if not address:
            code = process.wait()
            process.stdin.close()
            process.stdout.close()
            msg = f"the Ray cluster started for Gym's head exited ({code}) before it was up"
            raise RuntimeError(msg)
        return init(address=address, **kwargs)


def starts_own_ray(args: list[str]) -> bool:
    """Whether ``gym ARGS`` is a head that will start a new local Ray cluster: ``env start``
    without a cluster to join and not a dry run (which installs and starts no Ray)."""
    overrides = {arg.lstrip("+").partition("=")[0]: arg.partition("=")[2] for arg in args[2:]}
    return (args[:2] == ["env", "start"] and not overrides.get("ray_head_node_address")
            and overrides.get("dry_run", "false").lower() not in ("true", "1"))


def install(early: EarlyRay | None = None) -> bool:
    """Replace both (each on its own); False unless this Gym had both to replace. ``early``:
    the cluster being started already, which the head's ``ray.init()`` of a new one waits for."""
    try:
        from nemo_gym import server_utils  # type: ignore[import-not-found]
        from nemo_gym.cli import env  # type: ignore[import-not-found]
    except ImportError:
        return False
    polls = _poll_faster(env)
    ray = _start_ray_without_dashboard(server_utils, early)
    return polls and ray


def _poll_faster(env: Any) -> bool:
    """The sleep of the head's wait loops is :func:`poll_sleep`."""
    if getattr(env, "sleep", None) is not time.sleep:
        return False
    env.sleep = poll_sleep
    return True


def _start_ray_without_dashboard(server_utils: Any, early: EarlyRay | None = None) -> bool:
    """The head's ``ray.init()`` of a new local cluster (no address) starts no dashboard UI,
    or is the one ``early`` made."""
    get_ray = getattr(server_utils, "_get_ray", None)
    if get_ray is None:
        return False

    def _get_ray() -> Any:
        ray = get_ray()
        init = ray.init
        if not getattr(init, "envkit", False):
            def init_without_dashboard(*args: Any, **kwargs: Any) -> Any:
                if not args and "address" not in kwargs:
                    if early is not None:
                        return early.connect(init, **kwargs)
                    kwargs.setdefault("include_dashboard", False)
                return init(*args, **kwargs)
            init_without_dashboard.envkit = True  # type: ignore[attr-defined]
            ray.init = init_without_dashboard
        return ray

    server_utils._get_ray = _get_ray
    return True


def main() -> None:
    install(EarlyRay() if starts_own_ray(sys.argv[1:]) else None)
    from nemo_gym.cli.main import main as gym_main  # type: ignore[import-not-found]

    # what Gym's console script would have in argv[0]: its usage lines name `gym`
    sys.argv[0] = str(Path(sys.executable).with_name("gym"))
    sys.exit(gym_main())


if __name__ == "__main__":
    main()
