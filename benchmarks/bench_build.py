"""Cold and warm ``envkit build`` of the ``ray[default]`` + ``openai`` closure for aarch64,
next to the ``pip download`` recipe of seed 001 ("Vendoring a wheel closure").

Cold = empty envkit cache (and empty uv cache, which lives inside it); warm = same cache
again. pip runs with its configuration switched off (``--isolated``, ``PIP_CONFIG_FILE``)
and its own cache dir, cold then warm. Two pip recipes:

- ``pip-seed``: the 4 ``--platform`` flags printed in seed 001 (2_39, 2_28, 2_17, 2014);
- ``pip-13``: every floor from manylinux_2_17 to the target's 2_28, plus manylinux2014
  (13 flags), which is what "name each tag you need" amounts to for a 2_28 floor.

Usage: ``python benchmarks/bench_build.py [--cold 1] [--warm 3] [--arch aarch64]``.
Cold runs download ~100+ MB each; keep them few.
"""

from __future__ import annotations

import argparse
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REQUIREMENTS = ("ray[default]>=2.58.0", "openai==2.44.0")


def _server(root: Path) -> Path:
    server = root / "resources_servers" / "bench_closure"
    (server / "configs").mkdir(parents=True)
    (server / "app.py").write_text("# benchmark server\n")
    (server / "requirements.txt").write_text("\n".join(REQUIREMENTS) + "\n")
    (server / "configs" / "bench_closure.yaml").write_text(
        "bench_closure:\n  resources_servers:\n    bench_closure:\n"
        "      entrypoint: app.py\n      domain: other\n")
    return server


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return elapsed


def _envkit_runs(work: Path, arch: str, cold: int, warm: int) -> tuple[list[float], list[float]]:
    server = _server(work / "gym")
    cold_t, warm_t = [], []
    for i in range(cold):
        cache = work / f"envkit-cache-{i}"
        env = {**os.environ, "ENVKIT_CACHE_DIR": str(cache)}
        cmd = [sys.executable, "-m", "envkit", "build", str(server), "--arch", arch,
               "--no-runtime-pins", "-o", str(work / "out" / "pkg")]
        cold_t.append(_timed(cmd, env))
    for _ in range(warm):
        warm_t.append(_timed(cmd, env))
    wheels = list((work / "out" / "pkg" / "wheels").glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels) / 1e6
    print(f"envkit closure: {len(wheels)} wheels, {size:.1f} MB")
    return cold_t, warm_t


def _pip_cmd(dest: Path, cache: Path, platforms: list[str]) -> list[str]:
    cafile = os.environ.get("SSL_CERT_FILE") or ssl.get_default_verify_paths().cafile
    cmd = [sys.executable, "-m", "pip", "download", "--isolated", "--dest", str(dest),
           "--cache-dir", str(cache), "--only-binary=:all:", "--python-version", "3.13",
           "--index-url", "https://pypi.org/simple", *REQUIREMENTS]
    if cafile:
        cmd += ["--cert", cafile]
    for platform in platforms:
        cmd += ["--platform", platform]
    return cmd


def _pip_runs(work: Path, name: str, platforms: list[str], cold: int,
              warm: int) -> tuple[list[float], list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    cold_t, warm_t = [], []
    for i in range(cold):
        cache = work / f"{name}-cache-{i}"
        dest = work / f"{name}-wheels"
        shutil.rmtree(dest, ignore_errors=True)  # seed: clear wheels/ before rebuilding
        cold_t.append(_timed(_pip_cmd(dest, cache, platforms), env))
    for _ in range(warm):
        shutil.rmtree(dest, ignore_errors=True)
        warm_t.append(_timed(_pip_cmd(dest, cache, platforms), env))
    wheels = list(dest.glob("*.whl"))
    print(f"{name} closure: {len(wheels)} wheels, "
          f"{sum(w.stat().st_size for w in wheels) / 1e6:.1f} MB")
    return cold_t, warm_t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cold", type=int, default=1)
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--arch", default="aarch64")
    args = parser.parse_args()
    arch, floor = args.arch, 28 if args.arch == "aarch64" else 17
    seed = [f"manylinux_2_39_{arch}", f"manylinux_2_28_{arch}", f"manylinux_2_17_{arch}",
            f"manylinux2014_{arch}"]
    thirteen = [f"manylinux_2_{m}_{arch}" for m in range(floor, 16, -1)]
    thirteen.append(f"manylinux2014_{arch}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        work = Path(tmp)
        results["envkit build"] = _envkit_runs(work, arch, args.cold, args.warm)
        results["pip-seed (4 flags)"] = _pip_runs(work, "pip-seed", seed, args.cold, args.warm)
        results[f"pip-{len(thirteen)} flags"] = _pip_runs(work, "pip-13", thirteen, args.cold,
                                                          args.warm)
    print(f"\n{'recipe':<22}{'cold median s':>15}{'warm median s':>15}   (n cold/warm)")
    for name, (cold_t, warm_t) in results.items():
        print(f"{name:<22}{statistics.median(cold_t):>15.2f}{statistics.median(warm_t):>15.2f}"
              f"   ({len(cold_t)}/{len(warm_t)})")


if __name__ == "__main__":
    main()
