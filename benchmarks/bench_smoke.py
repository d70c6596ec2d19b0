"""Benchmark: ``envkit smoke`` time to verdict (warm) vs ``gym env start`` bring-up alone.

Package: the char_pattern toy built as wheels-v1 (``envkit build``, runtime pins vendored).
Both sides use the same warm per-server venvs, the same Gym arguments and the same scripted
policy endpoint; runs alternate so machine load hits both alike. Measured:
- smoke: ``envkit smoke PKG --format json`` as a user runs it, process start -> exit (static
  validation, bring-up, one rollout per agent, teardown, verdict);
- gym: ``gym env start`` alone, as Gym ships it (its console script: 3 s polls, Ray's
  defaults), launch -> Gym head ``/readyz`` 200 (no validation, no rollout, teardown not
  counted);
- the floor, on its own in Gym's venv: ``import nemo_gym.base_resources_server`` (Gym's own
  imports, paid by every server process it starts) and ``ray.init(); ray.shutdown()`` (Ray's
  local start).
Smoke's JSON ``timings`` split its own time: validate, setup (venvs reused), ready (Gym's
bring-up), rollout, and the rest (teardown, interpreter start). Goal: smoke warm <= 15 s.

Figures and what they led to: ``benchmarks/RESULTS.md`` ("Smoke").
Run: ``.venv/bin/python benchmarks/bench_smoke.py [--runs 11] [--quick] [--offline]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
SRC = ROOT / "fixtures/gym_trees/resources_servers/char_pattern"

from _timing import DEFAULT_RUNS, QUICK_RUNS, load_line, verdict  # noqa: E402

from envkit.gym import (  # noqa: E402
    GymRuntime,
    GymSession,
    PolicyEndpoint,
    RuntimeEvents,
    RuntimeOptions,
)
from envkit.gym.ray_cluster import gym_ray_cluster  # noqa: E402
from envkit.gym.types import GYM_RAY_ADDRESS_ENV  # noqa: E402
from envkit.gym.venv import ensure_gym_venv  # noqa: E402
from envkit.policy_server.scripted import ScriptedBackend  # noqa: E402
from envkit.policy_server.server import PolicyServer  # noqa: E402

ENV = {**{k: v for k, v in os.environ.items() if k != GYM_RAY_ADDRESS_ENV},
       "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}
"""As a user runs smoke: Gym's head starts its own Ray (the ``joined`` runs set the variable)."""


def build() -> Path:
    """The package, built once per content of its sources and kept
    (``$ENVKIT_CACHE_DIR/bench-smoke``): the server venvs are keyed by the package's bytes, and
    a rebuild was seen to rebuild them, so a package built per run would make every run of this
    benchmark a cold one; keyed by the sources, an edit of the toy is measured, not a stale
    build of it."""
    from envkit.gym.install import package_key
    from envkit.supply.cache import cache_root

    dest = cache_root() / "bench-smoke" / f"char-pattern-{package_key(SRC)}"
    if not (dest / "nemo-environment.yaml").is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "envkit", "build", str(SRC), "--format",
                        "wheels-v1", "--arch", "x86_64", "-o", str(dest)], check=True, env=ENV,
                       stdout=subprocess.DEVNULL)
    return dest


GOAL_S = 15.0


def smoke_once(pkg: Path, offline: bool, ray_address: str | None = None,
               ) -> tuple[float, dict[str, float]]:
    """Wall time to verdict, and smoke's own timings (validate, setup, ready, rollout);
    ``ray_address``: Gym's servers join that running cluster (``ENVKIT_GYM_RAY_ADDRESS``)."""
    cmd = [sys.executable, "-m", "envkit", "smoke", str(pkg), "--format", "json"]
    env = {**ENV, GYM_RAY_ADDRESS_ENV: ray_address} if ray_address else ENV
    start = time.monotonic()
    proc = subprocess.run(cmd + (["--offline"] if offline else []), env=env, check=False,
                          capture_output=True, text=True)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return took, json.loads(proc.stdout)["timings"]


class _BringUpOnly(RuntimeEvents):
    """Times the launch: ``gym env start`` until the head is ready, nothing else."""

    launch_s = 0.0

    def on_ready(self, servers: object, seconds: float) -> None:
        self.launch_s = seconds


def prepare(pkg: Path, offline: bool) -> None:
    """Build (or find) the server venvs, starting no server."""
    endpoint = PolicyEndpoint("http://127.0.0.1:9/v1", "unused", "unused")
    GymRuntime(pkg, endpoint, RuntimeOptions(allow_python_override=True, offline=offline)
               ).prepare()


def gym_once(pkg: Path, offline: bool) -> float:
    """``gym env start`` as Gym ships it, launch -> head ready: Gym's console script (its 3 s
    polls, ``ray.init()`` with Ray's defaults) where envkit runs ``envkit.gym.gym_main``; the
    rest (venvs, arguments, environment, the scripted policy) is envkit's runtime, as in smoke."""
    import envkit.gym.servers as servers

    def own_cli(gym: Any, *args: str) -> list[str]:
        return [str(gym.bin / "gym"), *args]

    def ray_defaults(*args: Any, **kwargs: Any) -> dict[str, str]:
        env = envkit_env(*args, **kwargs)
        env.pop("RAY_prestart_worker_first_driver", None)
        return env

    envkit_command, envkit_env = servers.gym_command, servers.gym_env
    backend = ScriptedBackend()
    watch = _BringUpOnly()
    policy = PolicyServer(backend)
    endpoint = PolicyEndpoint(policy.base_url, policy.api_key, backend.model_name)
    options = RuntimeOptions(allow_python_override=True, offline=offline, ray_address=None)
    servers.gym_command, servers.gym_env = own_cli, ray_defaults  # type: ignore[assignment]
    try:
        with GymSession(pkg, endpoint, options, owned=(policy,), events=watch):
            pass
    finally:
        servers.gym_command, servers.gym_env = envkit_command, envkit_env
    return watch.launch_s


def floor_once(python: Path) -> tuple[float, float]:
    """Seconds for Gym's imports alone, and for Ray's local start and stop alone (NaN when Ray
    could not start: a loaded or full host; the smoke figures still stand)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    start = time.monotonic()
    # What every server process imports first (the resources server's base class: FastAPI,
    # Ray, OpenAI's client); ``nemo_gym.cli.main`` alone is ~0.3 s, it imports lazily.
    subprocess.run([str(python), "-c", "import nemo_gym.base_resources_server"], check=True,
                   env=env)
    imports = time.monotonic() - start
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as ray_tmp:
        env.update(RAY_TMPDIR=ray_tmp, RAY_USAGE_STATS_ENABLED="0")
        start = time.monotonic()
        proc = subprocess.run([str(python), "-c", "import ray; ray.init(include_dashboard="
                               "False, log_to_driver=False); ray.shutdown()"], env=env,
                              capture_output=True, text=True, check=False)
        ray_s = time.monotonic() - start
    if proc.returncode != 0:
        print(f"ray.init failed alone: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        ray_s = float("nan")
    return imports, ray_s


def _gym_python() -> Path:
    return ensure_gym_venv(allow_python_override=True).python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs each")
    parser.add_argument("--offline", action="store_true",
                        help="both sides index-free; smoke also in its network namespace")
    args = parser.parse_args()
    runs = QUICK_RUNS if args.quick else args.runs
    python = _gym_python()
    pkg = build()
    with gym_ray_cluster(ensure_gym_venv(allow_python_override=True)) as address:
        _measure(args, runs, python, pkg, address)


def _measure(args: argparse.Namespace, runs: int, python: Path, pkg: Path, address: str) -> None:
    if runs > 1:  # one unmeasured smoke: the venvs built, the servers' bytecode written
        print("warming the server venvs (first run builds them)...", file=sys.stderr)
        smoke_once(pkg, args.offline)
    else:  # --runs 1 (bench.sh --once) checks the benchmark runs: venvs, no extra bring-up
        prepare(pkg, args.offline)
    smoke, parts, gym, imports, ray, joined = [], [], [], [], [], []
    for i in range(runs):
        wall, timings = smoke_once(pkg, args.offline)
        smoke.append(wall)
        parts.append(timings)
        joined.append(smoke_once(pkg, args.offline, address)[0])
        gym.append(gym_once(pkg, args.offline))
        gym_imports, ray_start = floor_once(python)
        imports.append(gym_imports)
        ray.append(ray_start)
        print(f"run {i + 1}: smoke {wall:.1f}s (ready {timings.get('ready_s', 0):.1f}s)  "
              f"joining a running Ray {joined[-1]:.1f}s  gym env start {gym[-1]:.1f}s  "
              f"gym imports {gym_imports:.1f}s  ray {ray_start:.1f}s", file=sys.stderr)
    _report(runs, smoke, parts, gym, imports, ray, joined)


def _report(runs: int, smoke: list[float], parts: list[dict[str, float]], gym: list[float],
            imports: list[float], ray: list[float], joined: list[float]) -> None:
    med = statistics.median
    s, g = med(smoke), med(gym)
    print(f"smoke warm, time to verdict (median of {runs}): {s:.1f} s; {load_line()}")
    for key in ("validate_s", "setup_s", "ready_s", "rollout_s", "teardown_s"):
        print(f"  {key:<11} {med([p.get(key, 0.0) for p in parts]):6.2f} s")
    rest = med([w - p.get("total_s", w) for w, p in zip(smoke, parts, strict=True)])
    print(f"  {'process':<11} {rest:6.2f} s  (interpreter start, imports, rendering)")
    print(f"gym env start bring-up alone (median): {g:.1f} s")
    ray_ok = [r for r in ray if r == r] or [float("nan")]  # NaN: Ray did not start alone
    print(f"floor: Gym's imports {med(imports):.1f} s, Ray start+stop {med(ray_ok):.1f} s (each "
          "on its own, in Gym's venv)")
    print(f"RESULT smoke: {s:.1f} s warm ({s / g:.2f}x gym env start alone, {s - g:+.1f} s; "
          f"goal <= {GOAL_S:.0f} s: {verdict(s <= GOAL_S)})")
    j = med(joined)
    print(f"RESULT smoke, Ray kept running ({GYM_RAY_ADDRESS_ENV}): {j:.1f} s warm "
          f"({j / g:.2f}x gym env start alone; goal <= {GOAL_S:.0f} s: {verdict(j <= GOAL_S)})")


if __name__ == "__main__":
    main()
