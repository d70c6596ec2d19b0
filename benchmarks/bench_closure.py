"""Closure check: envkit (in-process) against ``uv pip compile --offline --no-index``.

    python benchmarks/bench_closure.py [--arch aarch64] [-n 15] [--deep]

The ``ray[default]`` + ``openai==2.44.0`` closure for the target (~66 wheels, ~110 MB) is
downloaded once into ``~/.cache/envkit-tests/``. envkit's timing covers everything the offline
verdict needs: reading every wheel (zip directory, METADATA, RECORD checks), the walk, and the
duplicate / dead-weight scans; its requirement and marker caches are cleared before each run.
uv's timing is the whole subprocess (it keeps its own metadata cache warm between runs, as it
would in CI). Then both tools see a wheelhouse with a duplicate and a dead wheel added: uv
resolves it without complaint, envkit reports both.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fixtures"))

import realwheels  # noqa: E402
from packaging.requirements import Requirement  # noqa: E402
from wheelfactory import make_wheel  # noqa: E402

from envkit.model import closure  # noqa: E402
from envkit.model.target import Target  # noqa: E402
from envkit.model.wheelfile import read_wheel  # noqa: E402

ROOTS = ["ray[default]", "openai==2.44.0"]


def envkit_check(house: Path, target: Target, *, deep: bool = False) -> dict[str, list[str]]:
    """The offline verdict for ``house``: missing, blocked, duplicated and dead projects."""
    wheels = [read_wheel(p, deep=deep) for p in sorted(house.glob("*.whl"))]
    roots = [closure.Root(Requirement(r), "bench", "-") for r in ROOTS]
    result = closure.walk(wheels, roots, target)
    versions = Counter(w.name for w in {(w.name, w.version): w for w in wheels}.values())
    return {
        "missing": [m.text for m in result.missing],
        "blocked": sorted(result.blocked),
        "duplicates": sorted(n for n, c in versions.items() if c > 1),
        "dead": sorted(w.filename for w in wheels if w.name not in result.reached),
        "record": [f"{w.filename}: {i}" for w in wheels for i in w.record_issues],
        "unreadable": [w.filename for w in wheels if w.error],
    }


def _time_envkit(
    house: Path, target: Target, n: int, deep: bool
) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds per run (CPU time is what survives a loaded, shared machine)."""
    times, cpu = [], []
    for _ in range(n):
        closure.parse_requirement.cache_clear()
        closure._marker_true.cache_clear()  # a cold walk is what is measured
        fresh = Target(target.arch, target.python, target.glibc)  # tag set rebuilt too
        start, start_cpu = time.perf_counter(), time.process_time()
        envkit_check(house, fresh, deep=deep)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return times, cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time_uv(house: Path, arch: str, n: int) -> tuple[list[float], list[float]]:
    times, cpu = [], []
    for _ in range(n):
        start, start_cpu = time.perf_counter(), _children_cpu()
        ok, err = realwheels.uv_offline_ok(ROOTS, house, arch)
        times.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - start_cpu)
        if not ok:
            sys.exit(f"uv failed on the complete closure: {err}")
    return times, cpu


def _with_junk(house: Path, dest: Path) -> Path:
    """``house`` plus a second `six` version and a wheel nothing requires."""
    for wheel in house.glob("*.whl"):
        os.link(wheel, dest / wheel.name)
    make_wheel(dest, "six", "1.16.0", tag="py2.py3-none-any")
    make_wheel(dest, "left-over", "1.0")
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="aarch64", choices=("aarch64", "x86_64"))
    parser.add_argument("-n", type=int, default=15, help="envkit runs (uv gets n // 2 + 1)")
    parser.add_argument("--deep", action="store_true", help="hash every member (--verify-hashes)")
    args = parser.parse_args()
    target = Target(args.arch)
    house = realwheels.wheelhouse("ray-openai", ROOTS, args.arch)
    count = len(list(house.glob("*.whl")))
    verdict = envkit_check(house, target, deep=args.deep)
    assert not any(verdict.values()), verdict
    envkit_t, envkit_cpu = _time_envkit(house, target, args.n, args.deep)
    uv_t, uv_cpu = _time_uv(house, args.arch, args.n // 2 + 1)
    e_ms, u_ms = statistics.median(envkit_t) * 1e3, statistics.median(uv_t) * 1e3
    print(f"closure: {' + '.join(ROOTS)} for {target} ({count} wheels, {house})")
    print(f"envkit : median {e_ms:7.1f} ms wall, {statistics.median(envkit_cpu) * 1e3:7.1f} ms CPU"
          f"  (min wall {min(envkit_t) * 1e3:.1f}, n={len(envkit_t)}"
          f"{', deep hashes' if args.deep else ''})")
    print(f"uv     : median {u_ms:7.1f} ms wall, {statistics.median(uv_cpu) * 1e3:7.1f} ms CPU"
          f"  (min wall {min(uv_t) * 1e3:.1f}, n={len(uv_t)})")
    met = "MET" if e_ms <= 100 and u_ms / e_ms >= 7 else "NOT MET"
    print(f"ratio  : envkit is {u_ms / e_ms:.1f}x faster than uv "
          f"(targets: <= 100 ms, >= 7x) -> {met}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(dir=house.parent) as tmp:
        junk = _with_junk(house, Path(tmp))
        uv_ok, _ = realwheels.uv_offline_ok(ROOTS, junk, args.arch)
        found = envkit_check(junk, target)
        uv_says = "resolves (silent)" if uv_ok else "fails"
        print(f"with a duplicate and a dead wheel added: uv {uv_says}; envkit reports "
              f"duplicates={found['duplicates']} dead={found['dead']}")


if __name__ == "__main__":
    main()
