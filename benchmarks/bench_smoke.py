"""Benchmark: ``envkit smoke`` time to verdict vs ``gym env start`` bring-up alone.

Package: the char_pattern toy built as wheels-v1 (``envkit build``, runtime pins vendored).
Both sides use the same warm per-server venvs, the same Gym arguments and the same scripted
policy endpoint; runs alternate so machine load hits both alike. Measured:
- smoke: ``envkit smoke PKG --format json`` as a user runs it, process start -> exit (static
  validation, bring-up, one rollout per agent, teardown, verdict);
- gym: ``gym env start`` alone, launch -> Gym head ``/readyz`` 200 (no validation, no rollout,
  teardown not counted).
Goal: smoke <= gym + 10 s.
Run: ``.venv/bin/python benchmarks/bench_smoke.py [--runs 3] [--offline]``.
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

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "fixtures/gym_trees/resources_servers/char_pattern"

from envkit.endpoint.scripted import ScriptedBackend  # noqa: E402
from envkit.endpoint.server import PolicyServer  # noqa: E402
from envkit.gym import GymSession, PolicyEndpoint, RuntimeEvents, RuntimeOptions  # noqa: E402

ENV = {**os.environ, "ENVKIT_ALLOW_PYTHON_OVERRIDE": "1"}


def build(dest: Path) -> Path:
    subprocess.run([sys.executable, "-m", "envkit", "build", str(SRC), "--format", "wheels-v1",
                    "--arch", "x86_64", "-o", str(dest)], check=True, env=ENV,
                   stdout=subprocess.DEVNULL)
    return dest


def smoke_once(pkg: Path, offline: bool) -> tuple[float, float]:
    """Wall time to verdict, and the part of it that is not Gym's own bring-up."""
    cmd = [sys.executable, "-m", "envkit", "smoke", str(pkg), "--format", "json"]
    start = time.monotonic()
    proc = subprocess.run(cmd + (["--offline"] if offline else []), env=ENV, check=False,
                          capture_output=True, text=True)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return took, took - json.loads(proc.stdout)["timings"]["ready_s"]


class _BringUpOnly(RuntimeEvents):
    """Times the launch: ``gym env start`` until the head is ready, nothing else."""

    launch_s = 0.0

    def on_ready(self, servers: object, seconds: float) -> None:
        self.launch_s = seconds


def gym_once(pkg: Path, offline: bool) -> float:
    backend = ScriptedBackend()
    watch = _BringUpOnly()
    policy = PolicyServer(backend)
    endpoint = PolicyEndpoint(policy.base_url, policy.api_key, backend.model_name)
    options = RuntimeOptions(allow_python_override=True, offline=offline)
    with GymSession(pkg, endpoint, options, owned=(policy,), events=watch):
        pass
    return watch.launch_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--offline", action="store_true",
                        help="both sides index-free; smoke also in its network namespace")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-smoke-") as tmp:
        pkg = build(Path(tmp) / "char-pattern")
        print("warming the server venvs (first run builds them)...", file=sys.stderr)
        smoke_once(pkg, args.offline)
        smoke, own, gym = [], [], []
        for i in range(args.runs):
            wall, extra = smoke_once(pkg, args.offline)
            smoke.append(wall)
            own.append(extra)
            gym.append(gym_once(pkg, args.offline))
            print(f"run {i + 1}: smoke {wall:.1f}s (of which not Gym's bring-up {extra:.1f}s)"
                  f"  gym env start {gym[-1]:.1f}s", file=sys.stderr)
    s, g, o = statistics.median(smoke), statistics.median(gym), statistics.median(own)
    print(f"smoke time to verdict (median of {args.runs}): {s:.1f}s")
    print(f"gym env start bring-up alone (median):        {g:.1f}s")
    print(f"overhead, smoke - gym medians: {s - g:+.1f}s (goal <= +10 s): "
          f"{'met' if s - g <= 10 else 'NOT met'}")
    # Gym's bring-up varies by tens of seconds on a loaded machine; this does not.
    print(f"overhead, smoke's own (time to verdict - its Gym bring-up, median): {o:+.1f}s")


if __name__ == "__main__":
    main()
