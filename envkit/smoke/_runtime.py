"""The one place ``envkit smoke`` touches the Gym runtime (venvs, launch, client, diagnosis).

Why one module: every name smoke needs from ``envkit.gym`` (and the trainer's policy server) is
imported here, so a change of the runtime's layout is an edit to this file. What the runtime
lacks for a spin-up gate is added by wrapping: ``WatchedRuntime`` times each server's readiness
while ``gym env start`` waits for all of them (the readiness bound itself is the runtime's
``RuntimeOptions.ready_timeout_s``).
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from envkit.endpoint.generation import Completion, GenerationOutput
from envkit.endpoint.server import PolicyServer
from envkit.gym.client import RolloutAbortedError, collect
from envkit.gym.diagnose import diagnose_log
from envkit.gym.rollout import Rollout as RolloutResult
from envkit.gym.servers import GymRuntime
from envkit.gym.types import GymRuntimeError, GymServers, PolicyEndpoint, RuntimeOptions
from envkit.gym.venv import GymVenvError, ensure_gym_venv

__all__ = [
    "Completion",
    "GenerationOutput",
    "GymRuntimeError",
    "GymServers",
    "GymVenvError",
    "PolicyEndpoint",
    "PolicyServer",
    "ReadyWatch",
    "RolloutAbortedError",
    "RolloutResult",
    "RuntimeOptions",
    "WatchedRuntime",
    "collect",
    "diagnose_log",
    "ensure_gym_venv",
    "failed_server_of",
]


@dataclass
class ReadyWatch:
    """Per-server readiness as Gym judges it (any HTTP answer on the server's port)."""

    started: float = 0.0
    instances: dict[str, dict[str, Any]] = field(default_factory=dict)
    ready_s: dict[str, float] = field(default_factory=dict)
    head_ready_s: float | None = None
    stop: threading.Event = field(default_factory=threading.Event)

    def poll(self, head: str) -> None:
        """Until stopped: learn the instances from the head, then probe each until it answers."""
        while not self.stop.wait(0.5):
            if not self.instances:
                found = _get_json(f"{head}/server_instances")
                if isinstance(found, list):
                    self.instances = {str(i.get("process_name")): i for i in found
                                      if isinstance(i, dict)}
                continue
            for name, inst in self.instances.items():
                if name not in self.ready_s and inst.get("url") and _answers(str(inst["url"])):
                    self.ready_s[name] = time.monotonic() - self.started
            if self.head_ready_s is None and _answers(f"{head}/readyz", need_ok=True):
                self.head_ready_s = time.monotonic() - self.started
            if self.head_ready_s is not None and len(self.ready_s) == len(self.instances):
                return


class WatchedRuntime(GymRuntime):
    """``GymRuntime`` plus a thread that records when each server first answers.

    ``setup_s`` is the venv phase (cached venvs: a copy and a marker check), ``watch`` the
    launch phase, timed from ``gym env start``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watch = ReadyWatch()
        self.setup_s: float | None = None
        self._t0 = time.monotonic()
        self._launching = False
        self._thread: threading.Thread | None = None

    def _launch(self, gym: Any, venv_dir: Any, env: Any) -> GymServers:
        if self.setup_s is None:
            self.setup_s = time.monotonic() - self._t0
        self._launching = True
        try:
            return super()._launch(gym, venv_dir, env)
        finally:
            self._launching = False

    def _args(self, venv_dir: Any, head_port: int) -> list[str]:
        if self._launching:  # ``gym env start``'s arguments (prefetch builds them too)
            self._stop_watch()
            self.watch = ReadyWatch(started=time.monotonic())
            head = f"http://127.0.0.1:{head_port}"
            self._thread = threading.Thread(target=self.watch.poll, args=(head,), daemon=True,
                                            name="envkit-smoke-ready-watch")
            self._thread.start()
        return super()._args(venv_dir, head_port)

    def _stop_watch(self) -> None:
        self.watch.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def close(self, grace_s: float = 20.0, *, final: bool = True) -> None:
        self._stop_watch()
        super().close(grace_s, final=final)

    def server_log(self, name: str) -> str:
        """A server's log so far (the run dir goes with ``close``: read it before)."""
        run_dir = self._paths.run_dir if self._paths is not None else None
        path = run_dir / "logs" / f"{name}.log" if run_dir is not None else None
        return path.read_text(errors="replace") if path is not None and path.exists() else ""

    def all_logs(self) -> str:
        if self._paths is None:
            return ""
        run_dir = self._paths.run_dir
        return "\n".join(p.read_text(errors="replace")
                         for p in sorted((run_dir / "logs").glob("*.log")))

    def alive(self) -> bool:
        try:
            self.check_alive()
        except GymRuntimeError:
            return False
        return True

    def failed_server(self) -> str | None:
        """Dead Gym: the server Gym named as finished unexpectedly, if any."""
        try:
            self.check_alive()
        except GymRuntimeError as exc:
            return _named(str(exc))
        return None


def _named(message: str) -> str | None:
    if "(`" in message and "`)" in message:
        return message.split("(`", 1)[1].split("`)", 1)[0]
    return None


def failed_server_of(exc: GymRuntimeError) -> str | None:
    """The server a launch failure names (Gym: "Process `name` finished unexpectedly")."""
    return _named(str(exc))


def _answers(url: str, *, need_ok: bool = False) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200 or not need_ok
    except urllib.error.HTTPError:
        return not need_ok
    except (urllib.error.URLError, OSError):
        return False


def _get_json(url: str) -> Any:
    import json

    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None
