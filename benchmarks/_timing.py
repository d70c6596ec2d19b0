"""What every speed benchmark shares: child-process CPU and wall times, medians, the load line.

CPU time (user + sys of the child) is the figure that survives a shared, loaded machine; wall
time is printed beside it. Each benchmark prints its figure, its anchor measured in the same run
and the ratio, with the load average, so a reader can tell a loaded run from a quiet one.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_RUNS = 11
QUICK_RUNS = 5


@dataclass(frozen=True)
class Timing:
    wall: list[float]
    cpu: list[float]

    @property
    def wall_s(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_s(self) -> float:
        return statistics.median(self.cpu)

    def add(self, other: Timing) -> None:
        """Take ``other``'s runs as this one's (runs timed one at a time, each set up apart)."""
        self.wall.extend(other.wall)
        self.cpu.extend(other.cpu)

    def line(self, label: str) -> str:
        return (f"{label:<34} median {self.cpu_s * 1e3:8.1f} ms CPU {self.wall_s * 1e3:8.1f} ms "
                f"wall (n={len(self.cpu)}, min CPU {min(self.cpu) * 1e3:.1f})")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_process(cmd: Sequence[str], runs: int, env: dict[str, str] | None = None,
                 cwd: str | None = None, ok: Sequence[int] = (0,)) -> Timing:
    """``runs`` runs of ``cmd`` (output discarded); a run whose exit status is not in ``ok``
    aborts the benchmark (a timing of a failure measures nothing)."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, start = children_cpu(), time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, check=False)
        walls.append(time.perf_counter() - start)
        cpus.append(children_cpu() - cpu0)
        if proc.returncode not in ok:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                             f"{proc.stdout.decode()[-2000:]}{proc.stderr.decode()[-2000:]}")
    return Timing(walls, cpus)


class Run(NamedTuple):
    """One command of a round: its environment, working directory and accepted exit codes."""

    cmd: Sequence[str]
    env: dict[str, str] | None = None
    cwd: str | None = None
    ok: Sequence[int] = (0,)


def time_rounds(cmds: Sequence[Run], runs: int) -> list[Timing]:
    """``runs`` rounds, each running every command of ``cmds`` once, in order; one ``Timing``
    per command.

    Why rounds: the machine drifts over a benchmark (the load, what the page cache holds), and
    a block of one command's runs followed by a block of the other's gives each a different
    machine; in rounds the drift falls on every command alike, so their ratio holds.
    """
    timings = [Timing([], []) for _ in cmds]
    for _ in range(runs):
        for run, timing in zip(cmds, timings, strict=True):
            timing.add(time_process(run.cmd, 1, env=run.env, cwd=run.cwd, ok=run.ok))
    return timings


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"
