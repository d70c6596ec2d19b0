"""Benchmark: ``envkit submit`` vs ``nemo files upload`` of the same ~400 MB package.

Starts the real NeMo Platform services (nemo-platform 0.6.0, e2e mode, from the cached venv
the tests build) on a free loopback port, builds the char_pattern wheels-v1 package with
``envkit build`` unless ``--package`` is given, then times, alternating so neither tool gets
a warmer page cache:

- ``envkit submit`` into a fresh workspace (validate + hash + upload both FileSets + create
  the job: the whole command, so it does strictly more work than the plain upload);
- ``nemo files upload PKG FILESET`` into a fresh FileSet (the platform's own CLI);
- ``envkit submit`` again with unchanged content (nothing to send).

Run: ``.venv/bin/python benchmarks/bench_submit.py [--package DIR] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "fixtures")]

from platform_services import create_workspace, register_model, running_services  # noqa: E402
from platform_venv import ensure_platform_venv  # noqa: E402
from toy_envs import char_pattern_rows, write_dataset  # noqa: E402

JOB = ROOT / "examples" / "tiny_grpo.json"


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _envkit(url: str, ws: str, pkg: Path, data: Path) -> float:
    env = {**os.environ, "NMP_BASE_URL": url}
    return _timed([sys.executable, "-m", "envkit", "submit", str(JOB), "--env", str(pkg),
                   "--dataset", str(data), "--workspace", ws, "--model", f"{ws}/tiny-char-model",
                   "--offline"], env)


def _nemo(url: str, pkg: Path, name: str) -> float:
    body = json.dumps({"name": name, "purpose": "environment"}).encode()
    req = urllib.request.Request(f"{url}/apis/files/v2/workspaces/default/filesets", data=body,
                                 headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req, timeout=30).close()
    nemo = str(ensure_platform_venv().parent / "nemo")
    env = {**os.environ, "NMP_BASE_URL": url, "NEMO_TELEMETRY_ENABLED": "false"}
    return _timed([nemo, "files", "upload", str(pkg), name, "--workspace", "default"], env)


def _package(tmp: Path, given: str | None) -> Path:
    if given:
        return Path(given)
    src = ROOT / "fixtures" / "gym_trees" / "resources_servers" / "char_pattern"
    subprocess.run([sys.executable, "-m", "envkit", "build", str(src), "--format", "wheels-v1",
                    "--arch", "x86_64", "-o", str(tmp / "pkg")], check=True,
                   stdout=subprocess.DEVNULL)
    return tmp / "pkg"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default=None)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-submit-") as tmp_name:
        tmp = Path(tmp_name)
        pkg = _package(tmp, args.package)
        data = write_dataset(tmp / "data", char_pattern_rows(16, chars="a"))
        size = sum(p.stat().st_size for p in pkg.rglob("*") if p.is_file())
        files = sum(1 for p in pkg.rglob("*") if p.is_file())
        with running_services(tmp / "services", "e2e") as url:
            envkit_s, nemo_s, resubmit_s = [], [], []
            for r in range(args.rounds):
                ws = f"bench-{r}"
                create_workspace(url, ws)
                register_model(url, ws, "tiny-char-model")
                order = ("envkit", "nemo") if r % 2 == 0 else ("nemo", "envkit")
                for tool in order:
                    if tool == "envkit":
                        envkit_s.append(_envkit(url, ws, pkg, data))
                    else:
                        nemo_s.append(_nemo(url, pkg, f"bench-nemo-{r}"))
                resubmit_s.append(_envkit(url, ws, pkg, data))
        best_e, best_n = min(envkit_s), min(nemo_s)
        print(f"package: {files} files, {size / 1e6:.0f} MB")
        print(f"envkit submit (validate+upload+job): {envkit_s} -> best {best_e:.2f} s "
              f"({size / 1e6 / best_e:.0f} MB/s)")
        print(f"nemo files upload:                   {nemo_s} -> best {best_n:.2f} s "
              f"({size / 1e6 / best_n:.0f} MB/s)")
        print(f"envkit speed-up: {best_n / best_e:.2f}x")
        print(f"resubmit, unchanged content: {resubmit_s} -> best {min(resubmit_s):.2f} s")


if __name__ == "__main__":
    main()
