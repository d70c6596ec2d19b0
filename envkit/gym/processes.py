"""Process-tree teardown: a run leaves no orphan (Gym servers, their shells, Ray).

Gym starts every server as ``bash -c "(cmd) | tee log"`` with no process group of its own, and
Ray's daemons ignore SIGINT and outlive their parent. So ``gym`` is started as a session
leader, and every process of that session, and every descendant seen, is tracked by identity
(pid + start time, so a recycled pid is never signalled). Stopping is SIGTERM to the whole tree
at once, a short grace, then SIGKILL. Not Gym's own shutdown, which interrupts each server in
turn and waits for each: by then envkit has read every answer and log it reports.

Why ``/proc`` and not psutil: the runtime is part of the base install, Gym runs on Linux, and
the facts needed (parent, session, start time) are one line of ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path
from typing import NamedTuple

__all__ = ["PROC", "STOP_GRACE_S", "Killed", "ProcessTree", "TrackedProcess", "free_port",
           "short_command"]

PROC = Path("/proc")
STOP_GRACE_S = 0.5
"""Long enough for a server's shutdown hook; what still runs by then is Ray's graceful
shutdown, which leaves nothing behind when killed either."""


class _Stat(NamedTuple):
    state: str
    ppid: int
    session: int
    started: int
    """Clock ticks since boot (field 22 of ``/proc/<pid>/stat``)."""


def _stat(pid: int) -> _Stat | None:
    """The fields of ``/proc/<pid>/stat`` used here; None when the process is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # ``comm`` (field 2) is parenthesised and may hold spaces or ')': split after the last one.
    fields = text[text.rfind(")") + 2:].split()
    return _Stat(fields[0], int(fields[1]), int(fields[3]), int(fields[19]))


class TrackedProcess(NamedTuple):
    """One process of a tree, by identity."""

    pid: int
    started: int

    def running(self) -> bool:
        """Still this process (not a recycled pid) and not a zombie."""
        stat = _stat(self.pid)
        return stat is not None and stat.started == self.started and stat.state not in "ZX"

    def cmdline(self) -> str:
        """The command line, for messages ("" once gone)."""
        try:
            raw = (PROC / str(self.pid) / "cmdline").read_bytes()
        except OSError:
            return ""
        return raw.replace(b"\0", b" ").decode(errors="replace").strip()

    def send(self, sig: signal.Signals) -> bool:
        """``sig``, if it is still this process; True when the signal was sent."""
        if not self.running():
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, sig)
            return True
        return False


class Killed(NamedTuple):
    """A process that had to be killed, with its command line read before the signal."""

    pid: int
    cmdline: str


class ProcessTree:
    """Tracks a session leader and all of its descendants for a clean, complete teardown."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        leader = _stat(pid)
        self._leader_started = leader.started if leader is not None else None
        self._seen: dict[int, int] = {}
        self.refresh()

    def refresh(self) -> None:
        """Record the session's processes and the leader's descendants (call periodically:
        daemons may re-parent to init, but they keep the session). Only while the leader is
        still the leader: once reaped, its pid and session id may be someone else's."""
        pids = (int(p.name) for p in PROC.iterdir() if p.name.isdigit())
        stats = {pid: s for pid in pids if (s := _stat(pid)) is not None}
        leader = stats.get(self.pid)
        if leader is None or leader.started != self._leader_started:
            return
        children: dict[int, list[int]] = {}
        for pid, stat in stats.items():
            children.setdefault(stat.ppid, []).append(pid)
        found = {pid for pid, stat in stats.items() if stat.session == self.pid}
        todo = [self.pid]
        while todo:
            pid = todo.pop()
            found.add(pid)
            todo += [c for c in children.get(pid, ()) if c not in found]
        for pid in found:
            self._seen.setdefault(pid, stats[pid].started)

    def alive(self) -> list[TrackedProcess]:
        """Processes of this tree still running (zombies count as gone)."""
        procs = (TrackedProcess(pid, started) for pid, started in self._seen.items())
        return [p for p in procs if p.running()]

    def terminate(self, grace_s: float = STOP_GRACE_S) -> list[Killed]:
        """SIGTERM every process of the tree, wait up to ``grace_s`` for them to exit, then
        SIGKILL what is left.

        :returns: the processes that had to be killed.
        """
        self.refresh()
        for process in self.alive():
            process.send(signal.SIGTERM)
        self._signal_group(signal.SIGTERM)  # one forked since the refresh, in the session
        deadline = time.monotonic() + grace_s
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
            self.refresh()
        named = [(p, p.cmdline()) for p in self.alive()]
        killed = [Killed(p.pid, cmdline) for p, cmdline in named
                  if p.send(signal.SIGKILL)]
        self._signal_group(signal.SIGKILL)
        gone_by = time.monotonic() + 5
        while self.alive() and time.monotonic() < gone_by:
            time.sleep(0.05)
        return killed

    def _signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


def free_port() -> int:
    """A TCP port nothing listens on right now (Gym's head server and Ray take one each)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def short_command(cmdline: str) -> str:
    """A process's command for a log line: program and first argument, paths as base names
    (``python gym``, ``python app.py``, ``raylet``)."""
    return " ".join(Path(part).name for part in cmdline.split()[:2]) or "?"
