"""One ``envkit validate`` run over every resources server of the nemo-gym wheel, against Gym.

    python benchmarks/bench_validate_corpus.py [--runs 3] [--gym-sample 10]

Builds (once, cached under ``$ENVKIT_CACHE_DIR/bench-corpus``) one native-v1 package per
``resources_servers/<impl>`` of the nemo-gym 0.7.0 wheel (the wheel that
``fixtures/gym_trees/fetch_gym_servers.py`` downloads; ``envkit build --format native-v1``),
then measures, in this run:

- ``envkit validate CORPUS`` (one process, every package), wall seconds, median of ``--runs``;
- ``envkit validate`` on one small package next to ``python -c pass`` (interpreter start-up);
- ``gym env resolve`` (Gym's own config resolution, no servers started) on ``--gym-sample``
  packages, extrapolated per package to the whole corpus; the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures" / "gym_trees"))

from fetch_gym_servers import GYM_VERSION, _download_wheel, default_dest  # noqa: E402

from envkit.supply.cache import cache_root  # noqa: E402

SMALL = ROOT / "fixtures" / "packages" / "valid-native-v1" / "pkg"
_SCRIPT = Path(sys.executable).parent / "envkit"
ENVKIT = [str(_SCRIPT)] if _SCRIPT.is_file() else [sys.executable, "-m", "envkit"]
"""The console script users run (``python -m envkit`` only where it is not installed)."""


def _tree(wheel: Path, dest: Path) -> Path:
    """Every server directory of the wheel (resources servers and the models they reference)."""
    tree = dest / "tree-all"
    if (tree / "resources_servers").is_dir():
        return tree
    staging = Path(tempfile.mkdtemp(prefix=".tree-", dir=dest))
    with zipfile.ZipFile(wheel) as zf:
        for member in zf.namelist():
            if member.startswith(("resources_servers/", "responses_api_models/",
                                  "responses_api_agents/")):
                zf.extract(member, staging)
    staging.rename(tree)
    return tree


def corpus() -> Path:
    """One native-v1 package per resources server, built with ``envkit build`` (cached)."""
    out = cache_root() / "bench-corpus" / f"nemo-gym-{GYM_VERSION}"
    done = out / ".complete"
    if done.is_file():
        return out / "packages"
    wheel = _download_wheel(default_dest())
    tree = _tree(wheel, default_dest())
    servers = sorted(p for p in (tree / "resources_servers").iterdir() if p.is_dir())
    packages = out / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    for i, server in enumerate(servers, 1):
        dest = packages / server.name
        if not dest.is_dir():
            subprocess.run([*ENVKIT, "build", str(server), "--format", "native-v1", "-q",
                            "-o", str(dest), "--dataset-dir", str(out / "data" / server.name)],
                           stdout=subprocess.DEVNULL, check=False)
        print(f"\rbuilt {i}/{len(servers)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    done.write_text("")
    return packages


def _wall(cmd: list[str], runs: int) -> tuple[float, float, subprocess.CompletedProcess]:
    """Median wall seconds and median CPU seconds (user + sys) of ``runs`` runs.

    CPU time is reported too because a shared machine's load inflates wall time; on an idle
    machine the two agree for these single-threaded runs.
    """
    walls, cpus, last = [], [], None
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        last = subprocess.run(cmd, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    assert last is not None
    return statistics.median(walls), statistics.median(cpus), last


def _gym_resolve(gym: Path, packages: list[Path]) -> float:
    import yaml

    start = time.perf_counter()
    for pkg in packages:
        configs = yaml.safe_load((pkg / "nemo-environment.yaml").read_text())["config_paths"]
        args = [a for c in configs for a in ("--config", c)]
        subprocess.run([str(gym), "env", "resolve", *args], cwd=pkg, capture_output=True,
                       check=False, env={**os.environ, "NO_COLOR": "1"})
    return (time.perf_counter() - start) / len(packages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--gym-sample", type=int, default=10)
    args = parser.parse_args()
    packages = corpus()
    count = sum(1 for p in packages.iterdir() if (p / "nemo-environment.yaml").is_file())
    _wall([*ENVKIT, "validate", str(SMALL)], 1)  # warm the OS cache and any bytecode
    members = sorted(str(p) for p in packages.iterdir() if (p / "nemo-environment.yaml").is_file())
    # Each package named: a directory of packages is no package (EK100), never searched.
    full, full_cpu, done = _wall([*ENVKIT, "validate", *members, "--output-format", "json"],
                                 args.runs)
    report = json.loads(done.stdout)
    invalid = sum(not p["valid"] for p in report["packages"])
    small, small_cpu, _ = _wall([*ENVKIT, "validate", str(SMALL)], 11)
    floor, floor_cpu, _ = _wall([sys.executable, "-c", "pass"], 11)
    load = os.getloadavg()[0]
    print(f"corpus: {count} packages from nemo-gym {GYM_VERSION}'s resources servers "
          f"({invalid} invalid, {len(report['diagnostics'])} diagnostics)")
    print(f"envkit validate CORPUS (one run): {full:.2f} s wall, {full_cpu:.2f} s CPU, median "
          f"of {args.runs} ({full / count * 1000:.1f} ms per package)")
    print(f"envkit validate SMALL_PKG: {small:.3f} s wall, {small_cpu:.3f} s CPU; python -c pass: "
          f"{floor:.3f} s wall, {floor_cpu:.3f} s CPU (medians of 11; load average {load:.1f})")
    from envkit.gym.venv import ensure_gym_venv

    gym = ensure_gym_venv(allow_python_override=True).python.parent / "gym"
    sample = sorted(packages.iterdir())[:: max(1, count // args.gym_sample)][: args.gym_sample]
    per = _gym_resolve(gym, sample)
    print(f"gym env resolve: {per:.2f} s wall per package over {len(sample)} packages -> "
          f"{per * count:.0f} s for {count} (extrapolated); envkit is {per * count / full:.0f}x "
          "faster")


if __name__ == "__main__":
    main()
