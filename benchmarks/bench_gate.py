"""The gate as a pre-commit hook feels it: one small package; 145 real Gym packages in one run.

    python benchmarks/bench_gate.py [--runs 11] [--quick] [--no-gym]

Measured in one run, whole ``envkit validate`` processes (the console script users run):

- small: ``envkit validate fixtures/packages/valid-native-v1/pkg --offline``, CPU (user + sys),
  with bytecode (a private ``PYTHONPYCACHEPREFIX``, warmed once) and without (
  ``PYTHONDONTWRITEBYTECODE=1``, as this machine sets it: an editable checkout then compiles
  envkit's sources on every start); anchor ``python -c pass``. Goals: <= 60 ms CPU with
  bytecode, <= 100 ms without.
- tree: ``envkit validate CORPUS`` over one native-v1 package per ``resources_servers/<impl>``
  of the nemo-gym 0.7.0 wheel (145; ``bench_validate_corpus.corpus()`` builds and caches it),
  one process, wall and CPU; anchor ``gym env resolve`` on one package, times the count (Gym's
  own config resolution, no servers). Goal: <= 0.2 s.

Findings (``-X importtime``, cProfile; load-independent figures are instruction counts from
``valgrind --tool=callgrind``, whole process; ``python -c pass`` is 88 M). The small gate spent
~90% of its instructions importing. ``packaging`` alone was ~170 M: it compiles its grammar's
regexes at import, and ``envkit.model.target``/``wheelfile``/``reqfiles``/``closure`` and
``validators.wheels`` imported it at the top although a native-v1 package with no
requirement line never parses one. ``importlib.resources`` (``tempfile``, ``shutil``,
``random``) was imported to find JSON files next to the code; the job, dataset and lock models
and the renderers of other commands' results were imported with none to read. Each frozen
dataclass costs ~4 M (``dataclasses`` ``exec``s six generated methods); 32 are left on the path
(settings, report, package model, rule records, Gym view). Now: 809 M -> 586 M with bytecode,
1,299 M -> 999 M without (envkit's ~390 KB of sources on the path compiled on every start).
What is left is click (~100 M with ``inspect``, ``uuid``), PyYAML (~100 M), the rule modules
(their ``Rule`` records are the registry ``--select`` checks against) and ``gym.json``.
Over the tree the run was per-package work: YAML events (~35%), the Gym-config checks, the
walk and reads; selectors were parsed three times per package against every rule's prefixes
and the checks re-wrapped per package (now once per process), a realpath taken twice per
package, ABC ``isinstance`` checks on every YAML key and config node (now a ``dict`` check
first): 2,514 M -> 1,831 M.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _timing import DEFAULT_RUNS, QUICK_RUNS, load_line, time_process, verdict  # noqa: E402

SMALL = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
_SCRIPT = Path(sys.executable).parent / "envkit"
ENVKIT = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "envkit"]
SMALL_GOAL_S, SMALL_NOBYTECODE_GOAL_S, TREE_GOAL_S = 0.060, 0.100, 0.2


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "UV_", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"))}
    return {**env, **extra}


def small(runs: int, pyc: str) -> None:
    cmd = [*ENVKIT, "validate", str(SMALL), "--offline"]
    stale = list((ROOT / "envkit").rglob("__pycache__"))
    warm = _env(PYTHONPYCACHEPREFIX=pyc)
    time_process(cmd, 1, env=warm)
    time_process([sys.executable, "-c", "pass"], 1, env=warm)
    with_bc = time_process(cmd, runs, env=warm)
    floor_bc = time_process([sys.executable, "-c", "pass"], runs, env=warm)
    cold = _env(PYTHONDONTWRITEBYTECODE="1")
    without = time_process(cmd, runs, env=cold)
    floor = time_process([sys.executable, "-c", "pass"], runs, env=cold)
    print(f"small gate: {SMALL.relative_to(ROOT)} --offline; {load_line()}")
    print(with_bc.line("envkit validate (bytecode)"))
    print(floor_bc.line("python -c pass (bytecode)"))
    print(without.line("envkit validate (no bytecode)"))
    print(floor.line("python -c pass (no bytecode)"))
    if stale:
        print(f"note: {len(stale)} envkit __pycache__ dirs exist; 'no bytecode' then reads them")
    print(f"RESULT small gate: {with_bc.cpu_s * 1e3:.0f} ms CPU with bytecode "
          f"({with_bc.cpu_s / floor_bc.cpu_s:.1f}x python -c pass; goal <= 60 ms: "
          f"{verdict(with_bc.cpu_s <= SMALL_GOAL_S)}), {without.cpu_s * 1e3:.0f} ms without "
          f"(goal <= 100 ms: {verdict(without.cpu_s <= SMALL_NOBYTECODE_GOAL_S)})")


def tree(runs: int, gym: bool, pyc: str) -> None:
    from bench_validate_corpus import corpus

    packages = corpus()
    members = sorted(str(p) for p in packages.iterdir() if (p / "nemo-environment.yaml").is_file())
    count = len(members)
    # Each package named (a directory of packages is no package: EK100, not a search).
    cmd = [*ENVKIT, "validate", *members, "--output-format", "json"]
    env = _env(PYTHONPYCACHEPREFIX=pyc)  # bytecode, kept out of the checkout
    time_process(cmd, 1, env=env, ok=(0, 1))
    done = time_process(cmd, runs, env=env, ok=(0, 1))
    checked = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if len(json.loads(checked.stdout)["packages"]) != count:
        raise SystemExit(f"expected {count} packages in the report")
    print(f"tree: {count} packages ({packages}); {load_line()}")
    print(done.line(f"envkit validate TREE ({count})"))
    anchor = ""
    if gym:
        resolve = _gym_resolve(packages)
        if resolve is not None:
            anchor = (f"; gym env resolve {resolve.wall_s:.2f} s per package -> "
                      f"{resolve.wall_s * count:.0f} s for {count} (extrapolated): envkit "
                      f"{resolve.wall_s * count / done.wall_s:.0f}x faster")
    print(f"RESULT tree: {done.wall_s:.3f} s wall, {done.cpu_s:.3f} s CPU for {count} packages "
          f"(goal <= {TREE_GOAL_S} s: {verdict(done.wall_s <= TREE_GOAL_S)}; CPU "
          f"{verdict(done.cpu_s <= TREE_GOAL_S)}){anchor}")


def _gym_resolve(packages: Path):  # type: ignore[no-untyped-def]
    """``gym env resolve`` on the first package, three runs (None without a Gym venv)."""
    venvs = sorted((Path(os.environ.get("ENVKIT_CACHE_DIR", "") or Path.home() / ".cache/envkit")
                    / "gym-venvs").glob("nemo-gym-0.7.0-*/bin/gym"))
    if not venvs:
        print("gym env resolve: skipped (no Gym venv cached; run the smoke benchmark first)")
        return None
    pkg = sorted(p for p in packages.iterdir() if (p / "nemo-environment.yaml").is_file())[0]
    manifest = (pkg / "nemo-environment.yaml").read_text()
    configs = [line.strip()[2:] for line in manifest.splitlines() if line.startswith("  - ")]
    cmd = [str(venvs[-1]), "env", "resolve", *[a for c in configs for a in ("--config", c)]]
    return time_process(cmd, 3, env=_env(NO_COLOR="1"), cwd=str(pkg), ok=(0, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs each")
    parser.add_argument("--no-gym", action="store_true", help="skip the gym env resolve anchor")
    parser.add_argument("--only", choices=("small", "tree"))
    args = parser.parse_args()
    runs = QUICK_RUNS if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="bench-gate-pyc-") as pyc:
        if args.only != "tree":
            small(runs, pyc)
        if args.only != "small":
            tree(runs, not args.no_gym, pyc)


if __name__ == "__main__":
    main()
