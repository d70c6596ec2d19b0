"""A Ray cluster that Gym's servers join across bring-ups (``RuntimeOptions.ray_address``).

Gym's head starts a Ray cluster at every ``gym env start``, a large share of each bring-up.
Many bring-ups in a row (a CI job, a test suite, an edit-smoke loop) can share one, as Gym's
servers join NeMo-RL's cluster on the platform (``ray_head_node_address``). It must run Gym's
Ray on Gym's Python, or the servers could not join it.

    python -m envkit.gym.ray_cluster [--gym-version V] [--allow-python-override]

prints ``export ENVKIT_GYM_RAY_ADDRESS=...`` and holds the cluster until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from envkit.gym.install import gym_ray_env
from envkit.gym.processes import ProcessTree
from envkit.gym.types import GYM_RAY_ADDRESS_ENV, GymRuntimeError
from envkit.gym.venv import (
    DEFAULT_GYM_VERSION,
    GymVenv,
    ensure_gym_venv,
    python_override_from_env,
)
from envkit.supply.uvcmd import isolated_env

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["RAY_UNREACHABLE", "cannot_join", "check_reachable", "gym_ray_cluster", "join_failure",
           "main"]

HOLDER = Path(__file__).with_name("ray_cluster_main.py")
START_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
"""How long ``ray.shutdown()`` of a cluster with no driver left may take before it is killed."""


RAY_UNREACHABLE = "Failed to connect to Ray cluster at"
"""What Ray's ``ray.init(address=...)`` raises when the cluster to join is not there."""


def cannot_join(address: str, why: str) -> str:
    """The message of a bring-up that could not join the cluster at ``address``."""
    return (f"Gym could not join the Ray cluster at {address} (${GYM_RAY_ADDRESS_ENV}): {why}; "
            "start one with Gym's Ray and Python (`python -m envkit.gym.ray_cluster`), or unset "
            "it and let Gym start its own")


def join_failure(address: str | None, log: str) -> str | None:
    """The failure's message when ``log`` shows Ray could not join ``address``, else ``None``."""
    if address and RAY_UNREACHABLE in log:
        return cannot_join(address, "Ray refused the connection")
    return None


def check_reachable(address: str | None) -> None:
    """Something listens at ``address`` (Ray's GCS), else fail now: Gym's head would retry
    the connection for minutes before it gave up. ``None``: nothing to join, nothing checked.

    :raises GymRuntimeError: nothing answers there.
    """
    if address is None:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            return
    except (OSError, ValueError) as exc:
        raise GymRuntimeError(cannot_join(address, f"nothing answers there ({exc})"),
                              stage="start") from None


@contextlib.contextmanager
def gym_ray_cluster(gym: GymVenv) -> Iterator[str]:
    """A new Ray cluster on ``gym``'s Ray, up for the ``with`` block: yields its address.

    :raises GymRuntimeError: the cluster did not start (Ray's output in the message).
    """
    tmp = Path(tempfile.mkdtemp(prefix="envkit-gymray-shared-"))
    env = isolated_env()
    gym_ray_env(env, tmp)
    env["PYTHONUNBUFFERED"] = "1"
    log = tmp / "holder.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([str(gym.python), "-P", str(HOLDER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=sink, env=env,
                                start_new_session=True)
    tree = ProcessTree(proc.pid)
    try:
        address = _address(proc, log)
        tree.refresh()  # Ray's daemons, so a holder killed before its shutdown leaves none
        yield address
    finally:
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_GRACE_S)
        tree.terminate()
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(tmp, ignore_errors=True)


def _address(proc: subprocess.Popen[bytes], log: Path) -> str:
    """The holder's first line of stdout (the GCS address), within :data:`START_TIMEOUT_S`."""
    stdout = proc.stdout
    assert stdout is not None
    line: list[bytes] = []
    reader = threading.Thread(target=lambda: line.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    address = line[0].decode().strip() if line else ""
    if not address:
        text = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        msg = f"the Ray cluster for Gym's servers did not start:\n{text}"
        raise GymRuntimeError(msg, stage="start")
    return address


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envkit.gym.ray_cluster",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--gym-version", default=DEFAULT_GYM_VERSION)
    parser.add_argument("--gym-python", type=Path, default=None)
    parser.add_argument("--allow-python-override", action="store_true",
                        default=python_override_from_env())
    args = parser.parse_args(argv)
    gym = ensure_gym_venv(args.gym_version, python=args.gym_python,
                          allow_python_override=args.allow_python_override)
    # Ctrl-C and SIGTERM both stop it, also when started with `&` (a non-interactive shell
    # starts background jobs with SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        with gym_ray_cluster(gym) as address:
            sys.stdout.write(f"export {GYM_RAY_ADDRESS_ENV}={address}\n")
            sys.stdout.flush()
            sys.stderr.write(f"Ray cluster for Gym's servers at {address} (the Ray of "
                             f"{gym.root.name}); Ctrl-C stops it\n")
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
    except GymRuntimeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
