"""Time the EK3xx checks on a large synthetic package: ``python benchmarks/bench_gym_configs.py``.

A package with N resources servers (each with an agent, an environment relay and datasets)
spread over N config files; reports load time and the time of the EK3xx checks alone.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import yaml

from envkit.converters.adapter_pkg import policy_model_config
from envkit.model.package import load_package
from envkit.validators import Inputs, gym

POLICY = yaml.safe_dump(policy_model_config(), sort_keys=False)

SERVER = """r{i}:
  resources_servers:
    s{i}:
      entrypoint: app.py
      domain: math
      datasets:
      - {{name: d{i}, type: train, jsonl_fpath: /data/{i}.jsonl, license: MIT}}
a{i}:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      max_tokens: ${{shared.max_tokens}}
      resources_server: {{type: resources_servers, name: r{i}}}
      model_server: {{type: responses_api_models, name: policy_model}}
e{i}:
  environment_servers:
    legacy_agent:
      entrypoint: app.py
      agent_server: {{type: responses_api_agents, name: a{i}}}
"""


def build(root: Path, n: int) -> None:
    paths = ["configs/policy_model.yaml"]
    (root / "configs").mkdir(parents=True)
    (root / "configs/policy_model.yaml").write_text(POLICY + "shared:\n  max_tokens: 512\n")
    for i in range(n):
        server = root / f"resources_servers/s{i}"
        server.mkdir(parents=True)
        (server / "app.py").write_text("")
        (server / "requirements.txt").write_text("")
        (root / f"configs/c{i}.yaml").write_text(SERVER.format(i=i))
        paths.append(f"configs/c{i}.yaml")
    listed = "".join(f"  - {p}\n" for p in paths)
    (root / "nemo-environment.yaml").write_text(
        f"format: wheels-v1\nconfig_paths:\n{listed}metadata:\n  name: bench\n"
    )


def main(n: int = 200, repeat: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), n)
        loaded, best = float("inf"), float("inf")
        for _ in range(repeat):  # a fresh package each time: no view reused across runs
            start = time.perf_counter()
            pkg = load_package(tmp)
            loaded = min(loaded, time.perf_counter() - start)
            start = time.perf_counter()
            found = [d for check in gym.CHECKS for d in check(Inputs(package=pkg))]
            best = min(best, time.perf_counter() - start)
    print(f"{n} servers x3 instances, {n + 1} configs: load {loaded * 1e3:.0f} ms, "
          f"EK3xx checks {best * 1e3:.0f} ms (best of {repeat} each), {len(found)} diagnostics")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
