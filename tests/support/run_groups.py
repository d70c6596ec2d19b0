"""Run CI's test groups side by side: one pytest run per group, ``--lanes`` of them at a time.

Why lanes: a slow group spends part of its wall time waiting (a server that must not come up is
waited out, Ray and Gym's head poll on their clocks, the platform's services idle between
requests), so one group after another left CPU unused.
Each group is still its own pytest run (its own temp root, output and exit status), so what a
group costs and what it proves do not change; groups share only what is keyed by content
(``~/.cache``: venvs, wheels), whose writers already rename into place atomically.

Each group's processes get ``OMP_NUM_THREADS`` = cores / lanes (unless the caller set it): torch
(and Ray's workers, which pass the variable on) otherwise starts one OpenMP thread per core in
every lane, and OpenMP's threads spin while they wait for one another, burning the core the
other lane needs. Measured with the other core busy, one test that samples and trains a tiny
model (``tests/probe/test_model_gym.py``): 83 CPU s in 78 s wall with two threads, 48 in 48
with one; the whole suite in two lanes used ~40% more CPU than its groups one by one.

Groups start longest first (:data:`support.ci_groups.COST_S`), each on the first free lane, so
the last to end is a short one. Besides the lanes (one per core) there is a background lane
(``--background``): a group there runs at a low CPU weight, so it takes the CPU the others leave
idle while they wait, and yields most of it when they want it. Why: with two lanes the machine
was still ~15% idle, mostly in the run's second half (vmstat, 2026-12-04: 1,262 s of wall,
2,094 of 2,524 CPU seconds used), and two lanes alone cannot use it. The weight must be a
cgroup's: ``nice`` alone did nothing there (a third lane at +10 slowed the train group from
671 s to 1,029), since Linux's autogroups share the CPU between sessions first, and each group's
pytest, Gym's servers and Ray's daemons start sessions of their own.

Gym's bring-ups of every group join one Ray cluster (``python -m envkit.gym.ray_cluster``, as a
user keeps one for many bring-ups), started here before the groups and stopped after them. Why
not one per group's pytest session (``support.gym_ray``): an idle cluster's daemons take CPU
seconds every minute, and four groups bring Gym up, three of them for most of the run. A group's
tests still see a cluster of Ray's defaults, as they would alone; a test that must see Gym start
its own carries ``@pytest.mark.own_ray`` as before.

A group's output is printed whole when it ends (never interleaved); stderr says when each starts
and ends. Where the machine gives a cgroup v1 ``cpuacct`` controller, each group's processes
(Gym's servers and Ray's daemons included) are counted in a cgroup of their own, and the summary
gives each group's CPU seconds beside its wall time: under lanes a group's wall time is mostly
what the others left it, its CPU seconds what it costs. Every group runs even when an earlier
one failed; the exit status is that of the first failing group in CI order.

Run as a script: ``run_groups.py [--lanes N] [--background N] [GROUP ...]`` (no group: all of
them).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script
from envkit.gym.types import GYM_RAY_ADDRESS_ENV
from support.ci_groups import COST_S, GROUPS, INTERPRETERS, NEEDS, expression

REPO = Path(__file__).resolve().parents[2]
DEFAULT_LANES = 2
"""Lanes when neither ``--lanes`` nor ``$ENVKIT_TEST_LANES`` says: the 2-core CI machine."""
DEFAULT_BACKGROUND = 1
"""Background lanes when neither ``--background`` nor ``$ENVKIT_TEST_BACKGROUND`` says."""
BACKGROUND_NICE = 10
"""How much lower a background group's processes' priority is (among themselves)."""
BACKGROUND_SHARES = 256
"""The background cgroup's CPU weight, against 1,024 for each busy session of the lanes: about a
fifth of the machine while both lanes are busy, and all that they leave idle."""
GYM_RAY_GROUPS = frozenset(list(NEEDS)[: list(NEEDS).index("gym") + 1])
"""The groups that may run a ``gym`` test (a test runs in the first group of those it needs)."""
CGROUP_V1_CPU = Path("/sys/fs/cgroup/cpu")
CGROUP_V1_CPUACCT = Path("/sys/fs/cgroup/cpuacct")


@dataclass
class Run:
    """One group's pytest run: its process, its log, and when it started and ended."""

    group: str
    log: Path
    proc: subprocess.Popen[bytes]
    background: bool = False
    acct: Path | None = None
    started: float = field(default_factory=time.monotonic)
    seconds: float = 0.0
    cpu_s: float | None = None
    rc: int | None = None


def schedule(groups: list[str]) -> list[str]:
    """``groups`` in start order: the longest expected first (the order CI lists, for ties)."""
    return sorted(groups, key=lambda g: (-COST_S[g], GROUPS.index(g)))


def lane_env(environ: dict[str, str], lanes: int, cpus: int) -> dict[str, str]:
    """The environment of a group's run: ``environ`` with the lane's share of the cores as
    ``OMP_NUM_THREADS`` (at least one), unless ``environ`` already says."""
    if "OMP_NUM_THREADS" in environ:
        return dict(environ)
    return {**environ, "OMP_NUM_THREADS": str(max(1, cpus // lanes))}


def pytest_command(group: str) -> list[str]:
    """The group's pytest run: on the suite's interpreter, or on the group's own
    (:data:`support.ci_groups.INTERPRETERS`: built first, inside the group's time and log)."""
    args = ["-m", "pytest", "-m", expression(group), "-q", "--durations=15"]
    if group in INTERPRETERS:
        return [sys.executable, str(REPO / INTERPRETERS[group]), "--exec", *args]
    return [sys.executable, *args]


@contextlib.contextmanager
def background_cgroup(parent: Path = CGROUP_V1_CPU) -> Iterator[Path | None]:
    """A cgroup (v1 ``cpu``) of :data:`BACKGROUND_SHARES` for the background lane's groups,
    removed after; None where the machine gives none (no such controller, no permission): the
    background then has ``nice`` alone, which autogroups undo for every new session."""
    path = parent / f"envkit-ci-{os.getpid()}"
    try:
        path.mkdir()
        (path / "cpu.shares").write_text(str(BACKGROUND_SHARES))
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        yield None
        return
    try:
        yield path
    finally:
        with contextlib.suppress(OSError):  # a process still in it keeps it: leave it
            path.rmdir()


def accounting_cgroup(name: str, parent: Path = CGROUP_V1_CPUACCT) -> Path | None:
    """A cgroup (v1 ``cpuacct``) that counts one group's CPU time; None where the machine gives
    none (the summary then shows wall time alone), and where ``cpuacct`` shares its hierarchy
    with ``cpu``: a cgroup there would also take the group out of its autogroups and give it a
    weight (a process is in one cgroup of a hierarchy), which only the background's may."""
    path = parent / name
    with contextlib.suppress(OSError):
        if parent.resolve() == CGROUP_V1_CPU.resolve():
            return None
    try:
        path.mkdir()
    except OSError:
        return None
    return path


def cpu_seconds(acct: Path) -> float | None:
    """The CPU seconds the cgroup's processes used, children and the dead included; then the
    cgroup is removed (a process still in it keeps it: it is left)."""
    try:
        used = int((acct / "cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        return None
    with contextlib.suppress(OSError):
        acct.rmdir()
    return used


def _entering(cgroups: list[Path], background: bool) -> Callable[[], None]:
    """What a group's process runs before pytest: its descendants inherit its cgroups and, in
    the background, its nice value."""
    def enter() -> None:
        if background:
            os.nice(BACKGROUND_NICE)
        for cgroup in cgroups:
            with contextlib.suppress(OSError):
                (cgroup / "cgroup.procs").write_text(str(os.getpid()))
    return enter


def _start(group: str, root: Path, lanes: int, background: bool,
           cgroup: Path | None = None) -> Run:
    temp = root / group
    temp.mkdir()
    log = root / f"{group}.log"
    env = {**lane_env(dict(os.environ), lanes, os.cpu_count() or 1),
           "PYTEST_DEBUG_TEMPROOT": str(temp)}
    acct = accounting_cgroup(f"envkit-ci-{os.getpid()}-{group}")
    cgroups = [c for c in (acct, cgroup if background else None) if c is not None]
    with log.open("wb") as out:
        proc = subprocess.Popen(pytest_command(group), stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True,
                                preexec_fn=_entering(cgroups, background))
    weight = f", cpu.shares {BACKGROUND_SHARES}" if cgroup is not None else ""
    where = f" (background: nice +{BACKGROUND_NICE}{weight})" if background else ""
    print(f"--> group {group} started{where}", file=sys.stderr, flush=True)
    return Run(group, log, proc, background, acct)


def _finish(run: Run, root: Path) -> None:
    run.seconds = time.monotonic() - run.started
    run.cpu_s = cpu_seconds(run.acct) if run.acct is not None else None
    cpu = f", {run.cpu_s:.0f} CPU s" if run.cpu_s is not None else ""
    print(f"--> group {run.group} ended: exit {run.rc}, {run.seconds:.0f} s{cpu}",
          file=sys.stderr, flush=True)
    sys.stdout.write(f'\n==> group {run.group}: pytest -m "{expression(run.group)}" '
                     f"({run.seconds:.0f} s{cpu}, exit {run.rc}"
                     f"{', background' * run.background})\n")
    sys.stdout.write(run.log.read_text("utf-8", errors="replace"))
    sys.stdout.flush()
    shutil.rmtree(root / run.group, ignore_errors=True)  # GBs of packages and venvs


@contextlib.contextmanager
def shared_gym_ray(groups: list[str], root: Path) -> Iterator[Path | None]:
    """One Ray cluster for the Gym bring-ups of every group in ``groups``: its address in
    ``ENVKIT_GYM_RAY_ADDRESS`` for the groups started meanwhile; yields the cgroup that counts
    its CPU (None where none is counted). None is started where no group may run a ``gym``
    test, where the caller set the variable or ``ENVKIT_TEST_OWN_RAY``, or where it fails to
    start (each group's session then starts its own, and its log says why)."""
    if (not GYM_RAY_GROUPS & set(groups) or GYM_RAY_ADDRESS_ENV in os.environ
            or os.environ.get("ENVKIT_TEST_OWN_RAY")):
        yield None
        return
    acct = accounting_cgroup(f"envkit-ci-{os.getpid()}-gym-ray")
    log = root / "gym-ray.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "envkit.gym.ray_cluster", "--allow-python-override"],
            stdout=subprocess.PIPE, stderr=err, start_new_session=True,
            preexec_fn=_entering([acct] if acct is not None else [], False))
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline().decode()  # the address, once the Gym venv and Ray are up
        if line.startswith(f"export {GYM_RAY_ADDRESS_ENV}="):
            os.environ[GYM_RAY_ADDRESS_ENV] = line.split("=", 1)[1].strip()
            print(f"--> Gym's Ray cluster for every group at {os.environ[GYM_RAY_ADDRESS_ENV]}",
                  file=sys.stderr, flush=True)
        else:
            print(f"--> no shared Ray cluster for Gym (each group starts its own):\n"
                  f"{log.read_text('utf-8', errors='replace')[-2000:]}", file=sys.stderr,
                  flush=True)
        yield acct
    finally:
        os.environ.pop(GYM_RAY_ADDRESS_ENV, None)
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()  # the holder stops Ray (ray.shutdown) and exits
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()


def run_groups(groups: list[str], lanes: int, root: Path, background: int = 0) -> list[Run]:
    """Run ``groups`` with at most ``lanes`` at once, and ``background`` more at a low CPU
    weight; return every run, ended. A free lane is taken before a background one."""
    with background_cgroup() if background else contextlib.nullcontext() as cgroup:
        return _run(schedule(groups), lanes, root, background, cgroup)


def _run(pending: list[str], lanes: int, root: Path, background: int,
         cgroup: Path | None) -> list[Run]:
    running: list[Run] = []
    done: list[Run] = []
    try:
        while pending or running:
            while pending and len(running) < lanes + background:
                behind = sum(not r.background for r in running) >= lanes
                running.append(_start(pending.pop(0), root, lanes, behind, cgroup))
            time.sleep(0.5)
            for run in [r for r in running if r.proc.poll() is not None]:
                run.rc = run.proc.returncode
                running.remove(run)
                _finish(run, root)
                done.append(run)
    finally:
        for run in running:  # interrupted: stop every group's whole process tree
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.proc.pid, signal.SIGINT)
        for run in running:
            try:
                run.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(run.proc.pid, signal.SIGKILL)
            if run.acct is not None:
                cpu_seconds(run.acct)  # removes it (once its processes are gone)
    return done


def summary(runs: list[Run], wall_s: float, ray_cpu_s: float | None = None) -> tuple[str, int]:
    """The table of groups in CI order (wall time, exit status) and the run's exit status;
    ``ray_cpu_s``: the shared Ray cluster's CPU seconds, a line of its own and in the total."""
    ordered = sorted(runs, key=lambda r: GROUPS.index(r.group))
    def cpu(r: Run) -> str:
        return f"  {r.cpu_s:5.0f} CPU s" if r.cpu_s is not None else ""
    lines = [f"{r.group:<9} {r.seconds:5.0f}s{cpu(r)}  exit {r.rc}"
             f"{'  (background)' * r.background}" for r in ordered]
    if ray_cpu_s is not None:
        lines.append(f"{'gym-ray':<9} {wall_s:5.0f}s  {ray_cpu_s:5.0f} CPU s  (shared cluster)")
    status = next((r.rc for r in ordered if r.rc), 0) or 0
    counted = [r.cpu_s for r in ordered if r.cpu_s is not None]
    total = (f"  {sum(counted) + (ray_cpu_s or 0):5.0f} CPU s"
             if counted and len(counted) == len(ordered) else "")
    lines.append(f"{'all':<9} {wall_s:5.0f}s{total}  exit {status}")
    return "\n".join(lines), status


def _at_a_time(args: argparse.Namespace) -> str:
    extra = f" + {args.background} in the background" if args.background else ""
    return f"{args.lanes} at a time{extra}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("groups", nargs="*", metavar="GROUP",
                        help=f"groups to run (default: all; {', '.join(GROUPS)})")
    parser.add_argument("--lanes", type=int,
                        default=int(os.environ.get("ENVKIT_TEST_LANES", DEFAULT_LANES)),
                        help="groups at once (default: $ENVKIT_TEST_LANES or %(default)s)")
    parser.add_argument("--background", type=int,
                        default=int(os.environ.get("ENVKIT_TEST_BACKGROUND", DEFAULT_BACKGROUND)),
                        help="more groups at once at lower CPU priority, on what the lanes "
                             "leave idle (default: $ENVKIT_TEST_BACKGROUND or %(default)s)")
    args = parser.parse_args(argv)
    if args.lanes < 1:
        parser.error("--lanes must be at least 1")
    if args.background < 0:
        parser.error("--background must be at least 0")
    if unknown := [g for g in args.groups if g not in GROUPS]:
        parser.error(f"no CI group {', '.join(unknown)} (groups: {', '.join(GROUPS)})")
    start = time.monotonic()
    # pytest's temp dirs under a root of this run's own (PYTEST_DEBUG_TEMPROOT): every pytest
    # session of the same user prunes /tmp/pytest-of-$USER/ to its last three, so another
    # session (or group) would delete a running one's dirs.
    groups = list(args.groups or GROUPS)
    with tempfile.TemporaryDirectory(prefix="envkit-ci.") as root:
        with shared_gym_ray(groups, Path(root)) as ray_acct:
            print(f"--> {len(groups)} groups, {_at_a_time(args)}", file=sys.stderr, flush=True)
            runs = run_groups(groups, args.lanes, Path(root), args.background)
        ray_cpu_s = cpu_seconds(ray_acct) if ray_acct is not None else None
    table, status = summary(runs, time.monotonic() - start, ray_cpu_s)
    print(f"\n==> test groups (wall time, exit status; {_at_a_time(args)})\n{table}")
    return status


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
