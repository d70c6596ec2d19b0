"""Benchmark: envkit rollout vs plain ``gym env start`` + ``gym eval run`` on the same package.

Both sides use the same package (the char_pattern toy), the same tiny random-init policy served
by envkit's policy server, and the same warm per-server venvs. Measured in one run:
- time to ready: process start -> Gym head ``/readyz`` 200 (all servers + model endpoint up);
- rollouts/s: N rows x K repeats through the servers.
Run: ``.venv/bin/python benchmarks/bench_rollout.py [--rows 8] [--repeats 2]``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "fixtures"), str(ROOT / "tests")]

from toy_envs import char_pattern_rows, make_native_package, write_dataset  # noqa: E402

from envkit.gym.head import head_ready  # noqa: E402
from envkit.gym.install import RunPaths, gym_args, gym_env, write_uv_toml  # noqa: E402
from envkit.gym.processes import ProcessTree, free_port  # noqa: E402
from envkit.gym.rows import expand_rows  # noqa: E402
from envkit.gym.servers import GymRuntime  # noqa: E402
from envkit.gym.types import PolicyEndpoint, RuntimeOptions  # noqa: E402
from envkit.gym.venv import ensure_gym_venv  # noqa: E402
from envkit.policy_server.server import PolicyServer  # noqa: E402
from envkit.rollout import run_rollouts  # noqa: E402
from envkit.supply.cache import cache_root, uv_cache_under  # noqa: E402
from envkit.trainer.generation.hf import HFBackend  # noqa: E402
from envkit.trainer.tiny_model import make_tiny_model  # noqa: E402


def bench_envkit(pkg: Path, endpoint: PolicyEndpoint, rows: list[dict], opts: RuntimeOptions,
                 concurrency: int) -> tuple[float, float]:
    start = time.monotonic()
    runtime = GymRuntime(pkg, endpoint, opts)
    with runtime as servers:
        ready = time.monotonic() - start
        summary = run_rollouts(servers, rows, concurrency=concurrency)
    assert not summary.failed, summary.failed[0].failure_reason
    return ready, len(rows) / summary.rollout_s


def bench_gym(pkg: Path, endpoint: PolicyEndpoint, data: Path, args: argparse.Namespace,
              opts: RuntimeOptions, workdir: Path) -> tuple[float, float]:
    """Plain Gym: `gym env start` by hand, then `gym eval run --no-serve` against it."""
    gym = ensure_gym_venv(opts.gym_version, allow_python_override=opts.allow_python_override)
    runtime = GymRuntime(pkg, endpoint, opts)  # only for the same venv dir, env and overrides
    paths = RunPaths(workdir, workdir / "ray")
    paths.ray_tmp.mkdir()
    work = paths.work
    shutil.copytree(pkg, work)
    uv_cache = uv_cache_under(opts.cache_dir or cache_root())  # the runtime's own uv cache
    env = gym_env(gym, paths, write_uv_toml(gym, workdir, offline=opts.offline), uv_cache)
    venv_dir = runtime.prepare()  # the venvs envkit's side used (built by its warm-up run)
    port = free_port()
    common = gym_args(runtime.config_paths, endpoint, venv_dir, workdir, port, uv_cache)
    start = time.monotonic()
    proc = subprocess.Popen([str(gym.bin / "gym"), "env", "start", *common], cwd=work, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    tree = ProcessTree(proc.pid)
    try:
        while not head_ready(f"http://127.0.0.1:{port}"):
            tree.refresh()
            time.sleep(0.5)
        ready = time.monotonic() - start
        total = args.rows * args.repeats
        t0 = time.monotonic()
        cmd = [str(gym.bin / "gym"), "eval", "run", "--no-serve",
               "-i", str(data / "training.jsonl"), "-o", str(workdir / "gym_out.jsonl"),
               "--num-repeats", str(args.repeats), "--concurrency", str(args.concurrency),
               "--max-output-tokens", str(args.max_tokens), "--temperature", "1.0",
               "--no-health-check", "--disable-aggregation", *common]
        out = subprocess.run(cmd, cwd=work, env=env, check=False, capture_output=True,
                             text=True, timeout=1800)
        if out.returncode != 0:
            sys.exit(f"gym eval run failed ({out.returncode}):\n{out.stdout[-3000:]}")
        rate = total / (time.monotonic() - t0)
    finally:
        tree.terminate()
        proc.wait(timeout=10)
    return ready, rate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=8)
    args = parser.parse_args()
    opts = RuntimeOptions(allow_python_override=True)
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        pkg = make_native_package(tmp / "pkg")
        base_rows = char_pattern_rows(args.rows)
        data = write_dataset(tmp / "data", base_rows)
        rows = expand_rows(base_rows, num_repeats=args.repeats, temperature=1.0,
                           max_tokens=args.max_tokens)
        model = make_tiny_model(tmp / "model")
        with PolicyServer(HFBackend(model, model_name="tiny")) as policy:
            endpoint = PolicyEndpoint(policy.base_url, policy.api_key, "tiny")
            bench_envkit(pkg, endpoint, rows[:1], opts, 1)  # make sure venvs are warm
            e_ready, e_rate = bench_envkit(pkg, endpoint, rows, opts, args.concurrency)
            (tmp / "gym").mkdir()
            g_ready, g_rate = bench_gym(pkg, endpoint, data, args, opts, tmp / "gym")
    print(f"envkit rollout : ready {e_ready:6.1f}s  {e_rate:6.2f} rollouts/s")
    print(f"gym start+eval : ready {g_ready:6.1f}s  {g_rate:6.2f} rollouts/s")
    print(f"ratio envkit/gym: ready x{e_ready / g_ready:.2f}  throughput x{e_rate / g_rate:.2f}")


if __name__ == "__main__":
    main()
