"""Benchmark ``envkit validate`` on a large package: 5,000 files, 200 Gym configs.

Not a test (no timing assertions belong in tests). Run::

    python benchmarks/bench_validate.py [--runs 15] [--files 5000] [--configs 200]

Prints the median of N in-process ``validate()`` calls, of N ``envkit validate`` CLI
subprocesses, and of N ``python -c "import yaml"`` as the floor any Python CLI pays; the last
line is a one-line summary against the 0.5 s target.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from envkit.converters.adapter_pkg import policy_model_config
from envkit.validate.validate import ValidateRequest, validate

TARGET_S = 0.5
POLICY = yaml.safe_dump(policy_model_config(), sort_keys=False)
SERVER = """{name}:
  resources_servers:
    {name}:
      entrypoint: app.py
      domain: other
      description: Benchmark server {name}.
{name}_agent:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {{type: resources_servers, name: {name}}}
      model_server: {{type: responses_api_models, name: policy_model}}
"""


def make_package(root: Path, files: int, configs: int) -> Path:
    """A valid native-v1 package: ``configs`` server dirs, padded to ``files`` files."""
    paths = ["responses_api_models/vllm_model/configs/policy_model.yaml"]
    _write(root / paths[0], POLICY)
    for i in range(configs):
        name = f"bench_{i:03}"
        base = root / "resources_servers" / name
        _write(base / "requirements.txt", "")
        _write(base / "app.py", '"""never executed"""\n')
        _write(base / "configs" / f"{name}.yaml", SERVER.format(name=name))
        paths.append(f"resources_servers/{name}/configs/{name}.yaml")
    written = 1 + 3 * configs + 1  # + manifest
    for j in range(max(0, files - written)):
        _write(root / "resources_servers" / f"bench_{j % configs:03}" / "assets" / f"a{j}.txt", "x")
    listed = "\n".join(f"  - {p}" for p in paths)
    _write(root / "nemo-environment.yaml",
           f"format: native-v1\nconfig_paths:\n{listed}\nmetadata:\n  name: bench\n")
    return root


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _median_s(fn: object, runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user+sys, this process and its children).

    CPU time is printed beside wall time because this machine's 2 cores are shared: wall
    time then measures the neighbours as much as envkit."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu0, start = _cpu(), time.perf_counter()
        fn()  # type: ignore[operator]
        walls.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--configs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="envkit-bench-") as tmp:
        pkg = make_package(Path(tmp) / "pkg", args.files, args.configs)
        count = sum(1 for p in pkg.rglob("*") if p.is_file())
        report = validate(ValidateRequest(package=pkg))
        if report.errors:
            print(f"benchmark package is not valid: {report.errors[:3]}", file=sys.stderr)
            return 1
        cli = [sys.executable, "-m", "envkit", "validate", str(pkg), "--format", "json"]
        floor_cmd = [sys.executable, "-c", "import yaml"]
        env = _clean_env()
        in_process = _median_s(lambda: validate(ValidateRequest(package=pkg)), args.runs)
        via_cli = _median_s(lambda: subprocess.run(cli, check=True, capture_output=True, env=env),
                            args.runs)
        floor = _median_s(lambda: subprocess.run(floor_cmd, check=True, env=env), args.runs)
    load = os.getloadavg()[0]
    print(f"package: {count} files, {args.configs + 1} configs; {args.runs} runs each; "
          f"load average {load:.1f} on {os.cpu_count()} CPUs")
    for label, (wall, cpu) in (("in-process validate()", in_process),
                               ("envkit validate (CLI)", via_cli),
                               ("python -c 'import yaml'", floor)):
        print(f"{label:<24} median wall {wall * 1000:7.1f} ms   cpu {cpu * 1000:7.1f} ms")
    verdict = "OK" if via_cli[0] < TARGET_S else "OVER TARGET"
    print(f"SUMMARY: validate {count} files/{args.configs + 1} configs: in-process "
          f"{in_process[0]:.3f}s (cpu {in_process[1]:.3f}s), CLI {via_cli[0]:.3f}s "
          f"(cpu {via_cli[1]:.3f}s), floor {floor[0]:.3f}s; target <{TARGET_S}s wall: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
