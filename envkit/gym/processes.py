"""Process-tree teardown: a run leaves no orphan (Gym servers, their venv setup, Ray).

Gym starts every server with ``shell=True`` and no process group of its own, and Ray starts
daemons that can outlive their parent. envkit therefore starts ``gym`` as the leader of a new
session, remembers every descendant it has seen (``psutil`` identity = pid + create time, so a
recycled pid is never killed), and on teardown signals the group, waits, then kills what is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time

import psutil

__all__ = ["ProcessTree", "free_port"]


class ProcessTree:
    """Tracks a session leader and all of its descendants for a clean, complete teardown."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._seen: dict[int, float] = {}
        self.refresh()

    def refresh(self) -> None:
        """Record the current descendants (call periodically: daemons may re-parent later)."""
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                self._seen.setdefault(proc.pid, proc.create_time())

    def alive(self) -> list[psutil.Process]:
        """Processes of this tree still running (zombies count as gone)."""
        found = []
        for pid, created in self._seen.items():
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
        return found

    def terminate(self, grace_s: float = 20.0) -> list[int]:
        """SIGINT the group (Gym's own graceful shutdown), then SIGKILL stragglers.

        :returns: pids that had to be killed.
        """
        self.refresh()
        self._signal_group(signal.SIGINT)
        gone_by = time.monotonic() + grace_s
        while time.monotonic() < gone_by and self.alive():
            time.sleep(0.2)
            self.refresh()
        killed = []
        for proc in self.alive():
            with contextlib.suppress(psutil.Error):
                proc.kill()
                killed.append(proc.pid)
        self._signal_group(signal.SIGKILL)
        psutil.wait_procs(self.alive(), timeout=5)
        return killed

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


def free_port() -> int:
    """A TCP port nothing listens on right now (Gym's head server and Ray take one each)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
