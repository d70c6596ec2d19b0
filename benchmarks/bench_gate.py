"""The gate as a pre-commit hook or a CI job feels it: one small package; 145 real Gym packages
in one run. Figures go in ``benchmarks/RESULTS.md`` ("Validate gate").

    python benchmarks/bench_gate.py [--runs 11] [--quick] [--no-gym] [--only small|tree] [--here]

Whole ``envkit validate`` processes (the console script users run), each goal a ratio against
an anchor measured in the same rounds (``_timing.time_rounds``: the machine's drift falls on
both alike):

- small: ``envkit validate fixtures/packages/valid-native-v1/pkg --offline``, CPU (user + sys)
  with bytecode (a private ``PYTHONPYCACHEPREFIX``, warmed once); anchor ``python -c pass``
  of the same venv with the same bytecode settings; the stored run and ``--no-cache``.
  Goal: <= 5x the anchor. ``python -c "import click, yaml"`` is timed in the same rounds:
  the part of the ratio that is the libraries', not envkit's. Why this anchor: a hook's run
  is dominated by the interpreter's start and envkit's imports, and the ratio holds on a
  slower or busier machine where an absolute figure does not.
- tree: ``envkit validate`` naming one native-v1 package per ``resources_servers/<impl>`` of
  the nemo-gym 0.7.0 wheel (145; ``bench_validate_corpus.corpus()`` builds and caches them),
  wall time, with the stores a second run finds (tree stamps, wheel facts) and with
  ``--no-cache``; anchor ``gym env resolve`` of one package (the first that resolves, with
  every config its manifest lists, in a copy: Hydra writes ``outputs/`` into its working
  directory). Goal: envkit >= 1,500x faster per package than Gym's own config resolution.

Which envkit: by default a wheel built from this checkout, installed in a new venv, as a hook
or a CI job installs it. ``--here`` times the envkit beside this interpreter instead; in an
editable install setuptools' finder runs at every interpreter start, ``python -c pass``'s
included, so the small ratio reads lower there than a user's install gives.

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
    Run,
    load_line,
    time_process,
    time_rounds,
    verdict,
)

SMALL = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
SMALL_GOAL_X = 5.0
"""The small gate's CPU, at most this many times ``python -c pass``'s."""
LIBRARIES = "import click, yaml"
"""The libraries every validate imports (its one CLI definition and its one YAML reader), timed
beside it to show how much of the ratio is theirs and how much envkit's."""
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


@contextlib.contextmanager
def _installed(here: bool) -> Iterator[Path]:
    """The ``bin`` directory whose ``envkit`` and ``python`` are timed: a new venv holding a
    wheel built from this checkout (``here``: this interpreter's own)."""
    if here:
        yield Path(sys.executable).parent
        return
    with tempfile.TemporaryDirectory(prefix="bench-gate-venv-") as tmp:
        dist, venv = Path(tmp) / "dist", Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
                        str(ROOT)], check=True, stdout=subprocess.DEVNULL)
        (wheel,) = dist.glob("*.whl")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
                       check=True, stdout=subprocess.DEVNULL)
        print(f"envkit: {wheel.name}, installed in a new venv")
        yield venv / "bin"


def _envkit(bin_dir: Path) -> list[str]:
    script = bin_dir / "envkit"
    return [str(script)] if script.is_file() else [str(bin_dir / "python"), "-m", "envkit"]


def small(bin_dir: Path, runs: int, pyc: str) -> None:
    cmd = [*_envkit(bin_dir), "validate", str(SMALL), "--offline"]
    anchor = [str(bin_dir / "python"), "-c", "pass"]
    libraries = [str(bin_dir / "python"), "-c", LIBRARIES]
    env = _env(PYTHONPYCACHEPREFIX=pyc)
    time_process([*cmd, "--no-cache"], 1, env=env)  # writes the bytecode
    time_process(anchor, 1, env=env)
    with _filled_store(cmd, env) as stored:
        gate, plain, floor, libs = time_rounds(
            [Run(cmd, stored), Run([*cmd, "--no-cache"], env), Run(anchor, env),
             Run(libraries, env)], runs)
    print(f"small gate: {SMALL.relative_to(ROOT)} --offline; {load_line()}")
    print(gate.line("validate (bytecode)"))
    print(plain.line("validate --no-cache (bytecode)"))
    print(floor.line("python -c pass (bytecode)"))
    print(libs.line("python -c 'import click, yaml'"))
    ratio = gate.cpu_s / floor.cpu_s
    print(f"RESULT small gate: {gate.cpu_s * 1e3:.0f} ms CPU with bytecode = {ratio:.1f}x "
          f"python -c pass ({floor.cpu_s * 1e3:.0f} ms); --no-cache {plain.cpu_s * 1e3:.0f} ms "
          f"= {plain.cpu_s / floor.cpu_s:.1f}x; goal <= {SMALL_GOAL_X:.0f}x: "
          f"{verdict(ratio <= SMALL_GOAL_X)}")
    print(f"the gate's libraries alone ({LIBRARIES}): {libs.cpu_s / floor.cpu_s:.1f}x "
          f"python -c pass; the gate is {gate.cpu_s / libs.cpu_s:.2f}x them")


def tree(bin_dir: Path, runs: int, gym: bool, pyc: str) -> None:
    from bench_validate_corpus import corpus

    packages = corpus()
    members = sorted(str(p) for p in packages.iterdir() if (p / "nemo-environment.yaml").is_file())
    count = len(members)
    cmd = [*_envkit(bin_dir), "validate", *members, "--output-format", "json"]  # each named
    env = _env(PYTHONPYCACHEPREFIX=pyc)
    time_process([*cmd, "--no-cache"], 1, env=env, ok=(0, 1))
    checked = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if len(json.loads(checked.stdout)["packages"]) != count:
        raise SystemExit(f"expected {count} packages in the report")
    with _filled_store(cmd, env) as filled, _gym_resolve(packages, gym) as anchor:
        timings = time_rounds([Run(cmd, filled, ok=(0, 1)),
                               Run([*cmd, "--no-cache"], env, ok=(0, 1)),
                               *([anchor] if anchor else [])], runs)
    stored, plain, *resolves = timings
    print(f"tree: {count} packages ({packages}); {load_line()}")
    print(stored.line(f"validate TREE ({count})"))
    print(plain.line(f"validate TREE ({count}) --no-cache"))
    resolve = resolves[0] if resolves else None
    if resolve is not None:
        print(resolve.line("gym env resolve (one package)"))
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


@contextlib.contextmanager
def _gym_resolve(packages: Path, gym: bool) -> Iterator[Run | None]:
    """``gym env resolve`` of the first package whose configs Gym resolves (rc 0), with every
    config the manifest lists, run in a copy of it (None: ``gym`` false, or no Gym venv)."""
    import shutil

    import yaml

    from envkit.supply.root import cache_dir

    venvs = sorted((Path(cache_dir()) / "gym-venvs").glob("nemo-gym-0.7.0-*/bin/gym"))
    if not gym or not venvs:
        print("gym env resolve: skipped" + ("" if not gym else
              " (no Gym venv cached; run the smoke benchmark first)"))
        yield None
        return
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
            yield Run(cmd, env, str(copy))
            return
    print("gym env resolve: skipped (none of the first 8 packages resolves)")
    yield None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs each")
    parser.add_argument("--no-gym", action="store_true", help="skip the gym env resolve anchor")
    parser.add_argument("--only", choices=("small", "tree"))
    parser.add_argument("--here", action="store_true",
                        help="time the envkit beside this interpreter, not a wheel's install")
    args = parser.parse_args()
    runs = QUICK_RUNS if args.quick else args.runs
    with (tempfile.TemporaryDirectory(prefix="bench-gate-pyc-") as pyc,
          _installed(args.here) as bin_dir):
        if args.only != "tree":
            small(bin_dir, runs, pyc)
        if args.only != "small":
            tree(bin_dir, runs, not args.no_gym, pyc)


if __name__ == "__main__":
    main()
