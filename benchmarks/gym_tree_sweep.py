"""Every resources-server config of the real Gym tree, packaged, through envkit and through Gym.

    python benchmarks/gym_tree_sweep.py

Builds one wheels-v1 package per ``resources_servers/*/configs/*.yaml`` of the nemo-gym wheel
(``tests/support/gym_tree_packages.py``), loads them all with Gym's own parser in one probe
subprocess (``tests/support/gym_probe.py``), validates them with envkit, and prints the codes
found, the timings and every package where envkit's verdict (any EK3xx error) differs from Gym's.
The fidelity test runs a quarter of this sample; this script is the full sweep.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "fixtures")]

from gym_tree_packages import build_tree_packages, site_packages  # noqa: E402
from test_gym_fidelity import _gym_rejects  # noqa: E402

from envkit.gym.venv import ensure_gym_venv  # noqa: E402
from envkit.validate.validate import ValidateRequest, validate  # noqa: E402


def _probe(python: Path, packages: dict[str, Path], cwd: Path) -> dict[str, dict]:
    import yaml

    requests = [
        {"id": name, "root": str(pkg), "config_paths": yaml.safe_load(
            (pkg / "nemo-environment.yaml").read_text())["config_paths"]}
        for name, pkg in packages.items()
    ]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    proc = subprocess.run(
        [str(python), str(ROOT / "tests" / "gym_probe.py")], input=json.dumps(requests),
        capture_output=True, text=True, env=env, cwd=cwd, check=True, timeout=1800,
    )
    return {r["id"]: r for r in json.loads(proc.stdout)}


def main() -> None:
    venv = ensure_gym_venv("0.7.0", allow_python_override=True)
    with tempfile.TemporaryDirectory() as tmp:
        packages = build_tree_packages(site_packages(venv.root), Path(tmp) / "pkgs")
        start = time.perf_counter()
        results = _probe(venv.python, packages, Path(tmp))
        gym_s = time.perf_counter() - start
        codes: Counter[str] = Counter()
        disagree, envkit_s = [], 0.0
        for name, pkg in packages.items():
            start = time.perf_counter()
            report = validate(ValidateRequest(package=pkg))
            envkit_s += time.perf_counter() - start
            ek3 = [d for d in report.diagnostics if d.code.startswith("EK3")]
            codes.update(f"{d.code}/{d.severity.value[0]}" for d in ek3)
            errors = sorted({d.code for d in ek3 if d.severity.value == "error"})
            rejected = _gym_rejects(results[name], pkg)
            if bool(errors) != bool(rejected):
                disagree.append(f"{name}: envkit {errors}; gym: {rejected}")
    rejected_n = sum(1 for r in results.values() if not r["ok"])
    print(f"{len(packages)} packages; Gym parse rejects {rejected_n}; "
          f"gym probe {gym_s:.1f} s, envkit validate {envkit_s:.1f} s")
    print("codes:", dict(sorted(codes.items())))
    print(f"{len(disagree)} disagreements")
    print("\n".join(disagree))


if __name__ == "__main__":
    main()
