"""The gate as a pre-commit hook or a CI job feels it: one small package; 145 real Gym packages
in one run. Figures go in ``benchmarks/RESULTS.md`` ("Validate gate").

    python benchmarks/bench_gate.py [--runs 11] [--quick] [--no-gym] [--only small|tree]

Whole ``envkit validate`` processes (the console script users run), each goal a ratio against
an anchor measured in the same run:

- small: ``envkit validate fixtures/packages/valid-native-v1/pkg --offline``, CPU (user + sys)
  with bytecode (a private ``PYTHONPYCACHEPREFIX``, warmed once); anchor ``python -c pass``
  with the same bytecode settings, the three commands (stored, ``--no-cache``, the anchor)
  timed in rounds (``_timing.time_rounds``), as the tree's two are. Goal: <= 5x the anchor.
  Why this anchor: a hook's run is dominated by the interpreter's start and envkit's imports,
  and the ratio holds on a slower or busier machine where an absolute figure does not.
- tree: ``envkit validate`` naming one native-v1 package per ``resources_servers/<impl>`` of
  the nemo-gym 0.7.0 wheel (145; ``bench_validate_corpus.corpus()`` builds and caches them),
  wall time, with the stores a second run finds (tree stamps, wheel facts) and with
  ``--no-cache``; anchor ``gym env resolve`` of one package (the first that resolves, with
  every config its manifest lists, in a copy: Hydra writes ``outputs/`` into its working
  directory). Goal: envkit >= 1,500x faster per package than Gym's own config resolution.

Every run validates anew: there is no stored verdict to answer from (``docs/security.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _timing import (  # noqa: E402
    DEFAULT_RUNS,
    QUICK_RUNS,
    Timing,
    load_line,
    time_process,
    time_rounds,
    verdict,
)

SMALL = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
_SCRIPT = Path(sys.executable).parent / "envkit"
ENVKIT = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "envkit"]
SMALL_GOAL_X = 5.0
"""The small gate's CPU, at most this many times ``python -c pass``'s."""
TREE_GOAL_X = 1500.0
"""envkit per package at least this many times faster than ``gym env resolve``."""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "UV_", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE",
                                "ENVKIT_NO_CACHE"))}
    return {**env, **extra}


@contextlib.contextmanager
def _filled_store(cmd: list[str], env: dict[str, str]) -> Iterator[dict[str, str]]:
    """``env`` with a cache directory of its own that one run of ``cmd`` filled (a hook's usual
    case: the stores hold what the last run saw)."""
    with tempfile.TemporaryDirectory(prefix="bench-gate-cache-") as store:
        stored = {**env, "ENVKIT_CACHE_DIR": store}
        time_process(cmd, 1, env=stored, ok=(0, 1))
        yield stored


def small(runs: int, pyc: str) -> None:
    cmd = [*ENVKIT, "validate", str(SMALL), "--offline"]
    env = _env(PYTHONPYCACHEPREFIX=pyc)
    time_process([*cmd, "--no-cache"], 1, env=env)  # writes the bytecode
    time_process([sys.executable, "-c", "pass"], 1, env=env)
    with _filled_store(cmd, env) as stored:
        gate, plain, floor = time_rounds(
            [(cmd, stored), ([*cmd, "--no-cache"], env), ([sys.executable, "-c", "pass"], env)],
            runs)
    print(f"small gate: {SMALL.relative_to(ROOT)} --offline; {load_line()}")
    print(gate.line("validate (bytecode)"))
    print(plain.line("validate --no-cache (bytecode)"))
    print(floor.line("python -c pass (bytecode)"))
    ratio = gate.cpu_s / floor.cpu_s
    print(f"RESULT small gate: {gate.cpu_s * 1e3:.0f} ms CPU with bytecode = {ratio:.1f}x "
          f"python -c pass ({floor.cpu_s * 1e3:.0f} ms); --no-cache {plain.cpu_s * 1e3:.0f} ms "
          f"= {plain.cpu_s / floor.cpu_s:.1f}x; goal <= {SMALL_GOAL_X:.0f}x: "
          f"{verdict(ratio <= SMALL_GOAL_X)}")


def tree(runs: int, gym: bool, pyc: str) -> None:
    from bench_validate_corpus import corpus

    packages = corpus()
    members = sorted(str(p) for p in packages.iterdir() if (p / "nemo-environment.yaml").is_file())
    count = len(members)
    cmd = [*ENVKIT, "validate", *members, "--output-format", "json"]  # each package named
    env = _env(PYTHONPYCACHEPREFIX=pyc)
    time_process([*cmd, "--no-cache"], 1, env=env, ok=(0, 1))
    checked = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if len(json.loads(checked.stdout)["packages"]) != count:
        raise SystemExit(f"expected {count} packages in the report")
    with _filled_store(cmd, env) as filled:
        stored, plain = time_rounds([(cmd, filled), ([*cmd, "--no-cache"], env)], runs,
                                    ok=(0, 1))
    print(f"tree: {count} packages ({packages}); {load_line()}")
    print(stored.line(f"validate TREE ({count})"))
    print(plain.line(f"validate TREE ({count}) --no-cache"))
    resolve = _gym_resolve(packages, min(runs, 3)) if gym else None
    for label, timing in (("", stored), (" --no-cache", plain)):
        per = timing.wall_s / count
        tail = ""
        if resolve is not None:
            faster = resolve.wall_s / per
            tail = (f"; gym env resolve {resolve.wall_s:.2f} s per package: envkit "
                    f"{faster:,.0f}x faster per package (goal >= {TREE_GOAL_X:,.0f}x: "
                    f"{verdict(faster >= TREE_GOAL_X)})")
        print(f"RESULT tree{label}: {timing.wall_s:.3f} s wall, {timing.cpu_s:.3f} s CPU for "
              f"{count} packages ({per * 1e3:.2f} ms each){tail}")


_POLICY = ("++policy_base_url=http://127.0.0.1:1/v1", "++policy_api_key=x",
           "++policy_model_name=policy")
"""What a job sets for the policy model's interpolations (nothing is contacted)."""


def _gym_resolve(packages: Path, runs: int) -> Timing | None:
    """``gym env resolve`` of the first package whose configs Gym resolves (rc 0), with every
    config the manifest lists, ``runs`` runs (None without a Gym venv)."""
    import shutil

    import yaml

    from envkit.supply.root import cache_dir

    venvs = sorted((Path(cache_dir()) / "gym-venvs").glob("nemo-gym-0.7.0-*/bin/gym"))
    if not venvs:
        print("gym env resolve: skipped (no Gym venv cached; run the smoke benchmark first)")
        return None
    env = _env(NO_COLOR="1")
    candidates = sorted(p for p in packages.iterdir() if (p / "nemo-environment.yaml").is_file())
    for pkg in candidates[:8]:
        with tempfile.TemporaryDirectory(prefix="bench-gate-resolve-") as tmp:
            copy = Path(tmp) / pkg.name
            shutil.copytree(pkg, copy, symlinks=True)
            manifest = yaml.safe_load((copy / "nemo-environment.yaml").read_text())
            configs = [a for c in manifest["config_paths"] for a in ("--config", c)]
            cmd = [str(venvs[-1]), "env", "resolve", *configs, *_POLICY]
            if subprocess.run(cmd, env=env, cwd=copy, capture_output=True,
                              check=False).returncode != 0:
                continue  # a config that needs what the package does not ship
            print(f"gym env resolve: {pkg.name} ({len(configs) // 2} configs)")
            timing = time_process(cmd, runs, env=env, cwd=str(copy))
            print(timing.line("gym env resolve (one package)"))
            return timing
    print("gym env resolve: skipped (none of the first 8 packages resolves)")
    return None


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
