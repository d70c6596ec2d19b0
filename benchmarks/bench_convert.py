"""Time ``envkit convert verifiers`` per fixture environment, cold and warm cache.

Cold: empty envkit cache (resolutions, wheels) and empty uv cache, so PyPI is hit for the
resolution, every wheel download and the throwaway venv. Warm: the same conversion again.

    .venv/bin/python benchmarks/bench_convert.py [--arch x86_64] [--envs reverse-text arithmetic]

Prints one JSON line per run on stdout; needs network access to PyPI.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENVS = ROOT / "fixtures" / "verifiers_envs"


def _convert(project: str, arch: str, work: Path, caches: Path, tag: str) -> dict:
    env = {**os.environ, "ENVKIT_CACHE_DIR": str(caches / "envkit"),
           "UV_CACHE_DIR": str(caches / "uv")}
    out = work / tag
    cmd = [sys.executable, "-m", "envkit", "convert", "verifiers", "--hub-id",
           f"envkit/{project}", "--source", str(ENVS / project), "--arch", arch,
           "--out-dir", str(out / "pkg"), "--dataset-dir", str(out / "data")]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    verdict = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return {"env": project, "arch": arch, "cache": tag, "seconds": round(seconds, 1),
            "rc": proc.returncode, "valid": verdict.get("valid"), "wheels": verdict.get("wheels")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="x86_64", choices=["x86_64", "aarch64"])
    parser.add_argument("--envs", nargs="+", default=["reverse-text", "arithmetic"])
    args = parser.parse_args()
    for project in args.envs:
        with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
            work = Path(tmp)
            for tag in ("cold", "warm"):
                print(json.dumps(_convert(project, args.arch, work, work / "caches", tag)),
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
