"""Find processes a test started, by an environment marker they all inherit.

Why a marker and not a process name: other people's Ray clusters and Gym servers run on the
same machine under the same names; a unique value in the environment is only ours.
"""

from __future__ import annotations

import time
import uuid

import psutil

__all__ = ["MARK", "new_mark", "survivors"]

MARK = "ENVKIT_TEST_RUN_MARK"


def new_mark(monkeypatch) -> str:
    """Put a fresh marker into this process's environment (children inherit it)."""
    value = uuid.uuid4().hex
    monkeypatch.setenv(MARK, value)
    return value


def survivors(value: str, wait_s: float = 30.0) -> list[str]:
    """Processes other than this one carrying ``value``, once none are left or ``wait_s`` passed."""
    me = psutil.Process().pid
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for proc in psutil.process_iter(["status"]):
            if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            try:
                if proc.environ().get(MARK) == value:
                    found.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
            except psutil.Error:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(1.0)
